"""The plan as Markdown, ready to post as a pull-request comment.

Per target: the pools, the GPU counts, the monthly cost from the baseline to the plan with the
saving of each step as a Mermaid bar chart (`xychart-beta`, which GitHub renders in comments), the
unit costs, the warnings and the price date. Python prepares every cell; the template
(templates/markdown/plan.md.j2) only lays them out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from gpustack.clouds import CLOUDS
from gpustack.output.costwords import (
    BASELINE, BASELINE_AT_USED_HOURS, commitment_status, discount_status, range_words, recommendation,
)
from gpustack.output.jinja import GENERATED_BY, render
from gpustack.output.table import nodes, schedule, sharing, usd
from gpustack.plan.model import Plan, TargetPlan

STEP_LABELS = {
    "sharing": "sharing (packing and instance choice)",
    "spot": "spot",
    "commitments": "commitments (declared, on reserved floors)",
    "schedules": "schedules (off-hours, job and burst hours)",
}


def render_markdown(plan: Plan) -> str:
    baseline = sum(t.cost.baseline_monthly_usd for t in plan.targets)
    planned = sum(t.cost.planned_monthly_usd for t in plan.targets)
    count = len(plan.targets)
    low = sum(t.cost.range.low for t in plan.targets)
    high = sum(t.cost.range.high for t in plan.targets)
    summary = (f"{count} target{'s' if count != 1 else ''}: {usd(planned)}/month planned ({usd(low)} to "
               f"{usd(high)}), against {usd(baseline)}/month for {BASELINE} "
               f"({_pct(baseline - planned, baseline)} saved)")
    return render("markdown/plan.md.j2", name=plan.name, summary=summary,
                  targets=[_target(t) for t in plan.targets], generated_by=GENERATED_BY)


def _target(t: TargetPlan) -> dict[str, object]:
    cloud = CLOUDS.get(t.cloud)
    c = t.cost
    return {
        "heading": f"{t.name}: {cloud.display_name} {t.region}, cluster {code(t.cluster)}",
        "headline": (f"**{usd(c.planned_monthly_usd)}/month** planned (range {range_words(t)}), against "
                     f"{usd(c.baseline_monthly_usd)}/month for {BASELINE}: **{c.savings_pct:.1f}% saved**; "
                     f"against {usd(c.baseline_at_used_hours_monthly_usd)}/month for {BASELINE_AT_USED_HOURS}: "
                     f"{_pct(c.baseline_at_used_hours_monthly_usd - c.planned_monthly_usd, c.baseline_at_used_hours_monthly_usd)}"
                     " saved"),
        "range": [inline(a) for a in c.range.assumptions],
        "commitments": commitment_status(t),
        "discount": discount_status(t),
        "recommendations": [inline(recommendation(r)) + (f" {inline(r.how)}" if r.how else "")
                            for r in c.commitment_recommendations],
        "pools": _pools_table(t, cloud.display_name),
        "gpus": table(("one GPU per replica", "lower bound", "required at peak", "provisioned"), "rrrr",
                       [(str(t.gpus.baseline), str(t.gpus.lower_bound), str(t.gpus.required),
                         str(t.gpus.provisioned))]),
        "chart": mermaid_steps(t),
        "steps": _steps_table(t),
        "units": _units_table(t),
        "warnings": [inline(w.message) for w in t.warnings],
        "notes": [inline(n) for n in t.notes],
        "reasons": [" ".join([f"{code(p.name)}: {inline(p.reason)}.", *(inline(n) for n in p.notes)])
                    for p in t.pools],
        "prices": (f"{'List prices' if c.discount is None else 'Prices, list less the enterprise discount,'} "
                   f"in USD as of {t.prices_as_of}; spot prices are point-in-time figures (each pool's "
                   "price source says which); a month is 730 hours."),
    }


def _pools_table(t: TargetPlan, cloud: str) -> str:
    renamed = any(p.cloud_name != p.name for p in t.pools)
    header = ["pool", *([f"{cloud} name"] if renamed else []), "kind", "capacity", "instance", "nodes", "GPUs",
              "sharing", "runs", "$/month"]
    rows = []
    for p in t.pools:
        capacity = p.capacity + (" (fallback)" if p.role == "fallback" else "")
        rows.append((code(p.name), *([code(p.cloud_name)] if renamed else []), p.kind, capacity,
                     code(p.instance_type), nodes(p), str(p.gpus.provisioned), sharing(p), schedule(p),
                     usd(p.monthly_cost_usd)))
    align = "l" * (len(header) - 5) + "rrllr"
    return table(header, align, rows) if rows else "No pools."


def _steps_table(t: TargetPlan) -> str:
    c = t.cost
    level = c.baseline_monthly_usd
    rows = [(f"baseline: {BASELINE}", "", "", usd(level))]
    for step in c.breakdown:
        level -= step.monthly_usd
        rows.append((STEP_LABELS.get(step.step, step.step), signed_usd(-step.monthly_usd),
                     _pct(step.monthly_usd, c.baseline_monthly_usd), usd(level)))
    saved = c.baseline_monthly_usd - c.planned_monthly_usd
    rows.append(("**planned**", f"**{signed_usd(-saved)}**", f"**{_pct(saved, c.baseline_monthly_usd)}**",
                 f"**{usd(c.planned_monthly_usd)}**"))
    return table(("step", "change", "of baseline", "$/month after"), "lrrr", rows)


def _units_table(t: TargetPlan) -> str:
    rows = []
    for w in t.workloads:
        rows.append((code(w.workload), w.kind, usd(w.monthly_usd), usd(w.baseline_monthly_usd),
                     f"${w.usd_per_run:,.2f}" if w.usd_per_run is not None else "–",
                     f"${w.usd_per_1k_requests:,.4f}" if w.usd_per_1k_requests is not None else "–"))
    header = ("workload", "kind", "$/month", "$/month one GPU per replica", "per run", "per 1,000 requests")
    return table(header, "llrrrr", rows) if rows else ""


def mermaid_steps(t: TargetPlan) -> str:
    """An xychart-beta bar chart: the monthly cost at the baseline and after each saving step."""
    c = t.cost
    labels = ["baseline"] + [f"after {s.step}" for s in c.breakdown[:-1]] + ["planned"]
    levels = [c.baseline_monthly_usd]
    for step in c.breakdown:
        levels.append(levels[-1] - step.monthly_usd)
    levels[-1] = c.planned_monthly_usd  # the steps add up to it; take the exact figure
    values = [max(0, round(v)) for v in levels]
    top = nice_ceiling(max(values))
    return "\n".join([
        "xychart-beta",
        f'    title "{mermaid_label(t.name)}: USD per month, baseline to planned"',
        "    x-axis [" + ", ".join(f'"{label}"' for label in labels) + "]",
        f'    y-axis "USD per month" 0 --> {top}',
        "    bar [" + ", ".join(str(v) for v in values) + "]",
    ])


def nice_ceiling(value: float) -> int:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is at least `value` (an axis end people can read)."""
    if value <= 0:
        return 1
    magnitude = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * magnitude >= value:
            return int(factor * magnitude)
    return int(10 * magnitude)  # pragma: no cover - the loop always returns


def signed_usd(value: float) -> str:
    """'+$1,234', '-$1,234' or '$0' (whole dollars)."""
    rounded = round(value)
    if rounded == 0:
        return "$0"
    return ("+" if rounded > 0 else "-") + f"${abs(rounded):,}"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


CUT_NOTE = ("_The report is cut here to fit a pull-request comment ({shown:,} of {total:,} characters): "
            "the full report is the `gpustack-report` artifact of the workflow run._")


def fit(text: str, max_chars: int | None) -> str:
    """`text` cut at a line boundary to at most `max_chars` characters, open blocks closed, with a note
    saying where the rest is (GitHub refuses comments over 65,536 characters)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    note = CUT_NOTE.format(shown=max_chars, total=len(text))
    closers = "\n```\n\n</details>\n"  # the longest tail a cut may need
    room = max_chars - len(note) - len(closers) - 2
    if room <= 0:
        raise ValueError(f"--max-chars {max_chars} leaves no room for the report; give at least "
                         f"{len(note) + len(closers) + 100}")
    kept = text[:room]
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else ""
    tail = ""
    if sum(line.startswith("```") for line in kept.splitlines()) % 2:
        tail += "```\n"
    if kept.count("<details>") > kept.count("</details>"):
        tail += "\n</details>\n"
    return kept + tail + "\n" + note + "\n"


# Characters that never belong in a report: controls and invisible formatting (terminals, Markdown).
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
# Markdown punctuation that works as syntax inside a line (emphasis, code, links, strike-through;
# `(`, `!` and `#` only act next to these or at a line start, which inline text never is). `<`, `&`
# and `@` (HTML, entities, mentions) become entities.
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]~])")


def inline(text: str) -> str:
    """Text safe inside a Markdown table cell or list item: one line, no controls, `|` escaped."""
    return " ".join(_INVISIBLE.sub("", text).split()).replace("|", "\\|")


def text(value: str) -> str:
    """A spec-derived value as literal Markdown text: syntax escaped, no raw HTML, no @mentions."""
    escaped = _MARKDOWN_SYNTAX.sub(r"\\\1", inline(value).replace("\\|", "|"))
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")


def code(value: str) -> str:
    """A spec-derived value as an inline code span that no backtick inside it can close."""
    value = inline(value).replace("\\|", "|")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value[:1] == "`" or value[-1:] == "`" else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def mermaid_label(value: str) -> str:
    """Text for a quoted Mermaid string: quotes as the entity Mermaid reads, no controls."""
    return inline(value).replace("\\|", "|").replace('"', "#quot;")


def table(header: Sequence[str], align: str, rows: Sequence[Sequence[str]]) -> str:
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(inline(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
