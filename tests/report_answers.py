"""A fake Prometheus for the report's unit tests: answers by query name, served over HTTP by PromQL text.

The report's queries are named (gpustack/report/queries.py); a first, offline run of the report with
`NamedAnswers` learns which PromQL each name sends, and `serve` answers that PromQL over HTTP, so the
command's whole path (HTTP, chunks, recording) runs. What real PromQL returns is the HARNESS's test
against a real server (tests/test_report_prometheus.py).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gpustack.report.client import Matrix, Source

Series = dict[str, Any]


def series(labels: dict[str, str], values: dict[int, float], start: int, step: int) -> Series:
    """A series with a sample at the end of each step index given (as query_range evaluates)."""
    return {"metric": labels, "values": [[start + (i + 1) * step, f"{v:g}"] for i, v in sorted(values.items())]}


class NamedAnswers(Source):
    """Answers by query name (every series whole: the chunk's steps are cut out); learns name -> PromQL."""

    def __init__(self, answers: dict[str, list[Series]]):
        self.answers = answers
        self.promql: dict[str, str] = {}

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> Matrix:
        self.promql[query] = name
        base, _, part = name.rpartition("-")
        if part in PER_CHUNK and name not in self.answers:
            return per_chunk(self.answers.get(base, []), PER_CHUNK[part], query, end)
        if part in PER_TILE and name not in self.answers:
            return per_tile(self.answers.get(f"{base}-steps", []), PER_TILE[part], query, start, end, step)
        edges = part == "edges" and name not in self.answers  # `queries.step_edges`: the base at start and end
        out = []
        for item in self.answers.get(base if edges else name, []):
            values = [v for v in item["values"] if start <= v[0] <= end and (not edges or (v[0] - start) % step == 0)]
            if values:
                out.append({"metric": item["metric"], "values": values})
        return out


# What `queries.steps_present` and `queries.step_bounds` answer, from the per-step series of their query.
PER_CHUNK = {"steps": len, "first": min, "last": max}


def per_chunk(per_step: list[Series], fold: Any, query: str, at: int) -> Matrix:
    """A per-chunk answer at `at`: per series, `fold` of its points' times in the subquery's range (read from
    the query) ending at `at`."""
    match = re.search(r"\[([0-9]+)s:[0-9]+s\]\)$", query)
    assert match, query
    first = at - int(match.group(1))
    out = []
    for item in per_step:
        times = [t for t, _ in item["values"] if first <= t <= at]
        if times:
            out.append({"metric": item["metric"], "values": [[at, str(fold(times))]]})
    return out


# What `queries.memory_tiles` answer, from the per-step series of `<base>-steps`.
PER_TILE = {"count": len, "min": min, "max": max}


def per_tile(per_step: list[Series], fold: Any, query: str, start: int, end: int, step: int) -> Matrix:
    """A per-tile answer at start, start + step, ... end: per series, `fold` of its values in the subquery's range
    (read from the query) ending there."""
    match = re.search(r"\[([0-9]+)s:[0-9]+s\]\)$", query)
    assert match, query
    width = int(match.group(1))
    out = []
    for item in per_step:
        points = []
        for at in range(start, end + 1, step):
            values = [float(v) for t, v in item["values"] if at - width <= t <= at]
            if values:
                points.append([at, f"{fold(values):g}"])
        if points:
            out.append({"metric": item["metric"], "values": points})
    return out


@contextmanager
def serve(answers: NamedAnswers) -> Iterator[str]:
    """A local HTTP server answering the learnt PromQL; yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            name = answers.promql[form["query"][0]]
            result = answers.range_query(name, form["query"][0], int(form["start"][0]), int(form["end"][0]),
                                         int(form["step"][0]))
            body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with local_server(Handler) as url:
        yield url


@contextmanager
def local_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (a free port) in a thread, stopped on exit; yields its URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the serve loop to poll its flag: the default 0.5 s poll costs half a second each.
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
