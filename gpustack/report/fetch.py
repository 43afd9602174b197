"""Running the queries chunk by chunk and folding each answer into per-step values as it arrives.

Only what a measurement needs is kept: dense per-step arrays for the aggregated series (replicas, nodes),
a run counter per idle series, value counts for memory and sets for presence, so memory stays bounded by
the window's steps times the workloads and pools, not by the samples Prometheus returns.
"""

from __future__ import annotations

import array
import math
from collections import Counter
from collections.abc import Callable, Iterator

from gpustack.report.client import ReportError, Source
from gpustack.report.queries import Query
from gpustack.report.measure import IdleRuns
from gpustack.report.window import Window

Key = tuple[str, ...]
NAN = math.nan


# Steps per request: a day at 1-minute steps. Prometheus would take 11,000 (MAX_POINTS_PER_QUERY), but each
# request must finish within the client's timeout on a busy server, per-series answers (a point per idle GPU
# and step) stay a few hundred thousand points, and a subquery holds one chunk on the server at a time.
CHUNK_STEPS = 1440


def _points(source: Source, query: Query | Callable[[int, int, str], Query | None], window: Window
            ) -> Iterator[tuple[dict[str, str], list[tuple[int, float]]]]:
    """(labels, [(step index, value)]) of every series of every chunk of the window, chunk after chunk. `query`
    may depend on the chunk: a function of (first step, last step + 1, the chunk's range) giving the query,
    or None when the chunk has nothing to ask."""
    for first, last in window.chunks(CHUNK_STEPS):
        asked = query(first, last, f"{(last - first) * window.step}s") if callable(query) else query
        if asked is None:
            continue
        start, end = window.step_end(first), window.step_end(last - 1)
        where = f"query {asked.name}"
        for series in source.range_query(asked.name, asked.promql, start, end, window.step):
            points = []
            for moment, text in series["values"]:
                offset = moment - window.start
                index = round(offset / window.step) - 1
                if abs(offset - (index + 1) * window.step) > 1e-3 or not first <= index < last:
                    raise ReportError(f"{where}: a sample at {moment} is not at the end of one of the asked steps")
                points.append((index, _number(text, asked)))
            yield series["metric"], points


def names_at(source: Source, query: Query, at: int, step: int, label: str) -> list[str]:
    """The values of `label` in an answer evaluated once, at `at` (e.g. the nodes of a pool in a chunk)."""
    return sorted({str(series["metric"].get(label, "")) for series in source.range_query(query.name, query.promql,
                                                                                          at, at, step)} - {""})


def _key(labels: dict[str, str], names: tuple[str, ...]) -> Key:
    return tuple(str(labels.get(name, "")) for name in names)


def dense(source: Source, query: Query | Callable[[int, int, str], Query | None], window: Window,
          by: tuple[str, ...]) -> dict[Key, array.array[float]]:
    """Per `by` labels, the value in each step (NaN: no sample); series with equal keys are added."""
    out: dict[Key, array.array[float]] = {}
    for labels, points in _points(source, query, window):
        values = out.setdefault(_key(labels, by), array.array("d", [NAN]) * window.steps)
        for index, value in points:
            values[index] = value if math.isnan(values[index]) else values[index] + value
    return out


def present(source: Source, query_over: Callable[[str], Query], window: Window, by: tuple[str, ...]) -> set[Key]:
    """The `by` labels of every series `query_over(range)` (range functions over `range`) answers at the end of
    some chunk of the window, the range being that chunk: one evaluation per chunk instead of one per step."""
    found: set[Key] = set()
    for first, last in window.chunks(CHUNK_STEPS):
        query = query_over(f"{(last - first) * window.step}s")
        at = window.step_end(last - 1)
        found |= {_key(series["metric"], by) for series in source.range_query(query.name, query.promql, at, at,
                                                                               window.step) if series["values"]}
    return found


def idle_steps(source: Source, query: Query, window: Window, by: tuple[str, ...],
               min_steps: Callable[[Key], int]) -> dict[Key, int]:
    """Per `by` labels, the steps counted idle over its series (runs of at least `min_steps(key)` steps),
    folded as the answers arrive: memory grows with the series, not with their samples."""
    runs: dict[tuple[tuple[str, str], ...], tuple[Key, IdleRuns]] = {}
    for labels, points in _points(source, query, window):
        identity = tuple(sorted(labels.items()))
        if identity not in runs:
            key = _key(labels, by)
            runs[identity] = (key, IdleRuns(min_steps(key)))
        counter = runs[identity][1]
        for index, _ in points:
            counter.add(index)
    out: dict[Key, int] = {}
    for key, counter in runs.values():
        out[key] = out.get(key, 0) + counter.total()
    return out


def value_counts(source: Source, query_over: Callable[[str], Query], window: Window, by: tuple[str, ...], label: str
                 ) -> dict[Key, Counter[float]]:
    """Per `by` labels, how many samples held each value (the value is in `label`): `query_over(range)` sums a
    per-step count over `range` in a subquery, evaluated once at the end of each chunk of the window (so the
    server holds one chunk at a time); the chunks' counts are added. The range is the chunk less half a step,
    so the subquery's evaluations are exactly the chunk's step ends whether the server's ranges include
    their start (Prometheus 2) or not (3)."""
    out: dict[Key, Counter[float]] = {}
    for first, last in window.chunks(CHUNK_STEPS):
        query = query_over(f"{(last - first) * window.step - window.step // 2}s")
        at = window.step_end(last - 1)
        for series in source.range_query(query.name, query.promql, at, at, window.step):
            labels = series["metric"]
            try:
                value = float(labels[label])
            except (KeyError, ValueError):
                raise ReportError(f"query {query.name}: a series has no numeric {label!r} label") from None
            counts = out.setdefault(_key(labels, by), Counter())
            for _, text in series["values"]:
                counts[value] += int(_number(text, query))
    return out


def _number(text: str, query: Query) -> float:
    try:
        return float(text)
    except ValueError:
        raise ReportError(f"query {query.name}: the sample {text[:30]!r} is not a number") from None
