"""`GpuPools`: the GPU node pools of one target, as a Pulumi component an existing program adds next to
its cluster (docs/component.md has a complete program and its test under mocks).

    import pulumi
    import pulumi_aws as aws
    from gpustack.pulumi import GpuPools

    cluster = aws.eks.Cluster("team-cluster", role_arn=..., vpc_config=...)   # auto-named by Pulumi
    gpu = GpuPools("gpu", spec="stacks/gpustack.yaml", target="aws-prod", cluster=cluster)
    pulumi.export("gpu_pools", gpu.pool_names)

The spec is compiled exactly as `gpustack plan` compiles it; the pools are children of the component,
and inherit its provider options (`opts=pulumi.ResourceOptions(providers=[...])`). `cluster` is the
program's cluster: the resource, or an output of its name (OKE: its id). The pools join that cluster,
whatever its physical name, and wait for it; the target's `cluster` in the spec is then only the name
the plan shows. A plain string is checked against the spec's `cluster`. Where the cloud or the
provisioner needs the cluster's name in the plan itself (`Cloud.cluster_attribute` None: OKE reads its
cluster first; `Provisioner.names_cluster`: Karpenter on EKS), the program's cluster is checked
against the spec's instead.
`kubernetes` (a provider for the cluster) declares the in-cluster layer too (GPU Operator, NVIDIA
sharing configs, auto-stop, alerts); `gpu_operator=False`, `autostop=False`, `alerts=False` leave out
the parts the cluster already runs, and `node_role` gives the pools the program's node identity
(EKS: a role ARN) instead of one gpustack creates. `gpustack.program.main()` is this component
configured from `gpustack:spec` and `gpustack:target`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pulumi

from gpustack.backends.base import POOL_ID, Backend, DeployContext, GpuNodePool
from gpustack.clouds import CLOUDS
from gpustack.clouds.base import Cloud
from gpustack.clouds.provisioner import Provisioner
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

    Leaving out what the cluster already runs (each default True, declared with `kubernetes`):
    `gpu_operator=False` declares no GPU Operator release and no namespace for it; the NVIDIA sharing
    ConfigMaps are still declared, in the namespace `gpustack render` names (gpu-operator), which is
    where the team's operator must run, its device plugin reading them (the values `gpustack render`
    writes show the keys). `autostop=False` declares no auto-stop CronJobs and their RBAC (the
    windows are then the team's to enforce; idle actions and KEDA objects stay). `alerts=False`
    declares no idle-GPU PrometheusRule. `node_role` (EKS: an IAM role ARN, e.g. `role.arn` of the
    program's own role) is the pools' node identity: no node role and no policy attachments are
    created.

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
                 gpu_operator: bool = True, autostop: bool = True, alerts: bool = True,
                 node_role: pulumi.Input[str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        if keep_root_urns:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transformations=[self._at_root]))
        super().__init__(TYPE, name, None, opts)
        self.plan, self.target = compile_target(spec, target, catalogs)
        cloud = CLOUDS.get(self.target.cloud)
        provisioner = cloud.provisioner(self.target.provisioner)
        joined, waits = (None, ()) if cluster is None else _program_cluster(self.target, cloud, provisioner, cluster)
        if node_role is not None and cloud.node_identity is None:
            raise pulumi.RunError(f"gpustack: node_role: {cloud.display_name} node pools take no identity of their "
                                  "own from gpustack; remove node_role")
        context = DeployContext(kubernetes=kubernetes, parent=self, depends_on=waits, cluster=joined,
                                node_role=node_role)
        backend = cast(Backend, cloud.part(provisioner.backend))
        self.pools: Mapping[str, GpuNodePool] = backend.declare(self.target, self.plan, context)
        if kubernetes is not None:
            from gpustack.backends import kubernetes as in_cluster

            # A priority-expander ConfigMap may name the node pools by id, known only from the backend.
            in_cluster.declare(self.target, self.plan, kubernetes,
                               {n: c.outputs[POOL_ID] for n, c in self.pools.items()}, parent=self,
                               merge_priorities=merge_priority_expander,
                               leave_out=_left_out(gpu_operator=gpu_operator, autostop=autostop, alerts=alerts))
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


def _left_out(*, gpu_operator: bool, autostop: bool, alerts: bool) -> frozenset[str]:
    from gpustack.render import ALERTS, AUTOSTOP, GPU_OPERATOR

    return frozenset(part for part, kept in ((GPU_OPERATOR, gpu_operator), (AUTOSTOP, autostop), (ALERTS, alerts))
                     if not kept)


def _program_cluster(target: TargetPlan, cloud: Cloud, provisioner: Provisioner,
                     cluster: pulumi.Input[str] | pulumi.Resource
                     ) -> tuple[pulumi.Input[str] | None, tuple[pulumi.Input[pulumi.Resource], ...]]:
    """The cluster the pools join (None: the spec's) and what they wait for. A resource or an output is
    taken as it is (its physical name is the program's, often auto-named); a plain string is checked
    against the spec, and so is everything where the plan itself needs the spec's name."""
    if isinstance(cluster, str):
        _check(target, [cluster])
        return None, ()
    if cloud.cluster_attribute is None or provisioner.names_cluster is not None:
        return None, _checked_cluster(target, cluster)
    if isinstance(cluster, pulumi.Resource):
        return cast("pulumi.Output[str]", getattr(cluster, cloud.cluster_attribute)), (cluster,)
    return cluster, ()


def _checked_cluster(target: TargetPlan,
                     cluster: pulumi.Input[str] | pulumi.Resource) -> tuple[pulumi.Output[Any], ...]:
    """The program's cluster, checked against the one the spec names. A resource matches by its name or
    its id."""
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
    cloud = CLOUDS.get(target.cloud)
    why = cloud.provisioner(target.provisioner).names_cluster or (
        f"{cloud.display_name} pools are planned onto the cluster the spec names" if cloud.cluster_attribute is None
        else "a name given as a string must be the spec's; pass the cluster resource to join it as it is")
    raise pulumi.RunError(f"gpustack: target {target.name!r} names cluster {wanted!r} in the spec, but the program "
                          f"passes {shown} ({why}): set the target's `cluster` in the spec to it, or pass the cluster "
                          "the spec names")
