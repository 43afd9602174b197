"""KEDA ScaledObjects: the schedule window and the idle action of a workload, where the cluster runs KEDA.

On a target with `settings.autostop: keda`, each workload the plan gives KEDA (`scaled_by_keda`: a
Deployment or StatefulSet with a window that closes, or `idle.action: scale-to-zero`) gets one
`keda.sh/v1alpha1` ScaledObject in its namespace, and the built-in CronJobs leave it alone.

What KEDA does with triggers (kedacore/keda v2.20.2; the simulation in tests/test_keda.py follows it):
- a ScaledObject is active while any trigger is (pkg/scaling/scale_handler.go, getScaledObjectState);
  active from zero, it scales to 1 (pkg/scaling/executor/scale_scaledobjects.go, scaleFromZeroOrIdle),
  inactive for `cooldownPeriod` after its last active poll, to `minReplicaCount` 0 (scaleToZeroOrIdle);
- above zero its HPA takes the largest replica count any metric asks (Kubernetes
  pkg/controller/podautoscaler/horizontal.go, computeReplicasForMetrics), ceil(value / target) for an
  AverageValue target;
- a cron trigger is active, with value `desiredReplicas`, while its next end comes before its next start,
  else 0 (pkg/scalers/cron_scaler.go, GetMetricsAndActivity);
- a prometheus trigger is active while its value is above `activationThreshold`; an empty result is 0
  (pkg/scalers/prometheus_scaler.go, ignoreNullValues defaults to true).

So a cron trigger next to an idle trigger would keep the workload up all window, busy or not. With an
idle action the triggers instead feed one formula (`advanced.scalingModifiers`, pkg/scaling/modifiers/
formula.go), whose value is both the activity and the HPA metric: the plan's count inside the window while
the workload is not idle or the window opened less than an idle period ago, else 0.
"""

from __future__ import annotations

from typing import Any

from gpustack.plan.model import IdlePolicy, Plan, Pool, TargetPlan
from gpustack.render import promql
from gpustack.render.common import fitted_name, metadata, object_labels
from gpustack.render.workloads import API_VERSIONS, OBJECT_KINDS
from gpustack.schedules import interval_crons, window_intervals

API_VERSION = "keda.sh/v1alpha1"
POLLING_SECONDS = 30  # KEDA's default pollingInterval, written out
# After the last active poll (the idle period is already in the query): well inside the HPA's scale-down
# stabilization window below, so KEDA takes the workload to zero before the HPA takes it to one.
COOLDOWN_SECONDS = 60
# The HPA's default scale-down stabilization (https://kubernetes.io/docs/tasks/run-application/
# horizontal-pod-autoscale/#default-behavior), written out because the cooldown above relies on it.
HPA_SCALE_DOWN_STABILIZATION_SECONDS = 300
NAME_MAX = 63  # KEDA labels the HPA it makes with the ScaledObject's name


def name(workload: str) -> str:
    return fitted_name("gpustack", workload, NAME_MAX)


def planned_replicas(target: TargetPlan, workload: str) -> int:
    """The workload's replica count at peak, over all its pools."""
    return sum(p.replicas for pool in target.pools for p in pool.placements if p.workload == workload) or 1


def window_pool(target: TargetPlan, workload: str) -> Pool | None:
    """The pool whose closing window the workload follows (a workload's pools share its schedule)."""
    return next((p for p in target.pools if workload in p.workloads and p.schedule is not None
                 and p.schedule.start_crons), None)


def cron_triggers(prefix: str, pairs: list[tuple[str, str]], timezone: str, replicas: int) -> list[dict[str, Any]]:
    return [{"type": "cron", "name": prefix if len(pairs) == 1 else f"{prefix}{i}",
             "metadata": {"timezone": timezone, "start": start, "end": end, "desiredReplicas": str(replicas)}}
            for i, (start, end) in enumerate(pairs, 1)]


def busy_trigger(target: TargetPlan, policy: IdlePolicy, object_kind: str, replicas: int) -> dict[str, Any]:
    assert target.prometheus_url is not None  # the spec requires it with an idle action
    mig = promql.uses_mig(target, policy.workload)
    return {"type": "prometheus", "name": "busy",
            "metadata": {"serverAddress": target.prometheus_url,
                         "query": promql.busy_replicas(policy, object_kind, replicas, mig),
                         "threshold": "1", "activationThreshold": "0", "ignoreNullValues": "true"}}


def _largest(triggers: list[dict[str, Any]]) -> str:
    names = [t["name"] for t in triggers]
    return names[0] if len(names) == 1 else f"max({', '.join(names)})"


def formula(window: list[dict[str, Any]], opening: list[dict[str, Any]]) -> str:
    """The plan's count inside the window while busy or just opened, else 0 (expr-lang, a float)."""
    inside = _largest(window)
    return f"{inside} > 0 && (busy > 0 || {_largest(opening)} > 0) ? {inside} : 0.0"


def scaled_object(plan: Plan, target: TargetPlan, workload: str) -> dict[str, Any]:
    request = next(r for r in target.pod_requests if r.workload == workload)
    object_kind = OBJECT_KINDS[request.kind]
    replicas = planned_replicas(target, workload)
    policy = next((p for p in target.idle if p.workload == workload and p.action == "scale-to-zero"), None)
    pool = window_pool(target, workload)
    triggers: list[dict[str, Any]] = []
    advanced: dict[str, Any] = {"restoreToOriginalReplicaCount": True, "horizontalPodAutoscalerConfig": {
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": HPA_SCALE_DOWN_STABILIZATION_SECONDS}}}}
    if pool is not None and pool.schedule is not None:
        intervals = window_intervals(pool.schedule)
        window = cron_triggers("window", interval_crons(intervals), pool.schedule.timezone, replicas)
        triggers.extend(window)
        if policy is not None:
            grace = [(start, min(end, start + policy.for_seconds // 60)) for start, end in intervals]
            opening = cron_triggers("opening", interval_crons(grace), pool.schedule.timezone, replicas)
            triggers.extend(opening)
            advanced["scalingModifiers"] = {"formula": formula(window, opening), "target": "1",
                                            "activationTarget": "0", "metricType": "AverageValue"}
    if policy is not None:
        triggers.append(busy_trigger(target, policy, object_kind, replicas))
    labels = object_labels(plan, target)
    return {
        "apiVersion": API_VERSION, "kind": "ScaledObject",
        "metadata": metadata(name(workload), labels, request.namespace),
        "spec": {
            "scaleTargetRef": {"apiVersion": API_VERSIONS[object_kind], "kind": object_kind, "name": workload},
            "pollingInterval": POLLING_SECONDS,
            "cooldownPeriod": COOLDOWN_SECONDS,
            "minReplicaCount": 0,
            "maxReplicaCount": replicas,
            "advanced": advanced,
            "triggers": triggers,
        },
    }


def objects(plan: Plan, target: TargetPlan) -> list[dict[str, Any]]:
    return [scaled_object(plan, target, workload) for workload in target.scaled_by_keda]
