"""What every backend shares: its contract (`Backend`), what the program hands it (`DeployContext`),
and the component it declares per pool (`GpuNodePool`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import pulumi

from gpustack.plan.model import Plan, Pool, TargetPlan

Build = Callable[[Pool, pulumi.ResourceOptions], Mapping[str, Any]]
# The output of every GpuNodePool that holds the cloud's id of the created node pool.
POOL_ID = "node_pool_id"


T = TypeVar("T")


def checked(value: T | None) -> T:
    """A compiled value planning checked (`Provisioner.check_pool` refuses a pool without it)."""
    assert value is not None, "planning refuses a pool without this value; reaching here is a bug"
    return value


@dataclasses.dataclass(frozen=True)
class DeployContext:
    """What the program knows beyond the plan: the Kubernetes provider of the in-cluster layer, when the
    layer is declared (the `gpustack:kubeconfig` secret is set, or a program passes one); the component
    everything is declared under (`gpustack.pulumi.GpuPools`), whose provider options its children
    inherit; what every resource and data source waits for (the program's cluster)."""

    kubernetes: pulumi.ProviderResource | None = None
    parent: pulumi.Resource | None = None
    depends_on: tuple[pulumi.Input[pulumi.Resource], ...] = ()
    cluster: pulumi.Input[str] | None = None  # the program's cluster as the node-pool API names it
    node_role: pulumi.Input[str] | None = None  # the program's node identity (`Cloud.node_identity`)

    def cluster_of(self, target: TargetPlan) -> pulumi.Input[str]:
        """The cluster the pools join: the program's, else the one the spec names."""
        return target.cluster if self.cluster is None else self.cluster

    @property
    def in_cluster(self) -> bool:
        """Whether the in-cluster layer (GPU Operator, auto-stop, alerts, priority ConfigMap) is declared."""
        return self.kubernetes is not None

    def options(self, parent: pulumi.Resource | None = None) -> pulumi.ResourceOptions:
        """Options for a resource a backend declares: under `parent` (default: the context's), after
        what the context waits for. Backends merge their own options over these."""
        return pulumi.ResourceOptions(parent=parent or self.parent, depends_on=list(self.depends_on) or None)

    def cluster_provider(self, target: TargetPlan, objects: str) -> pulumi.ProviderResource | None:
        """The Kubernetes provider for a target whose pools are Kubernetes `objects` (e.g. "NodePools");
        stops the program with a message when there is none, since the pools would not exist."""
        if target.pools and self.kubernetes is None:
            raise pulumi.RunError(
                f"gpustack: target {target.name!r} is provisioned by {objects}, which are Kubernetes objects: set "
                "the secret `gpustack:kubeconfig` (or pass `kubernetes=` to GpuPools), or apply the output of "
                "`gpustack render` instead")
        return self.kubernetes

    def invoke(self) -> pulumi.InvokeOutputOptions:
        """Options for a data source (an `_output` invoke): the parent's provider, after the cluster."""
        return pulumi.InvokeOutputOptions(parent=self.parent, depends_on=list(self.depends_on) or None)


class Backend(Protocol):
    """A provisioner's backend module (`Provisioner.backend` in the cloud's bundle)."""

    def declare(self, target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
        """One `GpuNodePool` per pool of the target (children parented to it), plus any target-wide
        resources; every value comes from the plan, the enum strings from each pool's `compiled`."""
        ...


class GpuNodePool(pulumi.ComponentResource):
    """One planned pool: a `gpustack:<cloud>:GpuNodePool` with the cloud's resources as children.

    `build(pool, child_opts)` declares the children (each with `child_opts`, which parents them to
    this component) and returns outputs, the node pool's id under `POOL_ID` among them; the component
    adds the pool's cloud name, GPUs and estimated monthly cost and registers them.
    """

    def __init__(self, cloud: str, pool: Pool, build: Build, context: DeployContext | None = None):
        context = context or DeployContext()
        super().__init__(f"gpustack:{cloud}:GpuNodePool", pool.name, None, context.options())
        # depends_on is not inherited: every child waits for what the context waits for.
        outputs: dict[str, Any] = dict(build(pool, context.options(parent=self)))
        assert POOL_ID in outputs, f"the backend of {cloud} gives no {POOL_ID} output"
        outputs.update(
            name=pool.cloud_name,
            kind=pool.kind,
            capacity=pool.capacity,
            instance_type=pool.instance_type,
            gpus=pool.gpus.provisioned,
            min_nodes=pool.min_nodes,
            max_nodes=pool.max_nodes,
            estimated_monthly_cost_usd=round(pool.monthly_cost_usd, 2),
        )
        self.outputs = outputs
        self.register_outputs(outputs)
