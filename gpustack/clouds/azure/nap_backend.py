"""AKS node auto-provisioning: per pool its AKSNodeClass and NodePool (`gpustack.backends.karpenter`).
No agent pool and no capacity reservation group: NAP launches the nodes, on-demand or spot."""

from __future__ import annotations

from gpustack.backends import karpenter
from gpustack.backends.base import DeployContext, GpuNodePool
from gpustack.plan.model import Plan, TargetPlan


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    return karpenter.declare(target, plan, context)
