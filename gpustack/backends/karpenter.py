"""Pools provisioned by Karpenter, declared: each pool's node class, NodeOverlay and NodePool (the objects
`gpustack render` writes, from its provisioner's `objects`) as pulumi-kubernetes custom resources,
children of its GpuNodePool, each after the one before. No node group: Karpenter launches the nodes.

The objects need a Kubernetes provider for the cluster (`gpustack:kubeconfig`, or the `kubernetes`
argument of `gpustack.pulumi.GpuPools`); without one the program stops with a message, since the
pools would not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool
from gpustack.clouds import CLOUDS
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render.common import object_labels  # the labels `gpustack render` writes

# What a cloud declares before a pool's objects (a capacity reservation their node class selects):
# (outputs of the GpuNodePool, resources the objects wait for).
Before = Callable[[Pool, pulumi.ResourceOptions], tuple[dict[str, Any], Sequence[pulumi.Resource]]]


def declare(target: TargetPlan, plan: Plan, context: DeployContext, before: Before | None = None) -> dict[str, GpuNodePool]:
    if target.pools and context.kubernetes is None:
        raise pulumi.RunError(
            f"gpustack: target {target.name!r} is provisioned by Karpenter, whose NodePools are Kubernetes objects: "
            "set the secret `gpustack:kubeconfig` (or pass `kubernetes=` to GpuPools), or apply the output of "
            "`gpustack render` instead")
    provisioner = CLOUDS.get(target.cloud).provisioner(target.provisioner)

    def build(pool: Pool, opts: pulumi.ResourceOptions) -> dict[str, Any]:
        outputs, waits = before(pool, opts) if before else ({}, ())
        in_cluster = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(provider=context.kubernetes))
        declared: dict[str, k8s.apiextensions.CustomResource] = {}
        waits_for: list[pulumi.Resource] = list(waits)
        for obj in provisioner.objects(pool, object_labels(plan, target, pool)):  # each after the one before
            declared[obj["kind"]] = _custom(f"{pool.name}-{suffix(obj['kind'])}", obj, pulumi.ResourceOptions.merge(
                in_cluster, pulumi.ResourceOptions(depends_on=waits_for)))
            waits_for = [declared[obj["kind"]]]
        return {**outputs, POOL_ID: declared["NodePool"].id}

    return {pool.name: GpuNodePool(target.cloud, pool, build, context) for pool in target.pools}


def suffix(kind: str) -> str:
    """The Pulumi name of each object is `<pool>-<suffix>`: node-class for any provider's node class."""
    return {"NodePool": "node-pool", "NodeOverlay": "node-overlay"}.get(kind, "node-class")


def _custom(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"],
                                            metadata=obj["metadata"], spec=obj["spec"], opts=opts)
