"""The report's window: [end - since, end) cut into steps of `step`, and the query chunks that cover it.

Step i covers [start + i*step, start + (i+1)*step). Each step is read with a range function over exactly
that step, evaluated at its end, so a series that stopped is not carried on by Prometheus's 5-minute
lookback (backfilled blocks have no staleness markers). Prometheus answers at most 11,000 points per
series per range query (web/api/v1/api.go: "exceeded maximum resolution of 11,000 points per timeseries"),
so a long window is asked for in chunks.
"""

from __future__ import annotations

import dataclasses
import datetime
import re

from gpustack.errors import UsageError

MAX_POINTS_PER_QUERY = 11_000
MAX_STEPS = 2_000_000  # 30 days at 1 s would be 2.6 million: a step that fine is no report
_DURATION = re.compile(r"([1-9][0-9]{0,6})(s|m|h|d|w)")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# RFC 3339 date-time with a zone (Z or +hh:mm); fractions of a second are not needed for a window end.
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}([Zz]|[+-][0-9]{2}:[0-9]{2})")


def parse_duration(option: str, text: str) -> int:
    """Seconds of a duration such as 7d, 90m or 60s; UsageError naming the option otherwise."""
    match = _DURATION.fullmatch(text)
    if not match:
        raise UsageError(f"{option} {text!r} is not a duration: a whole number and one unit of s, m, h, d or w "
                         "(e.g. 7d, 12h, 1m)")
    return int(match.group(1)) * _UNITS[match.group(2)]


def parse_until(text: str, now: datetime.datetime | None = None) -> int:
    """The window's end as Unix seconds: `now`, or an RFC 3339 time with its zone."""
    if text == "now":
        moment = now or datetime.datetime.now(datetime.UTC)
        return int(moment.timestamp())
    if not _RFC3339.fullmatch(text):
        raise UsageError(f"--until {text!r} is not a time: give 'now' or RFC 3339 with a zone, e.g. "
                         "2026-11-30T00:00:00Z")
    try:
        moment = datetime.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError as exc:
        raise UsageError(f"--until {text!r} is not a valid time ({exc})") from None
    return int(moment.timestamp())


@dataclasses.dataclass(frozen=True)
class Window:
    start: int  # Unix seconds
    end: int
    step: int  # seconds

    @property
    def steps(self) -> int:
        return (self.end - self.start) // self.step

    @property
    def step_hours(self) -> float:
        return self.step / 3600

    @property
    def hours(self) -> float:
        return (self.end - self.start) / 3600

    def step_end(self, index: int) -> int:
        return self.start + (index + 1) * self.step

    def chunks(self, size: int = MAX_POINTS_PER_QUERY) -> list[tuple[int, int]]:
        """(first step, last step + 1) of each query_range call, at most `size` (<= MAX_POINTS_PER_QUERY) steps
        each."""
        size = min(size, MAX_POINTS_PER_QUERY)
        return [(first, min(self.steps, first + size)) for first in range(0, self.steps, size)]

    @staticmethod
    def iso(moment: int) -> str:
        return datetime.datetime.fromtimestamp(moment, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_window(since: str, until: str, step: str, now: datetime.datetime | None = None) -> Window:
    since_seconds = parse_duration("--since", since)
    step_seconds = parse_duration("--step", step)
    end = parse_until(until, now)
    if until == "now":
        end -= end % step_seconds  # whole steps since the epoch, as Prometheus aligns subqueries
    elif end % step_seconds:
        raise UsageError(f"--until {until} is not a whole number of --step {step} since 1970-01-01T00:00:00Z: "
                         "steps end where Prometheus evaluates them (e.g. a whole minute for 1m)")
    if since_seconds % step_seconds:
        raise UsageError(f"--since {since} is not a whole number of --step {step}: the window is cut into equal steps")
    if since_seconds // step_seconds > MAX_STEPS:
        raise UsageError(f"--since {since} at --step {step} is {since_seconds // step_seconds:,} steps; at most "
                         f"{MAX_STEPS:,} (use a longer --step)")
    return Window(end - since_seconds, end, step_seconds)
