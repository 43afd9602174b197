"""MIG layouts for the identical nodes of one pool.

Every node of a pool carries the same per-GPU layouts (one `nvidia.com/mig.config` label, so one
mig-parted config, for the whole pool). With N nodes, each node must hold ceil(D_p / N) instances
of each profile p; any other uniform split needs at least that much per node. So the packer looks
for the fewest nodes N whose per-node demand (a) fits the node's GPUs as valid layouts and (b)
leaves room for the replicas in CPU and memory: immediate when even the hungriest replicas of every
profile fit one node together, else shown by an assignment of replicas to nodes (first-fit
decreasing). Feasibility grows with N, so N is found by bisection between the lower bound and one
node per replica. When one instance of each profile does not fit a node's GPUs, no uniform pool can
hold the demand and the planner says so. For the N found, the fewest GPUs per node.

Objective: fewest nodes (the GPUs paid for: the pool has one instance type), then fewest GPUs
partitioned, then node-hours. "Fewest GPUs holding a node's demand" is decided by an exact search
(iterative deepening over the maximal layouts, memoised) within a step budget; past the budget a
heuristic (the better of greedy layout choice and first-fit decreasing by instance size) answers,
and the packing is reported as heuristic with its gap to the lower bound.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence

from gpustack.catalog.mig import MigModel
from gpustack.plan import exact as exact_packing
from gpustack.plan.bounds import mig_bounds, nodes_bound
from gpustack.plan.packing import DoesNotFit, Item, Layout, NodeShape, Packing, coalesce

STEP_BUDGET = 20_000  # exact-search steps per node demand before the heuristic answers
# Room per node beyond the even split, as multiples of it, tried when CPU or memory bind.
_ROOM_SCALES = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)

Counts = tuple[int, ...]


class _OutOfSteps(Exception):
    pass


class _Cover:
    """The fewest valid GPU layouts holding a demand vector (profiles in `names` order)."""

    def __init__(self, model: MigModel, names: tuple[str, ...], gpus: int, budget: int):
        self.model = model
        self.names = names
        self.gpus = gpus
        self.budget = budget
        order = tuple(sorted(names))  # maximal_layouts counts in sorted-name order
        self.rows = tuple(tuple(row[order.index(n)] for n in names) for row in model.maximal_layouts(names))
        profiles = [model.profile(n) for n in names]
        self.compute = tuple(p.compute for p in profiles)  # type: ignore[union-attr]
        self.memory = tuple(p.memory for p in profiles)  # type: ignore[union-attr]
        self.weight = tuple(c / model.compute_slices + m / model.memory_slices
                            for c, m in zip(self.compute, self.memory))
        self.by_profile = tuple(
            tuple(sorted((r for r in self.rows if r[i]), key=lambda r: (-r[i], -sum(r), r)))
            for i in range(len(names)))
        self.failed: dict[Counts, int] = {}  # demand -> most layouts proven too few
        self.answers: dict[Counts, tuple[tuple[Counts, ...] | None, bool]] = {}
        self.steps = 0
        self.ran_out = False  # whether any answer came from the heuristic

    def fewest(self, need: Counts) -> tuple[tuple[Counts, ...] | None, bool]:
        """(layouts holding `need` in at most `gpus` GPUs, or None; whether that is proven)."""
        if need not in self.answers:
            self.answers[need] = self._fewest(need)
        return self.answers[need]

    def _fewest(self, need: Counts) -> tuple[tuple[Counts, ...] | None, bool]:
        least = max(1, max(mig_bounds(self.model, dict(zip(self.names, need))).values()))
        if least > self.gpus:
            return None, True
        self.steps = 0
        try:
            for k in range(least, self.gpus + 1):
                found = self._solve(need, k)
                if found is not None:
                    return tuple(found), True
            return None, True
        except _OutOfSteps:
            self.ran_out = True
            found = self._heuristic(need)
            return (tuple(found) if found is not None and len(found) <= self.gpus else None), False

    def _slices_fit(self, left: Counts, k: int) -> bool:
        return (sum(c * n for c, n in zip(self.compute, left)) <= self.model.compute_slices * k
                and sum(m * n for m, n in zip(self.memory, left)) <= self.model.memory_slices * k)

    def _solve(self, left: Counts, k: int) -> list[Counts] | None:
        if not any(left):
            return []
        if k == 0 or self.failed.get(left, -1) >= k or not self._slices_fit(left, k):
            return None
        self.steps += 1
        if self.steps > self.budget:
            raise _OutOfSteps
        # The largest profile still needed must sit on some GPU: branch on layouts holding it, the
        # ones holding most of it first (plans read better with few distinct layouts).
        first = next(i for i, n in enumerate(left) if n)
        seen: set[Counts] = set()
        for row in self.by_profile[first]:
            rest = tuple(max(0, n - c) for n, c in zip(left, row))
            if rest in seen:
                continue
            seen.add(rest)
            found = self._solve(rest, k - 1)
            if found is not None:
                return [tuple(min(c, n) for c, n in zip(row, left))] + found
        self.failed[left] = max(self.failed.get(left, -1), k)
        return None

    def _heuristic(self, need: Counts) -> list[Counts] | None:
        options = [g for g in (self._greedy(need), self._first_fit(need)) if g is not None]
        return min(options, key=len, default=None)

    def _greedy(self, need: Counts) -> list[Counts]:
        """Repeatedly the layout covering the most remaining slices (ties: fewer idle slices)."""
        left, out = list(need), []
        while any(left):
            row = max(self.rows, key=lambda r: (sum(min(c, n) * w for c, n, w in zip(r, left, self.weight)),
                                                -sum(c * w for c, w in zip(r, self.weight)), r))
            used = tuple(min(c, n) for c, n in zip(row, left))
            out.append(used)
            left = [n - u for n, u in zip(left, used)]
        return out

    def _first_fit(self, need: Counts) -> list[Counts]:
        """Instances largest first, each on the first GPU where NVIDIA's placement still works."""
        gpus: list[list[int]] = []
        for i in sorted(range(len(need)), key=lambda i: -self.weight[i]):
            for _ in range(need[i]):
                for layout in gpus:
                    layout[i] += 1
                    if self.model.place(dict(zip(self.names, layout))) is not None:
                        break
                    layout[i] -= 1
                else:
                    gpus.append([int(j == i) for j in range(len(need))])
        return [tuple(g) for g in gpus]


def _top_sum(asks: list[tuple[float, int]], k: int) -> float:
    """Sum of the k largest values of a (value, count) list sorted by value, largest first."""
    total = 0.0
    for value, count in asks:
        take = min(k, count)
        total += take * value
        k -= take
        if not k:
            break
    return total


def fewest_gpus(model: MigModel, demand: dict[str, int], gpus: int,
                budget: int = STEP_BUDGET) -> tuple[tuple[Layout, ...] | None, bool]:
    """The fewest valid GPU layouts (at most `gpus`) holding `demand`, any mix; whether proven."""
    names = tuple(sorted(demand, key=lambda n: (-model.profile(n).memory, -model.profile(n).compute, n)))  # type: ignore[union-attr]
    layouts, exact = _Cover(model, names, gpus, budget).fewest(tuple(demand[n] for n in names))
    if layouts is None:
        return None, exact
    return tuple(tuple((n, c) for n, c in sorted(zip(names, counts)) if c) for counts in layouts), exact


class _NodeSearch:
    """The node counts tried for one pool: whether N nodes, each offering the per-node demand's MIG
    instances, hold every replica in GPUs, CPU and memory (module docstring)."""

    def __init__(self, items: list[Item], node: NodeShape, model: MigModel, budget: int):
        self.items = items
        self.node = node
        self.demand: dict[str, int] = {}
        self.cpu: dict[str, list[tuple[float, int]]] = {}  # per profile: (cores, replicas), hungriest first
        self.memory: dict[str, list[tuple[float, int]]] = {}
        for item in items:
            assert item.profile is not None
            self.demand[item.profile] = self.demand.get(item.profile, 0) + item.count
            self.cpu.setdefault(item.profile, []).append((item.cpu, item.count))
            self.memory.setdefault(item.profile, []).append((item.memory_gib, item.count))
        for asks in (*self.cpu.values(), *self.memory.values()):
            asks.sort(reverse=True)
        # Largest profiles first: the exact search branches on the most constrained instance.
        self.names = tuple(sorted(self.demand, key=lambda n: (-model.profile(n).memory, -model.profile(n).compute, n)))  # type: ignore[union-attr]
        self.cover = _Cover(model, self.names, node.gpus, budget)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.chosen: dict[int, Counts] = {}  # nodes -> the instances of each profile a node offers, when it works

    def per_node(self, nodes: int) -> Counts:
        return tuple(math.ceil(self.demand[n] / nodes) for n in self.names)

    def attempt(self, nodes: int) -> tuple[tuple[Counts, ...] | None, bool]:
        """(the per-GPU layouts of a node when `nodes` nodes hold the pool, or None; whether proven)."""
        found, exact, caps = self.attempt_with_caps(nodes)
        if found is not None:
            self.chosen[nodes] = caps
        return found, exact

    def attempt_with_caps(self, nodes: int) -> tuple[tuple[Counts, ...] | None, bool, Counts]:
        need = self.per_node(nodes)
        layouts, exact = self.cover.fewest(need)
        if layouts is None:
            return None, exact, need
        # CPU and memory: enough when even the hungriest replicas of every profile fit one node;
        # otherwise an assignment of replicas to nodes must exist (found by first-fit decreasing).
        if self.hungriest_fit(need) or _assignable(self.items, self.index, need, nodes, self.node):
            return layouts, exact, need
        # Where CPU or memory bind, the node's GPUs usually have room for more instances than the even
        # split: layouts with more of every profile let the assignment place replicas by CPU and memory
        # alone. The least such room that works, so that the fewest GPUs are partitioned; at the most,
        # every profile extended one instance at a time while the node's GPUs still hold them.
        for more in (*self.roomier(need, nodes), self.roomiest(need)):
            roomier, _ = self.cover.fewest(more)
            if roomier is not None and _assignable(self.items, self.index, more, nodes, self.node):
                return roomier, False, more  # not proven: fewer GPUs may hold another assignment
        return None, False, need

    def hungriest_fit(self, need: Counts) -> bool:
        """Whether the hungriest replicas of every profile, `need` of each, fit one node together."""
        return (sum(_top_sum(self.cpu[n], k) for n, k in zip(self.names, need)) <= self.node.cpu + 1e-9
                and sum(_top_sum(self.memory[n], k) for n, k in zip(self.names, need)) <= self.node.memory_gib + 1e-9)

    def roomier(self, need: Counts, nodes: int) -> list[Counts]:
        out: list[Counts] = []
        for scale in _ROOM_SCALES:
            more = tuple(min(self.demand[n], math.ceil(self.demand[n] * scale / nodes)) for n in self.names)
            if more in out or more == need:
                continue
            if self.cover.fewest(more)[0] is None:
                break  # the GPUs hold no more at this scale, nor at any larger one
            out.append(more)
        return out

    def roomiest(self, need: Counts) -> Counts:
        room = list(need)
        growing = True
        while growing:
            growing = False
            for i, n in enumerate(self.names):
                if room[i] >= self.demand[n]:
                    continue
                room[i] += 1
                if self.cover.fewest(tuple(room))[0] is None:
                    room[i] -= 1
                else:
                    growing = True
        return tuple(room)

    def fewest_nodes(self, low: int) -> tuple[int, tuple[Counts, ...], bool]:
        """The fewest nodes that work, by bisection from `low` (feasibility grows with N), their
        layouts and whether those are proven fewest GPUs."""
        # With one node per replica every replica fits alone, so the largest N always works.
        high = sum(self.demand.values())
        low = min(low, high)
        layouts, exact = self.attempt(high)
        while low < high:
            middle = (low + high) // 2
            found, found_exact = self.attempt(middle)
            if found is not None:
                high, layouts, exact = middle, found, found_exact
            else:
                low = middle + 1
        assert layouts is not None, "one replica per node always fits"
        return high, layouts, exact


def pack_mig(items: Sequence[Item], node: NodeShape, model: MigModel, budget: int = STEP_BUDGET) -> Packing:
    """The fewest identical nodes whose per-GPU MIG layouts hold every replica (module docstring)."""
    items = coalesce(items)
    search = _NodeSearch(items, node, model, budget)
    bounds = mig_bounds(model, search.demand)
    lower = max(bounds.values())
    nodes_lower = max(1, nodes_bound(lower, node.gpus, sum(i.cpu * i.count for i in items),
                                     sum(i.memory_gib * i.count for i in items), node.cpu, node.memory_gib))
    bounds["one_gpu_per_node"] = nodes_lower  # a node in use partitions at least one GPU
    lower = max(lower, nodes_lower)
    for item in items:
        if item.cpu > node.cpu + 1e-9 or item.memory_gib > node.memory_gib + 1e-9:
            raise DoesNotFit(f"a replica of {item.workload!r} does not fit on an empty node")
    one_each, settled = search.cover.fewest(tuple(1 for _ in search.names))
    if one_each is None:
        raise DoesNotFit(_no_uniform_fit(model, search.names, node, settled))
    nodes, layouts, exact = search.fewest_nodes(nodes_lower)
    # Proven: fewest GPUs per node at N, and N nodes are needed (the bound, or N - 1 proven too few).
    proven = exact and (nodes <= nodes_lower or search.attempt(nodes - 1) == (None, True))
    capacity = search.chosen.get(nodes, search.per_node(nodes))
    solved = False
    if not proven and not exact_packing.too_large(items, nodes, mig=True):
        nodes, layouts, capacity, proven, solved = _settled(search, model, nodes, layouts, capacity)
    per_gpu = tuple(tuple((n, c) for n, c in sorted(zip(search.names, counts)) if c) for counts in layouts)
    per_gpu = tuple(sorted(per_gpu, key=lambda layout: (-sum(c for _, c in layout), layout)))
    for layout in per_gpu:
        model.require_valid(dict(layout))
    per_gpu += ((),) * (node.gpus - len(per_gpu))
    return Packing(nodes, nodes * len(layouts), lower, _node_hours(items, search.names, capacity, nodes),
                   per_gpu, nodes_lower, tuple(sorted(bounds.items())),
                   _method(solved, proven, search.cover.ran_out), proven)


def _settled(search: _NodeSearch, model: MigModel, nodes: int, layouts: tuple[Counts, ...], capacity: Counts
             ) -> tuple[int, tuple[Counts, ...], Counts, bool, bool]:
    """Where CPU or memory bind and first-fit decreasing is not enough: the assignment settled by the
    integer program. (nodes, layouts, instances per node, proven, whether the program decided)."""
    items, names = search.items, search.names
    solution = exact_packing.solve_mig(items, names, search.cover.rows,
                                       [model.profile(n).shape.max_count for n in names],  # type: ignore[union-attr]
                                       search.node, nodes)
    if solution is not None and (solution.nodes, solution.gpus) < (nodes, len(layouts)):
        need = tuple(max(sum(c for c, it in zip(counts, items) if it.profile == n) for counts in solution.per_node)
                     for n in names)
        found, found_exact = search.cover.fewest(need)
        if found is not None:
            return solution.nodes, found, need, solution.proved and found_exact, True
    elif solution is not None and solution.proved:
        return nodes, layouts, capacity, True, True  # the integer program proved no packing beats the heuristic's
    return nodes, layouts, capacity, False, False


def _method(solved: bool, proven: bool, ran_out: bool) -> str:
    if solved:
        return "integer program"
    if proven:
        return "exact search"
    if ran_out:
        return "heuristic (step budget reached)"
    return "exact layouts; CPU and memory fit by first-fit decreasing"


def _assignable(items: Sequence[Item], index: dict[str, int], need: Counts, nodes: int, node: NodeShape) -> bool:
    """Whether every replica can be assigned to `nodes` nodes that each offer `need` MIG instances, CPU
    and memory: by first-fit decreasing, else by worst-fit decreasing (balanced)."""
    return (_first_fit_assignable(items, index, need, nodes, node)
            or _balanced_assignable(items, index, need, nodes, node))


# Replicas up to which the balanced assignment runs (it places them one by one).
BALANCED_REPLICAS = 20_000


def _balanced_assignable(items: Sequence[Item], index: dict[str, int], need: Counts, nodes: int,
                         node: NodeShape) -> bool:
    """Worst-fit decreasing: replicas hungriest first (by their share of a node's CPU and memory), each
    onto the node with the most CPU and memory left that still has an instance of its profile. Where
    both the instances and the CPU bind, first-fit fills its first nodes with the hungriest replicas and
    strands instances; balancing spreads them. One heap of nodes per profile, stale entries skipped."""
    if sum(i.count for i in items) > BALANCED_REPLICAS or nodes <= 0:
        return False
    cpu = [node.cpu] * nodes
    memory = [node.memory_gib] * nodes
    free = [[need[p]] * nodes for p in range(len(need))]  # per profile, per node: instances left
    room = [_room(node.cpu, node.memory_gib, node)] * nodes  # kept in step with cpu and memory
    heaps: list[list[tuple[float, int]]] = [[(-room[n], n) for n in range(nodes)] if need[p] else []
                                            for p in range(len(need))]
    for heap in heaps:
        heapq.heapify(heap)
    for item in sorted(items, key=lambda i: (-_room(i.cpu, i.memory_gib, node), i.workload)):  # hungriest first
        p = index[item.profile]  # type: ignore[index]
        heap, left, want_cpu, want_memory = heaps[p], free[p], item.cpu, item.memory_gib
        for _ in range(item.count):
            while heap:
                stored, n = heap[0]
                if not left[n]:
                    heapq.heappop(heap)  # no instance of this profile left on it
                elif -stored != room[n]:
                    heapq.heapreplace(heap, (-room[n], n))  # room taken by another profile: re-queued
                else:
                    break
            if not heap:
                return False
            n = heap[0][1]
            if cpu[n] + 1e-9 < want_cpu or memory[n] + 1e-9 < want_memory:
                return False  # the roomiest node left cannot take it in one dimension at least
            cpu[n] -= want_cpu
            memory[n] -= want_memory
            left[n] -= 1
            room[n] = _room(cpu[n], memory[n], node)
            heapq.heapreplace(heap, (-room[n], n))
    return True


def _room(cpu: float, memory: float, node: NodeShape) -> float:
    """CPU and memory as shares of a node's (summed): a node's room left, or a replica's hunger."""
    return (cpu / node.cpu if node.cpu else 0.0) + (memory / node.memory_gib if node.memory_gib else 0.0)


def _first_fit_assignable(items: Sequence[Item], index: dict[str, int], need: Counts, nodes: int,
                          node: NodeShape) -> bool:
    """Whether first-fit decreasing (by CPU, then memory) assigns every replica to `nodes` nodes that
    each offer `need` MIG instances, CPU and memory. Identical nodes are kept in bulk groups."""
    groups: list[tuple[int, Counts, float, float]] = [(nodes, need, node.cpu, node.memory_gib)]
    for item in sorted(items, key=lambda i: (-i.cpu, -i.memory_gib, i.workload)):
        p, left, i = index[item.profile], item.count, 0  # type: ignore[index]
        while left and i < len(groups):
            copies, free, cpu, memory = groups[i]
            k = free[p]
            if item.cpu > 0:
                k = min(k, int((cpu + 1e-9) // item.cpu))
            if item.memory_gib > 0:
                k = min(k, int((memory + 1e-9) // item.memory_gib))
            if k > 0:
                def taken(per: int) -> tuple[Counts, float, float]:  # used in this iteration only
                    return (tuple(f - per if j == p else f for j, f in enumerate(free)),  # noqa: B023
                            cpu - per * item.cpu, memory - per * item.memory_gib)  # noqa: B023
                whole, rest = divmod(left, k)
                if whole >= copies:
                    groups[i] = (copies, *taken(k))
                    left -= k * copies
                else:
                    parts = [(whole, *taken(k))] if whole else []
                    parts += [(1, *taken(rest))] if rest else []
                    untouched = copies - whole - (1 if rest else 0)
                    parts += [(untouched, free, cpu, memory)] if untouched else []
                    groups[i:i + 1] = parts
                    i += len(parts) - 1
                    left = 0
            i += 1
        if left:
            return False
    return True


def nodes_holding(layouts: Sequence[Layout], demand: dict[str, int]) -> int:
    """Nodes with these per-GPU layouts needed to hold `demand` instances of each profile."""
    per_node: dict[str, int] = {}
    for layout in layouts:
        for profile, count in layout:
            per_node[profile] = per_node.get(profile, 0) + count
    return max((math.ceil(n / per_node[p]) for p, n in demand.items() if n), default=0)


def nodes_for(items: Sequence[Item], layouts: Sequence[Layout], node: NodeShape, most: int) -> int:
    """Nodes carrying `layouts` that hold `items` in MIG instances, CPU and memory (at most `most`,
    a count known to hold them): for a floor that runs on the nodes of a pool packed for its peak."""
    items = coalesce(items)  # shapes, not workloads: the assignment's groups stay few
    demand: dict[str, int] = {}
    for item in items:
        assert item.profile is not None  # MIG items name their profile
        demand[item.profile] = demand.get(item.profile, 0) + item.count
    per_node: dict[str, int] = {}
    for layout in layouts:
        for profile, count in layout:
            per_node[profile] = per_node.get(profile, 0) + count
    names = tuple(sorted(per_node))
    need = tuple(per_node[n] for n in names)
    index = {n: i for i, n in enumerate(names)}
    nodes = max(nodes_holding(layouts, demand),
                nodes_bound(0, node.gpus, sum(i.cpu * i.count for i in items),
                            sum(i.memory_gib * i.count for i in items), node.cpu, node.memory_gib))
    if nodes >= most or _assignable(items, index, need, nodes, node):
        return min(nodes, most)
    # Galloping, then bisection between a count that fails and one that holds (`most` does): a few
    # assignments, not one per node of the pool (that was quadratic in the pool's size).
    fails, step = nodes, 1
    while fails + step < most and not _assignable(items, index, need, fails + step, node):
        fails, step = fails + step, step * 2
    holds = min(fails + step, most)
    while holds - fails > 1:
        middle = (fails + holds) // 2
        if _assignable(items, index, need, middle, node):
            holds = middle
        else:
            fails = middle
    return holds


def _node_hours(items: Sequence[Item], names: tuple[str, ...], capacity: Counts, nodes: int) -> float:
    """Sum over nodes of the longest monthly hours of a replica on it, with replicas filling nodes in
    order of their hours (so short-lived ones share the last nodes), computed per run of nodes whose
    first replica of each profile is the same: linear in workloads, not replicas."""
    steps: list[list[tuple[int, int, float]]] = []  # per profile: (first node, end node, hours)
    for name, cap in zip(names, capacity):
        if not cap:
            continue
        runs, slot = [], 0
        for item in sorted((it for it in items if it.profile == name), key=lambda it: -it.hours):
            first, end = -(-slot // cap), -(-(slot + item.count) // cap)
            if end > first:
                runs.append((first, min(end, nodes), item.hours))
            slot += item.count
        steps.append(runs)
    cuts = sorted({0, nodes} | {k for runs in steps for a, b, _ in runs for k in (a, b) if k <= nodes})
    total, at = 0.0, [0] * len(steps)
    for a, b in itertools.pairwise(cuts):  # runs are in node order: one pointer per profile
        longest = 0.0
        for p, runs in enumerate(steps):
            while at[p] < len(runs) and runs[at[p]][1] <= a:
                at[p] += 1
            if at[p] < len(runs) and runs[at[p]][0] <= a:
                longest = max(longest, runs[at[p]][2])
        total += (b - a) * longest
    return total


def _no_uniform_fit(model: MigModel, names: tuple[str, ...], node: NodeShape, exact: bool) -> str:
    profiles = ", ".join(sorted(names))
    why = "" if exact else " (by a bounded search)"
    return (f"one instance of each MIG profile this pool holds ({profiles}) does not fit the GPUs of one "
            f"{node.gpus}-GPU node together{why}, and every node of a pool carries the same {model.name} "
            "layout: ask for fewer distinct profiles for these workloads, or give some of them another "
            "sharing mode or GPU model")
