"""The report (`gpustack report --format html`) as one self-contained page: planned against measured per pool
and workload, idle GPU-hours, the recommendations and findings, with the words and figures of the table."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpustack.output import svg
from gpustack.output.htmlpage import cents, el, page, table
from gpustack.report import words
from gpustack.report.model import Report


def render_report_html(report: Report) -> str:
    known = [p for p in report.pools if p.cost_usd is not None]
    pools: list[tuple[str, float]] = []
    for p in known:
        pools += [(f"{p.name} planned", p.planned_cost_usd), (f"{p.name} measured", p.cost_usd or 0.0)]
    idle = [(w.name, w.idle_gpu_hours) for w in report.workloads if w.idle_gpu_hours is not None]
    body: list[ET.Element | str | None] = [
        el("p", {}, words.window(report)),
        el("h2", {}, "Pools: planned against measured"),
        svg.bars(f"{report.target}: cost in the window per pool, planned and measured", pools, "in the window")
        if pools else None,
        table(("pool", "capacity", "nodes", "$/node-hour", "node-hours", "cost", "planned",
               "reserved node-hours used"),
              [(p.name, p.capacity, f"{p.min_nodes}-{p.max_nodes}", f"{p.usd_per_node_hour:,.3f}",
                words.number(p.node_hours), cents(p.cost_usd), cents(p.planned_cost_usd),
                words.number(p.reserved_node_hours_used)) for p in report.pools], "llnnnnnn"),
        el("h2", {}, "Workloads: planned against measured"),
        svg.bars(f"{report.target}: idle GPU-hours per workload", idle, "GPU-hours idle",
                 lambda v: words.number(v)) if idle else None,
        table(("workload", "ran min/p50/p95/max", "floor", "planned", "GPUs per replica", "GPU-hours",
               "idle GPU-hours", "outside-window GPU-hours", "memory p95 GiB"),
              [(w.name, words.UNKNOWN if w.replicas is None else
                f"{w.replicas.min}/{w.replicas.p50}/{w.replicas.p95}/{w.replicas.max}",
                words.UNKNOWN if w.replicas is None else str(w.replicas.floor), f"{w.planned_min}-{w.planned_max}",
                f"{w.gpus_per_replica:.3g}", words.number(w.gpu_hours), words.number(w.idle_gpu_hours),
                words.outside(w), words.number(w.fb_used_p95_gib, 2)) for w in report.workloads], "lnnnnnnnn"),
        el("h2", {}, "Recommendations"),
        el("p", {}, "Each saving is the planner's: the spec with that one change, planned."),
        table(("workload", "field", "from", "to", "saves $/month", "why"),
              [(r.workload, r.field, words.value(r.from_value), words.value(r.to_value), cents(r.monthly_saving_usd),
                r.reason) for r in report.recommendations], "llllnl") if report.recommendations
        else el("p", {}, "None."),
        el("p", {}, words.totals(report)),
        el("h2", {}, "Commitment on the measured floors"),
        el("ul", {}, *(el("li", {}, words.commitment(c)) for c in report.commitment.measured))
        if report.commitment.measured else el("p", {}, "No commitment to buy."),
        el("h2", {}, "Findings"),
        el("ul", {}, *(el("li", {}, words.finding(f)) for f in report.findings)) if report.findings
        else el("p", {}, "None."),
    ]
    return page(f"gpustack report: {report.target}", *body)
