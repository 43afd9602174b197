"""The report's Prometheus client against a tiny local HTTP server: what it refuses and what it sends."""

from __future__ import annotations

import http.server
import json
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_answers import local_server

from gpustack.report.client import (
    PrometheusSource, RecordedSource, ReportError, answer_file, matrix_answer, parse_headers, read_token,
)

MATRIX = {"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"namespace": "default"}, "values": [[120, "1"], [180, "2"]]}]}}


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, object]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        self.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "form": form})
        kind = self.path.split("/")[1]
        if kind == "redirect":
            self._send(302, b"", location=f"http://127.0.0.1:{self.server.server_address[1]}/ok/api/v1/query_range")
        elif kind == "fail":
            self._send(500, json.dumps({"status": "error", "errorType": "internal", "error": "boom"}).encode())
        elif kind == "html":
            self._send(200, b"<html>login</html>")
        elif kind == "vector":
            self._send(200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode())
        elif kind == "error":
            self._send(200, json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode())
        elif kind == "big":
            self._send(200, json.dumps(MATRIX).encode() + b" " * 5000)
        elif kind == "slow":
            time.sleep(2)
            self._send(200, json.dumps(MATRIX).encode())
        else:
            self._send(200, json.dumps(MATRIX).encode())

    def _send(self, code: int, body: bytes, location: str | None = None) -> None:
        try:
            self.send_response(code)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test)


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    with local_server(_Handler) as url:
        yield url


def _ask(source: PrometheusSource) -> object:
    return source.range_query("q", "up", 120, 180, 60)


def test_an_answer_is_read_and_the_query_posted(server: str) -> None:
    result = _ask(PrometheusSource(f"{server}/ok"))
    assert result == MATRIX["data"]["result"]  # type: ignore[index]
    [request] = _Handler.seen
    assert request["path"] == "/ok/api/v1/query_range"
    assert request["form"] == {"query": ["up"], "start": ["120"], "end": ["180"], "step": ["60"]}


def test_a_redirect_is_refused_and_the_token_goes_nowhere_else(server: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    with pytest.raises(ReportError, match=r"/redirect/api/v1/query_range: the server redirects \(HTTP 302\)"):
        _ask(PrometheusSource(f"{server}/redirect", token=read_token(str(token))))
    assert [r["path"] for r in _Handler.seen] == ["/redirect/api/v1/query_range"]  # the target was never asked


def test_the_bearer_token_and_headers_are_sent(server: str, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    _ask(PrometheusSource(f"{server}/ok", parse_headers(["X-Scope-OrgID: team-a"]), read_token(str(token))))
    headers = _Handler.seen[0]["headers"]
    assert headers["authorization"] == "Bearer s3cret"  # type: ignore[index]
    assert headers["x-scope-orgid"] == "team-a"  # type: ignore[index]


def test_a_server_error_names_the_url_and_prometheus_error(server: str) -> None:
    with pytest.raises(ReportError, match=r"http://127\.0\.0\.1:\d+/fail/api/v1/query_range: HTTP 500 .*boom"):
        _ask(PrometheusSource(f"{server}/fail"))


@pytest.mark.parametrize(("kind", "cause"), [
    ("html", "not JSON"), ("vector", "not a range-query result"), ("error", "answered 'error': bad_data parse error"),
])
def test_what_is_not_a_prometheus_matrix_is_refused(server: str, kind: str, cause: str) -> None:
    with pytest.raises(ReportError, match=rf"/{kind}/api/v1/query_range: .*{cause}"):
        _ask(PrometheusSource(f"{server}/{kind}"))


def test_an_answer_over_the_limit_is_refused(server: str) -> None:
    with pytest.raises(ReportError, match="larger than 1,000 bytes"):
        _ask(PrometheusSource(f"{server}/big", limit=1000))


def test_a_slow_server_times_out(server: str) -> None:
    with pytest.raises(ReportError, match=r"/slow/api/v1/query_range: cannot be read \(.*timed out"):
        _ask(PrometheusSource(f"{server}/slow", timeout=0.3))


def test_an_unreachable_server_is_named() -> None:
    with pytest.raises(ReportError, match=r"http://127\.0\.0\.1:9/api/v1/query_range: cannot be read"):
        _ask(PrometheusSource("http://127.0.0.1:9"))


@pytest.mark.parametrize("header", ["X-A: b\r\nX-Evil: 1", "X A: b", "X-A:", "X-A: b\n", ": b", "Host: other"])
def test_headers_are_validated(header: str) -> None:
    with pytest.raises(ReportError, match="--header"):
        parse_headers([header])


@pytest.mark.parametrize("url", ["ftp://p:9090", "http://user:pw@p:9090", "http://p:9090/?x=1", "http://p\n"])
def test_urls_are_validated(url: str) -> None:
    with pytest.raises(ReportError, match="--prometheus"):
        PrometheusSource(url)


def test_a_token_and_an_authorization_header_conflict(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="give one of them"):
        PrometheusSource("http://p:9090", parse_headers(["Authorization: Basic x"]), "t")


def test_a_token_file_must_be_a_regular_file_with_one_token(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"--bearer-token-file .*no such file"):
        read_token(str(tmp_path / "missing"))
    with pytest.raises(ReportError, match="is not a regular file"):
        read_token("/dev/zero")
    two = tmp_path / "two"
    two.write_text("a b\n")
    with pytest.raises(ReportError, match="not one token"):
        read_token(str(two))


def test_recorded_answers_replay_exactly(server: str, tmp_path: Path) -> None:
    recorded = _ask(PrometheusSource(f"{server}/ok", record=tmp_path / "rec"))
    [name] = [p.name for p in (tmp_path / "rec").iterdir()]
    assert name == answer_file("q", "up", 120, 180, 60)
    assert RecordedSource(tmp_path / "rec").range_query("q", "up", 120, 180, 60) == recorded
    with pytest.raises(ReportError, match=r"--input .*no such file .*record again"):
        RecordedSource(tmp_path / "rec").range_query("q", "up", 180, 240, 60)  # another window


def test_recorded_answers_pass_the_same_checks(tmp_path: Path) -> None:
    (tmp_path / answer_file("q", "up", 120, 180, 60)).write_text('{"status": "success", "data": {}}')
    with pytest.raises(ReportError, match="not a range-query result"):
        RecordedSource(tmp_path).range_query("q", "up", 120, 180, 60)
    with pytest.raises(ReportError, match=r"--input .*no such folder"):
        RecordedSource(tmp_path / "none")


def test_a_sample_must_be_time_and_text() -> None:
    bad = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {}, "values": [[1, 2]]}]}}).encode()
    with pytest.raises(ReportError, match="not \\[time"):
        matrix_answer(bad, "x")


def test_a_recorded_answer_must_be_a_regular_file(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / answer_file("q", "up", 120, 180, 60))
    with pytest.raises(ReportError, match="is not a regular file"):
        RecordedSource(tmp_path).range_query("q", "up", 120, 180, 60)


def test_a_record_folder_that_cannot_be_made_is_named(server: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ReportError, match=r"--record .*file: cannot be created"):
        _ask(PrometheusSource(f"{server}/ok", record=tmp_path / "file"))
