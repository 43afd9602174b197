"""Seeded pool families where CPU and memory bind, and MIG mixes on one-GPU nodes: gpustack against
an exact integer program on the same rules (identical nodes per pool).

Each family is packed three ways: gpustack's heuristic alone (as before the exact step existed),
gpustack as it plans (heuristic, then the integer program within its work limit), and the exact
optimum (the same model with a work limit large enough to prove it). Nodes are what a pool pays for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Callable, Iterator

from gpustack.catalog import load_catalog
from gpustack.catalog.mig import MIG_MODELS
from gpustack.plan.planner import mig_size_class
from gpustack.plan import exact, pools
from gpustack.plan.mig_packing import fewest_gpus, pack_mig
from gpustack.plan.nodes import allocatable
from gpustack.plan.packing import Item, NodeShape, Packing, coalesce, pack_shares

EXACT_NODE_LIMIT = 200_000


@contextlib.contextmanager
def heuristic_only() -> Iterator[None]:
    """gpustack without its exact step: the packing as it was before."""
    saved = exact.MAX_VARIABLES
    exact.MAX_VARIABLES = 0
    try:
        yield
    finally:
        exact.MAX_VARIABLES = saved
        pools._packed.cache_clear()


@dataclasses.dataclass
class Family:
    name: str
    cases: int = 0
    lower_bound: int = 0  # nodes
    before: int = 0  # gpustack's heuristic alone
    gpustack: int = 0
    optimum: int = 0  # exact, same rules
    optimum_proved: int = 0  # cases where the exact run proved its answer
    gpustack_proved: int = 0
    seconds: float = 0.0  # gpustack's planning time, all cases
    worst: str = ""

    @property
    def gap_pct(self) -> float:
        return 100 * (self.gpustack - self.optimum) / self.optimum if self.optimum else 0.0

    @property
    def before_pct(self) -> float:
        return 100 * (self.before - self.optimum) / self.optimum if self.optimum else 0.0


def _node(vcpus: float, memory_gib: float, gpus: int, shares: int = 1) -> NodeShape:
    cpu, memory = allocatable(vcpus, memory_gib)
    return NodeShape(gpus, cpu, memory, shares)


P4DE = _node(96, 1152, 8)  # p4de.24xlarge: 8 x A100-80GB
MIG_PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb")


def cpu_bound_mig(seed: int = 19, cases: int = 60) -> list[list[Item]]:
    """Inference mixes on p4de nodes whose replicas ask for 4-24 cores: CPU binds before the GPUs."""
    rng = random.Random(seed)
    out = []
    for _ in range(cases):
        items = []
        for i, profile in enumerate(rng.sample(MIG_PROFILES, rng.randint(1, 4))):
            for j in range(rng.randint(1, 2)):
                items.append(Item(f"w{i}-{j}", rng.randint(2, 20), 1, float(rng.choice((4, 6, 8, 12, 16, 24))),
                                  float(rng.choice((16, 32, 64, 96))), 730.0, profile))
        out.append(items)
    return out


def g5_12xlarge(shares: int) -> NodeShape:
    return _node(48, 192, 4, shares)  # g5.12xlarge: 4 x A10G


def cpu_bound_time_sliced(seed: int = 23, cases: int = 60) -> list[tuple[list[Item], NodeShape]]:
    """Time-sliced pools on g5.12xlarge whose replicas ask for 2-20 cores."""
    rng = random.Random(seed)
    out = []
    for _ in range(cases):
        node = g5_12xlarge(rng.choice((2, 3, 4)))
        items = [Item(f"w{i}", rng.randint(1, 12), 1, float(rng.choice((2, 4, 6, 8, 12, 16, 20))),
                      float(rng.choice((8, 16, 24, 48))), 730.0) for i in range(rng.randint(1, 5))]
        out.append((items, node))
    return out


H100 = MIG_MODELS["H100-80GB"]
P5_4XLARGE = _node(16, 256, 1)  # p5.4xlarge: 1 x H100
H100_PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")


def one_gpu_mixes(seed: int = 29, cases: int = 60) -> list[list[Item]]:
    """MIG mixes of H100 profiles on one-GPU nodes (p5.4xlarge), replicas asking for one core."""
    rng = random.Random(seed)
    names = [p for p in H100_PROFILES if H100.profile(p) is not None]
    out = []
    for _ in range(cases):
        out.append([Item(p, rng.randint(1, 8), 1, 1.0, 4.0, 730.0, p) for p in rng.sample(names, rng.randint(2, 4))])
    return out


def _exact_shares(items: list[Item], node: NodeShape, upper: int) -> tuple[int, bool]:
    solution = exact.solve_shares(coalesce(items), node, upper, 10**9, EXACT_NODE_LIMIT)  # proof of nodes
    return (solution.nodes, solution.proved) if solution else (upper, False)


def _exact_mig(items: list[Item], node: NodeShape, model, upper: int) -> tuple[int, bool]:  # type: ignore[no-untyped-def]
    items = coalesce(items)
    names = tuple(sorted({i.profile for i in items}))  # type: ignore[type-var]
    order = tuple(sorted(names))
    rows = [tuple(row[order.index(n)] for n in names) for row in model.maximal_layouts(names)]
    solution = exact.solve_mig(items, names, rows, [model.profile(n).shape.max_count for n in names], node, upper,
                               EXACT_NODE_LIMIT)
    return (solution.nodes, solution.proved) if solution else (upper, False)


def _run(family: Family, cases: list, pack: Callable[..., Packing], optimum: Callable[..., tuple[int, bool]]) -> Family:
    worst = 0.0
    for case in cases:
        with heuristic_only():
            before = pack(*case)
        start = time.perf_counter()
        packing = pack(*case)
        family.seconds += time.perf_counter() - start
        best, proved = optimum(*case, before.nodes)
        best = min(best, packing.nodes)
        family.cases += 1
        family.lower_bound += packing.nodes_lower_bound
        family.before += before.nodes
        family.gpustack += packing.nodes
        family.optimum += best
        family.optimum_proved += proved
        family.gpustack_proved += packing.proved_optimal
        if best and (before.nodes - best) / best > worst:
            worst = (before.nodes - best) / best
            family.worst = f"before {before.nodes} vs {best} nodes"
    return family


def mig_family() -> Family:
    return _run(Family("CPU-bound MIG mixes, p4de.24xlarge (A100-80GB)"), [(c,) for c in cpu_bound_mig()],
                lambda items: pack_mig(items, P4DE, MIG_MODELS["A100-80GB"]),
                lambda items, upper: _exact_mig(items, P4DE, MIG_MODELS["A100-80GB"], upper))


def time_sliced_family() -> Family:
    return _run(Family("CPU-bound time-sliced pools, g5.12xlarge (A10G)"), cpu_bound_time_sliced(), pack_shares,
                _exact_shares)


@dataclasses.dataclass
class OneGpuFamily:
    cases: int = 0
    split: int = 0  # one pool per profile (before)
    mixed: int = 0  # gpustack: 7g apart, other profiles in one pool with one layout
    optimum_same_rules: int = 0  # exact, same rules as gpustack
    free_layouts: int = 0  # exact with every node free to carry its own layout


def one_gpu_family() -> OneGpuFamily:
    out = OneGpuFamily()
    gpu = load_catalog().gpu("H100")
    for items in one_gpu_mixes():
        whole = sum(i.count for i in items if H100.profile(i.profile).compute == H100.compute_slices)  # type: ignore[arg-type,union-attr]
        classes: dict[str, list[Item]] = {}
        for i in items:
            if H100.profile(i.profile).compute < H100.compute_slices:  # type: ignore[arg-type,union-attr]
                classes.setdefault(mig_size_class(H100.profile(i.profile), gpu), []).append(i)  # type: ignore[arg-type]
        out.cases += 1
        out.split += sum(pack_mig([i], P5_4XLARGE, H100).nodes for i in items)
        packed = [pack_mig(group, P5_4XLARGE, H100).nodes for group in classes.values()]
        out.mixed += whole + sum(packed)
        out.optimum_same_rules += whole + sum(min(n, _exact_mig(group, P5_4XLARGE, H100, n)[0])
                                              for group, n in zip(classes.values(), packed))
        layouts, _ = fewest_gpus(H100, {i.profile: i.count for i in items}, 64, budget=10**6)  # type: ignore[misc]
        out.free_layouts += len(layouts) if layouts else 0
    return out
