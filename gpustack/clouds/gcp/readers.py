"""Guardrail readers of GKE resources: node pools."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpustack.clouds._enums import TAINT_EFFECTS
from gpustack.clouds.gcp import facts
from gpustack.guardrails.reading import (
    CRONJOB_SCHEDULE,
    Fields,
    PoolType,
    Reader,
    int_or_none,
    labels_of,
    taint_objects,
)
from gpustack.guardrails.view import ON_DEMAND, RESERVED, SPOT

NODE_POOL = "gcp:container/nodePool:NodePool"
# The compile seam's mapping, read backwards: the cloud's spelling -> the plan's (Kubernetes) one.
_EFFECTS = {spelled: effect for effect in TAINT_EFFECTS.values if (spelled := facts.taint_effect(effect))}


def read_node_pool(r: Reader) -> Fields:
    node = "nodeConfig."
    spot = r.get(node + "spot", "capacities") or r.get(node + "preemptible", "capacities")
    reserved = r.get(node + "reservationAffinity.consumeReservationType", "capacities") == facts.RESERVATION_AFFINITY
    accelerators = [a for a in r.get(node + "guestAccelerators", "gpus") or () if isinstance(a, Mapping)]
    gpus = sum(int_or_none(a.get("count")) or 0 for a in accelerators)
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
        labels=labels_of(r.get(node + "labels", "labels")),
        taints=None if "taints" in r.unknown else taint_objects(r.get(node + "taints", "taints"), _EFFECTS),
        min_nodes=int_or_none(low), max_nodes=int_or_none(high),
        cloud_name=r.get("name", "cloud_name") or r.get("namePrefix", "cloud_name"),
        region=zone.group(1) if zone else (location or None),
        gpus_declared=gpus or None, gpu_marker=gpus > 0,
        # N1 machines carry GPUs only through guestAccelerators (the catalog lists N1 types with the GPU
        # gpustack attaches); A2, A3, A4 and G2 machine types come with theirs
        # (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).
        catalog_applies=gpus > 0 or not str(machine or "").startswith("n1-"),
    )


POOL_TYPES = (
    PoolType(NODE_POOL, facts.GKE.name, read_node_pool,
             {"instance_type": "nodeConfig.machineType", "gpu": "nodeConfig.guestAccelerators",
              "gpus_per_node": "nodeConfig.guestAccelerators", "capacity": "nodeConfig.spot",
              "labels": "nodeConfig.labels", "taints": "nodeConfig.taints", "sharing": "nodeConfig.guestAccelerators",
              "sharing.mode": "nodeConfig.guestAccelerators", "sharing.replicas": "nodeConfig.guestAccelerators",
              "sharing.mig": "nodeConfig.guestAccelerators", "cluster": "cluster", "settings.project": "project",
              "min_nodes": "autoscaling.totalMinNodeCount", "max_nodes": "autoscaling.totalMaxNodeCount",
              "cloud_name": "name"},
             {SPOT: "nodeConfig.spot: true", ON_DEMAND: "nodeConfig.spot: false",
              RESERVED: "nodeConfig.reservationAffinity"},
             "nodeConfig.taints: [{key: nvidia.com/gpu, value: present, effect: NO_SCHEDULE}]", CRONJOB_SCHEDULE),
)
SCHEDULE_TYPES: dict[str, Any] = {}
AUTOSCALER_TYPES: dict[str, Any] = {}
