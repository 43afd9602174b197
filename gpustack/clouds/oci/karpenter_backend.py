"""OKE with Oracle's Karpenter provider: per pool its OCINodeClass and NodePool (`gpustack.backends.karpenter`),
and before them the capacity reservation of a reserved floor, in the first availability domain, freeform-tagged
so its OCINodeClass's capacityReservationFilter matches it. No node pool and no Cluster Autoscaler add-on:
KPO launches the nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from gpustack.backends import karpenter
from gpustack.backends.base import DeployContext, GpuNodePool
from gpustack.clouds.oci.backend import availability_domains, declare_reservation
from gpustack.clouds.oci.karpenter import OCIKarpenterPool
from gpustack.plan.model import Plan, Pool, TargetPlan


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    settings = dict(target.settings)
    compartment = str(settings["compartment_id"])
    domains: list[pulumi.Output[list[str]]] = []  # looked up once, and only for a target with a floor

    def reservation(pool: Pool, opts: pulumi.ResourceOptions) -> tuple[dict[str, Any], Sequence[pulumi.Resource]]:
        compiled = pool.compiled
        assert isinstance(compiled, OCIKarpenterPool)
        if not compiled.reservation_tags:
            return {}, ()
        if not domains:
            domains.append(availability_domains(settings, compartment, context))
        declared = declare_reservation(pool, compiled.compartment_id, domains[0].apply(lambda names: names[0]),
                                       {**pool.attribution, **dict(compiled.reservation_tags)}, opts)
        return {"capacity_reservation_id": declared.id}, (declared,)

    return karpenter.declare(target, plan, context, before=reservation)
