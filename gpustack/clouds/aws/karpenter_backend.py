"""EKS with Karpenter: per pool its EC2NodeClass, NodeOverlay and NodePool (`gpustack.backends.karpenter`),
and before them the capacity reservation of a reserved floor, tagged so its EC2NodeClass selects it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from gpustack.backends import karpenter
from gpustack.backends.base import DeployContext, GpuNodePool
from gpustack.clouds.aws.backend import declare_reservation
from gpustack.clouds.aws.karpenter import EC2KarpenterPool
from gpustack.plan.model import Plan, Pool, TargetPlan


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    def reservation(pool: Pool, opts: pulumi.ResourceOptions) -> tuple[dict[str, Any], Sequence[pulumi.Resource]]:
        compiled = pool.compiled
        assert isinstance(compiled, EC2KarpenterPool)
        if not compiled.reservation:
            return {}, ()
        # Zonal, in the zone of the first subnet, as on managed node groups; targeted, so only
        # launches that name it (Karpenter's, once its EC2NodeClass selects it) use it.
        declared = declare_reservation(pool, compiled.reservation, compiled.subnet_ids[0],
                                       {**pool.attribution, **dict(compiled.reservation_tags)}, opts, context)
        return {"capacity_reservation_id": declared.id}, (declared,)

    return karpenter.declare(target, plan, context, before=reservation)
