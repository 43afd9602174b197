"""The cost figures in words, the same in the terminal table and the Markdown report."""

from __future__ import annotations

from gpustack.plan.model import CommitmentRecommendation, TargetPlan

BASELINE = "one whole on-demand GPU per replica, always on"
BASELINE_AT_USED_HOURS = "whole on-demand GPUs for the hours the work runs"


def usd(value: float) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.0f}"


def pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def used_hours_saving(t: TargetPlan) -> str:
    c = t.cost
    saved = pct(c.baseline_at_used_hours_monthly_usd - c.planned_monthly_usd, c.baseline_at_used_hours_monthly_usd)
    return f"{saved} saved against {usd(c.baseline_at_used_hours_monthly_usd)}/month for {BASELINE_AT_USED_HOURS}"


def range_words(t: TargetPlan) -> str:
    r = t.cost.range
    return f"{usd(r.low)} to {usd(r.high)}/month"


def commitment_status(t: TargetPlan) -> str:
    c = t.cost.commitment
    if c is None:
        return "none declared: reserved floors at the on-demand rate (what a capacity reservation bills)"
    terms = " ".join(x for x in (c.instrument, c.term) if x)
    rate = f"{c.discount * 100:g}% off on-demand" if c.discount is not None else "declared prices per instance type"
    return f"declared commitment {terms}{f' ({c.scope})' if c.scope else ''}: reserved floors at {rate}"


def discount_status(t: TargetPlan) -> str | None:
    """The enterprise discount's line (None when the spec declares none)."""
    d = t.cost.discount
    if d is None:
        return None
    return (f"{d.fraction * 100:g}% off every price (pricing.discount), before commitments: "
            f"{usd(-d.monthly_usd)}/month off {usd(d.list_planned_monthly_usd)}/month at list prices "
            f"(baseline at list prices {usd(d.list_baseline_monthly_usd)}/month); the figures above are net of it")


def recommendation(r: CommitmentRecommendation) -> str:
    what = f"{r.instrument} {r.term} for {r.quantity} x {r.instance_type} ({r.gpus} GPUs)"
    if r.monthly_saving_usd is None:
        return f"{what}: rate negotiated with the provider, no saving estimated"
    status = "declared, counted in the plan" if r.declared else "not declared, not counted"
    return (f"{what}: saves {usd(r.monthly_saving_usd)}/month at {r.discount * 100:g}% off "  # type: ignore[operator]
            f"(break-even at {r.break_even_utilisation * 100:.0f}% utilisation; {status})")  # type: ignore[operator]
