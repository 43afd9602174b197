"""The Pulumi program: `gpustack.program.main()` declares every resource of one target.

It reads two Pulumi config keys, compiles the spec to a plan exactly as `gpustack plan` does, and
hands the target to the backend of its provisioner (a module of the cloud's bundle) with a
`DeployContext` (the Kubernetes provider, when the in-cluster layer is declared). The
provider SDKs are imported only here and below.

    gpustack:spec    path of the spec, relative to the Pulumi project (e.g. stacks/gpustack.yaml)
    gpustack:target  the target name in that spec (one stack per target)
    gpustack:kubeconfig  (secret, optional) the cluster's kubeconfig: with it, the in-cluster layer
                     (GPU Operator, dev auto-stop CronJobs, idle-GPU alerts) is declared too;
                     without it that layer is skipped, with a message (`gpustack render` writes
                     the same objects as YAML for GitOps)
"""

from __future__ import annotations

from typing import cast

import pulumi

from gpustack.backends.base import POOL_ID, Backend, DeployContext
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.plan import Plan, build_plan
from gpustack.plan.model import TargetPlan
from gpustack.spec import load_spec


def compile_target(spec_path: str, target_name: str) -> tuple[Plan, TargetPlan]:
    """The plan and the target to deploy; bad input becomes a RunError (a message, no traceback)."""
    try:
        plan = build_plan(load_spec(spec_path))
    except SpecError as exc:
        raise pulumi.RunError(f"gpustack: the spec has problems:\n{exc}") from None
    names = [t.name for t in plan.targets]
    if target_name not in names:
        raise pulumi.RunError(f"gpustack: no target {target_name!r} in {spec_path}; targets: {', '.join(names)}")
    return plan, plan.target(target_name)


def main() -> None:
    config = pulumi.Config("gpustack")
    plan, target = compile_target(config.require("spec"), config.require("target"))
    context = deploy_context(config)
    cloud = CLOUDS.get(target.cloud)
    backend = cast(Backend, cloud.part(cloud.provisioner(target.provisioner).backend))
    pools = backend.declare(target, plan, context)
    if context.kubernetes is not None:
        from gpustack.backends import kubernetes

        # A priority-expander ConfigMap may name the node pools by id, known only from the backend.
        kubernetes.declare(target, plan, context.kubernetes, {name: c.outputs[POOL_ID] for name, c in pools.items()})
    pulumi.export("target", target.name)
    pulumi.export("cloud", target.cloud)
    pulumi.export("pools", {name: component.outputs for name, component in sorted(pools.items())})
    pulumi.export("gpus", {"baseline": target.gpus.baseline, "required": target.gpus.required,
                           "provisioned": target.gpus.provisioned})
    pulumi.export("estimated_monthly_cost_usd", round(target.cost.planned_monthly_usd, 2))


def deploy_context(config: pulumi.Config) -> DeployContext:
    """The Kubernetes provider of the in-cluster layer when gpustack:kubeconfig is set, else a message."""
    kubeconfig = config.get_secret("kubeconfig")
    if kubeconfig is None:
        pulumi.log.info("gpustack: gpustack:kubeconfig is not set, so the in-cluster layer (GPU Operator, "
                        "auto-stop CronJobs, idle-GPU alerts) is not declared; set it with `pulumi config set "
                        "--secret gpustack:kubeconfig ...`, or apply the output of `gpustack render`")
        return DeployContext()
    from gpustack.backends import kubernetes

    return DeployContext(kubernetes.provider(kubeconfig))
