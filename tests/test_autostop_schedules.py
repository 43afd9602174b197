"""Schedule windows as cron expressions: the right minute, hour and days, in the window's own zone."""

from __future__ import annotations

import dataclasses
import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import spec_text
from gpustack.plan import build_plan
from gpustack.render import autostop
from gpustack.schedules import DAY as MINUTES_PER_DAY
from gpustack.schedules import cron_days, window_crons
from gpustack.spec import load_text
from gpustack.spec.units import parse_days, parse_hours

MON_FRI = (0, 1, 2, 3, 4)


@dataclasses.dataclass(frozen=True)
class Window:
    weekdays: tuple[int, ...]
    start_minute: int
    end_minute: int


def crons(days: str, hours: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return window_crons(Window(parse_days(days), *parse_hours(hours)))


@pytest.mark.parametrize("days, hours, start, stop", [
    ("Mon-Fri", "08:00-18:00", "0 8 * * 1-5", "0 18 * * 1-5"),
    ("Mon-Fri", "09:30-17:45", "30 9 * * 1-5", "45 17 * * 1-5"),
    # Crossing midnight: the stop is on the next day, Friday's night ends on Saturday.
    ("Mon-Fri", "22:00-06:00", "0 22 * * 1-5", "0 6 * * 2-6"),
    ("Sun", "20:30-02:15", "30 20 * * 0", "15 2 * * 1"),
    ("Sat-Sun", "20:30-02:15", "30 20 * * 0,6", "15 2 * * 0-1"),
    # Ending at 24:00 (or 00:00) is midnight of the next day.
    ("Mon", "09:00-24:00", "0 9 * * 1", "0 0 * * 2"),
    ("Wed", "18:00-00:00", "0 18 * * 3", "0 0 * * 4"),
    ("daily", "07:00-19:00", "0 7 * * *", "0 19 * * *"),
    # Back-to-back whole days: one start on Monday, one stop after Friday, nothing at midnights between.
    ("Mon-Fri", "00:00-24:00", "0 0 * * 1", "0 0 * * 6"),
    ("Fri-Mon", "00:00-24:00", "0 0 * * 5", "0 0 * * 2"),
])
def test_window_becomes_start_and_stop_crons(days, hours, start, stop):
    assert crons(days, hours) == ((start,), (stop,))


def test_a_window_open_all_week_needs_no_crons():
    assert crons("daily", "00:00-24:00") == ((), ())


def test_cron_days_use_cron_numbering_and_star_for_every_day():
    assert cron_days([0]) == "1"  # Monday
    assert cron_days([6]) == "0"  # Sunday
    assert cron_days(range(7)) == "*"
    with pytest.raises(ValueError):
        cron_days([])


# -- the crons reproduce the window: simulate a week ---------------------------------------------

def _days(field: str) -> set[int]:
    """The days of a day-of-week field: '*', lists and ranges ('1-5,0')."""
    if field == "*":
        return set(range(7))
    days: set[int] = set()
    for part in field.split(","):
        first, _, last = part.partition("-")
        days.update(range(int(first), int(last or first) + 1))
    return days


def _fires(cron: str, minute_of_week: int) -> bool:
    minute, hour, _, _, days = cron.split()
    weekday, minute_of_day = divmod(minute_of_week, MINUTES_PER_DAY)
    return minute_of_day == int(hour) * 60 + int(minute) and (weekday + 1) % 7 in _days(days)


def _inside(weekdays, start: int, end: int, minute_of_week: int) -> bool:
    length = end - start if end > start else end - start + MINUTES_PER_DAY
    return any(0 <= (minute_of_week - (d * MINUTES_PER_DAY + start)) % (7 * MINUTES_PER_DAY) < length
               for d in weekdays)


@settings(max_examples=60, deadline=None)
@given(weekdays=st.sets(st.integers(0, 6), min_size=1),
       start=st.integers(0, 95).map(lambda q: q * 15),
       end=st.integers(1, 96).map(lambda q: q * 15))
def test_running_the_crons_keeps_the_pool_up_exactly_inside_the_window(weekdays, start, end):
    if start == end:
        return  # an empty window, refused by the spec
    starts, stops = window_crons(Window(tuple(sorted(weekdays)), start, end))
    week = range(0, 7 * MINUTES_PER_DAY, 15)
    if not starts:
        assert all(_inside(weekdays, start, end, m) for m in week)
        return
    # The state at a minute is set by the last cron that fired: one lap to settle, one to check.
    state = None
    for lap in (0, 1):
        for m in week:
            if any(_fires(c, m) for c in starts):
                state = True
            elif any(_fires(c, m) for c in stops):
                state = False
            if lap:
                assert state == _inside(weekdays, start, end, m), (m, starts, stops)


# -- time zones and daylight saving: what the cluster will observe -------------------------------

def _fire_instant(cron: str, zone: str, day: dt.date) -> dt.datetime | None:
    """When a CronJob with this schedule and spec.timeZone fires on `day` (local), in UTC."""
    minute, hour, _, _, days = cron.split()
    cron_day = day.isoweekday() % 7
    if cron_day not in _days(days):
        return None
    local = dt.datetime(day.year, day.month, day.day, int(hour), int(minute), tzinfo=ZoneInfo(zone))
    return local.astimezone(dt.UTC)


def _notebook_cronjobs(hours: str, zone: str, days: str = "Mon-Fri") -> dict[str, dict]:
    workload = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4,
                "schedule": {"days": days, "hours": hours, "timezone": zone}}
    plan = build_plan(load_text(spec_text([workload]), "spec.yaml"))
    target = plan.targets[0]
    jobs = {}
    for obj in autostop.objects(plan, target):
        if obj["kind"] == "CronJob":
            jobs[obj["metadata"]["labels"][autostop.ACTION_LABEL]] = obj
    return jobs


@pytest.mark.parametrize("zone, start_utc_before, start_utc_after, before, after", [
    # Europe/Berlin moves to summer time on Sunday 2025-03-30: 08:00 local is 07:00Z, then 06:00Z.
    ("Europe/Berlin", "07:00", "06:00", dt.date(2025, 3, 28), dt.date(2025, 3, 31)),
    # America/New_York moves back on Sunday 2025-11-02: 08:00 local is 12:00Z, then 13:00Z.
    ("America/New_York", "12:00", "13:00", dt.date(2025, 10, 31), dt.date(2025, 11, 3)),
    # Asia/Kolkata has no daylight saving: 08:00 local is 02:30Z all year.
    ("Asia/Kolkata", "02:30", "02:30", dt.date(2025, 3, 28), dt.date(2025, 3, 31)),
])
def test_cronjobs_keep_local_wall_clock_across_daylight_saving(zone, start_utc_before, start_utc_after,
                                                               before, after):
    jobs = _notebook_cronjobs("08:00-18:00", zone)
    start = jobs["start"]["spec"]
    assert start["timeZone"] == zone and start["schedule"] == "0 8 * * 1-5"
    assert _fire_instant(start["schedule"], zone, before).strftime("%H:%M") == start_utc_before
    assert _fire_instant(start["schedule"], zone, after).strftime("%H:%M") == start_utc_after


def test_a_night_window_on_the_daylight_saving_night_lasts_an_hour_longer():
    # Saturday 22:00 to Sunday 06:00 in New York, the night clocks go back (2025-11-02): 9 hours.
    jobs = _notebook_cronjobs("22:00-06:00", "America/New_York", days="Sat")
    assert jobs["start"]["spec"]["schedule"] == "0 22 * * 6"
    assert jobs["stop"]["spec"]["schedule"] == "0 6 * * 0"
    assert {j["spec"]["timeZone"] for j in jobs.values()} == {"America/New_York"}
    up = _fire_instant(jobs["start"]["spec"]["schedule"], "America/New_York", dt.date(2025, 11, 1))
    down = _fire_instant(jobs["stop"]["spec"]["schedule"], "America/New_York", dt.date(2025, 11, 2))
    assert down - up == dt.timedelta(hours=9)
    # A week earlier the same window is 8 hours.
    up = _fire_instant(jobs["start"]["spec"]["schedule"], "America/New_York", dt.date(2025, 10, 25))
    down = _fire_instant(jobs["stop"]["spec"]["schedule"], "America/New_York", dt.date(2025, 10, 26))
    assert down - up == dt.timedelta(hours=8)


def test_schedules_are_never_written_with_a_cron_tz_prefix():
    # CRON_TZ=/TZ= inside spec.schedule is rejected by the API server; the zone goes in spec.timeZone.
    for job in _notebook_cronjobs("08:00-18:00", "Europe/Berlin").values():
        assert "TZ" not in job["spec"]["schedule"] and len(job["spec"]["schedule"].split()) == 5
