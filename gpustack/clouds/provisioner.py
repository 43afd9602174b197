"""How a target's node pools are provisioned: the choice inside a cloud's bundle.

A cloud says where pools live (its settings, regions, names, GPUs); its provisioner says how they
are made: today each cloud's managed node groups / node pools with its cluster autoscaler, later
Karpenter or a cloud's auto-provisioning. The provisioner owns everything that depends on that API:

- `compile(pool, target)`: the pool as the API spells it, a `CompiledPool` stored in the plan (and
  its JSON, under `compiled`), enum-checked by `check_pool` before anything is rendered; backends
  only map it to SDK arguments;
- `replacing_changes`: which plan changes recreate a pool, and `drifting_changes`: which leave the pool
  in place but make the provisioner replace its nodes one by one within its disruption budgets (read
  by `gpustack diff`, `gpustack check --baseline` and the pack; `node_change` says which a change is);
- `fallback_mechanism`: what makes the autoscaler grow spot pools before their fallback;
- `spot_taint`: the taint spot nodes carry (pools declare it, so declared state matches the nodes);
- native schedules and other capability gaps (`unsupported`, on top of the cloud's own), read by the
  planner through `supports`, `gap`, `capacity_refusal` and `spot_available`, so a gap is a located
  error or a warning when the spec is validated, before anything is rendered;
- `template_node(...)`: the autoscaler's view of a node of the pool before one exists;
- `backend`: the module of the bundle that declares its Pulumi resources;
- `objects(pool, labels)`: where the pools are Kubernetes objects (Karpenter's NodePools), those
  objects as data, which `gpustack render` writes and the backend declares; `class_objects(pools,
  labels)` the same for objects that each provision several pools (a class whose priorities are
  pools); `pool_notes` what the plan says about a pool under this provisioner; `template_gap` what
  its autoscaler cannot be told.

A target picks one with `settings.provisioner` (default: the first of `Cloud.provisioners`); each is
the module `gpustack/clouds/<cloud>/<name>.py` (dashes as underscores) exporting `PROVISIONER`, the
class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from gpustack.clouds.compiled import CompiledPool
from gpustack.clouds.base import TIMEBOXED_FEATURES, FallbackMechanism, Feature, FloorUpgradeRule
from gpustack.clouds.dra import UNDECLARED, DraSupport

if TYPE_CHECKING:
    from gpustack.catalog import InstanceType
    from gpustack.clouds.base import Cloud
    from gpustack.clouds.kubelet import KubeletReservation
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target


# What a change does to a pool's running nodes (`Provisioner.node_change`).
REPLACES_POOL = "replaces-pool"  # the cloud recreates the node pool: a new pool, the old one's nodes drain
DRIFTS_NODES = "drifts-nodes"  # the pool stays: its nodes are replaced one by one within its disruption budgets


@dataclasses.dataclass(frozen=True)
class NodeChange:
    """What changing one plan field does to a pool's nodes: `kind` (REPLACES_POOL | DRIFTS_NODES) and why,
    with the source."""

    kind: str
    why: str


@dataclasses.dataclass(frozen=True)
class NodeTemplate:
    """What the autoscaler believes a node of a pool offers before one exists (scale from zero):
    allocatable CPU and memory, and the GPUs it advertises."""

    vcpus: float
    memory_gib: float
    gpus: int


@dataclasses.dataclass(frozen=True)
class KubernetesMinimum:
    """The first version of the cluster a feature of the provisioner works on, with its source. The target's
    `kubernetes_version` is a minor version, so a target below `minor` is refused; on `minor` itself a
    cloud's patch-level minimum (`exact`) stays a note, as the provisioner's pool notes say it."""

    feature: str  # what needs it, for people
    minor: str  # MAJOR.MINOR, compared with targets[].kubernetes_version
    exact: str  # the cloud's own spelling of the first version that has it (a patch level, with its build suffix)
    source: str


class Provisioner:
    """Base class of a provisioner; facts as class attributes, each next to its source."""

    name: ClassVar[str]  # the value of targets[].settings.provisioner
    description: ClassVar[str]  # for people: "EKS managed node groups and the Cluster Autoscaler"
    backend: ClassVar[str] = "backend"  # the bundle module whose `declare` declares its resources
    # Why its compiled pools hold the spec's `cluster` name, so a program's cluster must carry that name
    # (None: the pools take the program's cluster as it is, `GpuPools(cluster=...)`).
    names_cluster: ClassVar[str | None] = None
    unsupported: ClassVar[Mapping[Feature, str]] = {}
    spot_taint: ClassVar[tuple[str, str, str] | None] = None  # (key, value, effect)
    # Changes that make the cloud recreate a node pool that keeps its name (read by `gpustack diff`):
    # plan field -> why, with the source. Fields: instance_type, gpu, gpus_per_node, capacity,
    # sharing.mode, sharing.replicas, sharing.mig, labels, taints, cluster, settings.<name>. A key
    # "field:value" matches a change to or from that value only.
    replacing_changes: ClassVar[Mapping[str, str]] = {}
    # Changes that update the pool's objects in place but make the provisioner mark its nodes drifted and
    # replace them one by one, as the pool's disruption budgets allow (Karpenter's drift): same keys as
    # `replacing_changes`, why with the source. A key in both is a replacement.
    drifting_changes: ClassVar[Mapping[str, str]] = {}
    # Where a pool is a priority of a class object rather than a node pool: what any change to it does to
    # the nodes (the class is updated in place, nodes created from then on follow it, running nodes stay),
    # with the source; read by `gpustack diff` instead of its node-pool wording. None: node pools.
    changes_apply_to_new_nodes: ClassVar[str | None] = None
    # How spot pools are preferred over their fallback pools (None: nothing known; the plan says so).
    fallback_mechanism: ClassVar[FallbackMechanism | None] = None
    # Target settings this provisioner needs that the cloud's managed pools do not: name -> why, with the
    # source (a located error at validation when absent).
    required_settings: ClassVar[Mapping[str, str]] = {}
    # Whether a pool's min_nodes are kept running by the provisioner itself (node groups' minimum size);
    # where not, a pool at zero is the rule and what the autoscaler simulates matters for every scale-up.
    keeps_min_nodes: ClassVar[bool] = True
    # Why a floor under a workload's `availability` keeps one reservation in one zone here (None: the
    # backend declares one reservation per zone of the spread); the pods are still spread.
    spread_reservations_gap: ClassVar[str | None] = None
    # Why a pool's alternative instance types of different sizes mislead its autoscaler (which models a
    # node group by one of them), with the source; None where each node is sized for its pods.
    mixed_sizes_gap: ClassVar[str | None] = None
    # What it does with pools whose GPUs are allocated through DRA (`gpustack.clouds.dra`), with sources.
    dra: ClassVar[DraSupport] = UNDECLARED
    # Capacity blocks: how many minutes before the cloud reclaims a block's instances this provisioner
    # starts draining them, and where it says so (None: it leaves them to the cloud).
    block_drain: ClassVar[tuple[int, str] | None] = None

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud

    def supports(self, feature: Feature) -> bool:
        return self.cloud.supports(feature) and feature not in self.unsupported

    def node_change(self, field: str, old: str = "", new: str = "") -> NodeChange | None:
        """What changing `field` from `old` to `new` does to the pool's nodes (None: updated in place, the
        nodes untouched). Keys "field:value" match a change to or from that value only."""
        for kind, data in ((REPLACES_POOL, self.replacing_changes), (DRIFTS_NODES, self.drifting_changes)):
            for key in (field, f"{field}:{old}", f"{field}:{new}"):
                if key in data:
                    return NodeChange(kind, data[key])
        return None

    def gap(self, feature: Feature) -> str | None:
        """Why `feature` is not available with this provisioner (None when it is)."""
        return self.unsupported.get(feature) or self.cloud.unsupported.get(feature)

    def spot_available(self, instance_type: str) -> str | None:
        """None when this provisioner can run `instance_type` as spot, else why not: its own gap first,
        then the cloud's (`Cloud.spot_available`)."""
        return self.unsupported.get(Feature.SPOT) or self.cloud.spot_available(instance_type)

    def capacity_refusal(self, row: InstanceType, capacity: str) -> str | None:
        """None when this provisioner can ask the cloud for `row` on `capacity`, else why not: a capacity
        the provisioner cannot ask for is its gap, whatever the cloud sells (`Cloud.capacity_refusal`)."""
        if capacity == "spot" and (gap := self.unsupported.get(Feature.SPOT)):
            return gap
        if capacity in TIMEBOXED_FEATURES and (gap := self.unsupported.get(TIMEBOXED_FEATURES[capacity])):
            return gap
        return self.cloud.capacity_refusal(row, capacity)

    @property
    def kubelet_reservation(self) -> KubeletReservation:
        """What the kubelet of this provisioner's node image keeps of a node (default: the cloud's
        default node image, `Cloud.kubelet_reservation`); a provisioner launching another image
        overrides it with that image's formula and its source."""
        return self.cloud.kubelet_reservation

    def template_node(self, row: InstanceType) -> NodeTemplate:
        """The autoscaler's view of a node of this instance type: what pods may use (what the kubelet
        of this provisioner's node image leaves)."""
        from gpustack.plan.nodes import allocatable

        cpu, memory = allocatable(row.vcpus, row.memory_gib, self.kubelet_reservation, row.name)
        return NodeTemplate(cpu, memory, row.gpus)

    def template_gap(self, pool: Pool) -> str | None:
        """What the autoscaler gets wrong about a new node of `pool` (default: the cloud's rule)."""
        return self.cloud.template_gap(pool)

    @property
    def floor_upgrade_rule(self) -> FloorUpgradeRule | None:
        """How this provisioner's floors are upgraded without a node beyond their reservation (default: the
        cloud's node-pool rule); None where nothing it declares can say so (the plan's `upgrade` is null)."""
        return self.cloud.floor_upgrade

    def floor_gap(self, pool: Pool) -> str | None:
        """What a reserved floor cannot be protected from on day 2 under this provisioner, with its cost (None:
        nothing, its `upgrade` settings hold)."""
        del pool
        return None

    def pod_protection(self, kind: str, checkpointing: bool) -> tuple[tuple[tuple[str, str], ...], int | None]:
        """(annotations, terminationGracePeriodSeconds) the pods of a workload of `kind` must carry so the
        provisioner never moves them voluntarily where they cannot resume (default: nothing; None: Kubernetes'
        default grace period)."""
        del kind, checkpointing
        return (), None

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        """Notes on a compiled pool that only this provisioner can give (default: none)."""
        del pool
        return ()

    def kubernetes_minimums(self, pools: Sequence[Pool], fallback: bool) -> list[tuple[tuple[str, ...], KubernetesMinimum]]:
        """What the planned pools need of the cluster's version, per feature with the pools that use it (the
        target's own features: no pool names); `fallback`: whether the target has fallback groups. Default:
        nothing beyond what every cluster runs."""
        del pools, fallback
        return []

    def target_notes(self) -> list[str]:
        """What a person deploying a target with this provisioner must know (default: nothing)."""
        return []

    def objects(self, pool: Pool, labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
        """The Kubernetes objects that provision `pool` (default: none, the cloud's API does), with
        `labels` on their metadata."""
        del pool, labels
        return ()

    def class_objects(self, pools: Sequence[Pool], labels: Mapping[str, str]) -> tuple[dict[str, Any], ...]:
        """The Kubernetes objects that each provision several of the target's `pools` (default: none),
        with `labels` on their metadata."""
        del pools, labels
        return ()

    def object_kinds(self) -> Mapping[str, int]:
        """The kinds `objects` and `class_objects` write, each with its place in apply order beside the
        in-cluster layer's kinds (`gpustack.render.KIND_ORDER`; also the prefix of its file names)."""
        return {}

    def compile(self, pool: Pool, target: Target) -> CompiledPool:
        """The pool as this provisioner's API spells it; called once per pool while planning."""
        raise NotImplementedError

    def check_pool(self, pool: Pool) -> list[str]:
        """Problems with a planned (compiled) pool, before anything is rendered: the cloud's own checks
        (name, taints) and the provisioner's enum values. Provisioners extend this."""
        return self.cloud.check_pool(pool)
