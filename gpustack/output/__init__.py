"""Renderings of a plan for people: a terminal table and a Markdown report."""
