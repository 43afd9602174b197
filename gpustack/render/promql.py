"""PromQL for a workload's GPUs: is it idle, and how many replicas does it run.

Shared by the KEDA ScaledObjects (keda.py) and the built-in idle job (the query it sends). A
workload's GPUs are the DCGM series whose pod carries its `gpustack.dev/workload` label:
- DCGM series carry the `namespace` and `pod` of the container using the GPU (the GPU Operator's
  ServiceMonitor keeps them with `honorLabels: true`, see alerts.py);
- kube-state-metrics exports the pod label as `kube_pod_labels{label_gpustack_dev_workload=...}` only
  when allowed: `--metric-labels-allowlist=pods=[gpustack.dev/workload]`.

Idle means: the workload's GPUs stayed below the threshold over the whole idle period, and its newest
pod is older than that period (pods that just started, from a window's start or a person scaling up,
get the period to get busy). No DCGM series at all is not idle: it is unknown, and nothing is stopped
on it (GpuMetricsMissing says so per pool).
"""

from __future__ import annotations

from gpustack.plan.model import IdlePolicy, TargetPlan
from gpustack.plan.pools import WORKLOAD_LABEL
from gpustack.render.common import prometheus_label

WORKLOAD_SERIES_LABEL = "label_" + prometheus_label(WORKLOAD_LABEL)
# kube-state-metrics' replica count of a scale target: metric and the label naming the object
# (https://github.com/kubernetes/kube-state-metrics/blob/main/docs/metrics/workload/deployment-metrics.md,
# .../statefulset-metrics.md).
REPLICA_SERIES = {"Deployment": ("kube_deployment_spec_replicas", "deployment"),
                  "StatefulSet": ("kube_statefulset_replicas", "statefulset")}
_WHOLE = "DCGM_FI_DEV_GPU_UTIL"
# MIG instances report no DCGM_FI_DEV_GPU_UTIL; their graphics-engine activity is a 0-1 ratio (alerts.py).
_MIG = '(DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""} or DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""} * 100)'


def pods(policy: IdlePolicy) -> str:
    return f'kube_pod_labels{{namespace="{policy.namespace}", {WORKLOAD_SERIES_LABEL}="{policy.workload}"}}'


def minutes(seconds: int) -> str:
    return f"{seconds // 60}m"


def idle(policy: IdlePolicy, mig: bool) -> str:
    """A sample when the workload is idle, nothing otherwise (also nothing without DCGM series)."""
    mine = f"on (namespace, pod) group_left () {pods(policy)}"
    utilisation = f"({_MIG if mig else _WHOLE} * {mine})"
    quiet = f"max(max_over_time({utilisation}[{minutes(policy.for_seconds)}:1m])) < {policy.below_percent:g}"
    settled = f"time() - max(kube_pod_created * {mine}) >= {policy.for_seconds}"
    return f"({quiet}) and on () ({settled})"


def replicas(policy: IdlePolicy, object_kind: str, planned: int) -> str:
    """The object's replica count; the plan's when kube-state-metrics does not say (then nothing stops)."""
    metric, label = REPLICA_SERIES[object_kind]
    return f'(max({metric}{{namespace="{policy.namespace}", {label}="{policy.workload}"}}) or vector({planned}))'


def busy_replicas(policy: IdlePolicy, object_kind: str, planned: int, mig: bool) -> str:
    """The replica count while the workload is not idle, nothing when it is."""
    return f"{replicas(policy, object_kind, planned)} unless on () ({idle(policy, mig)})"


def uses_mig(target: TargetPlan, workload: str) -> bool:
    """Whether the workload's GPUs are MIG instances on some pool of it (they report engine activity)."""
    return any(p.sharing.mode == "mig" for p in target.pools if workload in p.workloads)
