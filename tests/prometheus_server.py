"""A real Prometheus server on 127.0.0.1 holding synthetic series, for the report's tests and benchmark.

The series are written as OpenMetrics text, turned into TSDB blocks by `promtool tsdb create-blocks-from
openmetrics` and served by `prometheus` with an empty scrape configuration (it scrapes nothing, not even
itself), so the server answers from exactly the samples written. Both binaries come from Debian's
`prometheus` package (the Makefile's `promtool` target installs it). Without them the tests skip
locally and fail when CI is set.

OpenMetrics as promtool reads it (prometheus docs/storage.md "Backfilling from OpenMetrics format";
cmd/promtool/backfill.go, https://github.com/prometheus/prometheus at 0184cb8f, read 2026-12-01): a
`# TYPE` line per metric family, the family's samples together, timestamps in seconds, each series'
samples in time order, and `# EOF` as the last line. promtool cuts blocks aligned to multiples of
`--max-block-duration` (a hidden flag, default 2h; checked on Debian's 2.42.0) and parses the whole input
once per block, so a week takes one or two 744h blocks, and the benchmark's month a day at a time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import pytest

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
BACKFILL_TIMEOUT_S = 1800.0
# One block for up to 31 days of samples (promtool aligns blocks to multiples of this duration).
MAX_BLOCK_DURATION = "744h"

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

Labels = tuple[tuple[str, str], ...]


def require_binaries() -> None:
    """Skip (locally) or fail (CI set) when promtool or prometheus is missing."""
    missing = [name for name, path in (("promtool", PROMTOOL), ("prometheus", PROMETHEUS)) if path is None]
    if not missing:
        return
    message = (f"{' and '.join(missing)} not installed: Debian's `prometheus` package provides both "
               "(`make promtool` installs it as root)")
    if os.environ.get("CI"):
        pytest.fail(message + "; CI must run these tests")
    pytest.skip(message)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series_line_prefix(name: str, labels: Labels) -> str:
    """`name{a="1",b="2"}` with checked names and escaped values."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a metric name: {name!r}")
    for key, _ in labels:
        if not _LABEL.fullmatch(key):
            raise ValueError(f"not a label name: {key!r}")
    inner = ",".join(f'{key}="{_escape(value)}"' for key, value in labels)
    return f"{name}{{{inner}}}" if inner else name


def format_value(value: float) -> str:
    """The exact float (repr round-trips), integers without a fraction."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class OpenMetricsWriter:
    """Streams metric families to a file: `family()` once per metric, then its series in any order,
    each series' samples in time order (checked)."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._families: set[str] = set()
        self._current: str | None = None
        self.samples = 0

    @property
    def current(self) -> str | None:
        """The family being written."""
        return self._current

    def family(self, name: str, kind: str = "gauge", help_text: str = "") -> None:
        if name in self._families:
            raise ValueError(f"metric family {name} written twice: its samples must stay together")
        self._families.add(name)
        self._current = name
        self._out.write(f"# TYPE {name} {kind}\n")
        if help_text:
            self._out.write(f"# HELP {name} {_escape(help_text)}\n")

    def series(self, name: str, labels: Labels, samples: Iterable[tuple[int, float]]) -> None:
        if name != self._current:
            raise ValueError(f"series of {name} outside its family (current: {self._current})")
        prefix = series_line_prefix(name, labels)
        last = None
        lines = []
        for timestamp, value in samples:
            if last is not None and timestamp <= last:
                raise ValueError(f"{prefix}: samples out of time order at {timestamp}")
            last = timestamp
            lines.append(f"{prefix} {format_value(value)} {timestamp}\n")
        self._out.write("".join(lines))
        self.samples += len(lines)

    def close(self) -> None:
        self._out.write("# EOF\n")


def backfill(openmetrics: Path, data_dir: Path, max_block_duration: str = MAX_BLOCK_DURATION) -> None:
    """TSDB blocks in `data_dir` from an OpenMetrics file."""
    require_binaries()
    assert PROMTOOL is not None
    data_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                           f"--max-block-duration={max_block_duration}", str(openmetrics), str(data_dir)],
                          capture_output=True, text=True, timeout=BACKFILL_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"promtool backfill of {openmetrics} failed: {done.stdout}{done.stderr}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass(frozen=True)
class PrometheusServer:
    url: str
    pid: int
    data_dir: Path


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server we started, by its PID: SIGTERM, a bounded wait, then SIGKILL."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def prometheus_server(data_dir: Path, query_log: Path | None = None) -> Iterator[PrometheusServer]:
    """`prometheus` serving the blocks in `data_dir` on a free 127.0.0.1 port until the block exits;
    `query_log`: where the server logs every query with its timings (JSON lines)."""
    require_binaries()
    assert PROMETHEUS is not None
    config = data_dir.parent / f"{data_dir.name}-prometheus.yml"
    log_setting = "{}" if query_log is None else "{query_log_file: " + json.dumps(str(query_log)) + "}"
    config.write_text(f"global: {log_setting}\nscrape_configs: []\n", encoding="utf-8")
    log_path = data_dir.parent / f"{data_dir.name}-prometheus.log"
    for _attempt in range(3):  # another process may take the free port between the probe and the bind
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
                 "--storage.tsdb.retention.time=3650d", f"--web.listen-address=127.0.0.1:{port}",
                 "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while process.poll() is None and time.monotonic() < deadline and not _ready(url):
                time.sleep(0.2)
            if process.poll() is None and _ready(url):
                yield PrometheusServer(url=url, pid=process.pid, data_dir=data_dir)
                return
        finally:
            _stop(process)
        if "address already in use" not in log_path.read_text(errors="replace"):
            break
    raise RuntimeError(f"prometheus did not become ready within {READY_TIMEOUT_S:.0f} s: "
                       f"{log_path.read_text(errors='replace')[-2000:]}")


@contextlib.contextmanager
def prometheus_from_openmetrics(openmetrics: Path, workdir: Path) -> Iterator[PrometheusServer]:
    """Backfill `openmetrics` into a fresh TSDB under `workdir` and serve it."""
    data_dir = workdir / "tsdb"
    if data_dir.exists():
        shutil.rmtree(data_dir)
    backfill(openmetrics, data_dir)
    with prometheus_server(data_dir) as server:
        yield server
