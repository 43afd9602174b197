"""`GpuPools`: the GPU node pools of one target, as a Pulumi component an existing program adds next to
its cluster.

    import pulumi
    import pulumi_aws as aws
    from gpustack.pulumi import GpuPools

    cluster = aws.eks.Cluster("ml-prod", name="ml-prod", ...)        # the program's own cluster
    gpu = GpuPools("gpu", spec="stacks/gpustack.yaml", target="aws-prod", cluster=cluster.name)
    pulumi.export("gpu_pools", gpu.pool_names)

The spec is compiled exactly as `gpustack plan` compiles it; the pools are children of the component,
and inherit its provider options (`opts=pulumi.ResourceOptions(providers=[...])`). `cluster` (the
cluster's name or id as the program has it, or the cluster resource) makes every pool wait for the
cluster, and is checked against the target's `cluster` in the spec, which the plan's names derive from.
`kubernetes` (a provider for the cluster) declares the in-cluster layer too (GPU Operator, NVIDIA
sharing configs, auto-stop, alerts). `gpustack.program.main()` is this component configured from
`gpustack:spec` and `gpustack:target`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pulumi

from gpustack.backends.base import POOL_ID, Backend, DeployContext, GpuNodePool
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError, UsageError
from gpustack.files import FileRefused
from gpustack.plan import Plan, build_plan
from gpustack.plan.model import TargetPlan
from gpustack.spec import load_spec

TYPE = "gpustack:index:GpuPools"


def compile_target(spec_path: str | os.PathLike[str], target_name: str,
                   catalogs: Sequence[str] = ()) -> tuple[Plan, TargetPlan]:
    """The plan and the target to deploy; bad input becomes a RunError (a message, no traceback)."""
    try:
        plan = build_plan(load_spec(os.fspath(spec_path), catalogs))
    except SpecError as exc:
        raise pulumi.RunError(f"gpustack: the spec has problems:\n{exc}") from None
    except (UsageError, FileRefused) as exc:  # a refused file or a usage error: a message, as on the CLI
        raise pulumi.RunError(f"gpustack: {exc}") from None
    names = [t.name for t in plan.targets]
    if target_name not in names:
        raise pulumi.RunError(f"gpustack: no target {target_name!r} in {spec_path}; targets: {', '.join(names)}")
    return plan, plan.target(target_name)


class GpuPools(pulumi.ComponentResource):
    """The planned node pools of one target (and, with `kubernetes`, its in-cluster layer).

    Outputs: `pool_names` (plan name -> the node pool's name on the cloud; the plan name is the node
    label gpustack.dev/pool that pod affinity selects), `pool_ids` (plan name -> the cloud's id of the
    node pool), `gpus` (GPUs provisioned at peak), `monthly_cost_usd` (the plan's estimate). `pools`
    holds the per-pool components; `plan` and `target` what was compiled.

    `merge_priority_expander`: the cluster has a Cluster Autoscaler priority-expander ConfigMap of its
    own; it is read and patched with the target's spot-first entries merged in, instead of one being
    created (which the cluster would refuse as AlreadyExists).

    `keep_root_urns`: for a stack whose resources were declared at its root before (by earlier
    versions of `gpustack.program.main()`): each direct child gets an alias to its old URN, so
    wrapping them in the component replaces nothing
    (https://www.pulumi.com/docs/iac/operations/stack-management/refactoring-with-aliases/).
    """

    pool_names: pulumi.Output[dict[str, str]]
    pool_ids: pulumi.Output[dict[str, str]]
    gpus: pulumi.Output[int]
    monthly_cost_usd: pulumi.Output[float]

    def __init__(self, name: str, spec: str | os.PathLike[str], target: str, *,
                 cluster: pulumi.Input[str] | pulumi.Resource | None = None,
                 kubernetes: pulumi.ProviderResource | None = None, catalogs: Sequence[str] = (),
                 keep_root_urns: bool = False, merge_priority_expander: bool = False,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        if keep_root_urns:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transformations=[self._at_root]))
        super().__init__(TYPE, name, None, opts)
        self.plan, self.target = compile_target(spec, target, catalogs)
        waits = () if cluster is None else _checked_cluster(self.target, cluster)
        context = DeployContext(kubernetes=kubernetes, parent=self, depends_on=waits)
        cloud = CLOUDS.get(self.target.cloud)
        backend = cast(Backend, cloud.part(cloud.provisioner(self.target.provisioner).backend))
        self.pools: Mapping[str, GpuNodePool] = backend.declare(self.target, self.plan, context)
        if kubernetes is not None:
            from gpustack.backends import kubernetes as in_cluster

            # A priority-expander ConfigMap may name the node pools by id, known only from the backend.
            in_cluster.declare(self.target, self.plan, kubernetes,
                               {n: c.outputs[POOL_ID] for n, c in self.pools.items()}, parent=self,
                               merge_priorities=merge_priority_expander)
        pools = sorted(self.target.pools, key=lambda p: p.name)
        self.pool_names = pulumi.Output.from_input({p.name: p.cloud_name for p in pools})
        self.pool_ids = pulumi.Output.all(**{p.name: self.pools[p.name].outputs[POOL_ID] for p in pools})
        self.gpus = pulumi.Output.from_input(self.target.gpus.provisioned)
        self.monthly_cost_usd = pulumi.Output.from_input(round(self.target.cost.planned_monthly_usd, 2))
        self.register_outputs({"pool_names": self.pool_names, "pool_ids": self.pool_ids, "gpus": self.gpus,
                               "monthly_cost_usd": self.monthly_cost_usd})

    def _at_root(self, args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        """A direct child was at the stack's root before: alias it there (its children follow it)."""
        if args.opts.parent is not self:
            return None
        opts = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(
            aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]))
        return pulumi.ResourceTransformationResult(args.props, opts)


def _checked_cluster(target: TargetPlan,
                     cluster: pulumi.Input[str] | pulumi.Resource) -> tuple[pulumi.Output[Any], ...]:
    """What every pool waits for: the program's cluster, checked against the one the spec names (the
    pools' names and reservations derive from it). A resource matches by its name or its id; a plain
    string is checked at once."""
    if isinstance(cluster, str):
        _check(target, [cluster])
        return ()
    if isinstance(cluster, pulumi.Resource):
        values = [getattr(cluster, "name", None), getattr(cluster, "id", None)]
        given = pulumi.Output.all(*[v for v in values if isinstance(v, pulumi.Output)])
    else:
        given = pulumi.Output.all(cluster)
    return (given.apply(lambda found: _check(target, [str(v) for v in found if v is not None])),)


def _check(target: TargetPlan, found: list[str]) -> None:
    wanted = target.cluster
    if any(v == wanted or v.rsplit("/", 1)[-1] == wanted.rsplit("/", 1)[-1] for v in found):
        return None
    shown = " or ".join(repr(v) for v in found) or "nothing"
    raise pulumi.RunError(f"gpustack: target {target.name!r} names cluster {wanted!r} in the spec, but the program "
                          f"passes {shown}: set the target's `cluster` in the spec to it (the pool names and "
                          "reservations derive from it), or pass the cluster the spec names")
