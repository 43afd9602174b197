"""NVIDIA's DRA driver for GPUs on a DRA target: the pinned chart and the Helm values gpustack installs it with.

Chart `nvidia-dra-driver-gpu` from NVIDIA's Helm repository, NVIDIA/k8s-dra-driver-gpu tag v25.12.0
(CHART_VALUES_SOURCE; the tests hold that values.yaml, unchanged, in tests/charts and check every key set
here against it). Decisions, from the plan and the cloud's facts:
- `gpuResourcesEnabledOverride: true`: the chart refuses to publish GPUs unless told the device plugin is
  off on those nodes (templates/validation.yaml); gpustack turns the GPU Operator's device plugin off on DRA
  targets (operator.py), so that holds;
- `nvidiaDriverRoot`: where the NVIDIA driver lives on the node: `/` where the node image carries it, the
  GPU Operator's `/run/nvidia/driver` where the operator installs it, or what the cloud's DRA guide says
  (`DraSupport.driver_root`);
- `resources.computeDomains.enabled: false`: gpustack plans no multi-node NVLink domains;
- `featureGates`: the alpha gates the plan's sharing needs (TimeSlicingSettings, MPSSupport);
- the kubelet plugin runs on gpustack's GPU pools (node affinity on `gpustack.dev/pool`) and tolerates their
  taints.
"""

from __future__ import annotations

from typing import Any

from gpustack.clouds import Cloud
from gpustack.plan.model import TargetPlan
from gpustack.plan.pools import POOL_LABEL
from gpustack.render import operator
from gpustack.render.operator import HelmRelease

CHART = "nvidia-dra-driver-gpu"
CHART_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
CHART_VERSION = "25.12.0"
CHART_VALUES_SOURCE = ("https://github.com/NVIDIA/k8s-dra-driver-gpu/blob/v25.12.0/deployments/helm/"
                       "nvidia-dra-driver-gpu/values.yaml")
CHART_VALUE_KEYS = frozenset({
    "gpuResourcesEnabledOverride", "nvidiaDriverRoot", "resources.computeDomains.enabled", "featureGates",
    "kubeletPlugin.tolerations", "kubeletPlugin.affinity",
})
NAMESPACE = "nvidia-dra-driver-gpu"
RELEASE_NAME = "nvidia-dra-driver-gpu"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"  # where the GPU Operator's driver container installs the driver


def driver_root(cloud: Cloud, target: TargetPlan) -> str:
    support = cloud.provisioner(target.provisioner).dra
    if support.driver_root:
        return support.driver_root
    return "/" if cloud.image_has_gpu_driver else OPERATOR_DRIVER_ROOT


def values(target: TargetPlan, cloud: Cloud) -> dict[str, Any]:
    gates = sorted({r.claim.feature_gate for r in target.pod_requests if r.claim and r.claim.feature_gate})
    pools = sorted(p.name for p in target.pools if p.gpus_per_node)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": pools}]}]}}}
    return {
        "gpuResourcesEnabledOverride": True,
        "nvidiaDriverRoot": driver_root(cloud, target),
        "resources": {"computeDomains": {"enabled": False}},
        "featureGates": dict.fromkeys(gates, True),
        "kubeletPlugin": {"tolerations": operator.tolerations(target), "affinity": affinity},
    }


def release(target: TargetPlan, cloud: Cloud) -> HelmRelease | None:
    if target.gpu_allocation != "dra" or not any(r.claim for r in target.pod_requests):
        return None
    return HelmRelease(RELEASE_NAME, NAMESPACE, CHART, CHART_REPOSITORY, CHART_VERSION, values(target, cloud))

