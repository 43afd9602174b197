"""Packing under a workload's `availability`: its replicas spread over zones, few of them per node.

The scheduler holds the pods to it with topology spread constraints (`render --workloads`): replicas
are balanced over `zones` zones (maxSkew 1 on topology.kubernetes.io/zone) and at most
`max_replicas_per_node` share a node (kubernetes.io/hostname). So each zone needs nodes for its part
of the replicas, each node carrying at most what fits and what the limit allows; the pool's nodes are
the sum over zones. The pool holds that one workload alone (its key carries the spread), so the
replicas are identical and the count is exact given the one-node packing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from gpustack.plan.model import TopologySpread
from gpustack.plan.packing import Packing
from gpustack.spec.model import Availability

AVAILABILITY_BOUND = "availability"
ZONE_KEY = "topology.kubernetes.io/zone"
HOST_KEY = "kubernetes.io/hostname"


def zone_shares(replicas: int, zones: int) -> list[int]:
    """Replicas per zone, as balanced as maxSkew 1 keeps them (the first zones take the remainder)."""
    base, extra = divmod(replicas, zones)
    return [base + (1 if i < extra else 0) for i in range(zones)]


def spread_packing(replicas: int, availability: Availability, pack: Callable[[int], Packing]) -> Packing:
    """The packing of `replicas` identical replicas under `availability`; `pack(n)` packs n of them
    with no spread (the usual packer), used for one node's worth."""
    plain = pack(replicas)
    if replicas == 0:
        return plain
    shares = [s for s in zone_shares(replicas, availability.zones) if s]
    fit = min(availability.max_replicas_per_node or max(shares), max(shares))
    while fit > 1 and pack(fit).nodes > 1:  # what one node holds (CPU, memory, GPUs), under the limit
        fit -= 1
    nodes = gpus = 0
    layouts = pack(fit).mig_layouts
    for share in shares:
        full, rest = divmod(share, fit)
        nodes += full + (1 if rest else 0)
        gpus += full * pack(fit).gpus_required + (pack(rest).gpus_required if rest else 0)
    if nodes <= plain.nodes:
        return plain  # packing alone already spreads them this far
    hours = plain.node_hours / plain.nodes if plain.nodes else 0.0
    bounds = tuple(sorted((*plain.bounds, (AVAILABILITY_BOUND, gpus))))
    method = f"{plain.method or 'packing'}, spread by availability"
    return dataclasses.replace(plain, nodes=nodes, gpus_required=gpus, lower_bound=max(plain.lower_bound, gpus),
                               node_hours=hours * nodes, mig_layouts=layouts or plain.mig_layouts,
                               nodes_lower_bound=nodes, bounds=bounds, method=method,
                               proved_optimal=pack(fit).proved_optimal)


def cost_note(availability: Availability, nodes: int, plain_nodes: int, usd_per_node_hour: float,
              hours_per_node: float) -> str:
    """What the spread costs in the pool, for its notes."""
    limit = (f", at most {availability.max_replicas_per_node} replica(s) per node"
             if availability.max_replicas_per_node else "")
    extra = (nodes - plain_nodes) * usd_per_node_hour * hours_per_node
    return (f"Availability ({availability.zones} zone(s){limit}): {nodes} node(s) where packing alone needs "
            f"{plain_nodes}, {extra:,.2f} USD a month more.")


def topology_spread(availability: Availability, most_nodes: int) -> tuple[TopologySpread, ...]:
    """The constraints that hold the scheduler (and the autoscaler, which simulates it) to the plan.

    Zones: maxSkew 1 with minDomains = the zones asked, so while fewer zones hold nodes of the pools the
    emptiest counts as 0 and a zone takes at most one replica more: the next replica waits for a node in
    another zone, which the autoscaler then starts. Nodes: maxSkew = the limit per node with minDomains
    above every node the pools can have, so the emptiest always counts as 0 and no node takes more than the
    limit ("minDomains", https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/
    #spread-constraint-definition)."""
    out = []
    if availability.zones > 1:
        out.append(TopologySpread(ZONE_KEY, 1, availability.zones))
    if availability.max_replicas_per_node:
        out.append(TopologySpread(HOST_KEY, availability.max_replicas_per_node, most_nodes + 1))
    return tuple(out)
