"""Generated MIG mixes on A100-80GB nodes of 8 GPUs (p4de.24xlarge): gpustack against the optimum.

Small mixes (up to 14 instances): the optimum is the fewest GPUs any per-GPU layouts can reach
(exhaustive search, no node constraint); gpustack, with one layout per pool on 8-GPU nodes, should
match it whenever one node suffices. Large mixes: the gap between gpustack's GPUs and the lower
bound (the largest of the compute, memory and layout-LP bounds), which also bounds the distance to
the unknown optimum. First-fit decreasing by instance size (each instance on the first GPU where
NVIDIA's placement rules still allow it, GPUs free to differ) is shown for comparison.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time

from gpustack.catalog.mig import MIG_MODELS, MigModel
from gpustack.plan.bounds import mig_bounds
from gpustack.plan.mig_packing import fewest_gpus, pack_mig
from gpustack.plan.packing import Item, NodeShape

MODEL = MIG_MODELS["A100-80GB"]
# Inference sizes: 7g.80gb is a whole GPU and +me is for video work, so neither is drawn.
PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb")
NODE = NodeShape(8, cpu=1000.0, memory_gib=10_000.0)


def random_mix(rng: random.Random, size: int) -> dict[str, int]:
    names = rng.sample(PROFILES, rng.randint(1, 4))
    weights = [rng.random() + 0.1 for _ in names]
    demand = dict.fromkeys(names, 0)
    for name in rng.choices(names, weights, k=size):
        demand[name] += 1
    return {n: c for n, c in demand.items() if c}


def optimum_any_layouts(model: MigModel, demand: dict[str, int], limit: int = 64) -> int:
    layouts, exact = fewest_gpus(model, demand, limit, budget=10**7)
    assert layouts is not None and exact
    return len(layouts)


def first_fit_decreasing(model: MigModel, demand: dict[str, int]) -> int:
    """Instances largest first, each on the first GPU whose layout NVIDIA's rules still allow."""
    order = sorted(demand, key=lambda n: (-model.profile(n).memory, -model.profile(n).compute, n))
    gpus: list[dict[str, int]] = []
    for name in order:
        # Layouts only grow, so a GPU that cannot take this profile never will: scan each GPU once.
        candidates = [g for g in gpus if model.place({**g, name: g.get(name, 0) + 1}) is not None]
        at = 0
        for _ in range(demand[name]):
            while (
                at < len(candidates) and model.place({**candidates[at], name: candidates[at].get(name, 0) + 1}) is None
            ):
                at += 1
            if at == len(candidates):
                candidates.append({})
                gpus.append(candidates[-1])
            candidates[at][name] = candidates[at].get(name, 0) + 1
    return len(gpus)


def pack(demand: dict[str, int], budget: int | None = None):
    items = [Item(name, count, 1, 0.0, 0.0, 730.0, name) for name, count in sorted(demand.items())]
    start = time.perf_counter()
    packing = pack_mig(items, NODE, MODEL) if budget is None else pack_mig(items, NODE, MODEL, budget)
    return packing, time.perf_counter() - start


@dataclasses.dataclass
class SmallSummary:
    cases: int = 0
    gpustack_optimal: int = 0
    gpustack_extra: int = 0  # GPUs above the optimum, summed over the cases
    one_node_cases: int = 0
    one_node_optimal: int = 0
    ffd_optimal: int = 0
    ffd_extra: int = 0
    bound_tight: int = 0  # cases where the lower bound equals the optimum


def small_mixes(seed: int = 7, cases: int = 300) -> SmallSummary:
    rng = random.Random(seed)
    out = SmallSummary()
    for _ in range(cases):
        demand = random_mix(rng, rng.randint(2, 14))
        best = optimum_any_layouts(MODEL, demand)
        packing, _ = pack(demand)
        ffd = first_fit_decreasing(MODEL, demand)
        out.cases += 1
        out.gpustack_optimal += packing.gpus_required == best
        out.gpustack_extra += packing.gpus_required - best
        if packing.nodes == 1:
            out.one_node_cases += 1
            out.one_node_optimal += packing.gpus_required == best
        out.ffd_optimal += ffd == best
        out.ffd_extra += ffd - best
        out.bound_tight += max(mig_bounds(MODEL, demand).values()) == best
    return out


@dataclasses.dataclass
class LargeRow:
    instances: int
    profiles: int
    lower_bound: int
    gpus: int
    nodes: int
    nodes_lower_bound: int
    method: str
    seconds: float
    ffd_gpus: int

    @property
    def gap_pct(self) -> float:
        return 100 * (self.gpus - self.lower_bound) / self.lower_bound

    @property
    def ffd_nodes(self) -> int:
        return math.ceil(self.ffd_gpus / NODE.gpus)


def large_mixes(seed: int = 11, sizes: tuple[int, ...] = (50, 200, 1000, 5000, 20000), per_size: int = 3,
                budget: int | None = None) -> list[LargeRow]:
    rng = random.Random(seed)
    rows = []
    for size in sizes:
        for _ in range(per_size):
            demand = random_mix(rng, size)
            packing, seconds = pack(demand, budget)
            rows.append(LargeRow(size, len(demand), packing.lower_bound, packing.gpus_required, packing.nodes,
                                 packing.nodes_lower_bound, packing.method, seconds,
                                 first_fit_decreasing(MODEL, demand)))
    return rows
