"""The plan: an immutable, deterministic tree of values. Everything downstream only renders it.

`to_json()` gives the JSON contract of README "The plan as JSON"; fields beyond the contract are
additions, never renames.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gpustack.clouds import CLOUDS
from gpustack.clouds.compiled import CompiledPool
from gpustack.plan.claims import DeviceClaim
from gpustack.plan.claims import to_json as claim_json
from gpustack.plan.jsontext import indented_json
from gpustack.spec.model import HOURS_PER_MONTH, shared_by_clients

if TYPE_CHECKING:  # the queueing values name the plan's Taint; the plan names them only as a type
    from gpustack.plan.queueing import Queueing

Pairs = tuple[tuple[str, str], ...]
# Label keys gpustack and NVIDIA's tools own; with those a cloud owns (`Cloud.own_label_prefixes`, e.g. the
# label that ties a pool to a ComputeClass), they are not attribution labels.
OWN_LABEL_PREFIXES = ("gpustack.dev/", "nvidia.com/")


def own_label_prefixes() -> tuple[str, ...]:
    """Label-key prefixes that gpustack, NVIDIA or any registered cloud owns."""
    return _own_label_prefixes(CLOUDS.generation)


@functools.cache
def _own_label_prefixes(generation: int) -> tuple[str, ...]:
    del generation  # once per set of registered clouds
    return OWN_LABEL_PREFIXES + tuple(sorted({p for cloud in CLOUDS for p in cloud.own_label_prefixes}))


@dataclasses.dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # Kubernetes spelling: NoSchedule | PreferNoSchedule | NoExecute


@dataclasses.dataclass(frozen=True)
class MigGroup:
    """GPUs of one node that share a layout (profile -> instances per GPU)."""

    layout: tuple[tuple[str, int], ...]
    gpus: int  # GPUs per node with this layout


@dataclasses.dataclass(frozen=True)
class Sharing:
    mode: str  # none | time-slicing | mps | mig
    replicas: int | None = None  # time-slicing / mps: clients per GPU
    mig: tuple[MigGroup, ...] = ()  # per node: the layout of each GPU, grouped
    config: str | None = None  # name of the NVIDIA device-plugin / mig-parted config of this pool

    @property
    def by_clients(self) -> bool:
        """Each GPU is shared among `replicas` clients (time-slicing, MPS)."""
        return shared_by_clients(self.mode)


@dataclasses.dataclass(frozen=True)
class ScheduleWindow:
    days: str
    hours: str
    timezone: str
    weekdays: tuple[int, ...]
    start_minute: int
    end_minute: int
    active_hours_per_week: float
    # When to start and stop the pool, as crons in `timezone` (`gpustack.schedules.window_crons`);
    # both empty for a window open all week.
    start_crons: tuple[str, ...] = ()
    stop_crons: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class NvidiaConfig:
    """What the NVIDIA tools of the cluster do for a pool's nodes."""

    device_plugin_config: str | None  # the pool's entry of the device-plugin ConfigMap (None: `default`)
    mig_parted_config: str | None  # the pool's entry of the mig-parted ConfigMap (None: not partitioned in-cluster)


@dataclasses.dataclass(frozen=True)
class Price:
    usd_per_node_hour: float
    source: str  # where the figure came from, for people
    list_usd_per_node_hour: float | None = None  # before the enterprise discount (None: no discount declared)


@dataclasses.dataclass(frozen=True)
class Placement:
    """How many replicas of a workload a pool holds, and each replica's share of a GPU."""

    workload: str
    replicas: int
    gpu_share: float  # GPUs per replica as planned (whole GPUs, 1/R, or the MIG profile's slices)
    requested_share: float  # GPUs per replica as asked (fraction, memory share, profile, or whole)
    profile: str | None = None  # MIG profile
    cpu: float | None = None
    memory_gib: float | None = None
    hours_per_month: float = HOURS_PER_MONTH


@dataclasses.dataclass(frozen=True)
class PoolGpus:
    required: int  # GPUs holding at least one replica at peak
    lower_bound: int  # fewest GPUs any packing of these replicas could use, as shared (planned shares)
    provisioned: int  # nodes x GPUs per node at peak
    requested: float = 0.0  # GPUs the replicas ask for: sum of requested fractions (whole GPUs as asked)
    requested_lower_bound: int = 0  # ceil(requested): the bound if each replica got exactly what it asked
    nodes_lower_bound: int = 0  # fewest nodes any packing could use (GPUs, CPU, memory)
    bounds: tuple[tuple[str, int], ...] = ()  # the GPU lower bounds by name; lower_bound is the largest
    method: str = ""  # how the packing was found: exact search | first-fit decreasing | heuristic ...
    proved_optimal: bool = False  # no packing under the pool's rules uses fewer nodes, then GPUs

    @property
    def gap(self) -> int:
        """GPUs in use beyond the lower bound: what the packing may still lose."""
        return self.required - self.lower_bound

    @property
    def rounding_loss(self) -> int:
        """GPUs the lower bound loses to rounding replicas to fixed shares."""
        return max(0, self.lower_bound - self.requested_lower_bound)


@dataclasses.dataclass(frozen=True)
class FloorUpgrade:
    """How a reserved floor's nodes are upgraded without a node beyond its reservation, and what the
    cloud's default would have needed instead (the headroom avoided, priced)."""

    max_surge: int  # nodes created beyond the pool's size during an upgrade
    max_unavailable: int  # nodes taken down at once
    headroom_nodes: int  # reserved beyond the floor for the surge (billed with the reservation)
    headroom_monthly_usd: float
    default_surge_nodes: int  # what the cloud's default settings would surge
    default_headroom_monthly_usd: float  # reserving for that surge instead
    # The cloud's own fields and values (SDK argument names), e.g. (("max_surge", "0"), ("drain_timeout_in_minutes", 30)).
    settings: tuple[tuple[str, Any], ...]
    source: str


@dataclasses.dataclass(frozen=True)
class AutoStopChoice:
    """What the dev auto-stop stops for a scheduled workload: the spec's `autostop`, or detected."""

    kinds: tuple[str, ...]  # deployment | statefulset | job | cronjob | notebook | jupyterhub
    name: str | None = None  # that one object; None: every object of these kinds labelled with the workload
    detected: bool = False  # the spec says nothing: the kinds a workload of its kind runs as


@dataclasses.dataclass(frozen=True)
class TopologySpread:
    """One topology spread constraint of a workload's pods (`availability`): at most `max_skew` more of them
    in one domain than in the emptiest, counting as empty every domain missing below `min_domains`."""

    topology_key: str  # topology.kubernetes.io/zone | kubernetes.io/hostname
    max_skew: int
    min_domains: int


@dataclasses.dataclass(frozen=True)
class PodRequest:
    """What every pod of one workload must carry to land on its pools, and only there."""

    workload: str
    resources: Pairs  # resource name -> quantity (Kubernetes spelling), e.g. nvidia.com/mig-3g.40gb: "1"
    node_selector: Pairs
    # The taints of its pools, each tolerated by key and effect whatever its value (operator Exists): the
    # autoscaler's template may carry a taint with another value than the nodes (OKE adds nvidia.com/gpu="").
    tolerations: tuple[Taint, ...]
    pools: tuple[str, ...]  # the plan pools that carry its replicas
    namespace: str = "default"  # where the workload's objects live (the spec's `namespace`)
    kind: str = ""  # the spec's workload kind (training | fine-tuning | inference | notebook)
    labels: Pairs = ()  # attribution labels of its pods: the spec's labels under the workload's own
    checkpointing: bool = False  # the workload resumes from checkpoints (may run on spot)
    autostop: AutoStopChoice | None = None  # scheduled workloads: what is stopped outside the window
    # What the provisioner needs on the pods to leave them be (`Provisioner.pod_protection`): pod annotations,
    # e.g. Karpenter's karpenter.sh/do-not-disrupt, and terminationGracePeriodSeconds (None: Kubernetes' default).
    annotations: Pairs = ()
    termination_grace_seconds: int | None = None
    # Every label of its pods: `labels`, gpustack.dev/workload, and gpustack.dev/checkpointing "true"
    # where a checkpointed workload may run on spot (what a disruption policy and cost reports read).
    pod_labels: Pairs = ()
    topology_spread: tuple[TopologySpread, ...] = ()  # `availability`: over zones and nodes
    container: str | None = None  # the spec's `container`: the GPU container of the workload's object
    # On a DRA target (settings.gpu_allocation: dra): the ResourceClaim its pods name instead of asking for
    # nvidia.com/* extended resources (gpustack/plan/claims.py); None under the device plugin.
    claim: DeviceClaim | None = None

    def gpu_container(self, containers: Sequence[str] = ()) -> str:
        """The container its pods' GPU requests go to: the spec's `container`, else the object's only
        container (when its `containers` are known), else the one named after the workload."""
        if self.container:
            return self.container
        return containers[0] if len(containers) == 1 else self.workload


@dataclasses.dataclass(frozen=True)
class PoolAvailability:
    """What a workload's `availability` asks of its pool, and what it costs beyond packing alone."""

    zones: int
    max_replicas_per_node: int | None
    nodes_without: int  # the nodes packing alone would give (at the peak)
    extra_monthly_usd: float  # what the spread adds to the pool's monthly cost


@dataclasses.dataclass(frozen=True)
class Pool:
    name: str  # cloud-neutral pool name; also the value of gpustack.dev/pool
    cloud_name: str  # the node-pool name on this target's cloud (valid there, stable)
    kind: str
    role: str  # main | floor | burst | fallback
    capacity: str  # spot | on-demand | reserved
    instance_type: str
    gpu: str
    gpus_per_node: int
    vcpus_per_node: float
    memory_gib_per_node: float
    min_nodes: int
    max_nodes: int
    reserved_nodes: int  # nodes covered by a capacity reservation
    sharing: Sharing
    schedule: ScheduleWindow | None
    workloads: tuple[str, ...]
    placements: tuple[Placement, ...]
    namespaces: tuple[str, ...]
    labels: Pairs  # node labels
    taints: tuple[Taint, ...]
    price: Price
    hours_per_month: float  # node-hours per node per month, as billed in the estimate
    monthly_cost_usd: float
    gpus: PoolGpus
    reason: str
    notes: tuple[str, ...] = ()
    # A fallback pool: the node-hours it would run if it carried all of its workloads' hours (spot short
    # all month); the range's high end. 0 for every other pool.
    standby_node_hours: float = 0.0
    # Labels the pool's workloads give with different values (or some not at all), so no node label
    # carries them: key -> ((workload, value or ""), ...).
    label_conflicts: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    disk_gib: int = 0  # root / boot volume of each node
    disk_reason: str = ""
    zones: tuple[str, ...] = ()  # the zones the pool launches in, when the plan names them (else the target's)
    # A reserved floor spread over zones, one reservation per zone: (zone, nodes); () = one reservation
    reservations: tuple[tuple[str, int], ...] = ()
    # A workload's `availability`: the zones (or the subnets / availability domains that fix them) its
    # replicas spread over, balanced by topology spread constraints; () when no spread is asked.
    spread_zones: tuple[str, ...] = ()
    # A spot pool over several instance types (the workloads' `instance_types` lists), `instance_type`
    # first; () when the pool has the one type.
    instance_types: tuple[str, ...] = ()
    # A spot pool over several GPU models (`gpu: [a, b]`): the GPU model of each of `instance_types`, in
    # their order; () when the pool has the one model.
    gpu_models: tuple[str, ...] = ()
    availability: PoolAvailability | None = None
    # What one node offers once its device plugin runs (extended resources -> count), which the
    # cloud's autoscaler must also see on the template node of the pool at zero.
    node_offers: tuple[tuple[str, int], ...] = ()
    # What the kubelet of one node reports as allocatable cpu and memory (Kubernetes quantities); the
    # autoscaler's template at zero must not promise more (EKS and AKS templates take the instance's
    # full capacity unless told).
    node_allocatable: Pairs = ()
    mig_strategy: str | None = None  # single | mixed: how the device plugin names this pool's MIG devices
    # Labels the cloud's autoscaler reads that gpustack declares on the nodes (the cloud's GPU label).
    autoscaler_labels: Pairs = ()
    upgrade: FloorUpgrade | None = None  # reserved floors only
    mig_profiles: tuple[str, ...] = ()  # the MIG profiles of the pool's layouts, sorted
    nvidia: NvidiaConfig | None = None
    provisioner: str = ""  # the target's provisioner, which compiled the pool
    compiled: CompiledPool | None = None  # the pool as its provisioner spells it
    # A training or fine-tuning pool whose every workload resumes from checkpoints (the value of its
    # gpustack.dev/checkpointing node label): a disruption policy may move its work.
    checkpointed: bool = False
    # A fallback pool: the capacities of the pools it backs (spot, block, flex; `gpustack.plan.fallback`).
    backs: tuple[str, ...] = ()
    block: BlockPlan | None = None  # capacity: block
    flex: FlexPlan | None = None  # capacity: flex

    @property
    def attribution(self) -> dict[str, str]:
        """The labels people set (team, cost-center, model, ...): what becomes cloud tags and alert labels."""
        # HAMi's node selector (gpu=on) is not the user's either, on the pools that carry it.
        theirs = ("gpu",) if self.sharing.mode == "fractional" else ()
        return {k: v for k, v in self.labels if not k.startswith(own_label_prefixes()) and k not in theirs}


@dataclasses.dataclass(frozen=True)
class BlockPlan:
    """A pool's capacity block as planned (`capacity: block`): bought for a fixed window, paid up front."""

    zone: str
    reservation_id: str | None  # the block held; None when the plan buys `offering_id`
    offering_id: str | None
    start: str  # ISO 8601 UTC
    end: str
    days: int
    instances: int
    upfront_usd: float  # the whole block, paid once
    price_basis: str  # the offering's upfront fee as given | a declared price per instance-hour
    refundable: bool  # never, on the clouds that sell blocks; stated so the plan says it
    nodes_leave_minutes_before_end: int  # the cloud reclaims the instances this long before the end
    drain_minutes_before_reclaim: int | None  # the provisioner drains this long before that (None: it does not)
    source: str


@dataclasses.dataclass(frozen=True)
class FlexPlan:
    """A pool's flex-start capacity as planned (`capacity: flex`)."""

    max_run_seconds: int  # each node is removed after this long
    queued: bool  # queued provisioning: all of a request's nodes at once, or none
    discount: float  # fraction off on-demand used for the estimate
    discount_basis: str  # declared (pricing.flex_discount) | the cloud's published upper bound
    source: str


@dataclasses.dataclass(frozen=True)
class Rung:
    """One capacity a training workload may run on, in the order the autoscaler tries them."""

    capacity: str
    pool: str
    role: str
    usd_per_node_hour: float
    monthly_usd: float  # the workload's share of this pool, if this rung carried all of its hours
    billing: str  # hourly | upfront (non-refundable)
    price_source: str
    when: str  # when the workload runs here


@dataclasses.dataclass(frozen=True)
class Ladder:
    """The capacities a training or fine-tuning workload may use, best first, each priced."""

    workload: str
    kind: str
    rungs: tuple[Rung, ...]
    worst_case_monthly_usd: float  # what is paid up front, plus the dearest hourly rung carrying all hours


@dataclasses.dataclass(frozen=True)
class Warning:
    code: str
    message: str
    target: str | None = None
    workload: str | None = None
    pool: str | None = None


@dataclasses.dataclass(frozen=True)
class GpuCounts:
    baseline: int
    lower_bound: int
    required: int
    provisioned: int
    requested: float  # GPUs the replicas ask for (sum of fractions), before rounding to shares
    requested_lower_bound: int = 0  # sum over pools of ceil(requested): the bound without rounding


@dataclasses.dataclass(frozen=True)
class Step:
    step: str  # sharing | spot | commitments | schedules
    monthly_usd: float


@dataclasses.dataclass(frozen=True)
class CostRange:
    """What the month can cost: `low` with the bursts as used, `high` with every burst at its peak all
    month and every fallback pool running instead of its spot pools; the planned figure lies between."""

    low: float
    high: float
    assumptions: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class CommitmentRecommendation:
    """What to buy to cover one instance type's reserved floor, and what it would save."""

    instrument: str
    term: str
    instance_type: str
    quantity: int  # nodes of the floor
    gpus: int
    on_demand_monthly_usd: float  # what the floor costs at on-demand (what the reservation bills)
    discount: float | None  # the rate recommended (None: negotiated, none published)
    monthly_saving_usd: float | None
    break_even_utilisation: float | None  # the share of hours the floor must run for it to pay off
    commitment_usd_per_hour: float | None  # the hourly spend to commit to (savings plans)
    source: str
    declared: bool  # the spec declares a commitment that covers it (the plan already counts it)
    how: str = ""  # how IaC ties it to the reservation, where the cloud allows it


@dataclasses.dataclass(frozen=True)
class DeclaredCommitment:
    instrument: str
    term: str | None
    discount: float | None
    prices: tuple[tuple[str, float], ...]
    scope: str | None


@dataclasses.dataclass(frozen=True)
class EnterpriseDiscount:
    """The enterprise agreement's flat discount (`pricing.discount`) and what it takes off the list prices.

    Every price of the plan is already net of it (baseline, planned, the moves' savings); this is the
    line that shows it: the same pools at list prices, less the discount."""

    fraction: float
    list_baseline_monthly_usd: float
    list_planned_monthly_usd: float
    monthly_usd: float  # list planned - planned, in cents


@dataclasses.dataclass(frozen=True)
class Cost:
    baseline_monthly_usd: float
    planned_monthly_usd: float
    savings_pct: float
    breakdown: tuple[Step, ...]  # Shapley values of the moves: add up to baseline - planned
    # the same work on whole on-demand GPUs, each replica only for the hours it really runs
    baseline_at_used_hours_monthly_usd: float = 0.0
    range: CostRange = CostRange(0.0, 0.0, ())
    commitment_recommendations: tuple[CommitmentRecommendation, ...] = ()
    commitment: DeclaredCommitment | None = None
    discount: EnterpriseDiscount | None = None


@dataclasses.dataclass(frozen=True)
class WorkloadCost:
    workload: str
    kind: str
    monthly_usd: float
    baseline_monthly_usd: float
    usd_per_run: float | None
    usd_per_1k_requests: float | None


@dataclasses.dataclass(frozen=True)
class FallbackGroup:
    """Spot pools grown first and the on-demand pools that back them (`gpustack.plan.fallback`), by name."""

    name: str
    spot: tuple[str, ...]
    fallback: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class IdlePolicy:
    """A workload's `idle` as planned: what counts as idle and what then happens (gpustack/plan/idle.py)."""

    workload: str
    namespace: str
    below_percent: float
    for_seconds: int
    action: str  # scale-to-zero | alert
    floors: bool  # scale-to-zero allowed on an inference floor


@dataclasses.dataclass(frozen=True)
class TargetPlan:
    name: str
    cloud: str
    region: str
    cluster: str
    settings: tuple[tuple[str, object], ...]
    pools: tuple[Pool, ...]
    gpus: GpuCounts
    cost: Cost
    workloads: tuple[WorkloadCost, ...]
    warnings: tuple[Warning, ...]
    notes: tuple[str, ...]
    prices_as_of: str
    commitment_discount: float
    pod_requests: tuple[PodRequest, ...] = ()
    provisioner: str = ""  # how the target's pools are provisioned (targets[].settings.provisioner)
    fallback_groups: tuple[FallbackGroup, ...] = ()
    autostop: str = "cronjob"  # who scales scheduled and idle workloads: cronjob (built in) | keda
    prometheus_url: str | None = None  # where the idle action reads GPU utilisation
    api_server_cidrs: tuple[str, ...] = ()  # where the in-cluster jobs may connect to (): the API server's ports anywhere
    idle: tuple[IdlePolicy, ...] = ()  # workloads with an `idle` of their own, by namespace and name
    scaled_by_keda: tuple[str, ...] = ()  # workloads a KEDA ScaledObject scales (the CronJobs leave them)
    queueing: Queueing | None = None  # settings.queue: Kueue's flavors, team quotas and each Job's queue
    gpu_allocation: str = "device-plugin"  # how pods get GPUs: device-plugin | dra (settings.gpu_allocation)
    ladders: tuple[Ladder, ...] = ()  # per training / fine-tuning workload, by name
    kubernetes_version: str | None = None  # targets[].kubernetes_version (MAJOR.MINOR); None: not given, not checked

    def pool(self, name: str) -> Pool:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)


@dataclasses.dataclass(frozen=True)
class Plan:
    version: int
    name: str
    labels: Pairs
    targets: tuple[TargetPlan, ...]
    warnings: tuple[Warning, ...]

    def target(self, name: str) -> TargetPlan:
        for target in self.targets:
            if target.name == name:
                return target
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "name": self.name,
            "labels": dict(self.labels),
            "targets": [_target(t) for t in self.targets],
            "warnings": [_warning(w) for w in self.warnings],
        }

    def to_json(self) -> str:
        return indented_json(self.to_dict()) + "\n"  # json.dumps(indent=2, ensure_ascii=False), faster


def money(value: float) -> float:
    return round(value + 0.0, 2)


def _pct(baseline: float, planned: float) -> float:
    return round(100 * (money(baseline) - money(planned)) / money(baseline), 1) if money(baseline) else 0.0


def _discount(d: EnterpriseDiscount | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"fraction": d.fraction, "list_baseline_monthly_usd": money(d.list_baseline_monthly_usd),
            "list_planned_monthly_usd": money(d.list_planned_monthly_usd), "monthly_usd": money(d.monthly_usd)}


def _commitment(c: DeclaredCommitment | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"instrument": c.instrument, "term": c.term, "discount": c.discount, "prices": dict(c.prices),
            "scope": c.scope}


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value + 0.0, digits)


def _recommendation(r: CommitmentRecommendation) -> dict[str, Any]:
    return {"instrument": r.instrument, "term": r.term, "instance_type": r.instance_type, "quantity": r.quantity,
            "gpus": r.gpus, "on_demand_monthly_usd": money(r.on_demand_monthly_usd), "discount": r.discount,
            "monthly_saving_usd": _rounded(r.monthly_saving_usd, 2),
            "break_even_utilisation": _rounded(r.break_even_utilisation, 3),
            "commitment_usd_per_hour": _rounded(r.commitment_usd_per_hour, 4),
            "source": r.source, "declared": r.declared, **({"how": r.how} if r.how else {})}


def _warning(w: Warning) -> dict[str, Any]:
    out: dict[str, Any] = {"code": w.code, "message": w.message}
    for key in ("target", "workload", "pool"):
        if getattr(w, key) is not None:
            out[key] = getattr(w, key)
    return out


def _sharing(s: Sharing) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": s.mode}
    if s.by_clients:
        out["replicas"] = s.replicas
    if s.mode == "mig":
        out["mig"] = [{"layout": dict(g.layout), "gpus": g.gpus} for g in s.mig]
    if s.config:
        out["config"] = s.config
    return out


def _schedule(s: ScheduleWindow | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"days": s.days, "hours": s.hours, "timezone": s.timezone,
            "active_hours_per_week": round(s.active_hours_per_week, 2),
            "start_crons": list(s.start_crons), "stop_crons": list(s.stop_crons)}


def _pool(p: Pool) -> dict[str, Any]:
    return {
        "name": p.name,
        "kind": p.kind,
        "capacity": p.capacity,
        "instance_type": p.instance_type,
        "gpu": p.gpu,
        "gpus_per_node": p.gpus_per_node,
        "min_nodes": p.min_nodes,
        "max_nodes": p.max_nodes,
        "sharing": _sharing(p.sharing),
        "schedule": _schedule(p.schedule),
        "workloads": list(p.workloads),
        "labels": dict(p.labels),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in p.taints],
        "monthly_cost_usd": money(p.monthly_cost_usd),
        "cloud_name": p.cloud_name,
        "role": p.role,
        "reserved_nodes": p.reserved_nodes,
        "vcpus_per_node": p.vcpus_per_node,
        "memory_gib_per_node": p.memory_gib_per_node,
        "price": {"usd_per_node_hour": p.price.usd_per_node_hour, "source": p.price.source,
                  **({"list_usd_per_node_hour": p.price.list_usd_per_node_hour}
                     if p.price.list_usd_per_node_hour is not None else {})},
        # Unrounded: price x max_nodes x hours_per_month gives monthly_cost_usd to the cent.
        "hours_per_month": p.hours_per_month,
        "gpus": {"required": p.gpus.required, "lower_bound": p.gpus.lower_bound,
                 "provisioned": p.gpus.provisioned, "gap": p.gpus.gap,
                 "requested": round(p.gpus.requested, 3), "requested_lower_bound": p.gpus.requested_lower_bound,
                 "rounding_loss": p.gpus.rounding_loss,
                 "bounds": dict(p.gpus.bounds)},
        "packing": {"method": p.gpus.method, "proved_optimal": p.gpus.proved_optimal,
                    "nodes_lower_bound": p.gpus.nodes_lower_bound},
        "replicas": {pl.workload: pl.replicas for pl in p.placements},
        "namespaces": list(p.namespaces),
        "reason": p.reason,
        "notes": list(p.notes),
        **({"labels_not_shared": {key: dict(values) for key, values in p.label_conflicts}}
           if p.label_conflicts else {}),
        "disk": {"size_gib": p.disk_gib, "reason": p.disk_reason},
        "zones": list(p.zones),
        "reservations": [{"zone": zone, "nodes": nodes} for zone, nodes in p.reservations],
        "spread_zones": list(p.spread_zones),
        "instance_types": list(p.instance_types or (p.instance_type,)),
        **({"gpu_models": list(p.gpu_models)} if p.gpu_models else {}),
        "availability": None if p.availability is None else {
            "zones": p.availability.zones, "max_replicas_per_node": p.availability.max_replicas_per_node,
            "nodes_without": p.availability.nodes_without,
            "extra_monthly_usd": money(p.availability.extra_monthly_usd)},
        "node_offers": dict(p.node_offers),
        "node_allocatable": dict(p.node_allocatable),
        "mig_strategy": p.mig_strategy,
        "autoscaler_labels": dict(p.autoscaler_labels),
        "upgrade": _upgrade(p.upgrade),
        "mig_profiles": list(p.mig_profiles),
        "nvidia": None if p.nvidia is None else {"device_plugin_config": p.nvidia.device_plugin_config,
                                                 "mig_parted_config": p.nvidia.mig_parted_config},
        "compiled": None if p.compiled is None else {"provisioner": p.provisioner, **p.compiled.to_dict()},
        **({"block": {**dataclasses.asdict(p.block), "upfront_usd": money(p.block.upfront_usd)}} if p.block else {}),
        **({"flex": dataclasses.asdict(p.flex)} if p.flex else {}),
    }


def _upgrade(u: FloorUpgrade | None) -> dict[str, Any] | None:
    if u is None:
        return None
    return {"max_surge": u.max_surge, "max_unavailable": u.max_unavailable, "headroom_nodes": u.headroom_nodes,
            "headroom_monthly_usd": money(u.headroom_monthly_usd), "default_surge_nodes": u.default_surge_nodes,
            "default_headroom_monthly_usd": money(u.default_headroom_monthly_usd), "settings": dict(u.settings),
            "source": u.source}


def _pod_request(r: PodRequest) -> dict[str, Any]:
    return {"workload": r.workload, "resources": dict(r.resources), "node_selector": dict(r.node_selector),
            "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in r.tolerations],
            "pools": list(r.pools), "namespace": r.namespace, "kind": r.kind, "labels": dict(r.labels),
            "checkpointing": r.checkpointing,
            **({"autostop": {"kinds": list(r.autostop.kinds), "name": r.autostop.name,
                             "detected": r.autostop.detected}} if r.autostop else {}),
            **({"annotations": dict(r.annotations)} if r.annotations else {}),
            **({"termination_grace_period_seconds": r.termination_grace_seconds}
               if r.termination_grace_seconds is not None else {}),
            **({"topology_spread": [{"topology_key": t.topology_key, "max_skew": t.max_skew,
                                     "min_domains": t.min_domains} for t in r.topology_spread]}
               if r.topology_spread else {}),
            **({"container": r.container} if r.container else {}),
            **({"claim": claim_json(r.claim)} if r.claim is not None else {})}


def _target(t: TargetPlan) -> dict[str, Any]:
    return {
        "name": t.name,
        "cloud": t.cloud,
        "region": t.region,
        "cluster": t.cluster,
        "provisioner": t.provisioner,
        "pools": [_pool(p) for p in t.pools],
        "fallback_groups": [{"name": g.name, "spot": list(g.spot), "fallback": list(g.fallback)}
                            for g in t.fallback_groups],
        "gpus": {"baseline": t.gpus.baseline, "lower_bound": t.gpus.lower_bound, "required": t.gpus.required,
                 "provisioned": t.gpus.provisioned, "requested": round(t.gpus.requested, 3),
                 "requested_lower_bound": t.gpus.requested_lower_bound,
                 "rounding_loss": max(0, t.gpus.lower_bound - t.gpus.requested_lower_bound),
                 "gap": t.gpus.required - t.gpus.lower_bound},
        "cost": {
            "baseline_monthly_usd": money(t.cost.baseline_monthly_usd),
            "planned_monthly_usd": money(t.cost.planned_monthly_usd),
            "savings_pct": round(t.cost.savings_pct, 1),
            "breakdown": [{"step": s.step, "monthly_usd": money(s.monthly_usd)} for s in t.cost.breakdown],
            "prices_as_of": t.prices_as_of,
            "commitment_discount": t.commitment_discount,
            "baseline_at_used_hours_monthly_usd": money(t.cost.baseline_at_used_hours_monthly_usd),
            "savings_pct_at_used_hours": _pct(t.cost.baseline_at_used_hours_monthly_usd, t.cost.planned_monthly_usd),
            "range": {"low": money(t.cost.range.low), "high": money(t.cost.range.high),
                      "assumptions": list(t.cost.range.assumptions)},
            "commitment": _commitment(t.cost.commitment),
            "discount": _discount(t.cost.discount),
            "commitment_recommendations": [_recommendation(r) for r in t.cost.commitment_recommendations],
        },
        "unit_costs": [
            {"workload": w.workload, "kind": w.kind, "monthly_usd": money(w.monthly_usd),
             "baseline_monthly_usd": money(w.baseline_monthly_usd),
             **({"usd_per_run": money(w.usd_per_run)} if w.usd_per_run is not None else {}),
             **({"usd_per_1k_requests": round(w.usd_per_1k_requests, 4)}
                if w.usd_per_1k_requests is not None else {})}
            for w in t.workloads
        ],
        "warnings": [_warning(w) for w in t.warnings],
        "notes": list(t.notes),
        "pod_requests": [_pod_request(r) for r in t.pod_requests],
        "autostop": t.autostop,
        "prometheus_url": t.prometheus_url,
        "api_server_cidrs": list(t.api_server_cidrs),
        "idle": [{"workload": i.workload, "namespace": i.namespace, "below_percent": i.below_percent,
                  "for_seconds": i.for_seconds, "action": i.action, "floors": i.floors} for i in t.idle],
        "scaled_by_keda": list(t.scaled_by_keda),
        "queue": None if t.queueing is None else t.queueing.to_dict(),
        "gpu_allocation": t.gpu_allocation,
        "capacity_ladders": [_ladder(ladder) for ladder in t.ladders],
        # Only when the spec gives one: absent from the JSON means not given, so not checked.
        **({"kubernetes_version": t.kubernetes_version} if t.kubernetes_version is not None else {}),
    }


def _ladder(ladder: Ladder) -> dict[str, Any]:
    return {"workload": ladder.workload, "kind": ladder.kind,
            "rungs": [{**_fields(r), "monthly_usd": money(r.monthly_usd)} for r in ladder.rungs],
            "worst_case_monthly_usd": money(ladder.worst_case_monthly_usd)}


def _fields(value: Rung) -> dict[str, Any]:
    """A value of plain fields as a dict: `dataclasses.asdict` without its deep copies (a tenth of the
    plan's JSON on 20,000 workloads, for fields that are strings and numbers)."""
    return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
