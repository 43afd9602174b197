"""The report as a table for a terminal: at most 120 columns (long names get a line of their own)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from gpustack.output.table import WIDTH
from gpustack.report import words
from gpustack.report.model import Report

NAME_COLUMN = 34


def render_table(report: Report) -> str:
    lines = [f"Report for target {report.target}: {words.window(report)}", "", "Workloads (GPU-hours in the window)"]
    header: tuple[str, ...] = ("workload", "ran min/p50/p95/max", "floor", "planned", "GPU/rep", "GPU-h", "idle GPU-h",
              "outside GPU-h", "mem p95 GiB")
    rows: list[tuple[str, ...]] = []
    for w in report.workloads:
        s = w.replicas
        ran = words.UNKNOWN if s is None else f"{s.min}/{s.p50}/{s.p95}/{s.max}"
        rows.append((w.name, ran, words.UNKNOWN if s is None else str(s.floor), f"{w.planned_min}-{w.planned_max}",
                     f"{w.gpus_per_replica:.3g}", words.number(w.gpu_hours), words.number(w.idle_gpu_hours),
                     words.outside(w),
                     words.number(w.fb_used_p95_gib, 2)))
    lines += _columns(header, rows)
    lines += ["", "Pools (node-hours and cost in the window)"]
    header = ("pool", "capacity", "nodes", "$/node-h", "node-h", "cost", "planned", "reserved used")
    rows = [(p.name, p.capacity, f"{p.min_nodes}-{p.max_nodes}", f"{p.usd_per_node_hour:,.3f}",
             words.number(p.node_hours), words.dollars(p.cost_usd), words.dollars(p.planned_cost_usd),
             "-" if p.reserved_node_hours_used is None and p.capacity != "reserved"
             else words.number(p.reserved_node_hours_used)) for p in report.pools]
    lines += _columns(header, rows)
    lines += ["", "Recommendations (each priced by the planner: the spec with that change, planned)"]
    lines += [_wrap(words.recommendation(r)) for r in report.recommendations] or ["  none"]
    lines.append(_wrap(words.totals(report)))
    lines += ["", "Commitment on the measured floors"]
    floors = ", ".join(f"{name} {floor}" for name, floor in report.commitment.floors)
    lines.append(_wrap(f"floors: {floors or 'no inference floor'}"))
    lines += [_wrap(words.commitment(c)) for c in report.commitment.measured] or ["  no commitment to buy"]
    lines += ["", "Findings"]
    lines += [_wrap(words.finding(f)) for f in report.findings] or ["  none"]
    return "\n".join(lines) + "\n"


def _columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Aligned rows, numbers right-aligned; a name longer than the column is printed on a line of its own."""
    cells = [header] + [("", *r[1:]) if len(r[0]) > NAME_COLUMN else r for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    widths[0] = min(max(widths[0], 8), NAME_COLUMN)

    def line(row: tuple[str, ...]) -> str:
        return ("  " + "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                                 for i, c in enumerate(row))).rstrip()

    out = [line(header)]
    for row in rows:
        if len(row[0]) > NAME_COLUMN:
            out.append(f"  {row[0]}")
            row = ("", *row[1:])
        out.append(line(row))
    return out


def _wrap(text: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent="  ", subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False)
