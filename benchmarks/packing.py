"""Packing benchmark: the openb trace and generated MIG mixes. Prints numbers; asserts nothing.

    python -m benchmarks.packing [--trace PATH] [--only exact|openb|mig]

First gpustack beside an exact solver on every family (seeded CPU-bound MIG and time-sliced pools,
MIG mixes on one-GPU nodes, the three openb traces with time-slicing and with enforced fractions,
and 20,000 MIG workloads at the replica limit), then the details of the openb trace and MIG mixes.

The trace path: --trace, else $GPUSTACK_OPENB_TRACE, else ../shared/data/openb/openb_pod_list_default.csv
relative to the repository root. docs/sharing.md explains the figures.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

import yaml

from benchmarks import exact_families, mig_mixes, openb, specs
from gpustack.plan import build_plan
from gpustack.spec import load_text
from gpustack.spec.load import MAX_REPLICAS

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = ROOT.parent / "shared" / "data" / "openb" / "openb_pod_list_default.csv"


def pct(value: float, base: float) -> str:
    return f"{100 * (value - base) / base:+.2f}%"


def run_openb(path: Path) -> None:
    shapes, without_gpu = openb.read_trace(path)
    row = next(iter(openb.one_instance_catalog().instances))
    monthly = row.on_demand * openb.HOURS
    print(f"openb trace: {path.name}")
    print(f"  pods with GPUs: {sum(shapes.values())} in {len(shapes)} distinct shapes (workloads); "
          f"without GPUs: {without_gpu} (left out)")
    print(f"  instance: {row.name} ({row.gpus} x {row.gpu}, {row.vcpus:g} vCPU, {row.memory_gib:g} GiB), "
          f"{row.region}, ${row.on_demand}/h on demand")
    target, seconds = openb.plan_with_gpustack(shapes)
    results = [openb.one_gpu_per_pod(shapes), openb.plain_ffd(shapes, guaranteed=False),
               openb.plain_ffd(shapes, guaranteed=True),
               openb.Result("gpustack (spec -> plan)", target.gpus.required, sum(p.max_nodes for p in target.pools),
                            seconds)]
    print(f"\n  {'method':46} {'GPUs':>6} {'nodes':>6} {'$/month':>12} {'time':>8}")
    for r in results:
        mark = " (*)" if r.note else ""
        print(f"  {r.method + mark:46} {r.gpus:6d} {r.nodes:6d} {r.nodes * monthly:12,.0f} {r.seconds:7.2f}s")
    print("  (*) " + next(r.note for r in results if r.note) + ": kept as a reference point only")
    requested = sum(s.requested * n for s, n in shapes.items())
    requested_bound = math.ceil(requested - 1e-9)
    guaranteed_bound = target.gpus.lower_bound
    nodes_bound = sum(p.gpus.nodes_lower_bound for p in target.pools)
    print(f"\n  lower bounds: requested fractions {requested_bound} GPUs (ceil of {requested:.1f} asked); "
          f"guaranteed shares {guaranteed_bound} GPUs (pool by pool); nodes {nodes_bound}")
    print(f"  gpustack against the guaranteed-share bound: {target.gpus.required - guaranteed_bound:+d} GPUs "
          f"({pct(target.gpus.required, guaranteed_bound)}); nodes {pct(results[-1].nodes, nodes_bound)}")
    print(f"  gpustack against the requested-fraction bound: {target.gpus.required - requested_bound:+d} GPUs "
          f"({pct(target.gpus.required, requested_bound)})")
    parts = openb.rounding_analysis(shapes)
    print("  why the requested-fraction bound is out of reach for time-slicing (one replica = 1/R of a GPU):")
    print(f"    {parts['above_half_pods']} pods ask for more than half a GPU ({parts['above_half_requested']:.1f} GPUs "
          f"in all): each needs a whole GPU, {parts['above_half_pods'] - parts['above_half_requested']:+.1f}")
    print(f"    {parts['shared_pods']} pods ask for at most half ({parts['shared_requested']:.1f} GPUs): "
          f"as 1/R shares {parts['shared_planned']:.1f}, {parts['shared_planned'] - parts['shared_requested']:+.1f}")
    print(
        f"    whole-GPU pods: {parts['whole_gpus']}; "
        f"sum {parts['whole_gpus'] + parts['above_half_pods'] + parts['shared_planned']:.1f}"
        f" GPUs -> {guaranteed_bound} with each pool rounded up"
    )
    print(
        f"\n  {'gpustack pool':40} {'R':>3} {'replicas':>8} {'GPUs':>6} {'bound':>6} {'nodes':>6} {'bound':>6}  method"
    )
    for p in target.pools:
        replicas = sum(pl.replicas for pl in p.placements)
        proof = "proved optimal" if p.gpus.proved_optimal else "not proved"
        print(f"  {p.name:40} {p.sharing.replicas or 1:3d} {replicas:8d} {p.gpus.required:6d} {p.gpus.lower_bound:6d} "
              f"{p.max_nodes:6d} {p.gpus.nodes_lower_bound:6d}  {p.gpus.method}, {proof}")


def run_mig() -> None:
    print("\nMIG mixes: A100-80GB, 8-GPU nodes (p4de.24xlarge), profiles 1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb")
    small = mig_mixes.small_mixes()
    print(f"  small mixes ({small.cases} random, 2-14 instances), against the exact optimum with any layouts:")
    print(f"    gpustack optimal in {small.gpustack_optimal}/{small.cases} ({small.one_node_optimal}/"
          f"{small.one_node_cases} of the one-node mixes), {small.gpustack_extra} GPUs above the optimum in all "
          f"(one layout per node on the multi-node mixes)")
    print(f"    first-fit decreasing optimal in {small.ffd_optimal}/{small.cases}, {small.ffd_extra} GPUs above in all")
    print(f"    the lower bound equals the optimum in {small.bound_tight}/{small.cases}")
    print(f"\n  {'instances':>9} {'profiles':>8} {'bound':>6} {'GPUs':>6} {'gap':>7} {'nodes':>6} {'bound':>6} "
          f"{'heur.':>6} {'FFD':>6} {'FFD nodes':>9} {'time':>8}  method")
    heuristic = {(r.instances, i): r for i, r in enumerate(mig_mixes.large_mixes(budget=0))}
    for i, r in enumerate(mig_mixes.large_mixes()):
        h = heuristic[(r.instances, i)]
        print(
            f"  {r.instances:9d} {r.profiles:8d} {r.lower_bound:6d} {r.gpus:6d} {r.gap_pct:6.2f}% {r.nodes:6d} "
            f"{r.nodes_lower_bound:6d} {h.gpus:6d} {r.ffd_gpus:6d} {r.ffd_nodes:9d} "
            f"{r.seconds * 1000:6.1f}ms  {r.method}"
        )
    print("  GPUs/nodes: gpustack (one layout on every node); heur.: gpustack's heuristic alone (step budget 0);"
          " FFD: first-fit decreasing by instance, each GPU its own layout (not one config per pool)")


TRACES = ("openb_pod_list_default.csv", "openb_pod_list_gpushare100.csv", "openb_pod_list_multigpu50.csv")


def run_against_exact(trace_dir: Path) -> None:
    """gpustack beside an exact solver on every family, in one table (docs/sharing.md, "Exact packing")."""
    print("gpustack against an exact solver (nodes; 'before' = gpustack's heuristic alone, without the exact step)")
    print(f"  {'family':52} {'cases':>5} {'bound':>6} {'before':>7} {'gpustack':>8} {'exact':>6} "
          f"{'vs exact':>8} {'before':>8} {'proved':>7} {'time':>7}")
    for family in (exact_families.mig_family(), exact_families.time_sliced_family()):
        print(f"  {family.name:52} {family.cases:5d} {family.lower_bound:6d} {family.before:7d} {family.gpustack:8d} "
              f"{family.optimum:6d} {family.gap_pct:+7.2f}% {family.before_pct:+7.2f}% "
              f"{family.gpustack_proved:3d}/{family.cases:<3d} {family.seconds:6.2f}s")
    one = exact_families.one_gpu_family()
    print(f"  {'MIG mixes on one-GPU nodes, p5.4xlarge (H100)':52} {one.cases:5d} {'':>6} {one.split:7d} "
          f"{one.mixed:8d} {one.optimum_same_rules:6d} {pct(one.mixed, one.optimum_same_rules):>8} "
          f"{pct(one.split, one.optimum_same_rules):>8}")
    print(f"    before: one pool per profile; exact: the same pools (7g whole, 3g/4g, smaller), each settled by the "
          f"integer program; any layout on every node would need {one.free_layouts} ({pct(one.mixed, one.free_layouts)} "
          "for gpustack)")
    print(f"\n  {'openb trace, sharing':52} {'GPUs':>6} {'bound':>6} {'L2':>6} {'exact':>6} {'nodes':>6} {'bound':>6} "
          f"{'vs bound':>8} {'plan':>7}")
    for name in TRACES:
        path = trace_dir / name
        if not path.is_file():
            print(f"  {name}: not found, skipped")
            continue
        shapes, _ = openb.read_trace(path)
        for fractional in (False, True):
            target, seconds = openb.plan_with_gpustack(shapes, fractional)
            nodes = sum(p.max_nodes for p in target.pools)
            nodes_bound = sum(p.gpus.nodes_lower_bound for p in target.pools)
            l2 = sum(dict(p.gpus.bounds).get("l2", p.gpus.lower_bound) for p in target.pools)
            proved = all(p.gpus.proved_optimal for p in target.pools)
            exact = str(target.gpus.lower_bound) if proved or fractional else "-"
            label = f"{name.removeprefix('openb_pod_list_').removesuffix('.csv')}, " + (
                "fractional (HAMi)" if fractional else "time-slicing (1/R shares)")
            print(f"  {label:52} {target.gpus.required:6d} {target.gpus.lower_bound:6d} {l2 if fractional else '':>6} "
                  f"{exact:>6} {nodes:6d} {nodes_bound:6d} {pct(target.gpus.required, l2 if fractional else target.gpus.lower_bound):>8} "
                  f"{seconds:6.2f}s")
    print("    bound: the plan's GPU lower bound (pool by pool; for fractional pools the arc-flow optimum when proved);"
          " L2: Martello-Toth for the requested fractions; exact: the proved optimum in GPUs ('-': not proved)")
    seconds, pools = mig_at_the_replica_limit()
    print(f"\n  20,000 MIG workloads at the replica limit ({MAX_REPLICAS:,} each): planned in {seconds:.2f}s ({pools} pool(s))")


def mig_at_the_replica_limit(workloads: int = 20_000) -> tuple[float, int]:
    rng = random.Random(5)
    profiles = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb")
    doc = {"version": 1, "name": "big", "targets": [dict(specs.TARGETS[0])],
           "workloads": [{"name": f"w{i:05d}", "kind": "inference", "gpu": "A100-80GB", "mig": rng.choice(profiles),
                          "replicas": MAX_REPLICAS, "capacity": "on-demand", "cpu": rng.choice((1, 2, 4)),
                          "memory": "8Gi"} for i in range(workloads)]}
    text = yaml.safe_dump(doc, sort_keys=False)
    start = time.perf_counter()
    plan = build_plan(load_text(text, "big.yaml"))
    return time.perf_counter() - start, len(plan.targets[0].pools)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.packing", description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=None, help="openb pod list (CSV)")
    parser.add_argument("--only", choices=("exact", "openb", "mig"), default=None)
    args = parser.parse_args(argv)
    if args.only in (None, "exact"):
        run_against_exact((args.trace or DEFAULT_TRACE).parent)
        if args.only == "exact":
            return 0
        print()
    if args.only != "mig":
        trace = args.trace or Path(os.environ.get("GPUSTACK_OPENB_TRACE") or DEFAULT_TRACE)
        if not trace.is_file():
            print(f"no openb trace at {trace}: pass --trace PATH or set GPUSTACK_OPENB_TRACE", file=sys.stderr)
            return 2
        run_openb(trace)
    if args.only != "openb":
        run_mig()
    return 0


if __name__ == "__main__":
    sys.exit(main())
