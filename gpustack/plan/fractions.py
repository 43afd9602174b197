"""Enforced fractions (`sharing: fractional`): replicas of any size up to one GPU, packed per GPU.

A replica asks for a percentage of one GPU (HAMi's `nvidia.com/gpucores`, and the same share of
its memory as `nvidia.com/gpumem`); a GPU holds replicas whose percentages add up to at most 100,
and a node holds them in CPU and memory as well. Unlike time-slicing, sizes differ within a GPU, so
this is bin packing per GPU inside bin packing per node.

Packing: best-fit decreasing, replica by replica, largest first: each goes to the open GPU with the
least room that still holds it (and whose node has the CPU and memory), else to an unused GPU of an
open node, else to a new node. Lower bound: Martello and Toth's L2 (two replicas above half a GPU
never share one; those between half and 100 - k leave room only for replicas below k), which is
never below the ceiling of the summed fractions; nodes: that bound over GPUs per node, and summed
CPU and memory over a node's. When best-fit decreasing misses the bounds, an arc-flow integer
program (`gpustack.plan.exact.solve_fractions`) finds the fewest GPUs for the sizes, which also
proves how far above L2 the optimum lies, and the replicas and GPUs are then placed onto nodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpustack.plan import exact as exact_packing
from gpustack.plan.bounds import nodes_bound
from gpustack.plan.packing import DoesNotFit, Item, NodeShape, Packing, coalesce

PERCENT = 100  # a GPU in the units HAMi counts compute in (nvidia.com/gpucores)
MAX_SHAPES = 200  # replica shapes up to which the exact step runs (its model grows with distinct sizes only)


def l2_bound(sizes: dict[int, int], capacity: int = PERCENT) -> int:
    """Martello-Toth L2 for bins of `capacity`: sizes maps an integer size to how many items have it."""
    if not sizes:
        return 0
    best = 0
    for k in sorted({0} | {s for s in sizes if 2 * s <= capacity}):
        alone = sum(n for s, n in sizes.items() if s > capacity - k)
        big = [(s, n) for s, n in sizes.items() if capacity - k >= s and 2 * s > capacity]
        small = sum(s * n for s, n in sizes.items() if k <= s and 2 * s <= capacity)
        room = sum(n for _, n in big) * capacity - sum(s * n for s, n in big)
        best = max(best, alone + sum(n for _, n in big) + max(0, math.ceil((small - room) / capacity)))
    return best


def fraction_bounds(items: Sequence[Item], node: NodeShape) -> tuple[dict[str, int], int]:
    """({"fractions": ceil of the summed shares, "l2": L2, "one_gpu_per_node": ...}, nodes lower bound)."""
    sizes: dict[int, int] = {}
    for item in items:
        sizes[item.units] = sizes.get(item.units, 0) + item.count
    total = math.ceil(sum(s * n for s, n in sizes.items()) / PERCENT)
    l2 = l2_bound(sizes)
    nodes = nodes_bound(l2, node.gpus, sum(i.count * i.cpu for i in items),
                        sum(i.count * i.memory_gib for i in items), node.cpu, node.memory_gib)
    return {"fractions": total, "l2": l2, "one_gpu_per_node": nodes}, nodes


def pack_fractions(items: Sequence[Item], node: NodeShape) -> Packing:
    """Replicas of `units` percent of a GPU onto identical nodes (see the module docstring)."""
    items = coalesce(items)
    for item in items:
        if item.units > PERCENT or item.cpu > node.cpu + 1e-9 or item.memory_gib > node.memory_gib + 1e-9:
            raise DoesNotFit(f"a replica of {item.workload!r} does not fit on an empty node")
    node_cpu: list[float] = []
    node_memory: list[float] = []
    node_hours: list[float] = []
    unused: list[int] = []  # GPUs no replica uses yet, per node
    gpu_node: list[int] = []  # the node of each open GPU
    by_room: list[list[int]] = [[] for _ in range(PERCENT + 1)]  # open GPUs by free percent, in order opened
    room: list[int] = []
    with_unused: list[int] = []  # nodes that still have an unused GPU, in order opened
    order = sorted(items, key=lambda i: (-i.units, -i.cpu, -i.memory_gib, -i.hours, i.workload))
    for item in order:
        for _ in range(item.count):
            gpu = _best_fit(item, by_room, gpu_node, node_cpu, node_memory)
            if gpu is None:
                host = next((n for n in with_unused if node_cpu[n] + 1e-9 >= item.cpu
                             and node_memory[n] + 1e-9 >= item.memory_gib), None)
                if host is None:
                    host = len(node_cpu)
                    node_cpu.append(node.cpu)
                    node_memory.append(node.memory_gib)
                    node_hours.append(0.0)
                    unused.append(node.gpus)
                    with_unused.append(host)
                unused[host] -= 1
                if not unused[host]:
                    with_unused.remove(host)
                gpu = len(room)
                room.append(PERCENT)
                gpu_node.append(host)
            else:
                by_room[room[gpu]].remove(gpu)
            room[gpu] -= item.units
            if room[gpu]:
                by_room[room[gpu]].append(gpu)
            host = gpu_node[gpu]
            node_cpu[host] -= item.cpu
            node_memory[host] -= item.memory_gib
            node_hours[host] = max(node_hours[host], item.hours)
    bounds, nodes_lower = fraction_bounds(items, node)
    lower = max(bounds.values())
    nodes, gpus, hours, method = len(node_cpu), len(room), sum(node_hours), "best-fit decreasing"
    if (nodes, gpus) != (nodes_lower, lower) and len(items) <= MAX_SHAPES:
        # The fewest GPUs exactly (sizes only), then the replicas and GPUs onto nodes.
        sizes: dict[int, int] = {}
        for item in items:
            sizes[item.units] = sizes.get(item.units, 0) + item.count
        solved = exact_packing.solve_fractions(sizes, PERCENT)
        if solved is not None:
            patterns, proved = solved
            if proved:
                bounds["exact_gpus"] = len(patterns)
                lower = max(lower, len(patterns))
                nodes_lower = max(nodes_lower, math.ceil(len(patterns) / node.gpus))
            placed = _on_nodes(patterns, order, node)
            if placed is not None and placed[:2] < (nodes, gpus):
                nodes, gpus, hours = placed
                method = "integer program (arc flow)"
    return Packing(nodes, gpus, lower, hours, (), nodes_lower, tuple(sorted(bounds.items())), method,
                   (nodes, gpus) == (nodes_lower, lower))


def _on_nodes(patterns: list[tuple[int, ...]], order: Sequence[Item], node: NodeShape
              ) -> tuple[int, int, float] | None:
    """(nodes, GPUs, node-hours) with the replicas in the GPUs' slots and the GPUs on nodes, first-fit
    decreasing by CPU; None when a GPU's replicas do not fit a node's CPU and memory."""
    queues: dict[int, list[Item]] = {}
    for item in order:  # largest CPU and memory first within a size
        queues.setdefault(item.units, []).extend([item] * item.count)
    for queue in queues.values():
        queue.reverse()  # pop() from the end gives the hungriest first
    gpus = []
    for pattern in patterns:
        replicas = [queues[size].pop() for size in pattern if queues.get(size)]
        if replicas:
            gpus.append((sum(r.cpu for r in replicas), sum(r.memory_gib for r in replicas),
                         max(r.hours for r in replicas)))
    nodes: list[list[float]] = []  # [GPUs used, CPU used, memory used, hours]
    for cpu, memory, hours in sorted(gpus, key=lambda g: (-g[0], -g[1], -g[2])):
        if cpu > node.cpu + 1e-9 or memory > node.memory_gib + 1e-9:
            return None
        host = next((n for n in nodes if n[0] < node.gpus and n[1] + cpu <= node.cpu + 1e-9
                     and n[2] + memory <= node.memory_gib + 1e-9), None)
        if host is None:
            host = [0, 0.0, 0.0, 0.0]
            nodes.append(host)
        host[0] += 1
        host[1] += cpu
        host[2] += memory
        host[3] = max(host[3], hours)
    return len(nodes), len(gpus), sum(n[3] for n in nodes)


def _best_fit(item: Item, by_room: list[list[int]], gpu_node: list[int], node_cpu: list[float],
              node_memory: list[float]) -> int | None:
    """The open GPU with the least room that holds `item`, on a node with its CPU and memory."""
    for free in range(item.units, PERCENT + 1):
        for gpu in by_room[free]:
            host = gpu_node[gpu]
            if node_cpu[host] + 1e-9 >= item.cpu and node_memory[host] + 1e-9 >= item.memory_gib:
                return gpu
    return None
