"""How gpustack's time and memory grow with the size of a platform.

    make bench-perf                     # or: .venv/bin/python -m benchmarks.perf [--quick]

Every figure comes from a fresh Python process (so imports count, as they do for a user), and
each is printed with its ratio to the smallest size measured in the same run: the machine is
shared and noisy, so ratios within one run say more than absolute seconds across runs.

Measured per spec size (workloads of mixed kinds and GPU models over four targets):
  validate  load + check + plan, what `gpustack validate` does
  plan      the same plus the plan as JSON
  render    the same plus every target's in-cluster objects as YAML files (in memory)
and per cloud, the Pulumi program under mocks (`gpustack.testing.run_program`) for specs whose
target has N pools.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.specs import TARGETS, pools_spec, spec

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
c0 = time.process_time()
phase, path, target = sys.argv[1], sys.argv[2], sys.argv[3]
from gpustack.spec import load_spec
from gpustack.plan import build_plan
if phase.startswith("program"):
    from gpustack.testing import run_program
    declared = run_program(path, target)
    count = sum(1 for d in declared if d.type.endswith("GpuNodePool"))
else:
    plan = build_plan(load_spec(path))
    count = sum(len(t.pools) for t in plan.targets)
    if phase == "plan":
        plan.to_json()
    if phase == "render":
        from gpustack.render import in_cluster
        from gpustack.render.files import render_files
        for t in plan.targets:
            render_files(in_cluster(plan, t))
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "cpu": time.process_time() - c0, "peak_mib": peak, "pools": count}))
"""


def measure(phase: str, path: Path, target: str = "-") -> dict[str, float]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", _CHILD, phase, str(path), target], capture_output=True,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{phase} {path.name} failed:\n{result.stderr[-2000:]}")
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    figures["wall"] = wall
    return figures


def _row(label: str, figures: dict[str, float], base: dict[str, float] | None) -> str:
    ratio = f"x{figures['wall'] / base['wall']:.1f}" if base else "x1.0"
    mem_ratio = f"x{figures['peak_mib'] / base['peak_mib']:.2f}" if base else "x1.00"
    return (f"  {label:<26} {figures['wall']:8.2f} s  ({ratio:>6})   CPU {figures['cpu']:7.2f} s   "
            f"peak {figures['peak_mib']:7.0f} MiB "
            f"({mem_ratio:>6})   pools {int(figures['pools'])}")


def exponent(small: tuple[int, float], large: tuple[int, float]) -> float:
    """k in value ~ size^k through two points (sizes, values)."""
    return math.log(large[1] / small[1]) / math.log(large[0] / small[0])


def growth(rows: list[tuple[int, dict[str, float]]]) -> str:
    if len(rows) < 2:
        return "(one size only)"
    (a, fa), (b, fb) = rows[-2], rows[-1]
    return (f"{a} -> {b} workloads: time k = {exponent((a, fa['wall']), (b, fb['wall'])):.2f} "
            f"(CPU k = {exponent((a, fa['cpu']), (b, fb['cpu'])):.2f}), "
            f"peak memory k = {exponent((a, fa['peak_mib']), (b, fb['peak_mib'])):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000,10000,20000", help="workload counts (default: %(default)s)")
    parser.add_argument("--pools", default="10,100,1000", help="pools per target for the Pulumi program")
    parser.add_argument("--quick", action="store_true", help="sizes 10,100,1000 and pools 10,100")
    args = parser.parse_args()
    sizes = [10, 100, 1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    pool_counts = [10, 100] if args.quick else [int(s) for s in args.pools.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        example = ROOT / "stacks" / "gpustack.yaml"
        print("The bundled example, cold start (target: validate and plan under 0.5 s):")
        for phase in ("validate", "plan"):
            print(_row(phase, measure(phase, example), None))
        print("\nvalidate / plan / render by spec size (4 targets):")
        bases: dict[str, dict[str, float]] = {}
        measured: dict[str, list[tuple[int, dict[str, float]]]] = {}
        for size in sizes:
            path = folder / f"spec-{size}.yaml"
            path.write_text(spec(size))
            for phase in ("validate", "plan", "render"):
                figures = measure(phase, path)
                print(_row(f"{phase:<8} {size:>6} workloads", figures, bases.get(phase)))
                bases.setdefault(phase, figures)
                measured.setdefault(phase, []).append((size, figures))
        print("\nGrowth exponent k of time ~ workloads^k and memory ~ workloads^k between the two largest sizes "
              "(1.0 is linear):")
        for phase, rows in measured.items():
            print(f"  {phase:<8} {growth(rows)}")
        print("\nThe Pulumi program under mocks, by pools in the target:")
        for target in TARGETS:
            base = None
            for count in pool_counts:
                path = folder / f"pools-{target['cloud']}-{count}.yaml"
                path.write_text(pools_spec(target, count))
                figures = measure("program", path, target["name"])
                print(_row(f"{target['cloud']:<5} {count:>5} pools", figures, base))
                base = base or figures


if __name__ == "__main__":
    main()
