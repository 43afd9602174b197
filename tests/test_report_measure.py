"""The report's definitions on hand-made per-step values (docs/report.md "Definitions")."""

from __future__ import annotations

import datetime

import pytest

from gpustack.report import measure
from gpustack.report.window import Window
from gpustack.spec.model import Schedule


def test_floor_is_the_count_run_in_at_least_the_quantile_of_steps() -> None:
    # 100 steps: 4 replicas in 90 of them, 2 in 10: at q=0.95 the floor is 2 (4 ran in only 90%), at 0.9 it is 4.
    replicas = [4] * 90 + [2] * 10
    assert measure.replica_stats(replicas, 0.95).floor == 2
    assert measure.replica_stats(replicas, 0.90).floor == 4
    stats = measure.replica_stats(replicas, 0.95)
    assert (stats.min, stats.p50, stats.p95, stats.max) == (2, 4, 4, 4)


def test_nearest_rank_percentiles() -> None:
    stats = measure.replica_stats(list(range(1, 21)), 0.95)  # 1..20: p50 index 9 -> 10, p95 index 18 -> 19
    assert (stats.p50, stats.p95) == (10, 19)
    assert measure.replica_stats([0, 0, 0], 0.95) == measure.ReplicaStats(0, 0, 0, 0, 0)


def test_gpu_hours_weight_replicas_by_their_share() -> None:
    assert measure.gpu_hours([2, 2, 4], 0.25, 1 / 60) == pytest.approx(8 * 0.25 / 60)


def test_idle_runs_count_whole_when_long_enough_and_a_gap_breaks_them() -> None:
    # 15-minute rule at 1-minute steps: a run of 15 counts 15 steps, one of 14 counts nothing; a missing
    # step (20) splits 16..24 into runs of 4 and 4.
    series = [list(range(15)), list(range(100, 114)), [16, 17, 18, 19, 21, 22, 23, 24]]
    minimum = measure.min_idle_steps(15 * 60, 60)
    assert minimum == 15
    assert measure.idle_hours(series, 1.0, minimum, 1 / 60) == pytest.approx(15 / 60)
    assert measure.idle_hours([list(range(30))], 0.5, minimum, 1 / 60) == pytest.approx(30 * 0.5 / 60)


def test_idle_minimum_rounds_up_to_whole_steps() -> None:
    assert measure.min_idle_steps(15 * 60, 3600) == 1
    assert measure.min_idle_steps(20 * 60, 7 * 60) == 3


def _office_hours(zone: str) -> Schedule:
    return Schedule("Mon-Fri", "08:00-18:00", zone, (0, 1, 2, 3, 4), 8 * 60, 18 * 60)


def test_outside_window_follows_the_schedules_time_zone() -> None:
    # Monday 2026-11-30, hourly steps from 00:00 UTC: Berlin (UTC+1) is inside 08:00-18:00 from 07:00 to 17:00 UTC.
    start = int(datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC).timestamp())
    window = Window(start, start + 24 * 3600, 3600)
    outside = measure.outside_steps(_office_hours("Europe/Berlin"), "Europe/Berlin", window)
    assert [i for i, out in enumerate(outside) if not out] == list(range(7, 17))
    assert measure.outside_window_hours([2] * 24, outside, 0.25, 1.0) == pytest.approx(14 * 2 * 0.25)


def test_outside_window_on_a_weekend_is_all_of_it() -> None:
    start = int(datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC).timestamp())  # a Sunday
    window = Window(start, start + 24 * 3600, 600)
    assert all(measure.outside_steps(_office_hours("UTC"), "UTC", window))


def test_a_window_open_all_week_has_no_outside() -> None:
    always = Schedule("Mon-Sun", "00:00-24:00", "UTC", tuple(range(7)), 0, 1440)
    window = Window(0, 7 * 86400, 3600)
    assert not any(measure.outside_steps(always, "UTC", window))


def test_memory_percentile_over_every_sample() -> None:
    # 19 samples at 1000 MiB and one at 9000: p95 is the 19th value, 1000.
    assert measure.nearest_rank({1000.0: 19, 9000.0: 1}, 0.95) == 1000.0
    assert measure.nearest_rank({1000.0: 18, 9000.0: 2}, 0.95) == 9000.0
    assert measure.nearest_rank({}, 0.95) is None


def test_node_hours_skip_steps_without_a_sample() -> None:
    assert measure.node_hours([1.0, float("nan"), 3.0], 0.5) == 2.0


def test_chunks_stay_within_prometheus_points_limit() -> None:
    window = Window(0, 30 * 86400, 60)  # 43,200 steps
    chunks = window.chunks()
    assert chunks[0] == (0, 11_000) and chunks[-1] == (33_000, 43_200)
    assert all(last - first <= 11_000 for first, last in chunks)
    assert sum(last - first for first, last in chunks) == 43_200
