"""The report as Markdown (a pull-request comment or a wiki page): the same figures as the table."""

from __future__ import annotations

from gpustack.output.markdown import code, table, text
from gpustack.report import words
from gpustack.report.model import Report


def render_markdown(report: Report) -> str:
    parts = [f"## Report for {code(report.target)}", "", text(words.window(report)), "", "### Workloads", ""]
    rows = []
    for w in report.workloads:
        s = w.replicas
        rows.append([code(w.name), words.UNKNOWN if s is None else f"{s.min}/{s.p50}/{s.p95}/{s.max}",
                     words.UNKNOWN if s is None else str(s.floor), f"{w.planned_min}-{w.planned_max}",
                     f"{w.gpus_per_replica:.3g}", words.number(w.gpu_hours), words.number(w.idle_gpu_hours),
                     words.outside(w), words.number(w.fb_used_p95_gib, 2)])
    parts.append(table(["workload", "ran min/p50/p95/max", "floor", "planned", "GPUs per replica", "GPU-hours",
                        "idle GPU-hours", "outside-window GPU-hours", "memory p95 GiB"], "lrrrrrrrr", rows))
    parts += ["", "### Pools", ""]
    parts.append(table(["pool", "capacity", "nodes", "$/node-hour", "node-hours", "cost", "planned",
                        "reserved node-hours used"], "llrrrrrr",
                       [[code(p.name), p.capacity, f"{p.min_nodes}-{p.max_nodes}", f"{p.usd_per_node_hour:,.3f}",
                         words.number(p.node_hours), words.dollars(p.cost_usd), words.dollars(p.planned_cost_usd),
                         words.number(p.reserved_node_hours_used)] for p in report.pools]))
    parts += ["", "### Recommendations", "", "Each saving is the planner's: the spec with that one change, planned.", ""]
    parts += [f"- {text(words.recommendation(r))}" for r in report.recommendations] or ["- none"]
    parts += ["", text(words.totals(report)), "", "### Commitment on the measured floors", ""]
    parts += [f"- {text(words.commitment(c))}" for c in report.commitment.measured] or ["- no commitment to buy"]
    parts += ["", "### Findings", ""]
    parts += [f"- {text(words.finding(f))}" for f in report.findings] or ["- none"]
    return "\n".join(parts) + "\n"
