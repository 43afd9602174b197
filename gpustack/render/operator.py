"""The NVIDIA GPU Operator: the pinned chart and the Helm values gpustack installs it with.

Chart `gpu-operator` from NVIDIA's Helm repository (install guide:
https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/install-gpu-operator.html).
Value keys, checked against deployments/gpu-operator/values.yaml at the pinned tag (CHART_VALUE_KEYS;
the tests hold that file, unchanged, in tests/charts and check every key gpustack sets, and its shape, there). ServiceMonitor relabelings are
prometheus-operator RelabelConfigs (camelCase keys: the ClusterPolicy field is `[]*promv1.RelabelConfig`).

Decisions, from the cloud's facts and the plan only:
- the operator runs unless the cloud shares GPUs natively in every mode (it then runs its own
  device plugin, e.g. GKE);
- `driver.enabled` and `toolkit.enabled` are off where the cloud's node images carry the NVIDIA
  driver and the container toolkit (`Cloud.image_has_gpu_driver`, `image_has_container_toolkit`,
  each stated with its source in the cloud's bundle);
- the MIG manager is off where the node pool partitions MIG itself (AKS gpuInstanceProfile), so the
  operator never repartitions those nodes;
- the operator's daemonsets (and node-feature-discovery, which finds the GPU nodes) tolerate every
  taint the plan puts on GPU nodes, spot taints included.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpustack.clouds import Cloud
from gpustack.plan.model import TargetPlan
from gpustack.render import nvidia
from gpustack.spec.model import SHARING_MODES

CHART = "gpu-operator"
CHART_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
# The pinned chart version (NGC chart versions carry a leading "v"): the current release, tag v26.7.0 of
# NVIDIA/gpu-operator (commit 10ee5b3638b89e11e949412aafa5ba99279c3721, 2026-08-20; the v26.3.x line
# before it). Moving the pin means re-reading CHART_VALUES_SOURCE at the new tag and CHART_VALUE_KEYS.
CHART_VERSION = "v26.7.0"
CHART_VALUES_SOURCE = ("https://github.com/NVIDIA/gpu-operator/blob/v26.7.0/deployments/gpu-operator/values.yaml")
# Every value path gpustack sets, as present in CHART_VALUES_SOURCE (a leaf, or a list / map it replaces).
CHART_VALUE_KEYS = frozenset({
    "driver.enabled", "toolkit.enabled", "mig.strategy",
    "devicePlugin.enabled", "devicePlugin.config.name", "devicePlugin.config.default",
    "migManager.enabled", "migManager.config.name", "migManager.config.default",
    "dcgmExporter.enabled", "dcgmExporter.serviceMonitor.enabled", "dcgmExporter.serviceMonitor.honorLabels",
    "dcgmExporter.serviceMonitor.relabelings",
    "daemonsets.tolerations", "node-feature-discovery.worker.tolerations",
})
NAMESPACE = "gpu-operator"
RELEASE_NAME = "gpu-operator"
# Label DCGM series with the node they come from: the alert joins it with the node's pool label.
NODE_RELABELING = {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}
# node-feature-discovery's worker tolerates control-plane nodes by default (its
# node-feature-discovery.worker.tolerations in CHART_VALUES_SOURCE); a list value replaces the default,
# so it is repeated here (the chart's nvidia.com/gpu toleration comes with the plan's taints).
_CONTROL_PLANE_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
]


@dataclasses.dataclass(frozen=True)
class HelmRelease:
    name: str
    namespace: str
    chart: str
    repository: str
    version: str
    values: dict[str, Any]


def operator_needed(cloud: Cloud) -> bool:
    """False where the node pool itself configures every sharing mode: that cloud runs its own
    device plugin, and a second one would advertise the same GPUs twice."""
    shared_modes = {m for m in SHARING_MODES if m not in ("none", "fractional")}  # fractional: HAMi's plugin
    return not shared_modes <= cloud.native_sharing


def tolerations(target: TargetPlan) -> list[dict[str, str]]:
    """Tolerate every taint the plan puts on GPU nodes, whatever its value."""
    keys = sorted({(t.key, t.effect) for pool in target.pools for t in pool.taints})
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in keys]


def values(target: TargetPlan, cloud: Cloud) -> dict[str, Any]:
    node_tolerations = tolerations(target)
    mig_manager: dict[str, Any] = {"enabled": not cloud.native_mig_partitioning}
    if mig_manager["enabled"] and nvidia.mig_parted_pools(target):
        mig_manager["config"] = {"name": nvidia.MIG_PARTED_CONFIGMAP, "default": nvidia.ALL_DISABLED}
    return {
        "driver": {"enabled": not cloud.image_has_gpu_driver},
        "toolkit": {"enabled": not cloud.image_has_container_toolkit},
        "mig": {"strategy": nvidia.mig_strategy(target)},
        # A DRA target runs NVIDIA's DRA driver instead (dra_driver.py), which refuses to share nodes with it.
        "devicePlugin": ({"enabled": False} if target.gpu_allocation == "dra" else
                         {"config": {"name": nvidia.DEVICE_PLUGIN_CONFIGMAP, "default": nvidia.DEFAULT_CONFIG}}),
        "migManager": mig_manager,
        "dcgmExporter": {
            "enabled": True,
            # honorLabels keeps the exporter's own pod/namespace labels (the workload using the
            # GPU) instead of renaming them exported_pod/exported_namespace.
            "serviceMonitor": {"enabled": True, "honorLabels": True, "relabelings": [dict(NODE_RELABELING)]},
        },
        "daemonsets": {"tolerations": node_tolerations},
        "node-feature-discovery": {"worker": {"tolerations": _CONTROL_PLANE_TOLERATIONS + node_tolerations}},
    }


def release(target: TargetPlan, cloud: Cloud) -> HelmRelease | None:
    if not operator_needed(cloud):
        return None
    return HelmRelease(RELEASE_NAME, NAMESPACE, CHART, CHART_REPOSITORY, CHART_VERSION, values(target, cloud))


def install_command(release: HelmRelease, values_file: str) -> str:
    """The Helm command that installs `release` with the rendered values file."""
    return (f"helm upgrade --install {release.name} {release.chart} --repo {release.repository} "
            f"--version {release.version} --namespace {release.namespace} --values {values_file}")
