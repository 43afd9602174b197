"""Fallback pools: which spot pools an on-demand fallback pool backs, and what makes the autoscaler grow
the spot pool first with the target's provisioner (`Provisioner.fallback_mechanism`).

A fallback pool is left out of the cost estimate because it runs only when spot capacity is short.
That is true only where something ranks the spot pools first: with the Cluster Autoscaler's default
`random` expander an on-demand fallback node starts about as often as a spot one. Each target with
fallback pools gets a note naming the mechanism and what the user must set, taken from the cloud's
fact; a provisioner without one gets a warning instead. The groups are stored in the plan
(`TargetPlan.fallback_groups`, by pool name), so renderers never work them out again.

A group holds the spot and fallback pools of one kind, GPU, sharing and schedule that share a
workload; its name depends on those four only, so adding a workload never renames it (on GKE the
name is a node label of the pools and the name of their ComputeClass).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gpustack.clouds.base import CLASS_PRIORITIES, COMPUTE_CLASS, NODEPOOL_WEIGHT
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.model import FallbackGroup, Pool, Taint
from gpustack.plan.pools import PLAN_NAMES, schedule_tag, shares_tag, slug
from gpustack.spec.model import shared_by_clients


GroupKey = tuple[str, str, str, "int | None", tuple[str, ...], "tuple[str, str, str] | None"]


def _group_key(pool: Pool) -> GroupKey:
    profiles = pool.mig_profiles
    schedule = (pool.schedule.days, pool.schedule.hours, pool.schedule.timezone) if pool.schedule else None
    return pool.kind, pool.gpu, pool.sharing.mode, pool.sharing.replicas, profiles, schedule


def _group_name(pool: Pool) -> str:
    kind, gpu, mode, replicas, profiles, schedule = _group_key(pool)
    parts = ["gpustack", kind, gpu]
    if shared_by_clients(mode):
        parts.append(shares_tag(mode, replicas))
    elif mode == "mig":
        parts.append("mig-" + "-".join(profiles))
    if schedule:
        parts.append(schedule_tag(schedule))
    readable = slug("-".join(parts))
    return PLAN_NAMES.make(repr((kind, gpu, mode, replicas, profiles, schedule)), readable)


def fallback_groups(pools: Sequence[Pool]) -> tuple[FallbackGroup, ...]:
    """The target's fallback groups (spot pools grown first, fallback pools only when no spot pool of
    the group can grow), sorted by name; empty when it has no fallback pool."""
    fallback = [p for p in pools if p.role == "fallback"]
    backed = {w for p in fallback for w in p.workloads}
    spot = [p for p in pools if p.capacity in FIRST_RUNGS and p.role != "fallback" and backed & set(p.workloads)]
    by_key: dict[GroupKey, list[Pool]] = {}
    for pool in spot + fallback:
        by_key.setdefault(_group_key(pool), []).append(pool)
    groups = []
    for members in by_key.values():
        spot_pools = tuple(sorted(p.name for p in members if p.role != "fallback"))
        fallback_pools = tuple(sorted(p.name for p in members if p.role == "fallback"))
        groups.append(FallbackGroup(_group_name(members[0]), spot_pools, fallback_pools))
    return tuple(sorted(groups, key=lambda g: g.name))


# The order in which a class tries its pools (CLASS_PRIORITIES): the reservation a floor pays for
# anyway, then spot, then on-demand; a pool that backs or tops up another comes after it.
_CAPACITY_RANK = {"reserved": 0, "block": 0, "flex": 1, "spot": 1, "on-demand": 2}
# The capacities a fallback pool backs: spot, and capacity bought for a window (a block, flex-start).
FIRST_RUNGS = ("spot", "block", "flex")
_ROLE_RANK = {"floor": 0, "main": 1, "burst": 2, "fallback": 2}


def priority_order(pool: Pool) -> tuple[int, int, str]:
    return _CAPACITY_RANK.get(pool.capacity, 3), _ROLE_RANK.get(pool.role, 3), pool.name


def pool_classes(pools: Sequence[Pool]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(class name, its pools in priority order) for CLASS_PRIORITIES: the pools that carry a common
    workload (transitively) form one class, so each workload's pods select one class; the class is named
    after its first pool's cloud name, so adding a workload to a pool renames nothing."""
    parent = {p.name: p.name for p in pools}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    carrier: dict[str, str] = {}
    for pool in sorted(pools, key=lambda p: p.name):
        for workload in pool.workloads:
            first = carrier.setdefault(workload, pool.name)
            parent[root(pool.name)] = root(first)
    members: dict[str, list[Pool]] = {}
    for pool in pools:
        members.setdefault(root(pool.name), []).append(pool)
    classes = []
    for group in members.values():
        ordered = sorted(group, key=priority_order)
        classes.append((ordered[0].cloud_name, tuple(p.name for p in ordered)))
    return tuple(sorted(classes))


def _with_backs(pools: Sequence[Pool]) -> list[Pool]:
    """The pools, each fallback pool with the capacities of the pools its group grows first (`Pool.backs`)."""
    capacity_of = {p.name: p.capacity for p in pools}
    backs = {name: tuple(sorted({capacity_of[n] for n in g.spot})) for g in fallback_groups(pools) for name in g.fallback}
    return [dataclasses.replace(p, backs=backs[p.name]) if p.name in backs else p for p in pools]


def mark_pools(pools: Sequence[Pool], provisioner: Provisioner) -> tuple[Pool, ...]:
    """Where the cloud ties pools to a class by node label and taint (GKE ComputeClass), the pools of
    each fallback group (CLASS_PRIORITIES: every pool, `pool_classes`) carry `<marker>=<class name>` as
    both; every fallback pool carries what it backs (`Pool.backs`)."""
    pools = _with_backs(pools)
    mechanism = provisioner.fallback_mechanism
    if (mechanism is None or mechanism.kind not in (COMPUTE_CLASS, CLASS_PRIORITIES)
            or mechanism.pool_marker is None):
        return tuple(pools)
    marker = mechanism.pool_marker
    if mechanism.kind == CLASS_PRIORITIES:
        group_of = {name: cls for cls, names in pool_classes(pools) for name in names}
    else:
        group_of = {name: g.name for g in fallback_groups(pools) for name in g.spot + g.fallback}
    marked = []
    for pool in pools:
        name = group_of.get(pool.name)
        if name is not None:
            pool = dataclasses.replace(pool, labels=tuple(sorted({**dict(pool.labels), marker: name}.items())),
                                       taints=pool.taints + (Taint(marker, name, "NoSchedule"),))
        marked.append(pool)
    return tuple(marked)


# What a fallback's first rung is called in its notes, by capacity (FIRST_RUNGS).
_RUNG_WORDS = {"spot": "spot", "block": "capacity-block", "flex": "flex-start"}


def rung_word(capacities: Sequence[str]) -> str:
    """The first rung's name in a note: "spot", "capacity-block", "flex-start", or several joined by "/"."""
    words = sorted({_RUNG_WORDS[c] for c in capacities}) or ["spot"]
    return "/".join(words)


def notes(pools: Sequence[Pool], provisioner: Provisioner) -> tuple[list[str], list[str]]:
    """(notes, warnings) on the target's fallback groups: what makes each fallback wait for the first rung
    (spot, a capacity block, flex-start) here."""
    mechanism = provisioner.fallback_mechanism
    cloud_names = {p.name: p.cloud_name for p in pools}
    capacity_of = {p.name: p.capacity for p in pools}
    found: list[str] = []
    warnings: list[str] = []
    for group in fallback_groups(pools):
        rung = rung_word([capacity_of[n] for n in group.spot])
        spot, fallback = (", ".join(cloud_names[n] for n in names) for names in (group.spot, group.fallback))
        which = f"Fallback pool(s) {fallback} back {rung} pool(s) {spot or '(none)'}"
        if mechanism is None:
            warnings.append(f"{which}, but nothing known on {provisioner.cloud.display_name} makes the autoscaler grow the {rung} "
                            f"pools first: the fallback may start as often as the {rung} pools, and its cost is not in the "
                            "estimate.")
            continue
        # The class the pods select: the group's own under COMPUTE_CLASS; under CLASS_PRIORITIES the class whose
        # priorities the pools are, named after its first pool (`pool_classes`), not after the group.
        cls = group.name
        if mechanism.kind == CLASS_PRIORITIES and group.spot:
            cls = next(c for c, names in pool_classes(pools) if group.spot[0] in names)
        if mechanism.kind == COMPUTE_CLASS:
            how = (f"they form the ComputeClass {group.name} ({rung} pools first, the fallback when they cannot "
                   f"grow), and gpustack labels and taints them {mechanism.pool_marker}={group.name}")
        elif mechanism.kind == CLASS_PRIORITIES:
            how = (f"they are the priorities of the ComputeClass {cls}, {rung} first: a fallback node is created "
                   f"only when no {rung} node can be")
        elif mechanism.kind == NODEPOOL_WEIGHT:
            how = (f"Karpenter tries the {rung} pools' NodePools first: they carry a higher spec.weight than the "
                   "fallback's")
        elif mechanism.node_group is not None:
            how = (f"the Cluster Autoscaler's priority expander grows the {rung} pools first: gpustack writes "
                   f"{mechanism.namespace}/cluster-autoscaler-priority-expander, which ranks their node groups "
                   "above the fallback's")
        else:
            how = (f"the Cluster Autoscaler's priority expander grows the {rung} pools first, ranked in "
                   f"{mechanism.namespace}/cluster-autoscaler-priority-expander; its regexes name node groups by "
                   "ids that exist only once the pools do, so `gpustack render` cannot write it")
        action = mechanism.user_action.replace("<class>", cls)
        # Only spot nodes carry the spot taint (pools.py); a block or flex-start rung needs no toleration.
        tolerate = "tolerate the spot taint and " if "spot" in {capacity_of[n] for n in group.spot} else ""
        found.append(f"{which}: the fallback runs only when {rung} capacity is short because {how}. You must {action}. "
                     f"The pods must {tolerate}not pin a single pool (docs/fallback.md, "
                     f"\"Spot first, on-demand fallback\"; {mechanism.source}).")
    return found, warnings
