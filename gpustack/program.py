"""The Pulumi program: `gpustack.program.main()` declares every resource of one target.

It reads the Pulumi config keys below and declares the target with `gpustack.pulumi.GpuPools`, the
component a program of your own uses next to its cluster. The provider SDKs are imported only here
and below.

    gpustack:spec    path of the spec, relative to the Pulumi project (e.g. stacks/gpustack.yaml)
    gpustack:target  the target name in that spec (one stack per target)
    gpustack:kubeconfig  (secret, optional) the cluster's kubeconfig: with it, the in-cluster layer
                     (GPU Operator, dev auto-stop CronJobs, idle-GPU alerts) is declared too;
                     without it that layer is skipped, with a message (`gpustack render` writes
                     the same objects as YAML for GitOps)
    gpustack:priorityExpander  (optional) `create` (default): gpustack creates the Cluster Autoscaler's
                     priority-expander ConfigMap, and the deployment stops if the cluster has one;
                     `merge`: the cluster's own is read and patched with gpustack's entries merged in
"""

from __future__ import annotations

import pulumi

from gpustack.backends.base import DeployContext
from gpustack.errors import did_you_mean
from gpustack.pulumi import GpuPools, compile_target

__all__ = ["GpuPools", "compile_target", "deploy_context", "main"]

PRIORITY_EXPANDER_CHOICES = ("create", "merge")


def main() -> None:
    """One stack per target: the `GpuPools` component, configured from the stack's config."""
    config = pulumi.Config("gpustack")
    target_name = config.require("target")
    kubernetes = deploy_context(config).kubernetes
    # The stack declared the pools at its root before the component existed: their URNs stay.
    pools = GpuPools(target_name, spec=config.require("spec"), target=target_name, kubernetes=kubernetes,
                     keep_root_urns=True, merge_priority_expander=_merge_priorities(config))
    target = pools.target
    pulumi.export("target", target.name)
    pulumi.export("cloud", target.cloud)
    pulumi.export("pools", {name: component.outputs for name, component in sorted(pools.pools.items())})
    pulumi.export("gpus", {"baseline": target.gpus.baseline, "required": target.gpus.required,
                           "provisioned": target.gpus.provisioned})
    pulumi.export("estimated_monthly_cost_usd", round(target.cost.planned_monthly_usd, 2))


def _merge_priorities(config: pulumi.Config) -> bool:
    """gpustack:priorityExpander as a choice: merge into the cluster's ConfigMap, or create one."""
    choice = config.get("priorityExpander") or "create"
    if choice not in PRIORITY_EXPANDER_CHOICES:
        raise pulumi.RunError(f"gpustack:priorityExpander is {choice!r}; expected one of "
                              f"{', '.join(PRIORITY_EXPANDER_CHOICES)}{did_you_mean(choice, PRIORITY_EXPANDER_CHOICES)}")
    return choice == "merge"


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
