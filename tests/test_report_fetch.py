"""Answers folded across query chunks: long windows are asked for in pieces Prometheus accepts."""

from __future__ import annotations

from report_answers import NamedAnswers, series

from gpustack.report import fetch, join, queries
from gpustack.report.queries import Query
from gpustack.report.window import Window

WINDOW = Window(0, 3_000 * 60, 60)  # 3,000 steps: chunks of a day (1,440), 1,440 and 120


class Asked(NamedAnswers):
    def __init__(self, answers: dict[str, list[dict[str, object]]]):
        super().__init__(answers)
        self.asked: list[tuple[str, int, int]] = []

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> list[dict[str, object]]:
        self.asked.append((query, start, end))
        return super().range_query(name, query, start, end, step)


def test_steps_cover_every_chunk() -> None:
    source = Asked({"q": [series({"w": "a"}, {0: 1, 1_439: 2, 1_440: 3, 2_999: 4}, 0, 60)]})
    assert list(fetch.steps_of(source, Query("q", "x", ""), WINDOW)[(("w", "a"),)]) == [0, 1_439, 1_440, 2_999]
    assert [(s, e) for _, s, e in source.asked] == [(60, 86_400), (86_460, 172_800), (172_860, 180_000)]


def _stats(labels: dict[str, str], at: int, steps: int, first: int, last: int) -> list[dict[str, object]]:
    """A span answer at `at`: the steps with a value and the ends of the first and last of them."""
    return [{"metric": {**labels, queries.SPAN_STAT: tag}, "values": [[at, str(value)]]}
            for tag, value in (("steps", steps), ("first", (first + 1) * 60), ("last", (last + 1) * 60))]


class Spanned(Asked):
    """Span statistics per chunk end, and the per-step answer for the narrowed query."""

    def __init__(self, stats: list[dict[str, object]], steps: list[dict[str, object]]):
        super().__init__({})
        self.stats, self.steps = stats, steps

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> list[dict[str, object]]:
        self.asked.append((query, start, end))
        chosen = self.steps if name.endswith("-steps") else [s for s in self.stats if s["values"][0][0] == end]
        return [{"metric": s["metric"], "values": [v for v in s["values"] if start <= v[0] <= end]} for s in chosen]


def test_spans_are_runs_and_a_series_with_a_gap_is_asked_again_at_every_step() -> None:
    family = queries.pod_running("60s", {"default": ["chat"]})
    whole = {"namespace": "default", "pod": "chat-a", "uid": "uid-a"}
    gap = {"namespace": "default", "pod": "chat-b", "uid": "uid-b"}
    day = 86_400
    steps = [s for s in range(1_500, 1_600) if s != 1_550]  # a missed scrape in the second chunk
    source = Spanned(_stats(whole, day, 1_440, 0, 1_439) + _stats(whole, 2 * day, 1_000, 1_440, 2_439)
                     + _stats(gap, 2 * day, len(steps), steps[0], steps[-1]),
                     [series(gap, dict.fromkeys(steps, 1), 0, 60)])
    runs = fetch.spans(source, family, WINDOW, ("pod",))
    assert runs == {("chat-a",): [(0, 2_440)], ("chat-b",): [(1_500, 1_550), (1_551, 1_600)]}
    narrowed = [q for q, _, _ in source.asked if "uid=~" in q]
    assert len(narrowed) == 1 and 'uid=~"uid-b"' in narrowed[0]  # only the series with a gap, only its chunk


def test_value_counts_add_up_the_chunks_each_a_subquery_of_its_own_length() -> None:
    points = {1_439: 5, 2_879: 7, 2_999: 1}  # what each chunk's subquery answers at its end
    source = Asked({"m": [series({"w": "a", "mib": "512"}, points, 0, 60)]})
    counts = fetch.value_counts(source, lambda span: Query("m", f"sum_over_time(x[{span}:60s])", ""), WINDOW,
                                ("w",), "mib")
    assert counts[("a",)] == {512.0: 13}
    assert [(q, s, e) for q, s, e in source.asked] == [
        ("sum_over_time(x[86370s:60s])", 86_400, 86_400), ("sum_over_time(x[86370s:60s])", 172_800, 172_800),
        ("sum_over_time(x[7170s:60s])", 180_000, 180_000)]


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
