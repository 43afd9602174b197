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

from typing import Any

from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.plan.pools import POOL_LABEL
from gpustack.render.common import metadata, object_labels, prometheus_label

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


def rule(pool: Pool) -> dict[str, Any]:
    owner = pool.attribution
    labels = {"severity": "warning", "gpustack_pool": pool.name, "gpustack_kind": pool.kind}
    for key, value in sorted(owner.items()):
        labels.setdefault(prometheus_label(key), value)
    owner_text = ", ".join(f"{k}={v}" for k, v in sorted(owner.items())) or "no attribution labels"
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
                            f"({owner_text})."),
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
        "spec": {"groups": [{"name": RULE_NAME, "rules": [rule(p) for p in pools]}]},
    }
