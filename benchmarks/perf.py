"""How gpustack's time and memory grow with the size of a platform.

    make bench-perf                     # or: .venv/bin/python -m benchmarks.perf [--quick]
    .venv/bin/python -m benchmarks.perf --against HEAD~1 --sizes 5000,20000 --rounds 2

Every figure comes from a fresh Python process (so imports count, as they do for a user), and
each is printed with its ratio to the smallest size measured in the same run: the machine is
shared and noisy, so ratios within one run say more than absolute seconds across runs. With
`--against REVISION`, `plan` runs alternately on this checkout and on that revision's gpustack (from
git's objects, into a temporary folder), and each size prints the CPU and memory ratio between them.

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
GOAL_SECONDS = 20.0  # docs/performance.md: 20,000 workloads x 4 targets, CPU time of `plan`

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


def measure(phase: str, path: Path, target: str = "-", code: Path = ROOT) -> dict[str, float]:
    """One figure from a fresh process, importing gpustack from `code` (this checkout, or a baseline's)."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", _CHILD, phase, str(path), target], capture_output=True,
                            text=True, cwd=code, env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(code)})
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


def baseline_code(revision: str, folder: Path) -> Path:
    """The gpustack package of `revision` (read from git's objects, the checkout untouched) under `folder`."""
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "gpustack"], cwd=ROOT, capture_output=True,
                             check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--against {revision}: {archive.stderr.decode(errors='replace').strip()}")
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def against(revision: str, sizes: list[int], folder: Path, rounds: int) -> None:
    """`plan` by spec size with this checkout and with `revision`, alternated in the same run (the machine
    is shared: a baseline measured minutes apart says little), CPU time and peak memory as ratios."""
    base = baseline_code(revision, folder / "baseline")
    print(f"\nplan by spec size, this checkout against {revision} (CPU seconds, best of {rounds} each, "
          "alternated; ratio < 1 is faster):")
    for size in sizes:
        path = folder / f"spec-{size}.yaml"
        if not path.exists():
            path.write_text(spec(size))
        now: list[dict[str, float]] = []
        then: list[dict[str, float]] = []
        for _ in range(rounds):
            then.append(measure("plan", path, code=base))
            now.append(measure("plan", path))
        new, old = min(now, key=lambda f: f["cpu"]), min(then, key=lambda f: f["cpu"])
        print(f"  plan {size:>6} workloads   CPU {new['cpu']:7.2f} s against {old['cpu']:7.2f} s "
              f"(x{new['cpu'] / old['cpu']:.2f})   peak {new['peak_mib']:6.0f} MiB against {old['peak_mib']:6.0f} MiB "
              f"(x{new['peak_mib'] / old['peak_mib']:.2f})   wall {new['wall']:6.2f} s against {old['wall']:6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000,10000,20000", help="workload counts (default: %(default)s)")
    parser.add_argument("--pools", default="10,100,1000", help="pools per target for the Pulumi program")
    parser.add_argument("--quick", action="store_true", help="sizes 10,100,1000 and pools 10,100")
    parser.add_argument("--against", metavar="REVISION",
                        help="only `plan` by size, alternated with the gpustack of a git revision (e.g. HEAD~3)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each side with --against (default: 1)")
    args = parser.parse_args()
    sizes = [10, 100, 1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    pool_counts = [10, 100] if args.quick else [int(s) for s in args.pools.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.against:
            against(args.against, sizes, folder, args.rounds)
            return
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
        largest = measured["plan"][-1]
        print(f"\nGoal: plan of 20,000 workloads x 4 targets under {GOAL_SECONDS:.0f} s: "
              + (f"{largest[1]['cpu']:.1f} s of CPU ({'met' if largest[1]['cpu'] < GOAL_SECONDS else 'not met'}; "
                 f"wall {largest[1]['wall']:.1f} s)" if largest[0] == 20_000 else "20,000 not among the sizes"))
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
