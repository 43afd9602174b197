"""Exact packing of one pool by integer programming, for pools the heuristic leaves above their bound.

The model assigns replica shapes to at most `upper` identical nodes (the heuristic's count):
x[t, n] replicas of shape t on node n, z[n] = node n in use, and per-node rows for GPU units, CPU
and memory. MIG pools choose one node layout for the whole pool (w[l] GPUs carry maximal layout l, cap[p] <=
sum_l l[p] w[l] instances of profile p on every node), as every node of a pool has one layout.
Objective: nodes (what a pool pays for); for MIG pools then GPUs partitioned per node, by weights
that make the order strict.

Solver: HiGHS (MIT licence) through highspy, chosen by measurement (docs/sharing.md, "Exact
packing"). It is imported only when a pool needs it. Determinism: one thread, a fixed seed, and a
work limit in branch-and-bound nodes rather than seconds, so a slower machine reaches the same
answer; past the limit the best solution found so far (or none) is used and the plan reports the
gap to the lower bound instead of "proved optimal".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpustack.plan.packing import Item, NodeShape

# Branch-and-bound nodes HiGHS may explore per pool: the deterministic work limit.
NODE_LIMIT = 1_000
GPU_NODE_LIMIT = 100  # for the second objective, GPUs in use on the fewest nodes
# Models above this many assignment variables (shapes x nodes) are left to the heuristic: the root
# relaxation alone would take seconds, and such pools have many replicas per node, where the
# heuristic is within a node of the bound. At 6,000, two time-sliced pools of the 20,000-workload
# benchmark spec took 65 s of HiGHS (under a profiler), the superlinear step of planning.
MAX_VARIABLES = 1_000
# MIG models carry rows per node and profile besides, and HiGHS takes far longer on them: above this
# many assignment variables the MIG heuristic (`gpustack.plan.mig_packing`) answers alone. Measured on
# the MIG pools of `benchmarks/specs.py` at 2,000 workloads (CPU seconds of the MIG packing, nodes):
# heuristic alone 0.4 s, 8,789 nodes; models up to 300 variables 1.1 s, 8,783; up to 600, 2.8 s,
# 8,773; up to 6,000, 30 s, 8,708 (0.9% fewer than the heuristic). The time per model grows faster
# than its size, so the bound keeps planning linear in workloads.
MAX_MIG_VARIABLES = 300
_INF = 1e30


@dataclasses.dataclass(frozen=True)
class Solution:
    nodes: int
    gpus: int  # shares pools: GPUs in use; MIG pools: GPUs partitioned per node
    proved: bool  # the solver proved no packing uses fewer nodes, then GPUs
    per_node: tuple[tuple[int, ...], ...]  # replicas of each item on each node in use
    caps: tuple[int, ...] = ()  # MIG: instances of each profile every node offers


class _Model:
    """Columns and sparse rows, then one HiGHS run."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, upper: float, cost: float = 0.0) -> int:
        self.cost.append(cost)
        self.lower.append(0.0)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, coefficients: dict[int, float], low: float = -_INF, high: float = _INF) -> None:
        self.rows.append(({k: v for k, v in coefficients.items() if v}, low, high))

    def solve(self, node_limit: int) -> tuple[list[float] | None, bool]:
        """(values of the best solution found, or None; whether it is proved optimal)."""
        import highspy
        import numpy as np

        lp = highspy.HighsLp()
        lp.num_col_ = len(self.cost)
        lp.num_row_ = len(self.rows)
        lp.col_cost_ = np.array(self.cost, dtype=float)
        lp.col_lower_ = np.array(self.lower, dtype=float)
        lp.col_upper_ = np.array(self.upper, dtype=float)
        lp.row_lower_ = np.array([r[1] for r in self.rows], dtype=float)
        lp.row_upper_ = np.array([r[2] for r in self.rows], dtype=float)
        starts, index, value = [0], [], []
        for coefficients, _, _ in self.rows:
            for k in sorted(coefficients):
                index.append(k)
                value.append(coefficients[k])
            starts.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(value, dtype=float)
        lp.integrality_ = [highspy.HighsVarType.kInteger] * len(self.cost)
        # highspy's Highs wrapper prints a banner to stdout when built; the core class it wraps does not,
        # and stdout carries the plan (--format json).
        solver = highspy._Highs()  # type: ignore[attr-defined]  # the core class, on purpose (see above)
        for option, setting in (("output_flag", False), ("threads", 1), ("random_seed", 0),
                                ("mip_max_nodes", node_limit), ("time_limit", _INF)):
            solver.setOptionValue(option, setting)
        solver.passModel(lp)
        solver.run()
        status = solver.getModelStatus()
        solution = solver.getSolution()
        if not solution.value_valid:
            return None, False
        return [round(v) for v in solution.col_value], status == highspy.HighsModelStatus.kOptimal


def _fits(item: Item, node: NodeShape, units: int) -> int:
    k = units // max(item.units, 1)
    if item.cpu > 0:
        k = min(k, int((node.cpu + 1e-9) // item.cpu))
    if item.memory_gib > 0:
        k = min(k, int((node.memory_gib + 1e-9) // item.memory_gib))
    return min(k, item.count)


def _assignment(model: _Model, items: Sequence[Item], node: NodeShape, upper: int, node_cost: float,
                per_node_units: int) -> tuple[list[list[int]], list[int]]:
    """x[t][n], z[n] with demand, CPU and memory rows, and nodes used in order (symmetry)."""
    x = [[model.var(_fits(item, node, per_node_units)) for _ in range(upper)] for item in items]
    z = [model.var(1, node_cost) for _ in range(upper)]
    for t, item in enumerate(items):
        model.row({x[t][n]: 1 for n in range(upper)}, item.count, item.count)
    for n in range(upper):
        if any(i.cpu for i in items):
            model.row({**{x[t][n]: i.cpu for t, i in enumerate(items)}, z[n]: -node.cpu}, high=1e-6)
        if any(i.memory_gib for i in items):
            model.row({**{x[t][n]: i.memory_gib for t, i in enumerate(items)}, z[n]: -node.memory_gib}, high=1e-6)
        if n + 1 < upper:
            model.row({z[n]: 1, z[n + 1]: -1}, low=0)
    return x, z


def _per_node(values: list[float], x: list[list[int]], z: list[int]) -> tuple[tuple[int, ...], ...]:
    used = [n for n in range(len(z)) if values[z[n]] > 0.5]
    return tuple(tuple(int(values[x[t][n]]) for t in range(len(x))) for n in used)


def too_large(items: Sequence[Item], upper: int, mig: bool = False) -> bool:
    return len(items) * upper > (min(MAX_VARIABLES, MAX_MIG_VARIABLES) if mig else MAX_VARIABLES)


def solve_shares(items: Sequence[Item], node: NodeShape, upper: int, gpu_bound: int,
                 node_limit: int = NODE_LIMIT) -> Solution | None:
    """Fewest nodes, then GPUs in use, for whole-GPU or time-sliced replicas on at most `upper` nodes.

    Two steps: the fewest nodes; then, on that many nodes, the fewest GPUs in use (g[n] >= units / R)
    when the first answer does not meet `gpu_bound` already. Proving both at once took seconds on
    pools of a few hundred replicas; the second step has a work limit of its own.
    """
    R = node.shares_per_gpu

    def model_for(nodes: int, count_gpus: bool) -> tuple[_Model, list[list[int]], list[int]]:
        model = _Model()
        x, z = _assignment(model, items, node, nodes, 0.0 if count_gpus else 1.0, node.gpus * R)
        for n in range(nodes):
            units = {x[t][n]: i.units for t, i in enumerate(items)}
            model.row({**units, z[n]: -node.gpus * R}, high=0)
            if count_gpus:
                model.row({**units, model.var(node.gpus, 1.0): -R}, high=0)
        return model, x, z

    model, x, z = model_for(upper, False)
    values, proved = model.solve(node_limit)
    if values is None:
        return None
    per_node = _per_node(values, x, z)
    gpus = _gpus(per_node, items, R)
    if proved and gpus > gpu_bound:
        model, x, z = model_for(len(per_node), True)
        values, gpus_proved = model.solve(GPU_NODE_LIMIT)
        if values is not None and _gpus(_per_node(values, x, z), items, R) < gpus:
            per_node = _per_node(values, x, z)
            gpus = _gpus(per_node, items, R)
        return Solution(len(per_node), gpus, gpus_proved, per_node)
    return Solution(len(per_node), gpus, proved and gpus <= gpu_bound, per_node)


def _gpus(per_node: tuple[tuple[int, ...], ...], items: Sequence[Item], shares_per_gpu: int) -> int:
    return sum(math.ceil(sum(c * i.units for c, i in zip(counts, items)) / shares_per_gpu) for counts in per_node)


def solve_mig(items: Sequence[Item], names: Sequence[str], rows: Sequence[Sequence[int]], max_counts: Sequence[int],
              node: NodeShape, upper: int, node_limit: int = NODE_LIMIT) -> Solution | None:
    """Fewest nodes, then GPUs partitioned per node, for MIG replicas on at most `upper` identical nodes.

    `rows` are the maximal valid GPU layouts as instance counts in `names` order; `max_counts` the
    most instances of each profile one GPU holds.
    """
    model = _Model()
    x, z = _assignment(model, items, node, upper, float(node.gpus + 1), node.gpus * max(max_counts))
    w = [model.var(node.gpus, 1.0) for _ in rows]
    caps = [model.var(node.gpus * m) for m in max_counts]
    model.row(dict.fromkeys(w, 1), high=node.gpus)
    for p in range(len(names)):
        model.row({caps[p]: 1, **{w[r]: -row[p] for r, row in enumerate(rows)}}, high=0)
    profile_of = [names.index(i.profile) for i in items]
    for n in range(upper):
        for p in range(len(names)):
            on_node = {x[t][n]: 1 for t in range(len(items)) if profile_of[t] == p}
            if on_node:
                model.row({**on_node, caps[p]: -1}, high=0)
                model.row({**on_node, z[n]: -node.gpus * max_counts[p]}, high=0)
    values, proved = model.solve(node_limit)
    if values is None:
        return None
    per_node = _per_node(values, x, z)
    return Solution(len(per_node), sum(int(values[v]) for v in w), proved, per_node,
                    tuple(int(values[c]) for c in caps))


def solve_fractions(sizes: dict[int, int], capacity: int, node_limit: int = NODE_LIMIT
                    ) -> tuple[list[tuple[int, ...]], bool] | None:
    """The fewest GPUs of `capacity` holding items of integer sizes (size -> count), as one tuple of
    sizes per GPU; whether that is proved optimal. An arc-flow model (Valério de Carvalho, 1999): a GPU
    is a path from 0 to `capacity` whose arcs are items placed at an offset, or unused room; items
    are placed largest first, so an arc starts only where larger items can end (fewer symmetric paths).
    """
    order = sorted(sizes, reverse=True)
    arcs = _arcs(sizes, order, capacity)
    model = _Model()
    flow = [model.var(sizes[s] if s else _INF, 0.0) for _, _, s in arcs]
    gpus = model.var(_INF, 1.0)
    balance: dict[int, dict[int, float]] = {v: {} for v in range(capacity + 1)}
    for k, (a, b, _) in enumerate(arcs):
        balance[a][flow[k]] = balance[a].get(flow[k], 0) - 1
        balance[b][flow[k]] = balance[b].get(flow[k], 0) + 1
    balance[0][gpus] = 1
    balance[capacity][gpus] = -1
    for v in range(capacity + 1):
        model.row(balance[v], 0, 0)
    for size in order:
        model.row({flow[k]: 1 for k, (_, _, s) in enumerate(arcs) if s == size}, sizes[size], sizes[size])
    values, proved = model.solve(node_limit)
    if values is None:
        return None
    return _paths(arcs, [int(values[f]) for f in flow], int(values[gpus]), capacity), proved


def _arcs(sizes: dict[int, int], order: list[int], capacity: int) -> list[tuple[int, int, int]]:
    """(start, end, size) of each arc: items where they may start, then unit arcs of unused room (size 0)."""
    reachable = {0}
    arcs: list[tuple[int, int, int]] = []
    for size in order:
        # An item of this size starts after larger items and fewer than `count` items of its own size.
        begin = {v + j * size for v in reachable for j in range(sizes[size]) if v + (j + 1) * size <= capacity}
        arcs.extend((v, v + size, size) for v in sorted(begin))
        reachable |= {v + size for v in begin}
    arcs.extend((v, v + 1, 0) for v in range(capacity))
    return arcs


def _paths(arcs: list[tuple[int, int, int]], left: list[int], gpus: int, capacity: int) -> list[tuple[int, ...]]:
    """The flow decomposed into `gpus` paths from 0 to `capacity`: each GPU's item sizes."""
    out_of: dict[int, list[int]] = {v: [] for v in range(capacity + 1)}
    for k, (a, _, _) in enumerate(arcs):
        out_of[a].append(k)
    for v in out_of:  # items before unused room, larger first: deterministic paths
        out_of[v].sort(key=lambda k: (arcs[k][2] == 0, -arcs[k][2], k))
    patterns = []
    for _ in range(gpus):
        v, path = 0, []
        while v < capacity:
            k = next(k for k in out_of[v] if left[k] > 0)
            left[k] -= 1
            if arcs[k][2]:
                path.append(arcs[k][2])
            v = arcs[k][1]
        patterns.append(tuple(path))
    return patterns
