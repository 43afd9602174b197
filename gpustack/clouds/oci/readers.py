"""Guardrail readers of OKE resources: node pools, the Cluster Autoscaler add-on that bounds them, and
the NodePools of Oracle's Karpenter provider."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.clouds.oci import facts, karpenter
from gpustack.guardrails.karpenter import karpenter_provisioner, node_pool_type
from gpustack.guardrails.reading import CRONJOB_SCHEDULE, Fields, PoolType, Reader, int_or_none, taint_strings
from gpustack.guardrails.view import ON_DEMAND, RESERVED, SPOT, UNKNOWN, Taint

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
# OKE's Cluster Autoscaler add-on bounds node pools with `nodes: <min>:<max>:<node pool OCID>,...`
# (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengconfiguringclusteraddons-configurationarguments.htm).
ADDON = "oci:ContainerEngine/addon:Addon"
_REGISTER_TAINTS = re.compile(r"--register-with-taints[= ]([^\s\"']+)")


def without_comments(script: str) -> str:
    """The script without its shell comments: a `#` that starts a word outside quotes runs to the end
    of the line (POSIX sh, "Token Recognition"), so a taint written there never reaches the kubelet."""
    kept = []
    for line in script.splitlines():
        quote = ""
        end = len(line)
        for i, char in enumerate(line):
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char == "#" and (i == 0 or line[i - 1] in " \t;&|("):
                end = i
                break
        kept.append(line[:end])
    return "\n".join(kept)


def _cloud_init_taints(user_data: Any) -> tuple[Taint, ...]:
    """Taints a cloud-init script passes to the kubelet (OKE node pools have no taint field)."""
    if not isinstance(user_data, str):
        return ()
    try:
        script = base64.b64decode(user_data, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        script = user_data  # not base64: read it as the script itself
    script = without_comments(script)
    return tuple(t for match in _REGISTER_TAINTS.finditer(script) for t in taint_strings(match.group(1).split(",")))


def read_node_pool(r: Reader) -> Fields:
    placements = [p for p in r.get("nodeConfigDetails.placementConfigs", "capacities") or () if isinstance(p, Mapping)]
    capacities = {SPOT if p.get("preemptibleNodeConfig") else RESERVED if p.get("capacityReservationId") else ON_DEMAND
                  for p in placements} or {ON_DEMAND}
    labels = r.get("initialNodeLabels", "labels")
    shape = r.get("nodeShape", "instance_type")
    size = int_or_none(r.get("nodeConfigDetails.size", "max_nodes"))
    return Fields(
        instance_type=shape,
        capacities=frozenset() if "capacities" in r.unknown else frozenset(capacities),
        labels=None if "labels" in r.unknown else
        {str(x.get("key")): str(x.get("value")) for x in labels or () if isinstance(x, Mapping)},
        taints=None if "taints" in r.unknown else _cloud_init_taints(r.get("nodeMetadata.user_data", "taints")),
        # The pool holds no autoscaling bounds: its size is what it runs, unless the cluster autoscaler
        # add-on of the same stack bounds it (`read_addon_bounds`).
        min_nodes=size, max_nodes=size,
        cloud_name=r.get("name", "cloud_name"),
        gpu_marker=".GPU" in (shape or ""),
        resource_id=r.get("id", "resource_id"),
    )


def read_addon_bounds(props: Mapping[str, Any]) -> dict[str, tuple[int, int]] | None:
    """Node-pool id -> (min, max) from the add-on; None when it sets none, {} when unknown."""
    if props.get("addonName") != facts.AUTOSCALER_ADDON:
        return None
    out: dict[str, tuple[int, int]] = {}
    configurations = props.get("configurations")
    if configurations is UNKNOWN:
        return {}
    for item in configurations or ():
        if not isinstance(item, Mapping) or item.get("key") != "nodes":
            continue
        if not isinstance(item.get("value"), str):
            return {}  # not known yet (preview): the pools it bounds stay unknown
        for entry in item["value"].split(","):
            low, high, pool_id = (entry.strip().split(":", 2) + ["", ""])[:3]
            if low.isdigit() and high.isdigit() and pool_id:
                out[pool_id] = (int(low), int(high))
    return out


POOL_TYPES = (
    PoolType(NODE_POOL, facts.OKE.name, read_node_pool,
             {"instance_type": "nodeShape", "gpu": "nodeShape", "gpus_per_node": "nodeShape",
              "capacity": "nodeConfigDetails.placementConfigs", "labels": "initialNodeLabels",
              "taints": "nodeMetadata.user_data", "sharing": "initialNodeLabels",
              "min_nodes": "nodeConfigDetails.size", "max_nodes": "nodeConfigDetails.size", "cloud_name": "name",
              "cluster": "clusterId", "settings.compartment_id": "compartmentId"},
             {SPOT: "preemptibleNodeConfig in every placement config",
              ON_DEMAND: "placement configs without preemptibleNodeConfig",
              RESERVED: "capacityReservationId in the placement configs"},
             "a cloud-init script in nodeMetadata.user_data that runs the OKE init script with --kubelet-extra-args "
             '"--register-with-taints=nvidia.com/gpu=present:NoSchedule"', CRONJOB_SCHEDULE, bounded_by=ADDON),
    node_pool_type(karpenter_provisioner(CLOUDS.get(facts.OKE.name), karpenter.OKEKarpenter.name),
                   "a requirement karpenter.sh/capacity-type In [reserved] and the OCINodeClass's "
                   "capacityReservationConfigs",
                   {"settings.image_id": "the OCINodeClass's spec.volumeConfig.bootVolumeConfig.imageConfig",
                    "settings.subnet_id": "the OCINodeClass's spec.networkConfig.primaryVnicConfig.subnetConfig",
                    "settings.compartment_id": "the OCINodeClass's spec.nodeCompartmentId"}),
)
SCHEDULE_TYPES: dict[str, Any] = {}
AUTOSCALER_TYPES = {ADDON: read_addon_bounds}
