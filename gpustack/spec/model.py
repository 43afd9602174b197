"""The spec, version 1, as immutable values (the user contract of README "The spec").

These are the checked, normalised form of the YAML: memory in GiB, CPU in cores, the cloud alias
resolved, `replicas` always a (min, max) pair. Mappings are stored as sorted tuples so two specs
that differ only in key order are equal.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Literal

from gpustack.spec.yamlsource import Document

if TYPE_CHECKING:
    from gpustack.catalog import Catalog

# A month, for every monthly figure: 730 hours (8,760 hours a year / 12).
HOURS_PER_MONTH = 730.0
# An inference burst's expected share of its peak, when the workload does not say (`burst_share`):
# an assumption for the low end of the cost range, shown wherever the range is.
DEFAULT_BURST_SHARE = 0.5

Kind = Literal["training", "fine-tuning", "inference", "notebook"]
Capacity = Literal["spot", "on-demand", "reserved", "block", "flex"]
SharingMode = Literal["none", "time-slicing", "mps", "mig", "fractional"]

KINDS: tuple[Kind, ...] = ("training", "fine-tuning", "inference", "notebook")
CAPACITIES: tuple[Capacity, ...] = ("spot", "on-demand", "reserved")
# Capacity bought for a fixed window (docs/capacity.md): an EC2 Capacity Block (`block`), GKE flex-start
# VMs (`flex`); for training and fine-tuning only, and only where the cloud sells it.
TIMEBOXED_CAPACITIES: tuple[Capacity, ...] = ("block", "flex")
# fractional: enforced fractions (HAMi), only when a workload asks for it (docs/sharing.md).
# The default of `pools.type_change_saving`: a move drains and recreates the pool's nodes, worth it
# for a tenth of its bill, not for the few percent that a replica more or less shifts.
TYPE_CHANGE_SAVING = 0.1
SHARING_MODES: tuple[SharingMode, ...] = ("none", "time-slicing", "mps", "mig", "fractional")
# The modes that give R clients a share of one GPU (R: the pool's `replicas`, clients per GPU).
CLIENT_SHARING_MODES: frozenset[str] = frozenset({"time-slicing", "mps"})


def shared_by_clients(mode: str) -> bool:
    """Whether `mode` shares each GPU among a number of clients (time-slicing, MPS)."""
    return mode in CLIENT_SHARING_MODES


JOB_KINDS: frozenset[str] = frozenset({"training", "fine-tuning"})
SHAREABLE_KINDS: frozenset[str] = frozenset({"inference", "notebook"})
SCHEDULABLE_KINDS: frozenset[str] = frozenset({"notebook", "fine-tuning"})
IdleAction = Literal["scale-to-zero", "alert"]
IDLE_ACTIONS: tuple[IdleAction, ...] = ("scale-to-zero", "alert")
IDLE_KINDS: tuple[Kind, ...] = ("inference", "notebook")  # their objects have replicas to scale

Labels = tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Schedule:
    """An active window: the pool runs inside it and is scaled to zero outside."""

    days: str  # as written, e.g. "Mon-Fri"
    hours: str  # as written, e.g. "08:00-18:00"
    timezone: str  # IANA name
    weekdays: tuple[int, ...]  # 0 = Monday; the days a window starts on
    start_minute: int  # minutes after midnight
    end_minute: int  # 1..1440 (24:00); below start_minute means the window ends the next day

    @property
    def minutes_per_day(self) -> int:
        span = self.end_minute - self.start_minute
        return span if span > 0 else span + 24 * 60

    @property
    def active_hours_per_week(self) -> float:
        return len(self.weekdays) * self.minutes_per_day / 60

    @property
    def canonical_days(self) -> str:
        """The days in one spelling ('weekdays' and 'Mon-Fri' are both 'Mon-Fri'): part of a pool's identity."""
        runs: list[list[int]] = []
        for day in self.weekdays:
            if runs and day == runs[-1][-1] + 1:
                runs[-1].append(day)
            else:
                runs.append([day])
        names = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
        return ",".join(f"{names[r[0]]}-{names[r[-1]]}" if len(r) > 1 else names[r[0]] for r in runs)

    @property
    def canonical_hours(self) -> str:
        """The window in one spelling ('08:00-00:00' and '08:00-24:00' are both '08:00-24:00')."""
        return (f"{self.start_minute // 60:02d}:{self.start_minute % 60:02d}-"
                f"{self.end_minute // 60:02d}:{self.end_minute % 60:02d}")


@dataclasses.dataclass(frozen=True)
class Idle:
    """When a workload's GPUs count as idle, and what then happens (spec `idle`, gpustack/spec/idle.py)."""

    below_percent: float  # utilisation below this, in percent
    for_seconds: int  # for this long
    action: IdleAction  # scale-to-zero | alert
    floors: bool = False  # scale-to-zero also on an inference floor


@dataclasses.dataclass(frozen=True)
class AutoStop:
    """`autostop`: the kind of object the dev auto-stop stops for the workload (gpustack/spec/autostop.py)."""

    kind: str  # deployment | statefulset | job | cronjob | notebook | jupyterhub
    name: str | None = None  # that one object; None: every object of the kind labelled with the workload


@dataclasses.dataclass(frozen=True)
class Availability:
    """`availability` of an inference workload (gpustack/spec/availability.py): its replicas spread over
    `zones` zones, at most `max_replicas_per_node` of them on one node (None: as many as fit)."""

    zones: int
    max_replicas_per_node: int | None

    @property
    def tag(self) -> str:
        """A short, stable tag for pool names: 'z2n1' (2 zones, 1 replica per node), 'z2' (no node limit)."""
        return f"z{self.zones}" + (f"n{self.max_replicas_per_node}" if self.max_replicas_per_node else "")


@dataclasses.dataclass(frozen=True)
class CapacityBlock:
    """`block:` of a workload with `capacity: block`: a capacity block bought for a fixed window
    (gpustack/spec/timebox.py reads it; docs/capacity.md)."""

    zone: str  # the one availability zone of the block
    instance_type: str
    instances: int
    start: str  # ISO 8601 UTC, as written: "2026-12-07T11:30:00Z"
    days: int
    reservation_id: str | None  # cr-...: the block held; None when the spec buys it (`offering_id`)
    offering_id: str | None  # cb-...: buy this offering (aws.ec2.CapacityBlockReservation); never refunded
    upfront_usd: float | None  # the offering's upfrontFee, the whole block, paid up front
    usd_per_instance_hour: float | None  # or: a declared price per instance-hour

    @property
    def hours(self) -> int:
        return self.days * 24

    @property
    def upfront(self) -> float:
        """What the block costs, paid once: its upfront fee, or the declared hourly price for its hours."""
        if self.upfront_usd is not None:
            return self.upfront_usd
        assert self.usd_per_instance_hour is not None
        return self.usd_per_instance_hour * self.instances * self.hours

    @property
    def identity(self) -> str:
        return self.reservation_id or self.offering_id or ""


@dataclasses.dataclass(frozen=True)
class FlexStart:
    """`flex:` of a workload with `capacity: flex`: flex-start VMs, optionally through queued provisioning."""

    max_run_hours: int  # each node runs at most this long (the cloud's limit is 7 days)
    queued: bool  # queued provisioning (ProvisioningRequest): all nodes at once, or none


@dataclasses.dataclass(frozen=True)
class Replicas:
    min: int
    max: int


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    kind: Kind
    gpu: str  # canonical catalog model name
    gpus: int  # whole GPUs per replica (1 for fractional forms)
    gpu_memory_gib: float | None
    mig: str | None
    gpu_fraction: float | None
    cpu: float | None  # cores per replica
    memory_gib: float | None  # per replica
    replicas: Replicas
    checkpointing: bool
    schedule: Schedule | None
    hours_per_month: float | None
    runs_per_month: float | None
    requests_per_hour: float | None
    labels: Labels
    capacity: Capacity | None
    sharing: SharingMode | None
    namespace: str
    index: int  # position in the spec, for locating messages only (never used for identity)
    # cloud -> instance type: pins the choice, so a change of replicas never moves the workload to
    # another instance type (and so another node pool)
    instance_types: tuple[tuple[str, str], ...] = ()
    # inference: the expected share of the burst's peak node-hours actually used (the range's low end)
    burst_share: float | None = None
    disk_gib: int | None = None  # root / boot volume per node, as asked (None: the default for the GPU)
    idle: Idle | None = None  # None: the per-pool idle alert only
    autostop: AutoStop | None = None  # what auto-stop stops (None: detected by the workload label)
    availability: Availability | None = None  # inference: zones and replicas per node (None: no spread asked)
    # cloud -> the instance types a spot pool may launch, the pin first (`instance_types` given as a list)
    spot_alternatives: tuple[tuple[str, tuple[str, ...]], ...] = ()
    container: str | None = None  # the GPU container of its object (None: its only container, else its name)
    # `gpu: [a, b, ...]`: the other GPU models its spot pool may launch (`gpu` is the first)
    gpu_alternatives: tuple[str, ...] = ()
    block: CapacityBlock | None = None  # capacity: block
    flex: FlexStart | None = None  # capacity: flex

    def alternatives(self, cloud: str) -> tuple[str, ...]:
        """The instance types listed for `cloud`, the pin first; () when one type (or none) is given."""
        return dict(self.spot_alternatives).get(cloud, ())

    def pinned_instance(self, cloud: str) -> str | None:
        return dict(self.instance_types).get(cloud)

    @property
    def fractional(self) -> bool:
        return self.gpu_memory_gib is not None or self.mig is not None or self.gpu_fraction is not None


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    cloud: str  # canonical cloud name of the registry
    region: str
    cluster: str
    settings: tuple[tuple[str, object], ...]
    workloads: tuple[str, ...]  # names, in spec order of `workloads`
    index: int
    kubernetes_version: str | None = None  # MAJOR.MINOR (gpustack/spec/kubernetes.py); None: not checked

    def setting(self, key: str, default: object = None) -> object:
        return dict(self.settings).get(key, default)


@dataclasses.dataclass(frozen=True)
class InstancePrice:
    on_demand: float | None
    spot: float | None


COMMITMENT_TERMS = ("1y", "3y")
# The instrument of the short form `pricing.commitment_discount`: a discount held, its kind unsaid.
DECLARED_DISCOUNT = "declared-discount"


@dataclasses.dataclass(frozen=True)
class Commitment:
    """A commitment the user holds or will buy: only a declared one discounts the reserved floors."""

    instrument: str  # per cloud, e.g. compute-savings-plan, committed-use-discount, reservation
    term: str | None  # 1y | 3y (None: the short form, which does not say)
    discount: float | None  # fraction off on-demand, for every reserved floor of the cloud
    prices: tuple[tuple[str, float], ...]  # or: instance type -> committed USD per node-hour
    scope: str | None  # what it covers, as the user's contract says (region, account, subscription ...)

    def price(self, instance_type: str, on_demand: float) -> float | None:
        """The committed USD per node-hour of this instance type, or None when it does not cover it."""
        if self.discount is not None:
            return on_demand * (1 - self.discount)
        return dict(self.prices).get(instance_type)


@dataclasses.dataclass(frozen=True)
class Pricing:
    commitment_discount: float | None
    spot_discount: float | None
    instances: tuple[tuple[str, InstancePrice], ...]
    commitments: tuple[tuple[str, Commitment], ...] = ()  # cloud -> the commitment declared for it
    flex_discount: float | None = None  # declared: flex-start's fraction off on-demand (None: the catalog's)
    # `pricing.discount`: an enterprise agreement's flat fraction off every price, for every cloud (a
    # number) or per cloud (a mapping); `discounts` holds the per-cloud values, which win.
    discount: float | None = None
    discounts: tuple[tuple[str, float], ...] = ()

    def discount_of(self, cloud: str) -> float:
        """The enterprise discount of `cloud` (0 when none is declared)."""
        return dict(self.discounts).get(cloud, self.discount or 0.0)

    def instance(self, name: str) -> InstancePrice | None:
        return dict(self.instances).get(name)

    def commitment(self, cloud: str) -> Commitment | None:
        """The cloud's declared commitment; `commitment_discount` is the short form for every cloud."""
        declared = dict(self.commitments).get(cloud)
        if declared is not None:
            return declared
        if self.commitment_discount is not None:
            return Commitment(DECLARED_DISCOUNT, None, self.commitment_discount, (), None)
        return None


@dataclasses.dataclass(frozen=True)
class Spec:
    version: int
    name: str
    labels: Labels
    pricing: Pricing
    targets: tuple[Target, ...]
    workloads: tuple[Workload, ...]
    source: Document = dataclasses.field(compare=False, repr=False)
    # The catalog the spec was checked against: the bundled one with the user's catalog files over it.
    catalog: Catalog | None = dataclasses.field(default=None, compare=False, repr=False)
    # `pools.split_by`: label keys whose values get pools of their own (e.g. team), so each pool is
    # attributable by its node labels.
    split_by: tuple[str, ...] = ()
    # `pools.type_change_saving`: what moving a pool to a cheaper instance type must save, as a share of
    # its monthly cost, before the plan moves it (docs/sharing.md, "Instance type per pool").
    type_change_saving: float = TYPE_CHANGE_SAVING

    def workload(self, name: str) -> Workload:
        return self._workloads_by_name[name]

    @functools.cached_property
    def _workloads_by_name(self) -> dict[str, Workload]:
        return {w.name: w for w in self.workloads}

    def label_of(self, workload: Workload, key: str) -> str:
        """The value of label `key` on the workload's pods: its own, else the spec's ('' when neither)."""
        return dict(workload.labels).get(key, dict(self.labels).get(key, ""))

    def target(self, name: str) -> Target:
        for target in self.targets:
            if target.name == name:
                return target
        raise KeyError(name)
