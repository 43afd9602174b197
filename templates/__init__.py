"""Jinja2 templates for the text artefacts gpustack writes (projects, stack files, reports)."""
