"""What to suggest for a time zone the tz database does not know: abbreviations and UTC offsets.

Abbreviations such as CEST or IST are not zone names, and they are ambiguous (IST is India, Ireland
and Israel), so a spelling match is wrong advice (CEST is not the US EST). tzdata's theory file
says so: "numeric time zone abbreviations ... and alphabetic ones are not unique"
(https://data.iana.org/time-zones/theory.html, "Time zone abbreviations"). Each name below is the
zone whose abbreviation it is in the tz database's own files (`europe`, `northamerica`, `asia`,
`australasia`, `southamerica` at https://github.com/eggert/tz, FORMAT column, e.g. "CE%sT" for
Europe/Berlin). An offset (UTC+1) maps to the POSIX-style `Etc/GMT-1`, whose sign is inverted.
"""

from __future__ import annotations

import re

# abbreviation -> the zones that use it (the first is the example; several: the team's city decides)
ABBREVIATIONS = {
    "CET": ("Europe/Berlin", "Europe/Paris", "Europe/Madrid"), "CEST": ("Europe/Berlin", "Europe/Paris",
                                                                           "Europe/Madrid"),
    "MEZ": ("Europe/Berlin",), "MESZ": ("Europe/Berlin",),
    "WET": ("Europe/Lisbon",), "WEST": ("Europe/Lisbon",),
    "EET": ("Europe/Athens", "Europe/Helsinki", "Europe/Bucharest"),
    "EEST": ("Europe/Athens", "Europe/Helsinki", "Europe/Bucharest"),
    "BST": ("Europe/London",), "GMT": ("Europe/London",), "IST": ("Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"),
    "MSK": ("Europe/Moscow",),
    "EST": ("America/New_York",), "EDT": ("America/New_York",), "CST": ("America/Chicago", "Asia/Shanghai"),
    "CDT": ("America/Chicago",), "MST": ("America/Denver", "America/Phoenix"), "MDT": ("America/Denver",),
    "PST": ("America/Los_Angeles",), "PDT": ("America/Los_Angeles",), "AKST": ("America/Anchorage",),
    "AKDT": ("America/Anchorage",), "HST": ("Pacific/Honolulu",), "BRT": ("America/Sao_Paulo",),
    "JST": ("Asia/Tokyo",), "KST": ("Asia/Seoul",), "HKT": ("Asia/Hong_Kong",), "SGT": ("Asia/Singapore",),
    "AEST": ("Australia/Sydney", "Australia/Brisbane"), "AEDT": ("Australia/Sydney",),
    "ACST": ("Australia/Adelaide", "Australia/Darwin"), "AWST": ("Australia/Perth",),
    "NZST": ("Pacific/Auckland",), "NZDT": ("Pacific/Auckland",),
}
# Offsets of no Etc/GMT zone (those are whole hours only): the zones that keep them.
_PART_HOURS = {"+05:30": "Asia/Kolkata", "+05:45": "Asia/Kathmandu", "+09:30": "Australia/Adelaide",
               "+03:30": "Asia/Tehran", "+04:30": "Asia/Kabul", "+06:30": "Asia/Yangon", "-03:30": "America/St_Johns",
               "+10:30": "Australia/Lord_Howe", "-09:30": "Pacific/Marquesas", "+08:45": "Australia/Eucla",
               "+12:45": "Pacific/Chatham"}
# A city at each whole-hour offset's standard time, for the example (the sign as people write it: UTC+1).
_CITY_AT = {1: "Europe/Berlin", 2: "Europe/Athens", 3: "Europe/Moscow", 8: "Asia/Singapore", 9: "Asia/Tokyo",
            10: "Australia/Sydney", 0: "Europe/London", -3: "America/Sao_Paulo", -5: "America/New_York",
            -6: "America/Chicago", -7: "America/Denver", -8: "America/Los_Angeles"}
_OFFSET = re.compile(r"(?:UTC|GMT|Z)?\s*([+-])\s*([0-9]{1,2})(?::?([0-9]{2}))?", re.IGNORECASE)
_ABBREVIATION = re.compile(r"[A-Za-z]{2,5}")


def suggestion(value: str) -> str | None:
    """What `value` is and what to write instead, when it is an abbreviation or a UTC offset, else None
    ("a UTC offset: use ...")."""
    text = value.strip()
    if (match := _OFFSET.fullmatch(text)) is not None:
        return _offset_advice(match.group(1), int(match.group(2)), int(match.group(3) or 0))
    if _ABBREVIATION.fullmatch(text):
        zones = ABBREVIATIONS.get(text.upper())
        if zones is None:
            return ("perhaps an abbreviation, and abbreviations are ambiguous: use the team's "
                    "region/city zone, e.g. 'Europe/Berlin' or 'America/New_York'")
        listed = " or ".join(repr(z) for z in zones)
        which = " (abbreviations are ambiguous: the team's city decides)" if len(zones) > 1 else ""
        return (f"an abbreviation: use {listed}{which}; a zone name follows the city's daylight "
                "saving time")
    return None


def _offset_advice(sign: str, hours: int, minutes: int) -> str:
    shown = f"UTC{sign}{hours:02d}:{minutes:02d}"
    if minutes or hours > 14:
        zone = _PART_HOURS.get(f"{sign}{hours:02d}:{minutes:02d}")
        if zone is None:
            return f"a UTC offset of no zone ({shown}): use the team's region/city zone"
        return f"a UTC offset: use {zone!r} (it keeps {shown})"
    offset = hours if sign == "+" else -hours
    if offset == 0:
        return "a UTC offset: use 'UTC'"
    etc = f"Etc/GMT{'-' if offset > 0 else '+'}{hours}"
    city = _CITY_AT.get(offset)
    city = f", e.g. {city!r}" if city else ""
    return (f"a UTC offset: use {etc!r} (a fixed {shown}: the tz database's Etc names invert "
            f"the sign, POSIX-style, so {etc} is {shown}), or better the team's city zone{city}, which follows "
            "its daylight saving time")
