"""Azure AKS: user agent pools.

Every enum string the AKS backend sends is chosen here (`agent_pool_enums`), compiled into the plan by
the provisioner (`managed.py`) and checked against the values the API accepts (`ALLOWED`) when a spec
is planned, so a wrong value is a located problem of `gpustack validate`, not an error halfway
through `pulumi up`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpustack.clouds import CLOUDS
from gpustack.clouds._enums import Allowed
from gpustack.clouds.azure import acceptance
from gpustack.clouds.base import Cloud, ExampleTarget, Feature, FloorUpgradeRule, NameRule, PreviewLogin, Setting
from gpustack.clouds.kubelet import KubeletReservation

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpustack.catalog import InstanceType
    from gpustack.plan.model import Pool

# Enum values of the agent-pool API (REST API 2025-09-01, the containerservice enums of
# pulumi-azure-native 3.x: ScaleSetPriority, ScaleSetEvictionPolicy, GPUInstanceProfile, OSSKU, ...).
AGENT_POOL_API = "https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/create-or-update"
ALLOWED = {
    "mode": Allowed(("System", "User", "Gateway"), AGENT_POOL_API),
    "os_type": Allowed(("Linux", "Windows"), AGENT_POOL_API),
    # Linux SKUs only: GPU pools here are Linux pools.
    "os_sku": Allowed(("Ubuntu", "AzureLinux", "AzureLinux3", "CBLMariner", "Ubuntu2204"), AGENT_POOL_API),
    "type": Allowed(("VirtualMachineScaleSets", "AvailabilitySet", "VirtualMachines"), AGENT_POOL_API),
    "scale_set_priority": Allowed(("Spot", "Regular"), AGENT_POOL_API),
    "scale_set_eviction_policy": Allowed(("Delete", "Deallocate"), AGENT_POOL_API),
    "gpu_instance_profile": Allowed(("MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g"), AGENT_POOL_API),
    "gpu_driver": Allowed(("Install", "None"), AGENT_POOL_API),
}

# What gpustack sends. Ubuntu: the default AKS node image, and Azure Linux GPU pools do not get
# automatic security patches (https://learn.microsoft.com/en-us/azure/aks/use-nvidia-gpu, Limitations).
OS_SKU = "Ubuntu"
MODE = "User"
OS_TYPE = "Linux"
POOL_TYPE = "VirtualMachineScaleSets"
SPOT_PRIORITY = "Spot"
REGULAR_PRIORITY = "Regular"
# Delete, not Deallocate: deallocated spot nodes keep counting against the compute quota; -1 pays up to
# the on-demand price, so nodes are evicted for capacity, never for price
# (https://learn.microsoft.com/en-us/azure/aks/spot-node-pool).
SPOT_EVICTION_POLICY = "Delete"
SPOT_MAX_PRICE = -1.0
# AKS installs the NVIDIA driver on the node image; the GPU Operator runs with driver.enabled=false.
# Exactly one of the two may own the driver (https://learn.microsoft.com/en-us/azure/aks/use-nvidia-gpu).
GPU_DRIVER = "Install"

# Azure tag names cannot contain these characters
# (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/tag-resources#limitations).
TAG_NAME_FORBIDDEN = "<>%&\\?/"
# Label keys that are gpustack's or NVIDIA's own and never become tags (as `backends.base.attribution`).
NOT_TAGS = ("gpustack.dev/", "nvidia.com/", "kubernetes.azure.com/")

# The gpuInstanceProfile each generic MIG shape maps to: one profile for every GPU of the pool
# (MicrosoftDocs/azure-aks-docs articles/aks/gpu-multi-instance.md; GPUInstanceProfile enum).
_MIG_KEYS = {"1g": "MIG1g", "2g": "MIG2g", "3g": "MIG3g", "4g": "MIG4g", "7g": "MIG7g"}


# What the Cluster Autoscaler reads for an agent pool at zero nodes (cloudprovider/azure/azure_template.go,
# processVMSSTemplate): the tags of the pool's scale set, which carry the agent pool's tags
# (https://learn.microsoft.com/en-us/azure/aks/use-tags). Labels, taints and resources each have a prefix
# (azure_util.go); in the rest of the tag name `_` stands for `/` and `~2` for `_` (labels and taint
# keys; extractLabelsFromTags, extractTaintsFromTags), and resources decode `_` to `/`
# (extractAllocatableResourcesFromScaleSet). Azure allows 50 tags per resource
# (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/tag-resources#limitations).
TEMPLATE_LABEL_TAG = "k8s.io_cluster-autoscaler_node-template_label_"
TEMPLATE_TAINT_TAG = "k8s.io_cluster-autoscaler_node-template_taint_"
TEMPLATE_RESOURCES_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"
MAX_TAGS = 50
# The GPU label AKS puts on GPU nodes (azure_cloud_provider.go, GPULabel): also on the template, so the
# autoscaler waits for the device plugin on SKUs its label prediction does not know (NvidiaEnabledSKUs).
GPU_LABEL = "kubernetes.azure.com/accelerator"
GPU_LABEL_VALUE = "nvidia"

# The SKUs the autoscaler predicts the GPU label for on a template (kubernetes/autoscaler at
# 55c37cd5eb550756c5ccc5a89e9068d77797e575, cluster-autoscaler/cloudprovider/azure/azure_instance_gpu_sku.go,
# NvidiaEnabledSKUs; isNvidiaEnabledSKU lowercases and drops "_promo"). azure_template.go (buildNodeFromTemplate,
# lines 331-373) takes a template's labels from the pool's own labels when it is given any (InputLabels) and from
# the scale set's node-template tags only otherwise, then adds GPULabel for these SKUs. The upstream VMSS path
# passes no labels (azure_scale_set.go:939, so gpustack's tag is read); where labels come from the pool, a SKU
# outside the list has no GPU label at zero. The label cannot be declared in the pool's nodeLabels: AKS refuses
# the kubernetes.azure.com prefix there ("The 'kubernetes.azure.com' prefix is preserved by aks system labels",
# the API's answer quoted in ams0/aks-nvme-ssd-provisioner#5), so such pools are warned.
NVIDIA_ENABLED_SKUS = frozenset({
    "standard_nc6", "standard_nc12", "standard_nc24", "standard_nc24r", "standard_nv6", "standard_nv12",
    "standard_nv12s_v3", "standard_nv24", "standard_nv24s_v3", "standard_nv24r", "standard_nv48s_v3", "standard_nd6s",
    "standard_nd12s", "standard_nd24s", "standard_nd24rs", "standard_nc6s_v2", "standard_nc12s_v2", "standard_nc24s_v2",
    "standard_nc24rs_v2", "standard_nc6s_v3", "standard_nc12s_v3", "standard_nc24s_v3", "standard_nc24rs_v3",
    "standard_nd40s_v3", "standard_nd40rs_v2", "standard_nc4as_t4_v3", "standard_nc8as_t4_v3", "standard_nc16as_t4_v3",
    "standard_nc64as_t4_v3", "standard_nd96asr_v4", "standard_nd112asr_a100_v4", "standard_nd120asr_a100_v4",
    "standard_nd96amsr_a100_v4", "standard_nd112amsr_a100_v4", "standard_nd120amsr_a100_v4", "standard_nc24ads_a100_v4",
    "standard_nc48ads_a100_v4", "standard_nc96ads_a100_v4"})


def gpu_label_predicted(size: str) -> bool:
    """Whether the autoscaler adds the GPU label to a template of VM size `size` itself (isNvidiaEnabledSKU)."""
    return size.lower().removesuffix("_promo") in NVIDIA_ENABLED_SKUS


# What the AKS node image keeps of a node (https://learn.microsoft.com/en-us/azure/aks/node-resource-reservations,
# "CPU reservations" and "Memory reservations", AKS 1.29 and later): kube-reserved CPU by a table of core counts
# (60, 100, 140, 180, 260, 420, 740 millicores for 1-64 cores; a node between two counts takes the larger
# count's, above 64 the last); kube-reserved memory the lesser of 20 MB x max pods + 50 MB and 25% of the
# node's memory; eviction at memory.available < 100Mi. Max pods is the cluster's: gpustack assumes the
# largest default (250, Azure CNI Overlay: https://learn.microsoft.com/en-us/azure/aks/azure-cni-overlay), so
# the reservation is never under-counted.
AKS_MAX_PODS = 250
KUBELET_RESERVATION = KubeletReservation(
    cpu_tiers=(), cpu_steps=((1, 0.06), (2, 0.1), (4, 0.14), (8, 0.18), (16, 0.26), (32, 0.42), (64, 0.74)),
    memory_mib_per_pod=20, memory_mib_base=50, default_max_pods=AKS_MAX_PODS, memory_cap_fraction=0.25,
    source="https://learn.microsoft.com/en-us/azure/aks/node-resource-reservations")


def gpu_instance_profile(shape_key: str) -> str | None:
    """MIG1g ... MIG7g for a generic profile shape (1g, 2g, ...); None when AKS has no such value."""
    return _MIG_KEYS.get(shape_key)


def agent_pool_enums(pool: Pool) -> dict[str, str | None]:
    """Every enum field of the pool's AgentPool, by its SDK argument name (`gpu_driver`: gpu_profile.driver)."""
    spot = pool.capacity == "spot"
    values: dict[str, str | None] = {
        "mode": MODE, "os_type": OS_TYPE, "os_sku": OS_SKU, "type": POOL_TYPE,
        "scale_set_priority": SPOT_PRIORITY if spot else REGULAR_PRIORITY,
        "gpu_driver": GPU_DRIVER,
    }
    if spot:
        values["scale_set_eviction_policy"] = SPOT_EVICTION_POLICY
    if pool.sharing.mode == "mig":
        profiles = pool.mig_profiles
        values["gpu_instance_profile"] = gpu_instance_profile(_shape_of(profiles[0])) if profiles else None
    return values


# The country or area word of a region name -> (area, continent), after the geographies of
# https://learn.microsoft.com/en-us/azure/reliability/regions-list ("us" only as the name's end:
# eastus2, northcentralus; "australiaeast" holds "us" inside).
_AREAS_BY_CONTINENT: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("north-america", (("us", r"us\d*$"), ("canada", "^canada"), ("mexico", "^mexico"))),
    ("south-america", (("brazil", "^brazil"), ("chile", "^chile"))),
    ("europe", tuple((word, word) for word in (
        "europe", "uk", "france", "germany", "norway", "sweden", "switzerland", "poland", "italy", "spain", "austria",
        "belgium", "denmark", "finland", "greece"))),
    ("middle-east", (("israel", "^israel"), ("qatar", "^qatar"), ("uae", "^uae"), ("saudiarabia", "^saudiarabia"))),
    ("africa", (("southafrica", "^southafrica"),)),
    ("asia-pacific", (("australia", "^australia"), ("newzealand", "^newzealand"), ("india", "india"),
                      ("japan", "^japan"), ("korea", "^korea"), ("asia", "asia$"), ("indonesia", "^indonesia"),
                      ("malaysia", "^malaysia"), ("taiwan", "^taiwan"))),
)
REGION_AREAS = tuple((pattern, area, continent) for continent, areas in _AREAS_BY_CONTINENT
                     for area, pattern in areas)


@CLOUDS.register
class AKS(Cloud):
    name = "azure"
    kubelet_reservation = KUBELET_RESERVATION
    aliases = ("aks",)
    display_name = "AKS"

    def region_geography(self, region: str) -> tuple[str, str]:
        """Azure's region names carry no area prefix (canadacentral, westeurope, eastus2): the area is
        the country or area word of the name, as the regions list groups them by geography."""
        for pattern, area, continent in REGION_AREAS:
            if re.search(pattern, region):
                return area, continent
        return "", ""
    # The generated preview job logs in as a Reader identity by OIDC (a federated credential whose
    # subject is the repository's preview environment).
    preview_login = PreviewLogin(
        title="Azure reader identity (OIDC)", action="azure-login",
        inputs={"client-id": "${{ secrets.GPUSTACK_AZURE_PREVIEW_CLIENT_ID }}",
                "tenant-id": "${{ secrets.GPUSTACK_AZURE_TENANT_ID }}",
                "subscription-id": "${{ secrets.GPUSTACK_AZURE_SUBSCRIPTION_ID }}"},
        secrets=("GPUSTACK_AZURE_PREVIEW_CLIENT_ID", "GPUSTACK_AZURE_TENANT_ID", "GPUSTACK_AZURE_SUBSCRIPTION_ID"),
        source="https://docs.github.com/en/actions/how-tos/secure-your-work/security-harden-deployments/oidc-in-azure")
    example = ExampleTarget(
        region="eastus", cluster="ml-prod-aks", settings={"resource_group": "rg-ml-prod", "pool_names": "descriptive"},
        provider_config={"azure-native:location": "eastus"})
    settings = (
        # The resource group of the AKS cluster.
        Setting("resource_group", True, "string", r"[-A-Za-z0-9_.()]{0,89}[-A-Za-z0-9_()]",
                "a resource group name (at most 90 ASCII letters, digits, '-', '_', '.', '(', ')', not ending in '.')",
                # ARM's ResourceGroupNameParameter; its \w also takes Unicode letters, which gpustack refuses
                # (look-alikes of ASCII names).
                api_pattern=r"[-\w\._\(\)]{1,90}",
                api_source="https://github.com/Azure/azure-rest-api-specs/blob/main/specification/common-types/"
                           "resource-management/v5/types.json"),
        # Agent pool names have 12 characters. `descriptive` spends them on meaning (kind, capacity, GPU,
        # MIG size or clients per GPU, then a 3-4 letter digest: `inra1003gkqf`); the default `hashed`
        # keeps the names of earlier gpustack versions (`ira100fee9d5`), because a new name is a new
        # agent pool: switching replaces every pool of the target (`gpustack diff` shows it).
        # How agent pools are named: hashed (default) or descriptive.
        Setting("pool_names", False, "string", r"hashed|descriptive", "hashed or descriptive"),
        # Availability zones a workload's `availability` spreads its pools over: the agent pool's
        # availabilityZones, "1" to "3" (Agent Pools - Create Or Update, AGENT_POOL_API), one zonal
        # capacity reservation per zone in a zonal reservation group
        # (https://learn.microsoft.com/azure/virtual-machines/capacity-reservation-create).
        Setting("zones", False, "strings", r"[1-3]", "an availability zone number: '1', '2' or '3'"),
    )
    spread_setting = "zones"
    cluster_rule = (r"[a-zA-Z0-9]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?",
                    "an AKS cluster name (at most 63 letters, digits, '-', '_', starting and ending with a letter or digit)")
    # AgentPool.resource_name is the managed cluster's name (a ManagedCluster's `name` output):
    # https://www.pulumi.com/registry/packages/azure-native/api-docs/containerservice/agentpool/
    cluster_attribute = "name"
    cluster_api_rule = (r"^[a-zA-Z0-9]$|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]$",
                        "https://learn.microsoft.com/en-us/rest/api/aks/managed-clusters/create-or-update")
    # Linux user pools: ^[a-z][a-z0-9]{0,11}$ (AKS REST API, Agent Pools - Create Or Update,
    # parameter agentPoolName).
    pool_names = NameRule(12, r"[a-z][a-z0-9]{0,11}", "", AGENT_POOL_API)
    # Agent pools with the AKS-managed Cluster Autoscaler (default), or node auto-provisioning (nap.py).
    provisioners = ("managed", "nap")
    unsupported = {
        Feature.MIG_MIXED_LAYOUTS: "AKS creates one MIG profile per agent pool (gpuInstanceProfile); "
                                   "mixed profiles exist only in a preview API",
        **dict.fromkeys((Feature.CAPACITY_BLOCK, Feature.FLEX_START), "Azure sells no GPU capacity for a fixed window; it offers open-ended on-demand capacity " "reservations (capacity reservation groups: capacity: reserved) and spot VMs " "(https://learn.microsoft.com/azure/virtual-machines/capacity-reservation-overview)"),
    }
    # osDiskSizeGB: at most 2048 (AGENT_POOL_API); 30 GiB is the smallest Linux node image disk.
    disk_gib_range = (30, 2048, AGENT_POOL_API)
    # Agent pools and their capacity reservation groups are declared regional (no availabilityZones, no
    # zones on the group): Azure then promises no spread of the pool's nodes over zones ("Regional"
    # node pools, https://learn.microsoft.com/azure/aks/availability-zones), so all of a floor can sit
    # in one zone. Zonal pools would need zone-aligned agent pools with zonal reservations.
    single_zone_floor = ("AKS agent pools and capacity reservation groups that name no zones are regional, and "
                         "Azure promises no spread of their nodes over zones "
                         "(https://learn.microsoft.com/azure/aks/availability-zones)")
    # gpuInstanceProfile partitions the pool's GPUs; the device plugin still needs a MIG strategy.
    native_mig_partitioning = True
    # Spot pools get this label from AKS (and a taint: `managed.py`).
    spot_node_label = ("kubernetes.azure.com/scalesetpriority", "spot")
    # The agent pool reports AKS's spot label in nodeLabels: declared, so a refresh shows no drift
    # (azurerm_kubernetes_cluster_node_pool docs, `priority`: "add the applicable node_labels and
    # node_taints as per the Azure Documentation", https://registry.terraform.io/providers/hashicorp/azurerm/
    # latest/docs/resources/kubernetes_cluster_node_pool#priority-1).
    declare_spot_label = True
    own_label_prefixes = ("kubernetes.azure.com/",)
    # One driver story: AKS installs the driver (GPU_DRIVER) and its node images carry the container
    # toolkit ("AKS images include a preinstalled NVIDIA GPU Driver and preinstalled NVIDIA Container
    # Toolkit", https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/microsoft-aks.html),
    # so the GPU Operator installs neither. AKS's guide for the operator skips AKS's driver instead
    # (--gpu-driver none, https://learn.microsoft.com/azure/aks/nvidia-gpu-operator); gpustack keeps it
    # because AKS creates the MIG partitions of gpuInstanceProfile pools when a node is provisioned, and
    # the plan says so (target_notes).
    image_has_gpu_driver = True
    # The API server serves on TCP 443, and pods that call it reach it there: "APIServerPublicIP:443 (if
    # running pods/deployments that access the API Server) ... those pods/deployments would use the API IP"
    # (https://learn.microsoft.com/azure/aks/outbound-rules-control-egress).
    api_server_ports = (443,)
    image_has_container_toolkit = True

    def target_notes(self, settings: Mapping[str, object]) -> list[str]:
        del settings
        return ["GPU driver: AKS installs the NVIDIA driver on every GPU pool (gpuProfile.driver: Install) and its "
                "node images carry the container toolkit, so the GPU Operator runs with driver.enabled and "
                "toolkit.enabled false and owns only the device plugin, GPU feature discovery and the DCGM "
                "exporter. AKS's guide for the operator (https://learn.microsoft.com/azure/aks/nvidia-gpu-operator) "
                "skips AKS's driver instead; gpustack keeps it because AKS partitions gpuInstanceProfile (MIG) pools "
                "when it provisions a node. The driver moves with the AKS node image (az aks nodepool upgrade "
                "--node-image-only)."]

    def capacity_refusal(self, row: InstanceType, capacity: str) -> str | None:
        if capacity == "reserved":
            return acceptance.reservation_refusal(row.name)
        if capacity == "spot":
            return acceptance.spot_refusal(row.name, row.region, row.spot, row.note)
        return None

    def mig_profiles(self, gpu: str, mig_profiles: tuple[str, ...]) -> tuple[str, ...]:
        del gpu
        # Only the profiles MIG1g ... MIG7g create: the plain 2g/3g/4g/7g and, of the 1g profiles,
        # the one-memory-slice one (the smallest, e.g. 1g.10gb and not 1g.20gb on H100).
        plain = [p for p in mig_profiles if "+" not in p and _shape_of(p) in _MIG_KEYS]
        ones = [p for p in plain if _shape_of(p) == "1g"]
        smallest_one = min(ones, key=_memory_gb) if ones else None
        return tuple(p for p in plain if _shape_of(p) != "1g" or p == smallest_one)

    def check_label(self, key: str, value: str) -> list[str]:
        del value
        if key.startswith(NOT_TAGS) or not any(c in TAG_NAME_FORBIDDEN for c in key):
            return []
        return [f"label {key!r} becomes an Azure tag, and tag names cannot contain any of "
                f"{' '.join(TAG_NAME_FORBIDDEN)} (https://learn.microsoft.com/en-us/azure/"
                "azure-resource-manager/management/tag-resources#limitations); use a key without them"]

    def template_gap(self, pool: Pool) -> str | None:
        gap = super().template_gap(pool)
        if gap is not None or gpu_label_predicted(pool.instance_type) or not pool.gpus_per_node:
            return gap
        return (f"at zero nodes an autoscaler that takes the agent pool's own labels (azure_template.go, "
                f"buildNodeFromTemplate) adds the GPU label {GPU_LABEL} only for the SKUs of its NvidiaEnabledSKUs list "
                f"(azure_instance_gpu_sku.go), which lacks {pool.instance_type}; AKS refuses that label in nodeLabels, so "
                "gpustack declares it as the node-template tag only, read where templates come from the scale set's tags "
                "(the upstream autoscaler's VMSS path); keep one node if the autoscaler of the cluster takes the pool's "
                "labels")

    # The autoscaler's GPU label (GPULabel in cloudprovider/azure/azure_cloud_provider.go), which AKS puts
    # on GPU nodes itself (a reserved label: https://learn.microsoft.com/en-us/azure/aks/use-labels).
    gpu_label = GPU_LABEL
    # Reserved floors: maxSurge 0 with maxUnavailable 1 cordons and reimages one node at a time, "recommended
    # when obtaining additional quota or capacity is not possible for the upgrade surge"; with a surge the
    # capacity reservation group must hold the surge too (default max surge 1).
    floor_upgrade = FloorUpgradeRule(
        settings=(("max_surge", "0"), ("max_unavailable", "1")),
        max_surge=0, max_unavailable=1, default_surge=lambda nodes: 1,
        source="https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-node-pools-rolling; "
               "https://learn.microsoft.com/en-us/azure/aks/use-capacity-reservation-groups")

def _shape_of(profile: str) -> str:
    return profile.split(".", 1)[0]


def _memory_gb(profile: str) -> float:
    match = re.search(r"\.(\d+)gb", profile)
    return float(match.group(1)) if match else float("inf")
