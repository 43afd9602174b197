"""The measurements, as pure functions over per-step values (the definitions of docs/report.md).

A step's value is a float, or NaN where the series has no sample in that step. Percentiles are
nearest-rank: sort ascending, take the value at index ceil(q * N) - 1.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import math
import zoneinfo
from collections.abc import Iterable, Mapping, Sequence

from gpustack.schedules import WEEK, Window as Schedule
from gpustack.schedules import window_intervals
from gpustack.report.window import Window

_EPSILON = 1e-9


@dataclasses.dataclass(frozen=True)
class ReplicaStats:
    min: int
    p50: int
    p95: int
    max: int
    floor: int


def rank(count: int, quantile: float) -> int:
    """The 0-based nearest-rank index of `quantile` among `count` sorted values."""
    return max(0, math.ceil(quantile * count - _EPSILON) - 1)


def replica_stats(replicas: Sequence[int], floor_quantile: float) -> ReplicaStats:
    """min, p50, p95, max of the running replicas per step, and the floor: the largest n such that at least
    `floor_quantile` of the steps ran n or more (the ceil(q N)-th largest count)."""
    ordered = sorted(replicas)
    if not ordered:
        return ReplicaStats(0, 0, 0, 0, 0)
    count = len(ordered)
    needed = max(1, math.ceil(floor_quantile * count - _EPSILON))
    return ReplicaStats(ordered[0], ordered[rank(count, 0.5)], ordered[rank(count, 0.95)], ordered[-1],
                        ordered[count - needed])


def gpu_hours(replicas: Sequence[int], share: float, step_hours: float) -> float:
    return sum(replicas) * share * step_hours


class IdleRuns:
    """The idle steps of one utilisation series, fed in ascending order (chunk after chunk): each maximal run
    of consecutive steps at least `min_steps` long counts whole; a missing step breaks a run."""

    def __init__(self, min_steps: int):
        self.min_steps = min_steps
        self.counted = 0
        self.run = 0
        self.previous = -2

    def add(self, step: int) -> None:
        if step == self.previous + 1:
            self.run += 1
        else:
            self.close()
            self.run = 1
        self.previous = step

    def close(self) -> None:
        if self.run >= self.min_steps:
            self.counted += self.run
        self.run = 0

    def total(self) -> int:
        self.close()
        return self.counted


def idle_hours(idle_steps: Iterable[Sequence[int]], weight: float, min_steps: int, step_hours: float) -> float:
    """Per utilisation series, the sorted steps in which it sampled below the threshold while its pod ran;
    the steps of its runs at least `min_steps` long, x weight x step hours."""
    return idle_step_count(idle_steps, min_steps) * weight * step_hours


def idle_step_count(idle_steps: Iterable[Sequence[int]], min_steps: int) -> int:
    total = 0
    for steps in idle_steps:
        runs = IdleRuns(min_steps)
        for step in steps:
            runs.add(step)
        total += runs.total()
    return total


def min_idle_steps(for_seconds: int, step_seconds: int) -> int:
    """Steps a run must last to be at least `for_seconds` long."""
    return max(1, math.ceil(for_seconds / step_seconds - _EPSILON))


def outside_steps(schedule: Schedule, timezone: str, window: Window) -> Sequence[bool]:
    """Per step, whether its start lies outside the schedule's window (days and hours in its time zone)."""
    return _outside_steps(tuple(window_intervals(schedule)), timezone, window)


@functools.lru_cache(maxsize=64)
def _outside_steps(intervals: tuple[tuple[int, int], ...], timezone: str, window: Window) -> tuple[bool, ...]:
    """`outside_steps` of the intervals (minutes of the week), once per schedule: workloads sharing one (a team's
    notebooks) share the answer."""
    if not intervals:
        return (False,) * window.steps
    inside = [any(start <= m < end for start, end in intervals for m in (minute, minute + WEEK, minute - WEEK))
              for minute in range(WEEK)]  # per minute of the week
    zone = zoneinfo.ZoneInfo(timezone)
    out = []
    for index in range(window.steps):
        moment = datetime.datetime.fromtimestamp(window.start + index * window.step, zone)
        out.append(not inside[moment.weekday() * 1440 + moment.hour * 60 + moment.minute])
    return tuple(out)


def outside_window_hours(replicas: Sequence[int], outside: Sequence[bool], share: float, step_hours: float) -> float:
    return sum(r for r, out in zip(replicas, outside, strict=True) if out) * share * step_hours


def nearest_rank(histogram: Mapping[float, int], quantile: float) -> float | None:
    """The nearest-rank percentile of a multiset given as value -> count; None when empty."""
    count = sum(histogram.values())
    if count == 0:
        return None
    wanted = rank(count, quantile)
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen > wanted:
            return value
    raise AssertionError("unreachable")  # pragma: no cover


def node_hours(nodes: Sequence[float], step_hours: float) -> float:
    return sum(n for n in nodes if n == n) * step_hours
