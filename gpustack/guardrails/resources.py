"""Pulumi resources as pool views: one small reader per resource type, keyed by its type token.

The readers see resource properties as the engine sends them to a policy (camelCase keys, numbers
as floats) and return the neutral fields of a `PoolView`. Everything specific to a resource type
(where a field lives, how to spell a fix) is data in `POOL_TYPES`; the rules never see a type token.
Any stack's node pools are read, not only gpustack's: a pool is a GPU pool when the catalog lists
its instance type, or when the resource itself says so (accelerators, a GPU shape, a MIG profile,
the nvidia.com/gpu taint or a gpustack.dev/kind label).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpustack.guardrails.instances import lookup
from gpustack.guardrails.view import (CHECKPOINTING_LABEL, GPU_TAINT_KEY, KIND_LABEL, ON_DEMAND, POOL_LABEL,
                                      RESERVED, SPOT, UNKNOWN, PoolView, Taint)

Props = Mapping[str, Any]


class _Reader:
    """Reads dotted paths from props; notes the neutral fields whose value is unknown (preview)."""

    def __init__(self, props: Props) -> None:
        self.props = props
        self.unknown: set[str] = set()

    def get(self, path: str, field: str) -> Any:
        value: Any = self.props
        for part in path.split("."):
            if value is UNKNOWN:
                break
            if isinstance(value, Sequence) and not isinstance(value, str) and part.isdigit():
                value = value[int(part)] if int(part) < len(value) else None
            elif isinstance(value, Mapping):
                value = value.get(part)
            else:
                return None
        if value is UNKNOWN or _has_unknown(value):
            self.unknown.add(field)
            return None
        return value


def _has_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(_has_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_unknown(v) for v in value)
    return False


@dataclasses.dataclass(frozen=True)
class Fields:
    """What a reader found in one resource."""

    instance_type: str | None
    capacities: frozenset[str]
    labels: Mapping[str, str] | None
    taints: tuple[Taint, ...] | None
    min_nodes: int | None
    max_nodes: int | None
    cloud_name: str | None
    region: str | None = None
    gpus_declared: int | None = None  # GPUs per node the resource states itself (GKE accelerators)
    gpu_marker: bool = False  # the resource says it is a GPU pool, whatever the catalog knows
    catalog_applies: bool = True  # False when the instance type has GPUs only if the resource attaches them
    asg_names: tuple[str, ...] = ()
    resource_id: str | None = None


@dataclasses.dataclass(frozen=True)
class PoolType:
    token: str
    cloud: str  # registry name, for catalog look-ups
    read: Callable[[_Reader], Fields]
    paths: Mapping[str, str]  # plan field -> where the resource sets it (fix messages, replacements)
    capacity_values: Mapping[str, str]  # capacity -> how to ask for it
    gpu_taint: str  # how to declare the nvidia.com/gpu taint
    schedule: str  # what counts as an auto-stop schedule for this type
    bounded_by: str | None = None  # the type of the autoscaler resource that may hold the pool's bounds


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def _taint_objects(items: Any) -> tuple[Taint, ...]:
    return tuple(Taint(str(t.get("key", "")), str(t.get("value") or ""), _EFFECTS.get(t.get("effect"), str(t.get("effect"))))
                 for t in items or () if isinstance(t, Mapping))


def _taint_strings(items: Iterable[str]) -> tuple[Taint, ...]:
    """Taints written as kubelet and AKS take them: key=value:Effect (value optional)."""
    out = []
    for text in items:
        head, _, effect = str(text).strip().rpartition(":")
        key, _, value = head.partition("=")
        if key:
            out.append(Taint(key, value, effect))
    return tuple(out)


def _labels(value: Any) -> dict[str, str] | None:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else ({} if value is None else None)


# -- EKS ---------------------------------------------------------------------------------------------
def _eks(r: _Reader) -> Fields:
    types = r.get("instanceTypes", "instance_type") or ()
    capacity = r.get("capacityType", "capacities")
    asgs = [g.get("name") for res in (r.get("resources", "asg_names") or ()) if isinstance(res, Mapping)
            for g in res.get("autoscalingGroups") or () if isinstance(g, Mapping)]
    return Fields(
        instance_type=types[0] if types else None,
        capacities=frozenset() if "capacities" in r.unknown else
        frozenset({{"SPOT": SPOT, "CAPACITY_BLOCK": RESERVED}.get(capacity or "ON_DEMAND", ON_DEMAND)}),
        labels=_labels(r.get("labels", "labels")),
        taints=None if "taints" in r.unknown else _taint_objects(r.get("taints", "taints")),
        min_nodes=_int(r.get("scalingConfig.minSize", "min_nodes")),
        max_nodes=_int(r.get("scalingConfig.maxSize", "max_nodes")),
        cloud_name=r.get("nodeGroupName", "cloud_name") or r.get("nodeGroupNamePrefix", "cloud_name"),
        region=r.get("region", "region"),
        asg_names=tuple(a for a in asgs if isinstance(a, str)),
    )


# -- GKE ---------------------------------------------------------------------------------------------
def _gke(r: _Reader) -> Fields:
    node = "nodeConfig."
    spot = r.get(node + "spot", "capacities") or r.get(node + "preemptible", "capacities")
    reserved = r.get(node + "reservationAffinity.consumeReservationType", "capacities") == "SPECIFIC_RESERVATION"
    accelerators = [a for a in r.get(node + "guestAccelerators", "gpus") or () if isinstance(a, Mapping)]
    gpus = sum(_int(a.get("count")) or 0 for a in accelerators)
    zones = len(r.get("nodeLocations", "max_nodes") or ()) or 1
    low, high = r.get("autoscaling.totalMinNodeCount", "min_nodes"), r.get("autoscaling.totalMaxNodeCount", "max_nodes")
    if low is None and high is None and r.get("autoscaling", "max_nodes"):
        per_zone = (r.get("autoscaling.minNodeCount", "min_nodes"), r.get("autoscaling.maxNodeCount", "max_nodes"))
        low, high = (None if v is None else v * zones for v in per_zone)
    elif r.get("autoscaling", "max_nodes") is None:
        fixed = r.get("nodeCount", "max_nodes")
        fixed = r.get("initialNodeCount", "max_nodes") if fixed is None else fixed
        low = high = None if fixed is None else fixed * zones
    machine = r.get(node + "machineType", "instance_type")
    location = r.get("location", "region") or ""
    zone = re.fullmatch(r"([a-z]+-[a-z]+[0-9]+)-[a-z]", location)
    return Fields(
        instance_type=machine,
        capacities=frozenset() if "capacities" in r.unknown else
        frozenset({SPOT if spot else RESERVED if reserved else ON_DEMAND}),
        labels=_labels(r.get(node + "labels", "labels")),
        taints=None if "taints" in r.unknown else _taint_objects(r.get(node + "taints", "taints")),
        min_nodes=_int(low), max_nodes=_int(high),
        cloud_name=r.get("name", "cloud_name") or r.get("namePrefix", "cloud_name"),
        region=zone.group(1) if zone else (location or None),
        gpus_declared=gpus or None, gpu_marker=gpus > 0,
        # N1 machines carry GPUs only through guestAccelerators (the catalog lists N1 types with the GPU
        # gpustack attaches); A2, A3, A4 and G2 machine types come with theirs
        # (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).
        catalog_applies=gpus > 0 or not str(machine or "").startswith("n1-"),
    )


# -- AKS ---------------------------------------------------------------------------------------------
def _aks(r: _Reader) -> Fields:
    priority = r.get("scaleSetPriority", "capacities")
    reserved = r.get("capacityReservationGroupID", "capacities")
    if r.get("enableAutoScaling", "min_nodes"):
        low, high = r.get("minCount", "min_nodes"), r.get("maxCount", "max_nodes")
    else:
        count = r.get("count", "max_nodes")
        low = high = 1 if count is None and "max_nodes" not in r.unknown else count  # AKS default count: 1
    taints = r.get("nodeTaints", "taints")
    return Fields(
        instance_type=r.get("vmSize", "instance_type"),
        capacities=frozenset() if "capacities" in r.unknown else
        frozenset({SPOT if str(priority).lower() == "spot" else RESERVED if reserved else ON_DEMAND}),
        labels=_labels(r.get("nodeLabels", "labels")),
        taints=None if "taints" in r.unknown else _taint_strings(taints or ()),
        min_nodes=_int(low), max_nodes=_int(high),
        cloud_name=r.get("agentPoolName", "cloud_name"),
        gpu_marker=bool(r.get("gpuInstanceProfile", "gpus")),
    )


# -- OKE ---------------------------------------------------------------------------------------------
_REGISTER_TAINTS = re.compile(r"--register-with-taints[= ]([^\s\"']+)")


def _cloud_init_taints(user_data: Any) -> tuple[Taint, ...]:
    """Taints a cloud-init script passes to the kubelet (OKE node pools have no taint field)."""
    if not isinstance(user_data, str):
        return ()
    try:
        script = base64.b64decode(user_data, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        script = user_data  # not base64: read it as the script itself
    return tuple(t for match in _REGISTER_TAINTS.finditer(script) for t in _taint_strings(match.group(1).split(",")))


def _oke(r: _Reader) -> Fields:
    placements = [p for p in r.get("nodeConfigDetails.placementConfigs", "capacities") or () if isinstance(p, Mapping)]
    capacities = {SPOT if p.get("preemptibleNodeConfig") else RESERVED if p.get("capacityReservationId") else ON_DEMAND
                  for p in placements} or {ON_DEMAND}
    labels = r.get("initialNodeLabels", "labels")
    shape = r.get("nodeShape", "instance_type")
    size = _int(r.get("nodeConfigDetails.size", "max_nodes"))
    return Fields(
        instance_type=shape,
        capacities=frozenset() if "capacities" in r.unknown else frozenset(capacities),
        labels=None if "labels" in r.unknown else
        {str(x.get("key")): x.get("value") for x in labels or () if isinstance(x, Mapping)},
        taints=None if "taints" in r.unknown else _cloud_init_taints(r.get("nodeMetadata.user_data", "taints")),
        # The pool holds no autoscaling bounds: its size is what it runs, unless the cluster autoscaler
        # add-on of the same stack bounds it (`autoscaler_bounds`).
        min_nodes=size, max_nodes=size,
        cloud_name=r.get("name", "cloud_name"),
        gpu_marker=".GPU" in (shape or ""),
        resource_id=r.get("id", "resource_id"),
    )


# OKE's Cluster Autoscaler add-on bounds node pools with `nodes: <min>:<max>:<node pool OCID>,...`
# (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengconfiguringclusteraddons-configurationarguments.htm).
_OKE_ADDON = "oci:ContainerEngine/addon:Addon"


def autoscaler_bounds(resource_type: str, props: Props) -> dict[str, tuple[int, int]] | None:
    """Node-pool id -> (min, max) from an autoscaler resource; None when it sets none, {} when unknown."""
    if resource_type != _OKE_ADDON or props.get("addonName") != "ClusterAutoscaler":
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


def with_bounds(views: list[PoolView], bounds: list[dict[str, tuple[int, int]]]) -> list[PoolView]:
    """Views whose pool an autoscaler of the stack bounds get those bounds; while an autoscaler's
    bounds are unknown, the maximum of the pools it may bound is unknown too."""
    known = {pool_id: pair for found in bounds for pool_id, pair in found.items()}
    pending = any(not found for found in bounds)
    out = []
    for view in views:
        if view.resource_id and view.resource_id in known:
            low, high = known[view.resource_id]
            view = dataclasses.replace(view, min_nodes=low, max_nodes=high)
        elif pending and view.resource_type in POOL_TYPES and POOL_TYPES[view.resource_type].bounded_by:
            view = dataclasses.replace(view, max_nodes=None, unknown=view.unknown | {"max_nodes"})
        out.append(view)
    return out


_CRONJOB = f"kubernetes:batch/v1:CronJob resources labelled {POOL_LABEL}=<pool> that scale it to zero out of hours"
POOL_TYPES: dict[str, PoolType] = {t.token: t for t in (
    PoolType("aws:eks/nodeGroup:NodeGroup", "aws", _eks,
             {"instance_type": "instanceTypes", "gpu": "instanceTypes", "gpus_per_node": "instanceTypes",
              "capacity": "capacityType", "labels": "labels", "taints": "taints", "sharing": "labels",
              "min_nodes": "scalingConfig.minSize", "max_nodes": "scalingConfig.maxSize", "cloud_name": "nodeGroupName",
              "cluster": "clusterName", "settings.subnet_ids": "subnetIds", "settings.node_role_arn": "nodeRoleArn"},
             {SPOT: "capacityType: SPOT", ON_DEMAND: "capacityType: ON_DEMAND", RESERVED: "a capacity reservation"},
             "taints: [{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}]",
             "aws:autoscaling/schedule:Schedule resources on the node group's Auto Scaling group, or " + _CRONJOB),
    PoolType("gcp:container/nodePool:NodePool", "gcp", _gke,
             {"instance_type": "nodeConfig.machineType", "gpu": "nodeConfig.guestAccelerators",
              "gpus_per_node": "nodeConfig.guestAccelerators", "capacity": "nodeConfig.spot",
              "labels": "nodeConfig.labels", "taints": "nodeConfig.taints", "sharing": "nodeConfig.guestAccelerators",
              "sharing.mode": "nodeConfig.guestAccelerators", "sharing.replicas": "nodeConfig.guestAccelerators",
              "sharing.mig": "nodeConfig.guestAccelerators", "cluster": "cluster", "settings.project": "project",
              "min_nodes": "autoscaling.totalMinNodeCount", "max_nodes": "autoscaling.totalMaxNodeCount",
              "cloud_name": "name"},
             {SPOT: "nodeConfig.spot: true", ON_DEMAND: "nodeConfig.spot: false",
              RESERVED: "nodeConfig.reservationAffinity"},
             "nodeConfig.taints: [{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}]", _CRONJOB),
    PoolType("azure-native:containerservice:AgentPool", "azure", _aks,
             {"instance_type": "vmSize", "gpu": "vmSize", "gpus_per_node": "vmSize", "capacity": "scaleSetPriority",
              "labels": "nodeLabels", "taints": "nodeTaints", "sharing": "gpuInstanceProfile",
              "sharing.mig": "gpuInstanceProfile", "min_nodes": "minCount", "max_nodes": "maxCount",
              "cloud_name": "agentPoolName", "cluster": "resourceName", "settings.resource_group": "resourceGroupName"},
             {SPOT: "scaleSetPriority: Spot", ON_DEMAND: "scaleSetPriority: Regular",
              RESERVED: "capacityReservationGroupID"},
             'nodeTaints: ["nvidia.com/gpu=present:NoSchedule"]', _CRONJOB),
    PoolType("oci:ContainerEngine/nodePool:NodePool", "oci", _oke,
             {"instance_type": "nodeShape", "gpu": "nodeShape", "gpus_per_node": "nodeShape",
              "capacity": "nodeConfigDetails.placementConfigs", "labels": "initialNodeLabels",
              "taints": "nodeMetadata.user_data", "sharing": "initialNodeLabels",
              "min_nodes": "nodeConfigDetails.size", "max_nodes": "nodeConfigDetails.size", "cloud_name": "name",
              "cluster": "clusterId", "settings.compartment_id": "compartmentId"},
             {SPOT: "preemptibleNodeConfig in every placement config",
              ON_DEMAND: "placement configs without preemptibleNodeConfig",
              RESERVED: "capacityReservationId in the placement configs"},
             "a cloud-init script in nodeMetadata.user_data that runs the OKE init script with --kubelet-extra-args "
             '"--register-with-taints=nvidia.com/gpu=present:NoSchedule"', _CRONJOB, bounded_by=_OKE_ADDON),
)}


@dataclasses.dataclass(frozen=True)
class ResourceSpelling:
    """Fixes said in the words of one resource type."""

    kind: PoolType
    sees_previous: bool = False

    def capacity(self, view: PoolView, capacity: str) -> str:
        return f"{capacity} capacity ({self.kind.capacity_values[capacity]})"

    def checkpointing(self, view: PoolView) -> str | None:
        return f"label it {CHECKPOINTING_LABEL}=true ({self.kind.paths['labels']})"

    def labels(self, view: PoolView, keys: list[str]) -> str:
        return f"add the node label{'s' if len(keys) > 1 else ''} {', '.join(k + '=<value>' for k in keys)} " \
               f"({self.kind.paths['labels']})"

    def gpu_taint(self, view: PoolView) -> str:
        return f"declare the taint: {self.kind.gpu_taint}"

    def scale_to_zero(self, view: PoolView) -> str:
        return f"set {self.kind.paths['min_nodes']} to 0"

    def schedule(self, view: PoolView) -> str:
        return f"add an auto-stop schedule: {self.kind.schedule}"

    def max_nodes(self, view: PoolView) -> str:
        return f"{view.name}: {self.kind.paths['max_nodes']}"

    def field(self, view: PoolView, plan_field: str) -> str:
        return self.kind.paths.get(plan_field, plan_field)


def stack_of(urn: str) -> str:
    """The stack named in a URN (urn:pulumi:<stack>::<project>::<type>::<name>)."""
    head = urn.split("::", 1)[0]
    return head.rsplit(":", 1)[-1] if head.startswith("urn:pulumi:") else head or "stack"


def pool_view(resource_type: str, props: Props, urn: str = "", name: str = "", provider_props: Props | None = None,
              protected: bool = False, ignored_changes: Iterable[str] = ()) -> PoolView | None:
    """The pool view of a resource, or None when the type is not a node pool gpustack knows."""
    kind = POOL_TYPES.get(resource_type)
    if kind is None:
        return None
    reader = _Reader(props)
    fields = kind.read(reader)
    region = fields.region or _provider_region(provider_props)
    facts = lookup(kind.cloud, fields.instance_type, fields.capacities, region) if fields.catalog_applies else None
    labels = fields.labels
    taints = fields.taints or ()
    marker = fields.gpu_marker or any(t.key == GPU_TAINT_KEY for t in taints) or bool(labels and labels.get(KIND_LABEL))
    checkpointing = (labels or {}).get(CHECKPOINTING_LABEL)
    return PoolView(
        target=stack_of(urn), name=name or fields.cloud_name or resource_type, cloud=kind.cloud,
        spelling=ResourceSpelling(kind), instance_type=fields.instance_type,
        is_gpu=bool(facts and facts.gpus) or marker,
        gpus_per_node=fields.gpus_declared or (facts.gpus if facts else None),
        usd_per_node_hour=facts.usd_per_node_hour if facts else None,
        price_note=facts.note if facts else "instance type not in the catalog",
        capacities=fields.capacities, kind=(labels or {}).get(KIND_LABEL), labels=labels, taints=fields.taints,
        min_nodes=fields.min_nodes, max_nodes=fields.max_nodes,
        checkpointing=None if checkpointing is None else checkpointing == "true",
        scheduled=None, cloud_name=fields.cloud_name, pool_label=(labels or {}).get(POOL_LABEL), urn=urn,
        resource_type=resource_type, asg_names=fields.asg_names, resource_id=fields.resource_id, protected=protected, ignored_changes=frozenset(ignored_changes),
        unknown=frozenset(reader.unknown),
    )


def _provider_region(provider_props: Props | None) -> str | None:
    if not provider_props:
        return None
    for key in ("region", "location"):
        value = provider_props.get(key)
        if isinstance(value, str):
            return value
    return None
