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
    return f"max by ({keep}, {WORKLOAD}) ({labelled(step, by_namespace)})"


def _namespaces(by_namespace: Mapping[str, Iterable[str]]) -> str:
    """The workloads' namespaces as a selector matcher: series of other namespaces are never read."""
    return f'namespace=~"{_alternatives(by_namespace)}"'


def _only(label: str, values: Iterable[str]) -> str:
    """A further matcher narrowing a selector to these values of `label` (none given: no matcher)."""
    chosen = list(values)
    return f', {label}=~"{_alternatives(chosen)}"' if chosen else ""


# Per-step expressions: a value in each step in which a series is present (one-step ranges, no lookback).
def labelled(step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str] = ()) -> str:
    """The workloads' kube_pod_labels series in the step, one selector per namespace (`pods`: only these)."""
    only = _only("pod", pods)
    parts = [f'kube_pod_labels{{namespace="{ns}", {WORKLOAD}=~"{_alternatives(names)}"{only}}}'
             for ns, names in sorted(by_namespace.items())]
    return " or ".join(f"max_over_time({p}[{step}])" for p in parts)


def running(step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str] = ()) -> str:
    """The pods of the namespaces whose phase is Running in the step (`pods`: only these)."""
    return (f'(max_over_time(kube_pod_status_phase{{phase="Running", {_namespaces(by_namespace)}{_only("pod", pods)}}}'
            f'[{step}]) == 1)')


def placed(step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str] = ()) -> str:
    """The pods of the namespaces and the node each is placed on in the step (`pods`: only these)."""
    return f'max_over_time(kube_pod_info{{node!="", {_namespaces(by_namespace)}{_only("pod", pods)}}}[{step}])'


def labelled_nodes(step: str, pools: Iterable[str], nodes: Iterable[str] = ()) -> str:
    """The nodes labelled with the pools in the step (`nodes`: only these)."""
    return f'max_over_time(kube_node_labels{{{POOL}=~"{_alternatives(pools)}"{_only("node", nodes)}}}[{step}])'


KSM_LABELS = "kube-state-metrics kube_pod_labels"
KSM_PHASE = "kube-state-metrics kube_pod_status_phase"
KSM_INFO = "kube-state-metrics kube_pod_info"
KSM_NODE_LABELS = "kube-state-metrics kube_node_labels"


# The pods and nodes: one selector per query, no join on the server (Prometheus would evaluate a join at
# every step, for every series). Per chunk the report first asks in how many of its steps each series has a
# value (`steps_present`, one point per series); a series present in every step is one run, and only the
# others (pods created or deleted in the chunk, nodes scaled in or out) are asked for at every step, by name
# (`pods` / `nodes`). The report folds the answers into runs of steps and joins the runs itself
# (gpustack/report/join.py): which pods of which workload ran, on which nodes of which pool.
def pod_labels(step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str] = ()) -> Query:
    """One selector for every namespace (`labelled` would join one per namespace with `or`, an operation at every
    step): the pods labelled with any workload name of the target in any of its namespaces. A series whose
    namespace is not its workload's is the report's to drop (gpustack/report/observe.py `_own`)."""
    names = sorted({name for listed in by_namespace.values() for name in listed})
    return Query("pod-labels", f'max_over_time(kube_pod_labels{{{_namespaces(by_namespace)}, '
                 f'{WORKLOAD}=~"{_alternatives(names)}"{_only("pod", pods)}}}[{step}])', KSM_LABELS)


def pod_running(step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str] = ()) -> Query:
    return Query("pod-running", running(step, by_namespace, pods), KSM_PHASE)


def pod_placed(step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str] = ()) -> Query:
    return Query("pod-placed", placed(step, by_namespace, pods), KSM_INFO)


def pool_nodes(step: str, pools: Iterable[str], nodes: Iterable[str] = ()) -> Query:
    return Query("pool-nodes", labelled_nodes(step, pools, nodes), KSM_NODE_LABELS)


def steps_present(query: Query, step: str, window: str) -> Query:
    """In how many steps of `window` (a subquery range ending at a chunk's last step, as `memory_values`) each
    series of a per-step query has a value: one point per series and chunk, where the per-step answer is one
    per step."""
    return Query(f"{query.name}-steps", f"count_over_time(({query.promql})[{window}:{step}])", query.source)


def step_edges(query: Query) -> Query:
    """A per-step query asked at a chunk's first and last step only (a range query whose step is the chunk's
    length): which series hold a value at the chunk's edges, so a series that came (or went) in it is asked for
    only its first (or last) step."""
    return Query(f"{query.name}-edges", query.promql, query.source)


def step_bounds(query: Query, step: str, window: str) -> tuple[Query, Query]:
    """The first and the last step end in `window` (as `steps_present`) at which each series of a per-step query
    has a value: with its count of steps, whether it holds one run and which."""
    over = f"(timestamp({query.promql}))[{window}:{step}]"
    return (Query(f"{query.name}-first", f"min_over_time({over})", query.source),
            Query(f"{query.name}-last", f"max_over_time({over})", query.source))


def dcgm_whole_utilisation(step: str, namespaces: str) -> str:
    """Percent per whole or time-sliced GPU (GPU_UTIL)."""
    return f'max_over_time(DCGM_FI_DEV_GPU_UTIL{{GPU_I_ID="", {namespaces}}}[{step}])'


def dcgm_mig_utilisation(step: str, namespaces: str) -> str:
    """Percent per MIG instance: engine activity x 100."""
    return f'max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_ID!="", {namespaces}}}[{step}]) * 100'


def dcgm_utilisation(step: str, namespaces: str) -> str:
    """Percent per GPU or MIG instance: GPU_UTIL for whole and time-sliced GPUs, engine activity x 100 for MIG."""
    return f"({dcgm_whole_utilisation(step, namespaces)} or {dcgm_mig_utilisation(step, namespaces)})"


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


# The parts of each exporter's utilisation, asked for idle steps one by one: `or` would match the two sides'
# series at every step, though they never share a label set (GPU_I_ID is empty on one side, set on the other),
# so the union of the parts' answers is what the `or` would answer.
IDLE_PARTS = {"dcgm": (("", dcgm_whole_utilisation), ("mig-", dcgm_mig_utilisation)), "hami": (("", hami_utilisation),)}


def idle_samples(exporter: str, step: str, by_namespace: Mapping[str, Iterable[str]], below: float
                 ) -> tuple[Query, ...]:
    """Per utilisation series of the namespaces, a point in each step where it is below `below`, one query per
    part of the exporter's utilisation (`IDLE_PARTS`). Whether its pod ran in that step, and for which workload,
    the report joins from `pod-running` and `pod-labels`."""
    namespaces = _namespaces(by_namespace)
    return tuple(Query(f"idle-{exporter}-{part}{below:g}", f"({utilisation(step, namespaces)} < {below:g})",
                       SOURCES[exporter]) for part, utilisation in IDLE_PARTS[exporter])


def memory_tiles(exporter: str, step: str, tile: str, by_namespace: Mapping[str, Iterable[str]]
                 ) -> tuple[Query, Query, Query]:
    """Per memory series of the namespaces and tile of steps (`tile`: a subquery range, a tile less half a step,
    evaluated at each tile's end: gpustack/report/observe.py `_memory`), in how many steps it has a value and the
    least and the most of those values: a tile whose least value is its most holds that value in each of its
    steps, so its samples are counted exactly without being sent one by one. Three functions over a subquery:
    Prometheus evaluates them series by series, where `count_values` per step would build a series per value and
    step. The tiles whose values vary are asked for with `memory_samples`. (`min_over_time` and
    `max_over_time` pass over NaN samples, prometheus/prometheus promql/functions.go `funcMinOverTime`, so a
    tile's NaN would count at its value; neither exporter sends NaN for memory in use, a number of MiB or
    bytes.)"""
    per_step = MEMORY[exporter](step, _namespaces(by_namespace))
    return (Query(f"memory-{exporter}-count", f"count_over_time(({per_step})[{tile}:{step}])", SOURCES[exporter]),
            Query(f"memory-{exporter}-min", f"min_over_time(({per_step})[{tile}:{step}])", SOURCES[exporter]),
            Query(f"memory-{exporter}-max", f"max_over_time(({per_step})[{tile}:{step}])", SOURCES[exporter]))


def memory_samples(exporter: str, step: str, by_namespace: Mapping[str, Iterable[str]], pods: Iterable[str]) -> Query:
    """Per memory series of `pods`, those labelled in only part of a chunk (created or deleted in it) or with a
    tile whose values vary (`memory_tiles`), its value at every step: the report gives each step's sample to the
    workload whose kube_pod_labels has the pod in that step (gpustack/report/join.py), where Prometheus would
    join the two at every step."""
    return Query(f"memory-{exporter}-steps", MEMORY[exporter](step, _namespaces(by_namespace) + _only("pod", pods)),
                 SOURCES[exporter])
