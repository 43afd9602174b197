"""A schedule window as two cron expressions: when a pool starts and when it stops.

Pure functions on the plan's window (days a window starts on, 0 = Monday; start and end in minutes
after midnight, end 1..1440, an end at or before the start meaning the next day). The expressions
are in the window's own wall-clock time: whatever runs them must be given the time zone too
(Kubernetes CronJob `spec.timeZone`, an ASG schedule's `time_zone`), so daylight-saving changes
are the scheduler's business, never a shifted UTC expression.

Cron fields are `minute hour day-of-month month day-of-week`, day-of-week 0 = Sunday ... 6 =
Saturday, written as a numeric list ("1,2,3,4,5"), or "*" for every day.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY


@dataclasses.dataclass(frozen=True)
class Crons:
    start: str  # when the window opens (scale up)
    stop: str  # when the window closes (scale to zero)


def cron_weekday(weekday: int) -> int:
    """Python's weekday (0 = Monday) as cron's day-of-week (0 = Sunday)."""
    return (weekday + 1) % 7


def cron_days(weekdays: Iterable[int]) -> str:
    """Weekdays (0 = Monday) as a cron day-of-week field: '1,2,3,4,5', or '*' for all seven."""
    days = sorted({cron_weekday(d % 7) for d in weekdays})
    if not days:
        raise ValueError("a schedule needs at least one day")
    return "*" if len(days) == 7 else ",".join(str(d) for d in days)


def window_crons(weekdays: Iterable[int], start_minute: int, end_minute: int) -> Crons | None:
    """The start and stop expressions of a weekly window; None when the window never closes.

    A window that ends at or before its start ends the next day ('22:00-06:00' on Friday stops on
    Saturday at 06:00). Where one day's window ends exactly when the next day's begins
    ('00:00-24:00' on Mon-Fri), that instant is neither a stop nor a start, so the pool is not
    scaled down and straight back up at midnight.
    """
    if not 0 <= start_minute < MINUTES_PER_DAY or not 0 < end_minute <= MINUTES_PER_DAY:
        raise ValueError(f"window {start_minute}-{end_minute} is outside 00:00-24:00")
    length = end_minute - start_minute
    if length <= 0:
        length += MINUTES_PER_DAY
    starts = {(d % 7) * MINUTES_PER_DAY + start_minute for d in weekdays}
    if not starts:
        raise ValueError("a schedule needs at least one day")
    stops = {(s + length) % MINUTES_PER_WEEK for s in starts}
    starts, stops = starts - stops, stops - starts  # back-to-back windows merge
    if not starts:
        return None
    return Crons(_cron(starts), _cron(stops))


def _cron(instants: set[int]) -> str:
    """Instants of the week (minutes after Monday 00:00) that share one time of day, as a cron line."""
    times = {i % MINUTES_PER_DAY for i in instants}
    assert len(times) == 1, times  # every start (and every stop) of a window is at the same time of day
    minute_of_day = times.pop()
    days = cron_days(i // MINUTES_PER_DAY for i in instants)
    return f"{minute_of_day % 60} {minute_of_day // 60} * * {days}"
