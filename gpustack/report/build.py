"""The report of one target: observe what ran, then price the recommendations with the planner."""

from __future__ import annotations

from gpustack.plan import Plan
from gpustack.report.client import Source
from gpustack.report.model import Report
from gpustack.report.observe import observe
from gpustack.report.recommend import Planner, Priced, price
from gpustack.report.window import Window
from gpustack.spec import Spec


def build_report(spec: Spec, text: str, plan: Plan, target: str, source: Source, window: Window,
                 floor_quantile: float, planner: Planner) -> tuple[Report, Priced]:
    planned = plan.target(target)
    observed = observe(spec, planned, source, window, floor_quantile)
    priced = price(spec, text, plan, target, observed.workloads, planner, floor_quantile)
    report = Report(
        target=target, start=Window.iso(window.start), end=Window.iso(window.end), step_seconds=window.step,
        floor_quantile=floor_quantile, workloads=observed.workloads, pools=observed.pools,
        recommendations=priced.recommendations, findings=observed.findings, commitment=priced.commitment,
        planned_monthly_usd=planned.cost.planned_monthly_usd, recommended_monthly_usd=priced.recommended_monthly_usd)
    return report, priced
