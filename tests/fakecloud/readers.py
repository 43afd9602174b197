"""The guardrail reader of FKS node pools: resource props back to the neutral fields of a pool."""

from __future__ import annotations

from typing import Any

from gpustack.guardrails.reading import CRONJOB_SCHEDULE, Fields, PoolType, Reader, int_or_none, labels_of, taint_strings
from gpustack.guardrails.view import ON_DEMAND, RESERVED

from fakecloud.backend import NODE_POOL
from fakecloud.facts import FKS


def read_node_pool(r: Reader) -> Fields:
    billing = r.get("billing", "capacities")
    return Fields(
        instance_type=r.get("machineType", "instance_type"),
        capacities=frozenset({RESERVED if billing == "RESERVED" else ON_DEMAND}),
        labels=labels_of(r.get("labels", "labels")),
        taints=taint_strings(r.get("taints", "taints") or ()),
        min_nodes=int_or_none(r.get("minNodes", "min_nodes")),
        max_nodes=int_or_none(r.get("maxNodes", "max_nodes")),
        cloud_name=r.get("name", "cloud_name"),
        resource_id=r.get("id", "resource_id"),
    )


POOL_TYPES = (
    PoolType(NODE_POOL, FKS.name, read_node_pool,
             {"instance_type": "machineType", "capacity": "billing", "labels": "labels", "taints": "taints",
              "min_nodes": "minNodes", "max_nodes": "maxNodes", "cloud_name": "name",
              "settings.project": "project"},
             {ON_DEMAND: "billing: ON_DEMAND", RESERVED: "billing: RESERVED"},
             'taints: ["nvidia.com/gpu=present:NoSchedule"]', CRONJOB_SCHEDULE),
)
SCHEDULE_TYPES: dict[str, Any] = {}
AUTOSCALER_TYPES: dict[str, Any] = {}
