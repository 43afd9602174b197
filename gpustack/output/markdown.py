"""The plan as Markdown, ready to post as a pull-request comment."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.output.table import nodes, schedule, sharing, usd
from gpustack.plan.model import Plan, TargetPlan


def render_markdown(plan: Plan) -> str:
    parts = [f"## gpustack plan: {plan.name}\n"]
    parts.extend(_target(t) for t in plan.targets)
    return "\n".join(parts)


def _target(t: TargetPlan) -> str:
    cloud = CLOUDS.get(t.cloud)
    lines = [f"### {t.name} ({cloud.display_name} {t.region})", "",
             "| pool | kind | capacity | instance | nodes | GPUs | sharing | runs | $/month |",
             "|---|---|---|---|---:|---:|---|---|---:|"]
    for p in t.pools:
        lines.append(f"| `{p.cloud_name}` | {p.kind} | {p.capacity} | {p.instance_type} | {nodes(p)} | "
                     f"{p.gpus.provisioned} | {sharing(p)} | {schedule(p)} | {usd(p.monthly_cost_usd)} |")
    c = t.cost
    lines += ["", f"**{usd(c.baseline_monthly_usd)}/month → {usd(c.planned_monthly_usd)}/month** "
                  f"({c.savings_pct:.1f}% saved; prices as of {t.prices_as_of})", ""]
    for w in t.warnings:
        lines.append(f"> ⚠️ {w.message}")
    lines.append("")
    return "\n".join(lines)
