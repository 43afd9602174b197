"""Guardrail readers of EKS resources: managed node groups, Karpenter NodePools (`gpustack.guardrails.karpenter`),
and Auto Scaling scheduled actions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpustack.clouds._enums import TAINT_EFFECTS
from gpustack.clouds import CLOUDS
from gpustack.clouds.aws import facts, karpenter
from gpustack.guardrails.reading import (
    CRONJOB_SCHEDULE,
    Fields,
    PoolType,
    Reader,
    int_or_none,
    labels_of,
    taint_objects,
)
from gpustack.guardrails.karpenter import karpenter_provisioner, node_pool_type
from gpustack.guardrails.schedules import ScheduleRef
from gpustack.guardrails.view import ON_DEMAND, RESERVED, SPOT

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SCHEDULE = "aws:autoscaling/schedule:Schedule"
# The compile seam's mapping, read backwards: the cloud's spelling -> the plan's (Kubernetes) one.
_EFFECTS = {spelled: effect for effect in TAINT_EFFECTS.values if (spelled := facts.taint_effect(effect))}
_CAPACITIES = {"SPOT": SPOT, "CAPACITY_BLOCK": RESERVED}


def read_node_group(r: Reader) -> Fields:
    types = r.get("instanceTypes", "instance_type") or ()
    capacity = r.get("capacityType", "capacities")
    asgs = [g.get("name") for res in (r.get("resources", "asg_names") or ()) if isinstance(res, Mapping)
            for g in res.get("autoscalingGroups") or () if isinstance(g, Mapping)]
    return Fields(
        instance_type=types[0] if types else None,
        capacities=frozenset() if "capacities" in r.unknown else
        frozenset({_CAPACITIES.get(capacity or "ON_DEMAND", ON_DEMAND)}),
        labels=labels_of(r.get("labels", "labels")),
        taints=None if "taints" in r.unknown else taint_objects(r.get("taints", "taints"), _EFFECTS),
        min_nodes=int_or_none(r.get("scalingConfig.minSize", "min_nodes")),
        max_nodes=int_or_none(r.get("scalingConfig.maxSize", "max_nodes")),
        cloud_name=r.get("nodeGroupName", "cloud_name") or r.get("nodeGroupNamePrefix", "cloud_name"),
        region=r.get("region", "region"),
        scaled_names=tuple(a for a in asgs if isinstance(a, str)),  # the Auto Scaling groups behind it
    )


def read_schedule(props: Mapping[str, Any], urn: str, dependencies: Iterable[str]) -> ScheduleRef:
    """A scheduled action names the node group's Auto Scaling group (or, in a preview, depends on it)."""
    asg = props.get("autoscalingGroupName")
    return ScheduleRef(urn, scales=asg if isinstance(asg, str) else None, depends_on=frozenset(dependencies))


POOL_TYPES = (
    PoolType(NODE_GROUP, facts.EKS.name, read_node_group,
             {"instance_type": "instanceTypes", "gpu": "instanceTypes", "gpus_per_node": "instanceTypes",
              "capacity": "capacityType", "labels": "labels", "taints": "taints", "sharing": "labels",
              "min_nodes": "scalingConfig.minSize", "max_nodes": "scalingConfig.maxSize", "cloud_name": "nodeGroupName",
              "cluster": "clusterName", "settings.subnet_ids": "subnetIds", "settings.node_role_arn": "nodeRoleArn"},
             {SPOT: "capacityType: SPOT", ON_DEMAND: "capacityType: ON_DEMAND", RESERVED: "a capacity reservation"},
             "taints: [{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}]",
             f"{SCHEDULE} resources on the node group's Auto Scaling group, or {CRONJOB_SCHEDULE}"),
    node_pool_type(karpenter_provisioner(CLOUDS.get(facts.EKS.name), karpenter.Karpenter.name),
                   "a requirement karpenter.sh/capacity-type In [reserved] and the EC2NodeClass's "
                   "capacityReservationSelectorTerms",
                   {"settings.subnet_ids": "the EC2NodeClass's spec.subnetSelectorTerms"}),
)
SCHEDULE_TYPES = {SCHEDULE: read_schedule}
AUTOSCALER_TYPES: dict[str, Any] = {}
