"""Per-workload decisions: which capacity types carry its replicas, and on which instance type.

Both decisions depend on the workload alone (never on the other workloads of the spec), so adding
or reordering workloads never moves an existing workload to another pool.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from gpustack.catalog import GpuModel, InstanceType
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.asks import Ask
from gpustack.plan.nodes import allocatable
from gpustack.plan.prices import PriceBook
from gpustack.spec.model import CAPACITIES, JOB_KINDS, TIMEBOXED_CAPACITIES, Workload


@dataclasses.dataclass(frozen=True)
class Part:
    """Some of a workload's replicas on one capacity type."""

    capacity: str  # spot | on-demand | reserved
    role: str  # main | floor | burst | fallback
    replicas: int  # at peak
    min_replicas: int  # always running
    why: str


def capacity_parts(workload: Workload) -> tuple[list[Part], list[tuple[str, str]]]:
    """The capacity split of a workload, and (code, message) warnings about it (README "What the
    compiler decides"). An explicit `capacity:` is honoured; the risks it takes are said aloud."""
    warnings: list[tuple[str, str]] = []
    high = workload.replicas.max
    override = workload.capacity
    name = workload.name
    if override == "spot" and workload.kind in JOB_KINDS and not workload.checkpointing:
        warnings.append(("spot-without-checkpointing",
                         f"{workload.kind} {name!r} has capacity: spot but no checkpointing: a reclaimed node "
                         "loses the run's progress (gpustack check rejects this)"))
    if override in TIMEBOXED_CAPACITIES and workload.kind in JOB_KINDS:
        return [
            Part(override, "main", high, 0, f"capacity: {override} in the spec"),
            Part("on-demand", "fallback", high, 0, f"the ladder's next rung: on-demand when the {override} capacity "
                                                   "ends or is short"),
        ], warnings
    parts = _BY_KIND[workload.kind](workload, override, warnings)
    return parts, warnings


# One function per workload kind: (workload, its `capacity:` override, the warnings to add to) -> parts.
_Parts = Callable[[Workload, str | None, list[tuple[str, str]]], list[Part]]


def _training(workload: Workload, override: str | None, warnings: list[tuple[str, str]]) -> list[Part]:
    high = workload.replicas.max
    if override:
        return [_as_asked(override, high)]
    if workload.checkpointing:
        return [Part("spot", "main", high, 0, "checkpointed training runs on spot")]
    warnings.append(("no-checkpointing", f"training {workload.name!r} has no checkpointing: kept on on-demand (set "
                                         "checkpointing: true to run it on spot)"))
    return [Part("on-demand", "main", high, 0, "training without checkpointing stays on on-demand")]


def _fine_tuning(workload: Workload, override: str | None, warnings: list[tuple[str, str]]) -> list[Part]:
    high = workload.replicas.max
    if override == "spot" or (override is None and workload.checkpointing):
        why = ("capacity: spot in the spec" if override else
               "checkpointed fine-tuning runs on spot, scaled to zero between runs")
        return [
            Part("spot", "main", high, 0, why),
            Part("on-demand", "fallback", high, 0, "on-demand fallback when spot capacity is short"),
        ]
    if override:
        return [_as_asked(override, high)]
    warnings.append(("no-checkpointing", f"fine-tuning {workload.name!r} has no checkpointing: kept on on-demand "
                                         "(set checkpointing: true to run it on spot with an on-demand fallback)"))
    return [Part("on-demand", "main", high, 0, "fine-tuning without checkpointing stays on on-demand")]


def _inference(workload: Workload, override: str | None, warnings: list[tuple[str, str]]) -> list[Part]:
    low, high = workload.replicas.min, workload.replicas.max
    if override == "reserved":
        return [Part("reserved", "floor", high, high, "capacity: reserved in the spec")]
    if override == "spot":
        warnings.append(("spot-only-inference",
                         f"inference {workload.name!r} has capacity: spot: a reclaim can take every replica down "
                         "at once (gpustack check rejects spot-only serving)"))
    if override in ("on-demand", "spot"):
        return [Part(override, "burst", high, low, f"capacity: {override} in the spec")]
    if low:
        # One demand at the peak with its floor: the planner packs the floor and the burst
        # together and splits the nodes into a reserved pool and an on-demand one.
        return [Part("reserved", "floor", high, low, "the steady floor (replicas.min) on reserved capacity")]
    return [Part("on-demand", "burst", high, 0, "no floor (replicas.min 0): on-demand, scaled in when idle")]


def _notebook(workload: Workload, override: str | None, warnings: list[tuple[str, str]]) -> list[Part]:
    if override == "spot":
        warnings.append(("spot-notebook", f"notebook {workload.name!r} has capacity: spot: open sessions are lost "
                                          "when a node is reclaimed"))
    if override:
        return [_as_asked(override, workload.replicas.max)]
    return [Part("on-demand", "main", workload.replicas.max, 0, "notebooks run on on-demand")]


_BY_KIND: dict[str, _Parts] = {
    "training": _training, "fine-tuning": _fine_tuning, "inference": _inference, "notebook": _notebook,
}


def _as_asked(capacity: str, replicas: int) -> Part:
    reserved = capacity == "reserved"
    return Part(capacity, "floor" if reserved else "main", replicas, replicas if reserved else 0,
                f"capacity: {capacity} in the spec")


def slots_per_node(row: InstanceType, ask: Ask, provisioner: Provisioner) -> int:
    """How many replicas of `ask` one node of `row` holds in every dimension: GPU, CPU, memory (what the
    kubelet of the provisioner's node image leaves)."""
    if ask.mode == "mig":
        assert ask.profile is not None
        slots = row.gpus * ask.profile.shape.max_count
    elif ask.by_clients:
        slots = row.gpus * ask.shares_per_gpu
    elif ask.mode == "fractional":
        slots = row.gpus * (100 // ask.percent)
    else:
        slots = row.gpus // ask.gpus
    cpu, memory = allocatable(row.vcpus, row.memory_gib, provisioner.kubelet_reservation, row.name)
    if ask.cpu:
        slots = min(slots, int((cpu + 1e-9) // ask.cpu))
    if ask.memory_gib:
        slots = min(slots, int((memory + 1e-9) // ask.memory_gib))
    return max(slots, 0)


# When the cloud refuses a capacity for every type that fits, the capacity the workload falls back to
# (with a warning): spot -> on-demand keeps a job running at a higher price; a floor the cloud cannot
# reserve still runs, on on-demand nodes the autoscaler keeps but nothing guarantees. On-demand has
# no fallback: spot would change what the workload risks, so that is an error.
FALLBACK_CAPACITY = {"spot": "on-demand", "reserved": "on-demand"}


@dataclasses.dataclass(frozen=True)
class Choice:
    row: InstanceType | None  # None: the cloud refuses every fitting type on the capacity (and its fallback)
    capacity: str
    fallback_reason: str | None  # why the asked capacity was not possible, when the choice fell back
    refusal: str | None = None  # why nothing could be chosen, when row is None


def fitting_rows(rows: tuple[InstanceType, ...], gpu: GpuModel, ask: Ask,
                 provisioner: Provisioner) -> list[tuple[InstanceType, int]]:
    return [(row, slots) for row in rows
            if row.gpu == gpu.name and (slots := slots_per_node(row, ask, provisioner)) > 0]


def binding_field(rows: tuple[InstanceType, ...], gpu: GpuModel, ask: Ask, provisioner: Provisioner) -> str:
    """The spec field of a workload that no type can hold: where the error about it is located.

    `cpu` when the replica's GPUs fit a type but not with its CPU, `memory` likewise, else the GPU ask."""
    if fitting_rows(rows, gpu, dataclasses.replace(ask, cpu=0.0, memory_gib=0.0), provisioner):
        if ask.cpu and not fitting_rows(rows, gpu, dataclasses.replace(ask, memory_gib=0.0), provisioner):
            return "cpu"
        if ask.memory_gib and not fitting_rows(rows, gpu, dataclasses.replace(ask, cpu=0.0), provisioner):
            return "memory"
        return "cpu" if ask.cpu else "memory"  # each fits alone, not both together
    return "gpus" if ask.mode == "none" else "gpu"


def accepted_capacities(rows: tuple[InstanceType, ...], gpu: GpuModel, ask: Ask, provisioner: Provisioner) -> list[str]:
    """The capacities on which the provisioner gets at least one type that fits: what would work."""
    fitting = fitting_rows(rows, gpu, ask, provisioner)
    return [c for c in CAPACITIES if any(provisioner.capacity_refusal(row, c) is None for row, _ in fitting)]


def choose_instance(rows: tuple[InstanceType, ...], gpu: GpuModel, ask: Ask, replicas: int, capacity: str,
                    provisioner: Provisioner, prices: PriceBook, may_fall_back: bool = True) -> Choice | None:
    """The instance type that carries the workload's peak `replicas` for the least money.

    Cost = nodes needed x price for this capacity type, so a handful of replicas is not put on an
    8-GPU machine whose price per replica only looks low when it is full. Ties go to the lower price
    per replica, then to the node with fewer GPUs (a smaller failure domain), then to the name. Types
    the provisioner cannot get on this capacity are never chosen (`Provisioner.capacity_refusal`: its gaps
    and the cloud's refusals); when it refuses
    every fitting type, the ask falls back to FALLBACK_CAPACITY if `may_fall_back`. None: nothing fits.
    """
    fitting = fitting_rows(rows, gpu, ask, provisioner)
    if not fitting:
        return None
    reason = None
    refusal = provisioner.capacity_refusal
    accepted = [(row, slots) for row, slots in fitting if refusal(row, capacity) is None]
    if not accepted:
        reason = "; ".join(dict.fromkeys(str(refusal(row, capacity)) for row, _ in fitting))
        fallback = FALLBACK_CAPACITY.get(capacity) if may_fall_back else None
        accepted = [(row, slots) for row, slots in fitting
                    if fallback is not None and refusal(row, fallback) is None]
        if fallback is None or not accepted:
            return Choice(None, capacity, None, reason)
        capacity = fallback

    def cost(row_slots: tuple[InstanceType, int]) -> tuple[float, float, int, str]:
        row, slots = row_slots
        hourly = prices.for_capacity(row, capacity).usd_per_node_hour
        nodes = -(-max(replicas, 1) // slots)
        return (round(nodes * hourly, 6), hourly / slots, row.gpus, row.name)

    row, _ = min(accepted, key=cost)
    return Choice(row, capacity, reason)
