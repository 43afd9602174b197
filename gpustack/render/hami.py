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
  most replicas the plan can put on one GPU (`gpustack.plan.offers.hami_split`), so HAMi never
  refuses a packing the plan counts on.

What HAMi needs from the GPU Operator: no second device plugin on its nodes. The operator's
plugin stays on the other GPU pools and stays off the fractional ones through their node label
`nvidia.com/gpu.deploy.device-plugin=false` (gpustack.plan.pools.FRACTIONAL_NODE_LABELS); the
operator's DCGM exporter keeps running there. Pods ask for `nvidia.com/gpu: 1` with
`nvidia.com/gpucores` and `nvidia.com/gpumem-percentage` (the plan's pod requests,
`gpustack.plan.offers`), and are scheduled by `hami-scheduler`, which the chart's admission webhook
sets on pods that ask for those resources.
"""

from __future__ import annotations

from typing import Any

from gpustack.plan import offers
from gpustack.plan.model import TargetPlan
from gpustack.render import operator
from gpustack.render.operator import HelmRelease

CHART = "hami"
CHART_REPOSITORY = "https://project-hami.github.io/HAMi/"
CHART_VERSION = "2.10.0"
NAMESPACE = "kube-system"  # where the README installs it
RELEASE_NAME = "hami"
NODE_SELECTOR = {"gpu": "on"}


def values(target: TargetPlan) -> dict[str, Any]:
    return {"devicePlugin": {"deviceSplitCount": offers.hami_split(target.pools),
                             "nvidiaNodeSelector": dict(NODE_SELECTOR), "tolerations": operator.tolerations(target)}}


def release(target: TargetPlan) -> HelmRelease | None:
    if not any(p.sharing.mode == "fractional" for p in target.pools):
        return None
    return HelmRelease(RELEASE_NAME, NAMESPACE, CHART, CHART_REPOSITORY, CHART_VERSION, values(target))
