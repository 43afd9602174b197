"""The report's figures in words, the same for every format (table, Markdown; HTML later)."""

from __future__ import annotations

from typing import Any

from gpustack.plan.model import CommitmentRecommendation
from gpustack.report.model import Finding, Recommendation, Report, WorkloadReport

UNKNOWN = "n/a"  # a figure without samples: never 0 (the findings say which series is missing)


def number(value: float | None, digits: int = 1) -> str:
    return UNKNOWN if value is None else f"{value:,.{digits}f}"


def outside(w: WorkloadReport) -> str:
    """Outside-window GPU-hours: '-' for a workload without a schedule (nothing to be outside of)."""
    if w.outside_window_gpu_hours is None and w.replicas is not None:
        return "-"
    return number(w.outside_window_gpu_hours)


def dollars(value: float | None) -> str:
    if value is None:
        return UNKNOWN
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def value(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def recommendation(r: Recommendation) -> str:
    return (f"{r.workload}: {r.field} {value(r.from_value)} -> {value(r.to_value)}, saves "
            f"{dollars(r.monthly_saving_usd)}/month ({r.reason})")


def finding(f: Finding) -> str:
    subject = f.workload if f.workload is not None else f"pool {f.pool}"
    return f"{f.kind}: {subject}: {f.message}"


def commitment(c: CommitmentRecommendation) -> str:
    saving = "a negotiated rate" if c.monthly_saving_usd is None else f"saves {dollars(c.monthly_saving_usd)}/month"
    even = "" if c.break_even_utilisation is None else f", pays off above {c.break_even_utilisation:.0%} use"
    return f"{c.instrument} {c.term}: {c.quantity} x {c.instance_type} ({c.gpus} GPUs), {saving}{even} [{c.source}]"


def window(report: Report) -> str:
    return f"{report.start} to {report.end}, step {report.step_seconds}s"


def totals(report: Report) -> str:
    after = report.recommended_monthly_usd
    if after is None or not report.recommendations:
        return f"planned {dollars(report.planned_monthly_usd)}/month; no recommendation changes it"
    return (f"planned {dollars(report.planned_monthly_usd)}/month; with every recommendation "
            f"{dollars(after)}/month ({dollars(report.planned_monthly_usd - after)}/month less, as the planner prices "
            "the changed spec)")
