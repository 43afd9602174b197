"""The ResourceClaim each workload's pods get on a DRA target, as plan values (`PodRequest.claim`).

Facts of NVIDIA's DRA driver, NVIDIA/k8s-dra-driver-gpu at tag v25.12.0
(commit 0882da8720c28763137e0987778ec476ec4cf8df, DRIVER_SOURCE):
- DeviceClasses of its chart: `gpu.nvidia.com` selects `device.attributes['gpu.nvidia.com'].type == 'gpu'`,
  `mig.nvidia.com` selects `type == 'mig'` (deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml,
  deviceclass-mig.yaml); gpustack emits claims, not classes.
- A whole GPU publishes the string attributes type, uuid, productName, brand, architecture (and versions);
  a MIG device type=mig, uuid, parentUUID, profile and its parent's productName (cmd/gpu-kubelet-plugin/
  partitions.go PartDevAttributes, deviceinfo.go MigDeviceInfo.GetDevice). productName is NVML's device
  name (nvlib.go: device.GetName()), e.g. "NVIDIA A100-SXM4-40GB" (the driver's README at that tag).
- Sharing is the opaque config `GpuConfig` (apiVersion resource.nvidia.com/v1beta1) of a request:
  `sharing: {strategy: TimeSlicing | MPS, timeSlicingConfig: {interval}, mpsConfig:
  {defaultActiveThreadPercentage, ...}}` (api/nvidia.com/resource/v1beta1/gpuconfig.go, sharing.go); each
  strategy is accepted only with the driver's feature gate TimeSlicingSettings or MPSSupport, both alpha
  and off by default (validate.go; pkg/featuregates/featuregates.go).
- Pods share a device only by naming one ResourceClaim: a ResourceClaimTemplate gives each pod a claim, and
  so a device, of its own; the driver marks no device for multiple allocations (no AllowMultipleAllocations
  in cmd/ or pkg/), so two claims never share a GPU (demo/specs/quickstart/v1/gpu-test3.yaml shares one
  claim between two pods).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

DRIVER = "gpu.nvidia.com"
DRIVER_RELEASE = "v25.12.0"
DRIVER_SOURCE = "https://github.com/NVIDIA/k8s-dra-driver-gpu/tree/v25.12.0"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"
CONFIG_KIND = "GpuConfig"
REQUEST = "gpu"  # the one request of every claim, which the containers name
TEMPLATE = "ResourceClaimTemplate"  # one claim per pod
SHARED = "ResourceClaim"  # one claim that every pod of the workload names
STRATEGIES = {"time-slicing": "TimeSlicing", "mps": "MPS"}
FEATURE_GATES = {"time-slicing": "TimeSlicingSettings", "mps": "MPSSupport"}

# productName (NVML's device name) of each catalog GPU model, as a case-insensitive RE2 pattern over the
# whole name, each token bounded so L4 is not L40S, A10 not A10G or A100, H100 not H100 NVL. The names are
# those nvidia-smi prints for the GPU (NVML nvmlDeviceGetName), e.g. "Tesla T4", "NVIDIA L4", "NVIDIA A10G",
# "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H200".
PRODUCT_PATTERNS = {
    "T4": r"tesla t4",
    "L4": r"nvidia l4",
    "A10G": r"nvidia a10g",
    "A10": r"nvidia a10",
    "L40S": r"nvidia l40s",
    "V100": r"tesla v100-(sxm2|pcie)-(16|32)gb",
    "A100-40GB": r"nvidia a100-(sxm4|pcie)-40gb",
    "A100-80GB": r"nvidia a100(-sxm4-80gb| 80gb pcie)",
    "H100": r"nvidia h100 80gb hbm3",
    "H100-NVL": r"nvidia h100 nvl",
    "H200": r"nvidia h200",
    "B200": r"nvidia b200",
    "RTX-PRO-6000": r"nvidia rtx pro 6000 blackwell server edition",
}

# The NVML names behind each pattern (what a claim's productName is checked against in `check --manifests`,
# and what the tests' ResourceSlices publish).
PRODUCT_NAMES = {
    "T4": ("Tesla T4",),
    "L4": ("NVIDIA L4",),
    "A10G": ("NVIDIA A10G",),
    "A10": ("NVIDIA A10",),
    "L40S": ("NVIDIA L40S",),
    "V100": ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB"),
    "A100-40GB": ("NVIDIA A100-SXM4-40GB",),
    "A100-80GB": ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"),
    "H100": ("NVIDIA H100 80GB HBM3",),
    "H100-NVL": ("NVIDIA H100 NVL",),
    "H200": ("NVIDIA H200",),
    "B200": ("NVIDIA B200",),
    "RTX-PRO-6000": ("NVIDIA RTX PRO 6000 Blackwell Server Edition",),
}
NVIDIA_RESOURCE_PREFIX = "nvidia.com/"  # the device plugin's extended resources, which DRA nodes do not offer


@dataclasses.dataclass(frozen=True)
class DeviceClaim:
    """The claim of one workload: its object, its one request and the driver's sharing config."""

    name: str  # the ResourceClaimTemplate's (or shared ResourceClaim's) name, in the workload's namespace
    kind: str  # TEMPLATE | SHARED
    device_class: str  # GPU_CLASS | MIG_CLASS
    count: int  # devices per claim
    selectors: tuple[str, ...]  # CEL expressions, all of which a device must meet
    gpu: str  # the catalog GPU model the selectors pick
    profile: str | None = None  # MIG
    strategy: str | None = None  # TimeSlicing | MPS (the GpuConfig's sharing.strategy)
    mps_active_thread_percentage: int | None = None
    feature_gate: str | None = None  # the driver's alpha gate the strategy needs

    @property
    def request(self) -> str:
        return REQUEST


def attribute(name: str) -> str:
    return f"device.attributes['{DRIVER}'].{name}"


def product_selector(gpu: str) -> str | None:
    """CEL: the device is a `gpu` (None: no product name is known for the model)."""
    pattern = PRODUCT_PATTERNS.get(gpu)
    if pattern is None:
        return None
    return f"{attribute('productName')}.matches('(?i)^{pattern}$')"


def profile_selector(profile: str) -> str:
    if not re.fullmatch(r"[0-9]+g\.[0-9]+gb(\+me)?", profile):
        raise ValueError(f"not a MIG profile name: {profile!r}")
    return f"{attribute('profile')} == '{profile}'"


def claim_name(workload: str) -> str:
    return f"{workload}-gpu"


def to_json(claim: DeviceClaim) -> dict[str, Any]:
    out: dict[str, Any] = {"name": claim.name, "kind": claim.kind, "device_class": claim.device_class,
                           "count": claim.count, "selectors": list(claim.selectors), "gpu": claim.gpu}
    if claim.profile is not None:
        out["profile"] = claim.profile
    if claim.strategy is not None:
        out["sharing"] = {"strategy": claim.strategy, "feature_gate": claim.feature_gate,
                          **({"default_active_thread_percentage": claim.mps_active_thread_percentage}
                             if claim.mps_active_thread_percentage is not None else {})}
    return out
