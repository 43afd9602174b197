"""HAMi: the Helm release that enforces GPU fractions on the pools with `sharing: fractional`.

Chart `hami` from HAMi's Helm repository, pinned (install steps: Project-HAMi/HAMi README,
https://github.com/Project-HAMi/HAMi#quick-start; chart version in charts/hami/Chart.yaml at tag
v2.10.0, commit 4707fb02). Value keys, from charts/hami/values.yaml and the device plugin's
DaemonSet template charts/hami/templates/device-plugin/daemonsetnvidia.yaml:
- `devicePlugin.nvidiaNodeSelector`: the nodes HAMi's device plugin runs on; gpustack labels the
  fractional pools' nodes `gpu=on` (the chart's default selector), and nothing else;
- `devicePlugin.tolerations`: replaced by every taint the plan puts on GPU nodes (the chart's
  default tolerates only nvidia.com/gpu), spot taints included;
- `devicePlugin.deviceSplitCount`: how many pods share one GPU at most (default 10): set to the
  most replicas the plan can put on one GPU, so HAMi never refuses a packing the plan counts on.

What HAMi needs from the GPU Operator: no second device plugin on its nodes. The operator's
plugin stays on the other GPU pools and stays off the fractional ones through their node label
`nvidia.com/gpu.deploy.device-plugin=false` (gpustack.plan.pools.FRACTIONAL_NODE_LABELS); the
operator's DCGM exporter keeps running there. Pods ask for `nvidia.com/gpu: 1` with
`nvidia.com/gpucores` (percent of the GPU) and `nvidia.com/gpumem` (MiB), and are scheduled by
`hami-scheduler`, which the chart's admission webhook sets on pods that ask for those resources.
"""

from __future__ import annotations

from typing import Any

from gpustack.plan.model import TargetPlan
from gpustack.render import operator
from gpustack.render.operator import HelmRelease

CHART = "hami"
CHART_REPOSITORY = "https://project-hami.github.io/HAMi/"
CHART_VERSION = "2.10.0"
NAMESPACE = "kube-system"  # where the README installs it
RELEASE_NAME = "hami"
NODE_SELECTOR = {"gpu": "on"}
# HAMi's resource names (charts/hami/values.yaml resourceName / resourceCores / resourceMem).
GPU_RESOURCE = "nvidia.com/gpu"
CORES_RESOURCE = "nvidia.com/gpucores"
MEMORY_RESOURCE = "nvidia.com/gpumem"
DEFAULT_SPLIT_COUNT = 10


def fractional_pools(target: TargetPlan) -> list:  # type: ignore[type-arg]
    return [p for p in target.pools if p.sharing.mode == "fractional"]


def split_count(target: TargetPlan) -> int:
    """The most replicas one GPU of a fractional pool can hold: 100 over the smallest percent."""
    smallest = min((round(pl.gpu_share * 100) for p in fractional_pools(target) for pl in p.placements), default=0)
    return max(DEFAULT_SPLIT_COUNT, 100 // smallest) if smallest else DEFAULT_SPLIT_COUNT


def values(target: TargetPlan) -> dict[str, Any]:
    return {"devicePlugin": {"deviceSplitCount": split_count(target), "nvidiaNodeSelector": dict(NODE_SELECTOR),
                             "tolerations": operator.tolerations(target)}}


def release(target: TargetPlan) -> HelmRelease | None:
    if not fractional_pools(target):
        return None
    return HelmRelease(RELEASE_NAME, NAMESPACE, CHART, CHART_REPOSITORY, CHART_VERSION, values(target))


def pod_resources(gpu_share: float, gpu_memory_mib: int) -> dict[str, int]:
    """The limits one replica of a fractional pool asks HAMi for: one GPU, its percent, its memory."""
    percent = round(gpu_share * 100)
    return {GPU_RESOURCE: 1, CORES_RESOURCE: percent, MEMORY_RESOURCE: gpu_memory_mib * percent // 100}
