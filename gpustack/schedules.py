"""Active windows as cron expressions: when to start a pool and when to stop it.

Cloud-neutral and pure, for every renderer that turns a schedule into timed actions (EKS Auto
Scaling scheduled actions, Kubernetes CronJobs). The crons are meant to run in the schedule's own
time zone (ASG `time_zone`, CronJob `.spec.timeZone`), so daylight saving time is the scheduler's
business, not ours.

Day-of-week fields are numbers (0 = Sunday ... 6 = Saturday): POSIX crontab defines numbers only
(https://pubs.opengroup.org/onlinepubs/9699919799/utilities/crontab.html), and Vixie cron's
crontab(5), which EC2 Auto Scaling's "traditional cron syntax" follows, accepts day names but
"ranges or lists of names are not allowed". Numbers mean the same thing to every scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

DAY = 24 * 60
WEEK = 7 * DAY


class Window(Protocol):
    """What a schedule needs to be turned into crons (spec `Schedule`, plan `ScheduleWindow`)."""

    # Read-only members, so frozen dataclasses match.
    @property
    def weekdays(self) -> tuple[int, ...]: ...  # 0 = Monday; the days a window starts on

    @property
    def start_minute(self) -> int: ...  # minutes after midnight

    @property
    def end_minute(self) -> int: ...  # 1..1440; at or below start_minute means the window ends the next day


def window_crons(schedule: Window) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(start crons, stop crons) of an active window, in the schedule's time zone.

    A window that crosses midnight stops on the following day: Mon-Fri 22:00-06:00 starts
    "0 22 * * 1-5" and stops "0 6 * * 2-6". Windows that touch are merged, so Mon-Fri
    00:00-24:00 starts once on Monday and stops once on Saturday; a pool active all week has
    no actions at all: ((), ()).
    """
    intervals = _merged(sorted(_intervals(schedule)))
    if any(end - start >= WEEK for start, end in intervals):
        return (), ()
    return _crons(start for start, _ in intervals), _crons(end for _, end in intervals)


def _intervals(schedule: Window) -> list[tuple[int, int]]:
    span = schedule.end_minute - schedule.start_minute
    if span <= 0:
        span += DAY
    return [(day * DAY + schedule.start_minute, day * DAY + schedule.start_minute + span)
            for day in sorted(set(schedule.weekdays))]


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join touching intervals, including across the end of the week (Sunday into Monday)."""
    merged: list[tuple[int, int]] = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    if len(merged) > 1 and merged[-1][1] >= merged[0][0] + WEEK:
        last_start, last_end = merged.pop()
        merged[0] = (last_start - WEEK, max(merged[0][1], last_end - WEEK))
    return merged


def _crons(moments: Iterable[int]) -> tuple[str, ...]:
    """One cron per time of day, listing the days it fires on."""
    days_by_minute: dict[int, set[int]] = {}
    for moment in moments:
        moment %= WEEK
        days_by_minute.setdefault(moment % DAY, set()).add(moment // DAY)
    return tuple(f"{minute % 60} {minute // 60} * * {cron_days(days)}"
                 for minute, days in sorted(days_by_minute.items()))


def cron_days(weekdays: set[int] | tuple[int, ...]) -> str:
    """A day-of-week field for days numbered 0 = Monday: {0..4} -> "1-5", {5, 6} -> "0,6"."""
    numbers = sorted({(day + 1) % 7 for day in weekdays})
    if not numbers:
        raise ValueError("a schedule needs at least one day")
    if len(numbers) == 7:
        return "*"
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def window_intervals(schedule: Window) -> list[tuple[int, int]]:
    """The window's merged intervals in minutes of the week (0 = Monday 00:00); [] when it never closes."""
    intervals = _merged(sorted(_intervals(schedule)))
    return [] if any(end - start >= WEEK for start, end in intervals) else intervals


def interval_crons(intervals: Iterable[tuple[int, int]]) -> list[tuple[str, str]]:
    """(start cron, end cron) pairs covering `intervals`, one pair per time of day and length, each listing
    the days it fires on: a pair whose starts and ends alternate, as a KEDA cron trigger needs."""
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for start, end in intervals:
        groups.setdefault((start % DAY, end - start), []).append((start % WEEK, end % WEEK))
    pairs = []
    for _key, members in sorted(groups.items()):
        starts = {s // DAY for s, _ in members}
        ends = {e // DAY for _, e in members}
        start_minute, end_minute = members[0][0] % DAY, members[0][1] % DAY
        pairs.append((f"{start_minute % 60} {start_minute // 60} * * {cron_days(starts)}",
                      f"{end_minute % 60} {end_minute // 60} * * {cron_days(ends)}"))
    return pairs
