"""FKS node pools as Pulumi resources: one `fakecloud:index/nodePool:NodePool` per planned pool, every
argument taken from the plan or the pool's compiled value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool
from gpustack.plan.model import Plan, Pool, TargetPlan

from fakecloud.managed import FksNodePool

NODE_POOL = "fakecloud:index/nodePool:NodePool"


class NodePool(pulumi.CustomResource):
    def __init__(self, name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(NODE_POOL, name, {**props, "id": None}, opts)


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    del plan
    return {pool.name: GpuNodePool(target.cloud, pool, _node_pool, context) for pool in target.pools}


def _node_pool(pool: Pool, opts: pulumi.ResourceOptions) -> Mapping[str, Any]:
    compiled = pool.compiled
    assert isinstance(compiled, FksNodePool)
    resource = NodePool(pool.name, {
        "name": pool.cloud_name, "project": compiled.project, "machineType": pool.instance_type,
        "billing": compiled.billing, "minNodes": pool.min_nodes, "maxNodes": pool.max_nodes,
        "labels": dict(pool.labels), "taints": list(compiled.taints), "diskGib": pool.disk_gib,
    }, opts)
    return {POOL_ID: resource.id}
