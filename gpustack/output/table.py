"""The plan as a table for people: what runs where, what it costs, and why."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.plan.model import Plan, Pool, TargetPlan

def usd(value: float) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.0f}"


def nodes(pool: Pool) -> str:
    return str(pool.max_nodes) if pool.min_nodes == pool.max_nodes else f"{pool.min_nodes}-{pool.max_nodes}"


def sharing(pool: Pool) -> str:
    s = pool.sharing
    if s.mode in ("time-slicing", "mps"):
        return f"{s.mode} x{s.replicas}"
    if s.mode == "mig":
        return "mig " + " ".join(f"{g.gpus}x[" + "+".join(f"{c}x{n}" for n, c in g.layout) + "]" for g in s.mig)
    return "whole GPUs"


def schedule(pool: Pool) -> str:
    if pool.role == "fallback":
        return "when spot is short"
    if pool.schedule is None:
        return "always" if pool.hours_per_month >= 730 else f"{pool.hours_per_month:.0f} h/month"
    w = pool.schedule
    return f"{w.days} {w.hours} {w.timezone}"


def render_table(plan: Plan) -> str:
    return "\n".join(render_target(t) for t in plan.targets)


def render_target(target: TargetPlan) -> str:
    cloud = CLOUDS.get(target.cloud)
    lines = [f"{target.name}: {cloud.display_name} {target.region}, cluster {target.cluster} "
             f"(prices as of {target.prices_as_of})"]
    header = ("POOL", "KIND", "CAPACITY", "INSTANCE", "NODES", "GPUS", "SHARING", "RUNS", "$/MONTH")
    rows = [header]
    for pool in target.pools:
        rows.append((pool.cloud_name, pool.kind, pool.capacity + (" (fallback)" if pool.role == "fallback" else ""),
                     pool.instance_type, nodes(pool), f"{pool.gpus.provisioned}", sharing(pool), schedule(pool),
                     usd(pool.monthly_cost_usd)))
    if len(rows) == 1:
        lines.append("  no pools")
    else:
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for row in rows:
            cells = [c.rjust(widths[i]) if i in (4, 5, 8) else c.ljust(widths[i]) for i, c in enumerate(row)]
            lines.append("  " + "  ".join(cells).rstrip())
    g = target.gpus
    lines.append(f"  GPUs: {g.baseline} one per replica -> {g.required} required at peak (lower bound "
                 f"{g.lower_bound}), {g.provisioned} provisioned")
    c = target.cost
    lines.append(f"  Cost: {usd(c.baseline_monthly_usd)}/month one on-demand GPU per replica -> "
                 f"{usd(c.planned_monthly_usd)}/month planned ({c.savings_pct:.1f}% saved)")
    for step in c.breakdown:
        lines.append(f"    {step.step:<12} {usd(-step.monthly_usd) if step.monthly_usd else '$0':>12}")
    units = [w for w in target.workloads if w.usd_per_run is not None or w.usd_per_1k_requests is not None]
    if units:
        lines.append("  Unit costs:")
        for w in units:
            bits = []
            if w.usd_per_run is not None:
                bits.append(f"${w.usd_per_run:,.2f} per run")
            if w.usd_per_1k_requests is not None:
                bits.append(f"${w.usd_per_1k_requests:,.4f} per 1,000 requests")
            lines.append(f"    {w.workload}: {', '.join(bits)}")
    if target.pools:
        lines.append("  Why:")
        for pool in target.pools:
            lines.append(f"    {pool.cloud_name}: {pool.reason}")
            for note in pool.notes:
                lines.append(f"      note: {note}")
    for note in target.notes:
        lines.append(f"  Note: {note}")
    lines.append("")
    return "\n".join(lines)
