"""Asking Prometheus for range queries: bounded in time and bytes, no redirects, every answer checked.

Sources of answers, one interface (`Source.range_query`):
- `PrometheusSource`: POST /api/v1/query_range to a server (Prometheus HTTP API,
  https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries); a bearer token file and
  extra headers for managed endpoints behind a proxy;
- `RecordedSource` (`--input DIR`): the same answers from files one `--record DIR` run wrote.
Every answer goes through `matrix_answer`, the same check either way. Every failure is a `ReportError`
(exit 2) naming the URL or file and the cause.

Redirects are refused: urllib's redirect handler copies the request's headers, Authorization included,
to wherever the server points (urllib/request.py HTTPRedirectHandler.redirect_request), which would send
the token to another host.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from gpustack.errors import UsageError
from gpustack.files import FileRefused, read_limited, write_atomically
from gpustack.http import no_redirects

MAX_ANSWER_BYTES = 512 * 1024 * 1024  # one request: half a day of steps of a few thousand series, with room
TIMEOUT_SECONDS = 120.0
MAX_TOKEN_BYTES = 64 * 1024
# http(s)://host[:port][/path]: no query, fragment or credentials (a token goes in --bearer-token-file).
_URL = re.compile(r"https?://(\[[0-9a-fA-F:.]{2,45}\]|[-A-Za-z0-9.]{1,253})(:[0-9]{1,5})?(/[-A-Za-z0-9_.~%/]{0,1024})?")
# RFC 9110 field-name (a token) and a field value of visible ASCII and inner spaces.
_HEADER = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}):[ \t]*([\x21-\x7e]([\x20-\x7e]{0,8190}[\x21-\x7e])?)")
_TOKEN = re.compile(r"[\x21-\x7e]{1,16384}")
_REFUSED_HEADERS = {"host", "content-length", "content-type", "transfer-encoding", "connection"}

Matrix = list[dict[str, Any]]  # [{"metric": {label: value}, "values": [[t, "v"], ...]}, ...]


class ReportError(UsageError):
    """A source of measurements that cannot be used: exit 2, with the URL or file and the cause."""


def parse_headers(texts: Sequence[str]) -> tuple[tuple[str, str], ...]:
    headers = []
    for text in texts:
        match = _HEADER.fullmatch(text)
        if not match:
            raise ReportError(f"--header {text[:80]!r} is not 'Name: value' (a header name, a colon, a value of "
                              "visible ASCII characters; no line breaks)")
        name = match.group(1)
        if name.lower() in _REFUSED_HEADERS:
            raise ReportError(f"--header {name}: gpustack sets this header itself")
        headers.append((name, match.group(2)))
    names = [n.lower() for n, _ in headers]
    if len(set(names)) != len(names):
        raise ReportError("--header: the same header is given twice")
    return tuple(headers)


def read_token(path: str) -> str:
    try:
        raw = read_limited(path, MAX_TOKEN_BYTES, "token file")
    except FileRefused as exc:
        raise ReportError(f"--bearer-token-file {path}: {exc}") from None
    token = raw.decode("utf-8", "replace").strip()
    if not _TOKEN.fullmatch(token):
        raise ReportError(f"--bearer-token-file {path}: not one token of visible ASCII characters")
    return token


def check_url(url: str) -> str:
    if not _URL.fullmatch(url):
        raise ReportError(f"--prometheus {url[:120]!r} is not an http(s) URL of a Prometheus server "
                          "(scheme, host, optional port and path; no query, no user:password)")
    return url.rstrip("/")


def matrix_answer(raw: bytes, where: str) -> Matrix:
    """The result of a Prometheus range-query answer, or ReportError saying how it is not one."""
    try:
        answer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{where}: the answer is not JSON ({type(exc).__name__}), so not a Prometheus API "
                          "answer") from None
    if not isinstance(answer, dict) or "status" not in answer:
        raise ReportError(f"{where}: the answer is JSON but not a Prometheus API answer (no 'status')")
    if answer["status"] != "success":
        error = str(answer.get("error", ""))[:300]
        raise ReportError(f"{where}: Prometheus answered {str(answer['status'])[:20]!r}: "
                          f"{str(answer.get('errorType', ''))[:40]} {error}".rstrip())
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise ReportError(f"{where}: the answer is not a range-query result (data.resultType 'matrix' with a "
                          "list of series)")
    result: Matrix = data["result"]
    for series in result:
        if (not isinstance(series, dict) or not isinstance(series.get("metric"), dict)
                or not isinstance(series.get("values"), list)):
            raise ReportError(f"{where}: a series of the answer has no 'metric' mapping and 'values' list")
        if not _points(series["values"]):
            raise ReportError(f"{where}: a sample of the answer is not [time, \"value\"]")
    return result


_TIMES = frozenset((int, float, bool))  # what isinstance(t, (int, float)) accepts of what JSON decodes


def _points(values: list[Any]) -> bool:
    """Whether every point decoded from JSON is [time, "value"]: each check one pass over the points, in C (the
    types JSON decodes to have no subclasses but bool, so the types' sets say what isinstance would)."""
    if not values:
        return True
    if set(map(type, values)) != {list} or set(map(len, values)) != {2}:
        return False
    return set(map(type, map(itemgetter(0), values))) <= _TIMES and set(map(type, map(itemgetter(1), values))) == {str}


class Source:
    """Where answers come from."""

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> Matrix:
        raise NotImplementedError


def answer_file(name: str, query: str, start: int, end: int, step: int) -> str:
    """The recorded file of one answer: the query's name and a digest of what was asked, so a replay with
    another window or query finds no file rather than a wrong one."""
    digest = hashlib.sha256(f"{query}\n{start}\n{end}\n{step}".encode()).hexdigest()[:16]
    return f"{name}-{start}-{digest}.json"


class PrometheusSource(Source):
    def __init__(self, url: str, headers: tuple[tuple[str, str], ...] = (), token: str | None = None,
                 record: Path | None = None, timeout: float = TIMEOUT_SECONDS, limit: int = MAX_ANSWER_BYTES):
        self.url = check_url(url)
        sent = dict(headers)
        if token is not None:
            if any(n.lower() == "authorization" for n in sent):
                raise ReportError("--bearer-token-file and --header Authorization: give one of them")
            sent["Authorization"] = f"Bearer {token}"
        self.headers = sent
        self.record = record
        self.timeout = timeout
        self.limit = limit
        self.opener = no_redirects(ReportError)

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> Matrix:
        endpoint = f"{self.url}/api/v1/query_range"
        body = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": step}).encode()
        request = urllib.request.Request(endpoint, data=body, method="POST", headers={
            "Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded",
            "User-Agent": "gpustack-report", **self.headers})
        raw = self._fetch(request, endpoint)
        result = matrix_answer(raw, endpoint)
        if self.record is not None:
            try:  # the body as received: it was checked as UTF-8 JSON above
                self.record.mkdir(parents=True, exist_ok=True)
                write_atomically(self.record / answer_file(name, query, start, end, step), raw.decode("utf-8"))
            except FileRefused as exc:
                raise ReportError(f"--record: {exc}") from None
            except OSError as exc:
                raise ReportError(f"--record {self.record}: cannot be created ({exc.strerror or exc})") from None
        return result

    def _fetch(self, request: urllib.request.Request, endpoint: str) -> bytes:
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                raw: bytes = response.read(self.limit + 1)
        except urllib.error.HTTPError as exc:
            detail = _error_detail(exc)
            raise ReportError(f"{endpoint}: HTTP {exc.code} {exc.reason}{': ' + detail if detail else ''}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ReportError(f"{endpoint}: cannot be read ({reason})") from None
        if len(raw) > self.limit:
            raise ReportError(f"{endpoint}: the answer is larger than {self.limit:,} bytes; use a longer --step or "
                              "a shorter --since")
        return raw


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read(2000) if exc.fp else b""
    except OSError:
        return ""
    try:
        answer = json.loads(raw)
        if isinstance(answer, dict) and "error" in answer:
            return str(answer["error"])[:300]
    except ValueError:
        pass
    text = raw.decode("utf-8", "replace").strip()
    return re.sub(r"[^\x20-\x7e]", "?", text)[:300]


class RecordedSource(Source):
    """Answers recorded by `--record DIR`, read back with the same limit and checks."""

    def __init__(self, folder: Path, limit: int = MAX_ANSWER_BYTES):
        if not folder.is_dir():
            raise ReportError(f"--input {folder}: no such folder (give the folder --record wrote)")
        self.folder = folder
        self.limit = limit

    def range_query(self, name: str, query: str, start: int, end: int, step: int) -> Matrix:
        path = self.folder / answer_file(name, query, start, end, step)
        try:
            raw = read_limited(path, self.limit, "recorded answer")
        except FileRefused as exc:
            raise ReportError(f"--input {path}: {exc} (recorded with another window, step or spec? record again "
                              "with the same --since, --until and --step)") from None
        return matrix_answer(raw, str(path))
