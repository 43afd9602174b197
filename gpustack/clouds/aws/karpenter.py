"""EKS with Karpenter: per pool a `karpenter.sh/v1` NodePool and its `karpenter.k8s.aws/v1` EC2NodeClass.

`compile` spells each planned pool as Karpenter v1.14 takes it (`KarpenterPool`, stored in the plan);
`objects` builds the two objects as data from it, which `gpustack render` writes and the Pulumi
program (`karpenter_backend.py`) declares. Karpenter itself (controller, its IAM role, the node role
and the discovery tags) is the cluster's: docs/karpenter.md says what it needs.

Facts are from aws/karpenter-provider-aws at tag v1.14.1 (bde00654cd316fddb3dccfba3f5ac07039865429),
its docs and CRDs (the CRDs gpustack validates against are under tests/schemas).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gpustack.clouds.aws import facts
from gpustack.clouds.aws.managed import CapacityReservation, floor_reservation
from gpustack.clouds.base import NODEPOOL_WEIGHT, FallbackMechanism, Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.model import CompiledPool

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

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

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_GROUP = "karpenter.k8s.aws"
NODECLASS_API = f"{NODECLASS_GROUP}/v1"
# NodeOverlay, alpha: read only with --feature-gates NodeOverlay=true (OVERLAY_DOC). An overlay that
# requires karpenter.sh/nodepool applies to that NodePool's instance types only: the controller adds the
# NodePool's name and template labels to each instance type's requirements before matching
# (kubernetes-sigs/karpenter pkg/controllers/nodeoverlay/controller.go, getOverlaidOfferings).
OVERLAY_API = "karpenter.sh/v1alpha1"

# Well-known labels Karpenter schedules on (NODEPOOLS_DOC, "spec.template.spec.requirements").
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
ZONE = "topology.kubernetes.io/zone"
# The label Karpenter puts on every node of a NodePool (restricted in templates: NODEPOOL_CRD).
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# karpenter.sh/capacity-type values; a reserved floor launches only into its capacity reservation
# (ODCR_DOC: "reserved" needs feature gate ReservedCapacity, beta and on by default since v1.6).
CAPACITY_TYPES = frozenset({"spot", "on-demand", "reserved"})
_CAPACITY_TYPE = {"spot": "spot", "on-demand": "on-demand", "reserved": "reserved"}
# Label domains a NodePool template may not set (CEL rules of NODEPOOL_CRD, spec.template.metadata.labels;
# the few well-known keys they allow gpustack never sets), and the one restricted key beyond them.
RESTRICTED_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
RESTRICTED_LABELS = frozenset({"kubernetes.io/hostname"})
# NodePool and EC2NodeClass names become the value of karpenter.sh/nodepool (a label value, at most
# 63 characters) and are object names (DNS subdomains): lowercase DNS labels satisfy both.
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MAX_NAME = 63

# spec.disruption.consolidationPolicy (NODEPOOL_CRD) and the budget reasons.
CONSOLIDATION_POLICIES = frozenset({"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"})
BUDGET_REASONS = frozenset({"Drifted", "Underutilized", "Empty"})
# How long a node stays once it is empty (notebooks: a restarted notebook finds its node warm) or
# underutilized (burst and checkpointed work: a replaced node costs a restart from the checkpoint).
NOTEBOOK_EMPTY_DELAY = "15m"
SERVING_EMPTY_DELAY = "10m"
CONSOLIDATION_DELAY = "5m"
# Karpenter's default node lifetime, written out so the plan says it (DISRUPTION_DOC, "Expiration";
# budgets do not block expiry).
EXPIRE_AFTER = "720h"
# spec.weight, 1-100, higher tried first (SCHEDULING_DOC, "Weighted NodePools"): the capacity reservation
# first, then spot, then on-demand, as Karpenter itself orders capacity types inside one NodePool
# (reserved > spot > on-demand, NODEPOOLS_DOC).
WEIGHTS = {"reserved": 30, "spot": 20, "on-demand": 10}

# The EKS-optimized AL2023 AMIs by alias: Karpenter picks the NVIDIA variant for GPU instance types
# (pkg/providers/amifamily/al2023.go, DescribeImageQuery: variants standard, nvidia, neuron). `latest`
# follows new AMIs, which drifts the nodes (NODECLASSES_DOC, spec.amiSelectorTerms); the plan says so.
AMI_ALIAS = "al2023@latest"
AMI_FAMILY_ARCH = {"AL2023_x86_64_NVIDIA": "amd64", "AL2023_ARM_64_NVIDIA": "arm64"}
# The AL2023 root volume Karpenter maps by default is /dev/xvda, 20Gi gp3 (NODECLASSES_DOC,
# spec.blockDeviceMappings); gpustack sizes it by the plan's disk.
VOLUME_TYPES = frozenset({"standard", "io1", "io2", "gp2", "gp3", "sc1", "st1"})  # NODECLASS_CRD
# spec.instanceStorePolicy: RAID0 puts the kubelet and containerd on the NVMe instance stores (NODECLASSES_DOC).
INSTANCE_STORE_POLICIES = frozenset({"RAID0"})
# The security groups of the nodes, found by the discovery tag of Karpenter's getting-started guide
# (website/content/en/docs/getting-started/getting-started-with-karpenter, step02-create-cluster.sh).
DISCOVERY_TAG = "karpenter.sh/discovery"
# The node role when settings.node_role_arn is absent: the one the getting-started guide creates
# (NODECLASSES_DOC, spec.role: "KarpenterNodeRole-$CLUSTER_NAME").
DEFAULT_NODE_ROLE = "KarpenterNodeRole-{cluster}"
# The tag a reserved floor's capacity reservation carries, which its EC2NodeClass selects
# (spec.capacityReservationSelectorTerms[].tags, ODCR_DOC: every ODCR Karpenter uses must be selected).
RESERVATION_TAG = "gpustack.dev/pool"


@dataclasses.dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Budget:
    nodes: str  # a count or a percentage
    reasons: tuple[str, ...]  # () = every reason


@dataclasses.dataclass(frozen=True)
class KarpenterPool(CompiledPool):
    name: str  # of the NodePool and of its EC2NodeClass
    requirements: tuple[Requirement, ...]
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect), Kubernetes spelling
    limits: tuple[tuple[str, str], ...]
    weight: int
    consolidation_policy: str
    consolidate_after: str
    budgets: tuple[Budget, ...]
    expire_after: str
    # The EC2NodeClass.
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
    # The NodeOverlay: what one node offers once its device plugin runs, where the instance type's own
    # GPU count is not it (time-slicing, MIG); () = no overlay.
    overlay_capacity: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(labels=dict(self.labels), limits=dict(self.limits), tags=dict(self.tags),
                   overlay_capacity=dict(self.overlay_capacity),
                   security_group_tags=dict(self.security_group_tags), reservation_tags=dict(self.reservation_tags))
        return out


def _disruption(pool: Pool) -> tuple[str, str, tuple[Budget, ...]]:
    """(consolidationPolicy, consolidateAfter, budgets) by what the pool's nodes carry (DISRUPTION_DOC)."""
    if pool.kind == "notebook":
        return "WhenEmpty", NOTEBOOK_EMPTY_DELAY, ()
    if pool.role == "floor":
        # An inference floor is never consolidated; drift (a new AMI, a changed NodePool) replaces one
        # node at a time. Budgets do not hold back expiry (expireAfter).
        return "WhenEmpty", SERVING_EMPTY_DELAY, (Budget("0", ("Empty", "Underutilized")), Budget("1", ("Drifted",)))
    if pool.role in ("burst", "fallback"):
        return "WhenEmptyOrUnderutilized", CONSOLIDATION_DELAY, ()
    if pool.kind == "inference":
        return "WhenEmpty", SERVING_EMPTY_DELAY, (Budget("1", ()),)
    checkpointed = dict(pool.labels).get("gpustack.dev/checkpointing") == "true"
    # Work that restarts from a checkpoint may be moved to a cheaper node; other jobs only lose empty nodes.
    return ("WhenEmptyOrUnderutilized" if checkpointed else "WhenEmpty"), CONSOLIDATION_DELAY, ()


def _quantity_gib(gib: float) -> str:
    return f"{gib:g}Gi" if float(gib).is_integer() else f"{int(gib * 1024)}Mi"


def _overlay_capacity(pool: Pool) -> tuple[tuple[str, str], ...]:
    """What a node of `pool` offers, when it differs from the instance type's GPUs; an overlay's capacity
    replaces the keys it names and adds the others (karpenter core pkg/cloudprovider/types.go,
    ApplyCapacityOverlay: lo.Assign over the instance type's capacity)."""
    if pool.node_offers == (("nvidia.com/gpu", pool.gpus_per_node),):
        return ()
    return tuple((name, str(count)) for name, count in pool.node_offers)


def node_role(target: Target) -> str:
    arn = target.setting("node_role_arn")
    return str(arn).rsplit("/", 1)[-1] if arn else DEFAULT_NODE_ROLE.format(cluster=target.cluster)


class Karpenter(Provisioner):
    name = "karpenter"
    description = f"Karpenter {RELEASE} NodePools and EC2NodeClasses on EKS"
    backend = "karpenter_backend"
    # Karpenter has no timetable: the auto-stop CronJobs scale the workloads to zero, and the emptied
    # nodes go once the NodePool's consolidateAfter has passed (DISRUPTION_DOC, "Consolidation").
    unsupported = {Feature.NATIVE_SCHEDULE: (
        "Karpenter has no schedule: at the window's end gpustack's auto-stop CronJobs scale the workloads to "
        f"zero, and Karpenter removes each emptied node after consolidateAfter ({NOTEBOOK_EMPTY_DELAY} for "
        "notebooks, 5m otherwise) plus its drain, so nodes stop some 15-20 minutes after the window; at its "
        f"start the CronJobs scale the workloads back and the pending pods launch nodes ({DISRUPTION_DOC})")}
    # The same spot taint as the managed node groups, so pods tolerate the same taints under either.
    spot_taint = ("gpustack.dev/spot", "true", "NoSchedule")
    # Nodes exist only for pending pods: a pool's floor is kept by its workloads' minimum replicas.
    keeps_min_nodes = False
    # Spot first: a higher spec.weight (SCHEDULING_DOC, "Weighted NodePools").
    fallback_mechanism = FallbackMechanism(
        NODEPOOL_WEIGHT, user_action="run Karpenter (the NodePools' weights do the ranking)", source=SCHEDULING_DOC)
    # A NodePool or EC2NodeClass change replaces no resource: Karpenter marks the nodes it launched drifted
    # (their NodeClaim no longer matches the NodePool's template hash or the EC2NodeClass's subnets, security
    # groups or AMIs) and replaces them one by one within the pool's budgets (DISRUPTION_DOC, "Drift").
    drifting_changes = {
        "instance_type": f"the NodePool's requirements change: its nodes drift ({DISRUPTION_DOC}, Drift)",
        "capacity": f"the NodePool's capacity-type requirement changes: its nodes drift ({DISRUPTION_DOC}, Drift)",
        "taints": f"the NodePool's template taints change: its nodes drift ({DISRUPTION_DOC}, Drift)",
        "labels": f"the NodePool's template labels change: its nodes drift ({DISRUPTION_DOC}, Drift)",
        "settings.subnet_ids": f"the EC2NodeClass's subnetSelectorTerms change: its nodes drift ({DISRUPTION_DOC}, Drift)",
    }

    def template_gap(self, pool: Pool) -> str | None:
        """Karpenter simulates a new node from the instance type's EC2 description: nvidia.com/gpu as many
        as the instance has GPUs, never time-sliced replicas or MIG devices. The pool's NodeOverlay tells
        it what a node offers, but only with the alpha feature gate NodeOverlay=true (OVERLAY_DOC), which
        is off by default and which gpustack cannot see: the plan warns."""
        if not _overlay_capacity(pool):
            return None
        offers = ", ".join(f"{name}: {count}" for name, count in pool.node_offers)
        if any(name.startswith("nvidia.com/mig-") for name, _ in pool.node_offers):
            effect = "pods asking for a MIG device never launch a node (no instance type offers one)"
        else:
            effect = ("pending time-sliced pods launch a node per GPU they ask for (up to the NodePool's limits), "
                      "and consolidation removes the surplus once the nodes report their replicas")
        return (f"Karpenter sees nvidia.com/gpu: {pool.gpus_per_node} on a new {pool.instance_type}, not what a node "
                f"offers ({offers}), unless it runs with --feature-gates NodeOverlay=true (alpha since v1.7, off by "
                f"default: {OVERLAY_DOC}), which reads the pool's NodeOverlay; without the gate {effect}")

    def compile(self, pool: Pool, target: Target) -> KarpenterPool:
        nodes = pool.max_nodes
        ami = facts.ami_type(pool.instance_type)
        requirements = [
            Requirement(INSTANCE_TYPE, "In", (pool.instance_type,)),
            Requirement(CAPACITY_TYPE, "In", (_CAPACITY_TYPE.get(pool.capacity, ""),)),
            Requirement(ARCH, "In", (AMI_FAMILY_ARCH.get(ami or "", ""),)),
            Requirement(OS, "In", ("linux",)),
        ]
        if pool.zones:
            requirements.append(Requirement(ZONE, "In", tuple(pool.zones)))
        policy, after, budgets = _disruption(pool)
        subnets = tuple(str(s) for s in target.setting("subnet_ids") or ())  # type: ignore[attr-defined]
        return KarpenterPool(
            name=pool.cloud_name,
            requirements=tuple(requirements),
            labels=tuple(sorted(pool.labels)),
            taints=tuple((t.key, t.value, t.effect) for t in pool.taints),
            limits=(("cpu", f"{pool.vcpus_per_node * nodes:g}"),
                    ("memory", _quantity_gib(pool.memory_gib_per_node * nodes)),
                    ("nodes", str(nodes)),
                    ("nvidia.com/gpu", str(pool.gpus_per_node * nodes))),
            weight=WEIGHTS[pool.capacity],
            consolidation_policy=policy, consolidate_after=after, budgets=budgets, expire_after=EXPIRE_AFTER,
            role=node_role(target),
            ami_alias=AMI_ALIAS,
            subnet_ids=subnets,
            security_group_tags=((DISCOVERY_TAG, target.cluster),),
            root_device=facts.ROOT_DEVICE,
            root_volume_size=f"{pool.disk_gib}Gi",
            root_volume_type=facts.ROOT_VOLUME_TYPE,
            instance_store_policy="RAID0" if facts.local_storage_strategy(pool.instance_type) else None,
            tags=tuple(sorted(pool.attribution.items())),
            reservation_tags=((RESERVATION_TAG, pool.cloud_name),) if pool.reserved_nodes else (),
            reservation=floor_reservation(pool),
            overlay_capacity=_overlay_capacity(pool),
        )

    def check_pool(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, KarpenterPool)
        problems = super().check_pool(pool)
        if not (OBJECT_NAME.fullmatch(compiled.name) and len(compiled.name) <= MAX_NAME):
            problems.append(f"NodePool name {compiled.name!r} is not a lowercase DNS label of at most {MAX_NAME} "
                            f"characters (it is the value of {NODEPOOL_LABEL}; {NODEPOOL_CRD})")
        if not compiled.subnet_ids:
            problems.append("no settings.subnet_ids for the EC2NodeClass's subnetSelectorTerms")
        for key, operator, value, allowed, what in (
                (CAPACITY_TYPE, "In", next(r.values[0] for r in compiled.requirements if r.key == CAPACITY_TYPE),
                 CAPACITY_TYPES, f"capacity {pool.capacity!r}"),
                (ARCH, "In", next(r.values[0] for r in compiled.requirements if r.key == ARCH),
                 frozenset(AMI_FAMILY_ARCH.values()),
                 f"instance family {facts.instance_family(pool.instance_type)!r} (NVIDIA AL2023 AMIs are known for "
                 f"{', '.join(sorted(facts.NVIDIA_AMI_TYPE_BY_FAMILY))})")):
            if value not in allowed:
                problems.append(f"{what} has no Karpenter {key} {operator} value; known: {', '.join(sorted(allowed))}")
        for key, _ in compiled.labels:
            domain = key.split("/", 1)[0] if "/" in key else ""
            if key in RESTRICTED_LABELS or any(domain.endswith(d) for d in RESTRICTED_LABEL_DOMAINS):
                problems.append(f"label {key!r} is in a domain a NodePool template may not set "
                                f"({', '.join(RESTRICTED_LABEL_DOMAINS)}: {NODEPOOL_CRD})")
        if compiled.consolidation_policy not in CONSOLIDATION_POLICIES:
            problems.append(f"consolidationPolicy {compiled.consolidation_policy!r} is not one of Karpenter's")
        if compiled.root_volume_type not in VOLUME_TYPES:
            problems.append(f"volume type {compiled.root_volume_type!r} is not one of the EC2NodeClass's")
        return problems

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        """What the NodePool of `pool` does that a person reading the plan must know."""
        found = []
        if pool.min_nodes:
            found.append(f"Karpenter keeps no minimum: the {pool.min_nodes} node(s) of the floor exist while its "
                         "workloads' minimum replicas are pending or running on them.")
        if pool.reserved_nodes:
            found.append(f"Launches only into the capacity reservation tagged {RESERVATION_TAG}={pool.cloud_name} "
                         f"(the Pulumi program declares it; with `gpustack render`, tag yours so): Karpenter uses "
                         f"no open reservation it is not told of ({ODCR_DOC}).")
        return tuple(found)

    def target_notes(self) -> list[str]:
        return [f"Karpenter {RELEASE} provisions the pools: one NodePool and EC2NodeClass each, spot tried before "
                f"on-demand by spec.weight; nodes follow the AMI alias {AMI_ALIAS}, so each new EKS AMI drifts them, "
                f"replaced within each NodePool's disruption budgets ({NODECLASSES_DOC}); docs/karpenter.md says what "
                "the cluster needs (the controller, its IAM, the node role and the discovery tags)."]


    def objects(self, pool: Pool, labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
        return node_objects(pool, labels)


PROVISIONER = Karpenter


def node_objects(pool: Pool, labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
    """The pool's EC2NodeClass, NodeOverlay (where a node offers more than its GPUs) and NodePool as
    data, in apply order, `labels` on every object's metadata."""
    c = pool.compiled
    assert isinstance(c, KarpenterPool)
    ebs: dict[str, Any] = {"deleteOnTermination": True, "encrypted": True, "volumeSize": c.root_volume_size,
                           "volumeType": c.root_volume_type}
    node_class_spec: dict[str, Any] = {
        "role": c.role,
        "amiSelectorTerms": [{"alias": c.ami_alias}],
        "subnetSelectorTerms": [{"id": subnet} for subnet in c.subnet_ids],
        "securityGroupSelectorTerms": [{"tags": dict(c.security_group_tags)}],
        "blockDeviceMappings": [{"deviceName": c.root_device, "rootVolume": True, "ebs": ebs}],
    }
    if c.instance_store_policy:
        node_class_spec["instanceStorePolicy"] = c.instance_store_policy
    if c.reservation_tags:
        node_class_spec["capacityReservationSelectorTerms"] = [{"tags": dict(c.reservation_tags)}]
    if c.tags:
        node_class_spec["tags"] = dict(c.tags)
    node_class = {"apiVersion": NODECLASS_API, "kind": "EC2NodeClass",
                  "metadata": {"name": c.name, "labels": dict(labels)}, "spec": node_class_spec}
    disruption: dict[str, Any] = {"consolidationPolicy": c.consolidation_policy,
                                  "consolidateAfter": c.consolidate_after}
    if c.budgets:
        disruption["budgets"] = [{"nodes": b.nodes, **({"reasons": list(b.reasons)} if b.reasons else {})}
                                 for b in c.budgets]
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": c.name},
        "requirements": [{"key": r.key, "operator": r.operator, "values": list(r.values)} for r in c.requirements],
        "taints": [{"key": k, "value": v, "effect": e} for k, v, e in c.taints],
        "expireAfter": c.expire_after,
    }
    node_pool = {"apiVersion": NODEPOOL_API, "kind": "NodePool",
                 "metadata": {"name": c.name, "labels": dict(labels)},
                 "spec": {"template": {"metadata": {"labels": dict(c.labels)}, "spec": template_spec},
                          "disruption": disruption, "limits": dict(c.limits), "weight": c.weight}}
    if not c.overlay_capacity:
        return node_class, node_pool
    overlay = {"apiVersion": OVERLAY_API, "kind": "NodeOverlay", "metadata": {"name": c.name, "labels": dict(labels)},
               "spec": {"requirements": [{"key": NODEPOOL_LABEL, "operator": "In", "values": [c.name]},
                                         {"key": INSTANCE_TYPE, "operator": "In", "values": [pool.instance_type]}],
                        "capacity": dict(c.overlay_capacity)}}
    return node_class, overlay, node_pool
