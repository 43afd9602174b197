"""EKS with Karpenter: per pool a `karpenter.sh/v1` NodePool and its `karpenter.k8s.aws/v1` EC2NodeClass.

The NodePool, its NodeOverlay and their checks are Karpenter's (`gpustack.clouds.karpenter`); this
module adds what is EKS's: the EC2NodeClass (AMI alias, root volume, instance store, subnets, security
groups, node role, tags) and the capacity reservation of a reserved floor. `compile` spells each
planned pool as Karpenter v1.14 takes it (`EC2KarpenterPool`, stored in the plan); `objects` builds
the objects as data from it, which `gpustack render` writes and the Pulumi program
(`karpenter_backend.py`) declares. Karpenter itself (controller, its IAM role, the node role and the
discovery tags) is the cluster's: docs/karpenter.md says what it needs.

Facts are from aws/karpenter-provider-aws at tag v1.14.1 (bde00654cd316fddb3dccfba3f5ac07039865429),
its docs and CRDs (the CRDs gpustack validates against are under tests/schemas).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds import karpenter as core
from gpustack.clouds.aws import facts
from gpustack.clouds.aws.managed import CapacityReservation, floor_reservation
from gpustack.clouds.base import Feature
from gpustack.clouds.karpenter import (
    CAPACITY_TYPE,
    INSTANCE_TYPE,
    NODEPOOL_API,
    NOTEBOOK_EMPTY_DELAY,
    WEIGHTS,
    KarpenterDocs,
    KarpenterPool,
    KarpenterProvisioner,
)

if TYPE_CHECKING:
    from gpustack.clouds.kubelet import KubeletReservation
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

__all__ = ["CAPACITY_TYPE", "INSTANCE_TYPE", "NODEPOOL_API", "NOTEBOOK_EMPTY_DELAY", "WEIGHTS", "EC2KarpenterPool",
           "Karpenter", "KarpenterPool"]

RELEASE = "v1.14.1"
_REPO = f"https://github.com/aws/karpenter-provider-aws/blob/{RELEASE}"
NODEPOOLS_DOC = f"{_REPO}/website/content/en/docs/concepts/nodepools.md"
NODECLASSES_DOC = f"{_REPO}/website/content/en/docs/concepts/nodeclasses.md"
DISRUPTION_DOC = f"{_REPO}/website/content/en/docs/concepts/disruption.md"
SCHEDULING_DOC = f"{_REPO}/website/content/en/docs/concepts/scheduling.md"
ODCR_DOC = f"{_REPO}/website/content/en/docs/tasks/odcrs.md"
OVERLAY_DOC = f"{_REPO}/website/content/en/docs/concepts/nodeoverlays.md"
NODEPOOL_CRD = f"{_REPO}/pkg/apis/crds/karpenter.sh_nodepools.yaml"
NODECLASS_CRD = f"{_REPO}/pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml"
DOCS = KarpenterDocs(nodepools=NODEPOOLS_DOC, disruption=DISRUPTION_DOC, scheduling=SCHEDULING_DOC,
                     overlay=OVERLAY_DOC, nodepool_crd=NODEPOOL_CRD)

NODECLASS_GROUP = "karpenter.k8s.aws"
# karpenter.sh/capacity-type values; a reserved floor launches only into its capacity reservation
# (ODCR_DOC: "reserved" needs feature gate ReservedCapacity, beta and on by default since v1.6).
CAPACITY_TYPES = frozenset({"spot", "on-demand", "reserved"})
# A capacity block is reserved capacity of type capacity-block (Capacity Blocks since v1.6): the NodePool
# requires karpenter.k8s.aws/capacity-reservation-type capacity-block, and its EC2NodeClass selects the
# block by id (or, for a block the program buys, by its gpustack.dev/pool tag) in
# capacityReservationSelectorTerms (ODCR_DOC). Karpenter drains a block's nodes 10 minutes before EC2
# reclaims them, 30 minutes before the block ends (ODCR_DOC, "Capacity Blocks").
RESERVATION_TYPE = f"{NODECLASS_GROUP}/capacity-reservation-type"
BLOCK_RESERVATION_TYPE = "capacity-block"
BLOCK_DRAIN = (10, ODCR_DOC)
# The feature gate reserved capacity needs (beta, on by default since v1.6; settings.md of the release).
RESERVED_CAPACITY_GATE = "ReservedCapacity"
SETTINGS_DOC = f"{_REPO}/website/content/en/docs/reference/settings.md"

# The EKS-optimized AL2023 AMIs by alias: Karpenter picks the NVIDIA variant for GPU instance types
# (pkg/providers/amifamily/al2023.go, DescribeImageQuery: variants standard, nvidia, neuron). `latest`
# follows new AMIs, which drifts the nodes (NODECLASSES_DOC, spec.amiSelectorTerms); the plan says so.
AMI_ALIAS = "al2023@latest"
AMI_FAMILY_ARCH = {"AL2023_x86_64_NVIDIA": "amd64", "AL2023_ARM_64_NVIDIA": "arm64"}
# The AL2023 root volume Karpenter maps by default is /dev/xvda, 20Gi gp3 (NODECLASSES_DOC,
# spec.blockDeviceMappings); gpustack sizes it by the plan's disk.
VOLUME_TYPES = frozenset({"standard", "io1", "io2", "gp2", "gp3", "sc1", "st1"})  # NODECLASS_CRD
# The security groups of the nodes, found by the discovery tag of Karpenter's getting-started guide
# (website/content/en/docs/getting-started/getting-started-with-karpenter, step02-create-cluster.sh).
DISCOVERY_TAG = "karpenter.sh/discovery"
# The node role when settings.node_role_arn is absent: the one the getting-started guide creates
# (NODECLASSES_DOC, spec.role: "KarpenterNodeRole-$CLUSTER_NAME").
DEFAULT_NODE_ROLE = "KarpenterNodeRole-{cluster}"
# The tag a reserved floor's capacity reservation carries, which its EC2NodeClass selects
# (spec.capacityReservationSelectorTerms[].tags, ODCR_DOC: every ODCR Karpenter uses must be selected).
RESERVATION_TAG = "gpustack.dev/pool"
# Karpenter takes 7.5% off an instance type's memory (rounded up to MiB) before the kubelet's reservation until
# it has seen a node of the type: pkg/providers/instancetype/types.go, memory() ("Account for VM overhead"),
# with settings.vmMemoryOverheadPercent 0.075 (charts/karpenter/values.yaml; pkg/operator/options/options.go,
# "when cached information is unavailable"). A g4dn.2xlarge (32,768 Mi) is 30,310 Mi to it, 29,636 Mi after
# kube-reserved and eviction: a pool is planned on what Karpenter believes, or its first node never launches.
VM_MEMORY_OVERHEAD = 0.075
KUBELET_RESERVATION = dataclasses.replace(
    facts.KUBELET_RESERVATION, vm_memory_overhead=VM_MEMORY_OVERHEAD,
    source=f"{facts.KUBELET_RESERVATION.source}; {_REPO}/pkg/providers/instancetype/types.go (memory: vmMemoryOverheadPercent)")


@dataclasses.dataclass(frozen=True)
class EC2KarpenterPool(KarpenterPool):
    """A pool's NodePool and its EC2NodeClass."""

    role: str
    ami_alias: str
    subnet_ids: tuple[str, ...]
    security_group_tags: tuple[tuple[str, str], ...]
    root_device: str
    root_volume_size: str
    root_volume_type: str
    instance_store_policy: str | None
    tags: tuple[tuple[str, str], ...]
    reservation_tags: tuple[tuple[str, str], ...]  # () unless a reserved floor
    reservation: CapacityReservation | None  # the floor's, declared beside the objects (None: no floor)
    block_reservation_id: str | None = None  # a capacity block held, selected by id
    block_offering_id: str | None = None  # a capacity block the program buys, selected by its tag

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(tags=dict(self.tags), security_group_tags=dict(self.security_group_tags),
                   reservation_tags=dict(self.reservation_tags))
        for key in ("block_reservation_id", "block_offering_id"):
            if out[key] is None:
                del out[key]
        return out


def node_role(target: Target) -> str:
    arn = target.setting("node_role_arn")
    return str(arn).rsplit("/", 1)[-1] if arn else DEFAULT_NODE_ROLE.format(cluster=target.cluster)


class Karpenter(KarpenterProvisioner):
    name = "karpenter"
    description = f"Karpenter {RELEASE} NodePools and EC2NodeClasses on EKS"
    # DRA: alpha in Karpenter on AWS, behind the chart's settings.enableDRA; Karpenter carries per instance type
    # what the NVIDIA and EFA DRA drivers publish, so it launches the first node for a claim itself.
    dra = DraSupport(
        scale_from_zero=True,
        switch=("Karpenter's DRA support is alpha: set settings.enableDRA: true in Karpenter's Helm values (it "
                "needs Kubernetes 1.34 or later; https://karpenter.sh/docs/tasks/dra/)"),
        mode_notes={"time-slicing": "Karpenter plans time-sliced DRA GPUs on Kubernetes 1.36 or later only "
                                    "(https://karpenter.sh/docs/tasks/dra/)"},
        # "DRA requires Kubernetes 1.34 or later. GPU time-slicing requires Kubernetes 1.36 or later."
        mode_minimums={"time-slicing": "1.36"},
        source="https://karpenter.sh/docs/tasks/dra/",
    )
    backend = "karpenter_backend"
    names_cluster = ("its EC2NodeClass finds subnets and security groups by the tag karpenter.sh/discovery: <cluster> "
                     "and names the node role after the cluster")
    release = RELEASE
    docs = DOCS
    compiled_type = EC2KarpenterPool
    node_class_group = NODECLASS_GROUP
    node_class_kind = "EC2NodeClass"
    node_class_version = "v1"
    provider_label_domains = (NODECLASS_GROUP,)
    # Labels the AWS provider registers as well known (pkg/apis/v1/labels.go), those a pod may select.
    provider_well_known_labels = frozenset({"karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-name",
                                            "karpenter.k8s.aws/instance-family"})
    overlay_condition = (f"unless it runs with --feature-gates NodeOverlay=true (alpha since v1.7, off by default: {OVERLAY_DOC}), "
                         "which reads the pool's NodeOverlay")
    # Karpenter has no timetable: the auto-stop CronJobs scale the workloads to zero, and the emptied
    # nodes go once the NodePool's consolidateAfter has passed (DISRUPTION_DOC, "Consolidation").
    unsupported = {Feature.NATIVE_SCHEDULE: core.schedule_gap(DISRUPTION_DOC)}
    capacity_types = {"spot": "spot", "on-demand": "on-demand", "reserved": "reserved", "block": "reserved"}
    block_drain = BLOCK_DRAIN
    fallback_mechanism = core.weight_fallback(SCHEDULING_DOC, "run Karpenter (the NodePools' weights do the ranking)")
    drifting_changes = {**core.drift_changes(DISRUPTION_DOC), "settings.subnet_ids": (
        f"the EC2NodeClass's subnetSelectorTerms change: its nodes drift ({DISRUPTION_DOC}, Drift)")}

    @property
    def kubelet_reservation(self) -> KubeletReservation:
        return KUBELET_RESERVATION

    def arch(self, pool: Pool) -> str:
        return AMI_FAMILY_ARCH.get(facts.ami_type(pool.instance_type) or "", "")

    def arch_refusal(self, pool: Pool) -> str:
        return (f"instance family {facts.instance_family(pool.instance_type)!r} (NVIDIA AL2023 AMIs are known for "
                f"{', '.join(sorted(facts.NVIDIA_AMI_TYPE_BY_FAMILY))})")

    def node_class_fields(self, pool: Pool, target: Target) -> dict[str, Any]:
        return dict(
            role=node_role(target),
            ami_alias=AMI_ALIAS,
            subnet_ids=tuple(str(s) for s in target.setting("subnet_ids") or ()),  # type: ignore[attr-defined]
            security_group_tags=((DISCOVERY_TAG, target.cluster),),
            root_device=facts.ROOT_DEVICE,
            root_volume_size=f"{pool.disk_gib}Gi",
            root_volume_type=facts.ROOT_VOLUME_TYPE,
            instance_store_policy="RAID0" if facts.local_storage_strategy(pool.instance_type) else None,
            tags=tuple(sorted(pool.attribution.items())),
            reservation_tags=((RESERVATION_TAG, pool.cloud_name),) if pool.reserved_nodes
            or (pool.block is not None and pool.block.reservation_id is None) else (),
            reservation=floor_reservation(pool),
            block_reservation_id=pool.block.reservation_id if pool.block else None,
            block_offering_id=pool.block.offering_id if pool.block else None,
        )

    def capacity_requirements(self, pool: Pool) -> list[core.Requirement]:
        if pool.block is None:
            return []
        return [core.Requirement(RESERVATION_TYPE, "In", (BLOCK_RESERVATION_TYPE,))]

    def check_node_class(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, EC2KarpenterPool)
        problems = []
        if not compiled.subnet_ids:
            problems.append("no settings.subnet_ids for the EC2NodeClass's subnetSelectorTerms")
        if compiled.root_volume_type not in VOLUME_TYPES:
            problems.append(f"volume type {compiled.root_volume_type!r} is not one of the EC2NodeClass's")
        return problems

    def node_class_spec(self, pool: Pool) -> dict[str, Any]:
        c = pool.compiled
        assert isinstance(c, EC2KarpenterPool)
        ebs: dict[str, Any] = {"deleteOnTermination": True, "encrypted": True, "volumeSize": c.root_volume_size,
                               "volumeType": c.root_volume_type}
        spec: dict[str, Any] = {
            "role": c.role,
            "amiSelectorTerms": [{"alias": c.ami_alias}],
            "subnetSelectorTerms": [{"id": subnet} for subnet in c.subnet_ids],
            "securityGroupSelectorTerms": [{"tags": dict(c.security_group_tags)}],
            "blockDeviceMappings": [{"deviceName": c.root_device, "rootVolume": True, "ebs": ebs}],
        }
        if c.instance_store_policy:
            spec["instanceStorePolicy"] = c.instance_store_policy
        if c.block_reservation_id:
            spec["capacityReservationSelectorTerms"] = [{"id": c.block_reservation_id}]
        elif c.reservation_tags:
            spec["capacityReservationSelectorTerms"] = [{"tags": dict(c.reservation_tags)}]
        if c.tags:
            spec["tags"] = dict(c.tags)
        return spec

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        """What the NodePool of `pool` does that a person reading the plan must know."""
        found = list(super().pool_notes(pool))
        if pool.block is not None:
            which = (f"the block {pool.block.reservation_id} by id" if pool.block.reservation_id else
                     f"the block the Pulumi program buys by its tag {RESERVATION_TAG}={pool.cloud_name}")
            found.append(f"Launches only into capacity blocks: {CAPACITY_TYPE} reserved and {RESERVATION_TYPE} "
                         f"{BLOCK_RESERVATION_TYPE}, the EC2NodeClass selecting {which} ({ODCR_DOC}); Karpenter needs "
                         f"the {RESERVED_CAPACITY_GATE} feature gate (beta, on by default since v1.6: {SETTINGS_DOC}) and "
                         "ec2:DescribeCapacityReservations.")
        if pool.reserved_nodes:
            found.append(f"Launches only into the capacity reservation tagged {RESERVATION_TAG}={pool.cloud_name} "
                         f"(the Pulumi program declares it; with `gpustack render`, tag yours so): Karpenter uses "
                         f"no open reservation it is not told of ({ODCR_DOC}).")
        return tuple(found)

    def target_notes(self) -> list[str]:
        return [f"Karpenter {RELEASE} provisions the pools: one NodePool and EC2NodeClass each, spot tried before "
                f"on-demand by spec.weight; nodes follow the AMI alias {AMI_ALIAS}, so each new EKS AMI drifts them, "
                f"replaced within each NodePool's disruption budgets ({NODECLASSES_DOC}), reserved floors excepted (their "
                f"floor-upgrade warnings); docs/karpenter.md says what "
                "the cluster needs (the controller, its IAM, the node role and the discovery tags)."]


PROVISIONER = Karpenter

