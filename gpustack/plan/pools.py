"""One pool: its identity, its packing, its labels and taints, its price."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable

from gpustack.catalog import Catalog, GpuModel, InstanceType
from gpustack.catalog.mig import InvalidLayout, MigModel
from gpustack.clouds import Cloud, Feature, NameRule
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.asks import Ask
from gpustack.plan.bounds import ceil_bound
from gpustack.plan.disks import default_disk_gib, disk_reason
from gpustack.plan.choices import Part
from gpustack.plan.fractions import pack_fractions
from gpustack.plan.mig_packing import nodes_for, pack_mig
from gpustack.plan.model import (
    MigGroup, NvidiaConfig, Placement, Pool, PoolAvailability, PoolGpus, ScheduleWindow, Sharing, Taint,
)
from gpustack.plan.packing import DoesNotFit, Item, NodeShape, Packing, pack_shares
from gpustack.plan.prices import PriceBook
from gpustack.plan.spread import cost_note, spread_packing
from gpustack.schedules import window_crons
from gpustack.spec.model import HOURS_PER_MONTH, JOB_KINDS, Spec, Workload

GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")
KIND_LABEL = "gpustack.dev/kind"
POOL_LABEL = "gpustack.dev/pool"
# The label users put on their Deployments and StatefulSets (pod templates need not carry it): the
# spec's workload name. The auto-stop jobs scale exactly the objects that carry it.
WORKLOAD_LABEL = "gpustack.dev/workload"
# On training and fine-tuning pools: whether every workload of the pool checkpoints, so a policy
# can tell a safe spot pool from an unsafe one without the spec.
CHECKPOINTING_LABEL = "gpustack.dev/checkpointing"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# Plan pool names (and fallback group names) double as label values (gpustack.dev/pool) and NVIDIA
# config names: DNS labels.
PLAN_NAMES = NameRule(63, r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", "-",
                      "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/")
# Fractional pools: HAMi's device plugin runs on nodes labelled gpu=on (its chart's default
# devicePlugin.nvidiaNodeSelector, charts/hami/values.yaml of Project-HAMi/HAMi v2.10.0), and the GPU
# Operator's device plugin must not (both advertise nvidia.com/gpu): the operator keeps a per-node
# nvidia.com/gpu.deploy.device-plugin label it finds ("If a required state label already exists on
# the node, honor the current value", addGPUStateLabels in NVIDIA/gpu-operator
# controllers/state_manager.go, commit 04751ec7).
FRACTIONAL_NODE_LABELS = {"gpu": "on", "nvidia.com/gpu.deploy.device-plugin": "false"}
_CAPACITY_TAGS = {"spot": "spot", "on-demand": "ondemand", "reserved": "reserved", "block": "block", "flex": "flex"}
# The capacity's letter in short names ("f" is the fallback's).
_CAPACITY_LETTERS = {"flex": "x"}
_KIND_TAGS = {"training": "train", "fine-tuning": "tune", "inference": "infer", "notebook": "notebook"}
_TERSE_KINDS = {"training": "tr", "fine-tuning": "ft", "inference": "in", "notebook": "nb"}


@dataclasses.dataclass(frozen=True)
class PoolKey:
    """What defines a pool; its name is derived from this and nothing else."""

    kind: str
    gpu: str
    sharing: str  # whole | tsR | mpsR | frac | mig | mig-<profile> | mig-large | mig-small
    capacity: str
    fallback: bool
    instance: str
    schedule: tuple[str, str, str] | None  # (days, hours, timezone)
    split: tuple[str, ...] = ()  # the workloads' values of the spec's `pools.split_by` keys
    disk: int | None = None  # root volume GiB asked by the spec, when not the default (a pool has one size)
    # How the cloud shortens names (a target setting where the cloud has one); not part of the plan name.
    naming: str = ""
    # A workload's `availability`: its pools hold it alone, spread ('<workload>-z2n1'); '' for every other
    # pool, so giving one workload availability renames no pool of another.
    spread: str = ""
    # The capacity block or flex-start setting of the pool's workloads (`gpustack.plan.timebox.pool_tag`).
    window: str = ""

    def readable(self) -> str:
        parts = [_KIND_TAGS[self.kind], self.gpu, "" if self.sharing == "whole" else self.sharing,
                 "fallback" if self.fallback else _CAPACITY_TAGS[self.capacity], self.instance]
        if self.schedule:
            parts.append(schedule_tag(self.schedule))
        parts.extend(value or "none" for value in self.split)
        if self.window and not self.fallback:
            parts.append(self.window)
        if self.disk is not None:
            parts.append(f"disk{self.disk}")
        if self.spread:
            parts.append(self.spread)
        return "-".join(slug(p) for p in parts if p)

    def name(self) -> str:
        """The plan pool name: the readable form, shortened stably when too long for a label value."""
        return PLAN_NAMES.make(self.readable(), self.readable())

    def compact(self) -> str:
        """A few letters for clouds with very short pool names: kind, capacity, GPU."""
        capacity = "f" if self.fallback else _CAPACITY_LETTERS.get(self.capacity, self.capacity[0])
        return f"{self.kind[0]}{capacity}{slug(self.gpu).replace('-', '')}"

    def terse(self) -> tuple[str, ...]:
        """The pool's meaning in the fewest letters, most telling first: kind, capacity, GPU model, and the
        MIG profile's size or the clients per GPU (for 12-character names)."""
        capacity = "f" if self.fallback else _CAPACITY_LETTERS.get(self.capacity, self.capacity[0])
        gpu = slug(self.gpu).replace("-", "").replace("80gb", "").replace("40gb", "").replace("nvl", "n")
        sharing = ""
        if self.sharing.startswith("mig-"):
            sharing = self.sharing[4:].split(".", 1)[0]  # mig-3g.40gb -> 3g
        elif self.sharing.startswith(("ts", "mps")):
            sharing = "x" + self.sharing.lstrip("tsmp")  # ts4 -> x4 (clients per GPU)
        return (_TERSE_KINDS[self.kind] + capacity, gpu, sharing)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def schedule_tag(schedule: tuple[str, str, str]) -> str:
    """A short, stable tag for a (days, hours, timezone) window in names."""
    return "w" + hashlib.sha256("|".join(schedule).encode()).hexdigest()[:6]


def shares_tag(mode: str, replicas: int | None) -> str:
    """'ts4' for 4 time-sliced clients per GPU, 'mps4' for MPS."""
    return f"{'ts' if mode == 'time-slicing' else 'mps'}{replicas}"


@dataclasses.dataclass(frozen=True)
class Demand:
    workload: Workload
    ask: Ask
    part: Part
    row: InstanceType
    hours: float  # monthly hours a replica runs


@dataclasses.dataclass(frozen=True, kw_only=True)
class Share:
    """A pool's part of a packing it shares with its sibling: a reserved floor and its on-demand burst
    are packed together at the peak, then the nodes are split between them."""

    packing: Packing  # the joint packing at the peak (layouts, method, bounds)
    nodes: int
    min_nodes: int
    gpus_required: int
    lower_bound: int
    node_hours: float
    replicas: Callable[[Demand], int]  # what this pool carries of each demand
    why: str | None = None  # the reason, when it is not the demands' own
    note: str | None = None
    # This pool's part of the joint figures, so that a pool's numbers describe the pool (None: the joint).
    requested_lower_bound: int | None = None
    nodes_lower_bound: int | None = None
    bounds: tuple[tuple[str, int], ...] | None = None
    plain_nodes: int | None = None  # under `availability`: this pool's nodes with packing alone


@dataclasses.dataclass(frozen=True)
class _Sizing:
    """A pool's nodes and GPUs: packed for the pool alone, or its part of a packing it shares."""

    peak: Packing
    nodes: int
    min_nodes: int
    node_hours: float
    standby: float  # node-hours a fallback pool would run, outside the monthly estimate
    required: int
    lower: int
    carries: Callable[[Demand], int]  # what this pool carries of each demand


def _sizing(key: PoolKey, demands: list[Demand], node: NodeShape, mig: MigModel | None,
            share: Share | None) -> _Sizing:
    if share is not None:
        return _Sizing(share.packing, share.nodes, share.min_nodes, share.node_hours, 0.0, share.gpus_required,
                       share.lower_bound, share.replicas)
    reserved = key.capacity == "reserved"
    peak = _pack(demands, node, mig, _all_replicas)
    nodes = peak.nodes
    node_hours = 0.0 if key.fallback else (nodes * HOURS_PER_MONTH if reserved else peak.node_hours)
    floor_demands = [d for d in demands if d.part.min_replicas]
    if reserved or not floor_demands:
        min_nodes = nodes if reserved else 0
    else:
        min_nodes = _floor_nodes(floor_demands, node, mig, peak, nodes)
    return _Sizing(peak, nodes, min_nodes, node_hours, peak.node_hours if key.fallback else 0.0,
                   peak.gpus_required, peak.lower_bound, _all_replicas)


def build_pool(key: PoolKey, name: str, demands: list[Demand], *, spec: Spec, provisioner: Provisioner,
               catalog: Catalog, prices: PriceBook, share: Share | None = None) -> Pool:
    cloud = provisioner.cloud
    row = demands[0].row
    gpu = catalog.gpu(key.gpu)
    assert gpu is not None
    node = _node_shape(row, demands[0].ask, provisioner)
    price = prices.for_capacity(row, key.capacity)
    sized = _sizing(key, demands, node, gpu.mig, share)
    nodes, node_hours, carries = sized.nodes, sized.node_hours, sized.carries
    sharing = _sharing(key, name, demands[0].ask, sized.peak, cloud)
    carried_demands = [d for d in demands if carries(d)]
    if sharing.mode == "mig":
        _check_pool_layouts(gpu, sharing, sized, row, carried_demands)
    gpus = _pool_gpus(sized, carried_demands, row, share)
    window = _schedule_window(demands[0].workload)
    notes = _pool_notes(key, provisioner, window, sized.peak, row, gpus, carried_demands, nodes, sharing, share)
    availability, spread_note = _availability(key, demands, node, gpu, share, sized, price.usd_per_node_hour)
    notes.extend([spread_note] if spread_note else [])
    checkpointed = _checkpointed(key, carried_demands)
    hours_per_node = node_hours / nodes if nodes else 0.0
    return Pool(
        name=name,
        cloud_name=cloud.pool_name(name, key.compact(), key.terse() if key.naming == "descriptive" else ()),
        kind=key.kind,
        role=_pool_role(key, demands, share),
        capacity=key.capacity,
        instance_type=row.name,
        gpu=gpu.name,
        gpus_per_node=row.gpus,
        vcpus_per_node=row.vcpus,
        memory_gib_per_node=row.memory_gib,
        min_nodes=sized.min_nodes,
        max_nodes=nodes,
        reserved_nodes=nodes if key.capacity == "reserved" else 0,
        sharing=sharing,
        schedule=window,
        workloads=tuple(sorted({d.workload.name for d in carried_demands})),
        placements=_placements(carried_demands, carries, key, share),
        namespaces=tuple(sorted({d.workload.namespace for d in carried_demands})),
        labels=_labels(spec, key, name, carried_demands, sharing, cloud, checkpointed),
        taints=_taints(key, provisioner),
        price=price,
        hours_per_month=hours_per_node,
        monthly_cost_usd=price.usd_per_node_hour * node_hours,
        gpus=gpus,
        reason=_reason(key, carried_demands, row, sharing, carries, share.why if share else None),
        notes=tuple(notes),
        standby_node_hours=sized.standby,
        label_conflicts=_label_conflicts(spec, carried_demands),
        disk_gib=key.disk if key.disk is not None else default_disk_gib(gpu),
        disk_reason=disk_reason(gpu, key.disk),
        mig_profiles=tuple(sorted({profile for group in sharing.mig for profile, _ in group.layout})),
        nvidia=_nvidia(sharing, cloud),
        provisioner=provisioner.name,
        checkpointed=checkpointed,
        availability=availability,
    )


def _pool_role(key: PoolKey, demands: list[Demand], share: Share | None) -> str:
    if key.fallback:
        return "fallback"
    if share is None:
        return _role(demands)
    return "floor" if key.capacity == "reserved" else "burst"


def _check_pool_layouts(gpu: GpuModel, sharing: Sharing, sized: _Sizing, row: InstanceType,
                        demands: list[Demand]) -> None:
    assert gpu.mig is not None
    asked: Counter[str] = Counter()
    for d in demands:
        asked[d.ask.profile.name] += sized.carries(d)  # type: ignore[union-attr]
    check_mig_layouts(gpu.mig, sharing, sized.peak.nodes, row.gpus, asked)


def _pool_gpus(sized: _Sizing, demands: list[Demand], row: InstanceType, share: Share | None) -> PoolGpus:
    """The pool's GPU figures; a shared packing's pool has its own part of the joint bounds."""
    peak = sized.peak
    requested = sum(sized.carries(d) * d.ask.requested_share for d in demands)
    requested_lower, nodes_lower, bounds = ceil_bound(requested), peak.nodes_lower_bound, peak.bounds
    if share is not None:
        requested_lower = requested_lower if share.requested_lower_bound is None else share.requested_lower_bound
        nodes_lower = nodes_lower if share.nodes_lower_bound is None else share.nodes_lower_bound
        bounds = bounds if share.bounds is None else share.bounds
    return PoolGpus(sized.required, sized.lower, sized.nodes * row.gpus, requested, requested_lower,
                    nodes_lower, bounds, peak.method, peak.proved_optimal)


def _schedule_window(workload: Workload) -> ScheduleWindow | None:
    schedule = workload.schedule
    if not schedule:
        return None
    window = ScheduleWindow(schedule.canonical_days, schedule.canonical_hours, schedule.timezone,
                            schedule.weekdays, schedule.start_minute, schedule.end_minute,
                            schedule.active_hours_per_week)
    starts, stops = window_crons(window)
    return dataclasses.replace(window, start_crons=starts, stop_crons=stops)


def _pool_notes(key: PoolKey, provisioner: Provisioner, window: ScheduleWindow | None, peak: Packing,
                row: InstanceType, gpus: PoolGpus, demands: list[Demand], nodes: int, sharing: Sharing,
                share: Share | None) -> list[str]:
    notes = []
    if window is not None and (gap := provisioner.gap(Feature.NATIVE_SCHEDULE)):
        notes.append(f"{gap}.")
    if key.fallback:
        notes.append("Runs only when spot capacity is short, so it is not in the monthly estimate; the range's "
                     "high end counts it running all of its spot pools' hours.")
    empty_gpus = sum(1 for layout in peak.mig_layouts if not layout)
    if empty_gpus and not provisioner.cloud.native_mig_partitioning:
        notes.append(f"{empty_gpus} of the {row.gpus} GPUs of each node stay unpartitioned (whole).")
    notes.extend(_packing_notes(gpus, demands, nodes, sharing))
    if share is not None and share.note:
        notes.append(share.note)
    return notes


def _availability(key: PoolKey, demands: list[Demand], node: NodeShape, gpu: GpuModel, share: Share | None,
                  sized: _Sizing, usd_per_node_hour: float) -> tuple[PoolAvailability | None, str | None]:
    """A spread pool's zones and what the spread costs beyond packing alone (and the note that says so)."""
    spread_asked = demands[0].workload.availability
    if not key.spread or spread_asked is None:
        return None, None
    nodes = sized.nodes
    plain = share.plain_nodes if share is not None else _pack(demands, node, gpu.mig, _all_replicas,
                                                                spread=False).nodes
    plain = nodes if plain is None else plain
    per_node_hours = sized.node_hours / nodes if nodes else 0.0
    availability = PoolAvailability(spread_asked.zones, spread_asked.max_replicas_per_node, plain,
                                    max(0, nodes - plain) * usd_per_node_hour * per_node_hours)
    note = cost_note(spread_asked, nodes, plain, usd_per_node_hour, per_node_hours) if nodes > plain else None
    return availability, note


def _placements(demands: list[Demand], carries: Callable[[Demand], int], key: PoolKey,
                share: Share | None) -> tuple[Placement, ...]:
    return tuple(sorted(
        (Placement(d.workload.name, carries(d), d.ask.planned_share, d.ask.requested_share,
                   d.ask.profile.name if d.ask.profile else None, d.workload.cpu, d.workload.memory_gib,
                   _placement_hours(d, key, share)) for d in demands), key=lambda p: p.workload))


def _checkpointed(key: PoolKey, demands: list[Demand]) -> bool:
    """A training or fine-tuning pool whose every workload resumes from checkpoints."""
    return key.kind in JOB_KINDS and all(d.workload.checkpointing for d in demands)


def check_mig_layouts(model: MigModel, sharing: Sharing, nodes: int, gpus_per_node: int,
                      demand: Counter[str]) -> None:
    """The boundary check: every layout of the plan is valid by NVIDIA's placement rules, a node
    has no more layouts than GPUs, and the pool's layouts hold every requested instance."""
    for group in sharing.mig:
        model.require_valid(dict(group.layout))
    if sum(group.gpus for group in sharing.mig) > gpus_per_node:
        raise InvalidLayout(f"{sharing.config or 'a pool'}: more MIG layouts than the node's {gpus_per_node} GPUs")
    held: Counter[str] = Counter()
    for group in sharing.mig:
        for profile, count in group.layout:
            held[profile] += count * group.gpus * nodes
    short = {p: n for p, n in demand.items() if held[p] < n}
    if short:
        raise InvalidLayout(f"{sharing.config or 'a pool'}: its MIG layouts hold fewer instances than asked: {short}")


def _packing_notes(gpus: PoolGpus, demands: list[Demand], nodes: int, sharing: Sharing) -> list[str]:
    """What the numbers of this pool mean for a person: rounding to shares, the gap and its cause."""
    notes = []
    if gpus.lower_bound > gpus.requested_lower_bound:
        shapes = sorted({_share_words(d.ask) for d in demands if d.ask.requested_share != d.ask.planned_share})
        if shapes:
            notes.append(f"Rounding to fixed shares: the replicas ask for {gpus.requested:.2f} GPUs in all (at "
                         f"least {gpus.requested_lower_bound} GPUs); as planned ({' and '.join(shapes)}) they need "
                         f"at least {gpus.lower_bound}.")
        elif sharing.mode == "mig" and _binding(gpus) in ("compute", "memory", "layout"):
            # The profiles were asked for as they are: what costs GPUs is where NVIDIA lets them go.
            limits = sorted({f"{d.ask.profile.name} at most {d.ask.profile.shape.max_count} per GPU"
                             for d in demands if d.ask.profile is not None})
            notes.append(f"MIG layouts: the profiles asked for add up to {gpus.requested:.2f} GPUs (at least "
                         f"{gpus.requested_lower_bound} GPUs), but NVIDIA's valid layouts place "
                         f"{', '.join(limits) or 'them in fixed positions'}, so they need at least {gpus.lower_bound}.")
        elif _binding(gpus) == "l2":
            notes.append(f"Fractions: the replicas ask for {gpus.requested:.2f} GPUs in all (at least "
                         f"{gpus.requested_lower_bound} GPUs), but two replicas above half a GPU never share one, "
                         f"so they need at least {gpus.lower_bound}.")
        elif _binding(gpus) == "exact_gpus":
            notes.append(f"Fractions: the replicas ask for {gpus.requested:.2f} GPUs in all (at least "
                         f"{gpus.requested_lower_bound} GPUs), but no packing of their sizes into GPUs uses fewer "
                         f"than {gpus.lower_bound} (proved by an integer program).")
        elif _binding(gpus) == "one_gpu_per_node":
            notes.append(f"CPU and memory: the replicas ask for {gpus.requested:.2f} GPUs in all (at least "
                         f"{gpus.requested_lower_bound} GPUs), but their CPU and memory need at least "
                         f"{gpus.nodes_lower_bound} node(s), each with a GPU in use, so they need at least "
                         f"{gpus.lower_bound}.")
    gap = gpus.required - gpus.lower_bound
    node_gap = nodes - gpus.nodes_lower_bound
    if gap > 0 and sharing.mode == "mig" and gpus.proved_optimal:
        per_node = gpus.required // nodes if nodes else 0
        notes.append(f"{nodes} node(s) x {per_node} partitioned GPUs is the fewest with one layout on every node "
                     f"(proved); any layouts at all need at least {gpus.lower_bound} GPUs, so identical nodes "
                     f"cost at most {gap} GPU(s) here.")
    elif not gpus.proved_optimal and (gap > 0 or node_gap > 0):
        # One sentence for both gaps: the pool has one packing, so one method and one verdict.
        figures = []
        if node_gap > 0:
            figures.append(f"{nodes} nodes, at most {node_gap} more than the lower bound of {gpus.nodes_lower_bound}")
        if gap > 0:
            figures.append(f"{gpus.required} GPUs in use, at most {gap} more than the lower bound of "
                           f"{gpus.lower_bound}")
        notes.append(f"Packed by {gpus.method}, not proved optimal: {'; '.join(figures)}.")
    return notes


# How the packer reached a pool's figures (its method and whether it proved them): for people who tune
# the solver, not for the pool's "why"; `gpustack plan --wide` shows them.
SOLVER_NOTE_STARTS = ("Packed by ",)


def is_solver_note(note: str) -> bool:
    """Whether a pool note is about the packer rather than the pool (the notes `_packing_notes` makes)."""
    return note.startswith(SOLVER_NOTE_STARTS)


def _binding(gpus: PoolGpus) -> str:
    """The name of the GPU lower bound that sets the pool's bound (the first, by name, of equals)."""
    return max(sorted(gpus.bounds), key=lambda b: b[1], default=("", 0))[0]


def _share_words(ask: Ask) -> str:
    if ask.mode == "mig" and ask.profile is not None:
        return f"{ask.requested_share:.3g} of a GPU as {ask.profile.name}"
    if ask.by_clients:
        return f"{ask.requested_share:.3g} of a GPU as 1/{ask.shares_per_gpu}"
    if ask.mode == "fractional":
        return f"{ask.requested_share:.4g} of a GPU as {ask.percent}%"
    return f"{ask.requested_share:.3g} of a GPU as a whole GPU"


def _items(demands: list[Demand], count) -> list[Item]:  # type: ignore[no-untyped-def]
    return [Item(d.workload.name, count(d), _units(d.ask), d.ask.cpu,
                 d.ask.memory_gib, d.hours, d.ask.profile.name if d.ask.profile else None)
            for d in demands if count(d)]


def _units(ask: Ask) -> int:
    """What one replica takes of a node's GPU units: whole GPUs, one share, one MIG instance, or percents."""
    return ask.gpus if ask.mode == "none" else ask.percent if ask.mode == "fractional" else 1


def _all_replicas(demand: Demand) -> int:
    return demand.part.replicas


def _node_shape(row: InstanceType, ask: Ask, provisioner: Provisioner) -> NodeShape:
    node = provisioner.template_node(row)
    return NodeShape(node.gpus, node.vcpus, node.memory_gib, ask.shares_per_gpu)


def _floor_nodes(floor: list[Demand], node: NodeShape, mig: MigModel | None, peak: Packing, most: int) -> int:
    """Nodes that hold every floor replica (part.min_replicas) on nodes packed for the peak."""
    if floor[0].ask.mode == "mig" and floor[0].workload.availability is None:
        # The floor runs on nodes with the pool's layouts (sized for the peak), not layouts of its own.
        carried = [layout for layout in peak.mig_layouts if layout]
        return nodes_for(_items(floor, lambda d: d.part.min_replicas), carried, node, most)
    return min(most, _pack(floor, node, mig, lambda d: d.part.min_replicas).nodes)


def build_floor_and_burst(floor_key: PoolKey, floor_name: str, burst_key: PoolKey, burst_name: str,
                          floor: list[Demand], burst: list[Demand], spec: Spec, provisioner: Provisioner,
                          catalog: Catalog, prices: PriceBook) -> list[Pool]:
    """A reserved floor and its on-demand burst, packed together at the peak.

    The burst rides on the floor's spare room first (the scheduler puts pods wherever they fit), so
    the burst pool only gets the nodes the peak needs beyond the floor, and none when the reserved
    nodes hold the whole peak.
    """
    demands, row, gpu, node, peak, floor_nodes = _split(floor_key, floor, burst, provisioner, catalog)
    burst_nodes = peak.nodes - floor_nodes
    plain_floor = plain_burst = None
    if floor_key.spread:  # what packing alone would give each pool, for the price of the spread
        plain_peak = _pack(demands, node, gpu.mig, _all_replicas, spread=False)
        plain_floor = min(plain_peak.nodes, _pack(floor, node, gpu.mig, lambda d: d.part.min_replicas,
                                                  spread=False).nodes)
        plain_burst = plain_peak.nodes - plain_floor
    alone = _pack(floor, node, gpu.mig, lambda d: d.part.min_replicas)
    # At the peak the reserved nodes are the ones filled first: they carry their GPUs' share of the use.
    if demands[0].ask.mode == "mig":
        floor_required = floor_nodes * sum(1 for layout in peak.mig_layouts if layout)
    else:
        floor_required = min(peak.gpus_required, floor_nodes * row.gpus)
    floors = {id(d) for d in floor}
    # Bounds split so that they add up to the joint bound and never exceed what each pool uses.
    floor_lower = min(alone.lower_bound, floor_required)
    burst_required = max(0, peak.gpus_required - floor_required)
    floor_requested = ceil_bound(sum(d.part.min_replicas * d.ask.requested_share for d in floor))
    floor_bounds = tuple((name, min(value, floor_required)) for name, value in alone.bounds)
    floor_share = Share(packing=peak, nodes=floor_nodes, min_nodes=floor_nodes, gpus_required=floor_required,
                        lower_bound=floor_lower, node_hours=floor_nodes * HOURS_PER_MONTH,
                        replicas=lambda d: d.part.min_replicas if id(d) in floors else 0,
                        requested_lower_bound=min(floor_requested, floor_lower),
                        nodes_lower_bound=min(alone.nodes_lower_bound, floor_nodes), bounds=floor_bounds,
                        plain_nodes=plain_floor)
    if burst_nodes == 0:
        # The reserved nodes hold the peak: they carry every replica, and no burst pool is needed.
        everything = Share(packing=peak, nodes=floor_nodes, min_nodes=floor_nodes, gpus_required=peak.gpus_required,
                           lower_bound=peak.lower_bound, node_hours=floor_nodes * HOURS_PER_MONTH,
                           replicas=_all_replicas,
                           note="The reserved nodes have room for the peak as well: no on-demand burst pool.",
                           plain_nodes=None if plain_floor is None else plain_floor + (plain_burst or 0))
        return [build_pool(floor_key, floor_name, demands, spec=spec, provisioner=provisioner, catalog=catalog,
                           prices=prices, share=everything)]
    at_least = [d for d in demands if d.part.min_replicas]
    burst_min = max(0, _floor_nodes(at_least, node, gpu.mig, peak, peak.nodes) - floor_nodes) if any(
        d.part.min_replicas for d in burst) else 0
    bursting = _bursting(floor)
    hours = _burst_hours(demands, bursting)
    # The burst's bounds are what the joint bounds leave beyond the floor's: floor + burst = joint.
    burst_lower = min(burst_required, max(0, peak.lower_bound - floor_lower))
    floor_by_name = dict(floor_bounds)
    burst_share = Share(packing=peak, nodes=burst_nodes, min_nodes=burst_min, gpus_required=burst_required,
                        lower_bound=burst_lower, node_hours=burst_nodes * hours, replicas=bursting,
                        why="the burst above the floor on on-demand, scaled in when idle",
                        requested_lower_bound=min(burst_lower, ceil_bound(sum(
                            bursting(d) * d.ask.requested_share for d in demands))),
                        nodes_lower_bound=min(burst_nodes, max(0, peak.nodes_lower_bound - floor_nodes)),
                        bounds=tuple((name, min(burst_required, max(0, value - floor_by_name.get(name, 0))))
                                     for name, value in peak.bounds),
                        plain_nodes=plain_burst)
    return [build_pool(floor_key, floor_name, demands, spec=spec, provisioner=provisioner, catalog=catalog,
                       prices=prices, share=floor_share),
            build_pool(burst_key, burst_name, demands, spec=spec, provisioner=provisioner, catalog=catalog,
                       prices=prices, share=burst_share)]


def _split(floor_key: PoolKey, floor: list[Demand], burst: list[Demand], provisioner: Provisioner,
           catalog: Catalog) -> tuple[list[Demand], InstanceType, GpuModel, NodeShape, Packing, int]:
    """A floor and its burst packed together at the peak, and how many of the nodes the floor needs."""
    demands = floor + burst
    row, gpu = demands[0].row, catalog.gpu(floor_key.gpu)
    assert gpu is not None
    node = _node_shape(row, demands[0].ask, provisioner)
    peak = _pack(demands, node, gpu.mig, _all_replicas)
    return demands, row, gpu, node, peak, _floor_nodes(floor, node, gpu.mig, peak, peak.nodes)


def _bursting(floor: list[Demand]) -> Callable[[Demand], int]:
    """The replicas of a demand above its floor: all of a burst demand's."""
    floors = {id(d) for d in floor}
    return lambda d: d.part.replicas - d.part.min_replicas if id(d) in floors else d.part.replicas


def _burst_hours(demands: list[Demand], bursting: Callable[[Demand], int]) -> float:
    return max((workload_hours(d.workload) for d in demands if bursting(d)), default=HOURS_PER_MONTH)


def floor_and_burst_cost(floor_key: PoolKey, burst_key: PoolKey, floor: list[Demand], burst: list[Demand],
                         provisioner: Provisioner, catalog: Catalog, prices: PriceBook) -> float:
    """What `build_floor_and_burst`'s pools cost a month, without building them (for pricing types)."""
    demands, row, _, _, peak, floor_nodes = _split(floor_key, floor, burst, provisioner, catalog)
    cost = prices.for_capacity(row, floor_key.capacity).usd_per_node_hour * floor_nodes * HOURS_PER_MONTH
    if peak.nodes > floor_nodes:
        hours = _burst_hours(demands, _bursting(floor))
        cost += prices.for_capacity(row, burst_key.capacity).usd_per_node_hour * (peak.nodes - floor_nodes) * hours
    return cost


def pool_cost(key: PoolKey, demands: list[Demand], provisioner: Provisioner, catalog: Catalog,
              prices: PriceBook) -> float:
    """What `build_pool`'s pool (with no share) costs a month, without building it (for pricing types)."""
    if key.fallback:
        return 0.0  # it stands by; the estimate leaves it out
    row, gpu = demands[0].row, catalog.gpu(key.gpu)
    assert gpu is not None
    peak = _pack(demands, _node_shape(row, demands[0].ask, provisioner), gpu.mig, _all_replicas)
    node_hours = peak.nodes * HOURS_PER_MONTH if key.capacity == "reserved" else peak.node_hours
    return prices.for_capacity(row, key.capacity).usd_per_node_hour * node_hours


def _placement_hours(demand: Demand, key: PoolKey, share: Share | None) -> float:
    """The monthly hours a replica runs in this pool: a floor's burst above it runs the workload's own
    hours, not the reservation's (its demand was built as reserved, billed all month)."""
    if share is None or key.capacity == "reserved":
        return demand.hours
    return workload_hours(demand.workload)


def workload_hours(workload: Workload) -> float:
    if workload.schedule is not None:
        return workload.schedule.active_hours_per_week * HOURS_PER_MONTH / 168
    return workload.hours_per_month or HOURS_PER_MONTH


def _pack(demands: list[Demand], node: NodeShape, mig, count, spread: bool = True) -> Packing:  # type: ignore[no-untyped-def]
    """The packing of `count(d)` replicas of each demand; under the workload's `availability` (its pools
    hold it alone) spread over zones and nodes (`gpustack.plan.spread`) unless `spread` is False."""
    availability = demands[0].workload.availability if spread else None
    if availability is not None and len({d.workload.name for d in demands}) == 1:
        template = next((d for d in demands if count(d)), demands[0])
        return spread_packing(sum(count(d) for d in demands), availability,
                              lambda n: _pack([template], node, mig, lambda _: n, spread=False))
    try:
        mode = demands[0].ask.mode
        return _packed(tuple(_items(demands, count)), node, mig if mode == "mig" else None, mode == "fractional")
    except DoesNotFit as exc:
        raise ValueError(str(exc)) from None


@functools.lru_cache(maxsize=1024)
def _packed(items: tuple[Item, ...], node: NodeShape, mig: MigModel | None, fractional: bool) -> Packing:
    # A pool whose floor is its peak (replicas: N on demand) packs the same replicas twice: once is enough.
    if mig is not None:
        return pack_mig(items, node, mig)
    return pack_fractions(items, node) if fractional else pack_shares(items, node)


def _role(demands: list[Demand]) -> str:
    roles = {d.part.role for d in demands}
    return roles.pop() if len(roles) == 1 else "main"


def _sharing(key: PoolKey, name: str, ask: Ask, packing: Packing, cloud: Cloud) -> Sharing:
    if ask.mode == "none":
        return Sharing("none")
    if ask.mode == "fractional":  # HAMi's device plugin reads no NVIDIA config
        return Sharing("fractional")
    needs_device_plugin = ask.mode not in cloud.native_sharing
    needs_mig_parted = ask.mode == "mig" and not cloud.native_mig_partitioning
    config = name if needs_device_plugin or needs_mig_parted else None
    if ask.mode == "mig" and cloud.native_mig_partitioning:
        # The cloud partitions every GPU of the pool with the one profile, to its maximum count.
        assert ask.profile is not None
        full = ((ask.profile.name, ask.profile.shape.max_count),)
        return Sharing("mig", None, (MigGroup(full, len(packing.mig_layouts)),), config)
    if ask.mode == "mig":
        groups = Counter(layout for layout in packing.mig_layouts if layout)
        mig = tuple(MigGroup(layout, count) for layout, count in
                    sorted(groups.items(), key=lambda item: (-item[1], item[0])))
        return Sharing("mig", None, mig, config)
    return Sharing(ask.mode, ask.shares_per_gpu, (), config)


def _labels(spec: Spec, key: PoolKey, name: str, demands: list[Demand], sharing: Sharing,
            cloud: Cloud, checkpointed: bool) -> tuple[tuple[str, str], ...]:
    labels = dict(spec.labels)
    common = None
    for demand in demands:
        mine = set(demand.workload.labels)
        common = mine if common is None else common & mine
    labels.update(dict(common or ()))
    if key.capacity == "spot" and cloud.declare_spot_label and cloud.spot_node_label:
        labels[cloud.spot_node_label[0]] = cloud.spot_node_label[1]
    labels[KIND_LABEL] = key.kind
    labels[POOL_LABEL] = name
    if key.kind in JOB_KINDS:
        labels[CHECKPOINTING_LABEL] = "true" if checkpointed else "false"
    if sharing.config and sharing.mode not in cloud.native_sharing:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = sharing.config
    if sharing.config and sharing.mode == "mig" and not cloud.native_mig_partitioning:
        labels[MIG_CONFIG_LABEL] = sharing.config
    if sharing.mode == "fractional":
        labels.update(FRACTIONAL_NODE_LABELS)
    return tuple(sorted(labels.items()))


def _label_conflicts(spec: Spec, demands: list[Demand]) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """Keys the workloads of a pool give with different values: no node label can carry them."""
    given = {d.workload.name: dict(d.workload.labels) for d in demands}
    top = dict(spec.labels)
    keys = sorted({k for labels in given.values() for k in labels})
    out = []
    for key in keys:
        values = {name: labels.get(key, top.get(key, "")) for name, labels in sorted(given.items())}
        if len(set(values.values())) > 1:
            out.append((key, tuple(values.items())))
    return tuple(out)


def _taints(key: PoolKey, provisioner: Provisioner) -> tuple[Taint, ...]:
    taints = [GPU_TAINT]
    if key.capacity == "spot" and provisioner.spot_taint:
        taints.append(Taint(*provisioner.spot_taint))
    return tuple(taints)


def _nvidia(sharing: Sharing, cloud: Cloud) -> NvidiaConfig:
    """The NVIDIA configs the pool's nodes select (the same as its labels)."""
    device_plugin = sharing.config if sharing.config and sharing.mode not in cloud.native_sharing else None
    mig_parted = sharing.config if sharing.config and sharing.mode == "mig" and not cloud.native_mig_partitioning \
        else None
    return NvidiaConfig(device_plugin, mig_parted)


def _reason(key: PoolKey, demands: list[Demand], row: InstanceType, sharing: Sharing,
            carries: Callable[[Demand], int], why: str | None) -> str:
    whys = [why] if why else sorted({d.part.why for d in demands})
    replicas = ", ".join(f"{d.workload.name} x{carries(d)}" for d in sorted(demands, key=lambda d: d.workload.name))
    how = {
        "none": "whole GPUs",
        "time-slicing": f"time-sliced, {sharing.replicas} clients per GPU",
        "mps": f"MPS, {sharing.replicas} clients per GPU",
        "mig": "MIG partitions packed by NVIDIA's placement rules",
        "fractional": "enforced fractions (HAMi), packed per GPU",
    }[sharing.mode]
    return (f"{'; '.join(whys)} ({replicas}); {how}; {row.name} carries these replicas for the least money "
            f"among the {row.gpu} nodes")
