"""Oracle OKE: managed node pools."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import Cloud, Feature, NameRule, Setting

_PREEMPTIBLE = "https://docs.oracle.com/iaas/Content/Compute/Concepts/preemptible.htm"


@CLOUDS.register
class OKE(Cloud):
    name = "oci"
    aliases = ("oke", "oracle")
    display_name = "OKE"
    backend = "gpustack.backends.oci"
    settings = (
        Setting("compartment_id", True, "string", "the compartment of the node pools",
                r"^ocid1\.(compartment|tenancy)\.[a-z0-9]+\..*$", "a compartment OCID ('ocid1.compartment.oc1..')"),
        Setting("subnet_id", True, "string", "the worker subnet", r"^ocid1\.subnet\.[a-z0-9]+\..*$",
                "a subnet OCID ('ocid1.subnet.oc1..')"),
        Setting("image_id", False, "string", "the node image; looked up from the node-pool options when absent",
                r"^ocid1\.image\.[a-z0-9]+\..*$", "an image OCID ('ocid1.image.oc1..')"),
        Setting("availability_domains", False, "strings",
                "availability domains for the placements; looked up when absent", r"^\S+:[A-Z0-9-]+-AD-[0-9]$",
                "an availability domain such as 'Uocm:US-ASHBURN-AD-1'"),
    )
    cluster_rule = (r"^ocid1\.cluster\.[a-z0-9]+\..*$", "a cluster OCID ('ocid1.cluster.oc1..')")
    # OKE node-pool names: at most 32 characters (terraform-oci-oke#628; no limit in Oracle's API
    # reference, so gpustack keeps to the stricter secondary figure and to [a-z0-9-]).
    pool_names = NameRule(32, r"[a-z][a-z0-9-]{0,31}", "-",
                          "https://github.com/oracle-terraform-modules/terraform-oci-oke/issues/628")
    unsupported = {
        Feature.NATIVE_SCHEDULE: "OKE has no scheduled scaling of node pools; the in-cluster auto-stop covers it",
    }
    # Preemptible nodes: label and taint added by OKE (contengusingpreemptiblecapacity.htm; the effect
    # and value come from the OKE Karpenter docs, secondary).
    spot_node_label = ("oci.oraclecloud.com/oke-is-preemptible", "true")
    spot_taint = ("oci.oraclecloud.com/oke-is-preemptible", "present", "NoSchedule")

    def spot_available(self, instance_type: str) -> str | None:
        if instance_type.startswith("BM."):
            return f"bare-metal shapes such as {instance_type} cannot be preemptible ({_PREEMPTIBLE})"
        return None

    # Node-pool fields that are ForceNew in the Terraform provider pulumi-oci bridges (node_shape,
    # initial_node_labels and placement configs update in place); read by `gpustack diff`.
    _FORCENEW_NODE_POOL = ("https://github.com/oracle/terraform-provider-oci/blob/"
                           "0099227f65258820aa259e044f465748fda8a211/"
                           "internal/service/containerengine/containerengine_node_pool_resource.go")
    replacing_changes = {
        "cluster": f"cluster_id is ForceNew ({_FORCENEW_NODE_POOL})",
        "settings.compartment_id": f"compartment_id is ForceNew ({_FORCENEW_NODE_POOL})",
    }
