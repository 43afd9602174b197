"""Guardrail readers of GKE resources: node pools, and the ComputeClasses of the `compute-class`
provisioner (each class read as one pool: its priorities' capacities, the labels and taints all of them
put on their nodes)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpustack.clouds._enums import TAINT_EFFECTS
from gpustack.clouds.gcp import compute_class, facts
from gpustack.guardrails.reading import (
    CRONJOB_SCHEDULE,
    Fields,
    PoolType,
    Reader,
    int_or_none,
    labels_of,
    taint_objects,
)
from gpustack.guardrails.view import ON_DEMAND, RESERVED, SPOT, Taint

NODE_POOL = "gcp:container/nodePool:NodePool"
# The compile seam's mapping, read backwards: the cloud's spelling -> the plan's (Kubernetes) one.
_EFFECTS = {spelled: effect for effect in TAINT_EFFECTS.values if (spelled := facts.taint_effect(effect))}


def read_node_pool(r: Reader) -> Fields:
    node = "nodeConfig."
    spot = r.get(node + "spot", "capacities") or r.get(node + "preemptible", "capacities")
    reserved = r.get(node + "reservationAffinity.consumeReservationType", "capacities") == facts.RESERVATION_AFFINITY
    accelerators = [a for a in r.get(node + "guestAccelerators", "gpus") or () if isinstance(a, Mapping)]
    gpus = sum(int_or_none(a.get("count")) or 0 for a in accelerators)
    low, high = _node_counts(r)
    machine = r.get(node + "machineType", "instance_type")
    location = r.get("location", "region") or ""
    zone = re.fullmatch(r"([a-z]+-[a-z]+[0-9]+)-[a-z]", location)
    return Fields(
        instance_type=machine,
        capacities=frozenset() if "capacities" in r.unknown else
        frozenset({SPOT if spot else RESERVED if reserved else ON_DEMAND}),
        labels=labels_of(r.get(node + "labels", "labels")),
        taints=None if "taints" in r.unknown else taint_objects(r.get(node + "taints", "taints"), _EFFECTS),
        min_nodes=int_or_none(low), max_nodes=int_or_none(high),
        cloud_name=r.get("name", "cloud_name") or r.get("namePrefix", "cloud_name"),
        region=zone.group(1) if zone else (location or None),
        gpus_declared=gpus or None, gpu_marker=gpus > 0,
        catalog_applies=_catalog_applies(gpus > 0, machine),
    )


def _node_counts(r: Reader) -> tuple[Any, Any]:
    """The pool's least and most nodes in all: the total autoscaling limits, else the per-zone ones times
    the zones, else a fixed size (no autoscaling) times the zones."""
    zones = len(r.get("nodeLocations", "max_nodes") or ()) or 1
    low, high = r.get("autoscaling.totalMinNodeCount", "min_nodes"), r.get("autoscaling.totalMaxNodeCount", "max_nodes")
    if low is None and high is None and r.get("autoscaling", "max_nodes"):
        per_zone = (r.get("autoscaling.minNodeCount", "min_nodes"), r.get("autoscaling.maxNodeCount", "max_nodes"))
        low, high = (None if v is None else v * zones for v in per_zone)
    elif r.get("autoscaling", "max_nodes") is None:
        fixed = r.get("nodeCount", "max_nodes")
        fixed = r.get("initialNodeCount", "max_nodes") if fixed is None else fixed
        low = high = None if fixed is None else fixed * zones
    return low, high


def _catalog_applies(has_gpus: bool, machine: Any) -> bool:
    # N1 machines carry GPUs only through guestAccelerators (the catalog lists N1 types with the GPU
    # gpustack attaches); A2, A3, A4 and G2 machine types come with theirs
    # (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).
    return has_gpus or not str(machine or "").startswith("n1-")


COMPUTE_CLASS = f"kubernetes:{compute_class.API_VERSION}:ComputeClass"
_SAME_EFFECTS = {effect: effect for effect in TAINT_EFFECTS.values}


def read_compute_class(r: Reader) -> Fields:
    """A ComputeClass as the pool its priorities make: spot where a priority is, reserved where one
    consumes a specific reservation, else on-demand; the node labels and taints every priority sets, plus
    the taints GKE adds to every node it creates for a GPU priority of the class (the class taint, and
    nvidia.com/gpu: `compute_class.GKE_TAINTS`); no minimum (auto-created node pools keep none) and no
    maximum of its own. A class that only lists existing node pools (`nodepools`) has no GPU of its own:
    the node pools are read themselves."""
    priorities = [p for p in r.get("spec.priorities", "instance_type") or () if isinstance(p, Mapping)]
    r.get("spec.priorities", "capacities")
    r.get("spec.priorities", "labels")
    r.get("spec.priorities", "taints")
    gpus = [p["gpu"] for p in priorities if isinstance(p.get("gpu"), Mapping)]
    name = r.get("metadata.name", "cloud_name")
    machine = next((p.get("machineType") for p in priorities if p.get("machineType")), None)
    count = int_or_none(gpus[0].get("count")) if gpus else None
    return Fields(
        instance_type=machine,
        capacities=frozenset() if "capacities" in r.unknown else frozenset(map(_priority_capacity, priorities)),
        labels=None if "labels" in r.unknown else _common_labels(priorities),
        taints=None if "taints" in r.unknown else _class_taints(priorities, name, bool(gpus)),
        min_nodes=0, max_nodes=None, cloud_name=name,
        gpus_declared=count or None, gpu_marker=bool(gpus),
        catalog_applies=_catalog_applies(bool(gpus), machine),
    )


def _priority_capacity(priority: Mapping[str, Any]) -> str:
    reservations = priority.get("reservations")
    reserved = isinstance(reservations, Mapping) and reservations.get("affinity") == compute_class.RESERVATION_AFFINITY
    return SPOT if priority.get("spot") else RESERVED if reserved else ON_DEMAND


def _common_labels(priorities: list[Mapping[str, Any]]) -> dict[str, str]:
    """The node labels every priority sets alike (a node of the class has them whichever priority made it)."""
    label_sets = [dict(labels_of(p.get("nodeLabels")) or {}) for p in priorities]
    if not label_sets:
        return {}
    return {k: v for k, v in label_sets[0].items() if all(s.get(k) == v for s in label_sets[1:])}


def _class_taints(priorities: list[Mapping[str, Any]], name: Any, has_gpus: bool) -> tuple[Taint, ...]:
    """The taints every priority sets, and those GKE adds to the nodes of a GPU class."""
    taint_sets = [set(taint_objects(p.get("taints"), _SAME_EFFECTS)) for p in priorities]
    taints = set.intersection(*taint_sets) if taint_sets else set()
    if has_gpus:
        taints |= {Taint(compute_class.CLASS_LABEL, str(name or ""), "NoSchedule"),
                   *(Taint(key, "present", "NoSchedule") for key in compute_class.GKE_TAINTS)}
    return tuple(sorted(taints, key=lambda t: (t.key, t.effect)))


POOL_TYPES = (
    PoolType(NODE_POOL, facts.GKE.name, read_node_pool,
             {"instance_type": "nodeConfig.machineType", "gpu": "nodeConfig.guestAccelerators",
              "gpus_per_node": "nodeConfig.guestAccelerators", "capacity": "nodeConfig.spot",
              "labels": "nodeConfig.labels", "taints": "nodeConfig.taints", "sharing": "nodeConfig.guestAccelerators",
              "sharing.mode": "nodeConfig.guestAccelerators", "sharing.replicas": "nodeConfig.guestAccelerators",
              "sharing.mig": "nodeConfig.guestAccelerators", "cluster": "cluster", "settings.project": "project",
              "settings.gpu_allocation": "nodeConfig.guestAccelerators",
              "min_nodes": "autoscaling.totalMinNodeCount", "max_nodes": "autoscaling.totalMaxNodeCount",
              "cloud_name": "name"},
             {SPOT: "nodeConfig.spot: true", ON_DEMAND: "nodeConfig.spot: false",
              RESERVED: "nodeConfig.reservationAffinity"},
             "nodeConfig.taints: [{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}]", CRONJOB_SCHEDULE),
    PoolType(COMPUTE_CLASS, facts.GKE.name, read_compute_class,
             {"instance_type": "spec.priorities[].machineType", "gpu": "spec.priorities[].gpu.type",
              "gpus_per_node": "spec.priorities[].gpu.count", "capacity": "spec.priorities[].spot",
              "labels": "spec.priorities[].nodeLabels", "taints": "spec.priorities[].taints",
              "sharing": "spec.priorities[].gpu.gpuSharing", "sharing.mode": "spec.priorities[].gpu.gpuSharing",
              "sharing.replicas": "spec.priorities[].gpu.gpuSharing.maxSharedClientsPerGPU",
              "sharing.mig": "spec.priorities[].gpu.gpuSharing.gpuPartitionSize",
              "min_nodes": "the workloads' minimum replicas (auto-created node pools keep no minimum)",
              "max_nodes": "the cluster's node auto-provisioning limits", "cloud_name": "metadata.name"},
             {SPOT: "a priority with spot: true", ON_DEMAND: "a priority with spot: false",
              RESERVED: "a priority with reservations: {affinity: Specific, specific: [{name: <reservation>}]}"},
             "a GPU priority (spec.priorities[].gpu): GKE taints its nodes nvidia.com/gpu=present:NoSchedule",
             CRONJOB_SCHEDULE, provisioner=compute_class.ComputeClasses.name),
)
SCHEDULE_TYPES: dict[str, Any] = {}
AUTOSCALER_TYPES: dict[str, Any] = {}
