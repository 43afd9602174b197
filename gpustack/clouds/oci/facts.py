"""Oracle OKE: managed node pools.

The enum strings the OKE backend sends are chosen here (`node_pool_enums`), compiled into the plan by
the provisioner (`managed.py`) and checked against the values the API accepts (`ALLOWED`) when a spec
is planned, before any resource is declared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpustack.clouds import CLOUDS
from gpustack.clouds._enums import Allowed
from gpustack.clouds.base import Cloud, ExampleTarget, Feature, FloorUpgradeRule, NameRule, PreviewLogin, Setting

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpustack.plan.model import Pool

_PREEMPTIBLE = "https://docs.oracle.com/iaas/Content/Compute/Concepts/preemptible.htm"
_NODE_POOL_API = "https://docs.oracle.com/en-us/iaas/api/#/en/containerengine/20180222/datatypes/CreateNodePoolDetails"
ALLOWED = {
    # PreemptionAction.type: TERMINATE is the only action (preemptible.htm, "Preemption action").
    "preemption_action": Allowed(("TERMINATE",), _PREEMPTIBLE),
    # NodeSourceDetails.sourceType: IMAGE is the only source ("Currently, image is the only supported source").
    "node_source_type": Allowed(("IMAGE",), _NODE_POOL_API),
    # The Cluster Autoscaler add-on's authType argument (instance principal or workload identity),
    # https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengconfiguringclusteraddons-configurationarguments.htm
    "autoscaler_auth_type": Allowed(("instance", "workload"),
                                    "https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/"
                                    "contengconfiguringclusteraddons-configurationarguments.htm"),
}

PREEMPTION_ACTION = "TERMINATE"
NODE_SOURCE_TYPE = "IMAGE"
# The add-on authenticates as the node it runs on (a dynamic group + policy, see docs/deploy.md).
AUTOSCALER_AUTH_TYPE = "instance"
AUTOSCALER_ADDON = "ClusterAutoscaler"  # the add-on name of `oci ce cluster install-addon --addon-name`
# The add-on's `expander` when a target has fallback pools: the priority expander ranks spot pools first
# (the add-on's default is `random`; configuration-arguments-cluster-autoscaler.htm).
AUTOSCALER_EXPANDER = "priority"


# Cluster types (GetClusterResult.type: BASIC_CLUSTER | ENHANCED_CLUSTER); add-ons such as the Cluster
# Autoscaler need an enhanced cluster (CLUSTER_TYPES_SOURCE).
CLUSTER_TYPES_SOURCE = "https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengcomparingenhancedwithbasicclusters_topic.htm"
ENHANCED_CLUSTER = "ENHANCED_CLUSTER"
# A boot volume larger than the image's is only used once the root filesystem grows onto it: Oracle
# Linux images ship oci-growfs, which OKE's own cloud-init example runs first
# (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengusingcustomcloudinitscripts.htm).
GROW_ROOT_FILESYSTEM = "/usr/libexec/oci-growfs -y"
# The node-pool metadata key whose `--register-with-taints` the Cluster Autoscaler reads for a pool at zero
# (cloudprovider/oci/nodepools/registered_taints.go).
KUBELET_EXTRA_ARGS = "kubelet-extra-args"


def node_pool_enums(pool: Pool) -> dict[str, str | None]:
    """Every enum string of the pool's NodePool (and of the target's autoscaler add-on)."""
    values: dict[str, str | None] = {"node_source_type": NODE_SOURCE_TYPE, "autoscaler_auth_type": AUTOSCALER_AUTH_TYPE}
    if pool.capacity == "spot":
        values["preemption_action"] = PREEMPTION_ACTION
    return values


# An OCID is ocid1.<resource type>.<realm>.[region][.future use].<unique id> (OCID_SOURCE); the unique id is lowercase base32 text. OCID_FORMAT is that documented form; `ocid` narrows it to
# one resource type and a bounded length.
OCID_SOURCE = "https://docs.oracle.com/en-us/iaas/Content/General/Concepts/identifiers.htm"
OCID_FORMAT = r"ocid1\.[a-z0-9]+\.oc[0-9]+\.[a-z0-9-]*(\.[a-z0-9-]+)?\.[a-z0-9]+"


def ocid(resource_types: str) -> str:
    return rf"ocid1\.({resource_types})\.oc[0-9]{{1,3}}\.[a-z0-9-]{{0,32}}(\.[a-z0-9-]{{1,32}})?\.[a-z0-9]{{1,128}}"


# The taint OKE puts on preemptible nodes (contengusingpreemptiblecapacity.htm; the effect and value
# come from the OKE Karpenter docs, secondary), which every provisioner's spot pools declare too; the
# Karpenter provider offers spot shapes only to NodePools with it (karpenter.FAQS_DOC).
SPOT_TAINT = ("oci.oraclecloud.com/oke-is-preemptible", "present", "NoSchedule")


@CLOUDS.register
class OKE(Cloud):
    name = "oci"
    aliases = ("oke", "oracle")
    display_name = "OKE"
    # OKE managed node pools with the Cluster Autoscaler add-on, or Oracle's Karpenter provider (karpenter.py).
    provisioners = ("managed", "karpenter")
    # Region identifiers start with their area: us, ca, mx, sa, eu, uk, il, me, af, ap
    # (https://docs.oracle.com/en-us/iaas/Content/General/Concepts/regions.htm).
    region_areas = {"us": "north-america", "ca": "north-america", "mx": "north-america", "sa": "south-america",
                    "eu": "europe", "uk": "europe", "il": "middle-east", "me": "middle-east", "af": "africa",
                    "ap": "asia-pacific"}
    unsupported = dict.fromkeys((Feature.CAPACITY_BLOCK, Feature.FLEX_START), "OCI sells no GPU capacity for a fixed window; it offers open-ended compute capacity " "reservations (capacity: reserved) and preemptible instances (capacity: spot) " "(https://docs.oracle.com/iaas/Content/Compute/Tasks/reserve-capacity.htm)")
    # OCI has no OIDC login action for GitHub: the preview gets a read-only API key (a user in a group
    # whose policy only reads) through the provider's environment variables, as secrets of the
    # preview environment (https://www.pulumi.com/registry/packages/oci/installation-configuration/).
    preview_login = PreviewLogin(
        title="OCI read-only API key",
        env={"OCI_TENANCY_OCID": "secrets.OCI_TENANCY_OCID", "OCI_USER_OCID": "secrets.OCI_USER_OCID",
             "OCI_FINGERPRINT": "secrets.OCI_FINGERPRINT", "OCI_PRIVATE_KEY": "secrets.OCI_PRIVATE_KEY"},
        secrets=("OCI_TENANCY_OCID", "OCI_USER_OCID", "OCI_FINGERPRINT", "OCI_PRIVATE_KEY"),
        note="an API key of a user whose group may only read (`allow group ... to read all-resources in tenancy`)",
        source="https://www.pulumi.com/registry/packages/oci/installation-configuration/")
    example = ExampleTarget(
        region="us-ashburn-1", cluster="ocid1.cluster.oc1.iad.aaaaaaaaexamplecluster",
        settings={"compartment_id": "ocid1.compartment.oc1..aaaaaaaaexamplecompartment",
                  "subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaexamplesubnet"},
        provider_config={"oci:region": "us-ashburn-1"})
    settings = (
        # The compartment of the node pools.
        Setting("compartment_id", True, "string", ocid("compartment|tenancy"), "a compartment OCID ('ocid1.compartment.oc1..' and its unique id)",
                api_pattern=OCID_FORMAT, api_source=OCID_SOURCE),
        # The worker subnet.
        Setting("subnet_id", True, "string", ocid("subnet"),
                "a subnet OCID ('ocid1.subnet.oc1.<region>.' and its unique id)", api_pattern=OCID_FORMAT,
                api_source=OCID_SOURCE),
        # The node image; looked up from the node-pool options when absent.
        Setting("image_id", False, "string", ocid("image"), "an image OCID ('ocid1.image.oc1.<region>.' and its unique id)",
                api_pattern=OCID_FORMAT, api_source=OCID_SOURCE),
        # Availability domains for the placements; looked up when absent.
        Setting("availability_domains", False, "strings",
                r"[A-Za-z0-9]{1,16}:[A-Z0-9-]{1,40}-AD-[0-9]",
                "an availability domain such as 'Uocm:US-ASHBURN-AD-1'"),
        # 'addon' (default): gpustack declares OKE's Cluster Autoscaler add-on with the pools' bounds; 'none':
        # the cluster's own autoscaler is configured by hand.
        Setting("cluster_autoscaler", False, "string",
                r"addon|none", "'addon' or 'none'"),
    )
    cluster_rule = (ocid("cluster"), "a cluster OCID ('ocid1.cluster.oc1.<region>.' and its unique id)")
    # The backend reads the cluster (its type for the autoscaler add-on, its Kubernetes version for the
    # node image) before it declares a pool, so it needs the OCID the spec names, not a program's output.
    cluster_attribute = None
    cluster_api_rule = (OCID_FORMAT, OCID_SOURCE)
    # OKE node-pool names: at most 32 characters (terraform-oci-oke#628; no limit in Oracle's API
    # reference, so gpustack keeps to the stricter secondary figure and to [a-z0-9-]).
    pool_names = NameRule(32, r"[a-z][a-z0-9-]{0,31}", "-",
                          "https://github.com/oracle-terraform-modules/terraform-oci-oke/issues/628")
    # Preemptible nodes: label added by OKE (contengusingpreemptiblecapacity.htm; the taint: SPOT_TAINT).
    spot_node_label = ("oci.oraclecloud.com/oke-is-preemptible", "true")
    # OKE GPU images carry the NVIDIA driver; the toolkit is inferred from them running GPU pods without
    # the operator (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengrunninggpunodes.htm).
    image_has_gpu_driver = True
    # The Kubernetes API endpoint serves on TCP 6443: the `kubernetes` Service's 443 is translated to the
    # endpoint's 6443 before OKE's NetworkPolicy implementation (Calico,
    # https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengsettingupcalico.htm) judges the
    # connection, so 6443 is the port a pod's egress rule must allow ("Kubernetes worker to Kubernetes API
    # endpoint communication", TCP 6443:
    # https://docs.oracle.com/en-us/iaas/Content/ContEng/Concepts/contengnetworkconfig.htm).
    api_server_ports = (6443,)
    image_has_container_toolkit = True

    # Boot volumes: 50 GB to 32 TB (https://docs.oracle.com/en-us/iaas/Content/Block/Concepts/bootvolumes.htm).
    disk_gib_range = (50, 32768, "https://docs.oracle.com/en-us/iaas/Content/Block/Concepts/bootvolumes.htm")
    zone_setting = "availability_domains"
    single_zone_floor = ("an OCI capacity reservation holds one shape in one availability domain, and OKE puts the "
                         "floor in the first one; reserve per domain by hand to spread it "
                         "(https://docs.oracle.com/en-us/iaas/Content/Compute/Tasks/reserve-capacity.htm)")

    def target_notes(self, settings: Mapping[str, object]) -> list[str]:
        # The add-on scales managed node pools only; under Karpenter it is not declared.
        if settings.get("cluster_autoscaler", "addon") != "addon" or settings.get("provisioner", "managed") != "managed":
            return []
        return [f"OKE's Cluster Autoscaler add-on runs only on an enhanced cluster ({CLUSTER_TYPES_SOURCE}): the Pulumi "
                "program reads the cluster's type before it declares anything and stops on a basic cluster; "
                "upgrade it (oci ce cluster update --type ENHANCED_CLUSTER) or set settings.cluster_autoscaler: none."]

    def zone_problems(self, region: str, zones: tuple[str, ...]) -> list[str]:
        # An availability domain is named <tenancy prefix>:<REGION without its number>-AD-<n>, e.g.
        # Uocm:US-ASHBURN-AD-1 in us-ashburn-1 (https://docs.oracle.com/en-us/iaas/Content/General/Concepts/regions.htm).
        key = region.rsplit("-", 1)[0].upper()
        return [f"{zone!r} is not an availability domain of {region} (those end in {key}-AD-<n>; "
                "https://docs.oracle.com/en-us/iaas/Content/General/Concepts/regions.htm)"
                for zone in zones if not zone.split(":", 1)[-1].startswith(f"{key}-AD-")]

    def spot_available(self, instance_type: str) -> str | None:
        if instance_type.startswith("BM."):
            return f"bare-metal shapes such as {instance_type} cannot be preemptible ({_PREEMPTIBLE})"
        return None

    # The OCI provider has no GPU label (GPULabel() returns "" in cloudprovider/oci/nodepools/
    # oci_cloud_provider.go) and builds the template of a pool at zero from the shape, the pool's
    # initial node labels and the taints of its `kubelet-extra-args` metadata only (oci_manager.go,
    # buildNodeFromTemplate; registered_taints.go): no extended resources. Checked again at kubernetes/autoscaler
    # 55c37cd5eb550756c5ccc5a89e9068d77797e575 (2026-08-22): the only freeform tag buildNodeFromTemplate reads is
    # cluster-autoscaler/node-ephemeral-storage (nodepools/consts/annotations.go, EphemeralStorageSize); the
    # node-template tags for OKE node pools (labels, taints, resources) are kubernetes/autoscaler#9869, open and not
    # merged, so no autoscaler release, and no OKE add-on built on one, reads them: gpustack declares none.
    template_resources_gap = ("OCI's node-pool template takes its resources from the shape alone (kubernetes/autoscaler "
                              "55c37cd5eb550756c5ccc5a89e9068d77797e575, cluster-autoscaler/cloudprovider/oci/nodepools/"
                              "oci_manager.go, buildNodeFromTemplate: of the freeform tags only cluster-autoscaler/"
                              "node-ephemeral-storage; node-template resource tags are the unmerged kubernetes/autoscaler"
                              "#9869)")
    # Reserved floors: node cycling with maximumSurge 0 and maximumUnavailable 1 replaces one node at a
    # time without an extra instance (defaults: surge 1, unavailable 0).
    floor_upgrade = FloorUpgradeRule(
        settings=(("is_node_cycling_enabled", True), ("maximum_surge", "0"), ("maximum_unavailable", "1")),
        max_surge=0, max_unavailable=1, default_surge=lambda nodes: 1,
        source="https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/balance-service-availability-cost.htm")
