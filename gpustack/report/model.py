"""The report: immutable values and their JSON (README "The report as JSON").

Unknown is never zero: a figure without samples is None (null in JSON) and comes with a finding.
Rounding: hours to 4 decimals, USD to 2, GiB to 3.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpustack.plan.model import CommitmentRecommendation
from gpustack.report.measure import ReplicaStats


@dataclasses.dataclass(frozen=True)
class WorkloadReport:
    name: str
    namespace: str
    kind: str
    replicas: ReplicaStats | None
    planned_min: int
    planned_max: int
    gpus_per_replica: float
    gpu_hours: float | None
    idle_gpu_hours: float | None
    outside_window_gpu_hours: float | None
    fb_used_p95_gib: float | None


@dataclasses.dataclass(frozen=True)
class PoolReport:
    name: str
    capacity: str
    min_nodes: int
    max_nodes: int
    usd_per_node_hour: float
    node_hours: float | None
    cost_usd: float | None
    planned_cost_usd: float
    reserved_node_hours_used: float | None


@dataclasses.dataclass(frozen=True)
class Recommendation:
    workload: str
    field: str  # replicas.min | mig | gpu_fraction | gpu_memory | schedule | idle
    from_value: Any
    to_value: Any
    monthly_saving_usd: float  # the planner's: planned cost of the spec minus that of the spec with this change
    reason: str


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: str
    message: str
    workload: str | None = None
    pool: str | None = None


@dataclasses.dataclass(frozen=True)
class CommitmentReport:
    floors: tuple[tuple[str, int], ...]  # workload -> the replicas.min planned for it (measured where known)
    planned: tuple[CommitmentRecommendation, ...]  # the plan's, for the spec as written
    measured: tuple[CommitmentRecommendation, ...]  # the plan's, for the spec re-planned on the measured floors


@dataclasses.dataclass(frozen=True)
class Report:
    target: str
    start: str
    end: str
    step_seconds: int
    floor_quantile: float
    workloads: tuple[WorkloadReport, ...]
    pools: tuple[PoolReport, ...]
    recommendations: tuple[Recommendation, ...]
    findings: tuple[Finding, ...]
    commitment: CommitmentReport
    planned_monthly_usd: float
    recommended_monthly_usd: float | None  # the plan of the spec with every recommendation applied

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "window": {"start": self.start, "end": self.end, "step_seconds": self.step_seconds},
            "floor_quantile": self.floor_quantile,
            "workloads": [_workload(w) for w in self.workloads],
            "pools": [_pool(p) for p in self.pools],
            "recommendations": [{"workload": r.workload, "field": r.field, "from": r.from_value, "to": r.to_value,
                                 "monthly_saving_usd": usd(r.monthly_saving_usd), "reason": r.reason}
                                for r in self.recommendations],
            "findings": [_finding(f) for f in self.findings],
            "commitment": {"floors": dict(self.commitment.floors),
                           "planned": [_commitment(c) for c in self.commitment.planned],
                           "measured": [_commitment(c) for c in self.commitment.measured]},
            "planned_monthly_usd": usd(self.planned_monthly_usd),
            "recommended_monthly_usd": usd(self.recommended_monthly_usd),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"


def hours(value: float | None) -> float | None:
    return None if value is None else round(value, 4) + 0.0


def usd(value: float | None) -> float | None:
    return None if value is None else round(value, 2) + 0.0


def gib(value: float | None) -> float | None:
    return None if value is None else round(value, 3) + 0.0


def _workload(w: WorkloadReport) -> dict[str, Any]:
    stats = w.replicas
    return {
        "name": w.name, "namespace": w.namespace, "kind": w.kind,
        "replicas": None if stats is None else {"min": stats.min, "p50": stats.p50, "p95": stats.p95,
                                                 "max": stats.max, "floor": stats.floor},
        "planned": {"min": w.planned_min, "max": w.planned_max},
        "gpus_per_replica": round(w.gpus_per_replica, 6),
        "gpu_hours": hours(w.gpu_hours), "idle_gpu_hours": hours(w.idle_gpu_hours),
        "outside_window_gpu_hours": hours(w.outside_window_gpu_hours), "fb_used_p95_gib": gib(w.fb_used_p95_gib),
    }


def _pool(p: PoolReport) -> dict[str, Any]:
    return {"name": p.name, "capacity": p.capacity, "min_nodes": p.min_nodes, "max_nodes": p.max_nodes,
            "usd_per_node_hour": p.usd_per_node_hour, "node_hours": hours(p.node_hours), "cost_usd": usd(p.cost_usd),
            "planned_cost_usd": usd(p.planned_cost_usd), "reserved_node_hours_used": hours(p.reserved_node_hours_used)}


def _finding(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": f.kind}
    if f.workload is not None:
        out["workload"] = f.workload
    if f.pool is not None:
        out["pool"] = f.pool
    out["message"] = f.message
    return out


def _commitment(c: CommitmentRecommendation) -> dict[str, Any]:
    return {"instrument": c.instrument, "term": c.term, "instance_type": c.instance_type, "quantity": c.quantity,
            "gpus": c.gpus, "monthly_saving_usd": usd(c.monthly_saving_usd),
            "break_even_utilisation": None if c.break_even_utilisation is None else round(c.break_even_utilisation, 4),
            "source": c.source}
