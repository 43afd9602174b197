"""EKS managed node groups with the Cluster Autoscaler: the default provisioner of EKS.

`compile` spells each planned pool as the EKS and EC2 APIs take it (`EksNodeGroup`, stored in the
plan), from the enum tables of `facts.py`, with the labels and tags that show the autoscaler a group at
zero (`node_labels`, `node_template_tags`); `check_pool` checks those values; `backend.py` maps them to
pulumi-aws arguments.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds._enums import EnumValue, enum_problems
from gpustack.clouds.aws import facts
from gpustack.clouds.base import PRIORITY_EXPANDER, FallbackMechanism, Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.clouds.compiled import CompiledPool

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target


@dataclasses.dataclass(frozen=True)
class NodeGroupTaint:
    key: str
    value: str
    effect: str | None  # NO_SCHEDULE | NO_EXECUTE | PREFER_NO_SCHEDULE


@dataclasses.dataclass(frozen=True)
class CapacityReservation:
    """The targeted EC2 capacity reservation of a reserved floor."""

    instance_count: int
    instance_platform: str
    instance_match_criteria: str
    end_date_type: str


def floor_reservation(pool: Pool) -> CapacityReservation | None:
    """The capacity reservation a reserved floor gets, whichever provisioner launches into it."""
    if not pool.reserved_nodes:
        return None
    return CapacityReservation(pool.reserved_nodes, facts.RESERVATION_INSTANCE_PLATFORM,
                               facts.RESERVATION_MATCH_CRITERIA, facts.RESERVATION_END_DATE_TYPE)


@dataclasses.dataclass(frozen=True)
class CapacityBlockLaunch:
    """How a block pool's node group launches into its capacity block (facts.BLOCK_SOURCE)."""

    market_type: str  # InstanceMarketOptions.MarketType
    reservation_id: str | None  # the block held; None: the block the program buys (offering_id)
    offering_id: str | None  # aws.ec2.CapacityBlockReservation, only when the spec asks for it
    instance_platform: str
    zone: str  # the node group's subnets are the target's subnets in this zone


def block_launch(pool: Pool) -> CapacityBlockLaunch | None:
    if pool.block is None:
        return None
    return CapacityBlockLaunch(facts.BLOCK_MARKET_TYPE, pool.block.reservation_id, pool.block.offering_id,
                               facts.RESERVATION_INSTANCE_PLATFORM, pool.block.zone)


@dataclasses.dataclass(frozen=True)
class ScheduledAction:
    """An Auto Scaling scheduled action on the node group's group: `recurrence` in `time_zone`."""

    suffix: str  # of the Pulumi name: start | stop | start-2 ...
    name: str  # scheduled_action_name
    recurrence: str
    time_zone: str
    min_size: int
    max_size: int
    desired_capacity: int


@dataclasses.dataclass(frozen=True)
class EksNodeGroup(CompiledPool):
    capacity_type: str | None
    ami_type: str | None
    taints: tuple[NodeGroupTaint, ...]
    reservation: CapacityReservation | None
    schedules: tuple[ScheduledAction, ...]
    # The launch template: tags at launch, the root volume, local NVMe for the kubelet and containerd.
    tagged_at_launch: tuple[str, ...]
    root_device: str
    root_volume_type: str
    local_storage_strategy: str | None
    # The node group's labels (the plan's and the autoscaler's GPU label) and the tags that tell the
    # autoscaler what one node offers while the group is at zero.
    labels: tuple[tuple[str, str], ...]
    template_tags: tuple[tuple[str, str], ...]
    block: CapacityBlockLaunch | None = None  # capacity: block

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(labels=dict(self.labels), template_tags=dict(self.template_tags))
        if self.block is None:
            del out["block"]
        return out


def node_template_tags(pool: Pool) -> dict[str, str]:
    """The node group tags that tell the autoscaler what one node of `pool` offers while the group is at
    zero (`facts.NODE_TEMPLATE_RESOURCES`): its allocatable cpu and memory (else the template promises
    the instance's full capacity) and its extended resources."""
    offers = [*pool.node_allocatable, *((name, str(count)) for name, count in pool.node_offers)]
    return {f"{facts.NODE_TEMPLATE_RESOURCES}{name}": value for name, value in offers}


def node_labels(pool: Pool) -> dict[str, str]:
    """The node group's labels: the plan's, and the GPU label the autoscaler waits on."""
    return {**dict(pool.labels), **dict(pool.autoscaler_labels)}


def _schedules(pool: Pool) -> tuple[ScheduledAction, ...]:
    """Start at the window's start with the pool's bounds; stop at its end with 0/0/0."""
    if pool.schedule is None:
        return ()
    actions = []
    for action, crons, low, high in (("start", pool.schedule.start_crons, pool.min_nodes, pool.max_nodes),
                                     ("stop", pool.schedule.stop_crons, 0, 0)):
        for index, cron in enumerate(crons, 1):
            suffix = action if len(crons) == 1 else f"{action}-{index}"
            actions.append(ScheduledAction(suffix, f"gpustack-{pool.cloud_name}-{suffix}", cron,
                                           pool.schedule.timezone, low, high, low))
    return tuple(actions)


class ManagedNodeGroups(Provisioner):
    name = "managed"
    description = "EKS managed node groups, scaled by the Cluster Autoscaler"
    # DRA: managed node groups run NVIDIA's DRA driver like any node; the upstream Cluster Autoscaler cannot
    # grow a group at zero for a claim.
    dra = DraSupport(
        scale_from_zero=False,
        scale_from_zero_gap="the Cluster Autoscaler's AWS provider builds a node group's template node without ResourceSlices, so its scale-up simulation finds no device for a claim while the group is at zero (https://github.com/kubernetes/autoscaler/issues/7799; only the cluster-api provider models them, https://github.com/kubernetes/autoscaler/pull/7804)",
        source="https://github.com/kubernetes/autoscaler/issues/7799",
    )
    # EKS adds no spot taint, so gpustack declares one on spot pools (docs/deploy.md lists each cloud's).
    spot_taint = ("gpustack.dev/spot", "true", "NoSchedule")
    # The cluster autoscaler builds a node group's template from one instance type: "instance types should
    # have the same amount of RAM and number of CPU cores, since this is fundamental to CA's scaling
    # calculations" (cloudprovider/aws/README.md, "Using Mixed Instances Policies and Spot Instances",
    # kubernetes/autoscaler tag cluster-autoscaler-1.36.1).
    mixed_sizes_gap = ("the cluster autoscaler models a node group by one of its instance types, so a pod sized for "
                       "a larger one may start a node too small for it (https://github.com/kubernetes/autoscaler/blob/"
                       "cluster-autoscaler-1.36.1/cluster-autoscaler/cloudprovider/aws/README.md"
                       "#using-mixed-instances-policies-and-spot-instances)")

    def compile(self, pool: Pool, target: Target) -> EksNodeGroup:
        reservation = floor_reservation(pool)
        return EksNodeGroup(
            capacity_type=facts.capacity_type(pool.capacity),
            ami_type=facts.ami_type(pool.instance_type),
            taints=tuple(NodeGroupTaint(t.key, t.value, facts.taint_effect(t.effect)) for t in pool.taints),
            reservation=reservation,
            schedules=_schedules(pool) if self.supports(Feature.NATIVE_SCHEDULE) else (),
            tagged_at_launch=facts.TAGGED_AT_LAUNCH,
            root_device=facts.ROOT_DEVICE,
            root_volume_type=facts.ROOT_VOLUME_TYPE,
            local_storage_strategy=facts.local_storage_strategy(pool.instance_type),
            labels=tuple(sorted(node_labels(pool).items())),
            template_tags=tuple(sorted(node_template_tags(pool).items())),
            block=block_launch(pool),
        )

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        if pool.block is None:
            return ()
        return (f"A capacity block's node group (capacityType CAPACITY_BLOCK, its launch template's market type "
                f"capacity-block) launches in the block's zone {pool.block.zone} only; EKS updates it (a new AMI "
                f"or Kubernetes version) only at desired size 0, so scale it to 0 first ({facts.BLOCK_SOURCE}).",)

    def check_pool(self, pool: Pool) -> list[str]:
        assert isinstance(pool.compiled, EksNodeGroup)
        problems = super().check_pool(pool) + enum_problems(self.cloud.display_name, compiled_enums(pool))
        problems += [f"node-template tag {key!r} is longer than EKS's {facts.MAX_TAG_KEY} characters"
                     for key, _ in pool.compiled.template_tags if len(key) > facts.MAX_TAG_KEY]
        if len(pool.taints) > facts.MAX_TAINTS:
            problems.append(f"{len(pool.taints)} taints; an EKS node group takes at most {facts.MAX_TAINTS}")
        return problems

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

    # Spot first: the Cluster Autoscaler's priority expander ranks node groups by regexes on their ids,
    # highest priority first (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/
    # expander/priority/readme.md). A managed node group's id is the name of the Auto Scaling group EKS
    # creates for it, `eks-<node group name>-<uuid>`: AWS chooses it, and the expander sees it, not the
    # node group's name (kubernetes/autoscaler#3871; shape in terraform-aws-modules/terraform-aws-eks#3007,
    # the bare `eks-<uuid>` of early node groups in aws/containers-roadmap#1304). gpustack does not run
    # the autoscaler on EKS.
    fallback_mechanism = FallbackMechanism(
        PRIORITY_EXPANDER,
        node_group=r"^eks-{pool}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        node_group_example="eks-{pool}-40bbb26b-8679-eb64-d33a-4ba475413529",
        namespace="kube-system",  # where the upstream manifests and the Helm chart's docs run it
        user_action="run the Cluster Autoscaler in kube-system with --expander=priority (Helm chart "
                    "cluster-autoscaler: extraArgs.expander=priority)",
        source="https://github.com/kubernetes/autoscaler/issues/3871",
    )


PROVISIONER = ManagedNodeGroups


def compiled_enums(pool: Pool) -> list[EnumValue]:
    """Every enum string the EKS backend sends for `pool`, as compiled."""
    compiled = pool.compiled
    assert isinstance(compiled, EksNodeGroup)
    values = [
        EnumValue("capacity_type", f"capacity {pool.capacity!r}", compiled.capacity_type, facts.CAPACITY_TYPES),
        EnumValue("ami_type", f"instance family {facts.instance_family(pool.instance_type)!r}",
                  compiled.ami_type, facts.AMI_TYPES,
                  f"NVIDIA AMI types are known for {', '.join(sorted(facts.NVIDIA_AMI_TYPE_BY_FAMILY))}"),
    ]
    values += [EnumValue("taints.effect", f"taint effect {t.effect!r}", c.effect, facts.TAINT_EFFECTS)
               for t, c in zip(pool.taints, compiled.taints)]
    values += [EnumValue("tag_specifications.resource_type", "", kind, facts.LAUNCH_TAG_RESOURCE_TYPES)
               for kind in compiled.tagged_at_launch]
    values.append(EnumValue("block_device_mappings.ebs.volume_type", "", compiled.root_volume_type,
                            facts.VOLUME_TYPES))
    if compiled.local_storage_strategy is not None:
        values.append(EnumValue("NodeConfig localStorage.strategy", "", compiled.local_storage_strategy,
                                facts.LOCAL_STORAGE_STRATEGIES))
    if compiled.block:
        values += [EnumValue("instance_market_options.market_type", "a capacity block", compiled.block.market_type,
                             facts.MARKET_TYPES),
                   EnumValue("instance_platform", "a capacity block", compiled.block.instance_platform,
                             facts.INSTANCE_PLATFORMS)]
    if compiled.reservation:
        r = compiled.reservation
        values += [
            EnumValue("instance_platform", "a reserved floor", r.instance_platform, facts.INSTANCE_PLATFORMS),
            EnumValue("instance_match_criteria", "a reserved floor", r.instance_match_criteria,
                      facts.INSTANCE_MATCH_CRITERIA),
            EnumValue("end_date_type", "a reserved floor", r.end_date_type, facts.END_DATE_TYPES),
        ]
    return values
