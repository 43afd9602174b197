"""Recommendations, each priced by the planner: the spec with that one change is planned and the target's
planned monthly cost subtracted from the spec's own (as `gpustack diff SPEC OUT` prices it). No second
cost formula: a change the planner prices at nothing saves nothing here either.

Candidates per workload:
- `replicas.min` (inference) follows the measured floor when it is lower than the planned one (kept even
  when the planner prices it at nothing: the burst above it is priced at its peak, but the commitment to
  buy shrinks), and `replicas.max` the most that ran;
- a smaller size follows the GPU memory used: the p95 plus MEMORY_HEADROOM, as the smallest MIG profile
  that holds it (`mig`), a fraction of the GPU's memory (`gpu_fraction`, rounded up to FRACTION_STEP) or
  memory in whole GiB (`gpu_memory`);
- a workload idle for at least IDLE_SHARE of its GPU-hours: a `schedule` (notebook, fine-tuning: office
  hours, to be adjusted) when it has none, else `idle:` scale-to-zero (inference without a floor, notebook).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Sequence

from gpustack.errors import SpecError
from gpustack.plan import Plan, build_plan
from gpustack.plan.model import CommitmentRecommendation
from gpustack.report.model import CommitmentReport, Recommendation, WorkloadReport
from gpustack.report.specedit import Edit, SpecText
from gpustack.spec import Spec
from gpustack.spec.model import IDLE_KINDS, SCHEDULABLE_KINDS, Workload

MEMORY_HEADROOM = 0.20  # above the p95 of memory used: room for a longer context or a larger batch
FRACTION_STEP = 0.05
IDLE_SHARE = 0.5
SCHEDULE = {"days": "Mon-Fri", "hours": "08:00-18:00"}
IDLE = {"below": "10%", "for": "30m", "action": "scale-to-zero"}

Planner = Callable[[str], Plan]  # spec text -> its plan (SpecError when the text is not a valid spec)


@dataclasses.dataclass(frozen=True)
class Candidate:
    workload: str
    field: str
    from_value: object
    to_value: object
    edits: tuple[Edit, ...]
    reason: str


@dataclasses.dataclass(frozen=True)
class Priced:
    recommendations: tuple[Recommendation, ...]
    edits: tuple[Edit, ...]  # of every recommendation, for --write-spec
    commitment: CommitmentReport
    recommended_monthly_usd: float | None


def spec_planner(file: str, catalogs: Sequence[str], base_dir: object, base: Plan) -> Planner:
    from pathlib import Path

    from gpustack.spec import load_text

    def plan(text: str) -> Plan:
        return build_plan(load_text(text, file, catalogs, base_dir=Path(str(base_dir))), current=base)
    return plan


def price(spec: Spec, text: str, base: Plan, target: str, measured: Sequence[WorkloadReport],
          planner: Planner, floor_quantile: float) -> Priced:
    before = base.target(target).cost.planned_monthly_usd
    written = SpecText(text, spec.source)
    found = []
    listed = [candidate for report in measured
              for candidate in candidates(spec, spec.workload(report.name), report, floor_quantile)]
    costs = plan_costs(planner, [written.apply(candidate.edits) for candidate in listed], target)
    for candidate, cost in zip(listed, costs, strict=True):
        # A lower floor the planner prices at no saving still shrinks the commitment to buy, and the planner
        # cannot price `idle:` (when a workload idles is not known in advance): both kept at no saving.
        least = -0.005 if candidate.field in ("replicas.min", "idle") else 0.005
        if cost is None or before - cost <= least:
            continue
        others = [t.name for t in spec.targets if t.name != target and candidate.workload in t.workloads]
        if others:  # workloads are the spec's, not the target's: the change reaches every target running it
            candidate = dataclasses.replace(candidate, reason=f"{candidate.reason}; it also changes the "
                                            f"workload on {', '.join(others)} (see gpustack diff)")
        found.append((candidate, before - cost))
    found.sort(key=lambda pair: (pair[0].workload, pair[0].field))
    edits = merged(e for candidate, _ in found for e in candidate.edits)
    recommended = _planned(planner, written.apply(edits), target) if edits else before
    # The commitment follows every measured floor below the planned one, whatever lowering it alone saves.
    floors = merged(e for report in measured
                    for candidate in candidates(spec, spec.workload(report.name), report, floor_quantile)
                    if candidate.field == "replicas.min" for e in candidate.edits)
    return Priced(
        tuple(Recommendation(c.workload, c.field, c.from_value, c.to_value, saving, c.reason) for c, saving in found),
        edits, _commitment(written, base, target, measured, floors, planner), recommended)


def merged(edits: Iterable[Edit]) -> tuple[Edit, ...]:
    """The edits, those of one place made one: `replicas` written as one count gets both new bounds."""
    out: dict[tuple[object, ...], Edit] = {}
    for edit in edits:
        same = out.get(edit.path)  # two lowered replica bounds: both lowered
        if same is not None and isinstance(same.value, dict) and isinstance(edit.value, dict):
            edit = dataclasses.replace(edit, value={k: min(same.value[k], edit.value[k]) for k in same.value})
        elif same is not None and isinstance(same.value, int) and isinstance(edit.value, int):
            edit = dataclasses.replace(edit, value=min(same.value, edit.value))
        out[edit.path] = edit
    return tuple(out.values())


# Plans priced side by side once there are this many: each is tens of milliseconds of a big spec's planning.
PARALLEL_PLANS = 8
_PLANNING: tuple[Planner, str] | None = None  # what the forked workers plan with (inherited, not pickled)


def plan_costs(planner: Planner, texts: Sequence[str], target: str) -> list[float | None]:
    """The target's planned monthly cost of each spec text (None: not a valid spec), in that order. On Linux
    with more than one CPU, many texts are planned in two forked processes (the planner and the texts as they
    are in this one; only the costs come back), so the report's last step uses the cores the server no longer
    needs; each cost is the same planner's for the same text either way."""
    global _PLANNING
    if len(texts) < PARALLEL_PLANS or sys.platform != "linux" or (os.cpu_count() or 1) < 2:
        return [_planned(planner, text, target) for text in texts]
    _PLANNING = (planner, target)
    try:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
            return list(pool.map(_planned_here, texts, chunksize=max(1, len(texts) // 8)))
    finally:
        _PLANNING = None


def _planned_here(text: str) -> float | None:
    assert _PLANNING is not None
    return _planned(_PLANNING[0], text, _PLANNING[1])


def _planned(planner: Planner, text: str, target: str) -> float | None:
    try:
        return planner(text).target(target).cost.planned_monthly_usd
    except SpecError:
        return None


def candidates(spec: Spec, workload: Workload, report: WorkloadReport, floor_quantile: float) -> list[Candidate]:
    out = []
    where = ("workloads", workload.index)
    stats = report.replicas
    if stats is not None and workload.kind == "inference" and stats.floor < workload.replicas.min:
        out.append(Candidate(workload.name, "replicas.min", workload.replicas.min, stats.floor,
                             _replica_edits(spec, where, workload, "min", stats.floor),
                             f"ran at least {stats.floor} replicas in {floor_quantile:.0%} of the window's steps; "
                             f"the floor of {workload.replicas.min} is reserved around the clock"))
    if stats is not None and workload.kind == "inference" and max(stats.max, 1) < workload.replicas.max:
        peak = max(stats.max, 1)
        edits = _replica_edits(spec, where, workload, "max", peak)
        lower = f", and replicas.min with it to {peak}" if workload.replicas.min > peak else ""
        if workload.replicas.min > peak:  # a range keeps min <= max
            edits = merged(edits + _replica_edits(spec, where, workload, "min", peak))
        out.append(Candidate(workload.name, "replicas.max", workload.replicas.max, peak, edits,
                             f"at most {stats.max} replicas ran in the window; the plan prices the burst up to "
                             f"{workload.replicas.max} all month{lower}"))
    if report.fb_used_p95_gib is not None:
        sized = _smaller(spec, workload, report.fb_used_p95_gib * (1 + MEMORY_HEADROOM))
        if sized is not None:
            field, value = sized
            current = {"mig": workload.mig, "gpu_fraction": workload.gpu_fraction,
                       "gpu_memory": f"{workload.gpu_memory_gib:g}Gi" if workload.gpu_memory_gib else None}[field]
            out.append(Candidate(workload.name, field, current, value, (Edit(where + (field,), value),),
                                 f"GPU memory used: p95 {report.fb_used_p95_gib:.2f} GiB, "
                                 f"+{MEMORY_HEADROOM:.0%} headroom = {report.fb_used_p95_gib * (1 + MEMORY_HEADROOM):.2f}"
                                 " GiB"))
    if (report.idle_gpu_hours is not None and report.gpu_hours and
            report.idle_gpu_hours >= IDLE_SHARE * report.gpu_hours):
        idle_share = report.idle_gpu_hours / report.gpu_hours
        source = spec.source.data["workloads"][workload.index]
        if workload.kind in SCHEDULABLE_KINDS and workload.schedule is None and "hours_per_month" not in source:
            value = {**SCHEDULE, "timezone": _timezone(spec)}
            out.append(Candidate(workload.name, "schedule", None, value, (Edit(where + ("schedule",), value, add=True),),
                                 f"{idle_share:.0%} of its GPU-hours were idle: run it in office hours (adjust the "
                                 "window to the team's)"))
        elif (workload.kind in IDLE_KINDS and workload.idle is None and workload.schedule is None
              and workload.replicas.min == 0):
            out.append(Candidate(workload.name, "idle", None, dict(IDLE), (Edit(where + ("idle",), dict(IDLE), add=True),),
                                 f"{idle_share:.0%} of its GPU-hours were idle: scale it to zero when idle (the planner prices no "
                                 "saving for it: when a workload idles is not known in advance)"))
    return out


def _timezone(spec: Spec) -> str:
    zones = sorted({w.schedule.timezone for w in spec.workloads if w.schedule is not None})
    return zones[0] if zones else "UTC"


def _replica_edits(spec: Spec, where: tuple[str | int, ...], workload: Workload, bound: str, count: int
                   ) -> tuple[Edit, ...]:
    written = spec.source.data["workloads"][workload.index].get("replicas")
    if isinstance(written, dict):
        return (Edit(where + ("replicas", bound), count),)
    value = {"min": workload.replicas.min, "max": workload.replicas.max, bound: count}
    if written is None:
        return (Edit(where + ("replicas",), value, add=True),)
    return (Edit(where + ("replicas",), value),)


def _smaller(spec: Spec, workload: Workload, need_gib: float) -> tuple[str, object] | None:
    catalog = spec.catalog
    gpu = catalog.gpu(workload.gpu) if catalog is not None else None
    if gpu is None:
        return None
    if workload.mig is not None and gpu.mig is not None:
        current = gpu.mig.profile(workload.mig)
        smaller = gpu.mig.smallest_holding(memory_gib=need_gib)
        if current is not None and smaller is not None and smaller.memory < current.memory:
            return "mig", smaller.name
        return None
    if workload.gpu_fraction is not None:
        fraction = min(1.0, math.ceil(need_gib / gpu.usable_memory_gib / FRACTION_STEP - 1e-9) * FRACTION_STEP)
        fraction = round(fraction, 2)
        return ("gpu_fraction", fraction) if fraction < workload.gpu_fraction - 1e-9 else None
    if workload.gpu_memory_gib is not None:
        memory = math.ceil(need_gib - 1e-9)
        return ("gpu_memory", f"{memory}Gi") if memory < workload.gpu_memory_gib - 1e-9 else None
    return None


def _commitment(written: SpecText, base: Plan, target: str, measured: Sequence[WorkloadReport],
                floors: tuple[Edit, ...], planner: Planner) -> CommitmentReport:
    planned = _lines(base, target)
    resized = planned
    if floors:
        try:
            resized = _lines(planner(written.apply(floors)), target)
        except SpecError:
            resized = ()
    floor_of = {r.name: (r.replicas.floor if r.replicas is not None and r.kind == "inference"
                         and r.replicas.floor < r.planned_min else r.planned_min)
                for r in measured if r.kind == "inference"}
    return CommitmentReport(tuple(sorted(floor_of.items())), planned, resized)


def _lines(plan: Plan, target: str) -> tuple[CommitmentRecommendation, ...]:
    return plan.target(target).cost.commitment_recommendations
