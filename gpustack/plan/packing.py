"""Packing replicas onto the identical nodes of one pool: whole GPUs and time-sliced / MPS shares.

Every node of a pool is the same machine with the same GPU configuration (a node pool applies one
set of labels, so one NVIDIA config, to all its nodes). Replicas here ask for whole GPUs, or for
one of the R shares of a GPU (time-slicing / MPS); a node offers GPUs x R units, CPU and memory,
and a replica must fit in all three. MIG pools are packed by `gpustack.plan.mig_packing`.

Objective, in this order: fewest nodes (the pool has one instance type, so nodes are the GPUs paid
for and the cost), then fewest GPUs in use, then fewest node-hours. First-fit decreasing runs in
two orders (longest-running first, which lets short-lived replicas share nodes, and largest first)
with identical replicas placed in bulk; the better result is kept. When it does not meet the lower
bounds and the pool is small, an exact search (bounded in steps) settles the optimum; when its nodes
are still above their bound, an integer program (`gpustack.plan.exact`) settles the node count.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from gpustack.plan import exact as exact_packing
from gpustack.plan.bounds import nodes_bound

Layout = tuple[tuple[str, int], ...]

EXACT_REPLICAS = 14  # pools up to this many replicas get the exact search when FFD may be off
EXACT_STEPS = 50_000


@dataclasses.dataclass(frozen=True)
class Item:
    """Identical replicas of one workload."""

    workload: str
    count: int
    units: int  # whole GPUs (mode none) or shares (time-slicing / mps); 1 for MIG
    cpu: float
    memory_gib: float
    hours: float
    profile: str | None = None  # MIG


@dataclasses.dataclass(frozen=True)
class NodeShape:
    gpus: int
    cpu: float  # allocatable cores
    memory_gib: float  # allocatable GiB
    shares_per_gpu: int = 1  # R for time-slicing / mps


@dataclasses.dataclass(frozen=True)
class Packing:
    nodes: int
    gpus_required: int  # GPUs holding at least one replica
    lower_bound: int  # fewest GPUs any packing could use: the largest of `bounds`
    node_hours: float  # sum over nodes of the longest monthly hours of a replica on it
    mig_layouts: tuple[Layout, ...] = ()  # MIG: the layout of each GPU of a node
    nodes_lower_bound: int = 0  # fewest nodes any packing could use (GPUs, CPU, memory)
    bounds: tuple[tuple[str, int], ...] = ()  # each GPU lower bound by name
    method: str = ""  # how the packing was found
    proved_optimal: bool = False  # no packing of the pool's model uses fewer nodes, then GPUs


class DoesNotFit(Exception):
    """A replica larger than the node, or MIG profiles no node layout can hold together."""


@dataclasses.dataclass
class _Nodes:
    """`copies` identical nodes with the same free capacity (bulk placement keeps this cheap)."""

    copies: int
    units: int  # free shares or GPUs per node
    cpu: float
    memory: float
    hours: float  # longest monthly hours of a replica on these nodes
    used_units: int  # per node


def _fits(units: int, cpu: float, memory: float, item: Item) -> int:
    """How many replicas of `item` fit in this free capacity."""
    k = units // item.units
    if item.cpu > 0:
        k = min(k, int((cpu + 1e-9) // item.cpu))
    if item.memory_gib > 0:
        k = min(k, int((memory + 1e-9) // item.memory_gib))
    return max(k, 0)


def _take(group: _Nodes, per_node: int, item: Item) -> None:
    group.units -= per_node * item.units
    group.cpu -= per_node * item.cpu
    group.memory -= per_node * item.memory_gib
    group.used_units += per_node * item.units
    group.hours = max(group.hours, item.hours)


def _ffd(order: Sequence[Item], node: NodeShape) -> list[_Nodes]:
    capacity = node.gpus * node.shares_per_gpu
    groups: list[_Nodes] = []
    for item in order:
        left = item.count
        i = 0
        while left and i < len(groups):
            group = groups[i]
            per_node = _fits(group.units, group.cpu, group.memory, item)
            if per_node:
                whole, rest = divmod(left, per_node)
                if whole >= group.copies:
                    _take(group, per_node, item)
                    left -= per_node * group.copies
                else:
                    # split the group: `whole` copies take per_node, one takes the rest, others none
                    untouched = group.copies - whole - (1 if rest else 0)
                    parts = []
                    if whole:
                        parts.append(dataclasses.replace(group, copies=whole))
                        _take(parts[-1], per_node, item)
                    if rest:
                        parts.append(dataclasses.replace(group, copies=1))
                        _take(parts[-1], rest, item)
                    if untouched:
                        parts.append(dataclasses.replace(group, copies=untouched))
                    groups[i:i + 1] = parts
                    i += len(parts) - 1
                    left = 0
            i += 1
        if left:
            per_node = _fits(capacity, node.cpu, node.memory_gib, item)
            whole, rest = divmod(left, per_node)
            fresh = _Nodes(0, capacity, node.cpu, node.memory_gib, 0.0, 0)
            if whole:
                groups.append(dataclasses.replace(fresh, copies=whole))
                _take(groups[-1], per_node, item)
            if rest:
                groups.append(dataclasses.replace(fresh, copies=1))
                _take(groups[-1], rest, item)
    return groups


def _score(groups: list[_Nodes], node: NodeShape) -> tuple[int, int, float]:
    nodes = sum(g.copies for g in groups)
    gpus = sum(g.copies * math.ceil(g.used_units / node.shares_per_gpu) for g in groups)
    return nodes, gpus, sum(g.copies * g.hours for g in groups)


def share_bounds(items: Sequence[Item], node: NodeShape) -> tuple[dict[str, int], int]:
    """({"shares": ..., "one_gpu_per_node": ...}, nodes lower bound) for whole-GPU or shared replicas."""
    shares = math.ceil(sum(i.count * i.units for i in items) / node.shares_per_gpu)
    nodes = nodes_bound(shares, node.gpus, sum(i.count * i.cpu for i in items),
                        sum(i.count * i.memory_gib for i in items), node.cpu, node.memory_gib)
    # A node in use holds at least one GPU in use.
    return {"shares": shares, "one_gpu_per_node": nodes}, nodes


def coalesce(items: Sequence[Item]) -> list[Item]:
    """Replicas of the same shape as one item, whatever their workload: packing sees only shapes,
    and a pool of thousands of workloads has few distinct shapes (this keeps packing linear)."""
    merged: dict[tuple[object, ...], Item] = {}
    for item in sorted(items, key=lambda i: i.workload):
        key = (item.units, item.cpu, item.memory_gib, item.hours, item.profile)
        known = merged.get(key)
        merged[key] = item if known is None else dataclasses.replace(known, count=known.count + item.count)
    return list(merged.values())


def pack_shares(items: Sequence[Item], node: NodeShape) -> Packing:
    """Whole-GPU or time-sliced replicas onto identical nodes (see the module docstring)."""
    items = coalesce(items)
    capacity = node.gpus * node.shares_per_gpu
    for item in items:
        if _fits(capacity, node.cpu, node.memory_gib, item) == 0:
            raise DoesNotFit(f"a replica of {item.workload!r} does not fit on an empty node")
    orders = (
        sorted(items, key=lambda i: (-i.hours, -i.units, -i.cpu, -i.memory_gib, i.workload)),
        sorted(items, key=lambda i: (-i.units, -i.cpu, -i.memory_gib, -i.hours, i.workload)),
    )
    nodes, gpus, node_hours = min(_score(_ffd(order, node), node) for order in orders)
    bounds, nodes_lower = share_bounds(items, node)
    lower = max(bounds.values())
    method = "first-fit decreasing"
    proved = (nodes, gpus) == (nodes_lower, lower)
    replicas = sum(i.count for i in items)
    if not proved and replicas <= EXACT_REPLICAS:
        exact = _exact_shares(items, node, (nodes, gpus))
        if exact is not None:
            method = "exact search"
            proved = True
            if exact[:2] < (nodes, gpus):
                nodes, gpus, node_hours = exact
    if nodes > nodes_lower and not proved and not exact_packing.too_large(items, nodes):
        # Nodes above their bound (CPU or memory bind): settle the node count exactly.
        solution = exact_packing.solve_shares(items, node, nodes, lower)
        if solution is not None and (solution.nodes, solution.gpus) < (nodes, gpus):
            nodes, gpus, method = solution.nodes, solution.gpus, "integer program"
            node_hours = sum(max(i.hours for c, i in zip(counts, items) if c) for counts in solution.per_node)
        proved = solution is not None and solution.proved
    return Packing(nodes, gpus, lower, node_hours, (), nodes_lower, tuple(sorted(bounds.items())), method, proved)


def _exact_shares(items: Sequence[Item], node: NodeShape,
                  incumbent: tuple[int, int]) -> tuple[int, int, float] | None:
    """Fewest (nodes, GPUs in use) by exhaustive search; None when it runs out of steps.

    Replicas go largest first; identical replicas take nodes in increasing order and nodes with
    the same free capacity are tried once, so symmetric packings are not revisited.
    """
    replicas = sorted((it for it in items for _ in range(it.count)),
                      key=lambda i: (-i.units, -i.cpu, -i.memory_gib, -i.hours, i.workload))
    R = node.shares_per_gpu
    free: list[list[float]] = []  # per open node: [units, cpu, memory, used units, hours]
    best: list[Any] = [incumbent, None]
    steps = [0]

    def gpus_in_use() -> int:
        return sum(math.ceil(n[3] / R) for n in free)

    def search(i: int, floor: int) -> None:
        steps[0] += 1
        if steps[0] > EXACT_STEPS:
            raise TimeoutError
        score = (len(free), gpus_in_use())
        if score >= best[0]:  # both only grow as replicas are added: nothing better down here
            return
        if i == len(replicas):
            best[0] = score
            best[1] = sum(n[4] for n in free)
            return
        item = replicas[i]
        start = floor if i and replicas[i - 1] == item else 0
        tried = set()
        for j in range(start, len(free)):
            state = tuple(free[j][:4])
            if state in tried:
                continue
            tried.add(state)
            n = free[j]
            if n[0] >= item.units and n[1] + 1e-9 >= item.cpu and n[2] + 1e-9 >= item.memory_gib:
                saved = list(n)
                n[0] -= item.units
                n[1] -= item.cpu
                n[2] -= item.memory_gib
                n[3] += item.units
                n[4] = max(n[4], item.hours)
                search(i + 1, j)
                free[j] = saved
        free.append([node.gpus * R - item.units, node.cpu - item.cpu, node.memory_gib - item.memory_gib,
                     item.units, item.hours])
        search(i + 1, len(free) - 1)
        free.pop()

    try:
        search(0, 0)
    except TimeoutError:
        return None
    if best[1] is None:  # nothing beats first-fit decreasing: it is optimal
        return incumbent + (math.inf,)
    return best[0][0], best[0][1], best[1]
