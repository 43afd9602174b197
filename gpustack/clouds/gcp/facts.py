"""Google GKE: node pools with native GPU time-sharing and MIG partitions; the cloud's facts, and the
enum values gpustack sends to GKE and Compute Engine (chosen per pool by the provisioner, `managed.py`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import Cloud, ExampleTarget, Feature, FloorUpgradeRule, NameRule, PreviewLogin, Setting
from gpustack.clouds.gcp import acceptance

if TYPE_CHECKING:
    from gpustack.catalog import InstanceType
    from gpustack.plan.model import Pool

_GKE_GPUS = "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus"
_GKE_MIG_PLUGIN = ("https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/"
                   "09e2ab1ac10491ad46d3521348db6b4dcdba2e25/pkg/gpu/nvidia/mig/mig.go")

# Accelerator type per catalog GPU model (GKE "Run GPUs in Standard node pools", _GKE_GPUS).
ACCELERATOR_TYPES = {
    "T4": "nvidia-tesla-t4",
    "V100": "nvidia-tesla-v100",
    "L4": "nvidia-l4",
    "A100-40GB": "nvidia-tesla-a100",
    "A100-80GB": "nvidia-a100-80gb",
    "H100": "nvidia-h100-80gb",
    "H200": "nvidia-h200-141gb",
    "B200": "nvidia-b200",
    # G4 machines; the name `gcloud compute accelerator-types list` gives (Cyclenerd/google-cloud-pricing-
    # cost-calculator tools/acceleratortypes.csv @ fd66b26f, 2026-07-30), already among ACCELERATORS
    "RTX-PRO-6000": "nvidia-rtx-pro-6000",
}
# A3 Mega machines carry the same H100 under another accelerator type (_GKE_GPUS).
ACCELERATOR_BY_MACHINE_PREFIX = {"a3-megagpu": "nvidia-h100-mega-80gb"}

# Partition sizes GKE's device plugin accepts (gpuPartitionSizeMaxCount in _GKE_MIG_PLUGIN): no 4g on
# A100, and no +me profiles anywhere.
_PARTITION_SIZES = {
    "A100-40GB": ("1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"),
    "A100-80GB": ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"),
    "H100": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "7g.80gb"),
    "H200": ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "B200": ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
}


# Every accelerator type above, plus those of GPUs the catalog does not carry yet (_GKE_GPUS).
ACCELERATORS = frozenset({*ACCELERATOR_TYPES.values(), *ACCELERATOR_BY_MACHINE_PREFIX.values(), "nvidia-gb200"})

_GKE_API = "https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/NodeConfig"
# GPUSharingConfig.gpuSharingStrategy (_GKE_API; GPU_SHARING_STRATEGY_UNSPECIFIED left out).
SHARING_STRATEGIES = frozenset({"TIME_SHARING", "MPS"})
_SHARING_STRATEGY = {"time-slicing": "TIME_SHARING", "mps": "MPS"}
MIN_SHARED_CLIENTS_PER_GPU = 2  # "Valid range: 2-48" (see GKE.max_shared_clients_per_gpu)

# GPUDriverInstallationConfig.gpuDriverVersion: UNSPECIFIED installs no driver, INSTALLATION_DISABLED
# leaves it to the user, DEFAULT is "'Default' GPU driver in COS and Ubuntu", LATEST is "'Latest'
# GPU driver in COS" (https://cloud.google.com/ruby/docs/reference/google-cloud-container-v1/latest/
# Google-Cloud-Container-V1-GPUDriverInstallationConfig-GPUDriverVersion). gpustack relies on GKE's
# own device plugin for time-sharing and MIG, so GKE installs the driver: DEFAULT, the version GKE
# pairs with the node version, on either node image.
GPU_DRIVER_VERSIONS = frozenset({"GPU_DRIVER_VERSION_UNSPECIFIED", "INSTALLATION_DISABLED", "DEFAULT", "LATEST"})
GPU_DRIVER_VERSION = "DEFAULT"
# DRA node pools: no GKE-managed driver (gcloud's gpu-driver-version=disabled is the API's INSTALLATION_DISABLED),
# and the label GKE's autoscaler reads to model the DRA driver's ResourceSlices of a node at zero
# (https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra).
GPU_DRIVER_DISABLED = "INSTALLATION_DISABLED"
DRA_NODE_LABEL = "cloud.google.com/gke-nvidia-gpu-dra-driver"
# Where the driver GKE's installer DaemonSet puts lands on the node, which NVIDIA's DRA driver is given as
# nvidiaDriverRoot (the same guide's helm install).
DRA_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"

# NodeTaint.effect (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/NodeTaint).
TAINT_EFFECTS = frozenset({"NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"})
_TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}

# NodePoolAutoscaling.locationPolicy: ANY "picks zones that have the highest capacity available",
# which lowers the preemption risk of spot pools (https://cloud.google.com/kubernetes-engine/docs/
# reference/rest/v1/projects.locations.clusters.nodePools#locationpolicy).
LOCATION_POLICIES = frozenset({"BALANCED", "ANY"})
SPOT_LOCATION_POLICY = "ANY"

# ReservationAffinity (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/ReservationAffinity):
# a reserved floor consumes its own reservation, named under this key.
RESERVATION_AFFINITY_TYPES = frozenset({"UNSPECIFIED", "NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"})
RESERVATION_AFFINITY = "SPECIFIC_RESERVATION"
# Flex-start node pools (node_config.flex_start, max_run_duration "<seconds>s"), and for queued provisioning
# queued_provisioning.enabled: GKE requires autoscaling with location policy ANY, reservation affinity none
# and no auto-repair (https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training;
# https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest), GKE 1.32.2-gke.1652000 or
# later for flex-start GPUs (https://cloud.google.com/kubernetes-engine/docs/concepts/dws).
FLEX_LOCATION_POLICY = "ANY"
FLEX_RESERVATION_AFFINITY = "NO_RESERVATION"
FLEX_SOURCE = "https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training"
QUEUED_SOURCE = "https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest"
FLEX_VERSION = "1.32.2-gke.1652000"
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
# Compute Engine resource names: RFC 1035 labels of at most 63 characters (docstring of
# gcp.compute.Reservation.name, pulumi-gcp 10.2.0).
RESERVATION_NAMES = NameRule(63, r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", "-",
                             "https://www.pulumi.com/registry/packages/gcp/api-docs/compute/reservation/")

# Compute Engine labels (node_config.resource_labels): keys start with a lowercase letter; keys and
# values hold lowercase letters, digits, '_' and '-', at most 63 each; at most 64 labels per resource
# (https://cloud.google.com/compute/docs/labeling-resources#requirements).
_GCE_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_GCE_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
MAX_RESOURCE_LABELS = 64


def accelerator_type(gpu: str, machine_type: str) -> str | None:
    for prefix, accelerator in ACCELERATOR_BY_MACHINE_PREFIX.items():
        if machine_type.startswith(prefix):
            return accelerator
    return ACCELERATOR_TYPES.get(gpu)


def sharing_strategy(mode: str) -> str | None:
    return _SHARING_STRATEGY.get(mode)


def taint_effect(effect: str) -> str | None:
    return _TAINT_EFFECT.get(effect)


def partition_sizes(gpu: str) -> tuple[str, ...]:
    """The MIG profiles GKE's device plugin accepts on `gpu` (none when it has no MIG)."""
    return _PARTITION_SIZES.get(gpu, ())


def partition_size(pool: Pool) -> str | None:
    """The one MIG profile GKE cuts every GPU of a MIG pool into (None when not exactly one)."""
    return pool.mig_profiles[0] if len(pool.mig_profiles) == 1 else None


def reservation_name(cluster: str, pool_cloud_name: str) -> str:
    """A reservation name unique per project and zone: the cluster's name and the pool's."""
    cluster_name = cluster.rsplit("/", 1)[-1]
    return RESERVATION_NAMES.make(f"{cluster}/{pool_cloud_name}", f"{cluster_name}-{pool_cloud_name}")


def label_problem(key: str, value: str) -> str | None:
    if _GCE_LABEL_KEY.fullmatch(key) and _GCE_LABEL_VALUE.fullmatch(value):
        return None
    return (f"label {key}={value!r} cannot be a Compute Engine label (GKE resource_labels: lowercase letters, "
            f"digits, '_' and '-', at most 63, keys starting with a letter); gpustack does not rewrite "
            f"attribution labels, so cost reports agree across clouds: rename it in the spec, e.g. "
            f"{_gce_spelling(key)}={_gce_spelling(value)!r}")


def label_problems(labels: dict[str, str]) -> list[str]:
    """What only the whole set of a pool's labels can break (each label is `label_problem`'s)."""
    problems = []
    if len(labels) > MAX_RESOURCE_LABELS:
        problems.append(f"{len(labels)} attribution labels; Compute Engine takes at most {MAX_RESOURCE_LABELS}")
    return problems


def _gce_spelling(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "-", text.lower())[:63]


# The taint of spot nodes, in GKE's own domain, that every provisioner's spot pools declare: whether
# GKE Standard taints Spot nodes itself is unconfirmed, so pools declare it, and the pods tolerate it
# either way (a ComputeClass leaves cloud.google.com/ keys to GKE: compute_class.GKE_LABEL_DOMAIN).
SPOT_TAINT = ("cloud.google.com/gke-spot", "true", "NoSchedule")

# Flex-start with queued provisioning (Dynamic Workload Scheduler): nodes come all at once for a
# ProvisioningRequest of this class, which Kueue's provisioning admission check creates
# (https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest, "Use Kueue";
# https://kueue.sigs.k8s.io/docs/admission-check-controllers/provisioning/).
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"
QUEUED_PROVISIONING_SOURCE = "https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest"


@CLOUDS.register
class GKE(Cloud):
    name = "gcp"
    aliases = ("gke", "google")
    display_name = "GKE"
    provisioners = ("managed", "compute-class")
    # Region names start with their geography: us, northamerica, southamerica, europe, me, africa, asia,
    # australia (https://cloud.google.com/compute/docs/regions-zones#available).
    region_areas = {"us": "north-america", "northamerica": "north-america", "southamerica": "south-america",
                    "europe": "europe", "me": "middle-east", "africa": "africa", "asia": "asia-pacific",
                    "australia": "asia-pacific"}
    # The generated preview job impersonates a viewer service account through workload identity
    # federation (the provider's attribute condition names the repository's preview environment).
    preview_login = PreviewLogin(
        title="Google Cloud viewer service account (OIDC)", action="gcp-auth",
        inputs={"workload_identity_provider": "${{ secrets.GPUSTACK_GCP_WORKLOAD_IDENTITY_PROVIDER }}",
                "service_account": "${{ secrets.GPUSTACK_GCP_PREVIEW_SERVICE_ACCOUNT }}"},
        secrets=("GPUSTACK_GCP_WORKLOAD_IDENTITY_PROVIDER", "GPUSTACK_GCP_PREVIEW_SERVICE_ACCOUNT"),
        source="https://github.com/google-github-actions/auth#preferred-direct-workload-identity-federation")
    example = ExampleTarget(
        region="us-central1", cluster="ml-prod",
        settings={"project": "my-gcp-project", "node_locations": ("us-central1-a",)},
        provider_config={"gcp:region": "us-central1", "gcp:project": "my-gcp-project"})
    settings = (
        # The Google Cloud project (default: the provider's project).
        Setting("project", False, "string", r"[a-z][a-z0-9-]{4,28}[a-z0-9]", "a project id: 6-30 lowercase letters, digits and '-'",
                api_pattern=r"[a-z][-a-z0-9]{4,28}[a-z0-9]",
                api_source="https://cloud.google.com/resource-manager/reference/rest/v1/projects"),
        # Zones of the node pools; the first one holds capacity reservations.
        Setting("node_locations", False, "strings",
                r"[a-z]+-[a-z]+[0-9]+-[a-z]", "a zone such as 'us-central1-a'"),
    )
    # A cluster name, or its full resource name (projects/P/locations/L/clusters/C) with a project id,
    # a region or zone and a cluster name in their own formats.
    cluster_rule = (r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?"
                    r"|projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/(locations|zones)/[a-z]+-[a-z]+[0-9]+(-[a-z])?"
                    r"/clusters/[a-z]([-a-z0-9]{0,38}[a-z0-9])?",
                    "a GKE cluster name (at most 40 lowercase letters, digits and '-', starting with a letter) or "
                    "'projects/PROJECT/locations/LOCATION/clusters/NAME'")
    # gcp.container.NodePool.cluster takes the cluster's name (a gcp.container.Cluster's `name` output):
    # https://www.pulumi.com/registry/packages/gcp/api-docs/container/nodepool/
    cluster_attribute = "name"
    cluster_api_rule = (r"([a-z]([-a-z0-9]*[a-z0-9])?)|projects/[^/]+/(locations|zones)/[^/]+/clusters/[a-z]([-a-z0-9]*[a-z0-9])?",
                        "https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters")
    # Node-pool names: lowercase letters, digits and '-', start with a letter, end with a letter or
    # digit, at most 40 (GKE API error text quoted in https://github.com/pulumi/pulumi-gcp/issues/1510).
    pool_names = NameRule(40, r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?", "-",
                          "https://github.com/pulumi/pulumi-gcp/issues/1510")
    # GKE's Dynamic Workload Scheduler page publishes flex-start's discount only as an upper bound: "up to
    # 53%" off on-demand. The estimate uses it unless the spec declares the SKU's (pricing.flex_discount),
    # and the plan says which it used.
    flex_discount = (0.53, "up to 53% off on-demand, GKE's published upper bound",
                     "https://cloud.google.com/kubernetes-engine/docs/concepts/dws", "2026-12-02")
    # Flex-start VMs "keep running for a maximum of seven days".
    flex_max_run_hours = (7 * 24, "https://cloud.google.com/compute/docs/instances/about-flex-start-vms")
    unsupported = {
        Feature.MIG_MIXED_LAYOUTS: "GKE partitions every GPU of a node pool with one gpu_partition_size",
        # HAMi replaces the NVIDIA device plugin on its nodes; on GKE that plugin is GKE's own, which
        # gpustack keeps (no GPU Operator), so a second plugin would advertise the same GPUs.
        Feature.FRACTIONAL_SHARING: "GKE runs its own NVIDIA device plugin on GPU nodes, which HAMi's would "
                                    "duplicate",
        # Compute Engine's closest are future reservations in calendar mode, bought outside gpustack.
        Feature.CAPACITY_BLOCK: "GKE node pools take no capacity block; GPUs for a bounded run on GKE are flex-start "
                                "VMs (capacity: flex, up to 7 days); calendar-mode future reservations are bought "
                                "in Compute Engine, which gpustack does not do "
                                "(https://cloud.google.com/compute/docs/instances/about-flex-start-vms)",
    }
    # GKE's own label keys (the ComputeClass label below) are not attribution labels.
    own_label_prefixes = ("cloud.google.com/",)
    # Spot nodes carry cloud.google.com/gke-spot=true (confirmed; the taint: `managed.py`).
    spot_node_label = ("cloud.google.com/gke-spot", "true")
    # GKE installs the driver (GPU_DRIVER_VERSION) and runs its own device plugin (_GKE_GPUS).
    image_has_gpu_driver = True
    # The control plane endpoint serves on TCP 443, and the `kubernetes` Service's endpoint is that address
    # and port (no 443 -> 6443 translation as on kubeadm clusters): an egress rule for 6443 alone fails on
    # GKE and one for 443 works (https://github.com/kyverno/policy-reporter/issues/279). Dataplane V2
    # judges the translated address ("GKE translates the Service virtual IP address (VIP) to backend Pod IP
    # addresses before evaluating network policy rules",
    # https://cloud.google.com/kubernetes-engine/docs/how-to/fqdn-network-policies).
    api_server_ports = (443,)
    image_has_container_toolkit = True
    # max_shared_clients_per_gpu: "Valid range: 2-48" (GKE ComputeClass reference, quoted in
    # kcl-lang/modules PR #358; no GKE API text found).
    max_shared_clients_per_gpu = 48
    # gpu_sharing_config and gpu_partition_size on the node pool (gpu-sharing.md section 7).
    native_sharing = frozenset({"time-slicing", "mps", "mig"})
    native_mig_partitioning = True
    # gcp.compute.Reservation is zonal (its `zone` argument is required).
    reservation_needs = ("node_locations", "GKE capacity reservations are zonal: each zone of "
                                           "settings.node_locations holds its part of a reserved floor")
    # NodeConfig.diskSizeGb: "The smallest allowed disk size is 10GB" (_GKE_API); 64 TB is the largest
    # persistent disk (https://cloud.google.com/compute/docs/disks#introduction).
    disk_gib_range = (10, 65536, _GKE_API)
    zone_setting = "node_locations"
    single_zone_floor = ("GKE reservations are zonal, and one zone of settings.node_locations offers the pool's GPU; "
                         "add another zone that offers it to spread the floor, one reservation per zone")

    def provisioning_request_class(self, pool: Pool) -> tuple[str, str] | None:
        """Pools on flex-start with queued provisioning (`capacity: flex`, `flex.queued`) get their nodes
        through a ProvisioningRequest of the class GKE's autoscaler serves, which Kueue's provisioning
        admission check creates before it admits a Job; plain flex-start pools scale as any other."""
        queued = pool.flex is not None and pool.flex.queued
        return (QUEUED_PROVISIONING_CLASS, QUEUED_PROVISIONING_SOURCE) if queued else None

    def capacity_refusal(self, row: InstanceType, capacity: str) -> str | None:
        return acceptance.capacity_refusal(row.name, capacity) or super().capacity_refusal(row, capacity)

    def zone_problems(self, region: str, zones: tuple[str, ...]) -> list[str]:
        return [f"{zone!r} is a zone of {acceptance.region_of(zone)}, not of the target's region {region} "
                f"({acceptance.REGIONS_ZONES_SOURCE})" for zone in zones if acceptance.region_of(zone) != region]

    def zones_offering(self, gpu: str, instance_type: str, zones: tuple[str, ...]) -> tuple[str, ...] | None:
        del instance_type  # the published lists are per GPU
        return acceptance.zones_offering(gpu, zones)

    def zones_in_region(self, gpu: str, region: str) -> tuple[str, ...]:
        """The zones of `region` that offer `gpu`, for messages."""
        return acceptance.zones_of_region_offering(gpu, region)

    def floor_spread(self, zones: tuple[str, ...], nodes: int) -> tuple[tuple[str, int], ...]:
        # One specific reservation per zone, all under the pool's reservation name (names are unique
        # per project and zone), so the pool's reservation affinity matches each zone's part.
        used = zones[:nodes]
        if len(used) < 2:
            return ()
        share, extra = divmod(nodes, len(used))
        return tuple((zone, share + (1 if i < extra else 0)) for i, zone in enumerate(used))

    def gpu_gap(self, gpu: str) -> str | None:
        if gpu in ACCELERATOR_TYPES:
            return None
        return f"GKE has no accelerator type for {gpu} ({_GKE_GPUS})"

    def mig_profiles(self, gpu: str, mig_profiles: tuple[str, ...]) -> tuple[str, ...]:
        allowed = _PARTITION_SIZES.get(gpu, ())
        return tuple(p for p in mig_profiles if p in allowed)

    def check_label(self, key: str, value: str) -> list[str]:
        found = label_problem(key, value)
        return [found] if found else []

    # GKE labels GPU nodes cloud.google.com/gke-accelerator itself (GPULabel in cloudprovider/gce/
    # gce_cloud_provider.go), and its device plugin names every MIG partition nvidia.com/gpu.
    gpu_label = "cloud.google.com/gke-accelerator"
    native_mig_strategy = "single"
    # Reserved floors: "All nodes that GKE creates, including nodes used for upgrades, are subject to ...
    # reservation capacity" for specific reservation affinity; maxSurge 0 with maxUnavailable 1 recreates
    # one node at a time inside it (default maxSurge 1).
    floor_upgrade = FloorUpgradeRule(
        settings=(("strategy", "SURGE"), ("max_surge", 0), ("max_unavailable", 1)),
        max_surge=0, max_unavailable=1, default_surge=lambda nodes: 1,
        source="https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies; "
               "https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota")
