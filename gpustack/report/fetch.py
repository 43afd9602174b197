"""Running the queries chunk by chunk and folding each answer into per-step values as it arrives.

Only what a measurement needs is kept: runs of steps for pods and nodes, the idle steps per utilisation
series, value counts for memory (built by gpustack/report/observe.py from `tile_values` and `chunk_series`)
and sets for presence, so memory stays bounded by the pods' and nodes'
runs and the idle steps, not by the samples Prometheus reads.
"""

from __future__ import annotations

import array
import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any, cast

from gpustack.report import join, queries
from gpustack.report.client import ReportError, Source
from gpustack.report.join import Identity, Key
from gpustack.report.queries import Query
from gpustack.report.window import Window


# Steps per request: half a day at 1-minute steps. Prometheus would take 11,000 (MAX_POINTS_PER_QUERY), but each
# request must finish within the client's timeout on a busy server, per-series answers (a point per idle GPU
# and step) stay a few hundred thousand points, and a subquery holds one chunk on the server at a time. A pod
# created or deleted in a chunk is asked for its first or last step over the whole chunk (a `timestamp()` at
# every step, gpustack/report/queries.py `step_bounds`): on the benchmark of docs/report.md half a day gives a
# quarter less evaluation than a day, a quarter of a day little more.
CHUNK_STEPS = 720


def _index(moment: float, window: Window, first: int, last: int, query: Query) -> int:
    """The step whose end is `moment`, which must be one of the chunk's."""
    offset = moment - window.start
    index = round(offset / window.step) - 1
    if abs(offset - (index + 1) * window.step) > 1e-3 or not first <= index < last:
        raise ReportError(f"query {query.name}: a sample at {moment} is not at the end of one of the asked steps")
    return index


def _indexes(moments: Sequence[float], window: Window, first: int, last: int, query: Query) -> list[int]:
    """`_index` of each moment, as one pass over the list and one check of them all."""
    start, step = window.start, window.step
    if all(type(moment) is int for moment in moments):  # whole seconds, as Prometheus sends step ends: exact
        seconds = cast("list[int]", moments)
        indexes = [(second - start) // step - 1 for second in seconds]
        aligned = all((second - start) % step == 0 for second in seconds)
    else:
        indexes = [round((moment - start) / step) - 1 for moment in moments]
        aligned = not any(abs(moment - start - (index + 1) * step) > 1e-3
                          for moment, index in zip(moments, indexes, strict=True))
    if indexes and (min(indexes) < first or max(indexes) >= last or not aligned):
        for moment in moments:
            _index(moment, window, first, last, query)  # raises, naming the first moment that is not a step's end
    return indexes


def _moments(series: dict[str, Any]) -> list[float]:
    return list(map(itemgetter(0), series["values"]))


def series_identity(labels: dict[str, str]) -> Identity:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def _key(labels: dict[str, str], names: tuple[str, ...]) -> Key:
    return tuple(str(labels.get(name, "")) for name in names)


def _chunk_steps(source: Source, asked: Query, window: Window, first: int, last: int
                 ) -> Iterator[tuple[dict[str, str], list[int]]]:
    """(labels, ascending step indexes with a value) of every series of one chunk of the window."""
    start, end = window.step_end(first), window.step_end(last - 1)
    for series in source.range_query(asked.name, asked.promql, start, end, window.step):
        yield series["metric"], sorted(_indexes(_moments(series), window, first, last, asked))


def spans(source: Source, ask: Callable[[Sequence[str]], Query], named_by: str, window: Window,
          by: tuple[str, ...]) -> dict[Key, join.Runs]:
    """Per `by` labels, the runs of steps in which the series of the per-step query `ask(())` have a value
    (series with equal keys merged), chunk by chunk: first how many of the chunk's steps each series holds
    (`queries.steps_present`); one present in all is a run of the whole chunk. For the others, named by their
    `named_by` label (`ask(names)`), the first and last step they hold: as many steps as lie between them is
    one run; only a series with a gap in the chunk is asked for at every step. Answers and memory grow with
    the series and their runs, not with the steps."""
    found: dict[Key, list[join.Run]] = {}
    for first, last in window.chunks(CHUNK_STEPS):
        span = f"{(last - first) * window.step - window.step // 2}s"
        held = _per_series(source, queries.steps_present(ask(()), f"{window.step}s", span), window, last)
        partly: dict[Identity, int] = {}
        for identity, count in held.items():
            if count == last - first:
                found.setdefault(_key(dict(identity), by), []).append((first, last))
            else:
                partly[identity] = int(count)
        gaps = _single_runs(source, ask, named_by, window, first, last, partly, found, by)
        if gaps:
            for labels, steps in _chunk_steps(source, _named(ask, named_by, gaps, "steps"), window, first, last):
                found.setdefault(_key(labels, by), []).extend(join.runs_of(steps))
    return {key: join.merge(runs) for key, runs in found.items()}


def _single_runs(source: Source, ask: Callable[[Sequence[str]], Query], named_by: str, window: Window, first: int,
                 last: int, partly: dict[Identity, int], found: dict[Key, list[join.Run]], by: tuple[str, ...]
                 ) -> set[str]:
    """Adds to `found` the run of each series of `partly` (identity -> steps held in the chunk) that holds one;
    returns the `named_by` names of the others. Which of them hold the chunk's first and last step comes first
    (two evaluations): a series holding the first step can only be one run if the run starts there, so only its
    last step is asked for (and the other way round); one holding both has a gap; one holding neither is asked
    for both."""
    if not partly:
        return set()
    edge_query = queries.step_edges(_named(ask, named_by, {dict(i).get(named_by, "") for i in partly}, "edges"))
    edges = _edges(source, edge_query, window, first, last)
    span = f"{(last - first) * window.step - window.step // 2}s"
    gaps: set[str] = set()
    begins: dict[Identity, int] = {}
    ends: dict[Identity, int] = {}
    for identity in partly:  # one holding both edges has a gap: it is left to the per-step query below
        held = edges.get(identity, (False, False))
        if held[0]:
            begins[identity] = first
        if held[1]:
            ends[identity] = last - 1
    unknown_begin = {dict(i).get(named_by, "") for i in partly if i not in begins}
    unknown_end = {dict(i).get(named_by, "") for i in partly if i not in ends}
    if unknown_begin:
        starts, _ = queries.step_bounds(_named(ask, named_by, unknown_begin, "first"), f"{window.step}s", span)
        for identity, moment in _per_series(source, starts, window, last).items():
            if identity in partly and identity not in begins:
                begins[identity] = _index(moment, window, first, last, starts)
    if unknown_end:
        _, stops = queries.step_bounds(_named(ask, named_by, unknown_end, "last"), f"{window.step}s", span)
        for identity, moment in _per_series(source, stops, window, last).items():
            if identity in partly and identity not in ends:
                ends[identity] = _index(moment, window, first, last, stops)
    for identity, count in partly.items():
        begin, end = begins.get(identity), ends.get(identity)
        if begin is not None and end is not None and end - begin + 1 == count:
            found.setdefault(_key(dict(identity), by), []).append((begin, end + 1))
        else:
            gaps.add(dict(identity).get(named_by, ""))
    return gaps


def _edges(source: Source, query: Query, window: Window, first: int, last: int) -> dict[Identity, tuple[bool, bool]]:
    """Per series of a per-step query, whether it holds a value at the chunk's first and at its last step (one
    range query whose step is the distance between them)."""
    start, end = window.step_end(first), window.step_end(last - 1)
    out: dict[Identity, tuple[bool, bool]] = {}
    for series in source.range_query(query.name, query.promql, start, end, max(window.step, end - start)):
        steps = {_index(moment, window, first, last, query) for moment, _ in series["values"]}
        out[series_identity(series["metric"])] = (first in steps, last - 1 in steps)
    return out


def _named(ask: Callable[[Sequence[str]], Query], named_by: str, names: set[str], what: str) -> Query:
    try:
        return ask(sorted(names))
    except ValueError as exc:  # a name from an answer that is no Kubernetes name: never put into a query
        raise ReportError(f"query {ask(()).name}-{what}: {named_by} {exc}") from None


def _per_series(source: Source, query: Query, window: Window, last: int) -> dict[Identity, float]:
    """The value of each series of `query` evaluated once at the end of the chunk ending at step `last`."""
    at = window.step_end(last - 1)
    out: dict[Identity, float] = {}
    for series in source.range_query(query.name, query.promql, at, at, window.step):
        for _, text in series["values"]:
            out[series_identity(series["metric"])] = _number(text, query)
    return out


def steps_of(source: Source, query: Query, window: Window) -> dict[Identity, array.array[int]]:
    """Per series (its labels), the ascending steps in which it has a value, chunk after chunk: an answer of few
    points (e.g. the steps a GPU sat idle)."""
    out: dict[Identity, array.array[int]] = {}
    for first, last in window.chunks(CHUNK_STEPS):
        for labels, steps in _chunk_steps(source, query, window, first, last):
            out.setdefault(series_identity(labels), array.array("l")).extend(steps)
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


def tile_values(source: Source, query: Query, window: Window, first: int, last: int, tile: int
                ) -> dict[Identity, dict[int, float]]:
    """Per series, its value at the end of each tile of `tile` steps of one chunk (tile 0 ends at step
    first + tile - 1), `query` being a function over a subquery of one tile: a range query whose step is a tile."""
    start, end = window.step_end(first + tile - 1), window.step_end(last - 1)
    out: dict[Identity, dict[int, float]] = {}
    for series in source.range_query(query.name, query.promql, start, end, tile * window.step):
        values = out.setdefault(series_identity(series["metric"]), {})
        moments = _moments(series)
        for moment, index, (_, text) in zip(moments, _indexes(moments, window, first, last, query), series["values"],
                                            strict=True):
            if (index - first + 1) % tile:
                raise ReportError(f"query {query.name}: a sample at {moment} is not at the end of one of the asked "
                                  "tiles")
            values[(index - first) // tile] = _number(text, query)
    return out


def chunk_series(source: Source, query: Query, window: Window, first: int, last: int
                 ) -> Iterator[tuple[dict[str, str], list[int], list[str]]]:
    """(labels, steps, their values as sent) of every series of one chunk's answer, its steps ascending."""
    start, end = window.step_end(first), window.step_end(last - 1)
    for series in source.range_query(query.name, query.promql, start, end, window.step):
        indexes = _indexes(_moments(series), window, first, last, query)
        texts = list(map(itemgetter(1), series["values"]))
        if any(a >= b for a, b in itertools.pairwise(indexes)):  # Prometheus sends them in order; sorted if not
            pairs = sorted(zip(indexes, texts, strict=True))
            indexes, texts = [i for i, _ in pairs], [t for _, t in pairs]
        yield series["metric"], indexes, texts


def numbers(counted: Counter[str], query: Query) -> Counter[float]:
    """Counts of values as sent, as counts of numbers (texts of one number added up)."""
    try:
        values = list(map(float, counted))
    except ValueError:
        for text in counted:
            _number(text, query)  # raises, naming the first that is not a number
        raise
    out: Counter[float] = Counter(dict(zip(values, counted.values(), strict=True)))
    if len(out) < len(counted):  # two texts of one number ("1", "1.0"): added up
        out = Counter()
        for value, count in zip(values, counted.values(), strict=True):
            out[value] += count
    return out


def _number(text: str, query: Query) -> float:
    try:
        return float(text)
    except ValueError:
        raise ReportError(f"query {query.name}: the sample {text[:30]!r} is not a number") from None
