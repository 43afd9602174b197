"""Google GKE: node pools with native GPU time-sharing and MIG partitions."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import Cloud, Feature, NameRule, Setting

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


def accelerator_type(gpu: str, machine_type: str) -> str | None:
    for prefix, accelerator in ACCELERATOR_BY_MACHINE_PREFIX.items():
        if machine_type.startswith(prefix):
            return accelerator
    return ACCELERATOR_TYPES.get(gpu)


@CLOUDS.register
class GKE(Cloud):
    name = "gcp"
    aliases = ("gke", "google")
    display_name = "GKE"
    backend = "gpustack.backends.gcp"
    settings = (
        Setting("project", False, "string", "the Google Cloud project (default: the provider's project)",
                r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$", "a project id: 6-30 lowercase letters, digits and '-'"),
        Setting("node_locations", False, "strings",
                "zones of the node pools; the first one holds capacity reservations",
                r"^[a-z]+-[a-z]+[0-9]+-[a-z]$", "a zone such as 'us-central1-a'"),
    )
    cluster_rule = (r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$|^projects/.+/clusters/.+$",
                    "a GKE cluster name (lowercase, at most 40) or its full resource id")
    # Node-pool names: lowercase letters, digits and '-', start with a letter, end with a letter or
    # digit, at most 40 (GKE API error text quoted in https://github.com/pulumi/pulumi-gcp/issues/1510).
    pool_names = NameRule(40, r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?", "-",
                          "https://github.com/pulumi/pulumi-gcp/issues/1510")
    unsupported = {
        Feature.MIG_MIXED_LAYOUTS: "GKE partitions every GPU of a node pool with one gpu_partition_size",
        Feature.NATIVE_SCHEDULE: "GKE has no scheduled scaling of node pools; the in-cluster auto-stop covers it",
    }
    # Spot nodes carry cloud.google.com/gke-spot=true (confirmed); whether GKE Standard also taints
    # them is unconfirmed, so pools declare the taint themselves.
    spot_node_label = ("cloud.google.com/gke-spot", "true")
    spot_taint = ("cloud.google.com/gke-spot", "true", "NoSchedule")
    # max_shared_clients_per_gpu: "Valid range: 2-48" (GKE ComputeClass reference, quoted in
    # kcl-lang/modules PR #358; no GKE API text found).
    max_shared_clients_per_gpu = 48
    # gpu_sharing_config and gpu_partition_size on the node pool (gpu-sharing.md section 7).
    native_sharing = frozenset({"time-slicing", "mps", "mig"})
    native_mig_partitioning = True
    # gcp.compute.Reservation is zonal (its `zone` argument is required).
    reservation_needs = ("node_locations", "GKE capacity reservations are zonal: the first zone of "
                                           "settings.node_locations holds the reservation")

    def mig_profiles(self, gpu: str, mig_profiles: tuple[str, ...]) -> tuple[str, ...]:
        allowed = _PARTITION_SIZES.get(gpu, ())
        return tuple(p for p in mig_profiles if p in allowed)

    # Node-pool fields that are ForceNew in the Terraform provider pulumi-gcp bridges (labels, taints,
    # node_locations and autoscaling update in place); read by `gpustack diff`.
    _FORCENEW_NODE_CONFIG = ("https://github.com/hashicorp/terraform-provider-google/blob/"
                             "8da4e91560e76da82f5cb52bc4c4d16dcd034bf8/google/services/container/node_config.go")
    _FORCENEW_NODE_POOL = ("https://github.com/hashicorp/terraform-provider-google/blob/"
                           "8da4e91560e76da82f5cb52bc4c4d16dcd034bf8/google/services/container/"
                           "resource_container_node_pool.go")
    _FORCENEW_ACCELERATOR = ("the GKE API does not update an accelerator's type or count in place "
                             "(https://github.com/GoogleCloudPlatform/magic-modules/pull/18493)")
    replacing_changes = {
        "instance_type": f"node_config.machine_type is ForceNew ({_FORCENEW_NODE_CONFIG})",
        "gpu": f"guest_accelerator.type is ForceNew ({_FORCENEW_NODE_CONFIG}); {_FORCENEW_ACCELERATOR}",
        "gpus_per_node": f"guest_accelerator.count is ForceNew ({_FORCENEW_NODE_CONFIG}); {_FORCENEW_ACCELERATOR}",
        "capacity": f"node_config.spot and node_config.reservation_affinity are ForceNew ({_FORCENEW_NODE_CONFIG})",
        "sharing.mode": f"guest_accelerator.gpu_sharing_config is ForceNew ({_FORCENEW_NODE_CONFIG})",
        "sharing.replicas": "guest_accelerator.gpu_sharing_config.max_shared_clients_per_gpu is ForceNew "
                            f"({_FORCENEW_NODE_CONFIG})",
        "sharing.mig": f"guest_accelerator.gpu_partition_size is ForceNew ({_FORCENEW_NODE_CONFIG})",
        "cluster": f"cluster is ForceNew ({_FORCENEW_NODE_POOL})",
        "settings.project": f"project is ForceNew ({_FORCENEW_NODE_POOL})",
    }
