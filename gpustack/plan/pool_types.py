"""One instance type for all of a pool's replicas, chosen over the pool's workloads together.

Each workload first gets the type that carries its own replicas for the least money
(`gpustack.plan.choices`); workloads that would share a pool but for that type (same kind, GPU,
sharing, capacity, schedule, labels, disk; a reserved floor with the on-demand burst it is packed
with) form a group. Every type that holds a replica of each workload on each capacity of the group
is priced by packing the whole group onto it (the pools' exact step), and the group takes the
cheapest of those and of its workloads' own types, so no single instance type pinned in the spec can
beat the plan. A type whose lower bound (nodes any packing needs, at the lowest price and hours of
the group) already costs more than the best found is not packed.

With a current plan (`build_plan(current=...)`), a group that is deployed keeps its type (or its
workloads' own types, when it is deployed on several) unless moving saves more than
`pools.type_change_saving` of what it costs there: moving replaces a node pool (its nodes drain), so a
pool does not follow every shift of a replica count. Without one, nothing would be replaced, and the
group takes the cheapest.

Left alone: spot fallbacks (they stand by, at no planned cost), and workloads that pin a type.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable

from gpustack.catalog import InstanceType
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.choices import slots_per_node
from gpustack.plan.nodes import allocatable
from gpustack.plan.bounds import ceil_bound
from gpustack.plan.pools import Demand, PoolKey, workload_hours
from gpustack.plan.prices import PriceBook

NOTED_SAVING = 0.01  # a cheaper type that saves less than this share of the pool is not worth a note

Assignment = dict[PoolKey, list[Demand]]
CostOf = Callable[[Assignment], float | None]  # the pools' monthly cost; None: they cannot be built
Rekey = Callable[[Demand, InstanceType], PoolKey]  # the pool key of a demand on another type


@dataclasses.dataclass(frozen=True)
class Retyped:
    demands: Assignment
    notes: dict[str, str]  # plan pool name -> what the type decision was, when there was one to make


def group_of(key: PoolKey) -> PoolKey:
    """The key without what the type decides: the instance, the MIG pool split of one-GPU nodes, and
    for serving the reserved floor / on-demand burst split (they are packed together)."""
    sharing = "mig" if key.sharing in ("mig-large", "mig-small") else key.sharing
    capacity = key.capacity
    if key.kind == "inference" and not key.fallback and capacity in ("reserved", "on-demand"):
        capacity = "reserved"
    return dataclasses.replace(key, instance="", sharing=sharing, capacity=capacity)


def one_type_per_pool(demands: Assignment, rows: Iterable[InstanceType], provisioner: Provisioner,
                      prices: PriceBook, cost_of: CostOf, rekey: Rekey, threshold: float,
                      current_names: Collection[str], fixed: Callable[[PoolKey, list[Demand]], bool]) -> Retyped:
    """`demands` regrouped so that each movable group sits on its cheapest type (module docstring)."""
    rows = tuple(rows)
    groups: dict[PoolKey, list[PoolKey]] = defaultdict(list)
    out: Assignment = {}
    for key, found in demands.items():
        if fixed(key, found):
            out.setdefault(key, []).extend(found)
        else:
            groups[group_of(key)].append(key)
    notes: dict[str, str] = {}
    for base in sorted(groups, key=lambda k: k.readable()):
        own = {k: demands[k] for k in sorted(groups[base], key=lambda k: k.readable())}
        moved, note = _decide(own, rows, provisioner, prices, cost_of, rekey, threshold, current_names)
        for key, found in moved.items():
            out.setdefault(key, []).extend(found)
            if note:
                notes[key.name()] = note
    return Retyped(out, notes)


def _on(row: InstanceType, together: list[Demand], rekey: Rekey) -> Assignment:
    moved: Assignment = {}
    keys: dict[tuple[object, ...], PoolKey] = {}  # a key depends on the demand's pool and MIG profile only
    for demand in together:
        shape = (demand.workload.kind, demand.workload.schedule, demand.workload.disk_gib, demand.part.capacity,
                 demand.part.role, demand.ask.mode, demand.ask.shares_per_gpu,
                 demand.ask.profile.name if demand.ask.profile else None, tuple(sorted(demand.workload.labels)))
        key = keys.get(shape)
        if key is None:
            key = keys[shape] = rekey(demand, row)
        moved.setdefault(key, []).append(dataclasses.replace(demand, row=row))
    return moved


def _lower_bound(row: InstanceType, together: list[Demand], provisioner: Provisioner, prices: PriceBook) -> float:
    """A cost no packing of the group onto `row` goes below: the nodes its GPU shares (a MIG profile's
    compute slices), CPU and memory need at least, at the group's lowest price and hours."""
    cpu, memory = allocatable(row.vcpus, row.memory_gib, provisioner.kubelet_reservation, row.name)
    gpus = sum(d.part.replicas * d.ask.planned_share for d in together)
    cores = sum(d.part.replicas * d.ask.cpu for d in together)
    gib = sum(d.part.replicas * d.ask.memory_gib for d in together)
    nodes = max(gpus / row.gpus, cores / cpu if cpu else 0.0, gib / memory if memory else 0.0)
    price = min(prices.for_capacity(row, d.part.capacity).usd_per_node_hour for d in together)
    # A node runs at least the hours of the replica on it that runs least.
    hours = min(workload_hours(d.workload) for d in together)
    return ceil_bound(nodes) * price * hours


def _decide(own: Assignment, rows: tuple[InstanceType, ...], provisioner: Provisioner, prices: PriceBook,
            cost_of: CostOf, rekey: Rekey, threshold: float, current_names: Collection[str]) -> tuple[Assignment, str]:
    together = [d for found in own.values() for d in found]
    fitting = _fitting(rows, together, provisioner)
    deployed = [row for row in fitting if current_names
                and any(k.name() in current_names for k in _on(row, together, rekey))]
    keep, how = _kept(own, deployed, together, rekey)
    keep_cost = cost_of(keep)
    if keep_cost is None or not fitting:
        return keep, ""
    best_cost, best = _cheapest(fitting, together, provisioner, prices, cost_of, rekey, keep_cost)
    if best is None:
        return keep, ""
    moved = _on(best, together, rekey)
    saving = keep_cost - best_cost
    share = saving / keep_cost if keep_cost > 0 else 1.0
    replicas = sum(d.part.replicas for d in together)
    if not deployed:
        note = (f"{best.name} carries all {replicas} replicas for ${saving:,.0f}/month ({share:.0%}) less than {how} "
                "(every type that holds them priced).") if share >= NOTED_SAVING else ""
        return moved, note
    if share > threshold:
        return moved, (f"{best.name} carries all {replicas} replicas for ${saving:,.0f}/month ({share:.0%}) "
                       f"less than {how}: more than pools.type_change_saving ({threshold:.0%}), so the "
                       "pool takes it (a new node pool, which gpustack diff shows as a replacement).")
    if share < NOTED_SAVING:
        return keep, ""
    return keep, (f"{best.name} would carry all {replicas} replicas for ${saving:,.0f}/month ({share:.1%}) less, "
                  f"under pools.type_change_saving ({threshold:.0%}): kept {how}, so that a change of replicas "
                  "does not replace the node pool.")


def _fitting(rows: tuple[InstanceType, ...], together: list[Demand], provisioner: Provisioner) -> list[InstanceType]:
    """The types of the group's GPU that take each of its capacities and hold a replica of each workload."""
    gpu = together[0].row.gpu
    capacities = {d.part.capacity for d in together}
    return [row for row in rows if row.gpu == gpu
            and all(provisioner.capacity_refusal(row, c) is None for c in capacities)
            and all(slots_per_node(row, d.ask, provisioner) > 0 for d in together)]


def _kept(own: Assignment, deployed: list[InstanceType], together: list[Demand], rekey: Rekey
          ) -> tuple[Assignment, str]:
    """What the group keeps unless a move is worth it, and how to say it: its one deployed type, else
    its workloads' own types."""
    if len(deployed) == 1:
        return _on(deployed[0], together, rekey), f"on {deployed[0].name}, as deployed"
    # nothing deployed, or the group deployed on several types (its workloads' own)
    types = sorted({k.instance for k in own})
    return own, (f"on {' and '.join(types)}, each workload's own type" if len(types) > 1
                 else f"on {types[0]}, its workloads' own type")


def _cheapest(fitting: list[InstanceType], together: list[Demand], provisioner: Provisioner, prices: PriceBook,
              cost_of: CostOf, rekey: Rekey, keep_cost: float) -> tuple[float, InstanceType | None]:
    """The type that carries the group for less than `keep_cost`, and its cost (None: none does); types
    priced in order of their lower bounds, until a bound passes the best cost found."""
    best_cost, best = keep_cost, None
    for lower, row in sorted(((_lower_bound(r, together, provisioner, prices), r) for r in fitting),
                             key=lambda p: (p[0], p[1].gpus, p[1].name)):
        if lower >= best_cost - 1e-6:
            break  # no type from here on can cost less than the best found
        cost = cost_of(_on(row, together, rekey))
        if cost is not None and cost < best_cost - 1e-6:
            best_cost, best = cost, row
    return best_cost, best
