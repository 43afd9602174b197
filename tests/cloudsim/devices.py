"""What a running node of a pool really advertises and carries: the device plugin's view of its GPUs
(from the rendered device-plugin and mig-parted configs and the operator's MIG strategy, or the cloud's
own partitioning), and the labels the cloud puts on it. Nothing here reads the plan.

NVIDIA k8s-device-plugin (README, "Configuration Option Details"; api/config/v1): time-slicing and MPS
advertise `replicas` x GPUs as nvidia.com/gpu; MIG devices are nvidia.com/mig-<profile> under the
`mixed` strategy and nvidia.com/gpu under `single`, which needs every GPU of the node partitioned with
one profile (otherwise the plugin advertises nothing usable; modelled as nothing at all). The GPU
Operator passes its `mig.strategy` to every plugin as MIG_STRATEGY, which beats the config file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from cloudsim.templates import AZURE_GPU_LABEL, GCE_GPU_LABEL, gke_partitions
from gpustack.catalog import InstanceType, load_catalog

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# AKS gpuInstanceProfile -> the profile shape AKS cuts every GPU into
# (https://learn.microsoft.com/en-us/azure/aks/gpu-multi-instance).
_AKS_PROFILES = {"MIG1g": "1g", "MIG2g": "2g", "MIG3g": "3g", "MIG4g": "4g", "MIG7g": "7g"}


def declared_labels(cloud: str, node_pool: Mapping[str, Any]) -> dict[str, str]:
    inputs = node_pool["inputs"]
    if cloud == "aws":
        return dict(inputs.get("labels") or {})
    if cloud == "azure":
        return dict(inputs.get("nodeLabels") or {})
    if cloud == "gcp":
        return dict(inputs["nodeConfig"].get("labels") or {})
    return {item["key"]: item["value"] for item in inputs.get("initialNodeLabels") or ()}


def node_labels(cloud: str, node_pool: Mapping[str, Any]) -> dict[str, str]:
    """The labels a running node carries: the declared ones and the GPU label where the cloud sets it
    (AKS: kubernetes.azure.com/accelerator=nvidia, https://learn.microsoft.com/en-us/azure/aks/use-labels;
    GKE: cloud.google.com/gke-accelerator, https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).
    EKS and OKE add no GPU label."""
    labels = declared_labels(cloud, node_pool)
    if cloud == "azure":
        labels[AZURE_GPU_LABEL] = "nvidia"
    if cloud == "gcp":
        labels[GCE_GPU_LABEL] = node_pool["inputs"]["nodeConfig"]["guestAccelerators"][0]["type"]
    return labels


def _config_map(objects: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, str]:
    found = [o for o in objects if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == name]
    return found[0]["data"] if found else {}


def _aks_layout(gpu: str, profile_key: str, gpus: int) -> list[Counter[str]]:
    model = load_catalog().gpu(gpu)
    assert model is not None and model.mig is not None
    shape = _AKS_PROFILES[profile_key]
    candidates = [p for p in model.mig.profile_names if p.split(".")[0] == shape and "+" not in p]
    profile = min(candidates, key=lambda p: float(p.split(".")[1].removesuffix("gb")))
    count = model.mig.profile(profile).shape.max_count  # type: ignore[union-attr]
    return [Counter({profile: count}) for _ in range(gpus)]


def _mig_parted_layout(config: list[Mapping[str, Any]], gpus: int) -> list[Counter[str]]:
    layout: list[Counter[str]] = [Counter() for _ in range(gpus)]
    for entry in config:
        devices = range(gpus) if entry["devices"] == "all" else entry["devices"]
        for index in devices:
            if entry.get("mig-enabled"):
                layout[index] = Counter(entry.get("mig-devices") or {})
    return layout


def advertised(cloud: str, node_pool: Mapping[str, Any], row: InstanceType,
               objects: Sequence[Mapping[str, Any]], operator_values: Mapping[str, Any] | None) -> dict[str, int]:
    """The extended resources a ready node of `node_pool` advertises."""
    if cloud == "gcp":  # GKE's own device plugin: partitions x shared clients, all nvidia.com/gpu
        [accelerator] = node_pool["inputs"]["nodeConfig"]["guestAccelerators"]
        clients = int((accelerator.get("gpuSharingConfig") or {}).get("maxSharedClientsPerGpu") or 1)
        return {"nvidia.com/gpu": int(accelerator["count"]) * gke_partitions(row.gpu, accelerator.get("gpuPartitionSize"))
                * clients}
    labels = declared_labels(cloud, node_pool)
    strategy = ((operator_values or {}).get("mig") or {}).get("strategy", "single")
    plugin_configs = _config_map(objects, "gpustack-device-plugin-config")
    plugin = yaml.safe_load(plugin_configs.get(labels.get(DEVICE_PLUGIN_CONFIG_LABEL, "default"), "") or "{}") or {}
    sharing = plugin.get("sharing") or {}
    replicas = 1
    for mode in ("timeSlicing", "mps"):
        for resource in (sharing.get(mode) or {}).get("resources") or ():
            if resource["name"] == "nvidia.com/gpu":
                replicas = int(resource["replicas"])
    profile_key = node_pool["inputs"].get("gpuInstanceProfile") if cloud == "azure" else None
    if profile_key:
        layout = _aks_layout(row.gpu, profile_key, row.gpus)
    elif MIG_CONFIG_LABEL in labels:
        parted = yaml.safe_load(_config_map(objects, "gpustack-mig-parted-config").get("config.yaml", "") or "{}")
        layout = _mig_parted_layout(parted["mig-configs"][labels[MIG_CONFIG_LABEL]], row.gpus)
    else:
        layout = [Counter() for _ in range(row.gpus)]
    whole = sum(1 for gpu in layout if not gpu)
    devices: Counter[str] = Counter()
    for gpu in layout:
        devices.update(gpu)
    if not devices:
        return {"nvidia.com/gpu": row.gpus * replicas}
    if strategy == "single":
        if whole or len(devices) > 1:
            return {}  # single needs one profile on every GPU: the plugin exposes nothing usable
        return {"nvidia.com/gpu": sum(devices.values())}
    out = {f"nvidia.com/mig-{profile}": count for profile, count in devices.items()}
    if whole:
        out["nvidia.com/gpu"] = whole * replicas
    return out
