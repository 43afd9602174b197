"""The plan and a plan diff as one self-contained HTML page (`--format html`): charts as inline SVG with the
exact figures in tables beside them, to the cent as the JSON rounds them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from gpustack.clouds import CLOUDS
from gpustack.diff.model import PlanDiff, PoolChange, TargetDiff
from gpustack.diff.report import SECTIONS
from gpustack.output import svg
from gpustack.output.costwords import BASELINE, commitment_status, discount_status, range_words, recommendation
from gpustack.output.htmlpage import cents, el, page, signed_cents, table
from gpustack.output.markdown import STEP_LABELS
from gpustack.output.table import nodes, schedule, sharing
from gpustack.plan.model import Plan, Pool, ScheduleWindow, TargetPlan

MINUTES_PER_WEEK = 7 * 24 * 60
MIG_SLICES = 7  # compute slices of a MIG-capable GPU (A100, H100, H200, B200)


def render_plan_html(plan: Plan) -> str:
    planned = sum(t.cost.planned_monthly_usd for t in plan.targets)
    baseline = sum(t.cost.baseline_monthly_usd for t in plan.targets)
    summary = table(("target", "cloud", "region", "pools", "GPUs provisioned", "baseline $/month",
                     "planned $/month", "saved"),
                    [(t.name, CLOUDS.get(t.cloud).display_name, t.region, str(len(t.pools)), str(t.gpus.provisioned),
                      cents(t.cost.baseline_monthly_usd), cents(t.cost.planned_monthly_usd),
                      f"{t.cost.savings_pct:.1f}%") for t in plan.targets],
                    "lllnnnnn", "Targets")
    intro = el("p", {}, f"{len(plan.targets)} target{'s' if len(plan.targets) != 1 else ''}: "
               f"{cents(planned)}/month planned against {cents(baseline)}/month for {BASELINE}.")
    return page(f"gpustack plan: {plan.name}", intro, summary, *(_target(t) for t in plan.targets))


def _target(t: TargetPlan) -> ET.Element:
    c = t.cost
    cloud = CLOUDS.get(t.cloud).display_name
    section = el("section", {"id": f"target-{t.name}"},
                 el("h2", {}, f"{t.name}: {cloud} {t.region}, cluster {t.cluster}"),
                 el("p", {}, el("strong", {}, f"{cents(c.planned_monthly_usd)}/month planned"),
                    f" (range {range_words(t)}), against {cents(c.baseline_monthly_usd)}/month for {BASELINE}: "
                    f"{c.savings_pct:.1f}% saved. Prices as of {t.prices_as_of}; a month is 730 hours."))
    steps = [(s.step, round(s.monthly_usd, 2)) for s in c.breakdown]
    chart = svg.waterfall(f"{t.name}: monthly cost from the baseline through each lever to the plan",
                          ("baseline", c.baseline_monthly_usd), steps, ("planned", c.planned_monthly_usd),
                          c.range.low, c.range.high)
    level = c.baseline_monthly_usd
    rows = [("baseline: " + BASELINE, "", cents(level))]
    for s in c.breakdown:
        level -= s.monthly_usd
        rows.append((STEP_LABELS.get(s.step, s.step), signed_cents(-s.monthly_usd), cents(level)))
    rows.append(("planned", signed_cents(c.planned_monthly_usd - c.baseline_monthly_usd),
                 cents(c.planned_monthly_usd)))
    rows.append(("range", "", f"{cents(c.range.low)} to {cents(c.range.high)}"))
    section.append(el("h3", {}, "Cost by lever"))
    section.append(el("div", {"class": "row"}, chart, table(("step", "change", "$/month after"), rows, "lnn")))
    section.extend(_pools(t))
    section.extend(_labels(t))
    section.extend(_packing(t))
    section.extend(_schedules(t))
    discount = discount_status(t)
    if discount is not None:
        section.append(el("h3", {}, "Enterprise discount"))
        section.append(el("p", {}, discount))
    section.append(el("h3", {}, "Commitments"))
    section.append(el("p", {}, commitment_status(t)))
    if c.commitment_recommendations:
        section.append(el("ul", {}, *(el("li", {}, recommendation(r)) for r in c.commitment_recommendations)))
    if t.warnings:
        section.append(el("h3", {}, "Warnings"))
        section.append(el("ul", {"class": "warn"}, *(el("li", {}, w.message) for w in t.warnings)))
    return section


def _pools(t: TargetPlan) -> list[ET.Element]:
    if not t.pools:
        return [el("p", {}, "No pools.")]
    chart = svg.bars(f"{t.name}: monthly cost per pool", [(p.name, p.monthly_cost_usd) for p in t.pools])
    rows = [(p.name, p.kind, p.capacity + (" (fallback)" if p.role == "fallback" else ""), p.instance_type,
             nodes(p), str(p.gpus.provisioned), sharing(p), schedule(p), cents(p.monthly_cost_usd)) for p in t.pools]
    why = el("ul", {}, *(el("li", {}, el("code", {}, p.name), f": {p.reason}. Price: {p.price.source}, "
                                 f"${p.price.usd_per_node_hour:,.4f} per node-hour.", *(f" {n}" for n in p.notes))
                         for p in t.pools))
    return [el("h3", {}, "Cost per pool"), chart,
            table(("pool", "kind", "capacity", "instance", "nodes", "GPUs", "sharing", "runs", "$/month"),
                  rows, "llllnnlln"), el("h3", {}, "Why these pools"), why]


def _labels(t: TargetPlan) -> list[ET.Element]:
    """The workloads' monthly cost summed per value of each attribution label (team first)."""
    labels = {r.workload: dict(r.labels) for r in t.pod_requests}
    keys = sorted({k for ls in labels.values() for k in ls if not k.startswith("gpustack.dev/")},
                  key=lambda k: (k != "team", k))
    out: list[ET.Element] = []
    if keys:
        out.append(el("h3", {}, "Cost per label"))
    for key in keys:
        totals: dict[str, float] = defaultdict(float)
        for w in t.workloads:
            totals[labels.get(w.workload, {}).get(key, "(none)")] += w.monthly_usd
        items = sorted(totals.items())
        out.append(el("div", {"class": "row"}, svg.bars(f"{t.name}: monthly cost per {key}", items),
                      table((key, "$/month"), [(v, cents(u)) for v, u in items], "ln")))
    return out


def _packing(t: TargetPlan) -> list[ET.Element]:
    """One node of each shared pool, its GPUs and the slices on each."""
    out: list[ET.Element] = []
    for p in t.pools:
        gpus = _slices(p)
        if gpus is None:
            continue
        slots = MIG_SLICES if p.sharing.mode == "mig" else (p.sharing.replicas or 1)
        slots = max([slots, *(sum(size for _, size in g) for g in gpus)])
        if not out:
            out.append(el("h3", {}, "Node packing"))
        out.append(el("figure", {}, svg.node(f"{p.name}: one {p.instance_type} node, {sharing(p)}", gpus, slots),
                      el("figcaption", {}, f"{p.name}: one {p.instance_type} node with {p.gpus_per_node} "
                                           f"{p.gpu} GPU{'s' if p.gpus_per_node != 1 else ''}, {sharing(p)}")))
    return out


def _slices(p: Pool) -> list[list[tuple[str, int]]] | None:
    s = p.sharing
    if s.mode == "mig":
        gpus = []
        for group in s.mig:
            layout = [(profile, _mig_slices(profile)) for profile, count in group.layout for _ in range(count)]
            gpus.extend([layout] * group.gpus)
        whole = [("whole GPU", MIG_SLICES)]  # GPUs of the node the layouts leave unpartitioned
        return gpus + [whole] * max(p.gpus_per_node - len(gpus), 0)
    if s.by_clients and s.replicas:
        return [[(f"1/{s.replicas}", 1)] * s.replicas for _ in range(p.gpus_per_node)]
    return None


def _mig_slices(profile: str) -> int:
    head = profile.split("g.", 1)[0].split("+")[-1]
    return int(head) if head.isdigit() else 1


def week_hours(w: ScheduleWindow) -> list[list[bool]]:
    """Per weekday (Monday first), per hour: whether the window covers any of that hour."""
    span = (w.end_minute - w.start_minute) % 1440 or 1440
    covered = [False] * (7 * 24)
    for day in w.weekdays:
        start = day * 1440 + w.start_minute
        for minute in range(start, start + span, 60):
            covered[(minute % MINUTES_PER_WEEK) // 60] = True
        covered[((start + span - 1) % MINUTES_PER_WEEK) // 60] = True
    return [covered[d * 24:(d + 1) * 24] for d in range(7)]


def _schedules(t: TargetPlan) -> list[ET.Element]:
    pools = [p for p in t.pools if p.schedule is not None]
    if not pools:
        return []
    out = [el("h3", {}, "Schedules: the week of each scheduled pool")]
    for p in pools:
        w = p.schedule
        assert w is not None
        out.append(el("figure", {}, svg.week_strip(f"{p.name}: runs {w.days} {w.hours} {w.timezone}", week_hours(w)),
                      el("figcaption", {}, f"{p.name}: {w.days} {w.hours} ({w.timezone}), "
                                           f"{w.active_hours_per_week:g} hours a week; scaled to zero outside")))
    return out


def render_diff_html(diff: PlanDiff) -> str:
    summary = table(("target", "cloud", "status", "$/month before", "$/month after", "change", "GPUs before",
                     "GPUs after", "pools replaced"),
                    [(t.name, CLOUDS.get(t.cloud).display_name, t.status, cents(t.old_monthly_usd),
                      cents(t.new_monthly_usd), signed_cents(t.delta_usd), _opt(t.old_gpus), _opt(t.new_gpus),
                      str(t.count("replaced"))) for t in diff.targets], "lllnnnnnn", "Targets")
    chart = svg.bars("Monthly cost change per target", [(t.name, t.delta_usd) for t in diff.targets], "per month",
                      signed_cents, changes=True)
    intro = el("p", {}, f"From {diff.old} to {diff.new}: ",
               el("strong", {}, f"{signed_cents(diff.delta_usd)}/month") if diff.changed
               else "no changes: both specs plan the same node pools at the same cost.")
    return page("gpustack diff", intro, el("div", {"class": "row"}, chart), summary,
                *(_target_diff(t) for t in diff.targets if t.status != "unchanged"))


def _target_diff(t: TargetDiff) -> ET.Element:
    cloud = CLOUDS.get(t.cloud).display_name
    section = el("section", {"id": f"target-{t.name}"},
                 el("h2", {}, f"{t.name} ({cloud}): {signed_cents(t.delta_usd)}/month ({t.status})"),
                 el("p", {}, f"{cents(t.old_monthly_usd)}/month before, {cents(t.new_monthly_usd)}/month after."))
    changed = [p for p in t.pools if p.old_monthly_usd != p.new_monthly_usd]
    if changed:
        section.append(svg.bars(f"{t.name}: monthly cost change per pool",
                                [(p.name, (p.new_monthly_usd or 0.0) - (p.old_monthly_usd or 0.0)) for p in changed],
                                "per month", signed_cents, changes=True))
    for kind, title in SECTIONS.items():
        pools = [p for p in t.pools if p.change == kind]
        if pools:
            section.append(el("h3", {}, title))
            section.append(table(("pool", "becomes", "kind", "what changes", "why", "$/month before",
                                  "$/month after", "change"), [_pool_change(p) for p in pools], "lllllnnn"))
    if t.new_warnings:
        section.append(el("ul", {"class": "warn"}, *(el("li", {}, w) for w in t.new_warnings)))
    return section


def _pool_change(p: PoolChange) -> tuple[ET.Element | str, ...]:
    fields = el("ul", {}, *(el("li", {}, el("code", {}, f.field), f": {f.old or 'none'} → {f.new or 'none'}")
                            for f in p.fields)) if p.fields else "price or hours"
    becomes = (p.new_name or "") + (", " + ", ".join(m for m in p.moves_to if m != p.new_name)
                                    if any(m != p.new_name for m in p.moves_to) else "")
    return (p.name, becomes, p.kind, fields, p.why, cents(p.old_monthly_usd), cents(p.new_monthly_usd),
            signed_cents((p.new_monthly_usd or 0.0) - (p.old_monthly_usd or 0.0)))


def _opt(value: int | None) -> str:
    return "–" if value is None else str(value)
