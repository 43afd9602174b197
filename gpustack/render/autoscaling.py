"""Spot first, on-demand fallback: the objects that make the autoscaler grow a fallback group's spot
pools first and its fallback pools only when they cannot grow (the plan's `fallback_groups`), per the
provisioner's `fallback_mechanism`:

- priority expander: the Cluster Autoscaler's ConfigMap
  `cluster-autoscaler-priority-expander` (key `priorities`: priority -> regexes of node-group ids;
  the highest priority whose regex matches wins, ties at random). It must sit in the autoscaler's
  namespace (`FallbackMechanism.namespace`, per cloud); it is reloaded on change (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/expander/priority/readme.md).
  Regexes are searched, not matched whole (`FindStringIndex` in expander/priority/priority.go), so
  every one is anchored. A node group that no regex matches is dropped whenever a matching one could
  take the pod ("The group won't be used", priority.go), so `.*` at the lowest priority keeps the
  cluster's other node groups eligible, below gpustack's (the highest matching priority counts since
  kubernetes/autoscaler#3308).
- ComputeClass: one ComputeClass (`FallbackMechanism.api_version`) per group, its spot pools as the first
  priority and its fallback pools as the second; the planner labelled and tainted the pools with the
  class name.

Where the node-group ids exist only once the pools do (e.g. OCIDs), `gpustack render` writes
nothing; the Pulumi program passes the ids in (`node_group_ids`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import COMPUTE_CLASS, PRIORITY_EXPANDER, FallbackMechanism
from gpustack.plan.model import FallbackGroup, Plan, Pool, TargetPlan
from gpustack.render.common import metadata, object_labels

PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
SPOT_PRIORITY = 30
FALLBACK_PRIORITY = 20
OTHER_PRIORITY = 1  # every other node group of the cluster
OTHER_NODE_GROUPS = ".*"


def _mechanism(target: TargetPlan) -> FallbackMechanism | None:
    return CLOUDS.get(target.cloud).provisioner(target.provisioner).fallback_mechanism


def literal(text: str) -> str:
    """`text` as a regex matching itself, escaping only metacharacters (the same in Go's RE2 and Python)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def node_group_regex(mechanism: FallbackMechanism, cloud_name: str) -> str:
    """The anchored regex of the autoscaler's node-group id of the pool named `cloud_name`."""
    assert mechanism.node_group is not None
    return mechanism.node_group.replace("{pool}", literal(cloud_name))


def priorities_text(spot: list[str], fallback: list[str]) -> str:
    """The ConfigMap's `priorities` value: regexes per priority, highest first."""
    return priorities_table_text({SPOT_PRIORITY: sorted(spot), FALLBACK_PRIORITY: sorted(fallback),
                                  OTHER_PRIORITY: [OTHER_NODE_GROUPS]})


def priorities_table_text(table: Mapping[int, list[str]]) -> str:
    """A `priorities` value from priority -> regexes, highest priority first, each list as given."""
    ordered = {priority: list(table[priority]) for priority in sorted(table, reverse=True)}
    return yaml.safe_dump(ordered, sort_keys=False, default_flow_style=False, width=1000)


def priority_configmap(plan: Plan, target: TargetPlan,
                       node_group_ids: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The priority-expander ConfigMap of the target, or None when the cloud does not use one, the
    target has no fallback pool, or the node-group ids are not known here (and not given)."""
    mechanism = _mechanism(target)
    groups = target.fallback_groups
    if mechanism is None or mechanism.kind != PRIORITY_EXPANDER or not groups:
        return None
    regex: Callable[[Pool], str]
    if mechanism.node_group is not None:
        regex = lambda pool: node_group_regex(mechanism, pool.cloud_name)
    elif node_group_ids is not None:
        ids = node_group_ids
        regex = lambda pool: f"^{literal(ids[pool.name])}$"
    else:
        return None
    assert mechanism.namespace is not None  # the registry test checks every priority expander names one
    spot = [regex(target.pool(name)) for g in groups for name in g.spot]
    fallback = [regex(target.pool(name)) for g in groups for name in g.fallback]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(PRIORITY_CONFIGMAP, object_labels(plan, target), mechanism.namespace),
        "data": {"priorities": priorities_text(spot, fallback)},
    }


def priority_configmap_key(target: TargetPlan) -> str:
    """`<namespace>/<name>` of the target's priority-expander ConfigMap (its Pulumi name)."""
    mechanism = _mechanism(target)
    assert mechanism is not None and mechanism.namespace is not None
    return f"{mechanism.namespace}/{PRIORITY_CONFIGMAP}"


def needs_node_group_ids(target: TargetPlan) -> bool:
    """Whether the target's priority ConfigMap can be written only with the ids of created pools."""
    mechanism = _mechanism(target)
    return (mechanism is not None and mechanism.kind == PRIORITY_EXPANDER and mechanism.node_group is None
            and bool(target.fallback_groups))


def compute_class(plan: Plan, target: TargetPlan, group: FallbackGroup) -> dict[str, Any]:
    mechanism = _mechanism(target)
    assert mechanism is not None and mechanism.api_version is not None
    priorities = [{"nodepools": [target.pool(name).cloud_name for name in names]}
                  for names in (group.spot, group.fallback) if names]
    return {
        "apiVersion": mechanism.api_version,
        "kind": "ComputeClass",
        "metadata": metadata(group.name, object_labels(plan, target)),
        "spec": {
            "priorities": priorities,
            # Only the group's pools, never a node pool GKE would create for the class.
            "nodePoolAutoCreation": {"enabled": False},
            "whenUnsatisfiable": "DoNotScaleUp",
        },
    }


def objects(plan: Plan, target: TargetPlan) -> list[dict[str, Any]]:
    """What `gpustack render` and the Pulumi program write for the target's fallback groups."""
    mechanism = _mechanism(target)
    if mechanism is None:
        return []
    if mechanism.kind == COMPUTE_CLASS:
        return [compute_class(plan, target, g) for g in target.fallback_groups]
    configmap = priority_configmap(plan, target)
    return [configmap] if configmap is not None else []
