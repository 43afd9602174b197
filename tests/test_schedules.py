"""Active windows as start/stop crons: what EKS scheduled actions and in-cluster CronJobs run."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.schedules import DAY, WEEK, cron_days, window_crons
from gpustack.spec.units import parse_days, parse_hours


def window(days: str, hours: str) -> SimpleNamespace:
    start, end = parse_hours(hours)
    return SimpleNamespace(weekdays=parse_days(days), start_minute=start, end_minute=end)


@pytest.mark.parametrize("days, hours, starts, stops", [
    ("Mon-Fri", "08:00-18:00", ("0 8 * * 1-5",), ("0 18 * * 1-5",)),
    # Crossing midnight: the stop fires the next morning, Tuesday to Saturday.
    ("Mon-Fri", "22:00-06:00", ("0 22 * * 1-5",), ("0 6 * * 2-6",)),
    ("Mon-Fri", "08:30-17:45", ("30 8 * * 1-5",), ("45 17 * * 1-5",)),
    ("Mon-Fri", "18:00-24:00", ("0 18 * * 1-5",), ("0 0 * * 2-6",)),
    # Whole days that touch merge into one stretch: on Monday at midnight, off on Saturday.
    ("Mon-Fri", "00:00-24:00", ("0 0 * * 1",), ("0 0 * * 6",)),
    ("Mon,Wed", "00:00-24:00", ("0 0 * * 1,3",), ("0 0 * * 2,4",)),
    # Weekends: Sunday is 0 in cron, so the list reads "0,6"; Sunday night ends on Monday.
    ("Sat-Sun", "10:00-16:00", ("0 10 * * 0,6",), ("0 16 * * 0,6",)),
    ("Sun", "22:00-06:00", ("0 22 * * 0",), ("0 6 * * 1",)),
    # Across the end of the week: Friday to Monday, whole days.
    ("Fri-Mon", "00:00-24:00", ("0 0 * * 5",), ("0 0 * * 2",)),
    ("daily", "22:00-06:00", ("0 22 * * *",), ("0 6 * * *",)),
])
def test_window_crons(days, hours, starts, stops):
    assert window_crons(window(days, hours)) == (starts, stops)


def test_a_window_that_never_closes_needs_no_actions():
    assert window_crons(window("daily", "00:00-24:00")) == ((), ())


def test_cron_days_uses_numbers_sunday_first():
    assert cron_days({0, 1, 2, 3, 4}) == "1-5"
    assert cron_days({6}) == "0"
    assert cron_days({0, 2, 4}) == "1,3,5"
    assert cron_days(set(range(7))) == "*"


def _fires(cron: str) -> set[int]:
    """Minutes of the week (0 = Monday 00:00) a cron of the forms above fires at."""
    minute, hour, _, _, dow = cron.split()
    days: set[int] = set()
    for part in ("0-6" if dow == "*" else dow).split(","):
        first, _, last = part.partition("-")
        days.update(range(int(first), int(last or first) + 1))
    return {((d - 1) % 7) * DAY + int(hour) * 60 + int(minute) for d in days}


@settings(max_examples=60, deadline=None)
@given(days=st.sets(st.integers(0, 6), min_size=1),
       start=st.integers(0, DAY - 1), end=st.integers(1, DAY))
def test_replaying_the_crons_gives_the_window(days, start, end):
    """Following the starts and stops minute by minute is on exactly when the window is."""
    if start == end:
        end = (end % DAY) + 1
    span = end - start if end > start else end - start + DAY
    schedule = SimpleNamespace(weekdays=tuple(sorted(days)), start_minute=start, end_minute=end)
    starts, stops = window_crons(schedule)
    active = {(d * DAY + start + m) % WEEK for d in days for m in range(span)}
    if len(active) == WEEK:
        assert (starts, stops) == ((), ())
        return
    on = {m for c in starts for m in _fires(c)}
    off = {m for c in stops for m in _fires(c)}
    assert on and off and not on & off
    state = (WEEK - 1) in active  # the state the week starts in, as Sunday 23:59 left it
    for minute in range(WEEK):
        state = True if minute in on else False if minute in off else state
        assert state == (minute in active), minute


NOTEBOOK = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4,
            "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}}


def _zone_warnings(zone: str) -> list[str]:
    from conftest import spec_text
    from gpustack.plan import build_plan
    from gpustack.spec import load_text

    workload = {**NOTEBOOK, "schedule": {**NOTEBOOK["schedule"], "timezone": zone}}
    plan = build_plan(load_text(spec_text([workload]), "s.yaml"))
    return [w.message for w in plan.warnings if w.code == "timezone-legacy"]


@pytest.mark.parametrize("zone, suggestion", [
    ("EST", "America/New_York"),  # fixed UTC-5: an hour off all summer in New York
    ("MST", "America/Denver"),
    ("PST8PDT", "America/Los_Angeles"),
    ("Etc/GMT+5", "America/New_York"),
    ("Etc/GMT-9", "'Etc/GMT-9' is a fixed offset with no daylight saving time (and its sign is inverted: Etc/GMT-9 "
                  "is UTC+9); use the team's IANA zone, e.g. Asia/Tokyo"),
    ("Etc/GMT+12", "Etc/GMT+12 is UTC-12); use the team's IANA zone, e.g. Europe/Berlin or Asia/Tokyo"),
    ("Japan", "IANA zone"),
])
def test_a_legacy_zone_is_accepted_with_a_warning_naming_the_iana_zone(zone, suggestion):
    [message] = _zone_warnings(zone)
    assert f"'nb': workloads[0].schedule.timezone: {zone!r}" in message and suggestion in message


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "UTC", "Etc/UTC", "GMT"])
def test_region_zones_and_utc_pass_quietly(zone):
    assert _zone_warnings(zone) == []
