"""A plan diff as Markdown for a pull-request comment (the JSON form is `PlanDiff.to_json`)."""

from __future__ import annotations

import re

from gpustack.clouds import CLOUDS
from gpustack.diff.model import FieldChange, PlanDiff, PoolChange, TargetDiff
from gpustack.output.jinja import GENERATED_BY, render
from gpustack.output.markdown import code, inline, signed_usd, table
from gpustack.output.markdown import text as literal
from gpustack.output.table import usd

SECTIONS = {
    "replaced": "Replaced: the workloads move to new nodes and the old node pool drains",
    "drifted": "Drifted: same node pool, its nodes replaced one by one within its disruption budgets",
    "repartitioned": "Repartitioned: same node pool, new MIG layout",
    "removed": "Removed",
    "added": "Added",
    "resized": "Resized in place",
    "updated": "Updated in place",
}


def render_diff_markdown(diff: PlanDiff) -> str:
    return render("markdown/diff.md.j2", old=code(diff.old), new=code(diff.new), changed=diff.changed,
                  headline=_headline(diff), summary=_summary(diff),
                  targets=[_target(t) for t in diff.targets if t.status != "unchanged"],
                  generated_by=GENERATED_BY)


def _headline(diff: PlanDiff) -> str:
    if not diff.changed:
        return "No changes: both specs plan the same node pools at the same cost."
    changed = [t for t in diff.targets if t.status != "unchanged"]
    replaced = sum(t.count("replaced") for t in diff.targets)
    text = (f"{len(changed)} of {len(diff.targets)} target{'s' if len(diff.targets) != 1 else ''} change: "
            f"**{signed_usd(diff.delta_usd)}/month** in total")
    if replaced:
        text += f"; **⚠️ {replaced} node pool{'s' if replaced != 1 else ''} replaced**"
    drifted = sum(t.count("drifted") for t in diff.targets)
    if drifted:
        text += f"; **⚠️ {drifted} node pool{'s' if drifted != 1 else ''} drift (nodes replaced one by one)**"
    return text + "."


def _summary(diff: PlanDiff) -> str:
    drifts = any(t.count("drifted") for t in diff.targets)  # a column only where a provisioner drifts nodes
    rows = []
    for t in diff.targets:
        gpus = (f"{_opt(t.old_gpus)} → {_opt(t.new_gpus)}" if t.old_gpus != t.new_gpus else str(t.new_gpus))
        rows.append((code(t.name), CLOUDS.get(t.cloud).display_name, t.status, _money(t.old_monthly_usd),
                     _money(t.new_monthly_usd), signed_usd(t.delta_usd), gpus, str(t.count("replaced")),
                     *((str(t.count("drifted")),) if drifts else ())))
    header = ("target", "cloud", "status", "$/month before", "$/month after", "change", "GPUs provisioned",
              "pools replaced", *(("pools drifting",) if drifts else ()))
    return table(header, "lllrrrrr" + ("r" if drifts else ""), rows)


def _target(t: TargetDiff) -> dict[str, object]:
    cloud = CLOUDS.get(t.cloud).display_name
    sections = []
    for kind, title in SECTIONS.items():
        pools = [p for p in t.pools if p.change == kind]
        if pools:
            sections.append({"title": title, "table": _section(kind, pools, cloud)})
    replaced, drifted = t.count("replaced"), t.count("drifted")
    alerts = [f"{replaced} node pool{'s' if replaced != 1 else ''} will be replaced: new nodes start, the "
              "workloads move and the old nodes drain." if replaced else "",
              f"{drifted} node pool{'s' if drifted != 1 else ''} will drift: each node is replaced in turn, as "
              "fast as the pool's disruption budgets allow." if drifted else ""]
    alert = " ".join(a for a in alerts if a)
    return {"heading": f"{t.name} ({cloud}): {signed_usd(t.delta_usd)}/month ({t.status})",
            "alert": alert, "sections": sections, "warnings": [inline(w) for w in t.new_warnings]}


def _section(kind: str, pools: list[PoolChange], cloud: str) -> str:
    rows: list[tuple[str, ...]]
    if kind == "replaced":
        rows = [(_pool(p.name, p.cloud_name, cloud), _becomes(p, cloud), _fields(p.fields), _why(p, cloud),
                 _cost_change(p)) for p in pools]
        return table(("pool", "becomes", "what changes", "why", "$/month"), "llllr", rows)
    if kind == "repartitioned":
        rows = [(_pool(p.name, p.cloud_name, cloud), _fields(p.fields), _linked(p.why), _cost_change(p))
                for p in pools]
        return table(("pool", "what changes", "what happens", "$/month"), "lllr", rows)
    if kind == "drifted":
        rows = [(_pool(p.name, p.cloud_name, cloud), _fields(p.fields),
                 "<br>".join([p.why, *(f"{code(f.field)}: {_linked(f.drifts)}" for f in p.fields if f.drifts)]),
                 _cost_change(p)) for p in pools]
        return table(("pool", "what changes", "what happens", "$/month"), "lllr", rows)
    if kind in ("added", "removed"):
        rows = [(_pool(p.name, p.cloud_name, cloud), p.kind, p.nodes, str(p.gpus), _cost_change(p),
                 ", ".join(code(w) for w in p.workloads)) for p in pools]
        return table(("pool", "kind", "nodes", "GPUs", "$/month", "workloads"), "llrrrl", rows)
    rows = [(_pool(p.name, p.cloud_name, cloud), _fields(p.fields), _cost_change(p)) for p in pools]
    return table(("pool", "what changes", "$/month"), "llr", rows)


def _pool(name: str, cloud_name: str, cloud: str) -> str:
    return code(name) + (f" ({cloud} {code(cloud_name)})" if cloud_name != name else "")


def _fields(fields: tuple[FieldChange, ...]) -> str:
    return "<br>".join(f"{code(f.field)}: {_value(f.old)} → {_value(f.new)}" for f in fields) or "price or hours"


def _why(p: PoolChange, cloud: str) -> str:
    reasons = [f"{code(f.field)}: {_linked(f.replaces)}" for f in p.fields if f.replaces]
    if p.new_name == p.name or not reasons:
        return "<br>".join([p.why, *reasons])
    return "<br>".join([p.why, f"{cloud} could not change it in place either:", *reasons])


def _linked(text: str) -> str:
    """'(https://...)' as a short Markdown link."""
    return re.sub(r"\((https?://[^\s)]+)\)", r"([source](\1))", text)


def _becomes(p: PoolChange, cloud: str) -> str:
    if p.new_name == p.name:
        return "the same pool, recreated"
    text = _pool(p.new_name or "", p.new_cloud_name or "", cloud)
    if p.new_monthly_usd is None:
        text += " (an existing pool, resized)"
    others = [m for m in p.moves_to if m != p.new_name]
    return text + ("<br>and " + ", ".join(code(m) for m in others) if others else "")


def _cost_change(p: PoolChange) -> str:
    if p.old_monthly_usd is None or p.new_monthly_usd is None:
        return signed_usd((p.new_monthly_usd or 0.0) - (p.old_monthly_usd or 0.0))
    old, new = p.old_monthly_usd, p.new_monthly_usd
    return f"{usd(old)} → {usd(new)}" if round(old) != round(new) else usd(new)


def _value(value: str) -> str:
    return literal(value) if value else "none"


def _money(value: float | None) -> str:
    return "–" if value is None else usd(value)


def _opt(value: int | None) -> str:
    return "–" if value is None else str(value)
