"""One target's node pools as the simulator sees them: the declared node-pool resources of each pool (a
spread floor declares one EKS node group per subnet), the template at zero of each instance type a node
group may launch, a running node, and its upgrade settings."""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cloudsim import devices, templates, upgrades
from cloudsim.kube import Node, Pod, Taint, quantity
from gpustack.catalog import InstanceType, load_catalog

# A running node's allocatable CPU and memory: what the cloud's node image reserves (the cloud's
# kubelet_reservation, data with its source) less the GPU daemons' allowance (gpustack/plan/nodes.py);
# templates at zero use the instance's capacity instead (aws_manager.go: "TODO: use proper allocatable!!").
from gpustack.clouds import CLOUDS
from gpustack.plan.nodes import allocatable as allocatable_cpu_memory

NODE_POOL_TYPES = {"aws": "aws:eks/nodeGroup:NodeGroup", "azure": "azure-native:containerservice:AgentPool",
                   "gcp": "gcp:container/nodePool:NodePool", "oci": "oci:ContainerEngine/nodePool:NodePool"}
GPU_LABELS = {"aws": templates.AWS_GPU_LABEL, "azure": templates.AZURE_GPU_LABEL, "gcp": templates.GCE_GPU_LABEL,
              "oci": None}  # oci_cloud_provider.go: GPULabel() returns ""
_NAME_FIELD = {"aws": "nodeGroupName", "azure": "agentPoolName", "gcp": "name", "oci": "name"}
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def plain(resource: Any) -> dict[str, Any]:
    """A declared resource (gpustack.testing.Declared or a golden entry) as {type, name, inputs}."""
    if isinstance(resource, Mapping):
        return {"type": resource["type"], "name": resource["name"], "inputs": resource.get("inputs") or {},
                "parent": str(resource.get("parent", "")).rsplit("::", 1)[-1],
                "ignore_changes": tuple(resource.get("ignore_changes") or ())}
    return {"type": resource.type, "name": resource.name, "inputs": resource.inputs,
            "parent": resource.parent.rsplit("::", 1)[-1], "ignore_changes": tuple(resource.ignore_changes)}


@dataclasses.dataclass(frozen=True)
class SimPool:
    cloud: str
    pool: str  # the plan pool it belongs to (its component's name)
    name: str  # the node pool's name on the cloud
    resource: Mapping[str, Any]
    row: InstanceType  # the first instance type of the node group
    template: Node  # the template at zero of `row`
    node: Node  # a ready node of the pool
    min_nodes: int
    max_nodes: int
    # Every instance type the node group may launch (`row` first) and the template at zero of each. The
    # AWS autoscaler models a mixed group by the first of its Auto Scaling group's instance-type overrides
    # (cloudprovider/aws/aws_manager.go, buildInstanceType: "always use first instance"); the simulator
    # does not assume which type EKS lists first, so a pod of the pool must fit the template of each.
    # A node's allocatable comes from the type that launched (the tags above do not change it), so each
    # type has its ready node too: a scale-up helps only if that node holds the pod.
    rows: tuple[InstanceType, ...] = ()
    templates: tuple[Node, ...] = ()
    nodes: tuple[Node, ...] = ()


def _instances(cloud: str, inputs: Mapping[str, Any]) -> tuple[str, ...]:
    if cloud == "aws":
        return tuple(inputs["instanceTypes"])
    if cloud == "azure":
        return (inputs["vmSize"],)
    if cloud == "gcp":
        return (inputs["nodeConfig"]["machineType"],)
    return (inputs["nodeShape"],)


def _bounds(cloud: str, inputs: Mapping[str, Any]) -> tuple[int, int]:
    if cloud == "aws":
        return int(inputs["scalingConfig"]["minSize"]), int(inputs["scalingConfig"]["maxSize"])
    if cloud == "azure":
        return int(inputs["minCount"]), int(inputs["maxCount"])
    if cloud == "gcp":
        return int(inputs["autoscaling"]["totalMinNodeCount"]), int(inputs["autoscaling"]["totalMaxNodeCount"])
    return int(inputs["nodeConfigDetails"]["size"]), -1  # OKE: bounds live in the autoscaler add-on


def _node_taints(cloud: str, inputs: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The taints a running node registers with (what the kubelet or the cloud puts on it)."""
    if cloud == "aws":
        return tuple(Taint(t["key"], t.get("value", ""), _EFFECTS[t["effect"]]) for t in inputs.get("taints") or ())
    if cloud == "gcp":
        return tuple(Taint(t["key"], t["value"], _EFFECTS[t["effect"]]) for t in inputs["nodeConfig"].get("taints") or ())
    if cloud == "azure":
        out = []
        for text in inputs.get("nodeTaints") or ():
            head, effect = text.rsplit(":", 1)
            key, _, value = head.partition("=")
            out.append(Taint(key, value, effect))
        return tuple(out)
    metadata = inputs.get("nodeMetadata") or {}
    script = metadata.get("user_data (decoded)") or base64.b64decode(metadata.get("user_data", "")).decode()
    match = re.search(r"--register-with-taints=([^\s\"]*)", script)
    return tuple(templates._parse_taints(match.group(1))) if match else ()


def _oke_bounds(resources: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """min:max per node pool id from the Cluster Autoscaler add-on's `nodes` argument."""
    out = {}
    for r in resources:
        if r["type"] == "oci:ContainerEngine/addon:Addon":
            for config in r["inputs"].get("configurations") or ():
                if config["key"] == "nodes":
                    for item in str(config["value"]).split(","):
                        low, high, pool_id = item.split(":", 2)
                        out[pool_id] = (int(low), int(high))
    return out


def _template(cloud: str, resource: Mapping[str, Any], cluster: str, row: InstanceType) -> Node:
    if cloud == "aws":
        return templates.eks_template(resource, cluster, row)
    if cloud == "azure":
        return templates.aks_template(resource, row)
    if cloud == "gcp":
        return templates.gke_template(resource, row)
    return templates.oke_template(resource, row)


def pools(cloud: str, region: str, cluster: str, resources: Sequence[Any], objects: Sequence[Mapping[str, Any]] = (),
          operator_values: Mapping[str, Any] | None = None) -> dict[str, SimPool]:
    """The first declared node pool of each plan pool (component) of the target, by its name."""
    return {name: groups[0] for name, groups in
            node_groups(cloud, region, cluster, resources, objects, operator_values).items()}


def node_groups(cloud: str, region: str, cluster: str, resources: Sequence[Any],
                objects: Sequence[Mapping[str, Any]] = (),
                operator_values: Mapping[str, Any] | None = None) -> dict[str, tuple[SimPool, ...]]:
    """Every declared node pool of the target, by the plan pool (component) it belongs to, in the order
    declared (a spread floor's node group per subnet)."""
    declared = [plain(r) for r in resources]
    oke_bounds = _oke_bounds(declared)
    found: dict[str, tuple[SimPool, ...]] = {}
    for resource in declared:
        if resource["type"] != NODE_POOL_TYPES[cloud]:
            continue
        inputs = resource["inputs"]
        rows = tuple(load_catalog().instance(cloud, region, name) for name in _instances(cloud, inputs))
        assert all(rows), _instances(cloud, inputs)
        kinds = tuple(r for r in rows if r is not None)
        row = kinds[0]
        each = tuple(templates.with_daemonsets(_template(cloud, resource, cluster, r)) for r in kinds)
        template = each[0]
        ready = tuple(_ready_node(cloud, resource, r, objects, operator_values) for r in kinds)
        node = ready[0]
        low, high = _bounds(cloud, inputs)
        if cloud == "oci":
            low, high = oke_bounds.get(f"{resource['name']}-id", (low, low))
        group = SimPool(cloud, resource["parent"], inputs[_NAME_FIELD[cloud]], resource, row, template, node, low,
                        high, kinds, each, ready)
        found[resource["parent"]] = (*found.get(resource["parent"], ()), group)
    return found


def _ready_node(cloud: str, resource: Mapping[str, Any], row: InstanceType, objects: Sequence[Mapping[str, Any]],
                operator_values: Mapping[str, Any] | None) -> Node:
    """A ready node of `row` in the node pool: what its kubelet and device plugin advertise."""
    offered = devices.advertised(cloud, resource, row, objects, operator_values)
    cpu, memory_gib = allocatable_cpu_memory(row.vcpus, row.memory_gib, CLOUDS.get(cloud).kubelet_reservation,
                                             row.name)
    allocatable = {"pods": 110.0, "cpu": cpu, "memory": memory_gib * templates.GIB,
                   **{k: float(v) for k, v in offered.items()}}
    if "nvidia.com/gpu" not in offered:
        allocatable.pop("nvidia.com/gpu", None)
    return Node(allocatable, devices.node_labels(cloud, resource), _node_taints(cloud, resource["inputs"]))


def pod(requests: Mapping[str, str], node_selector: Mapping[str, str],
        tolerations: Sequence[Mapping[str, str]]) -> Pod:
    return Pod({k: quantity(v) for k, v in requests.items()}, dict(node_selector), tuple(dict(t) for t in tolerations))


def upgrade_settings(pool: SimPool) -> upgrades.UpgradeSettings:
    return upgrades.SETTINGS[pool.cloud](pool.resource)


_RESERVATIONS = {
    "aws:ec2/capacityReservation:CapacityReservation": lambda i: i["instanceCount"],
    "azure-native:compute:CapacityReservation": lambda i: i["sku"]["capacity"],
    "gcp:compute/reservation:Reservation": lambda i: i["specificReservation"]["count"],
    "oci:Core/computeCapacityReservation:ComputeCapacityReservation":
        lambda i: sum(int(c["reservedCount"]) for c in i["instanceReservationConfigs"]),
}


def reserved_nodes(resources: Sequence[Any]) -> dict[str, int]:
    """Instances each pool's capacity reservation holds, by plan pool, from the declared reservations."""
    out: dict[str, int] = {}
    for resource in map(plain, resources):
        count = _RESERVATIONS.get(resource["type"])
        if count:
            out[resource["parent"]] = out.get(resource["parent"], 0) + int(count(resource["inputs"]))
    return out
