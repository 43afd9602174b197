"""One instance type for all of a pool's replicas, kept unless moving saves enough.

Each workload first gets the type that carries its own replicas for the least money
(`gpustack.plan.choices`); workloads that would share a pool but for that type (same kind, GPU,
sharing, capacity, schedule, labels, disk) form a group. The group moves to the one type that
carries all its replicas for the least money only when that saves more than
`pools.type_change_saving` of what the group costs as it stands: as it is deployed (the pools of the
current plan, when the planner is given one), else on its workloads' own types. Moving replaces a
node pool (its nodes drain), so a pool does not follow every shift of a replica count: scaling a
pool up past the point where another type is cheaper, and back, keeps its type as long as the saving
stays under the threshold.

Left alone: reserved floors and their on-demand bursts (chosen with the cloud's acceptance rules and
packed together), spot fallbacks (they stand by, at no planned cost), and workloads that pin a type.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable

from gpustack.catalog import InstanceType
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.choices import slots_per_node
from gpustack.plan.pools import Demand, PoolKey
from gpustack.plan.prices import PriceBook

# Candidate types packed per group, best first by the replicas-per-node estimate: the packer, not the
# estimate, decides between them, and packing every type of a large pool would cost seconds.
PACKED_CANDIDATES = 2

NOTED_SAVING = 0.01  # a cheaper type that saves less than this share of the pool is not worth a note

CostOf = Callable[[PoolKey, list[Demand]], float | None]  # the pool's monthly cost; None: it cannot be built


@dataclasses.dataclass(frozen=True)
class Retyped:
    demands: dict[PoolKey, list[Demand]]
    notes: dict[str, str]  # plan pool name -> what the type decision was, when there was one to make


def one_type_per_pool(demands: dict[PoolKey, list[Demand]], rows: Iterable[InstanceType], provisioner: Provisioner,
                      prices: PriceBook, cost_of: CostOf, threshold: float, current_names: Collection[str],
                      fixed: Callable[[PoolKey, list[Demand]], bool]) -> Retyped:
    """`demands` regrouped so that each movable group sits on one type where that saves enough."""
    rows = tuple(rows)
    groups: dict[PoolKey, list[PoolKey]] = defaultdict(list)
    out: dict[PoolKey, list[Demand]] = {}
    for key, found in demands.items():
        if fixed(key, found):
            out[key] = found
        else:
            groups[dataclasses.replace(key, instance="")].append(key)
    notes: dict[str, str] = {}
    for base in sorted(groups, key=lambda k: k.readable()):
        keys = sorted(groups[base], key=lambda k: k.instance)
        moved, note = _decide(base, keys, demands, rows, provisioner, prices, cost_of, threshold, current_names)
        for key, found in moved.items():
            out.setdefault(key, []).extend(found)
            if note:
                notes[key.name()] = note
    return Retyped(out, notes)


def _decide(base: PoolKey, keys: list[PoolKey], demands: dict[PoolKey, list[Demand]],
            rows: tuple[InstanceType, ...], provisioner: Provisioner, prices: PriceBook, cost_of: CostOf, threshold: float,
            current_names: Collection[str]) -> tuple[dict[PoolKey, list[Demand]], str]:
    together = [d for k in keys for d in demands[k]]
    gpu = together[0].row.gpu
    fitting = [row for row in rows if row.gpu == gpu and provisioner.capacity_refusal(row, base.capacity) is None
               and all(slots_per_node(row, d.ask, provisioner) > 0 for d in together)]

    def on(row: InstanceType) -> tuple[PoolKey, list[Demand]]:
        return dataclasses.replace(base, instance=row.name), [dataclasses.replace(d, row=row) for d in together]

    deployed = [row for row in fitting if dataclasses.replace(base, instance=row.name).name() in current_names]
    if len(deployed) == 1:
        keep = dict([on(deployed[0])])
        how = f"on {deployed[0].name}, as deployed"
    else:
        keep = {k: demands[k] for k in keys}
        how = f"on {' and '.join(k.instance for k in keys)}, each workload's own type" if len(keys) > 1 else \
            f"on {keys[0].instance}, its workloads' own type"
    keep_costs = [cost_of(k, found) for k, found in keep.items()]
    if not fitting or any(c is None for c in keep_costs):
        return keep, ""
    keep_cost = sum(c for c in keep_costs if c is not None)

    def estimate(row: InstanceType) -> tuple[float, str]:
        nodes = math.ceil(sum(d.part.replicas / slots_per_node(row, d.ask, provisioner) for d in together) - 1e-9)
        return nodes * prices.for_capacity(row, base.capacity).usd_per_node_hour, row.name

    priced = []
    for row in sorted(fitting, key=estimate)[:PACKED_CANDIDATES]:
        cost = cost_of(*on(row))
        if cost is not None:
            priced.append((round(cost, 6), row.gpus, row.name, row))
    if not priced:
        return keep, ""
    best_cost, _, _, best = min(priced, key=lambda p: p[:3])
    if list(keep) == [dataclasses.replace(base, instance=best.name)]:
        return keep, ""
    saving = keep_cost - best_cost
    if keep_cost <= 0 or saving <= 0:
        return keep, ""
    share = saving / keep_cost
    if share < NOTED_SAVING:
        return keep, ""
    replicas = sum(d.part.replicas for d in together)
    if share > threshold:
        return dict([on(best)]), (f"{best.name} carries all {replicas} replicas for ${saving:,.0f}/month ({share:.0%}) "
                                  f"less than {how}: more than pools.type_change_saving ({threshold:.0%}), so the "
                                  "pool takes it (a new node pool, which gpustack diff shows as a replacement).")
    return keep, (f"{best.name} would carry all {replicas} replicas for ${saving:,.0f}/month ({share:.1%}) less, "
                  f"under pools.type_change_saving ({threshold:.0%}): kept {how}, so that a change of replicas "
                  "does not replace the node pool.")
