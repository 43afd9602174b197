"""Idle-GPU alerts: a PrometheusRule naming the pool and the cost owner of every idle GPU.

A GPU is idle when its utilisation stays below 10% for 15 minutes. The rule is per pool: its
labels carry the pool and the pool's attribution labels (team, cost-center, model, ...), so the
alert says whose money is burning without any label lookup at alert time.

How a DCGM series is tied to its pool (the assumption the rule rests on):
- DCGM exporter series carry a `node` label: the GPU Operator's ServiceMonitor relabels
  `__meta_kubernetes_pod_node_name` into `node` (operator.NODE_RELABELING). The exporter's own
  `Hostname` label is not used: its value has changed between exporter versions (node name, pod
  name, or `localhost`).
- kube-state-metrics exports the node label `gpustack.dev/pool` as `label_gpustack_dev_pool` on
  `kube_node_labels{node=...}`. It does so only when allowed:
  `--metric-labels-allowlist=nodes=[gpustack.dev/pool]` (kube-prometheus-stack:
  `kube-state-metrics.metricLabelsAllowlist`).
- The rule keeps the DCGM series whose node is in the pool: `... and on (node) kube_node_labels{...}`.

MIG pools: DCGM does not report DCGM_FI_DEV_GPU_UTIL for MIG instances (0 or absent; NVIDIA in
NVIDIA/dcgm-exporter#216 and #430), so on those pools a MIG instance is idle when
DCGM_FI_PROF_GR_ENGINE_ACTIVE (a 0-1 ratio, in the operator's default collector list) stays below
0.10; GPUs left whole keep the DCGM_FI_DEV_GPU_UTIL test.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any
from zoneinfo import ZoneInfo

from gpustack.plan.model import IdlePolicy, Plan, Pool, ScheduleWindow, TargetPlan
from gpustack.plan.pools import POOL_LABEL
from gpustack.render import promql
from gpustack.render.common import metadata, object_labels, prometheus_label
from gpustack.schedules import window_crons

RULE_NAME = "gpustack-idle-gpus"
IDLE_PERCENT = 10
IDLE_FOR = "15m"
POOL_SERIES_LABEL = "label_" + prometheus_label(POOL_LABEL)  # kube-state-metrics' name for the node label


def idle_expr(pool: Pool) -> str:
    in_pool = f'on (node) kube_node_labels{{{POOL_SERIES_LABEL}="{pool.name}"}}'
    whole = f'DCGM_FI_DEV_GPU_UTIL{{GPU_I_ID=""}} < {IDLE_PERCENT}'
    if pool.sharing.mode != "mig":
        return f"(DCGM_FI_DEV_GPU_UTIL < {IDLE_PERCENT}) and {in_pool}"
    partitions = f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_ID!=""}} * 100 < {IDLE_PERCENT}'
    return f"({whole} or {partitions}) and {in_pool}"


def rule_labels(pool: Pool) -> dict[str, str]:
    labels = {"severity": "warning", "gpustack_pool": pool.name, "gpustack_kind": pool.kind}
    for key, value in sorted(pool.attribution.items()):
        labels.setdefault(prometheus_label(key), value)
    return labels


def owner_text(pool: Pool) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(pool.attribution.items())) or "no attribution labels"


def nodes_in(pool: Pool) -> str:
    return f'kube_node_labels{{{POOL_SERIES_LABEL}="{pool.name}"}}'


def rule(pool: Pool) -> dict[str, Any]:
    labels = rule_labels(pool)
    return {
        "alert": "GpuIdle",
        "expr": idle_expr(pool),
        "for": IDLE_FOR,
        "labels": labels,
        "annotations": {
            "summary": f"Idle GPU in pool {pool.name}",
            "description": ("GPU {{ $labels.gpu }}{{ with $labels.GPU_I_PROFILE }} (MIG instance {{ . }}){{ end }}"
                            f" on node {{{{ $labels.node }}}} of pool {pool.name} "
                            f"({pool.instance_type}) has been below {IDLE_PERCENT}% utilisation for {IDLE_FOR} "
                            f"({owner_text(pool)})."),
        },
    }


def no_data_rule(pool: Pool) -> dict[str, Any]:
    """A node of the pool without DCGM series: its idle GPUs could not raise GpuIdle (no exporter, or
    the `node` relabeling missing)."""
    metrics = "DCGM_FI_DEV_GPU_UTIL" if pool.sharing.mode != "mig" else \
        '{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_GR_ENGINE_ACTIVE"}'
    return {
        "alert": "GpuMetricsMissing",
        "expr": f"{nodes_in(pool)} unless on (node) {metrics}",
        "for": IDLE_FOR,
        "labels": rule_labels(pool),
        "annotations": {
            "summary": f"No GPU metrics from pool {pool.name}",
            "description": (f"Node {{{{ $labels.node }}}} of pool {pool.name} has reported no DCGM series for "
                            f"{IDLE_FOR}: idle GPUs there raise no alert ({owner_text(pool)})."),
        },
    }


# Nodes of a scheduled pool may outlive the window's end by the autoscaler's scale-down delay
# (10 minutes unneeded by default) and the drain; the alert waits longer than that.
OUTSIDE_WINDOW_FOR = "30m"
_PROM_WEEK = 7 * 24 * 60  # minutes of a week as Prometheus counts it: day_of_week() 0 is Sunday
_OFFSET_YEAR = 2026  # the UTC offsets a zone takes over one year (daylight saving) bound the window in UTC


@functools.cache
def _utc_offsets(zone: str) -> tuple[int, ...]:
    """The zone's UTC offsets in minutes over a year (tzdata), e.g. (60, 120) for Europe/Berlin."""
    tz = ZoneInfo(zone)
    start = datetime.datetime(_OFFSET_YEAR, 1, 1, tzinfo=datetime.UTC)
    found = set()
    for hours in range(0, 366 * 24, 6):
        offset = (start + datetime.timedelta(hours=hours)).astimezone(tz).utcoffset()
        assert offset is not None
        found.add(int(offset.total_seconds() // 60))
    return tuple(sorted(found))


def utc_window(schedule: ScheduleWindow) -> list[tuple[int, int]]:
    """Minutes of the UTC week (0 = Sunday 00:00) that lie inside the window under any of the zone's
    offsets: outside them the pool is closed whatever the time of year."""
    span = schedule.end_minute - schedule.start_minute
    span = span if span > 0 else span + 24 * 60
    covered = [False] * _PROM_WEEK
    for offset in _utc_offsets(schedule.timezone):
        for day in schedule.weekdays:  # 0 = Monday, so Sunday-based day (day + 1)
            start = (day + 1) * 24 * 60 + schedule.start_minute - offset
            for minute in range(start, start + span):
                covered[minute % _PROM_WEEK] = True
    intervals: list[tuple[int, int]] = []
    for minute, inside in enumerate(covered):
        if inside and intervals and intervals[-1][1] == minute:
            intervals[-1] = (intervals[-1][0], minute + 1)
        elif inside:
            intervals.append((minute, minute + 1))
    return intervals


def outside_window_rule(pool: Pool) -> dict[str, Any] | None:
    """Nodes of a scheduled pool alive outside its window: auto-stop did not run, or something still
    holds the nodes (a pod without the workload label, a PodDisruptionBudget, a minimum above zero)."""
    if pool.schedule is None or not window_crons(pool.schedule)[0]:
        return None
    now = "(day_of_week() * 1440 + hour() * 60 + minute())"
    inside = " or ".join(f"({now} >= {start} and {now} < {end})" for start, end in utc_window(pool.schedule))
    window = f"{pool.schedule.days} {pool.schedule.hours} {pool.schedule.timezone}"
    return {
        "alert": "GpuPoolOutsideWindow",
        "expr": f"count({nodes_in(pool)}) > 0 unless on () ({inside})",
        "for": OUTSIDE_WINDOW_FOR,
        "labels": rule_labels(pool),
        "annotations": {
            "summary": f"Scheduled pool {pool.name} runs outside its window",
            "description": (f"{{{{ $value }}}} node(s) of pool {pool.name} are running outside its window "
                            f"({window}) for {OUTSIDE_WINDOW_FOR}: check the gpustack-stop CronJobs and what "
                            f"still runs there ({owner_text(pool)})."),
        },
    }


def prometheus_rule(plan: Plan, target: TargetPlan, namespace: str) -> dict[str, Any] | None:
    pools = sorted(target.pools, key=lambda p: p.name)
    if not pools:
        return None
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata(RULE_NAME, object_labels(plan, target), namespace),
        "spec": {"groups": [{"name": RULE_NAME, "rules": [r for p in pools for r in _pool_rules(p)]
                             + [workload_idle_rule(plan, target, policy) for policy in target.idle]}]},
    }


def workload_idle_rule(plan: Plan, target: TargetPlan, policy: IdlePolicy) -> dict[str, Any]:
    """A workload with its own `idle`: idle by its threshold and period (its pods' GPUs, promql.py), saying
    what happens next."""
    labels = {"severity": "warning", "gpustack_workload": policy.workload, "namespace": policy.namespace,
              "gpustack_idle_action": policy.action}
    for key, value in sorted({**dict(plan.labels), **dict(_pod_labels(target, policy.workload))}.items()):
        labels.setdefault(prometheus_label(key), value)
    then = ("it goes to zero now"
            if policy.action == "scale-to-zero" else "nothing is done (idle.action: alert)")
    return {
        "alert": "GpuWorkloadIdle",
        "expr": promql.idle(policy, promql.uses_mig(target, policy.workload)),
        "labels": labels,
        "annotations": {
            "summary": f"Idle GPUs of workload {policy.namespace}/{policy.workload}",
            "description": (f"The GPUs of {policy.namespace}/{policy.workload} have been below "
                            f"{policy.below_percent:g}% utilisation for {promql.minutes(policy.for_seconds)}: {then}."),
        },
    }


def _pod_labels(target: TargetPlan, workload: str) -> tuple[tuple[str, str], ...]:
    return next((r.labels for r in target.pod_requests if r.workload == workload), ())


def _pool_rules(pool: Pool) -> list[dict[str, Any]]:
    window = outside_window_rule(pool)
    return [rule(pool), no_data_rule(pool), *([window] if window else [])]
