"""What `--format html` costs: the example's plan and diff pages, rendered in-process.

    make bench-html                     # or: .venv/bin/python -m benchmarks.html [--runs N]

Prints the median milliseconds of rendering each page from an already built plan or diff (planning is
not counted) and the page's size in bytes. Prints numbers, asserts nothing (target: the example's page
well under 1 MB).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from gpustack.diff import diff_plans
from gpustack.output.html import render_diff_html, render_plan_html
from gpustack.plan import build_plan
from gpustack.spec import load_spec, load_text

EXAMPLE = Path(__file__).resolve().parent.parent / "stacks" / "gpustack.yaml"


def _timed(render: Callable[[], str], runs: int) -> tuple[float, int]:
    times, page = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        page = render()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times), len(page.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    plan = build_plan(load_spec(EXAMPLE))
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    for w in doc["workloads"]:
        if isinstance(w.get("replicas"), int):
            w["replicas"] += 1  # a change that resizes pools, so the diff page has content
    diff = diff_plans(plan, build_plan(load_text(yaml.safe_dump(doc, sort_keys=False), "changed.yaml")),
                      "example", "changed")
    print(f"{'page':<6} {'ms (median)':>12} {'bytes':>10}")
    for name, render in (("plan", lambda: render_plan_html(plan)), ("diff", lambda: render_diff_html(diff))):
        ms, size = _timed(render, args.runs)
        print(f"{name:<6} {ms:>12.1f} {size:>10,}")


if __name__ == "__main__":
    main()
