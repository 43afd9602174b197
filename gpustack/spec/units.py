"""Kubernetes-style quantities and schedule windows, parsed with messages for people."""

from __future__ import annotations

import math
import re

from gpustack.errors import did_you_mean, show

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_MEMORY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?|k)\s*$")
_CPU = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)(m?)\s*$")

MAX_MEMORY_GIB = 64 * 1024  # 64 TiB: far above any node, small enough to catch typos
MAX_CPU = 4096


def parse_memory_gib(value: object) -> float:
    """'256Gi' -> 256.0; '512Mi' -> 0.5; '20G' -> 18.63. A bare number is refused: it has no unit."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a memory quantity such as '16Gi', got {show(value)}")
    if isinstance(value, (int, float)):
        raise ValueError(f"{show(value)} has no unit; write it with one, e.g. '{value}Gi' or '{value}Mi'")
    if not isinstance(value, str):
        raise ValueError(f"expected a memory quantity such as '16Gi', got {show(value)}")
    match = _MEMORY.fullmatch(value)
    if not match:
        raise ValueError(f"{show(value)} is not a memory quantity; use a number and a unit: "
                         "Ki, Mi, Gi, Ti (powers of 1024) or k, M, G, T (powers of 1000), e.g. '16Gi'")
    number, unit = float(match.group(1)), match.group(2)
    factor = _BINARY.get(unit) or _DECIMAL[unit]
    gib = number * factor / 2**30
    if gib <= 0:
        raise ValueError(f"{show(value)} must be more than zero")
    if gib > MAX_MEMORY_GIB:
        raise ValueError(f"{show(value)} is more than {MAX_MEMORY_GIB // 1024} TiB; no node has that much")
    return gib


MIN_DISK_GIB = 30  # room for the OS and one CUDA image; each cloud's own limits are checked per target


def parse_disk_gib(value: object) -> int:
    """'300Gi' -> 300; '1Ti' -> 1024; '500G' -> 466 (whole GiB, rounded up)."""
    gib = parse_memory_gib(value)
    whole = math.ceil(gib - 1e-9)
    if whole < MIN_DISK_GIB:
        raise ValueError(f"{show(value)} is less than {MIN_DISK_GIB}Gi: too small for a GPU node's OS and images")
    return whole


def parse_cpu(value: object) -> float:
    """4 -> 4.0; '500m' -> 0.5; '2.5' -> 2.5 (cores)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected CPU cores such as 4 or '500m', got {show(value)}")
    if isinstance(value, (int, float)):
        cores = float(value)
    elif isinstance(value, str) and (match := _CPU.fullmatch(value)):
        cores = float(match.group(1)) / (1000 if match.group(2) else 1)
    else:
        raise ValueError(f"{show(value)} is not a CPU quantity; use cores (4, 0.5) or millicores ('500m')")
    if not cores > 0:
        raise ValueError(f"{show(value)} must be more than zero cores")
    if cores > MAX_CPU:
        raise ValueError(f"{show(value)} cores is more than any node has (at most {MAX_CPU})")
    return cores


DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_DAY_ALIASES = {"daily": "Mon-Sun", "weekdays": "Mon-Fri", "weekends": "Sat-Sun"}
_TIME = re.compile(r"^([01][0-9]|2[0-4]):([0-5][0-9])$")


def _day(text: str, whole: str) -> int:
    for i, name in enumerate(DAY_NAMES):
        if text.strip().lower() in (name.lower(), _LONG[i]):
            return i
    raise ValueError(f"{text.strip()!r} in {whole!r} is not a day{did_you_mean(text.strip().title(), DAY_NAMES)}; "
                     f"use {', '.join(DAY_NAMES)}, ranges such as 'Mon-Fri' (also 'Fri-Mon'), lists such as "
                     "'Mon,Wed,Fri', or 'daily' / 'weekdays' / 'weekends'")


_LONG = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def parse_days(value: object) -> tuple[int, ...]:
    """'Mon-Fri' -> (0, 1, 2, 3, 4); 'Fri-Mon' wraps; 'Mon,Wed' lists; 'daily' is every day."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected days such as 'Mon-Fri', got {show(value)}")
    text = _DAY_ALIASES.get(value.strip().lower(), value)
    days: set[int] = set()
    for part in text.split(","):
        if "-" in part:
            first, _, last = part.partition("-")
            a, b = _day(first, value), _day(last, value)
            span = (b - a) % 7
            days.update((a + i) % 7 for i in range(span + 1))
        else:
            days.add(_day(part, value))
    return tuple(sorted(days))


def parse_hours(value: object) -> tuple[int, int]:
    """'08:00-18:00' -> (480, 1080); '22:00-06:00' crosses midnight; '00:00-24:00' is all day."""
    if not isinstance(value, str):
        raise ValueError(f"expected hours such as \"08:00-18:00\" (quoted), got {show(value)}")
    start_text, sep, end_text = value.strip().partition("-")
    start_match, end_match = _TIME.fullmatch(start_text.strip()), _TIME.fullmatch(end_text.strip())
    if not sep or not start_match or not end_match:
        raise ValueError(f"{show(value)} is not a window; use \"HH:MM-HH:MM\" in 24-hour time, e.g. \"08:00-18:00\"")
    start = int(start_match.group(1)) * 60 + int(start_match.group(2))
    end = int(end_match.group(1)) * 60 + int(end_match.group(2))
    if start >= 24 * 60 or end > 24 * 60:
        raise ValueError(f"{show(value)}: hours run from 00:00 to 24:00")
    if end == 0:
        end = 24 * 60  # "22:00-00:00" ends at midnight
    if start == end:
        raise ValueError(f"{show(value)} is an empty window; to run all day use \"00:00-24:00\"")
    return start, end


# IANA zone names: ASCII letters, digits, '_', '-', '+', at most three parts, each at most 14 characters
# (tzdata's theory.html), e.g. America/Argentina/Buenos_Aires, Etc/GMT+5.
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]{0,29}(/[A-Za-z0-9][A-Za-z0-9_+-]{0,29}){0,2}")


def parse_timezone(value: object) -> str:
    import zoneinfo  # local: only specs with schedules pay for it

    if not isinstance(value, str) or not value:
        raise ValueError(f"expected an IANA time zone such as 'Europe/Berlin', got {show(value)}")
    try:
        if not _ZONE_NAME.fullmatch(value):  # the form of tzdata's names; bounds the file name too
            raise ValueError(value)
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: 'Europe' is a tzdata folder
        from gpustack.spec.timezones import suggestion

        advice = suggestion(value)
        if advice is not None:
            raise ValueError(f"{show(value)} is not an IANA time zone: it is {advice}") from None
        # Region/city names only: a spelling match among the short legacy names is wrong advice (CEST -> EST).
        names = {name for name in zoneinfo.available_timezones() if "/" in name and not name.startswith("Etc/")}
        raise ValueError(f"{show(value)} is not an IANA time zone{did_you_mean(value, names)}; "
                         "use a name such as 'Europe/Berlin', 'America/New_York' or 'UTC'") from None
    return value


# Zone names of the tz database kept only for backward compatibility: abbreviations and POSIX-style
# rules that are not where anybody lives. EST, MST and HST are fixed offsets with no daylight saving
# time (since tzdata 2024b links to America/Panama, America/Phoenix, Pacific/Honolulu), so a team in
# New York on EST is an hour off all summer. Source: the tz database's `backward` file
# (https://github.com/eggert/tz/blob/main/backward) and https://data.iana.org/time-zones/theory.html.
_LEGACY_ZONES = {
    "EST": ("a fixed UTC-5 with no daylight saving time", "America/New_York"),
    "MST": ("a fixed UTC-7 with no daylight saving time", "America/Denver (or America/Phoenix in Arizona)"),
    "HST": ("a fixed UTC-10", "Pacific/Honolulu"),
    "EST5EDT": ("a legacy US rule name", "America/New_York"),
    "CST6CDT": ("a legacy US rule name", "America/Chicago"),
    "MST7MDT": ("a legacy US rule name", "America/Denver"),
    "PST8PDT": ("a legacy US rule name", "America/Los_Angeles"),
    "CET": ("a legacy rule name", "Europe/Berlin, Europe/Paris, ... (the city of the team)"),
    "MET": ("a legacy rule name", "Europe/Berlin, Europe/Paris, ... (the city of the team)"),
    "EET": ("a legacy rule name", "Europe/Athens, Europe/Helsinki, ... (the city of the team)"),
    "WET": ("a legacy rule name", "Europe/Lisbon"),
}
# Zones teams at a fixed offset's standard time are often in (the example in the advice, nothing more).
_AT_OFFSET = {"+8": "America/Los_Angeles", "+7": "America/Denver", "+6": "America/Chicago",
              "+5": "America/New_York", "+3": "America/Sao_Paulo", "-1": "Europe/Berlin", "-2": "Europe/Athens",
              "-3": "Europe/Moscow", "-8": "Asia/Singapore", "-9": "Asia/Tokyo", "-10": "Australia/Sydney"}
_UNIVERSAL = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "GMT", "Etc/GMT", "Universal", "Etc/Universal", "Zulu",
              "Etc/Zulu", "Etc/GMT0", "GMT0", "GMT+0", "GMT-0", "Etc/GMT+0", "Etc/GMT-0", "Etc/Greenwich", "Greenwich"}


def timezone_advice(zone: str) -> str | None:
    """Why a valid zone name is probably not what a team means, and the name to use; None when it is fine."""
    if zone in _UNIVERSAL:
        return None
    if zone in _LEGACY_ZONES:
        what, use = _LEGACY_ZONES[zone]
        return f"{zone!r} is {what}, kept in the tz database for backward compatibility; use the team's IANA zone, e.g. {use}"
    if zone.startswith("Etc/GMT"):
        hours = zone.removeprefix("Etc/GMT")
        utc = f"UTC{'-' if hours.startswith('+') else '+'}{hours[1:]}"
        return (f"{zone!r} is a fixed offset with no daylight saving time (and its sign is inverted: {zone} is "
                f"{utc}); use the team's IANA zone, e.g. {_AT_OFFSET.get(hours, 'Europe/Berlin or Asia/Tokyo')}")
    if "/" not in zone:
        return (f"{zone!r} is a legacy alias of the tz database, not a region/city name; use the team's IANA "
                "zone, e.g. America/New_York or Europe/Berlin")
    return None
