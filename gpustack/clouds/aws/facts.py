"""Amazon EKS: the cloud's facts, and the enum values gpustack sends to EKS and EC2 (chosen per pool by
the provisioner, `managed.py`)."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import BlockTerms, Cloud, ExampleTarget, Feature, FloorUpgradeRule, NameRule, PreviewLogin, Setting
from gpustack.clouds.kubelet import CPU_TIERS, KubeletReservation

_NODEGROUP_API = "https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html"
_TAINT_API = "https://docs.aws.amazon.com/eks/latest/APIReference/API_Taint.html"
_ACCELERATED_AMIS = "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-optimized-ami.html"
_CAPACITY_RESERVATION_API = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateCapacityReservation.html"

# Nodegroup capacityType (_NODEGROUP_API). A reserved floor is on-demand capacity backed by a
# targeted capacity reservation; CAPACITY_BLOCK is for EC2 Capacity Blocks, which gpustack does not buy.
CAPACITY_TYPES = frozenset({"ON_DEMAND", "SPOT", "CAPACITY_BLOCK"})
_CAPACITY_TYPE = {"spot": "SPOT", "on-demand": "ON_DEMAND", "reserved": "ON_DEMAND", "block": "CAPACITY_BLOCK"}
# A capacity block's node group: capacityType CAPACITY_BLOCK, a launch template whose
# InstanceMarketOptions.MarketType is capacity-block and whose capacity reservation target is the
# block, subnets of the block's zone only, and desired size 0 when the group is updated
# (https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html). The market types the
# launch template takes (pulumi-aws 7.51.1, LaunchTemplateInstanceMarketOptionsArgs.market_type).
BLOCK_MARKET_TYPE = "capacity-block"
MARKET_TYPES = frozenset({"spot", "capacity-block", "interruptible-capacity-reservation"})
BLOCK_SOURCE = "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html"

# Nodegroup amiType, all values of the AMITypes enum (_NODEGROUP_API).
AMI_TYPES = frozenset({
    "AL2_x86_64", "AL2_x86_64_GPU", "AL2_ARM_64", "CUSTOM",
    "BOTTLEROCKET_ARM_64", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64_FIPS", "BOTTLEROCKET_x86_64_FIPS",
    "BOTTLEROCKET_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA",
    "WINDOWS_CORE_2019_x86_64", "WINDOWS_FULL_2019_x86_64", "WINDOWS_CORE_2022_x86_64", "WINDOWS_FULL_2022_x86_64",
    "AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "AL2023_x86_64_NEURON",
    "AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA",
})
# The AL2023 NVIDIA AMI per instance family, from the accelerated-AMI table (_ACCELERATED_AMIS):
# Graviton (g5g) and Grace (p6e-gb200, p6e-gb300) families need the ARM variant. AL2 reached end of
# support for EKS in November 2025, so GPU pools use AL2023
# (https://docs.aws.amazon.com/eks/latest/userguide/eks-ami-deprecation-faqs.html).
_X86_NVIDIA = ("p6-b300", "p6-b200", "p5", "p5e", "p5en", "p4d", "p4de", "p3", "p3dn",
               "g7e", "gr6", "g6", "g6e", "g6f", "gr6f", "g5", "g4dn")
_ARM_NVIDIA = ("g5g", "p6e-gb200", "p6e-gb300")
NVIDIA_AMI_TYPE_BY_FAMILY = {**dict.fromkeys(_X86_NVIDIA, "AL2023_x86_64_NVIDIA"),
                             **dict.fromkeys(_ARM_NVIDIA, "AL2023_ARM_64_NVIDIA")}

# Taint effects (_TAINT_API), from the Kubernetes spelling the plan uses.
TAINT_EFFECTS = frozenset({"NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"})
_TAINT_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
MAX_TAINTS = 50  # per node group (docstring of aws.eks.NodeGroup.taints, pulumi-aws 7.51.1)

# The capacity reservation of a reserved floor (_CAPACITY_RESERVATION_API). "targeted": only
# instances that name the reservation (the pool's launch template) may use it, so other on-demand
# launches in the account cannot eat the floor; "unlimited": it lasts until the pool is removed.
# The platforms below are the ones the API reference and the SDK docstring name first; the API has
# more (SQL Server and RHEL variants), which gpustack never sends.
INSTANCE_PLATFORMS = frozenset({"Linux/UNIX", "Red Hat Enterprise Linux", "SUSE Linux", "Windows",
                                "Windows with SQL Server"})
INSTANCE_MATCH_CRITERIA = frozenset({"open", "targeted"})
END_DATE_TYPES = frozenset({"unlimited", "limited"})
RESERVATION_INSTANCE_PLATFORM = "Linux/UNIX"
RESERVATION_MATCH_CRITERIA = "targeted"
RESERVATION_END_DATE_TYPE = "unlimited"


# Every node group launches from its own launch template, for two things a node group alone cannot
# do: tag what EC2 creates for a node (node-group tags stay on the node group: "tags are not propagated
# to any other resources", https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html), so
# Cost Explorer can split GPU spend by the attribution labels; and size the root volume for GPU images.
# Resource types EC2 tags at launch (LaunchTemplateTagSpecificationRequest.ResourceType,
# https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_LaunchTemplateTagSpecificationRequest.html).
TAGGED_AT_LAUNCH = ("instance", "volume", "network-interface")
LAUNCH_TAG_RESOURCE_TYPES = frozenset({"instance", "volume", "network-interface", "spot-instances-request",
                                       "elastic-gpu", "spot-fleet-request"})
# The AL2023 EKS AMIs boot from /dev/xvda (their builds map it as the root device: launch_block_device_mappings
# in clowdhaus/eksnode ami/al2023_amd64.pkrvars.hcl, which rebuilds the EKS AL2023 AMIs, and in
# aws-samples/amazon-eks-custom-amis); gp3: the general-purpose SSD.
ROOT_DEVICE = "/dev/xvda"
ROOT_VOLUME_TYPE = "gp3"
VOLUME_TYPES = frozenset({"standard", "io1", "io2", "gp2", "gp3", "sc1", "st1"})
# GPU families whose every size has local NVMe instance store (https://docs.aws.amazon.com/ec2/latest/
# instancetypes/ac.html#ac_instance-store). nodeadm assembles it as RAID0 and puts the kubelet's and
# containerd's directories on it (NodeConfig spec.instance.localStorage.strategy RAID0,
# https://awslabs.github.io/amazon-eks-ami/nodeadm/doc/api/), so images and emptyDir volumes land on NVMe.
NVME_INSTANCE_STORE_FAMILIES = frozenset({"g4dn", "g5", "g6", "g6e", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"})
LOCAL_STORAGE_STRATEGY = "RAID0"
LOCAL_STORAGE_STRATEGIES = frozenset({"RAID0", "RAID10", "Mount"})


def local_storage_strategy(instance_type: str) -> str | None:
    return LOCAL_STORAGE_STRATEGY if instance_family(instance_type) in NVME_INSTANCE_STORE_FAMILIES else None
# What the Cluster Autoscaler reads for a managed node group at zero nodes (cloudprovider/aws/aws_manager.go,
# buildNodeFromTemplate): the node group's labels and taints through eks:DescribeNodegroup, and resources
# from the node group's tags with this prefix (extractAllocatableResourcesFromTags), which override what
# the instance type says (e.g. nvidia.com/gpu: 8 on a p4de.24xlarge whose GPUs are MIG-partitioned).
NODE_TEMPLATE_RESOURCES = "k8s.io/cluster-autoscaler/node-template/resources/"
# EKS tag keys: at most 128 characters, values at most 256
# (https://docs.aws.amazon.com/eks/latest/userguide/eks-using-tags.html).
MAX_TAG_KEY = 128


def instance_family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def capacity_type(capacity: str) -> str | None:
    return _CAPACITY_TYPE.get(capacity)


def ami_type(instance_type: str) -> str | None:
    return NVIDIA_AMI_TYPE_BY_FAMILY.get(instance_family(instance_type))


def taint_effect(effect: str) -> str | None:
    return _TAINT_EFFECT.get(effect)


# kube-reserved on the EKS-optimized AMIs (AL2023 nodeadm, nodeadm/internal/kubelet/config.go, and the
# AL2 bootstrap.sh before it): CPU by the same tiers as GKE's, memory by pod density, 11 MiB x maxPods +
# 255 MiB, whatever the node's RAM; eviction-hard memory.available 100Mi. maxPods is the ENI formula
# ENIs x (IPv4 per ENI - 1) + 2, listed per type in the AMI's eni-max-pods.txt:
# https://github.com/awslabs/amazon-eks-ami/blob/0254c5b490f819627461d1b24f87e440cbdb251f/templates/shared/runtime/eni-max-pods.txt
# A type the table here lacks (a user catalog's) is sized with 737, the most any GPU type lists, which
# reserves more than EKS does.
_ENI_MAX_PODS = (
    ("g4dn.xlarge", 29), ("g4dn.2xlarge", 29), ("g4dn.4xlarge", 29), ("g4dn.8xlarge", 58), ("g4dn.12xlarge", 234),
    ("g4dn.16xlarge", 58), ("g4dn.metal", 737),
    ("g5.xlarge", 58), ("g5.2xlarge", 58), ("g5.4xlarge", 234), ("g5.8xlarge", 234), ("g5.12xlarge", 737),
    ("g5.16xlarge", 234), ("g5.24xlarge", 737), ("g5.48xlarge", 345),
    ("g6.xlarge", 58), ("g6.2xlarge", 58), ("g6.4xlarge", 234), ("g6.8xlarge", 234), ("g6.12xlarge", 234),
    ("g6.16xlarge", 737), ("g6.24xlarge", 737), ("g6.48xlarge", 737),
    ("g6e.xlarge", 58), ("g6e.2xlarge", 58), ("g6e.4xlarge", 234), ("g6e.8xlarge", 234), ("g6e.12xlarge", 292),
    ("g6e.16xlarge", 737), ("g6e.24xlarge", 492), ("g6e.48xlarge", 492),
    ("p3.2xlarge", 58), ("p3.8xlarge", 234), ("p3.16xlarge", 234), ("p3dn.24xlarge", 737),
    ("p4d.24xlarge", 737), ("p4de.24xlarge", 737), ("p5.4xlarge", 118), ("p5.48xlarge", 100), ("p5e.48xlarge", 100),
    ("p5en.48xlarge", 198), ("p6-b200.48xlarge", 198), ("p6-b300.48xlarge", 198),
)
KUBELET_RESERVATION = KubeletReservation(
    CPU_TIERS, memory_mib_per_pod=11, memory_mib_base=255, max_pods=_ENI_MAX_PODS, default_max_pods=737,
    source="https://github.com/awslabs/amazon-eks-ami/blob/main/nodeadm/internal/kubelet/config.go")


@CLOUDS.register
class EKS(Cloud):
    name = "aws"
    aliases = ("eks",)
    display_name = "EKS"
    provisioners = ("managed", "karpenter")
    kubelet_reservation = KUBELET_RESERVATION
    # Region codes start with their geographic area: us, ca, mx (North America), sa, eu, il, me, af, ap
    # (https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html).
    region_areas = {"us": "north-america", "ca": "north-america", "mx": "north-america", "sa": "south-america",
                    "eu": "europe", "il": "middle-east", "me": "middle-east", "af": "africa", "ap": "asia-pacific"}
    # Durations are sold "in 1-day increments up to 14 days, and in 7-day increments up to 182 days"; "each
    # Capacity Block can have up to 64 instances, and you can have up to 256 instances across Capacity
    # Blocks" (capacity-blocks-purchase). Instances running in a block are terminated 30 minutes before its
    # end (60 for UltraServers) (capacity-blocks-using). Ids: a block's reservation cr-<hex>, its offering
    # cb-<hex> (the EC2NodeClass CRD takes ^cr-[0-9a-z]+$ in capacityReservationSelectorTerms[].id).
    block_terms = BlockTerms(
        seller="EC2", days=tuple(range(1, 15)) + tuple(range(21, 183, 7)),
        days_rule="1 to 14 days in steps of 1, then 21 to 182 in steps of 7", max_instances=64,
        reservation_id=r"cr-[0-9a-f]{8,17}", offering_id=r"cb-[0-9a-f]{8,17}", reclaim_minutes=30,
        reclaim_source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html",
        source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html")
    unsupported = {
        Feature.FLEX_START: "EC2 sells no flex-start capacity; its GPUs for a fixed window are Capacity Blocks for ML "
                            "(capacity: block, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html)",
    }
    # The generated preview job assumes a read-only IAM role by OIDC (its trust policy names the
    # repository's preview environment as the token's subject).
    preview_login = PreviewLogin(
        title="AWS read-only role (OIDC)", action="aws-credentials",
        inputs={"role-to-assume": "${{ secrets.GPUSTACK_AWS_PREVIEW_ROLE_ARN }}", "aws-region": "${{ matrix.region }}"},
        secrets=("GPUSTACK_AWS_PREVIEW_ROLE_ARN",),
        source="https://docs.github.com/en/actions/how-tos/secure-your-work/security-harden-deployments/oidc-in-aws")
    example = ExampleTarget(
        region="us-east-1", cluster="ml-prod",
        settings={"subnet_ids": ("subnet-0123456789abcdef0", "subnet-0fedcba9876543210")},
        provider_config={"aws:region": "us-east-1"})
    settings = (
        # Subnets the node groups launch into.
        Setting("subnet_ids", True, "strings", r"subnet-[0-9a-f]{1,17}", "an EC2 subnet id such as 'subnet-0a1b2c3d'"),
        # IAM role of the nodes; gpustack creates one with the standard EKS worker policies when absent.
        Setting("node_role_arn", False, "string",
                r"arn:aws(-cn|-us-gov|-iso|-iso-b)?:iam::[0-9]{12}:role/([A-Za-z0-9+=,.@_-]{1,64}/){0,8}[A-Za-z0-9+=,.@_-]{1,64}",
                "an IAM role ARN such as 'arn:aws:iam::123456789012:role/eks-nodes' (a role name of at most 64 "
                "letters, digits and '+=,.@_-', after an optional path)",
                # IAM's RoleName and Path patterns (https://docs.aws.amazon.com/IAM/latest/APIReference/API_Role.html)
                api_pattern=r"arn:aws[a-z-]*:iam::[0-9]{12}:role(/|/[\u0021-\u007E]+/)[\w+=,.@-]{1,64}",
                api_source="https://docs.aws.amazon.com/IAM/latest/APIReference/API_Role.html"),
    )
    # EKS cluster names: 1-100 characters, letters, digits, '-' and '_', starting with a letter or digit
    # (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html).
    cluster_rule = (r"[0-9A-Za-z][A-Za-z0-9\-_]{0,99}", "an EKS cluster name (letters, digits, '-', '_'; at most 100)")
    # aws.eks.NodeGroup.cluster_name is the cluster's name (an aws.eks.Cluster's `name` output, auto-named
    # when the program gives none): https://www.pulumi.com/registry/packages/aws/api-docs/eks/nodegroup/
    cluster_attribute = "name"
    node_identity = "the node IAM role's ARN (settings.node_role_arn in the spec)"
    cluster_api_rule = (r"[0-9A-Za-z][A-Za-z0-9\-_]*", "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html")
    # Node group names: at most 63 characters, first a letter or digit, then letters, digits, '-' and
    # '_' (docstring of aws.eks.NodeGroup.node_group_name, pulumi-aws 7.51.1).
    pool_names = NameRule(63, r"[0-9A-Za-z][A-Za-z0-9\-_]{0,62}", "-",
                          "https://www.pulumi.com/registry/packages/aws/api-docs/eks/nodegroup/")
    # Managed node groups label nodes with their capacity type (the spot taint: `managed.py`).
    # gp3 root volumes: 1 GiB to 16 TiB (https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html).
    disk_gib_range = (1, 16384, "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html")
    # A subnet "must reside entirely within one Availability Zone"
    # (https://docs.aws.amazon.com/vpc/latest/userguide/configure-subnets.html): a floor spread by a
    # workload's availability gets one node group and one reservation per subnet of settings.subnet_ids.
    spread_setting = "subnet_ids"
    single_zone_floor = ("an EC2 capacity reservation is zonal, and the floor's node group launches in the zone of "
                         "settings.subnet_ids[0]; reserve more zones by hand to spread it "
                         f"({_CAPACITY_RESERVATION_API})")
    spot_node_label = ("eks.amazonaws.com/capacityType", "SPOT")
    # The AL2023 NVIDIA AMIs carry the driver and the container toolkit: "you must disable the operator
    # installation of the driver and toolkit, as these are already included" (_ACCELERATED_AMIS).
    image_has_gpu_driver = True
    # The control plane's ENIs serve the API on TCP 443, the `kubernetes` Service's endpoint port as well
    # (the nodes' minimum rule to the cluster security group is TCP 443:
    # https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html).
    api_server_ports = (443,)
    image_has_container_toolkit = True

    # The autoscaler's GPU label (GPULabel in cloudprovider/aws/aws_cloud_provider.go); EKS does not put it
    # on nodes, so node groups declare it: without it the autoscaler does not wait for the device plugin
    # and starts more nodes while the first ones come up.
    gpu_label = "k8s.amazonaws.com/accelerator"
    gpu_label_declared = True
    # Reserved floors: updateStrategy MINIMAL "terminates the old instances before launching the new
    # instances" (API_NodegroupUpdateConfig), so an update never needs a node beyond the reservation.
    # The DEFAULT strategy launches first, "the larger of twice the number of Availability Zones or
    # maxUnavailable" nodes (managed-node-update-behavior), and a floor lives in one zone: 2 nodes.
    floor_upgrade = FloorUpgradeRule(
        settings=(("max_unavailable", 1), ("update_strategy", "MINIMAL")),
        max_surge=0, max_unavailable=1, default_surge=lambda nodes: max(2 * 1, 1),
        source="https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html; "
               "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html")
