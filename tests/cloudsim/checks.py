"""The checks the simulator makes of one target: each takes a view of the plan (today's, or the first
version's as recorded), the simulated node pools and the declared resources, and returns what is wrong."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from cloudsim import cluster, upgrades
from cloudsim.kube import Pod, counted_as_unready_gpu, estimate_scale_up, why_not
from gpustack.plan.model import Plan, TargetPlan
from gpustack.render import in_cluster


@dataclasses.dataclass(frozen=True)
class PoolView:
    """What the checks need of a planned pool (today's plan, or the first version's recorded one)."""

    name: str
    kind: str
    role: str
    min_nodes: int
    max_nodes: int
    reserved_nodes: int
    replicas: Mapping[str, int]  # per workload, the replicas the pool carries
    offers: Mapping[str, int] | None = None  # what the plan says one node offers (None: it did not say)


@dataclasses.dataclass(frozen=True)
class TargetView:
    name: str
    cloud: str
    pools: tuple[PoolView, ...]
    pods: Mapping[str, tuple[Pod, tuple[str, ...]]]  # workload -> its pod, the pools that carry it
    gaps: frozenset[str] = frozenset()  # pools the plan warns the autoscaler cannot be shown at zero


def view(target: TargetPlan) -> TargetView:
    """Today's plan: pools with what a node offers, pods as `pod_requests` prescribes them."""
    pools = tuple(PoolView(p.name, p.kind, p.role, p.min_nodes, p.max_nodes, p.reserved_nodes,
                           {pl.workload: pl.replicas for pl in p.placements if pl.replicas}, dict(p.node_offers))
                  for p in target.pools)
    pods = {}
    for request in target.pod_requests:
        tolerations = [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in request.tolerations]
        pods[request.workload] = (cluster.pod(dict(request.resources), dict(request.node_selector), tolerations),
                                  request.pools)
    gaps = frozenset(w.pool for w in target.warnings if w.code == "template-gap" and w.pool)
    return TargetView(target.name, target.cloud, pools, pods, gaps)


def simulated(plan: Plan, target: TargetPlan, resources: Sequence[Any]) -> dict[str, cluster.SimPool]:
    """The simulator's view of what the program declares and `gpustack render` writes for `target`."""
    rendered = in_cluster(plan, target)
    values = rendered.operator.values if rendered.operator else None
    return cluster.pools(target.cloud, target.region, target.cluster, resources, rendered.objects, values)


def _extended(node) -> dict[str, int]:
    return {k: int(v) for k, v in node.allocatable.items() if "/" in k}


def template_mismatches(target: TargetView, sims: Mapping[str, cluster.SimPool]) -> list[str]:
    """Pools whose nodes advertise other extended resources than the plan says, or that can be at zero
    and whose template then offers other ones than a node (except where the plan warns that the cloud
    cannot be told: a capability gap). A group with a ready node is templated from that node
    (processors/nodeinfosprovider/mixed_nodeinfos_processor.go, Process), so only pools at zero count."""
    wrong = []
    for pool in target.pools:
        sim = sims[pool.name]
        if pool.offers is not None and _extended(sim.node) != pool.offers:
            wrong.append(f"{pool.name}: a node advertises {_extended(sim.node)}, the plan says {dict(pool.offers)}")
        if pool.min_nodes == 0 and pool.name not in target.gaps and _extended(sim.template) != _extended(sim.node):
            wrong.append(f"{pool.name}: the template at zero offers {_extended(sim.template)}, a node "
                         f"{_extended(sim.node)}")
    return wrong


def misfits(target: TargetView, sims: Mapping[str, cluster.SimPool]) -> list[str]:
    """Pods that do not fit a node, or the template at zero, of a pool that carries them, or that fit the
    template of a pool of another kind."""
    kind = {p.name: p.kind for p in target.pools}
    wrong = []
    for workload, (pod, mine) in target.pods.items():
        for pool in target.pools:
            sim = sims[pool.name]
            if pool.name in mine:
                for what, node in (("template", sim.template), ("node", sim.node)):
                    if what == "template" and (pool.name in target.gaps or pool.min_nodes):
                        continue
                    reason = why_not(pod, node)
                    if reason:
                        wrong.append(f"{workload} does not fit the {what} of its pool {pool.name}: {reason}")
            elif pool.kind != kind[mine[0]] and why_not(pod, sim.template) is None:
                wrong.append(f"{workload} ({kind[mine[0]]}) fits the template of {pool.name} ({pool.kind})")
    return wrong


def scale_up_errors(target: TargetView, sims: Mapping[str, cluster.SimPool]) -> list[str]:
    """At the peak, with the floors' nodes up and every other pool at zero: the nodes one scale-up starts
    in each pool (the pods the floors cannot hold, spot pools before their fallbacks) against the plan."""
    wrong = []
    merged: list[set[str]] = []
    for _, mine in target.pods.values():
        linked = [m for m in merged if m & set(mine)]
        merged = [m for m in merged if m not in linked] + [set(mine).union(*linked)]
    by_name = {p.name: p for p in target.pools}
    for family in merged:
        members = sorted((by_name[n] for n in family), key=lambda p: (p.role == "fallback", p.name))
        if any(p.name in target.gaps for p in members):
            continue
        pending: list[Pod] = []
        for pool in members:  # a fallback pool backs its spot pool's replicas; it carries none of its own
            for workload, count in pool.replicas.items() if pool.role != "fallback" else ():
                pending += [target.pods[workload][0]] * count
        # The floors' nodes exist: the scheduler fills them first.
        running = [(sims[p.name].node, {}) for p in members for _ in range(p.min_nodes)]
        left = []
        for pod in sorted(pending, key=lambda p: -p.requests.get("cpu", 0)):
            home = next((used for node, used in running if why_not(pod, node, used) is None), None)
            if home is None:
                left.append(pod)
                continue
            for name, amount in pod.requests.items():
                home[name] = home.get(name, 0.0) + amount
        for pool in members:
            room = pool.max_nodes - pool.min_nodes
            fitting = [p for p in left if why_not(p, sims[pool.name].template) is None]
            started, unhelped = estimate_scale_up(fitting, sims[pool.name].template, room) if room else (0, fitting)
            expected = 0 if pool.role == "fallback" else room
            if started != expected:
                wrong.append(f"{pool.name}: one scale-up from {pool.min_nodes} starts {started} node(s), the plan "
                             f"says {expected}")
            helped = {id(p) for p in fitting} - {id(p) for p in unhelped}
            left = [p for p in left if id(p) not in helped]
        if left:
            wrong.append(f"pools {sorted(family)}: {len(left)} pod(s) no scale-up can place")
    return wrong


def unready(target: TargetView, sims: Mapping[str, cluster.SimPool]) -> list[str]:
    gpu_label = cluster.GPU_LABELS[target.cloud]
    return [f"{name}: a ready node is counted as an unready GPU node (label {gpu_label}, allocatable "
            f"{dict(sim.node.allocatable)})" for name, sim in sims.items() if counted_as_unready_gpu(sim.node, gpu_label)]


def upgrade_failures(target: TargetView, sims: Mapping[str, cluster.SimPool], resources: Sequence[Any]) -> list[str]:
    reservations = cluster.reserved_nodes(resources)
    wrong = []
    for pool in target.pools:
        if not pool.reserved_nodes:
            continue
        outcome = upgrades.upgrade(cluster.upgrade_settings(sims[pool.name]), pool.reserved_nodes,
                                   reservations.get(pool.name, 0))
        if not outcome.completed:
            wrong.append(f"{pool.name}: the upgrade of {pool.reserved_nodes} reserved node(s) fails: {outcome.why}")
    return wrong


def simulated_groups(plan: Plan, target: TargetPlan, resources: Sequence[Any]) -> dict[str, tuple[cluster.SimPool, ...]]:
    """Every declared node group of `target` by its plan pool (a spread floor's one per subnet)."""
    rendered = in_cluster(plan, target)
    values = rendered.operator.values if rendered.operator else None
    return cluster.node_groups(target.cloud, target.region, target.cluster, resources, rendered.objects, values)
