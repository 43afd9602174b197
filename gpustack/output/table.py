"""The plan as a table for people: what runs where, what it costs, and why.

The default fits 120 columns: each pool takes two lines, its names first (the plan name, which is the
node label `gpustack.dev/pool` that pod affinity selects, and the name the cloud shows when that
differs), then kind, capacity, instance, nodes, GPUs, sharing and $/month. `wide` puts every pool on
one row with the full MIG layouts and when it runs (no width limit); `quiet` prints one line per
target. The JSON has everything.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from gpustack.clouds import CLOUDS
from gpustack.output.costwords import (
    BASELINE, commitment_status, discount_status, range_words, recommendation, usd, used_hours_saving,
)
from gpustack.plan.fallback import rung_word
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.plan.pools import is_solver_note

__all__ = ["nodes", "render_table", "schedule", "sharing", "usd"]

WIDTH = 120
_MAX_PROFILES_SHOWN = 3


def nodes(pool: Pool) -> str:
    return str(pool.max_nodes) if pool.min_nodes == pool.max_nodes else f"{pool.min_nodes}-{pool.max_nodes}"


def sharing(pool: Pool) -> str:
    """The full sharing of a pool: MIG layouts per GPU group, or the clients per GPU."""
    s = pool.sharing
    if s.by_clients:
        return f"{s.mode} x{s.replicas}"
    if s.mode == "fractional":
        return "fractional (HAMi)"
    if s.mode == "mig":
        return "mig " + " ".join(f"{g.gpus}x[" + "+".join(f"{c}x{n}" for n, c in g.layout) + "]" for g in s.mig)
    return "whole GPUs"


def sharing_short(pool: Pool) -> str:
    """Sharing in a few characters: the MIG profiles without their layouts (`--wide` has those)."""
    s = pool.sharing
    if s.mode != "mig":
        return sharing(pool)
    profiles = sorted({p for g in s.mig for p, _ in g.layout}, key=lambda p: (-_slices(p), p))
    if len(profiles) > _MAX_PROFILES_SHOWN:
        return f"mig, {len(profiles)} profiles"
    return "mig " + "+".join(profiles)


def _slices(profile: str) -> int:
    head = profile.split("g.", 1)[0]
    return int(head) if head.isdigit() else 0


def capacity(pool: Pool, short: bool = True) -> str:
    if pool.role == "fallback":
        return "fallback" if short else f"{pool.capacity} (fallback)"
    return pool.capacity


def schedule(pool: Pool) -> str:
    if pool.role == "fallback":
        return f"when {rung_word(pool.backs)} is short"
    if pool.schedule is None:
        return "always" if pool.hours_per_month >= 730 else f"{pool.hours_per_month:.0f} h/month"
    w = pool.schedule
    return f"{w.days} {w.hours} {w.timezone}"


def render_table(plan: Plan, wide: bool = False) -> str:
    return "\n".join(render_target(t, wide) for t in plan.targets)


def render_quiet(plan: Plan) -> str:
    """One line per target, for CI logs."""
    lines = []
    for t in plan.targets:
        cloud = CLOUDS.get(t.cloud)
        lines.append(f"{t.name}: {cloud.display_name} {t.region}, {len(t.pools)} pool{'s' if len(t.pools) != 1 else ''}, "
                     f"{t.gpus.provisioned} GPUs provisioned, {usd(t.cost.planned_monthly_usd)}/month planned "
                     f"(range {range_words(t)}; {t.cost.savings_pct:.1f}% saved against "
                     f"{usd(t.cost.baseline_monthly_usd)} for {BASELINE})")
    return "\n".join(lines) + "\n"


def render_target(target: TargetPlan, wide: bool = False) -> str:
    cloud = CLOUDS.get(target.cloud)
    lines = [f"{target.name}: {cloud.display_name} {target.region}, cluster {target.cluster} "
             f"(prices as of {target.prices_as_of})"]
    if not target.pools:
        lines.append("  no pools")
    elif wide:
        lines.extend(_wide_rows(target, cloud.display_name))
    else:
        lines.extend(_two_line_rows(target, cloud.display_name))
    lines.extend(_summary(target))
    if target.pools:
        lines.append("  Why:")
        for pool in target.pools:
            lines.append(_wrap(f"{pool.name}: {pool.reason}", "    ", "      "))
            for note in pool.notes:
                if wide or not is_solver_note(note):
                    lines.append(_wrap(f"note: {note}", "      ", "            "))
    for note in target.notes:
        lines.append(_wrap(f"Note: {note}", "  ", "        "))
    lines.append("")
    return "\n".join(lines)


def _two_line_rows(target: TargetPlan, display_name: str) -> list[str]:
    renamed = any(p.cloud_name != p.name for p in target.pools)
    legend = "POOL (the plan name: node label gpustack.dev/pool, for pod affinity"
    legend += f"; then the name on {display_name}, where it differs)" if renamed else ")"
    header = ("KIND", "CAPACITY", "INSTANCE", "NODES", "GPUS", "SHARING", "$/MONTH")
    rows = [header] + [(p.kind, capacity(p), p.instance_type, nodes(p), str(p.gpus.provisioned), sharing_short(p),
                        usd(p.monthly_cost_usd)) for p in target.pools]
    cells = _aligned(rows, right=(3, 4, 6))
    lines = ["  " + legend, "      " + cells[0]]
    for pool, row in zip(target.pools, cells[1:]):
        names = f"  {pool.name}"
        if pool.cloud_name != pool.name:
            also = f"  ({display_name} name: {pool.cloud_name})"
            names = names + also if len(names) + len(also) <= WIDTH else names + "\n    " + also.strip()
        lines.extend([names, "      " + row])
    return lines


def _wide_rows(target: TargetPlan, display_name: str) -> list[str]:
    header = ("POOL", f"NAME ON {display_name}", "KIND", "CAPACITY", "INSTANCE", "NODES", "GPUS", "SHARING", "RUNS",
              "$/MONTH")
    rows = [header] + [(p.name, p.cloud_name, p.kind, capacity(p, short=False), p.instance_type, nodes(p),
                        str(p.gpus.provisioned), sharing(p), schedule(p), usd(p.monthly_cost_usd))
                       for p in target.pools]
    return ["  " + line for line in _aligned(rows, right=(5, 6, 9))]


def _aligned(rows: Sequence[tuple[str, ...]], right: tuple[int, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row)).rstrip()
            for row in rows]


def _summary(target: TargetPlan) -> list[str]:
    g = target.gpus
    c = target.cost
    lines = [f"  GPUs: {g.baseline} one per replica -> {g.required} required at peak (lower bound "
             f"{g.lower_bound}), {g.provisioned} provisioned",
             f"  Cost: {usd(c.planned_monthly_usd)}/month planned, range {range_words(target)}",
             f"    {c.savings_pct:.1f}% saved against {usd(c.baseline_monthly_usd)}/month for {BASELINE}",
             f"    {used_hours_saving(target)}"]
    for step in c.breakdown:
        lines.append(f"    {step.step:<12} {usd(-step.monthly_usd) if step.monthly_usd else '$0':>12}")
    discount = discount_status(target)
    if discount is not None:
        lines.append(_wrap(f"Enterprise discount: {discount}", "  ", "    "))
    lines.append(f"  Commitments: {commitment_status(target)}")
    for rec in c.commitment_recommendations:
        lines.append(_wrap(f"recommended: {recommendation(rec)}", "    ", "      "))
    # Ladders that hold a window's capacity (a block, flex-start): the order and the worst case.
    windowed = [ladder for ladder in target.ladders if any(r.capacity in ("block", "flex") for r in ladder.rungs)]
    if windowed:
        lines.append("  Capacity ladders:")
        for ladder in windowed:
            rungs = " -> ".join(f"{r.capacity} {usd(r.monthly_usd)}" + (" up front" if r.billing != "hourly" else "")
                                for r in ladder.rungs)
            lines.append(_wrap(f"{ladder.workload}: {rungs}; worst case {usd(ladder.worst_case_monthly_usd)}/month",
                               "    ", "      "))
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
    return lines


def _wrap(text: str, first: str, rest: str) -> str:
    """`text` wrapped to the table's width; words longer than a line (URLs) stay whole."""
    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False)
