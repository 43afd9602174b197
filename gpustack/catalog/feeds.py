"""Reading a cloud's price API page by page, from the network or from recorded responses.

A cloud's price feed (the `prices` module of its bundle) asks for pages of a *stream* (e.g.
"prices", "spot") with a first request and a rule for the next one. Over the network the requests go
out with urllib; with `--input PATH` the same pages come from files, in name order, so the parsing
code is the same either way. A recorded stream is the files `<stream>*.json` in the cloud's folder
(`PATH/<cloud>/`, or PATH itself), and the feed's rule must ask for exactly as many pages as there
are files: a missing or an extra page is an error, which is how the tests check pagination.
"""

from __future__ import annotations

import dataclasses
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpustack.errors import UsageError
from gpustack.files import FileRefused, read_limited
from gpustack.http import no_redirects

MAX_PAGE_BYTES = 1024 * 1024 * 1024  # an AWS per-region offer file is several hundred MB
MAX_PAGES = 2000  # pages of one stream: Azure's GPU meters of all regions are a few hundred pages of 100
TIMEOUT_SECONDS = 120


class RefreshError(UsageError):
    """A price source that could not be read or understood: nothing is written."""


@dataclasses.dataclass(frozen=True)
class Request:
    url: str
    method: str = "GET"
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Page:
    where: str  # URL or file, for messages
    number: int  # 1-based
    data: Any


NextRequest = Callable[[Any, Request], "Request | None"]
Signer = Callable[[Request], Request]


class Pages:
    """Where pages come from; `read` yields every page of a stream."""

    def read(self, stream: str, first: Request, next_request: NextRequest) -> Iterator[Page]:
        raise NotImplementedError

    @property
    def recorded(self) -> bool:
        return False


class NetworkPages(Pages):
    def __init__(self, signer: Signer | None = None, opener: Callable[..., Any] | None = None):
        self.signer = signer
        self.opener = opener or no_redirects(RefreshError).open
        self._cache: dict[tuple[str, str, bytes | None], list[Page]] = {}

    def read(self, stream: str, first: Request, next_request: NextRequest) -> Iterator[Page]:
        """Every page, once per process (several regions may read the same global list)."""
        key = (stream, first.url, first.body)
        if key not in self._cache:
            self._cache[key] = list(self._read(first, next_request))
        yield from self._cache[key]

    def _read(self, first: Request, next_request: NextRequest) -> Iterator[Page]:
        request: Request | None = first
        number, seen = 0, {(first.url, first.body)}
        while request is not None:
            number += 1
            data = self.fetch(self.signer(request) if self.signer else request)
            yield Page(request.url, number, data)
            request = following(first, next_request(data, request), seen, number, request.url)

    def fetch(self, request: Request) -> Any:
        wire = urllib.request.Request(request.url, data=request.body, method=request.method,
                                      headers={"User-Agent": "gpustack-catalog-refresh", **dict(request.headers)})
        try:
            with self.opener(wire, timeout=TIMEOUT_SECONDS) as response:
                raw = response.read(MAX_PAGE_BYTES + 1)
                kind = response.headers.get("Content-Type", "") if response.headers else ""
        except urllib.error.HTTPError as exc:
            detail = exc.read(400).decode("utf-8", "replace").strip() if exc.fp else ""
            raise RefreshError(f"{request.url}: HTTP {exc.code} {exc.reason}{': ' + detail if detail else ''}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RefreshError(f"{request.url}: cannot be read ({reason})") from None
        if len(raw) > MAX_PAGE_BYTES:
            raise RefreshError(f"{request.url}: more than {MAX_PAGE_BYTES:,} bytes")
        if "xml" in kind:
            return raw.decode("utf-8", "replace")  # the EC2 query API answers in XML; its feed parses it
        return parse_json(raw, request.url)


def following(first: Request, request: Request | None, seen: set[tuple[str, bytes | None]] | None,
              number: int, where: str) -> Request | None:
    """The next page's request, if it stays on the first request's scheme and host, was not asked for
    before (`seen`; recorded pages are bounded by their files instead) and the stream has pages left: a page (hostile, or altered by a proxy) cannot make the refresh
    read a local file (`file://`), another host, or loop forever."""
    if request is None:
        return None
    mine = urllib.parse.urlsplit(first.url)
    if _origin(request.url) != _origin(first.url) or any(ord(c) < 33 for c in request.url):
        raise RefreshError(f"{where}: page {number} links to {request.url[:80]!r}, not to {mine.scheme}://{mine.netloc}: "
                           "not followed")
    if seen is None:
        return request
    if (request.url, request.body) in seen:
        raise RefreshError(f"{where}: page {number} links to a page read before ({request.url[:80]!r}): not followed")
    if number >= MAX_PAGES:
        raise RefreshError(f"{where}: more than {MAX_PAGES} pages: not followed further")
    seen.add((request.url, request.body))
    return request


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port spelled out (Azure's links say :443)."""
    try:
        split = urllib.parse.urlsplit(url)
        port = split.port or {"https": 443, "http": 80}.get(split.scheme, 0)
    except ValueError:
        return None
    return (split.scheme, split.hostname or "", port) if split.scheme in ("https", "http") else None


class RecordedPages(Pages):
    """Pages from files: `folder/<stream>*.json` in name order, or a single file: the only page of the
    feed's first stream (`single_stream`; the other streams then have no pages)."""

    def __init__(self, folder: Path | None, single: Path | None = None, single_stream: str = ""):
        self.folder = folder
        self.single = single
        self.single_stream = single_stream
        self._cache: dict[str, list[Page]] = {}

    @property
    def recorded(self) -> bool:
        return True

    def files(self, stream: str) -> list[Path]:
        if self.single is not None:
            return [self.single] if stream == self.single_stream else []
        assert self.folder is not None
        return sorted(p for p in self.folder.glob(f"{stream}*.json") if p.is_file())

    def read(self, stream: str, first: Request, next_request: NextRequest) -> Iterator[Page]:
        if stream not in self._cache:
            self._cache[stream] = list(self._read(stream, first, next_request))
        yield from self._cache[stream]

    def _read(self, stream: str, first: Request, next_request: NextRequest) -> Iterator[Page]:
        files = self.files(stream)
        if not files:
            return
        request: Request | None = first
        for number, path in enumerate(files, start=1):
            if request is None:
                raise RefreshError(f"{path}: page {number} of {stream!r} was never asked for: page {number - 1} has "
                                   "no link to a next page (a page left over, or the pages are out of order)")
            try:  # the network's byte limit, regular files only (not /dev/zero, not a FIFO)
                raw = read_limited(path, MAX_PAGE_BYTES, "recorded page (JSON)")
            except FileRefused as exc:
                raise RefreshError(f"{path}: {exc}") from None
            data = parse_json(raw, str(path))
            yield Page(str(path), number, data)
            request = following(first, next_request(data, request), None, number, str(path))
        if request is not None and self.single is None:
            raise RefreshError(f"{files[-1]}: links to a next page ({request.url}), but no recorded page "
                               f"{len(files) + 1} of {stream!r} follows it in {self.folder}")


def recorded_pages(path: Path, cloud: str, only_cloud: bool, first_stream: str) -> RecordedPages | None:
    """The recorded pages of `cloud` under `path`: `path/<cloud>/`, or `path` itself when it holds no cloud
    folders and one cloud is refreshed, or a single file (a page of `first_stream`) for one cloud. None
    when nothing is recorded."""
    if path.exists() and not path.is_dir() and not path.is_file():
        raise RefreshError(f"{path}: not a regular file or a folder (a device, FIFO or socket): give recorded pages")
    if path.is_file():
        return RecordedPages(None, single=path, single_stream=first_stream) if only_cloud else None
    if (path / cloud).is_dir():
        return RecordedPages(path / cloud)
    if only_cloud:
        return RecordedPages(path)
    return None


def parse_json(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise RefreshError(f"{where}: not UTF-8 text, so not a page of a price API") from None
    except json.JSONDecodeError as exc:
        raise RefreshError(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                           "a page of a price API is a JSON document") from None
    except RecursionError:
        raise RefreshError(f"{where}: nested too deeply to be a page of a price API") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise RefreshError(f"{where}: not a page of a price API ({str(exc)[:80]})") from None
    except MemoryError:
        raise RefreshError(f"{where}: too large to read as JSON") from None


class Malformed(RefreshError):
    """A page that does not have the documented shape."""


def need(obj: Any, key: str, kind: type | tuple[type, ...], page: Page, path: str) -> Any:
    """obj[key], which must be a `kind`; else a located error naming the page and the field."""
    if not isinstance(obj, dict) or key not in obj:
        raise Malformed(f"{page.where}: page {page.number}: {path}.{key} is missing")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise Malformed(f"{page.where}: page {page.number}: {path}.{key} is {type(value).__name__} "
                        f"{json.dumps(value)[:60]}, not {names}")
    return value


def number(text: Any, page: Page, path: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise Malformed(f"{page.where}: page {page.number}: {path} is {json.dumps(text)[:60]}, not a number") from None
    if value < 0 or not math.isfinite(value):
        raise Malformed(f"{page.where}: page {page.number}: {path} is {value}, not a price")
    return value
