"""GKE with ComputeClasses: per class its `cloud.google.com/v1` ComputeClass as a Kubernetes custom
resource (the object `gpustack render` writes, from `compute_class.compute_classes`), and the specific
Compute Engine reservation of each reserved floor, which its class's first priority consumes. No node
pool: GKE creates them for the classes' priorities.

The classes need a Kubernetes provider for the cluster (`gpustack:kubeconfig`, or the `kubernetes`
argument of `gpustack.pulumi.GpuPools`); without one the program stops with a message, since the pools
would not exist. Each class is a child of the component of its first pool; every pool of a class gives
the class's id as its `POOL_ID`.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool, checked
from gpustack.clouds.gcp.backend import declare_reservations
from gpustack.clouds.gcp.compute_class import ClassPool, class_members, compute_classes
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render.common import object_labels  # the labels `gpustack render` writes


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    provider = context.cluster_provider(target, "GKE ComputeClasses")
    project = dict(target.settings).get("project")
    assert project is None or isinstance(project, str)  # the spec's pattern admits strings only
    objects = {obj["metadata"]["name"]: obj for obj in compute_classes(target.pools, object_labels(plan, target))}
    declared: dict[str, k8s.apiextensions.CustomResource] = {}

    def build(pool: Pool, opts: pulumi.ResourceOptions) -> dict[str, Any]:
        compiled = pool.compiled
        assert isinstance(compiled, ClassPool)
        outputs: dict[str, Any] = {}
        priority = compiled.priority
        if priority.reservation:
            declare_reservations(pool, priority.reservation, checked(priority.gpu_type), project, opts)
            outputs["reservation_name"] = priority.reservation
        name = compiled.class_name
        if name not in declared:  # the class's first pool (its floor's reservation is declared just above)
            obj = objects[name]
            declared[name] = k8s.apiextensions.CustomResource(
                f"{pool.name}-compute-class", api_version=obj["apiVersion"], kind=obj["kind"],
                metadata=obj["metadata"], spec=obj["spec"],
                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(provider=provider)))
        outputs[POOL_ID] = declared[name].id
        return outputs

    # Each class's pools in priority order, so the class is declared with its first pool.
    ordered = [pool for members in class_members(target.pools).values() for pool in members]
    return {pool.name: GpuNodePool(target.cloud, pool, build, context) for pool in ordered}
