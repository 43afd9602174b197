"""Karpenter, whichever cloud runs it: the `karpenter.sh/v1` NodePool and the NodeOverlay of a pool.

A Karpenter provisioner of a cloud's bundle subclasses `KarpenterProvisioner` and supplies what is its
cloud's: the node class object (`node_class_fields`, `node_class_spec`, `check_node_class`), the node
class's group, kind and version, the label that names an instance type and how its requirement reads,
the plan's capacities mapped to `karpenter.sh/capacity-type` values its provider offers, the label
domains its provider reserves, its docs (`KarpenterDocs`) and release. Everything else is Karpenter
core's (kubernetes-sigs/karpenter: the NodePool and NodeOverlay APIs, scheduling, disruption) and
lives here: requirements, weights, disruption by kind and role, budgets, expireAfter, limits, the
pool's labels and taints, the overlay for time-sliced and MIG pools, and the checks of the names and
labels a NodePool refuses.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from gpustack.clouds.base import NODEPOOL_WEIGHT, FallbackMechanism, FloorUpgradeRule
from gpustack.clouds.provisioner import Provisioner
from gpustack.clouds.compiled import CompiledPool
from gpustack.spec.model import HOURS_PER_MONTH, JOB_KINDS

if TYPE_CHECKING:
    from gpustack.catalog import InstanceType
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

NODEPOOL_API = "karpenter.sh/v1"
# NodeOverlay, alpha: read only with the feature gate NodeOverlay=true. An overlay that requires
# karpenter.sh/nodepool applies to that NodePool's instance types only: the controller adds the
# NodePool's name and template labels to each instance type's requirements before matching
# (kubernetes-sigs/karpenter pkg/controllers/nodeoverlay/controller.go, getOverlaidOfferings).
OVERLAY_API = "karpenter.sh/v1alpha1"

# Well-known labels of Karpenter core (kubernetes-sigs/karpenter pkg/apis/v1/labels.go).
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
ZONE = "topology.kubernetes.io/zone"
# v1.WellKnownLabels of Karpenter core (pkg/apis/v1/labels.go): a pod may select one a NodePool does
# not define and still match it (Requirements.Compatible with AllowUndefinedWellKnownLabels).
WELL_KNOWN_LABELS = frozenset({
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", INSTANCE_TYPE, ARCH, OS,
    "node.kubernetes.io/windows-build", CAPACITY_TYPE, "karpenter.sh/nodepool",
})
# The label Karpenter puts on every node of a NodePool (restricted in templates: the NodePool CRD).
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# Karpenter core's own label domain, restricted in a NodePool template (CEL rules of the NodePool CRD,
# spec.template.metadata.labels; the few well-known keys they allow gpustack never sets), and the one
# restricted key beyond the domains.
CORE_LABEL_DOMAIN = "karpenter.sh"
RESTRICTED_LABELS = frozenset({"kubernetes.io/hostname"})
# NodePool and node class names become the value of karpenter.sh/nodepool (a label value, at most
# 63 characters) and are object names (DNS subdomains): lowercase DNS labels satisfy both.
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MAX_NAME = 63

# spec.disruption.consolidationPolicy (the NodePool CRD).
CONSOLIDATION_POLICIES = frozenset({"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"})
# How long a node stays once it is empty (notebooks: a restarted notebook finds its node warm) or
# underutilized (burst and checkpointed work: a replaced node costs a restart from the checkpoint).
NOTEBOOK_EMPTY_DELAY = "15m"
SERVING_EMPTY_DELAY = "10m"
CONSOLIDATION_DELAY = "5m"
# Karpenter's default node lifetime, written out so the plan says it (disruption docs, "Expiration";
# budgets do not block expiry).
EXPIRE_AFTER = "720h"
# Expiration "is a forceful disruption method that begins draining a node immediately" (disruption docs,
# "Expiration"), before any replacement exists, and nodes launched together expire together: floors and
# training that cannot resume never expire.
NEVER = "Never"
# The pod annotation that keeps Karpenter from disrupting a node voluntarily (consolidation, and drift unless
# the NodeClaim has a terminationGracePeriod; disruption docs, "Pod-Level Controls"); "true" protects for good.
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# terminationGracePeriodSeconds of such pods: what a drain Karpenter does not ask for (an interruption or
# scheduled-maintenance event, a node deleted by hand) leaves the job to write what it can, against
# Kubernetes' default of 30 s; the NodePool gets no terminationGracePeriod, which would make drift ignore the
# annotation (disruption docs, "TerminationGracePeriod": "a node may be disrupted via drift even if there are
# pods with ... the karpenter.sh/do-not-disrupt annotation").
UNPROTECTED_GRACE_SECONDS = 600
# spec.weight, 1-100, higher tried first (scheduling docs, "Weighted NodePools"): the capacity
# reservation first, then spot, then on-demand, as Karpenter itself orders capacity types inside one
# NodePool (reserved > spot > on-demand, NodePool docs).
WEIGHTS = {"block": 30, "reserved": 30, "flex": 20, "spot": 20, "on-demand": 10}
# The taint spot nodes carry, the same as on the clouds' managed pools, so pods tolerate the same
# taints under either provisioner.
SPOT_TAINT = ("gpustack.dev/spot", "true", "NoSchedule")


@dataclasses.dataclass(frozen=True)
class KarpenterDocs:
    """Where a provider's Karpenter documents what gpustack relies on (its release's pages)."""

    nodepools: str
    disruption: str
    scheduling: str
    overlay: str
    nodepool_crd: str


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
    """The NodePool (and NodeOverlay) of a pool; a provider's subclass adds its node class's fields."""

    name: str  # of the NodePool and of its node class
    requirements: tuple[Requirement, ...]
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect), Kubernetes spelling
    limits: tuple[tuple[str, str], ...]
    weight: int
    consolidation_policy: str
    consolidate_after: str
    budgets: tuple[Budget, ...]
    expire_after: str
    # The NodeOverlay: what one node offers once its device plugin runs, where the instance type's own
    # GPU count is not it (time-slicing, MIG); () = no overlay.
    overlay_capacity: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(labels=dict(self.labels), limits=dict(self.limits))
        out.pop("overlay_capacity")
        out["overlay_capacity"] = dict(self.overlay_capacity)  # last, after a provider's node class fields
        return out

    def requirement(self, key: str) -> str:
        """The first value the NodePool requires for `key` ("" when none)."""
        return next((r.values[0] for r in self.requirements if r.key == key and r.values), "")


def unprotected_training(pool: Pool) -> bool:
    """Training or fine-tuning that cannot resume from a checkpoint: every disruption loses its progress."""
    return pool.kind in JOB_KINDS and not pool.checkpointed


def disruption(pool: Pool) -> tuple[str, str, tuple[Budget, ...]]:
    """(consolidationPolicy, consolidateAfter, budgets) by what the pool's nodes carry."""
    if pool.kind == "notebook":
        return "WhenEmpty", NOTEBOOK_EMPTY_DELAY, ()
    if pool.role == "floor":
        # An inference floor is never consolidated. Drift replaces a node by launching its replacement first
        # (disruption docs, "Drift"); a floor held in a reservation of exactly its size has no room for it (the
        # reserved offering is available only while the reservation has room, and limits.nodes counts the old
        # node), so its drifted nodes are never replaced by Karpenter (budget 0: `floor_gap` says what to do);
        # a floor without a reservation is replaced one node at a time.
        drifted = "0" if pool.reserved_nodes else "1"
        return "WhenEmpty", SERVING_EMPTY_DELAY, (Budget("0", ("Empty", "Underutilized")), Budget(drifted, ("Drifted",)))
    if pool.role in ("burst", "fallback"):
        return "WhenEmptyOrUnderutilized", CONSOLIDATION_DELAY, ()
    if pool.kind == "inference":
        return "WhenEmpty", SERVING_EMPTY_DELAY, (Budget("1", ()),)
    # Work that restarts from a checkpoint may be moved to a cheaper node; other jobs only lose empty nodes.
    return ("WhenEmptyOrUnderutilized" if pool.checkpointed else "WhenEmpty"), CONSOLIDATION_DELAY, ()


def expire_after(pool: Pool) -> str:
    """spec.template.spec.expireAfter: Never for floors and for training that cannot resume, else the default."""
    return NEVER if pool.role == "floor" or unprotected_training(pool) else EXPIRE_AFTER


def quantity_gib(gib: float) -> str:
    return f"{gib:g}Gi" if float(gib).is_integer() else f"{int(gib * 1024)}Mi"


def overlay_capacity(pool: Pool) -> tuple[tuple[str, str], ...]:
    """What a node of `pool` offers, when it differs from the instance type's GPUs; an overlay's capacity
    replaces the keys it names and adds the others (karpenter core pkg/cloudprovider/types.go,
    ApplyCapacityOverlay: lo.Assign over the instance type's capacity)."""
    if pool.node_offers == (("nvidia.com/gpu", pool.gpus_per_node),):
        return ()
    return tuple((name, str(count)) for name, count in pool.node_offers)


def limits(pool: Pool, overlays: bool) -> tuple[tuple[str, str], ...]:
    """spec.limits: what `pool.max_nodes` nodes offer, each node as Karpenter sees it. The scheduler drops an
    instance type whose capacity exceeds what is left of any limit (kubernetes-sigs/karpenter v1.14.0-20-g226646810
    = 2266468104f36373ed002241afaee2d3bbc26078, pkg/controllers/provisioning/scheduling/scheduler.go,
    filterByRemainingResources: `resources.Cmp(itResources[name], remaining) > 0`), and that capacity is the
    overlaid one once a NodeOverlay applies (pkg/cloudprovider/types.go, ApplyCapacityOverlay), so a limit of
    GPUs x nodes stops a time-sliced pool (4 replicas per node against a limit of 3) from launching at all.
    Each extended resource a node offers is limited to it x nodes, the instance type's GPU count as well (what
    Karpenter sees without the overlay, or with a MIG overlay that leaves nvidia.com/gpu alone)."""
    nodes = pool.max_nodes
    offered = dict(pool.node_offers) if overlays else {}
    offered["nvidia.com/gpu"] = max(offered.get("nvidia.com/gpu", 0), pool.gpus_per_node)
    return (("cpu", f"{pool.vcpus_per_node * nodes:g}"),
            ("memory", quantity_gib(pool.memory_gib_per_node * nodes)),
            ("nodes", str(nodes)),
            *sorted((name, str(count * nodes)) for name, count in offered.items()))


def schedule_gap(disruption_doc: str) -> str:
    """Why a scheduled pool has no native schedule under Karpenter, and what happens instead."""
    return ("Karpenter has no schedule: at the window's end gpustack's auto-stop CronJobs scale the workloads to "
            f"zero, and Karpenter removes each emptied node after consolidateAfter ({NOTEBOOK_EMPTY_DELAY} for "
            "notebooks, 5m otherwise) plus its drain, so nodes stop some 15-20 minutes after the window; at its "
            f"start the CronJobs scale the workloads back and the pending pods launch nodes ({disruption_doc})")


def weight_fallback(scheduling_doc: str, user_action: str) -> FallbackMechanism:
    """Spot first: a higher spec.weight (scheduling docs, "Weighted NodePools")."""
    return FallbackMechanism(NODEPOOL_WEIGHT, user_action=user_action, source=scheduling_doc)


def drift_changes(disruption_doc: str) -> dict[str, str]:
    """A NodePool change replaces no resource: Karpenter marks the nodes it launched drifted (their
    NodeClaim no longer matches the NodePool's template hash) and replaces them one by one within the
    pool's budgets (disruption docs, "Drift"); a provider adds its node class's fields."""
    return {
        "instance_type": f"the NodePool's requirements change: its nodes drift ({disruption_doc}, Drift)",
        "capacity": f"the NodePool's capacity-type requirement changes: its nodes drift ({disruption_doc}, Drift)",
        "taints": f"the NodePool's template taints change: its nodes drift ({disruption_doc}, Drift)",
        "labels": f"the NodePool's template labels change: its nodes drift ({disruption_doc}, Drift)",
    }


class KarpenterProvisioner(Provisioner):
    """A cloud's Karpenter: the NodePool, its overlay and the checks here; the node class in the subclass."""
    # The NodePool's node class selects its reservation(s) as declared for the floor today: one, in the
    # first subnet or domain; Karpenter itself launches into the zones the pods' spread asks for.
    spread_reservations_gap: ClassVar[str | None] = (
        "the node class launches into the one capacity reservation of the floor, in one zone; Karpenter "
        "follows the pods' topology spread for every other node, on demand")
    release: ClassVar[str]
    docs: ClassVar[KarpenterDocs]
    compiled_type: ClassVar[type[KarpenterPool]] = KarpenterPool
    node_class_group: ClassVar[str]
    node_class_kind: ClassVar[str]
    node_class_version: ClassVar[str]
    # The label a requirement names the pool's instance type with, and the NodeOverlay scopes itself by.
    instance_type_label: ClassVar[str] = INSTANCE_TYPE
    # The plan's capacity -> the provider's karpenter.sh/capacity-type value (a capacity it lacks is absent).
    capacity_types: ClassVar[Mapping[str, str]] = {"spot": "spot", "on-demand": "on-demand", "reserved": "reserved"}
    # Why a capacity of the plan is not among them, where one is not (read at validation).
    capacity_gaps: ClassVar[Mapping[str, str]] = {}
    # The labels the provider registers as well known, beyond core's (WELL_KNOWN_LABELS).
    provider_well_known_labels: ClassVar[frozenset[str]] = frozenset()
    # Label domains the provider reserves in a NodePool template, beyond Karpenter core's; the keys of them
    # a template may still set; and the keys it refuses outright (CEL rules of the provider's NodePool CRD).
    provider_label_domains: ClassVar[tuple[str, ...]] = ()
    provider_allowed_labels: ClassVar[frozenset[str]] = frozenset()
    provider_restricted_labels: ClassVar[frozenset[str]] = frozenset()
    # How the NodeOverlay gets read, for the template-gap warning ("Karpenter sees ... not what a node offers
    # (...), <condition>; without the gate ...").
    overlay_condition: ClassVar[str] = ("unless Karpenter runs with --feature-gates NodeOverlay=true (alpha, off by default), "
                                        "which reads the pool's NodeOverlay")
    # Whether the pools get their NodeOverlay (False where the provider's Karpenter cannot read one).
    writes_overlays: ClassVar[bool] = True

    def object_kinds(self) -> Mapping[str, int]:
        # After the in-cluster layer: the node class the NodePool names, what its nodes offer, the NodePool.
        return {self.node_class_kind: 60, "NodeOverlay": 61, "NodePool": 62}
    spot_taint = SPOT_TAINT
    # Nodes exist only for pending pods: a pool's floor is kept by its workloads' minimum replicas.
    keeps_min_nodes = False

    @property
    def node_class_api(self) -> str:
        return f"{self.node_class_group}/{self.node_class_version}"

    @property
    def well_known_labels(self) -> frozenset[str]:
        return WELL_KNOWN_LABELS | self.provider_well_known_labels

    @property
    def restricted_label_domains(self) -> tuple[str, ...]:
        return (CORE_LABEL_DOMAIN, *self.provider_label_domains)

    # -- the provider's hooks --------------------------------------------------------------------------
    def arch(self, pool: Pool) -> str | None:
        """The kubernetes.io/arch a node of `pool` has ("" when unknown: a located error; None: no requirement)."""
        del pool
        return None

    def arch_refusal(self, pool: Pool) -> str:
        """Why `pool`'s architecture is unknown, for the error (`arch` gave "")."""
        return f"instance type {pool.instance_type!r}"

    def instance_type_requirements(self, pool: Pool) -> tuple[Requirement, ...]:
        """The requirements that pin the pool's instance types (default: the instance-type label In the one,
        or In the spot pool's alternatives, which Karpenter chooses among per launch)."""
        return (Requirement(self.instance_type_label, "In", pool.instance_types or (pool.instance_type,)),)

    def node_class_fields(self, pool: Pool, target: Target) -> dict[str, Any]:
        """The compiled node class's fields (those `compiled_type` adds to `KarpenterPool`)."""
        del pool, target
        return {}

    def node_class_spec(self, pool: Pool) -> dict[str, Any]:
        """The node class object's spec from the compiled pool."""
        raise NotImplementedError

    def capacity_requirements(self, pool: Pool) -> list[Requirement]:
        """Requirements beyond the capacity type that pin the pool's capacity (e.g. a capacity block)."""
        del pool
        return []

    def check_node_class(self, pool: Pool) -> list[str]:
        """Problems with the compiled node class, before anything is rendered."""
        del pool
        return []

    # -- shared ---------------------------------------------------------------------------------------
    def capacity_refusal(self, row: InstanceType, capacity: str) -> str | None:
        """A capacity the provider's Karpenter has no capacity-type value for is its gap (`capacity_gaps`)."""
        if capacity not in self.capacity_types and (gap := self.capacity_gaps.get(capacity)):
            return gap
        return super().capacity_refusal(row, capacity)

    def template_gap(self, pool: Pool) -> str | None:
        """Karpenter simulates a new node from the cloud's description of the instance type:
        nvidia.com/gpu as many as the instance has GPUs, never time-sliced replicas or MIG devices. The
        pool's NodeOverlay tells it what a node offers, but only where the alpha NodeOverlay feature gate
        is on, which gpustack cannot see: the plan warns."""
        if not overlay_capacity(pool):  # what the pool's nodes offer, overlay or not
            return None
        offers = ", ".join(f"{name}: {count}" for name, count in pool.node_offers)
        if any(name.startswith("nvidia.com/mig-") for name, _ in pool.node_offers):
            effect = "pods asking for a MIG device never launch a node (no instance type offers one)"
        else:
            effect = ("pending time-sliced pods launch a node per GPU they ask for (up to the NodePool's limits), "
                      "and consolidation removes the surplus once the nodes report their replicas")
        return (f"Karpenter sees nvidia.com/gpu: {pool.gpus_per_node} on a new {pool.instance_type}, not what a node "
                f"offers ({offers}), {self.overlay_condition}; without the gate {effect}")

    def compile(self, pool: Pool, target: Target) -> KarpenterPool:
        requirements = [*self.instance_type_requirements(pool),
                        Requirement(CAPACITY_TYPE, "In", (self.capacity_types.get(pool.capacity, ""),))]
        arch = self.arch(pool)
        if arch is not None:
            requirements.append(Requirement(ARCH, "In", (arch,)))
        requirements.append(Requirement(OS, "In", ("linux",)))
        requirements.extend(self.capacity_requirements(pool))
        if pool.zones:
            requirements.append(Requirement(ZONE, "In", tuple(pool.zones)))
        policy, after, budgets = disruption(pool)
        return self.compiled_type(
            name=pool.cloud_name,
            requirements=tuple(requirements),
            labels=tuple(sorted(pool.labels)),
            taints=tuple((t.key, t.value, t.effect) for t in pool.taints),
            limits=limits(pool, self.writes_overlays),
            weight=WEIGHTS[pool.capacity],
            consolidation_policy=policy, consolidate_after=after, budgets=budgets, expire_after=expire_after(pool),
            overlay_capacity=overlay_capacity(pool) if self.writes_overlays else (),
            **self.node_class_fields(pool, target),
        )

    def check_pool(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, KarpenterPool)
        problems = super().check_pool(pool)
        if not (OBJECT_NAME.fullmatch(compiled.name) and len(compiled.name) <= MAX_NAME):
            problems.append(f"NodePool name {compiled.name!r} is not a lowercase DNS label of at most {MAX_NAME} "
                            f"characters (it is the value of {NODEPOOL_LABEL}; {self.docs.nodepool_crd})")
        problems.extend(self.check_node_class(pool))
        allowed_capacities = frozenset(self.capacity_types.values())
        if compiled.requirement(CAPACITY_TYPE) not in allowed_capacities:
            problems.append(f"capacity {pool.capacity!r} has no Karpenter {CAPACITY_TYPE} In value; known: "
                            f"{', '.join(sorted(allowed_capacities))}")
        if self.arch(pool) == "":
            problems.append(f"{self.arch_refusal(pool)} has no Karpenter {ARCH} In value")
        domains = self.restricted_label_domains
        refused = RESTRICTED_LABELS | self.provider_restricted_labels
        for key, _ in compiled.labels:
            domain = key.split("/", 1)[0] if "/" in key else ""
            if key in refused or (any(domain.endswith(d) for d in domains) and key not in self.provider_allowed_labels):
                problems.append(f"label {key!r} is in a domain a NodePool template may not set "
                                f"({', '.join(domains)}: {self.docs.nodepool_crd})")
        if compiled.consolidation_policy not in CONSOLIDATION_POLICIES:
            problems.append(f"consolidationPolicy {compiled.consolidation_policy!r} is not one of Karpenter's")
        return problems

    @property
    def floor_upgrade_rule(self) -> FloorUpgradeRule | None:
        """None: Karpenter has no surge setting, a drifted node's replacement is always launched first."""
        return None

    def floor_gap(self, pool: Pool) -> str | None:
        """A floor in a reservation of exactly its size: Karpenter never replaces its nodes itself (budget 0,
        expireAfter Never), so a new image, Kubernetes version or NodePool change leaves them drifted, serving,
        until replaced by hand; priced as the one node of headroom a replacement would need."""
        if not (pool.role == "floor" and pool.reserved_nodes):
            return None
        headroom = pool.price.usd_per_node_hour * HOURS_PER_MONTH
        return (f"pool {pool.name!r}: Karpenter launches a drifted node's replacement before removing it and launches "
                f"reserved capacity only while the reservation has room ({self.docs.disruption}, Drift), so in a "
                f"reservation of exactly {pool.reserved_nodes} node(s) the replacement never starts; gpustack sets the "
                "floor's Drifted budget to 0 and expireAfter: Never, so its nodes keep serving through a new image, a "
                "Kubernetes upgrade or a NodePool change, drifted, until you replace them: delete one NodeClaim at a "
                "time (its pods move to the node that then launches into the freed reservation, the floor one node short "
                f"meanwhile), or grow the reservation by one node while replacing (${pool.price.usd_per_node_hour:,.2f} an "
                f"hour, ${headroom:,.2f} a month); the plan "
                "has no upgrade settings for it")

    def pod_protection(self, kind: str, checkpointing: bool) -> tuple[tuple[tuple[str, str], ...], int | None]:
        """Training that cannot resume: do-not-disrupt on its pods (its NodePools also never expire)."""
        if kind in JOB_KINDS and not checkpointing:
            return ((DO_NOT_DISRUPT, "true"),), UNPROTECTED_GRACE_SECONDS
        return (), None

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        if not pool.min_nodes:
            return ()
        return (f"Karpenter keeps no minimum: the {pool.min_nodes} node(s) of the floor exist while its "
                "workloads' minimum replicas are pending or running on them.",)

    def objects(self, pool: Pool, labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
        return node_objects(self, pool, labels)


def node_objects(provisioner: KarpenterProvisioner, pool: Pool, labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
    """The pool's node class, NodeOverlay (where a node offers more than its GPUs) and NodePool as data,
    in apply order, `labels` on every object's metadata."""
    c = pool.compiled
    assert isinstance(c, KarpenterPool)
    kind = provisioner.node_class_kind
    node_class = {"apiVersion": provisioner.node_class_api, "kind": kind,
                  "metadata": {"name": c.name, "labels": dict(labels)}, "spec": provisioner.node_class_spec(pool)}
    disruption: dict[str, Any] = {"consolidationPolicy": c.consolidation_policy,
                                  "consolidateAfter": c.consolidate_after}
    if c.budgets:
        disruption["budgets"] = [{"nodes": b.nodes, **({"reasons": list(b.reasons)} if b.reasons else {})}
                                 for b in c.budgets]
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": provisioner.node_class_group, "kind": kind, "name": c.name},
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
                                         {"key": provisioner.instance_type_label, "operator": "In",
                                          "values": list(pool.instance_types or (pool.instance_type,))}],
                        "capacity": dict(c.overlay_capacity)}}
    return node_class, overlay, node_pool
