"""Plan pools as pool views, for `gpustack check`: the same rules the pack applies to resources.

Fixes are said in the spec's words (a workload's `capacity`, `checkpointing`, `schedule`, the
spec's `labels`), since the spec is what a user edits.
"""

from __future__ import annotations

import dataclasses
from gpustack.guardrails.view import CHECKPOINTING_LABEL, SPOT, PoolView, Taint
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.spec.model import JOB_KINDS


def _workloads(view: PoolView) -> str:
    names = ", ".join(view.workloads)
    return f"workload{'s' if len(view.workloads) > 1 else ''} {names}"


@dataclasses.dataclass(frozen=True)
class SpecSpelling:
    """Fixes said in the words of the spec."""

    sees_previous: bool = True

    def capacity(self, view: PoolView, capacity: str) -> str:
        if SPOT in view.capacities:
            default = "a reserved floor and an on-demand burst" if view.kind == "inference" else capacity
            return f"{default} capacity: remove `capacity: spot` from {_workloads(view)}"
        return f"{capacity} capacity (`capacity: {capacity}` on {_workloads(view)})"

    def checkpointing(self, view: PoolView) -> str | None:
        return f"set `checkpointing: true` on {_workloads(view)}" if view.kind in JOB_KINDS else None

    def labels(self, view: PoolView, keys: list[str]) -> str:
        if any(key in view.label_conflicts for key in keys):
            names = ", ".join(keys)
            return (f"split the pool by {names} (`pools: {{split_by: [{names}]}}` in the spec gives each {names} its "
                    f"own pools, named and labelled for it), or attribute its cost by the pods' {names} label "
                    "(cost tools such as OpenCost split a shared node by the requests of the pods on it) and set "
                    "this rule to advisory in the policy config")
        return (f"add {', '.join(keys)} to the spec's top-level `labels` (every pool gets them) or to the "
                f"`labels` of {_workloads(view)}")

    def gpu_taint(self, view: PoolView) -> str:
        return "gpustack taints every GPU pool it plans; a plan without the taint is a bug, please report it"

    def scale_to_zero(self, view: PoolView) -> str:
        capacities = ", ".join(sorted(view.capacities))
        return f"remove `capacity: {capacities}` from {_workloads(view)}: a reserved pool keeps its nodes"

    def schedule(self, view: PoolView) -> str:
        return (f'add `schedule: {{days: Mon-Fri, hours: "08:00-18:00", timezone: <IANA zone>}}` to '
                f"{_workloads(view)}")

    def max_nodes(self, view: PoolView) -> str:
        return f"{view.name}: `replicas` of {_workloads(view)}"

    def field(self, view: PoolView, plan_field: str) -> str:
        return plan_field

    def availability(self, view: PoolView) -> str:
        return (f"add `availability: {{zones: 2, max_replicas_per_node: 1}}` to {_workloads(view)} (its floor is "
                "then planned on nodes in two zones, with topology spread constraints on its pods)")


SPEC_SPELLING = SpecSpelling()


def pool_view(target: TargetPlan, pool: Pool, replacements: tuple[str, ...] = (),
              drifts: tuple[str, ...] = ()) -> PoolView:
    labels = dict(pool.labels)
    checkpointing = labels.get(CHECKPOINTING_LABEL)
    return PoolView(
        target=target.name, name=pool.name, cloud=target.cloud, spelling=SPEC_SPELLING,
        instance_type=pool.instance_type, is_gpu=pool.gpus_per_node > 0, gpus_per_node=pool.gpus_per_node,
        usd_per_node_hour=pool.price.usd_per_node_hour, price_note=pool.price.source,
        capacities=frozenset({pool.capacity}), kind=pool.kind, labels=labels,
        taints=tuple(Taint(t.key, t.value, t.effect) for t in pool.taints),
        min_nodes=pool.min_nodes, max_nodes=pool.max_nodes,
        checkpointing=None if checkpointing is None else checkpointing == "true",
        # A window open all week never stops the pool: no stop, no auto-stop.
        scheduled=pool.schedule is not None and bool(pool.schedule.stop_crons), workloads=pool.workloads, cloud_name=pool.cloud_name,
        pool_label=pool.name, replacements=replacements, drifts=drifts, provisioner=target.provisioner,
        label_conflicts={key: dict(values) for key, values in pool.label_conflicts},
        floor_zones=len(pool.spread_zones or pool.reservations) or 1,
    )


def replacements(baseline: Plan, plan: Plan) -> dict[tuple[str, str], tuple[str, ...]]:
    """(target, pool of `plan`) -> why it replaces a node pool of `baseline`, as `gpustack diff` finds it."""
    return node_changes(baseline, plan)[0]


def node_changes(baseline: Plan, plan: Plan) -> tuple[dict[tuple[str, str], tuple[str, ...]],
                                                      dict[tuple[str, str], tuple[str, ...]]]:
    """(target, pool of `plan`) -> why it replaces a node pool of `baseline`, and -> why its nodes drift, as
    `gpustack diff` finds them."""
    from gpustack.diff.compare import diff_plans

    replaced: dict[tuple[str, str], tuple[str, ...]] = {}
    drifted: dict[tuple[str, str], tuple[str, ...]] = {}
    for target in diff_plans(baseline, plan, "baseline", "spec").targets:
        for change in target.pools:
            if change.change == "drifted":
                fields = "; ".join(f"{f.field}: {f.old or '-'} -> {f.new or '-'} ({f.drifts})"
                                   for f in change.fields if f.drifts)
                key = (target.name, change.name)
                drifted[key] = drifted.get(key, ()) + (f"{change.why}; {fields}",)
            if change.change != "replaced" or change.new_name is None:
                continue
            fields = "; ".join(
                f"{f.field}: {f.old or '-'} -> {f.new or '-'}" + (f" ({f.replaces})" if f.replaces else "")
                for f in change.fields
                if f.replaces or change.new_name != change.name
            )
            subject = "in place" if change.new_name == change.name else f"node pool {change.name} gives way to it"
            text = f"{subject}: {change.why}" + (f"; {fields}" if fields else "")
            key = (target.name, change.new_name)
            replaced[key] = replaced.get(key, ()) + (text,)
    return replaced, drifted


def plan_views(plan: Plan, baseline: Plan | None = None) -> dict[str, list[PoolView]]:
    """Target name -> the views of its pools; with a baseline, each knows what of it is a replacement or
    a drift of its nodes."""
    replaced, drifted = node_changes(baseline, plan) if baseline is not None else ({}, {})
    return {target.name: [pool_view(target, pool, replaced.get((target.name, pool.name), ()),
                                    drifted.get((target.name, pool.name), ()))
                          for pool in target.pools] for target in plan.targets}
