"""What ran: the queries of one target, folded into workload and pool figures and findings.

Which utilisation and memory series belong to a workload depends on how its pool shares GPUs: HAMi's
per-container series on fractional pools, the DCGM exporter's everywhere else. Time-sliced GPUs have no
per-pod utilisation: DCGM reports the device, and every sharer's series carries the device's value. So a
time-sliced device below the threshold makes each of its sharers idle (each counted at its share), and a
device busy with one sharer hides an idle one: the idle figure of time-sliced workloads is a lower bound.
"""

from __future__ import annotations

import array
import bisect
import concurrent.futures
import dataclasses
import functools
import math
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeAlias

from gpustack.plan.model import Pool, TargetPlan
from gpustack.report import fetch, join, measure, queries
from gpustack.report.client import ReportError, Source
from gpustack.report.model import Finding, PoolReport, WorkloadReport
from gpustack.report.window import Window
from gpustack.spec.model import HOURS_PER_MONTH, Spec, Workload

DEFAULT_IDLE_BELOW = 10.0  # percent, as the per-pool idle alert
DEFAULT_IDLE_FOR = 15 * 60
MIB_PER_GIB = 1024
# Steps per memory tile (an hour at 1-minute steps): a tile whose values do not vary is three numbers, one
# whose values do costs its pod's samples of the chunk.
MEMORY_TILE_STEPS = 60
QUERY_CONCURRENCY = 4  # requests in flight at once: bounded, and below Prometheus's default of 20 (--query.max-concurrency)
KSM_PODS = "kube-state-metrics --metric-labels-allowlist=pods=[gpustack.dev/workload]"
KSM_NODES = "kube-state-metrics --metric-labels-allowlist=nodes=[gpustack.dev/pool]"


@dataclasses.dataclass(frozen=True)
class Observed:
    workloads: tuple[WorkloadReport, ...]
    pools: tuple[PoolReport, ...]
    findings: tuple[Finding, ...]


def share(plan: TargetPlan, workload: str) -> float:
    """GPUs per replica as the plan prices them (0 when the plan places no replica)."""
    for pool in plan.pools:
        for placement in pool.placements:
            if placement.workload == workload:
                return placement.gpu_share
    return 0.0


def exporter(plan: TargetPlan, workload: str) -> str:
    fractional = any(p.sharing.mode == "fractional" for p in plan.pools if workload in p.workloads)
    return "hami" if fractional else "dcgm"


def uses_mig(plan: TargetPlan, workload: str) -> bool:
    return any(p.sharing.mode == "mig" for p in plan.pools if workload in p.workloads)


def observe(spec: Spec, plan: TargetPlan, source: Source, window: Window, floor_quantile: float) -> Observed:
    target = spec.target(plan.name)
    workloads = [spec.workload(n) for n in target.workloads]
    answers = _ask(plan, source, window, workloads)
    labelled = answers.pods.workloads()
    running = answers.pods.replicas(window.steps)
    by_name = {w.name: w for w in workloads}

    def min_steps(key: join.Key) -> int:
        known = by_name.get(key[1])
        seconds = known.idle.for_seconds if known is not None and known.idle else DEFAULT_IDLE_FOR
        return measure.min_idle_steps(seconds, window.step)

    idle = {k: answers.pods.idle_steps(v, min_steps) for k, v in answers.idle.items()}
    reserved = [p.name for p in plan.pools if p.reserved_nodes > 0]
    busy = join.busy_nodes(answers.nodes, answers.placed, answers.pods.serving(), reserved,
                           window.steps) if reserved else {}
    findings: list[Finding] = []
    reports = []
    for w in sorted(workloads, key=lambda w: w.name):
        key = (w.namespace, w.name)
        via = exporter(plan, w.name)
        reports.append(_workload(w, plan, window, floor_quantile, key in labelled, running.get(key),
                                 key in answers.present[via], answers.memory[via].get(key),
                                 idle.get((via, _below(w)), {}).get(key, 0), via, findings))
    pools = _pools(plan, window, join.pool_nodes(answers.nodes, window.steps), busy, findings)
    return Observed(tuple(reports), pools, tuple(findings))


@dataclasses.dataclass(frozen=True)
class _Answers:
    """What the queries answered, folded: the pods' runs, per exporter the workloads with utilisation series
    and their memory counts, per (exporter, threshold) the steps each utilisation series sat below it."""

    pods: join.Pods
    nodes: dict[join.Key, join.Runs]
    placed: dict[join.Key, join.Runs]
    present: dict[str, set[join.Key]]
    memory: dict[str, dict[join.Key, Counter[float]]]
    idle: dict[tuple[str, float], dict[join.Identity, array.array[int]]]


def _grouped(by_namespace: dict[str, list[str]], keep: set[str]) -> dict[str, list[str]]:
    """The workloads (namespace -> names) named in `keep`, namespaces left empty dropped."""
    chosen = {ns: [w for w in names if w in keep] for ns, names in by_namespace.items()}
    return {ns: names for ns, names in chosen.items() if names}


def _ask(plan: TargetPlan, source: Source, window: Window, workloads: list[Workload]) -> _Answers:
    """Every query of the target, independent ones side by side (Prometheus evaluates each on one core); the
    results are taken in a fixed order, so the report does not depend on which answer comes first."""
    step = f"{window.step}s"
    by_namespace: dict[str, list[str]] = {}
    for w in workloads:
        by_namespace.setdefault(w.namespace, []).append(w.name)
    pod = ("namespace", "pod", "uid")
    pool_names = [p.name for p in plan.pools]
    with concurrent.futures.ThreadPoolExecutor(QUERY_CONCURRENCY) as pool:
        labels_f = pool.submit(fetch.spans, source, functools.partial(queries.pod_labels, step, by_namespace), "pod",
                               window, (*pod, queries.WORKLOAD))
        running_f = pool.submit(fetch.spans, source, functools.partial(queries.pod_running, step, by_namespace), "pod",
                                window, pod)
        nodes_f = pool.submit(fetch.spans, source, functools.partial(queries.pool_nodes, step, pool_names), "node",
                              window, ("node", queries.POOL)) if pool_names else None
        placed_f = pool.submit(fetch.spans, source, functools.partial(queries.pod_placed, step, by_namespace), "pod",
                               window, (*pod, "node")) if any(p.reserved_nodes > 0 for p in plan.pools) else None
        own = functools.cache(lambda: _own(labels_f.result(), by_namespace))
        named = functools.cache(lambda: join.Pods(own(), {}))  # for memory, in its worker threads
        present_f, memory_f, idle_f = _ask_gpus(pool, plan, source, window, workloads, named)
        try:
            return _Answers(join.Pods(own(), running_f.result()),
                            nodes_f.result() if nodes_f else {}, placed_f.result() if placed_f else {},
                            {k: f.result() for k, f in present_f.items()}, {k: f.result() for k, f in memory_f.items()},
                            {k: f.result() for k, f in idle_f.items()})
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # the first failure is the answer: ask nothing more
            raise


def _own(labelled: dict[join.Key, join.Runs], by_namespace: dict[str, list[str]]) -> dict[join.Key, join.Runs]:
    """The `pod-labels` runs (namespace, pod, uid, workload) of pods labelled with a workload of their own
    namespace: the query asks for every workload name in every namespace of the target, in one selector."""
    mine = {(ns, name) for ns, names in by_namespace.items() for name in names}
    return {key: runs for key, runs in labelled.items() if (key[0], key[3]) in mine}


_GpuAnswers: TypeAlias = ("tuple[dict[str, Future[set[join.Key]]], dict[str, Future[dict[join.Key, Counter[float]]]], "
                          "dict[tuple[str, float], Future[dict[join.Identity, array.array[int]]]]]")


def _ask_gpus(pool: concurrent.futures.Executor, plan: TargetPlan, source: Source, window: Window,
              workloads: list[Workload], named: Callable[[], join.Pods]) -> _GpuAnswers:
    """Per exporter, the utilisation presence and memory queries, and per idle threshold the idle one."""
    step = f"{window.step}s"
    by_namespace: dict[str, list[str]] = {}
    for w in workloads:
        by_namespace.setdefault(w.namespace, []).append(w.name)
    by_name = {w.name: w for w in workloads}
    present_f, memory_f, idle_f = {}, {}, {}
    for name in sorted({exporter(plan, w.name) for w in workloads}):
        mine = _grouped(by_namespace, {w.name for w in workloads if exporter(plan, w.name) == name})
        present_f[name] = pool.submit(fetch.present, source,
                                      functools.partial(queries.utilisation_present, name, by_namespace=mine),
                                      window, ("namespace", queries.WORKLOAD))
        memory_f[name] = pool.submit(_memory, source, window, name, mine, named)
        for below in sorted({_below(by_name[w]) for names in mine.values() for w in names}):
            group = _grouped(mine, {w for w in by_name if _below(by_name[w]) == below})
            idle_f[(name, below)] = pool.submit(_idle_steps, source, window,
                                                queries.idle_samples(name, step, group, below))
    return present_f, memory_f, idle_f


def _idle_steps(source: Source, window: Window, parts: tuple[queries.Query, ...]) -> dict[join.Identity, array.array[int]]:
    """The idle steps of every part of an exporter's utilisation (`queries.IDLE_PARTS`): their series are disjoint."""
    out: dict[join.Identity, array.array[int]] = {}
    for part in parts:
        for identity, steps in fetch.steps_of(source, part, window).items():
            out.setdefault(identity, array.array("l")).extend(steps)
    return out


def _memory(source: Source, window: Window, via: str, mine: dict[str, list[str]], named: Callable[[], join.Pods]
            ) -> dict[join.Key, Counter[float]]:
    """Per (namespace, workload), how many memory samples held each value, chunk by chunk. A pod labelled with one
    workload in every step of a chunk is that workload's: per tile of steps (`queries.memory_tiles`), a tile
    whose values do not vary counts its steps at that value; the steps of the others, and of the pods labelled in
    only part of the chunk, are asked for one by one (`queries.memory_samples`), each of the latter given to the
    workload the pod is labelled with in its step, so every sample goes where its step's labels say."""
    step = f"{window.step}s"
    out: dict[join.Key, Counter[float]] = {}
    sent: dict[join.Key, Counter[str]] = {}  # the samples asked for one by one, as sent: made numbers at the end
    query: queries.Query | None = None
    for first, last in window.chunks(fetch.CHUNK_STEPS):
        tile = math.gcd(last - first, MEMORY_TILE_STEPS)  # equal tiles that cover the chunk
        counted, lows, highs = (fetch.tile_values(source, fold, window, first, last, tile) for fold in
                                queries.memory_tiles(via, step, f"{tile * window.step - window.step // 2}s", mine))
        pods = named()
        partly, varying = _count_even_tiles(counted, lows, highs, pods, first, last, out)
        asked = sorted({pod for _, pod in partly} | {dict(i).get("pod", "") for i in varying})
        if not asked:
            continue
        try:
            query = queries.memory_samples(via, step, mine, asked)
        except ValueError as exc:  # a pod name from the answer that is no Kubernetes name: never put into a query
            raise ReportError(f"query memory-{via}: pod {exc}") from None
        for labels, indexes, texts in fetch.chunk_series(source, query, window, first, last):
            name = (labels.get("namespace", ""), labels.get("pod", ""))
            spans: list[tuple[join.Key, join.Run]]
            if name in partly:  # each step's sample to each workload the pod is labelled with in that step
                spans = [((name[0], owner), run) for owner, runs in pods.workload_runs(name).items() for run in runs]
            elif (held := varying.get(fetch.series_identity(labels))) is not None:  # the tiles that vary
                spans = [(held[0], (first + k * tile, first + (k + 1) * tile)) for k in sorted(held[1])]
            else:
                continue
            for key, (begin, end) in spans:
                chosen = texts[bisect.bisect_left(indexes, begin):bisect.bisect_left(indexes, end)]
                if chosen:
                    sent.setdefault(key, Counter()).update(chosen)
    for key, texts_sent in sent.items():
        assert query is not None  # samples were sent, so asked for
        out.setdefault(key, Counter()).update(fetch.numbers(texts_sent, query))
    return out


_Tiles: TypeAlias = "dict[join.Identity, dict[int, float]]"  # per series, a number per tile of the chunk


def _count_even_tiles(counted: _Tiles, lows: _Tiles, highs: _Tiles, pods: join.Pods, first: int, last: int,
                      out: dict[join.Key, Counter[float]]
                      ) -> tuple[set[join.Key], dict[join.Identity, tuple[join.Key, set[int]]]]:
    """Adds to `out` the steps of every tile whose least value is its most, of a pod labelled with one workload in
    the whole chunk; returns the (namespace, pod) of the pods labelled in only part of it, and per series of the
    others its workload and the tiles whose values vary: both asked for their samples."""
    partly: set[join.Key] = set()
    varying: dict[join.Identity, tuple[join.Key, set[int]]] = {}
    for identity, counts in counted.items():
        labels = dict(identity)
        name = (labels.get("namespace", ""), labels.get("pod", ""))
        owner = pods.sole_workload(name, first, last)
        if owner is None:
            if pods.named_in(name, first, last):
                partly.add(name)
            continue
        low, high = lows.get(identity, {}), highs.get(identity, {})
        for k, n in counts.items():
            if k in low and low[k] == high.get(k):
                out.setdefault((name[0], owner), Counter())[low[k]] += int(n)
            else:
                varying.setdefault(identity, ((name[0], owner), set()))[1].add(k)
    return partly, varying


def _below(workload: Workload) -> float:
    return workload.idle.below_percent if workload.idle else DEFAULT_IDLE_BELOW


def _workload(w: Workload, plan: TargetPlan, window: Window, floor_quantile: float,
              labelled: bool, running: array.array[float] | None, present: bool, memory: Counter[float] | None,
              idle_steps: int, via: str, findings: list[Finding]) -> WorkloadReport:
    gpus_per_replica = share(plan, w.name)
    empty = WorkloadReport(w.name, w.namespace, w.kind, None, w.replicas.min, w.replicas.max, gpus_per_replica,
                           None, None, None, None)
    if not labelled:
        findings.append(Finding("missing-series", f"no kube_pod_labels series with label_gpustack_dev_workload="
                                f"{w.name} in namespace {w.namespace} in the window: no figure for this workload. "
                                f"Run {KSM_PODS}, and label its pods gpustack.dev/workload={w.name}", workload=w.name))
        return empty
    # Counts of runs are whole numbers (gpustack/report/join.py `counts`); no runs at all is no pod in any step.
    counts = list(map(int, running)) if running is not None else [0] * window.steps
    stats = measure.replica_stats(counts, floor_quantile)
    gpu_hours = measure.gpu_hours(counts, gpus_per_replica, window.step_hours)
    outside = None
    if w.schedule is not None:
        steps = measure.outside_steps(w.schedule, w.schedule.timezone, window)
        outside = measure.outside_window_hours(counts, steps, gpus_per_replica, window.step_hours)
        if outside > 0:
            findings.append(Finding("outside-window", f"ran {outside:,.2f} GPU-hours outside its schedule "
                                    f"({w.schedule.days} {w.schedule.hours} {w.schedule.timezone}): its auto-stop did "
                                    "not stop it", workload=w.name))
    idle_hours = fb = None
    if not present:
        findings.append(Finding("missing-series", _missing_utilisation(w, plan, via), workload=w.name))
    else:
        whole = gpus_per_replica >= 1 and not w.fractional  # a series is one GPU; a shared one, the share
        idle_hours = idle_steps * (1.0 if whole else gpus_per_replica) * window.step_hours
    if memory:
        value = measure.nearest_rank(memory, 0.95)
        fb = None if value is None else value / MIB_PER_GIB
    if fb is None:
        metric = "hami_vgpu_memory_used_bytes (HAMi vGPU monitor)" if via == "hami" else \
            "DCGM_FI_DEV_FB_USED (DCGM exporter default counter)"
        findings.append(Finding("missing-series", f"no {metric} series for the pods of {w.name}: no GPU memory "
                                "figure, so no smaller size is recommended"
                                + ("" if via == "hami" else " (the exporter maps pods with --kubernetes)"), workload=w.name))
    if w.kind == "inference" and stats.floor < w.replicas.min:
        findings.append(Finding("floor-unused", f"the plan reserves a floor of {w.replicas.min} replicas; "
                                f"{stats.floor} ran in {floor_quantile:.0%} of the window's steps", workload=w.name))
    if w.replicas.min > stats.max:
        findings.append(Finding("floor-above-measured", f"replicas.min is {w.replicas.min}, more than ever ran "
                                f"(at most {stats.max})", workload=w.name))
    if idle_hours is not None and gpu_hours > 0 and idle_hours >= 0.5 * gpu_hours:
        findings.append(Finding("mostly-idle", f"{idle_hours:,.2f} of its {gpu_hours:,.2f} GPU-hours were idle "
                                f"(below {_below(w):g}% for at least "
                                f"{(w.idle.for_seconds if w.idle else DEFAULT_IDLE_FOR) // 60} minutes)",
                                workload=w.name))
    return dataclasses.replace(empty, replicas=stats, gpu_hours=gpu_hours, idle_gpu_hours=idle_hours,
                               outside_window_gpu_hours=outside, fb_used_p95_gib=fb)


def _missing_utilisation(w: Workload, plan: TargetPlan, via: str) -> str:
    if via == "hami":
        return (f"no hami_container_device_utilization_ratio series for the pods of {w.name}: idle GPU-hours "
                "unknown. Scrape HAMi's vGPU monitor (hami-device-plugin's monitor port) with Prometheus")
    if uses_mig(plan, w.name):
        return (f"no DCGM_FI_PROF_GR_ENGINE_ACTIVE series with GPU_I_ID for the MIG instances of {w.name}: idle "
                "GPU-hours unknown. It is a default counter from dcgm-exporter 4.0.0; on older exporters add it to "
                "the counters CSV, --collectors FILE (GPU Operator: dcgmExporter.config.name, see docs/report.md)")
    return (f"no DCGM_FI_DEV_GPU_UTIL series with the namespace and pod of {w.name}'s pods: idle GPU-hours "
            "unknown. Run the DCGM exporter with pod mapping, --kubernetes (DCGM_EXPORTER_KUBERNETES=true; the GPU "
            "Operator's default), scraped with honorLabels: true")


def _pools(plan: TargetPlan, window: Window, nodes: dict[join.Key, array.array[float]],
           busy: dict[join.Key, array.array[float]], findings: list[Finding]) -> tuple[PoolReport, ...]:
    any_nodes = bool(nodes)
    out = []
    for pool in sorted(plan.pools, key=lambda p: p.name):
        series = nodes.get((pool.name,))
        planned = pool.monthly_cost_usd * window.hours / HOURS_PER_MONTH
        node_hours: float | None
        if series is None and (pool.min_nodes > 0 or not any_nodes):
            node_hours = None
            findings.append(Finding("missing-series", f"no kube_node_labels series with label_gpustack_dev_pool="
                                    f"{pool.name} in the window, though the plan keeps at least {pool.min_nodes} "
                                    f"node(s): no figure for this pool. Run {KSM_NODES}" if pool.min_nodes else
                                    f"no kube_node_labels series with label_gpustack_dev_pool for any pool of the "
                                    f"target: no figure for this pool. Run {KSM_NODES}", pool=pool.name))
        else:
            node_hours = measure.node_hours(series or (), window.step_hours)
            _scaling(pool, series, findings)
        used = None
        if pool.reserved_nodes > 0 and node_hours is not None:
            used = measure.node_hours(busy.get((pool.name,), ()), window.step_hours)
        cost = None if node_hours is None else node_hours * pool.price.usd_per_node_hour
        if cost is not None and planned > 0 and cost > planned * 1.1:
            findings.append(Finding("cost-over-plan", f"cost ${cost:,.2f} in the window, {cost / planned - 1:.0%} more "
                                    f"than the plan's ${planned:,.2f} for as long", pool=pool.name))
        out.append(PoolReport(pool.name, pool.capacity, pool.min_nodes, pool.max_nodes,
                              pool.price.usd_per_node_hour, node_hours, cost, planned, used))
    return tuple(out)


def _scaling(pool: Pool, series: array.array[float] | None, findings: list[Finding]) -> None:
    if series is None or pool.max_nodes <= pool.min_nodes:
        return
    fewest = min(0 if v != v else round(v) for v in series)
    if fewest > pool.min_nodes:
        findings.append(Finding("never-scaled-in", f"never ran fewer than {fewest} node(s) in the window; the plan "
                                f"scales it down to {pool.min_nodes}", pool=pool.name))
