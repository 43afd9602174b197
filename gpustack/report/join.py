"""Runs of steps and the joins the report makes itself: which pods ran for which workload, on which nodes.

A run is a half-open range of step indexes [first, end). The server answers each pod's and node's series as
runs (gpustack/report/queries.py `Spans`), so joining them here costs a few operations per run, where
Prometheus would join every series at every step.
"""

from __future__ import annotations

import array
import bisect
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence

from gpustack.report.measure import IdleRuns

Run = tuple[int, int]
Runs = list[Run]
Key = tuple[str, ...]
Identity = tuple[tuple[str, str], ...]  # a series' labels, sorted


def merge(runs: Iterable[Run]) -> Runs:
    """The union of runs, sorted, overlapping and touching runs made one."""
    out: Runs = []
    for first, end in sorted(runs):
        if out and first <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((first, end))
    return out


def runs_of(steps: Iterable[int]) -> Runs:
    """The runs of consecutive steps among ascending step indexes."""
    out: Runs = []
    for step in steps:
        if out and step == out[-1][1]:
            out[-1] = (out[-1][0], step + 1)
        elif not out or step > out[-1][1]:
            out.append((step, step + 1))
    return out


def intersect(left: Sequence[Run], right: Sequence[Run]) -> Runs:
    """The steps in both (each side sorted and disjoint)."""
    out: Runs = []
    i = j = 0
    while i < len(left) and j < len(right):
        first, end = max(left[i][0], right[j][0]), min(left[i][1], right[j][1])
        if first < end:
            out.append((first, end))
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return out


def contains(runs: Sequence[Run], step: int) -> bool:
    at = bisect.bisect_left(runs, (step + 1, -1)) - 1  # the last run starting at or before the step
    return at >= 0 and runs[at][0] <= step < runs[at][1]


def counts(runs: Iterable[Sequence[Run]], steps: int) -> array.array[float]:
    """Per step, how many of the run lists hold it."""
    change = [0] * (steps + 1)
    for listed in runs:
        for first, end in listed:
            change[first] += 1
            change[end] -= 1
    return array.array("d", itertools.accumulate(change[:steps]))


class Pods:
    """The workloads' pods: `labelled` (namespace, pod, uid, workload) -> runs of their kube_pod_labels series,
    `running` (namespace, pod, uid) -> runs in which their phase was Running (every pod of the namespaces)."""

    def __init__(self, labelled: Mapping[Key, Runs], running: Mapping[Key, Runs]):
        self.labelled = labelled
        self.running = running
        self._running_by_name: dict[Key, list[Run]] = {}
        self._workloads_by_name: dict[Key, dict[str, list[Run]]] = {}
        for (namespace, pod, _), runs in running.items():
            self._running_by_name.setdefault((namespace, pod), []).extend(runs)
        for (namespace, pod, _, workload), runs in labelled.items():
            self._workloads_by_name.setdefault((namespace, pod), {}).setdefault(workload, []).extend(runs)
        self._running_by_name = {k: merge(v) for k, v in self._running_by_name.items()}
        self._workloads_by_name = {k: {w: merge(r) for w, r in v.items()} for k, v in self._workloads_by_name.items()}

    def sole_workload(self, name: Key, first: int, last: int) -> str | None:
        """The workload a pod of this (namespace, pod) name is labelled with in every step first..last - 1, when
        no other workload's pod has the name in them; None otherwise."""
        owners = [(w, runs) for w, runs in self._workloads_by_name.get(name, {}).items()
                  if intersect(runs, [(first, last)])]
        if len(owners) == 1 and intersect(owners[0][1], [(first, last)]) == [(first, last)]:
            return owners[0][0]
        return None

    def named_in(self, name: Key, first: int, last: int) -> bool:
        """Whether a pod of this name is labelled with a workload in some step first..last - 1."""
        return any(intersect(runs, [(first, last)]) for runs in self._workloads_by_name.get(name, {}).values())

    def workload_runs(self, name: Key) -> dict[str, Runs]:
        """Per workload, the runs in which a pod of this (namespace, pod) name is labelled with it."""
        return self._workloads_by_name.get(name, {})

    def workloads(self) -> set[Key]:
        """(namespace, workload) of every workload with a labelled pod."""
        return {(namespace, workload) for namespace, _, _, workload in self.labelled}

    def replicas(self, steps: int) -> dict[Key, array.array[float]]:
        """Per (namespace, workload), its pods labelled and Running in each step."""
        ran: dict[Key, list[Runs]] = {}
        for (namespace, pod, uid, workload), runs in self.labelled.items():
            ran.setdefault((namespace, workload), []).append(intersect(runs, self.running.get((namespace, pod, uid), [])))
        return {key: counts(lists, steps) for key, lists in ran.items()}

    def serving(self) -> dict[Key, Runs]:
        """(namespace, pod, uid) -> the steps in which the pod ran labelled with one of the workloads."""
        labelled: dict[Key, list[Run]] = {}
        for (namespace, pod, uid, _), runs in self.labelled.items():
            labelled.setdefault((namespace, pod, uid), []).extend(runs)
        return {key: intersect(merge(runs), self.running.get(key, [])) for key, runs in labelled.items()}

    def idle_steps(self, series: Mapping[Identity, Sequence[int]], min_steps: Callable[[Key], int]) -> dict[Key, int]:
        """Per (namespace, workload), the idle steps counted over utilisation series: `series` maps each series
        (its labels' items, namespace and pod among them) to its ascending steps below the threshold. A step
        counts while a pod of that name runs and is labelled with the workload; runs of at least
        `min_steps(key)` steps count whole."""
        out: dict[Key, int] = {}
        for identity, steps in series.items():
            labels = dict(identity)
            name = (labels.get("namespace", ""), labels.get("pod", ""))
            running = self._running_by_name.get(name, [])
            for workload, runs in self._workloads_by_name.get(name, {}).items():
                key = (name[0], workload)
                counter = IdleRuns(min_steps(key))
                for step in steps:
                    if contains(running, step) and contains(runs, step):
                        counter.add(step)
                out[key] = out.get(key, 0) + counter.total()
        return out


def pool_nodes(nodes: Mapping[Key, Runs], steps: int) -> dict[Key, array.array[float]]:
    """Per (pool,), its nodes in each step: `nodes` (node, pool) -> runs labelled with the pool."""
    by_pool: dict[Key, list[Runs]] = {}
    for (_, pool), runs in nodes.items():
        by_pool.setdefault((pool,), []).append(runs)
    return {key: counts(lists, steps) for key, lists in by_pool.items()}


def busy_nodes(nodes: Mapping[Key, Runs], placed: Mapping[Key, Runs], serving: Mapping[Key, Runs],
               pools: Iterable[str], steps: int) -> dict[Key, array.array[float]]:
    """Per (pool,) of `pools`, its nodes that ran at least one serving pod in each step: `nodes` (node, pool) ->
    runs labelled with the pool, `placed` (namespace, pod, uid, node) -> runs placed there."""
    on_node: dict[str, list[Run]] = {}
    for (namespace, pod, uid, node), runs in placed.items():
        on_node.setdefault(node, []).extend(intersect(runs, serving.get((namespace, pod, uid), [])))
    wanted = set(pools)
    busy: dict[Key, list[Runs]] = {}
    for (node, pool), runs in nodes.items():
        if pool in wanted:
            busy.setdefault((pool,), []).append(intersect(runs, merge(on_node.get(node, []))))
    return {key: counts(lists, steps) for key, lists in busy.items() if any(lists)}
