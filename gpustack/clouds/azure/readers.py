"""Guardrail readers of AKS resources: agent pools, and node auto-provisioning's NodePools
(`gpustack.guardrails.karpenter`)."""

from __future__ import annotations

from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.clouds.azure import facts, nap
from gpustack.guardrails.karpenter import karpenter_provisioner, node_pool_type
from gpustack.guardrails.reading import (
    CRONJOB_SCHEDULE,
    Fields,
    PoolType,
    Reader,
    int_or_none,
    labels_of,
    taint_strings,
)
from gpustack.guardrails.view import ON_DEMAND, RESERVED, SPOT

AGENT_POOL = "azure-native:containerservice:AgentPool"
DEFAULT_COUNT = 1  # an agent pool without autoscaling or a count runs one node (AGENT_POOL_API)


def read_agent_pool(r: Reader) -> Fields:
    priority = r.get("scaleSetPriority", "capacities")
    reserved = r.get("capacityReservationGroupID", "capacities")
    if r.get("enableAutoScaling", "min_nodes"):
        low, high = r.get("minCount", "min_nodes"), r.get("maxCount", "max_nodes")
    else:
        count = r.get("count", "max_nodes")
        low = high = DEFAULT_COUNT if count is None and "max_nodes" not in r.unknown else count
    taints = r.get("nodeTaints", "taints")
    return Fields(
        instance_type=r.get("vmSize", "instance_type"),
        capacities=frozenset() if "capacities" in r.unknown else
        frozenset({SPOT if str(priority).lower() == facts.SPOT_PRIORITY.lower() else RESERVED if reserved
                   else ON_DEMAND}),
        labels=labels_of(r.get("nodeLabels", "labels")),
        taints=None if "taints" in r.unknown else taint_strings(taints or ()),
        min_nodes=int_or_none(low), max_nodes=int_or_none(high),
        cloud_name=r.get("agentPoolName", "cloud_name"),
        gpu_marker=bool(r.get("gpuInstanceProfile", "gpus")),
    )


POOL_TYPES = (
    PoolType(AGENT_POOL, facts.AKS.name, read_agent_pool,
             {"instance_type": "vmSize", "gpu": "vmSize", "gpus_per_node": "vmSize", "capacity": "scaleSetPriority",
              "labels": "nodeLabels", "taints": "nodeTaints", "sharing": "gpuInstanceProfile",
              "sharing.mig": "gpuInstanceProfile", "min_nodes": "minCount", "max_nodes": "maxCount",
              "cloud_name": "agentPoolName", "cluster": "resourceName", "settings.resource_group": "resourceGroupName"},
             {SPOT: "scaleSetPriority: Spot", ON_DEMAND: "scaleSetPriority: Regular",
              RESERVED: "capacityReservationGroupID"},
             'nodeTaints: ["nvidia.com/gpu=present:NoSchedule"]', CRONJOB_SCHEDULE),
    # NAP's NodePools: no reserved capacity (nap.RESERVATION_GAP).
    node_pool_type(karpenter_provisioner(CLOUDS.get(facts.AKS.name), nap.NodeAutoProvisioning.name),
                   "nothing: NAP launches on-demand and spot only"),
)
SCHEDULE_TYPES: dict[str, Any] = {}
AUTOSCALER_TYPES: dict[str, Any] = {}
