"""Lower bounds: the fewest GPUs (and nodes) any packing of a pool's replicas could use.

Every bound here is a proof, never an estimate, so `required - lower_bound` is an honest gap:

- MIG compute and memory slices: ceil(sum of slices / slices per GPU), for compute and memory;
- MIG layouts: the linear relaxation of "choose per-GPU layouts covering the demand", solved
  through its dual max{demand . w : layout . w <= 1 for every valid layout, w >= 0}. Any feasible w
  proves a bound (weak duality), so the solution found is rescaled to be feasible before it is used:
  a rounding error in the solver can only weaken the bound, never make it wrong. It includes the
  slice bounds (w = slices / slices per GPU is feasible) and adds what they miss: maximum counts
  (4g and 7g at most one per GPU), one `+me` per GPU, and placement dead ends;
- time-sliced / MPS shares: ceil(replicas / R) GPUs, and one GPU for every node the pool needs at
  least (by CPU and memory), as a node in use holds at least one GPU in use;
- nodes: ceil of the GPU bound over GPUs per node, and of summed CPU and memory over a node's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpustack.catalog.mig import MigModel

_EPS = 1e-9


def ceil_bound(value: float) -> int:
    """The smallest integer >= value, forgiving float noise just above an integer."""
    return max(0, math.ceil(value - 1e-6))


def layout_lp_bound(rows: Sequence[Sequence[int]], demand: Sequence[int]) -> float:
    """max demand . w subject to row . w <= 1 for every row, w >= 0 (dense simplex, Bland's rule).

    `rows` are per-GPU layouts as instance counts per profile. Returns demand . w for a w that is
    feasible for every row (so a valid lower bound on the number of layouts needed).
    """
    m, n = len(demand), len(rows)
    if not any(demand):
        return 0.0
    if any(d and not any(row[j] for row in rows) for j, d in enumerate(demand)):
        return math.inf  # a profile no layout holds: no packing exists
    # One line per layout: its counts, its slack variable, and the right-hand side 1.
    table = [[float(x) for x in row] + [1.0 if k == i else 0.0 for k in range(n)] + [1.0]
             for i, row in enumerate(rows)]
    objective = [-float(d) for d in demand] + [0.0] * (n + 1)
    basis = [m + i for i in range(n)]
    for _ in range(50 * (m + n)):  # Bland's rule cannot cycle; the cap only guards float trouble
        entering = next((j for j in range(m + n) if objective[j] < -_EPS), None)
        if entering is None:
            break
        leaving = _leaving_row(table, basis, entering)
        if leaving < 0:
            break  # unbounded: impossible when every profile fits some layout (checked above)
        _pivot(table, objective, leaving, entering)
        basis[leaving] = entering
    return _feasible_value(rows, demand, table, basis)


def _feasible_value(rows: Sequence[Sequence[int]], demand: Sequence[int], table: list[list[float]],
                    basis: list[int]) -> float:
    """demand . w for the solver's w, scaled down until every layout's row . w <= 1 (a proof, whatever
    the float noise)."""
    m = len(demand)
    w = [0.0] * m
    for i, var in enumerate(basis):
        if var < m:
            w[var] = max(0.0, table[i][-1])
    worst = max(1.0, max(sum(c * x for c, x in zip(row, w)) for row in rows))
    return sum(d * x for d, x in zip(demand, w)) / worst


def _leaving_row(table: list[list[float]], basis: list[int], entering: int) -> int:
    """The ratio test, ties broken by the smallest basic variable (Bland); -1 when none bounds it."""
    leaving, best = -1, math.inf
    for i, line in enumerate(table):
        a = line[entering]
        if a > _EPS:
            ratio = line[-1] / a
            if ratio < best - _EPS or (abs(ratio - best) <= _EPS and basis[i] < basis[leaving]):
                leaving, best = i, ratio
    return leaving


def _pivot(table: list[list[float]], objective: list[float], leaving: int, entering: int) -> None:
    pivot_row = table[leaving]
    factor = pivot_row[entering]
    for k in range(len(pivot_row)):
        pivot_row[k] /= factor
    for i, line in enumerate(table):
        if i != leaving and line[entering]:
            f = line[entering]
            for k in range(len(line)):
                line[k] -= f * pivot_row[k]
    f = objective[entering]
    for k in range(len(objective)):
        objective[k] -= f * pivot_row[k]


def mig_bounds(model: MigModel, demand: dict[str, int]) -> dict[str, int]:
    """{"compute": ..., "memory": ..., "layout": ...}: GPUs no valid set of layouts can go below."""
    compute, memory = model.slices(demand)
    names = tuple(sorted(n for n, c in demand.items() if c))
    rows = model.maximal_layouts(names)
    lp = layout_lp_bound(rows, [demand[n] for n in names])
    return {
        "compute": math.ceil(compute / model.compute_slices),
        "memory": math.ceil(memory / model.memory_slices),
        "layout": ceil_bound(lp) if math.isfinite(lp) else 0,
    }


def nodes_bound(gpu_bound: int, gpus_per_node: int, cpu: float, memory: float,
                node_cpu: float, node_memory: float) -> int:
    """Nodes any packing needs: for the GPUs, and for summed CPU and memory."""
    nodes = math.ceil(gpu_bound / gpus_per_node) if gpus_per_node else 0
    if cpu > _EPS and node_cpu > 0:
        nodes = max(nodes, ceil_bound(cpu / node_cpu))
    if memory > _EPS and node_memory > 0:
        nodes = max(nodes, ceil_bound(memory / node_memory))
    return nodes
