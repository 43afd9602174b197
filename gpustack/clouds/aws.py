"""Amazon EKS: managed node groups."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import Cloud, NameRule, Setting


@CLOUDS.register
class EKS(Cloud):
    name = "aws"
    aliases = ("eks",)
    display_name = "EKS"
    backend = "gpustack.backends.aws"
    settings = (
        Setting("subnet_ids", True, "strings", "subnets the node groups launch into",
                r"^subnet-[0-9a-z]+$", "an EC2 subnet id such as 'subnet-0a1b2c3d'"),
        Setting("node_role_arn", False, "string",
                "IAM role of the nodes; gpustack creates one with the standard EKS worker policies when absent",
                r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", "an IAM role ARN such as 'arn:aws:iam::123456789012:role/eks-nodes'"),
    )
    # EKS cluster names: 1-100 characters, letters, digits, '-' and '_', starting with a letter or digit
    # (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html).
    cluster_rule = (r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$", "an EKS cluster name (letters, digits, '-', '_'; at most 100)")
    # Node group names: at most 63 characters, first a letter or digit, then letters, digits, '-' and
    # '_' (docstring of aws.eks.NodeGroup.node_group_name, pulumi-aws 7.51.1).
    pool_names = NameRule(63, r"[0-9A-Za-z][A-Za-z0-9\-_]{0,62}", "-",
                          "https://www.pulumi.com/registry/packages/aws/api-docs/eks/nodegroup/")
    # Managed node groups label nodes with their capacity type; EKS adds no spot taint, so
    # gpustack declares one on spot pools (secondary sources, see docs/clouds.md).
    spot_node_label = ("eks.amazonaws.com/capacityType", "SPOT")
    spot_taint = ("gpustack.dev/spot", "true", "NoSchedule")

    # Node-group fields that are ForceNew in the Terraform provider pulumi-aws bridges (labels, taints
    # and scaling update in place); read by `gpustack diff`.
    _FORCENEW_NODE_GROUP = ("https://github.com/hashicorp/terraform-provider-aws/blob/"
                            "012e0a32f0686212f447447fd3d81c3d0ce256ad/internal/service/eks/node_group.go")
    replacing_changes = {
        "instance_type": f"instance_types is ForceNew on a managed node group ({_FORCENEW_NODE_GROUP})",
        "capacity": "capacity_type (ON_DEMAND / SPOT) and the launch template that targets a capacity "
                    f"reservation are ForceNew ({_FORCENEW_NODE_GROUP})",
        "cluster": f"cluster_name is ForceNew ({_FORCENEW_NODE_GROUP})",
        "settings.subnet_ids": f"subnet_ids is ForceNew ({_FORCENEW_NODE_GROUP})",
        "settings.node_role_arn": f"node_role_arn is ForceNew ({_FORCENEW_NODE_GROUP})",
    }
