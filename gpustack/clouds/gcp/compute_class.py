"""GKE with custom ComputeClasses: the `compute-class` provisioner. GKE creates the node pools itself
(node pool auto-creation), from one `cloud.google.com/v1` ComputeClass per group of pools that carry a
common workload, each pool one of its priorities.

`compile` spells each planned pool as its priority (`ClassPool`, stored in the plan); `class_objects`
builds the classes as data from the compiled pools, which `gpustack render` writes and the Pulumi
program (`compute_class_backend.py`) declares, with the Compute Engine reservation of each reserved
floor (the same as the node-pool provisioner's). No node pool is declared.

Facts are from the GKE documentation, each next to its page. GKE publishes no CRD file; the tests validate
every class against tests/schemas/cloud.google.com_computeclasses.yaml, the CRD's schema as published by
datreeio/CRDs-catalog, checked against REFERENCE (its header gives both sources).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds.base import CLASS_PRIORITIES, FallbackMechanism, Feature, FloorUpgradeRule
from gpustack.clouds.gcp import facts
from gpustack.clouds.provisioner import Provisioner
from gpustack.clouds.compiled import CompiledPool
from gpustack.spec.model import HOURS_PER_MONTH

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

REFERENCE = "https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass"
ABOUT = "https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes"
AUTO_CREATION = "https://cloud.google.com/kubernetes-engine/docs/concepts/node-auto-provisioning"
# GPU sharing in a priority (priorities[].gpu.gpuSharing: sharingStrategy TIME_SHARING | MPS,
# maxSharedClientsPerGPU 2-48, gpuPartitionSize a MIG profile): "Requires GKE version
# 1.35.2-gke.1485000 or later" (REFERENCE, as quoted in https://github.com/kcl-lang/modules/pull/358).
GPU_SHARING_VERSION = "1.35.2-gke.1485000"
# Custom ComputeClasses: "GKE Standard mode in version 1.30.3-gke.1451000 and later" (ABOUT).
CLASS_VERSION = "1.30.3-gke.1451000"
# Node pool auto-creation from a class's nodePoolAutoCreation.enabled alone, without cluster-level node
# auto-provisioning: GKE 1.33.3-gke.1136000 and later (Google's GKE ComputeClass guidance,
# https://github.com/google/skills/blob/HEAD/skills/cloud/gke-compute-classes/SKILL.md); earlier
# versions need node auto-provisioning enabled on the cluster (AUTO_CREATION).
AUTO_CREATION_VERSION = "1.33.3-gke.1136000"

API_VERSION = "cloud.google.com/v1"
# The node label and NoSchedule taint GKE puts on the nodes of a class, and the node selector pods
# select it with (ABOUT, "Request ComputeClasses in workloads"; the node-pool provisioner's fact).
CLASS_LABEL = "cloud.google.com/compute-class"
# Enums of REFERENCE.
DRIVER_VERSIONS = frozenset({"default", "latest"})
DRIVER_VERSION = "default"  # the driver GKE pairs with the node version (as the node-pool provisioner)
# sharingStrategy takes the node pools' enum (facts.SHARING_STRATEGIES, facts.sharing_strategy).
MAX_SHARED_CLIENTS = (2, 48)
# A floor consumes only the reservation gpustack declares for it (specific_reservation_required), by name.
RESERVATION_AFFINITY = "Specific"
# Never a node outside the class's priorities: the plan's cost assumes its machine types.
UNSATISFIABLE = "DoNotScaleUp"
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
# autoscalingPolicy.consolidationDelayMinutes: 1-1440 (REFERENCE). Notebooks keep an emptied node 15
# minutes (a restarted notebook finds it warm); serving 10; jobs 5.
CONSOLIDATION_MINUTES = {"notebook": 15, "inference": 10}
JOB_CONSOLIDATION_MINUTES = 5
CONSOLIDATION_RANGE = (1, 1440)
# Labels GKE sets itself on the nodes it creates and refuses in nodePoolConfig.nodeLabels (its own
# domain), and the taints it adds itself: GPU nodes nvidia.com/gpu=present:NoSchedule
# (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus, "Run GPUs in Standard node pools"), class
# nodes cloud.google.com/compute-class (ABOUT).
GKE_LABEL_DOMAIN = "cloud.google.com/"
GKE_TAINTS = frozenset({"nvidia.com/gpu"})
# Object names: DNS labels (also the value of CLASS_LABEL, at most 63).
CLASS_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclasses.dataclass(frozen=True)
class Priority:
    """One entry of `spec.priorities`: the pool's machine, capacity and GPUs as the class spells them."""

    machine_type: str
    spot: bool
    gpu_type: str | None
    gpu_count: int
    driver_version: str
    sharing_strategy: str | None  # time-sliced and MPS pools
    max_shared_clients: int | None
    partition_size: str | None  # MIG pools
    reservation: str | None  # a floor's reservation name (affinity RESERVATION_AFFINITY)
    reservation_project: str | None
    boot_disk_gb: int
    node_labels: tuple[tuple[str, str], ...]  # the pool's labels, on the nodes GKE creates for it
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect): the pool's, except those GKE adds itself
    # capacity: flex: priorities[].flexStart.enabled and maxRunDurationSeconds (REFERENCE; never with spot,
    # a CEL rule of the CRD).
    flex_start: bool = False
    max_run_seconds: int | None = None


@dataclasses.dataclass(frozen=True)
class ClassPool(CompiledPool):
    class_name: str  # the ComputeClass whose priority the pool is
    priority: Priority
    zones: tuple[str, ...]
    consolidation_minutes: int
    reservation_affinity: str | None
    # A spot pool over several machine types (`instance_types: {gcp: [a, b, c]}`): the others, each
    # (machineType, gpu.type), one spot priority of its own right after the pool's (REFERENCE:
    # spec.priorities[] takes one machineType each, tried in order).
    alternatives: tuple[tuple[str, str | None], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if not self.alternatives:
            del out["alternatives"]
        out["priority"]["node_labels"] = dict(self.priority.node_labels)
        if not self.priority.flex_start:
            for key in ("flex_start", "max_run_seconds"):
                del out["priority"][key]
        return out


def consolidation_minutes(pool: Pool) -> int:
    return CONSOLIDATION_MINUTES.get(pool.kind, JOB_CONSOLIDATION_MINUTES)


class ComputeClasses(Provisioner):
    name = "compute-class"
    description = "GKE custom ComputeClasses, whose priorities GKE creates node pools for"
    dra = DraSupport(refusal=("GKE node auto-provisioning, which creates the node pools of a ComputeClass, does not "
                              "support DRA (https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra)"),
                     source="https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra")
    backend = "compute_class_backend"
    unsupported = {
        Feature.NATIVE_SCHEDULE: (
            "a ComputeClass has no schedule: at the window's end gpustack's auto-stop CronJobs scale the workloads "
            "to zero, and GKE removes each emptied node after the class's consolidationDelayMinutes (15 for "
            f"notebooks) and deletes the emptied auto-created node pool ({AUTO_CREATION}); at the window's start "
            "the pending pods make GKE create nodes again"),
    }
    spot_taint = facts.SPOT_TAINT
    # "You can't set a minimum number of nodes that every auto-created node pool must have" (AUTO_CREATION).
    keeps_min_nodes = False
    fallback_mechanism = FallbackMechanism(
        CLASS_PRIORITIES, pool_marker=CLASS_LABEL, api_version=API_VERSION,
        user_action=f"run GKE {AUTO_CREATION_VERSION} or later (or enable node auto-provisioning) and select the "
                    f"class in the pods (nodeSelector {CLASS_LABEL}: <class>, as `gpustack render --workloads` "
                    "writes)",
        source=ABOUT)
    # A class change recreates no resource: "When you modify an existing ComputeClass, all future nodes
    # that GKE creates for that ComputeClass use the modified configuration. GKE doesn't retroactively
    # change the configuration of existing nodes" (ABOUT). Read by `gpustack diff`.
    changes_apply_to_new_nodes = (
        "GKE updates the ComputeClass in place: the nodes it creates from now on follow the change, running nodes "
        "keep their configuration and their pods until consolidation (or, in a spot-first class, active migration "
        f"to a higher priority) removes them; no node pool is recreated and no node drained for it ({ABOUT})")

    @property
    def floor_upgrade_rule(self) -> FloorUpgradeRule | None:
        """None: a ComputeClass has no upgrade settings (REFERENCE); its auto-created node pools upgrade with the
        cluster's node auto-provisioning defaults, which gpustack neither declares nor sees."""
        return None

    def floor_gap(self, pool: Pool) -> str | None:
        if not (pool.role == "floor" and pool.reserved_nodes):
            return None
        headroom = pool.price.usd_per_node_hour * HOURS_PER_MONTH
        return (f"pool {pool.name!r}: a ComputeClass has no upgrade settings ({REFERENCE}); GKE upgrades the node pools "
                "it creates with the cluster's node auto-provisioning defaults (surge 1 unless set), and every node it "
                "creates, surge nodes too, must fit a Specific reservation (https://cloud.google.com/kubernetes-engine/"
                f"docs/how-to/node-upgrades-quota), so in a reservation of exactly {pool.reserved_nodes} node(s) a surge "
                "upgrade fails and is retried; set the cluster's auto-provisioning upgrade settings to maxSurge 0, "
                "maxUnavailable 1 (Terraform google_container_cluster cluster_autoscaling.auto_provisioning_defaults."
                f"upgrade_settings), or reserve one node more (${pool.price.usd_per_node_hour:,.2f} an hour, ${headroom:,.2f} "
                "a month); the plan has no upgrade settings "
                "for it")

    def object_kinds(self) -> Mapping[str, int]:
        # Before the workloads that select a class (and beside the ConfigMaps of the in-cluster layer).
        return {"ComputeClass": 21}

    def compile(self, pool: Pool, target: Target) -> ClassPool:
        mode = pool.sharing.mode
        strategy = facts.sharing_strategy(mode)
        shared = strategy is not None
        project = target.setting("project")
        reservation = facts.reservation_name(target.cluster, pool.cloud_name) if pool.reserved_nodes else None
        gpu_of = dict(zip(pool.instance_types, pool.gpu_models, strict=False))  # a pool over GPU models
        return ClassPool(
            class_name=dict(pool.labels).get(CLASS_LABEL, ""),
            priority=Priority(
                machine_type=pool.instance_type, spot=pool.capacity == "spot",
                gpu_type=facts.accelerator_type(pool.gpu, pool.instance_type), gpu_count=pool.gpus_per_node,
                driver_version=DRIVER_VERSION,
                sharing_strategy=strategy,
                max_shared_clients=pool.sharing.replicas if shared else None,
                partition_size=facts.partition_size(pool) if mode == "mig" else None,
                reservation=reservation, reservation_project=str(project) if reservation and project else None,
                boot_disk_gb=pool.disk_gib,
                node_labels=tuple((k, v) for k, v in pool.labels if not k.startswith(GKE_LABEL_DOMAIN)),
                taints=tuple((t.key, t.value, t.effect) for t in pool.taints
                             if t.key not in GKE_TAINTS and not t.key.startswith(GKE_LABEL_DOMAIN)),
                flex_start=pool.flex is not None, max_run_seconds=pool.flex.max_run_seconds if pool.flex else None),
            zones=tuple(pool.zones),
            consolidation_minutes=consolidation_minutes(pool),
            reservation_affinity=RESERVATION_AFFINITY if reservation else None,
            alternatives=tuple((t, facts.accelerator_type(gpu_of.get(t, pool.gpu), t)) for t in pool.instance_types[1:]),
        )

    def check_pool(self, pool: Pool) -> list[str]:
        c = pool.compiled
        assert isinstance(c, ClassPool)
        problems = self.cloud.check_pool(pool)
        p = c.priority
        if not CLASS_NAME.fullmatch(c.class_name):
            problems.append(f"ComputeClass name {c.class_name!r} is not a lowercase DNS label of at most 63 characters "
                            f"(it is the value of {CLASS_LABEL})")
        for machine, gpu_type in ((p.machine_type, p.gpu_type), *c.alternatives):
            if gpu_type not in facts.ACCELERATORS:
                problems.append(f"GPU {pool.gpu!r} on {machine!r} has no GKE accelerator type for gpu.type")
        if p.driver_version not in DRIVER_VERSIONS:
            problems.append(f"gpu.driverVersion {p.driver_version!r} is not one of {sorted(DRIVER_VERSIONS)}")
        low, high = MAX_SHARED_CLIENTS
        if p.sharing_strategy is not None and (p.sharing_strategy not in facts.SHARING_STRATEGIES
                                               or not (p.max_shared_clients and low <= p.max_shared_clients <= high)):
            problems.append(f"gpu.gpuSharing: {p.sharing_strategy} with {p.max_shared_clients} clients per GPU; a "
                            f"ComputeClass takes {', '.join(sorted(facts.SHARING_STRATEGIES))} with {low} to {high} ({REFERENCE})")
        if pool.sharing.mode == "mig" and p.partition_size not in facts.partition_sizes(pool.gpu):
            problems.append(f"gpu.gpuSharing.gpuPartitionSize {p.partition_size!r} is not a partition size GKE "
                            f"cuts {pool.gpu} into ({', '.join(facts.partition_sizes(pool.gpu)) or 'none'})")
        low, high = CONSOLIDATION_RANGE
        if not low <= c.consolidation_minutes <= high:
            problems.append(f"consolidationDelayMinutes {c.consolidation_minutes} is outside {low}-{high}")
        problems += [f"taint effect {e!r} is not one a ComputeClass takes" for _, _, e in p.taints
                     if e not in TAINT_EFFECTS]
        return problems + facts.label_problems(pool.attribution)

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        c = pool.compiled
        assert isinstance(c, ClassPool)
        notes = {
            f"A priority of the ComputeClass {c.class_name}: GKE creates its node pools (nodePoolAutoCreation) when "
            f"pods selecting the class ({CLASS_LABEL}: {c.class_name}) are pending.": True,
            f"GKE keeps no minimum in auto-created node pools ({AUTO_CREATION}): the {pool.min_nodes} node(s) of the "
            "floor exist while its workloads' minimum replicas keep them.": pool.min_nodes > 0,
            f"Consumes only the reservation {c.priority.reservation} (reservations.affinity: {RESERVATION_AFFINITY}), "
            "the class's first priority, before any on-demand priority (the Pulumi program declares the "
            "reservation; with `gpustack render`, create it so).": c.priority.reservation is not None,
            f"GPU sharing in a ComputeClass (gpu.gpuSharing) needs GKE {GPU_SHARING_VERSION} or later ({REFERENCE}); "
            "earlier versions refuse the class.": pool.sharing.mode != "none",
            f"A flex-start priority (flexStart.enabled, maxRunDurationSeconds {c.priority.max_run_seconds}): GKE "
            "creates flex-start nodes for it, each removed after its run duration "
            f"({REFERENCE}).": c.priority.flex_start,
            "Queued provisioning under a ComputeClass comes from ProvisioningRequests (the queue's admission "
            "check), not from the class.": bool(pool.flex and pool.flex.queued),
            f"One spot priority per machine type, in order ({', '.join(pool.instance_types)}): GKE tries the next "
            f"when it cannot create spot nodes of one ({ABOUT}).": bool(c.alternatives),
        }
        return tuple(note for note, applies in notes.items() if applies)

    def target_notes(self) -> list[str]:
        versions = (f"GKE {CLASS_VERSION} or later for classes, {AUTO_CREATION_VERSION} or later for node pool "
                    "auto-creation without cluster-level node auto-provisioning (else enable it with room for the "
                    f"GPUs), and {GPU_SHARING_VERSION} for GPU sharing in a class")
        return ["GKE ComputeClasses provision the pools: one class per group of pools that carry a workload, each pool a "
                "priority (reserved floor, then spot, then on-demand), node pools created by GKE. The cluster needs "
                f"{versions}; see docs/compute-classes.md."]

    def class_objects(self, pools: Sequence[Pool], labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
        return compute_classes(pools, labels)


PROVISIONER = ComputeClasses


def _priority(p: Priority) -> dict[str, Any]:
    gpu: dict[str, Any] = {"type": p.gpu_type, "count": p.gpu_count, "driverVersion": p.driver_version}
    if p.sharing_strategy:
        gpu["gpuSharing"] = {"sharingStrategy": p.sharing_strategy, "maxSharedClientsPerGPU": p.max_shared_clients}
    elif p.partition_size:
        gpu["gpuSharing"] = {"gpuPartitionSize": p.partition_size}
    out: dict[str, Any] = {"machineType": p.machine_type, "spot": p.spot, "gpu": gpu,
                           "storage": {"bootDiskSize": p.boot_disk_gb}, "nodeLabels": dict(p.node_labels)}
    if p.taints:
        out["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in p.taints]
    if p.flex_start:
        out["flexStart"] = {"enabled": True}
        out["maxRunDurationSeconds"] = p.max_run_seconds
    if p.reservation:
        specific: dict[str, Any] = {"name": p.reservation}
        if p.reservation_project:
            specific["project"] = p.reservation_project
        out["reservations"] = {"affinity": RESERVATION_AFFINITY, "specific": [specific]}
    return out


def _priorities(pool: ClassPool) -> tuple[Priority, ...]:
    """The pool's priority, then one per alternative machine type (same GPUs, capacity, labels, taints)."""
    return (pool.priority, *(dataclasses.replace(pool.priority, machine_type=machine, gpu_type=gpu_type)
                             for machine, gpu_type in pool.alternatives))


def class_members(pools: Sequence[Pool]) -> dict[str, list[Pool]]:
    """Class name -> its pools in priority order (the order `pool_classes` gave them)."""
    from gpustack.plan.fallback import priority_order

    members: dict[str, list[Pool]] = {}
    for pool in sorted(pools, key=priority_order):
        c = pool.compiled
        assert isinstance(c, ClassPool)
        members.setdefault(c.class_name, []).append(pool)
    return dict(sorted(members.items()))


def compute_classes(pools: Sequence[Pool], labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
    """One ComputeClass per class of `pools`: its pools as priorities in order, each with the labels and
    taints of its pool on the nodes GKE creates for it; `labels` on its metadata."""
    out = []
    for name, members in class_members(pools).items():
        compiled = [p.compiled for p in members]
        assert all(isinstance(c, ClassPool) for c in compiled)
        classes = [c for c in compiled if isinstance(c, ClassPool)]
        zones = sorted({z for c in classes for z in c.zones})
        first = members[0]
        spec: dict[str, Any] = {
            "priorities": [_priority(p) for c in classes for p in _priorities(c)],
            # Spot first for checkpointed work: move its pods back to spot once GKE can create spot nodes.
            "activeMigration": {"optimizeRulePriority": first.capacity == "spot" and len(members) > 1},
            "autoscalingPolicy": {"consolidationDelayMinutes": classes[0].consolidation_minutes},
            "nodePoolAutoCreation": {"enabled": True},
            "whenUnsatisfiable": UNSATISFIABLE,
        }
        if zones:
            spec["priorityDefaults"] = {"location": {"zones": zones}}
        out.append({"apiVersion": API_VERSION, "kind": "ComputeClass",
                    "metadata": {"name": name, "labels": dict(labels)}, "spec": spec})
    return tuple(out)
