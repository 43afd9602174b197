"""AKS node auto-provisioning (NAP, the Karpenter provider for Azure, run by AKS): per pool a
`karpenter.sh/v1` NodePool and its `karpenter.azure.com/v1beta1` AKSNodeClass.

The NodePool and its checks are Karpenter's (`gpustack.clouds.karpenter`); this module adds what is
the Azure provider's: the AKSNodeClass (image family, OS disk size, GPU driver mode, tags), the
well-known labels a requirement names an SKU with, the capacity types it offers, the label domains it
reserves, what NAP cannot do (capacity reservations, MIG, NodeOverlays) as gaps found at validation,
and the kubelet reservation its Karpenter simulates a node with. The Pulumi program declares the
objects through `gpustack.backends.karpenter` (`nap_backend.py`).

Facts are from Azure/karpenter-provider-azure at tag v1.14.2 (d1552b7e96e3d3bf44acc55be5786b25cdbfaaf4)
and the AKS docs (MicrosoftDocs/azure-aks-docs at fb060abe6a8fef960d4c487b543bf7b1e97808fe, published
under https://learn.microsoft.com/azure/aks/); NAP runs the provider's latest release
(use-node-auto-provisioning.md, "NAP is always running the latest version").
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds import karpenter as core
from gpustack.clouds.base import Feature
from gpustack.clouds.karpenter import KarpenterDocs, KarpenterPool, KarpenterProvisioner
from gpustack.clouds.kubelet import MEMORY_TIERS, KubeletReservation

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

RELEASE = "v1.14.2"
_REPO = f"https://github.com/Azure/karpenter-provider-azure/blob/{RELEASE}"
_AKS = "https://learn.microsoft.com/azure/aks"
NODEPOOLS_DOC = f"{_AKS}/node-auto-provisioning-node-pools"
DISRUPTION_DOC = f"{_AKS}/node-auto-provisioning-disruption"
NODECLASS_DOC = f"{_AKS}/node-auto-provisioning-aksnodeclass"
OVERVIEW_DOC = f"{_AKS}/node-auto-provisioning"
LABELS_SOURCE = f"{_REPO}/pkg/apis/v1beta1/labels.go"
NODECLASS_API_SOURCE = f"{_REPO}/pkg/apis/v1beta1/aksnodeclass.go"
INSTANCE_TYPE_SOURCE = f"{_REPO}/pkg/providers/instancetype/instancetype.go"
NODEPOOL_CRD = f"{_REPO}/pkg/apis/crds/karpenter.sh_nodepools.yaml"
NODECLASS_CRD = f"{_REPO}/pkg/apis/crds/karpenter.azure.com_aksnodeclasses.yaml"
# Weights: "When multiple NodePools match, it uses the one with highest weight" (NODEPOOLS_DOC, "Key
# behaviors"); NAP documents no NodeOverlay, so the overlay page is the core API's.
DOCS = KarpenterDocs(nodepools=NODEPOOLS_DOC, disruption=DISRUPTION_DOC, scheduling=NODEPOOLS_DOC,
                     overlay="https://karpenter.sh/docs/concepts/nodeoverlays/", nodepool_crd=NODEPOOL_CRD)

NODECLASS_GROUP = "karpenter.azure.com"
# The CRD serves v1alpha2 (storage: false) and v1beta1 (served and storage: true): gpustack writes the
# storage version (NODECLASS_CRD, spec.versions).
NODECLASS_VERSION = "v1beta1"
# The SKU a NodePool requires (LABELS_SOURCE, LabelSKUName: "Standard_D4pls_v6"), as the AKS docs
# write requirements (NODEPOOLS_DOC, "SKU selectors").
SKU_NAME = "karpenter.azure.com/sku-name"
AKS_DOMAIN = "kubernetes.azure.com"
# Capacity types: on-demand and spot only (LABELS_SOURCE, WellKnownValuesForRequirements of
# karpenter.sh/capacity-type); NAP tries spot first when a NodePool allows both (NODEPOOLS_DOC).
CAPACITY_TYPES = {"spot": "spot", "on-demand": "on-demand"}
# Labels the Azure provider registers as well known (LABELS_SOURCE, AzureWellKnownLabels): a pod may
# select them without a NodePool defining them.
WELL_KNOWN = frozenset({
    SKU_NAME, "karpenter.azure.com/sku-family", "karpenter.azure.com/sku-series", "karpenter.azure.com/sku-version",
    "karpenter.azure.com/sku-cpu", "karpenter.azure.com/sku-memory", "karpenter.azure.com/sku-gpu-name",
    "karpenter.azure.com/sku-gpu-manufacturer", "karpenter.azure.com/sku-gpu-count",
    "karpenter.azure.com/placement-scope", f"{AKS_DOMAIN}/cluster", f"{AKS_DOMAIN}/mode",
    f"{AKS_DOMAIN}/scalesetpriority", f"{AKS_DOMAIN}/priority", f"{AKS_DOMAIN}/os-sku", f"{AKS_DOMAIN}/fips_enabled",
    f"{AKS_DOMAIN}/sku-cpu", f"{AKS_DOMAIN}/sku-memory",
})
# The keys of the two reserved domains a NodePool template may still set (CEL rules of NODEPOOL_CRD,
# spec.template.metadata.labels: `label domain "kubernetes.azure.com" is restricted` and the like).
ALLOWED_LABELS = WELL_KNOWN | {"karpenter.azure.com/aksnodeclass", f"{AKS_DOMAIN}/ebpf-dataplane",
                               f"{AKS_DOMAIN}/ebpf-host-routing", f"{AKS_DOMAIN}/network-policy",
                               f"{AKS_DOMAIN}/hostedvm"}
# Legacy AKS labels the same CEL rules refuse outright.
RESTRICTED_LABELS = frozenset({"agentpool", "storageprofile", "storagetier", "accelerator"})

# The AKSNodeClass (NODECLASS_CRD, v1beta1). Ubuntu is AKS's default image family (22.04 up to
# Kubernetes 1.33, 24.04 from 1.34: NODECLASS_DOC, "Image family configuration"); GPUs are supported on
# Ubuntu and AzureLinux.
IMAGE_FAMILY = "Ubuntu"
IMAGE_FAMILIES = frozenset({"Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux"})
# gpu.mode Driver (the default): AKS installs the NVIDIA driver at bootstrap and only SKUs it installs a
# driver for are schedulable; None skips it, for a GPU Operator that brings its own (NODECLASS_API_SOURCE,
# GPUMode). gpustack keeps Driver, as on agent pools: the GPU Operator runs without its driver and
# toolkit (the node image configures nvidia-container-runtime: designs/0002-gpu-selection-and-bootstrap.md,
# "GPU Driver installation") and brings the device plugin, which NAP does not install (same design, "Nvidia
# Device Plugin": "We will require the customer to install the nvidia device plugin daemonset").
GPU_MODE = "Driver"
GPU_MODES = frozenset({"Driver", "None"})
# osDiskSizeGB: 30..2048, default 128 (NODECLASS_CRD).
OS_DISK_GB = (30, 2048)

# What NAP's Karpenter believes a node leaves for pods when it picks an SKU (INSTANCE_TYPE_SOURCE,
# KubeReservedResources, EvictionThreshold): kube-reserved CPU 6% of the first core, 4% of the second,
# 2% of the next two, 1% above; memory by the same brackets as the tiered formula (25% of the first
# 4 GiB, 20% of the next 4, 10% of the next 8, 6% up to 128 GiB, 2% above); no system-reserved; hard
# eviction at 750Mi. Planning with it sizes pools so NAP's simulation fits the pods too.
# Before both it takes vmMemoryOverheadPercent (default 0.075) off the SKU's memory (INSTANCE_TYPE_SOURCE,
# CalculateMemoryWithoutOverhead; pkg/operator/options/options.go, vm-memory-overhead-percent); the
# kube-reserved brackets apply to the SKU's full memory (KubeReservedResources(sku.VCPU(), sku.Memory())).
KUBELET_RESERVATION = KubeletReservation(
    cpu_tiers=((1, 0.06), (1, 0.04), (2, 0.02), (float("inf"), 0.01)), memory_tiers=MEMORY_TIERS,
    eviction_gib=750 / 1024, vm_memory_overhead=0.075,
    source=f"{INSTANCE_TYPE_SOURCE} (KubeReservedResources, EvictionThreshold, CalculateMemoryWithoutOverhead)")

# No reserved capacity: the capacity-type values above, and the AKSNodeClass has no capacity reservation
# group field (NODECLASS_CRD), so a floor cannot launch into a reservation.
RESERVATION_GAP = (f"NAP launches on-demand and spot only: karpenter.sh/capacity-type takes no 'reserved' ({LABELS_SOURCE}) "
                   f"and the AKSNodeClass has no capacity reservation group ({NODECLASS_CRD})")
# No MIG: the AKSNodeClass has no GPU instance profile (agent pools' gpuInstanceProfile: NODECLASS_CRD
# has gpu.mode only), and Karpenter never launches a node for a pod asking for a MIG device without a
# NodeOverlay, which NAP does not read (OVERLAY_GAP).
MIG_GAP = (f"the AKSNodeClass creates no MIG partitions (it has no GPU instance profile: {NODECLASS_CRD}), and NAP "
           "would launch no node for a pod asking for a MIG device")
# NodeOverlay is alpha behind Karpenter's NodeOverlay feature gate; NAP runs Karpenter itself and
# documents no way to set its feature gates (OVERVIEW_DOC: users create NodePools and AKSNodeClasses),
# so gpustack writes no overlay for NAP.
OVERLAY_GAP = ("and NAP, which runs Karpenter for the cluster, documents no way to turn on the alpha NodeOverlay feature "
               f"gate that would read an overlay ({OVERVIEW_DOC}), so gpustack writes none")


@dataclasses.dataclass(frozen=True)
class NapPool(KarpenterPool):
    """A pool's NodePool and its AKSNodeClass."""

    image_family: str
    os_disk_size_gb: int
    gpu_mode: str
    tags: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["tags"] = dict(self.tags)
        return out


class NodeAutoProvisioning(KarpenterProvisioner):
    name = "nap"
    description = f"AKS node auto-provisioning: Karpenter provider for Azure {RELEASE} NodePools and AKSNodeClasses"
    dra = DraSupport(refusal="AKS node auto-provisioning (Karpenter provider for Azure) documents no DRA support: Karpenter's DRA support (settings.enableDRA) is documented for its AWS provider only (https://karpenter.sh/docs/tasks/dra/; core tracking issue https://github.com/kubernetes-sigs/karpenter/issues/1231), so no node is launched for pods with ResourceClaims",
                     source="https://karpenter.sh/docs/tasks/dra/")
    backend = "nap_backend"
    release = RELEASE
    docs = DOCS
    compiled_type = NapPool
    node_class_group = NODECLASS_GROUP
    node_class_kind = "AKSNodeClass"
    node_class_version = NODECLASS_VERSION
    instance_type_label = SKU_NAME
    capacity_types = CAPACITY_TYPES
    capacity_gaps = {"reserved": RESERVATION_GAP}
    provider_label_domains = (NODECLASS_GROUP, AKS_DOMAIN)
    provider_well_known_labels = WELL_KNOWN
    provider_allowed_labels = ALLOWED_LABELS
    provider_restricted_labels = RESTRICTED_LABELS
    writes_overlays = False
    overlay_condition = OVERLAY_GAP
    unsupported = {Feature.NATIVE_SCHEDULE: core.schedule_gap(DISRUPTION_DOC), Feature.MIG: MIG_GAP}
    fallback_mechanism = core.weight_fallback(NODEPOOLS_DOC, "nothing: NAP's Karpenter reads the NodePools' weights")
    drifting_changes = core.drift_changes(DISRUPTION_DOC)

    @property
    def kubelet_reservation(self) -> KubeletReservation:
        return KUBELET_RESERVATION

    def node_class_fields(self, pool: Pool, target: Target) -> dict[str, Any]:
        del target
        return dict(image_family=IMAGE_FAMILY, os_disk_size_gb=pool.disk_gib, gpu_mode=GPU_MODE,
                    tags=tuple(sorted(pool.attribution.items())))

    def check_node_class(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, NapPool)
        problems = []
        low, high = OS_DISK_GB
        if not low <= compiled.os_disk_size_gb <= high:
            problems.append(f"disk of {compiled.os_disk_size_gb} GiB: the AKSNodeClass's osDiskSizeGB takes {low} to "
                            f"{high} ({NODECLASS_CRD})")
        if compiled.image_family not in IMAGE_FAMILIES or compiled.gpu_mode not in GPU_MODES:
            problems.append(f"imageFamily {compiled.image_family!r} or gpu.mode {compiled.gpu_mode!r} is not one of the "
                            "AKSNodeClass's")
        return problems

    def node_class_spec(self, pool: Pool) -> dict[str, Any]:
        c = pool.compiled
        assert isinstance(c, NapPool)
        spec: dict[str, Any] = {"imageFamily": c.image_family, "osDiskSizeGB": c.os_disk_size_gb,
                                "gpu": {"mode": c.gpu_mode}}
        if c.tags:
            spec["tags"] = dict(c.tags)
        return spec

    def target_notes(self) -> list[str]:
        return [f"AKS node auto-provisioning (Karpenter provider for Azure, {RELEASE} tested) provisions the pools: one "
                "NodePool and AKSNodeClass each, spot tried before on-demand by spec.weight; AKS installs the NVIDIA "
                f"driver (gpu.mode {GPU_MODE}) on the {IMAGE_FAMILY} image and each new node image drifts the nodes, "
                f"replaced within each NodePool's disruption budgets ({DISRUPTION_DOC}); docs/karpenter.md says what the "
                "cluster needs (NAP enabled, its network, a managed identity)."]


PROVISIONER = NodeAutoProvisioning
