"""DRA as the cluster sees it: the ResourceSlices NVIDIA's DRA driver publishes for a node, the scheduler's
allocation of a claim against them, and which autoscalers can grow a DRA pool from zero nodes.

ResourceSlices follow NVIDIA/k8s-dra-driver-gpu v25.12.0: a whole GPU is the device `gpu-<minor>` with
attributes type=gpu, uuid, productName, brand, architecture (cmd/gpu-kubelet-plugin/partitions.go,
PartDevAttributes); a MIG device `gpu-<minor>-mig-<profile>-<n>` has type=mig, uuid, parentUUID, profile and its
parent's productName (deviceinfo.go, MigDeviceInfo.GetDevice); the driver name is gpu.nvidia.com. The
DeviceClasses are the chart's (templates/deviceclass-gpu.yaml, deviceclass-mig.yaml). productName is NVML's
device name; the names per GPU model are independent of the claims' patterns (nvidia-smi's names).

Allocation follows the scheduler's structured-parameters allocator (kubernetes
staging/src/k8s.io/dynamic-resource-allocation/structured/allocator.go): a request is met by `count` devices
of one node's slices that match the DeviceClass's selectors and all of the request's, each device in at most
one claim (no device here allows multiple allocations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import celpy

DRIVER = "gpu.nvidia.com"
DEVICE_CLASSES = {  # deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-*.yaml at v25.12.0
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
}
# What nvidia-smi -L prints per GPU model (NVML's nvmlDeviceGetName): e.g. the driver's README at v25.12.0
# shows "NVIDIA A100-SXM4-40GB".
NVML_NAMES = {
    "T4": "Tesla T4", "L4": "NVIDIA L4", "A10G": "NVIDIA A10G", "A10": "NVIDIA A10", "L40S": "NVIDIA L40S",
    "V100": "Tesla V100-SXM2-16GB", "A100-40GB": "NVIDIA A100-SXM4-40GB", "A100-80GB": "NVIDIA A100-SXM4-80GB",
    "H100": "NVIDIA H100 80GB HBM3", "H100-NVL": "NVIDIA H100 NVL", "H200": "NVIDIA H200", "B200": "NVIDIA B200",
    "RTX-PRO-6000": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
}
ARCHITECTURES = {"T4": "Turing", "L4": "Ada Lovelace", "L40S": "Ada Lovelace", "V100": "Volta", "H100": "Hopper",
                 "H100-NVL": "Hopper", "H200": "Hopper", "B200": "Blackwell", "RTX-PRO-6000": "Blackwell"}


def _gpu_attributes(gpu: str, minor: int, node: str) -> dict[str, Any]:
    return {"type": "gpu", "uuid": f"GPU-{node}-{minor}", "productName": NVML_NAMES[gpu], "brand": "Nvidia",
            "architecture": ARCHITECTURES.get(gpu, "Ampere")}


def resource_slice(node: str, gpu: str, gpus: int, mig: Sequence[tuple[Mapping[str, int], int]] = ()) -> dict[str, Any]:
    """The ResourceSlice of one node: `gpus` GPUs of model `gpu`; the first GPUs cut by `mig` (layout, GPUs
    with it) publish their MIG devices instead of themselves (a MIG-enabled GPU is not allocatable whole)."""
    devices = []
    minor = 0
    for layout, count in mig:
        for _ in range(count):
            parent = _gpu_attributes(gpu, minor, node)
            for profile, instances in sorted(layout.items()):
                for n in range(instances):
                    devices.append({"name": f"gpu-{minor}-mig-{profile}-{n}", "attributes": {
                        "type": "mig", "uuid": f"MIG-{node}-{minor}-{profile}-{n}", "parentUUID": parent["uuid"],
                        "profile": profile, "productName": parent["productName"], "brand": parent["brand"],
                        "architecture": parent["architecture"]}})
            minor += 1
    while minor < gpus:
        devices.append({"name": f"gpu-{minor}", "attributes": _gpu_attributes(gpu, minor, node)})
        minor += 1
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": d["name"], "attributes": {k: {"string": v} for k, v in d["attributes"].items()}}
                                 for d in devices]}}


def _device_env(device: Mapping[str, Any]) -> dict[str, Any]:
    attributes = {k: v["string"] for k, v in device["attributes"].items()}
    return {"device": celpy.json_to_cel({"driver": DRIVER, "attributes": {DRIVER: attributes}})}


def matches(expression: str, device: Mapping[str, Any]) -> bool:
    env = celpy.Environment()
    result = env.program(env.compile(expression)).evaluate(_device_env(device))
    assert isinstance(result, celpy.celtypes.BoolType), (expression, result)
    return bool(result)


def allocatable(claim_spec: Mapping[str, Any], slices: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the claim's every request is met on one node of `slices` (each node's slice checked alone)."""
    for slice_ in slices:
        free = list(slice_["spec"]["devices"])
        met = True
        for request in claim_spec["devices"]["requests"]:
            exactly = request["exactly"]
            selectors = [DEVICE_CLASSES[exactly["deviceClassName"]],
                         *(s["cel"]["expression"] for s in exactly.get("selectors", []))]
            fitting = [d for d in free if all(matches(e, d) for e in selectors)]
            if len(fitting) < exactly.get("count", 1):
                met = False
                break
            for device in fitting[: exactly.get("count", 1)]:
                free.remove(device)
        if met:
            return True
    return False


# -- Scale from zero: what each autoscaler knows of a DRA node that does not exist yet ------------------
# The upstream Cluster Autoscaler simulates a scale-up on the node group's template NodeInfo; its AWS, Azure
# and OCI providers build that template without ResourceSlices (framework.NewNodeInfo(node, nil, ...) in their
# TemplateNodeInfo; kubernetes/autoscaler#7799), so a claim finds no device and no group is grown. GKE's
# autoscaler adds the slices the NVIDIA driver would publish to the template of a node pool labelled
# cloud.google.com/gke-nvidia-gpu-dra-driver=true (cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra).
# Karpenter (AWS provider, settings.enableDRA) evaluates claims against per-instance-type device metadata
# (karpenter.sh/docs/tasks/dra).
GKE_DRA_LABEL = "cloud.google.com/gke-nvidia-gpu-dra-driver"


def template_slices(autoscaler: str, node: str, gpu: str, gpus: int, labels: Mapping[str, str],
                    mig: Sequence[tuple[Mapping[str, int], int]] = (), enable_dra: bool = False) -> list[dict[str, Any]]:
    """The ResourceSlices an autoscaler's template node of a pool at zero carries."""
    if autoscaler == "cluster-autoscaler":
        return []
    if autoscaler == "gke-cluster-autoscaler":
        return [resource_slice(node, gpu, gpus, mig)] if labels.get(GKE_DRA_LABEL) == "true" else []
    if autoscaler == "karpenter-aws":
        return [resource_slice(node, gpu, gpus, mig)] if enable_dra else []
    raise ValueError(autoscaler)


def scales_from_zero(autoscaler: str, claim_spec: Mapping[str, Any], gpu: str, gpus: int, labels: Mapping[str, str],
                     mig: Sequence[tuple[Mapping[str, int], int]] = (), enable_dra: bool = False) -> bool:
    return allocatable(claim_spec, template_slices(autoscaler, "template", gpu, gpus, labels, mig, enable_dra))


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """k8s.io/component-helpers nodeaffinity: one NodeSelectorRequirement against a node's labels."""
    key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError(operator)


def schedulable(pod_spec: Mapping[str, Any], node_labels: Mapping[str, str], node_taints: Sequence[Mapping[str, str]],
                claim_spec: Mapping[str, Any], slices: Sequence[Mapping[str, Any]]) -> bool:
    """The scheduler's filters a DRA pod meets on a node: NodeAffinity (nodeSelector and required terms, any
    term), TaintToleration (NoSchedule / NoExecute), and DynamicResources (the claim allocated from the node's
    slices)."""
    if any(node_labels.get(k) != v for k, v in pod_spec.get("nodeSelector", {}).items()):
        return False
    required = pod_spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required and not any(all(_expression_holds(e, node_labels) for e in term.get("matchExpressions", []))
                            for term in required["nodeSelectorTerms"]):
        return False
    tolerations = pod_spec.get("tolerations", [])
    for taint in node_taints:
        if taint["effect"] == "PreferNoSchedule":
            continue
        if not any((not t.get("key") or t["key"] == taint["key"]) and (not t.get("effect") or t["effect"] == taint["effect"])
                   and (t.get("operator") == "Exists" or t.get("value", "") == taint["value"]) for t in tolerations):
            return False
    return allocatable(claim_spec, slices)
