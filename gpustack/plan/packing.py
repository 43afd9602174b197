"""Packing replicas onto the identical nodes of one pool.

Every node of a pool is the same machine with the same GPU configuration (a node pool applies one
set of labels, so one NVIDIA config, to all its nodes). Three cases:

- whole GPUs and time-sliced / MPS shares: first-fit-decreasing over (GPUs or shares, CPU, memory),
  identical replicas placed in bulk;
- MIG: one layout per GPU position, the same on every node; the fewest nodes N such that the
  per-node demand ceil(D_p / N) of each profile p fits the node's GPUs by NVIDIA's placement rules
  (searched exactly, see `_cover`).

Results carry the lower bound that any packing of the same shares must respect.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

from gpustack.catalog.mig import MigModel

Layout = tuple[tuple[str, int], ...]


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
    gpus_required: int
    lower_bound: int
    node_hours: float  # sum over nodes of the longest monthly hours of a replica on it
    mig_layouts: tuple[Layout, ...] = ()  # MIG: the layout of each GPU of a node


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


def pack_shares(items: Sequence[Item], node: NodeShape) -> Packing:
    """First-fit-decreasing of whole-GPU or time-sliced replicas onto identical nodes."""
    capacity = node.gpus * node.shares_per_gpu
    order = sorted(items, key=lambda i: (-i.hours, -i.units, -i.cpu, -i.memory_gib, i.workload))
    groups: list[_Nodes] = []
    for item in order:
        if _fits(capacity, node.cpu, node.memory_gib, item) == 0:
            raise DoesNotFit(f"a replica of {item.workload!r} does not fit on an empty node")
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
    nodes = sum(g.copies for g in groups)
    gpus_required = sum(g.copies * math.ceil(g.used_units / node.shares_per_gpu) for g in groups)
    node_hours = sum(g.copies * g.hours for g in groups)
    lower = math.ceil(sum(i.count * i.units for i in items) / node.shares_per_gpu)
    return Packing(nodes, gpus_required, lower, node_hours)


def mig_lower_bound(model: MigModel, demand: dict[str, int]) -> int:
    """max(ceil(compute slices / 7), ceil(memory slices / 8)): no placement can beat it."""
    compute, memory = model.slices(demand)
    return max(math.ceil(compute / model.compute_slices), math.ceil(memory / model.memory_slices))


def pack_mig(items: Sequence[Item], node: NodeShape, model: MigModel) -> Packing:
    """The fewest identical nodes whose per-GPU MIG layouts hold every replica."""
    demand: dict[str, int] = {}
    cpu: dict[str, float] = {}
    memory: dict[str, float] = {}
    for item in items:
        assert item.profile is not None
        demand[item.profile] = demand.get(item.profile, 0) + item.count
        cpu[item.profile] = max(cpu.get(item.profile, 0.0), item.cpu)
        memory[item.profile] = max(memory.get(item.profile, 0.0), item.memory_gib)
    names = tuple(sorted(demand))
    lower = mig_lower_bound(model, demand)
    nodes = max(1, math.ceil(lower / node.gpus))
    total = sum(demand.values())
    while nodes <= total:
        per_node = tuple(math.ceil(demand[n] / nodes) for n in names)
        fits_node = (sum(c * cpu[n] for n, c in zip(names, per_node)) <= node.cpu + 1e-9
                     and sum(c * memory[n] for n, c in zip(names, per_node)) <= node.memory_gib + 1e-9)
        if fits_node:
            layouts = _cover(model, names, per_node, node.gpus)
            if layouts is not None:
                return _mig_packing(items, model, names, per_node, nodes, layouts, lower)
        nodes += 1
    raise DoesNotFit(f"no {node.gpus}-GPU node layout holds MIG profiles {', '.join(names)} together")


def _mig_packing(items: Sequence[Item], model: MigModel, names: tuple[str, ...], per_node: tuple[int, ...],
                 nodes: int, layouts: tuple[Layout, ...], lower: int) -> Packing:
    # Replicas fill nodes in order of their monthly hours, so short-lived ones share the last nodes.
    node_hours = 0.0
    by_profile = {n: sorted((it for it in items if it.profile == n), key=lambda it: -it.hours) for n in names}
    longest = [0.0] * nodes
    for name, cap in zip(names, per_node):
        slot = 0
        for item in by_profile[name]:
            for _ in range(item.count):
                k = slot // cap
                longest[k] = max(longest[k], item.hours)
                slot += 1
    node_hours = sum(longest)
    non_empty = sum(1 for layout in layouts if layout)
    return Packing(nodes, nodes * non_empty, lower, node_hours, tuple(layouts))


def _cover(model: MigModel, names: tuple[str, ...], need: tuple[int, ...], gpus: int) -> tuple[Layout, ...] | None:
    """`gpus` valid layouts that together hold at least `need` instances of each profile, or None."""
    candidates = _useful_layouts(model, names)
    compute = tuple(model.profile(n).compute for n in names)  # type: ignore[union-attr]
    memory = tuple(model.profile(n).memory for n in names)  # type: ignore[union-attr]

    @functools.lru_cache(maxsize=None)
    def solve(left: tuple[int, ...], gpus_left: int) -> tuple[Layout, ...] | None:
        if not any(left):
            return ((),) * gpus_left
        if gpus_left == 0:
            return None
        if (sum(c * n for c, n in zip(compute, left)) > model.compute_slices * gpus_left
                or sum(m * n for m, n in zip(memory, left)) > model.memory_slices * gpus_left):
            return None
        # The first profile still needed must be on some GPU: branch only on layouts holding it.
        first = next(i for i, n in enumerate(left) if n)
        for counts in candidates:
            if not counts[first]:
                continue
            rest = tuple(max(0, n - c) for n, c in zip(left, counts))
            found = solve(rest, gpus_left - 1)
            if found is not None:
                used = tuple((name, min(c, n)) for name, c, n in zip(names, counts, left) if min(c, n))
                return (used,) + found
        return None

    # Fewest GPUs first: the others of the node stay unpartitioned and free.
    least = max(1, mig_lower_bound(model, dict(zip(names, need))))
    result = None
    for used_gpus in range(least, gpus + 1):
        result = solve(tuple(need), used_gpus)
        if result is not None:
            result = result + ((),) * (gpus - used_gpus)
            break
    solve.cache_clear()
    if result is None:
        return None
    # Canonical order: fullest GPU first, so equal plans print equally.
    return tuple(sorted(result, key=lambda layout: (-sum(c for _, c in layout), layout)))


@functools.lru_cache(maxsize=4096)
def _useful_layouts(model: MigModel, names: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """Valid layouts over `names` that no other valid layout dominates, largest first."""
    layouts = [tuple(dict(layout).get(n, 0) for n in names) for layout in model.valid_layouts(names)]
    maximal = [a for a in layouts
               if not any(b != a and all(x >= y for x, y in zip(b, a)) for b in layouts)]
    return tuple(sorted(maximal, key=lambda c: (-sum(c), c)))
