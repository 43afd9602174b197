"""The guardrails: one implementation of each rule, over `PoolView`s, for `gpustack check` and the pack.

A rule sees either one pool (`scope="pool"`) or every pool of a target / stack (`scope="stack"`),
plus its options (the policy-pack config of that rule, defaults filled in). It returns findings:
what is wrong, on which pool, and how to fix it in the vocabulary of the view's source. Rules never
ask which cloud a pool is on; a field a source cannot know is None, and the rule then says nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpustack.guardrails.view import GPU_TAINT_KEY, ON_DEMAND, SPOT, Finding, PoolView
from gpustack.spec.model import HOURS_PER_MONTH

MANDATORY, ADVISORY, DISABLED = "mandatory", "advisory", "disabled"
DEFAULT_LABELS = ("team", "environment")
_KEEPS_PODS_OFF = ("NoSchedule", "NoExecute")


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str  # also the policy name in the pack and the key of its config
    description: str
    level: str  # default enforcement level
    scope: str  # "pool" | "stack"
    check: Callable[..., Iterable[Finding]]
    schema: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)  # JSON schema of the options
    reads: frozenset[str] = frozenset({"instance_type", "labels"})  # skipped on a pool where one is unknown
    reads_schedules: bool = False  # needs `PoolView.scheduled`, which the pack learns from the whole stack

    def options(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """`given` with the schema's defaults filled in."""
        out = {key: prop["default"] for key, prop in self.schema.items() if "default" in prop}
        out.update({k: v for k, v in (given or {}).items() if k != "enforcementLevel"})
        return out

    def applies(self, view: PoolView) -> bool:
        """False while a field the rule reads is unknown (`pulumi preview` before an output exists)."""
        return not (self.reads & view.unknown)


def _workloads(view: PoolView) -> str:
    if not view.workloads:
        return ""
    return f" (workload{'s' if len(view.workloads) > 1 else ''} {', '.join(view.workloads)})"


# -- GPU pools carry the nvidia.com/gpu taint ------------------------------------------------------
def gpu_taint(view: PoolView, options: Mapping[str, Any]) -> Iterable[Finding]:
    del options
    if not view.is_gpu or view.taints is None:
        return
    if any(t.key == GPU_TAINT_KEY and t.effect in _KEEPS_PODS_OFF for t in view.taints):
        return
    yield Finding(view.name, f"GPU pool without the {GPU_TAINT_KEY} NoSchedule taint: pods that need no GPU "
                             "can land on its nodes and keep them, and their bill, running",
                  view.spelling.gpu_taint(view), view.urn)


# -- attribution labels ----------------------------------------------------------------------------
def attribution_labels(view: PoolView, options: Mapping[str, Any]) -> Iterable[Finding]:
    if not view.is_gpu or view.labels is None:
        return
    missing = [key for key in options["labels"] if not view.labels.get(key)]
    shared = [key for key in missing if key in view.label_conflicts]
    if shared:
        values = "; ".join(f"{key}: " + ", ".join(f"{w}={v or '(none)'}" for w, v in sorted(view.label_conflicts[key].items()))
                           for key in shared)
        yield Finding(view.name, f"GPU pool shared by workloads that differ in {', '.join(shared)} ({values}): a "
                                 "node label names one value, so node labels cannot attribute this pool's cost",
                      view.spelling.labels(view, shared), view.urn)
        missing = [key for key in missing if key not in shared]
    if missing:
        names = ", ".join(missing)
        yield Finding(view.name, f"GPU pool without the attribution label{'s' if len(missing) > 1 else ''} "
                                 f"{names}: its cost cannot be attributed", view.spelling.labels(view, missing),
                      view.urn)


# -- spot GPU pools only for checkpointed workloads -------------------------------------------------
def spot_needs_checkpointing(view: PoolView, options: Mapping[str, Any]) -> Iterable[Finding]:
    del options
    # Inference is the next rule's business: a spot burst over an on-demand floor is fine there.
    if not view.is_gpu or SPOT not in view.capacities or view.kind == "inference" or view.checkpointing:
        return
    state = "false" if view.checkpointing is False else "absent"
    how = view.spelling.checkpointing(view)
    fix = f"run it on {view.spelling.capacity(view, ON_DEMAND)}"
    if how:
        fix += f", or {how} once its workloads save checkpoints"
    yield Finding(
        view.name,
        f"spot GPU pool{_workloads(view)} whose workloads do not checkpoint "
        f"(gpustack.dev/checkpointing {state}): a spot reclaim loses their progress",
        fix,
        view.urn,
    )


# -- an inference pool is never spot-only -----------------------------------------------------------
def inference_not_spot_only(view: PoolView, options: Mapping[str, Any]) -> Iterable[Finding]:
    del options
    if view.is_gpu and view.kind == "inference" and view.spot_only:
        yield Finding(view.name, f"inference pool{_workloads(view)} on spot capacity only: one reclaim takes "
                                 "serving down", f"serve from {view.spelling.capacity(view, ON_DEMAND)}", view.urn)


# -- an inference floor survives a node and a zone -------------------------------------------------
def inference_floor_spread(view: PoolView, options: Mapping[str, Any]) -> Iterable[Finding]:
    del options
    if not view.is_gpu or view.kind != "inference" or not view.min_nodes or view.floor_zones is None:
        return
    if view.min_nodes == 1:
        risk = "sits on one node, so one node lost (a hardware fault, an upgrade, a reclaim) takes all of it"
    elif view.floor_zones < 2:
        risk = (f"sits on {view.min_nodes} nodes that may all be in one zone, so one zone outage can take all "
                "of it")
    else:
        return
    yield Finding(view.name, f"the serving floor of inference pool{_workloads(view)} {risk}",
                  view.spelling.availability(view), view.urn)


# -- notebook / dev pools scale to zero and have a schedule ----------------------------------------
def _is_dev_pool(view: PoolView, options: Mapping[str, Any]) -> bool:
    if not view.is_gpu:
        return False
    if view.kind is not None and view.kind in options["kinds"]:
        return True
    match = options.get("matchLabels") or {}
    return bool(match) and view.labels is not None and all(view.labels.get(k) == v for k, v in match.items())


def dev_pool_auto_stop(view: PoolView, options: Mapping[str, Any]) -> Iterable[Finding]:
    if not _is_dev_pool(view, options):
        return
    what = view.kind or "dev"
    if view.min_nodes:  # None (unknown) and 0 both pass
        yield Finding(view.name, f"{what} pool{_workloads(view)} cannot scale to zero: it keeps at least "
                                 f"{view.min_nodes} node{'s' if view.min_nodes != 1 else ''} running",
                      view.spelling.scale_to_zero(view), view.urn)
    if view.scheduled is False:
        yield Finding(view.name, f"{what} pool{_workloads(view)} has no auto-stop schedule: it can run, and "
                                 "bill, around the clock", view.spelling.schedule(view), view.urn)


# -- stack caps on GPUs and on the monthly cost -----------------------------------------------------
def _largest(views: list[PoolView], size: Callable[[PoolView], float | None]) -> list[PoolView]:
    return sorted(views, key=lambda v: (-(size(v) or 0.0), v.name))[:3]


def _monthly_usd(view: PoolView) -> float | None:
    if view.max_nodes is None or view.usd_per_node_hour is None:
        return None
    return view.max_nodes * HOURS_PER_MONTH * view.usd_per_node_hour


def stack_budget(views: Sequence[PoolView], options: Mapping[str, Any]) -> Iterable[Finding]:
    gpu_pools = [v for v in views if v.is_gpu]
    caps: tuple[tuple[str, str, Callable[[PoolView], float | None], str], ...] = (
        ("maxGpus", "GPUs", lambda v: v.gpus, "{:,.0f} GPUs"),
        ("maxMonthlyUsd", "monthly cost", _monthly_usd, "${:,.0f}/month"),
    )
    for key, what, size, unit in caps:
        cap = options.get(key)
        if cap is None or not gpu_pools:
            continue  # off unless configured
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not math.isfinite(cap) or cap < 0:
            # NaN compares false with everything: such a cap would pass every pool, so it fails instead.
            yield Finding(None, f"the cap {key} is {cap!r}, not a finite number >= 0, so nothing is checked against "
                                "it", f"give {key} as a finite number >= 0 in the policy config")
            continue
        known = [v for v in gpu_pools if size(v) is not None]
        total = sum(size(v) or 0.0 for v in known)
        if total > cap:
            top = _largest(known, size)
            yield Finding(None, f"the GPU pools of {gpu_pools[0].target} can reach {unit.format(total)} at their "
                                f"maximum size, above the cap of {unit.format(cap)} (largest: "
                                + ", ".join(f"{v.name} {unit.format(size(v))}" for v in top) + ")",
                          "lower the maximum size of the largest pools ("
                          + "; ".join(v.spelling.max_nodes(v) for v in top) + f") or raise {key}")
        unknown = [v for v in gpu_pools if size(v) is None]
        if unknown:
            yield Finding(None, f"cannot check the cap on {what} ({unit.format(cap)}): {_unknowns(unknown)}",
                          "use instance types the gpustack catalog lists, or check these pools by hand")


def _unknowns(views: list[PoolView]) -> str:
    parts = []
    for v in views:
        why = "its maximum size is unknown" if v.max_nodes is None else \
            f"instance type {v.instance_type or '(none given)'} is not in the gpustack catalog"
        parts.append(f"pool {v.name}: {why}")
    return "; ".join(parts)


# -- node-pool changes that force a replacement or drift the nodes (advisory) ------------------------
def _node_changes(view: PoolView) -> tuple[Mapping[str, object], Mapping[str, object]]:
    """The provisioner's replacing and drifting changes (`Provisioner.replacing_changes`, `drifting_changes`)."""
    from gpustack.clouds import CLOUDS

    try:
        provisioner = CLOUDS.get(view.cloud).provisioner(view.provisioner or None)
    except KeyError:
        return {}, {}
    return provisioner.replacing_changes, provisioner.drifting_changes


def node_pool_replacement(views: Sequence[PoolView], options: Mapping[str, Any]) -> Iterable[Finding]:
    del options
    gpu_pools = [v for v in views if v.is_gpu]
    compared = [v for v in gpu_pools if v.spelling.sees_previous]
    for view in compared:
        # A plan compared with a baseline: `gpustack diff` decides what replaces a node pool.
        for why in view.replacements:
            yield Finding(view.name, f"this change replaces a node pool, draining its nodes: {why}",
                          "make the change when the pool is idle, or add the new pool first and move the "
                          "workloads before removing the old one")
        for why in view.drifts:
            yield Finding(view.name, f"this change drifts the pool's nodes, each replaced in turn: {why}",
                          "make the change when the pool is quiet, and check that its disruption budgets allow "
                          "as many nodes at a time as its workloads can lose")
    # The pack sees the new inputs only, never the previous state or the planned operation: it can only
    # say which pools a replacing (or drifting) change would drain, once per stack rather than once per pool.
    exposed: dict[bool, list[str]] = {True: [], False: []}
    for view in gpu_pools:
        if view in compared or view.protected:
            continue
        for drifts, changes in zip((False, True), _node_changes(view), strict=True):
            paths = sorted({view.spelling.field(view, key.split(":", 1)[0]) for key in changes})
            unpinned = [p for p in paths if p not in view.ignored_changes]
            if unpinned:
                exposed[drifts].append(f"{view.name} ({', '.join(unpinned)})")
    if exposed[False]:
        yield Finding(None, f"{len(exposed[False])} GPU node pool(s) are recreated, every node drained, by a change "
                            f"to these fields, and a policy cannot see whether this update is one: "
                            f"{'; '.join(exposed[False])}",
                      "look for 'replace' on them in `pulumi preview --diff`, or compare the specs with "
                      "`gpustack diff`; protect a pool (protect: true) to make a replacement fail instead")
    if exposed[True]:
        yield Finding(None, f"{len(exposed[True])} GPU node pool(s) have every node replaced in turn (drift, as fast "
                            f"as their disruption budgets allow) by a change to these fields, and a policy cannot "
                            f"see whether this update is one: {'; '.join(exposed[True])}",
                      "compare the specs with `gpustack diff`, and make such a change when the pools are quiet")


def _labels_schema() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "default": list(DEFAULT_LABELS),
            "description": "node labels every GPU pool must carry (non-empty)"}


_GPU = frozenset({"instance_type", "labels"})  # what tells a GPU pool and its kind

RULES: tuple[Rule, ...] = (
    Rule("gpu-pool-taint", "GPU node pools carry the nvidia.com/gpu NoSchedule taint.", MANDATORY, "pool", gpu_taint,
         reads=_GPU | {"taints"}),
    Rule("gpu-pool-attribution-labels", "GPU node pools carry the configured attribution labels.", MANDATORY, "pool",
         attribution_labels, {"labels": _labels_schema()}),
    Rule("spot-gpu-pool-checkpointing", "Spot GPU pools run only workloads that checkpoint.", MANDATORY, "pool",
         spot_needs_checkpointing, reads=_GPU | {"capacities"}),
    Rule("inference-pool-not-spot-only", "Inference pools never run on spot capacity alone.", MANDATORY, "pool",
         inference_not_spot_only, reads=_GPU | {"capacities"}),
    Rule("inference-floor-spread", "An inference workload's serving floor spans two nodes and two zones.",
         ADVISORY, "pool", inference_floor_spread, reads=_GPU | {"min_nodes"}),
    Rule("dev-pool-auto-stop", "Notebook and dev GPU pools can scale to zero and have an auto-stop schedule.",
         MANDATORY, "pool", dev_pool_auto_stop,
         {"kinds": {"type": "array", "items": {"type": "string"}, "default": ["notebook"],
                    "description": "values of gpustack.dev/kind that mark a dev pool"},
          "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}, "default": {},
                          "description": "node labels that also mark a dev pool, e.g. {\"environment\": \"dev\"}"}},
         reads_schedules=True),
    Rule("stack-gpu-budget", "The GPU pools of a stack stay under a cap on GPUs and on monthly cost "
                             "(off unless configured).", MANDATORY, "stack", stack_budget,
         {"maxGpus": {"type": "integer", "minimum": 0,
                      "description": "most GPUs the pools may reach at their maximum size"},
          "maxMonthlyUsd": {"type": "number", "minimum": 0,
                            "description": "most the pools may cost in a month at their maximum size (list prices)"}},
         reads=_GPU | {"max_nodes"}),
    Rule("node-pool-replacement", "Changes that replace a GPU node pool are flagged.", ADVISORY, "stack",
         node_pool_replacement),
)


def rule(name: str) -> Rule:
    for candidate in RULES:
        if candidate.name == name:
            return candidate
    raise KeyError(name)
