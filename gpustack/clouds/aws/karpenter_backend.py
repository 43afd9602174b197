"""EKS with Karpenter: per pool its EC2NodeClass and NodePool as Kubernetes custom resources (the
objects `gpustack render` writes, from `karpenter.node_objects`), and the capacity reservation of a
reserved floor, tagged so its EC2NodeClass selects it. No node group: Karpenter launches the nodes.

The objects need a Kubernetes provider for the cluster (`gpustack:kubeconfig`, or the `kubernetes`
argument of `gpustack.pulumi.GpuPools`); without one the program stops with a message, since the
pools would not exist.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool
from gpustack.clouds.aws.backend import declare_reservation
from gpustack.clouds.aws.karpenter import KarpenterPool, node_objects
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render.common import object_labels  # the labels `gpustack render` writes


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    if target.pools and context.kubernetes is None:
        raise pulumi.RunError(
            f"gpustack: target {target.name!r} is provisioned by Karpenter, whose NodePools are Kubernetes objects: "
            "set the secret `gpustack:kubeconfig` (or pass `kubernetes=` to GpuPools), or apply the output of "
            "`gpustack render` instead")
    provider = context.kubernetes

    def build(pool: Pool, opts: pulumi.ResourceOptions) -> dict[str, Any]:
        compiled = pool.compiled
        assert isinstance(compiled, KarpenterPool)
        outputs: dict[str, Any] = {}
        waits: list[pulumi.Resource] = []
        if compiled.reservation:
            # Zonal, in the zone of the first subnet, as on managed node groups; targeted, so only
            # launches that name it (Karpenter's, once its EC2NodeClass selects it) use it.
            reservation = declare_reservation(pool, compiled.reservation, compiled.subnet_ids[0],
                                              {**pool.attribution, **dict(compiled.reservation_tags)}, opts, context)
            outputs["capacity_reservation_id"] = reservation.id
            waits.append(reservation)
        in_cluster = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(provider=provider))
        declared: dict[str, k8s.apiextensions.CustomResource] = {}
        waits_for: list[pulumi.Resource] = waits
        for obj in node_objects(pool, object_labels(plan, target, pool)):  # each after the one before
            declared[obj["kind"]] = _custom(f"{pool.name}-{_SUFFIX[obj['kind']]}", obj, pulumi.ResourceOptions.merge(
                in_cluster, pulumi.ResourceOptions(depends_on=waits_for)))
            waits_for = [declared[obj["kind"]]]
        declared_pool = declared["NodePool"]
        outputs[POOL_ID] = declared_pool.id
        return outputs

    return {pool.name: GpuNodePool(target.cloud, pool, build, context) for pool in target.pools}


# The Pulumi name of each object: `<pool>-<suffix>`.
_SUFFIX = {"EC2NodeClass": "node-class", "NodePool": "node-pool", "NodeOverlay": "node-overlay"}


def _custom(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"],
                                            metadata=obj["metadata"], spec=obj["spec"], opts=opts)
