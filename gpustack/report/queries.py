"""Every PromQL query the report sends, each with the exporter and document that defines its series.

Label contract (the same as the rendered alerts and idle jobs, gpustack/render/promql.py):
- kube-state-metrics exports pod and node labels only when allowlisted:
  `--metric-labels-allowlist=nodes=[gpustack.dev/pool],pods=[gpustack.dev/workload]`, which gives
  `label_gpustack_dev_pool` and `label_gpustack_dev_workload`.
  Source: kubernetes/kube-state-metrics c92fe0c5ce02d3b52abf54490e00db6c706f2ba5 (2026-08-20),
  docs/metrics/cluster/node-metrics.md (kube_node_labels{node, label_*}) and
  docs/metrics/workload/pod-metrics.md (kube_pod_labels{namespace, pod, uid, label_*},
  kube_pod_info{namespace, pod, uid, node, ...}, kube_pod_status_phase{namespace, pod, uid, phase}).
- DCGM exporter series carry the `namespace` and `pod` of the container using the GPU (GPU Operator
  ServiceMonitor with honorLabels). Source: NVIDIA/dcgm-exporter d5e5f510a1b6b393f39a43293ccd9dc985defc79
  (2026-05-12): etc/default-counters.csv lines 23 `DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)`,
  46 `DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB)`, 89 `DCGM_FI_PROF_GR_ENGINE_ACTIVE,
  gauge, Ratio of time the graphics engine is active` (a default counter since dcgm-exporter 4.0.0; absent
  from 3.x, e.g. 3.3.9-3.6.1, so older installs enable it with a custom counters file);
  etc/dcp-metrics-included.csv line 81 lists it too. MIG instances carry GPU_I_ID and report no GPU_UTIL.
- HAMi's vGPU monitor, per container of a fractional pool, labels namespace, pod, container,
  vdevice_index, device_uuid: `hami_container_device_utilization_ratio` (SM utilisation, 0-100) and
  `hami_vgpu_memory_used_bytes`. Source: Project-HAMi/HAMi 4707fb02c91c545bc7343ce26dba4c32919f9a3e
  (2026-08-21), cmd/vGPUmonitor/metrics.go.

Each step is read with `max_over_time(X[step])` evaluated at the step's end (gpustack/report/window.py),
so one step holds at most the samples scraped within it and nothing from the lookback.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

WORKLOAD = "label_gpustack_dev_workload"
POOL = "label_gpustack_dev_pool"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@dataclasses.dataclass(frozen=True)
class Query:
    name: str  # stable, part of the recorded file's name
    promql: str
    source: str  # the exporter, for docs and findings


def _alternatives(names: Iterable[str]) -> str:
    """A PromQL regex matching exactly these names (DNS labels: dots escaped, as PromQL string text)."""
    checked = sorted(set(names))
    for name in checked:
        if not _NAME.fullmatch(name):
            raise ValueError(f"not a DNS name: {name!r}")
    return "|".join(n.replace(".", "\\\\.") for n in checked)


def workload_pods(step: str, by_namespace: Mapping[str, Iterable[str]], keep: str = "namespace, pod, uid") -> str:
    """One series per pod of the workloads (namespace -> names), labelled with its workload."""
    return f"max by ({keep}, {WORKLOAD}) ({_labelled(step, by_namespace)})"


def _labelled(step: str, by_namespace: Mapping[str, Iterable[str]]) -> str:
    """The workloads' kube_pod_labels series in the step, as they are (the right side of `and`)."""
    parts = [f'kube_pod_labels{{namespace="{ns}", {WORKLOAD}=~"{_alternatives(names)}"}}'
             for ns, names in sorted(by_namespace.items())]
    return " or ".join(f"max_over_time({p}[{step}])" for p in parts)


def _namespaces(by_namespace: Mapping[str, Iterable[str]]) -> str:
    """The workloads' namespaces as a selector matcher: series of other namespaces are never read."""
    return f'namespace=~"{_alternatives(by_namespace)}"'


def _running(step: str, by_namespace: Mapping[str, Iterable[str]]) -> str:
    """Pods Running in the step, as the right side of `and` (a set operation: duplicates there are harmless, and
    no aggregation per step is needed)."""
    return (f'(max_over_time(kube_pod_status_phase{{phase="Running", {_namespaces(by_namespace)}}}[{step}]) == 1)')


def pods_labelled(step: str, by_namespace: Mapping[str, Iterable[str]]) -> Query:
    return Query("pods-labelled", f"count by (namespace, {WORKLOAD}) ({workload_pods(step, by_namespace)})",
                 "kube-state-metrics kube_pod_labels")


def pods_running(step: str, by_namespace: Mapping[str, Iterable[str]]) -> Query:
    return Query("pods-running",
                 f"count by (namespace, {WORKLOAD}) ({workload_pods(step, by_namespace)} and on (namespace, pod, uid) "
                 f"{_running(step, by_namespace)})",
                 "kube-state-metrics kube_pod_status_phase, kube_pod_labels")


def dcgm_utilisation(step: str, namespaces: str) -> str:
    """Percent per GPU or MIG instance: GPU_UTIL for whole and time-sliced GPUs, engine activity x 100 for MIG."""
    return (f'(max_over_time(DCGM_FI_DEV_GPU_UTIL{{GPU_I_ID="", {namespaces}}}[{step}]) or '
            f'max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_ID!="", {namespaces}}}[{step}]) * 100)')


def hami_utilisation(step: str, namespaces: str) -> str:
    return f"max_over_time(hami_container_device_utilization_ratio{{{namespaces}}}[{step}])"


def dcgm_memory_mib(step: str, namespaces: str) -> str:
    return f"max_over_time(DCGM_FI_DEV_FB_USED{{{namespaces}}}[{step}])"


def hami_memory_mib(step: str, namespaces: str) -> str:
    return f"(max_over_time(hami_vgpu_memory_used_bytes{{{namespaces}}}[{step}]) / 1048576)"


UTILISATION = {"dcgm": dcgm_utilisation, "hami": hami_utilisation}
MEMORY = {"dcgm": dcgm_memory_mib, "hami": hami_memory_mib}
SOURCES = {"dcgm": "DCGM exporter", "hami": "HAMi vGPU monitor"}


def utilisation_present(exporter: str, step: str, by_namespace: Mapping[str, Iterable[str]]) -> Query:
    mine = workload_pods(step, by_namespace, keep="namespace, pod")
    return Query(f"utilisation-{exporter}",
                 f"count by (namespace, {WORKLOAD}) ({UTILISATION[exporter](step, _namespaces(by_namespace))} * on (namespace, pod) "
                 f"group_left ({WORKLOAD}) {mine})", SOURCES[exporter])


def idle_samples(exporter: str, step: str, by_namespace: Mapping[str, Iterable[str]], below: float) -> Query:
    """Per utilisation series, a point in each step where it is below `below` while its pod runs."""
    mine = workload_pods(step, by_namespace, keep="namespace, pod")
    quiet = f"({UTILISATION[exporter](step, _namespaces(by_namespace))} < {below:g})"
    return Query(f"idle-{exporter}-{below:g}",
                 f"({quiet} and on (namespace, pod) {_running(step, by_namespace)}) * on (namespace, pod) "
                 f"group_left ({WORKLOAD}) {mine}", SOURCES[exporter])


def memory_values(exporter: str, step: str, window: str, by_namespace: Mapping[str, Iterable[str]]) -> Query:
    """How many of the workload's memory samples in `window` (a subquery range, gpustack/report/fetch.py
    `value_counts`) held each value: `count_values` per step (the value as a label), summed over the steps,
    so the answer is one point per workload and value, and the percentile over every sample is exact
    without one series per GPU."""
    mine = workload_pods(step, by_namespace, keep="namespace, pod")
    per_step = (f'count_values by (namespace, {WORKLOAD}) ("mib", {MEMORY[exporter](step, _namespaces(by_namespace))} '
                f"* on (namespace, pod) group_left ({WORKLOAD}) {mine})")
    return Query(f"memory-{exporter}", f"sum_over_time(({per_step})[{window}:{step}])", SOURCES[exporter])


def pool_nodes(step: str, pools: Iterable[str]) -> Query:
    return Query("pool-nodes",
                 f"count by ({POOL}) (max by (node, {POOL}) (max_over_time(kube_node_labels{{{POOL}=~"
                 f'"{_alternatives(pools)}"}}[{step}])))', "kube-state-metrics kube_node_labels")


def pool_nodes_busy(step: str, pools: Iterable[str], by_namespace: Mapping[str, Iterable[str]],
                    pods: Iterable[str] = ()) -> Query:
    """Nodes of the pools that run at least one running pod of the spec's workloads, per step. `pods`: the
    names of the pods on those pools' nodes (`reserved_pods`), so only their series are read, not every pod's
    of the namespaces."""
    only = f', pod=~"{_alternatives(pods)}"' if pods else ""
    nodes = f'max by (node, {POOL}) (max_over_time(kube_node_labels{{{POOL}=~"{_alternatives(pools)}"}}[{step}]))'
    placed = f'max_over_time(kube_pod_info{{node!="", {_namespaces(by_namespace)}{only}}}[{step}])'
    running = f'(max_over_time(kube_pod_status_phase{{phase="Running", {_namespaces(by_namespace)}{only}}}[{step}]) == 1)'
    labelled = " or ".join(
        f'max_over_time(kube_pod_labels{{namespace="{ns}", {WORKLOAD}=~"{_alternatives(names)}"{only}}}[{step}])'
        for ns, names in sorted(by_namespace.items()))
    # `and` keeps the left side's labels (node); one-to-one `*` with on() would keep only the on() labels. A set
    # operation needs no aggregation per step: `count by (node)` only asks whether a node has any.
    pods_of = f"{placed} and on (namespace, pod, uid) {running} and on (namespace, pod, uid) ({labelled})"
    return Query("pool-nodes-busy", f"count by ({POOL}) ({nodes} and on (node) count by (node) ({pods_of}))",
                 "kube-state-metrics kube_node_labels, kube_pod_info, kube_pod_status_phase, kube_pod_labels")


def reserved_nodes(window: str, pools: Iterable[str]) -> Query:
    """The nodes of the pools in a chunk of the window (`window`: its range, evaluated at its end)."""
    return Query("reserved-nodes", f'max by (node) (max_over_time(kube_node_labels{{{POOL}=~"{_alternatives(pools)}"}}'
                                   f"[{window}]))", "kube-state-metrics kube_node_labels")


def reserved_pods(window: str, nodes: Iterable[str], by_namespace: Mapping[str, Iterable[str]]) -> Query:
    """The pods of the workloads' namespaces placed on `nodes` in a chunk of the window."""
    return Query("reserved-pods", f'max by (pod) (max_over_time(kube_pod_info{{node=~"{_alternatives(nodes)}", '
                                  f"{_namespaces(by_namespace)}}}[{window}]))", "kube-state-metrics kube_pod_info")
