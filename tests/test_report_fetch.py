"""Answers folded across query chunks: long windows are asked for in pieces Prometheus accepts."""

from __future__ import annotations

import functools
from collections import Counter

import pytest
from report_answers import NamedAnswers, series

from gpustack.report import fetch, join, observe, queries
from gpustack.report.queries import Query
from gpustack.report.window import Window

WINDOW = Window(0, 3_000 * 60, 60)  # 3,000 steps: chunks of a day (1,440), 1,440 and 120


@pytest.fixture(autouse=True)
def day_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests cut their window in chunks of a day, whatever the report's own chunk length."""
    monkeypatch.setattr(fetch, "CHUNK_STEPS", 1_440)


class Asked(NamedAnswers):
    def __init__(self, answers: dict[str, list[dict[str, object]]]):
        super().__init__(answers)
        self.asked: list[tuple[str, int, int]] = []
        self.steps: list[int] = []

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> list[dict[str, object]]:
        self.asked.append((query, start, end))
        self.steps.append(step)
        return super().range_query(name, query, start, end, step)


def test_steps_cover_every_chunk() -> None:
    source = Asked({"q": [series({"w": "a"}, {0: 1, 1_439: 2, 1_440: 3, 2_999: 4}, 0, 60)]})
    assert list(fetch.steps_of(source, Query("q", "x", ""), WINDOW)[(("w", "a"),)]) == [0, 1_439, 1_440, 2_999]
    assert [(s, e) for _, s, e in source.asked] == [(60, 86_400), (86_460, 172_800), (172_860, 180_000)]


def test_spans_are_runs_across_chunks_and_a_missed_scrape_breaks_one() -> None:
    steps = [s for s in range(1_400, 1_600) if s != 1_550]  # across the first day boundary, one scrape missed
    source = Asked({"pod-running": [series({"namespace": "default", "pod": "chat-a", "uid": "u"},
                                           dict.fromkeys(steps, 1), 0, 60)]})
    ask = functools.partial(queries.pod_running, "60s", {"default": ["chat"]})
    runs = fetch.spans(source, ask, "pod", WINDOW, ("pod",))
    assert runs == {("chat-a",): [(1_400, 1_550), (1_551, 1_600)]}
    # Per chunk, the steps each series holds; in the two chunks where it came or went, whether it holds the chunk's
    # first and last step, by name, then the first step where it came (the first chunk) and the last where it went
    # (the second); every step only in the second, where a missed scrape leaves a gap.
    per_step = [(s, e) for (q, s, e), step in zip(source.asked, source.steps, strict=True) if s != e and step == 60]
    assert per_step == [(86_460, 172_800)]
    edges = [(s, e) for (q, s, e), step in zip(source.asked, source.steps, strict=True) if step == e - s > 60]
    assert edges == [(60, 86_400), (86_460, 172_800)]
    assert sum(q.startswith("count_over_time") for q, _, _ in source.asked) == 3
    assert [q.split("(")[0] for q, _, _ in source.asked if q.startswith(("min_over_time", "max_over_time"))] == [
        "min_over_time", "max_over_time"]
    assert sum('pod=~"chat-a"' in q for q, _, _ in source.asked) == 5  # edges in two chunks, a bound each, steps once


def test_a_series_present_all_chunk_long_is_one_run_without_its_steps() -> None:
    always = {"namespace": "ns", "pod": "p", "uid": "u", queries.WORKLOAD: "a"}
    later = {"namespace": "ns", "pod": "q", "uid": "v", queries.WORKLOAD: "a"}
    source = Asked({"pod-labels": [series(always, dict.fromkeys(range(3_000), 1), 0, 60),
                                   series(later, dict.fromkeys(range(2_900, 3_000), 1), 0, 60)]})
    runs = fetch.spans(source, functools.partial(queries.pod_labels, "60s", {"ns": ["a"]}), "pod", WINDOW, ("pod",))
    assert runs == {("p",): [(0, 3_000)], ("q",): [(2_900, 3_000)]}
    # No series asked for at every step: one point per series and chunk, two for the edges of the one that came.
    assert all(s == e or step == e - s for (_, s, e), step in zip(source.asked, source.steps, strict=True))
    named = [q for q, _, _ in source.asked if "pod=~" in q]
    # In the last chunk, whether it holds the chunk's edges (the last only), then its first step.
    assert len(named) == 2 and all('pod=~"q"' in q for q in named) and named[1].startswith("min_over_time")


def test_memory_tiles_that_do_not_vary_are_counted_without_their_samples() -> None:
    # "a" holds 512 MiB all window but for one step of the second chunk at 600; "b" runs from step 100 and varies
    # each step: its first chunk is labelled only in part, its others are its own, their every tile varying.
    a = {s: (600 if s == 2_000 else 512) for s in range(3_000)}
    b = {s: 1_000 + s % 7 for s in range(100, 3_000)}
    source = Asked({"memory-dcgm-steps": [series({"namespace": "ns", "pod": "a", "gpu": "0"}, a, 0, 60),
                                          series({"namespace": "ns", "pod": "b", "gpu": "0"}, b, 0, 60)]})
    pods = join.Pods({("ns", "a", "u1", "chat"): [(0, 3_000)], ("ns", "b", "u2", "chat"): [(100, 3_000)]}, {})
    counts = observe._memory(source, WINDOW, "dcgm", {"ns": ["chat"]}, lambda: pods)
    expected = Counter(a.values()) + Counter(b.values())
    assert counts == {("ns", "chat"): expected}
    # Per chunk, the tiles' count, least and most (a tile an hour: 24 points per series, 2 in the last chunk);
    # the samples of a pod only where it was labelled in part (b, first chunk) or a tile of it varies.
    per_step = [(q, s, e) for (q, s, e), step in zip(source.asked, source.steps, strict=True) if step == 60]
    assert [(s, e) for _, s, e in per_step] == [(60, 86_400), (86_460, 172_800), (172_860, 180_000)]
    assert ['pod=~"b"' in q for q, _, _ in per_step] == [True, False, True]  # the second: a and b
    tiles = [(q.split("(")[0], s, e, step) for (q, s, e), step in zip(source.asked, source.steps, strict=True)
             if step != 60]
    assert tiles[:3] == [("count_over_time", 3_600, 86_400, 3_600), ("min_over_time", 3_600, 86_400, 3_600),
                         ("max_over_time", 3_600, 86_400, 3_600)]
    assert tiles[-1] == ("max_over_time", 176_400, 180_000, 3_600)
    assert all(q.endswith("[3570s:60s])") for (q, _, _), step in zip(source.asked, source.steps, strict=True)
               if step != 60)


def test_idle_runs_continue_across_chunks() -> None:
    # A run of 20 steps across the day boundary of per-series chunks (1,440 steps) counts whole, while its pod
    # runs labelled with the workload.
    source = Asked({"i": [series({"namespace": "ns", "pod": "p", "gpu": "0"}, dict.fromkeys(range(1_430, 1_450), 1),
                                 0, 60)]})
    idle = fetch.steps_of(source, Query("i", "x", ""), WINDOW)
    assert len(source.asked) == 3
    pods = join.Pods({("ns", "p", "u", "a"): [(0, 3_000)]}, {("ns", "p", "u"): [(0, 3_000)]})
    assert pods.idle_steps(idle, lambda key: 15) == {("ns", "a"): 20}
    # Not counted while the pod is not Running: the run is cut to 10 steps, too short.
    stopped = join.Pods({("ns", "p", "u", "a"): [(0, 3_000)]}, {("ns", "p", "u"): [(0, 1_440)]})
    assert stopped.idle_steps(idle, lambda key: 15) == {("ns", "a"): 0}


def test_a_pod_labelled_all_chunk_long_owns_its_memory_and_one_labelled_part_of_it_does_not() -> None:
    pods = join.Pods({("ns", "a", "u1", "chat"): [(0, 3_000)], ("ns", "b", "u2", "chat"): [(100, 3_000)],
                      ("ns", "c", "u3", "chat"): [(0, 1_440)], ("ns", "c", "u4", "embed"): [(1_440, 3_000)]}, {})
    assert pods.sole_workload(("ns", "a"), 0, 1_440) == "chat"
    assert pods.sole_workload(("ns", "b"), 0, 1_440) is None and pods.named_in(("ns", "b"), 0, 1_440)
    assert pods.sole_workload(("ns", "c"), 0, 1_440) == "chat"  # the name's next owner starts in the next chunk
    assert pods.sole_workload(("ns", "c"), 1_440, 2_880) == "embed"
    assert pods.sole_workload(("ns", "c"), 1_000, 2_000) is None  # two workloads' pods had the name in it
    assert not pods.named_in(("ns", "z"), 0, 1_440)
