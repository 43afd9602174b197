"""How old a price is: catalog dates are YYYY-MM-DD or YYYY-MM; a month counts from its first day."""

from __future__ import annotations

import datetime

MAX_PRICE_AGE_DAYS = 180  # past this, a plan's prices are called stale (list prices move several times a year)


def start_of(as_of: str) -> datetime.date | None:
    """The first day `as_of` can mean ("2025-11" -> 2025-11-01), None when it is not a date."""
    parts = as_of.strip().split("-")
    try:
        numbers = [int(p) for p in parts]
        if len(numbers) == 2:
            return datetime.date(numbers[0], numbers[1], 1)
        if len(numbers) == 3:
            return datetime.date(numbers[0], numbers[1], numbers[2])
    except ValueError:
        return None
    return None


def oldest(dates: str) -> str:
    """The oldest date of a plan's `prices_as_of` ("2024-11-07 to 2025-09" -> "2024-11-07")."""
    return dates.split(" to ")[0]


def age_days(dates: str, today: datetime.date) -> int | None:
    """Days from the oldest of `dates` to `today`; None when it is not a date (e.g. "unknown")."""
    start = start_of(oldest(dates))
    return (today - start).days if start else None


REFRESH = "run gpustack catalog refresh, or give current or negotiated prices with --catalog FILE"


def stale_message(dates: str, today: datetime.date) -> str | None:
    """What to tell a user whose prices date from `dates`, or None when they are recent enough."""
    age = age_days(dates, today)
    if age is None:
        return f"the prices have no date ({dates}); give dated rows with --catalog FILE"
    if age <= MAX_PRICE_AGE_DAYS:
        return None
    return f"prices as of {dates}: the oldest is {age} days old (more than {MAX_PRICE_AGE_DAYS}); {REFRESH}"


def stale_targets_message(as_of: list[tuple[str, str]], today: datetime.date) -> str | None:
    """One message for every target (name, its `prices_as_of`) whose prices are old or undated on
    `today`, naming each with its age; None when all are recent enough."""
    old, undated = [], []
    for name, dates in as_of:
        age = age_days(dates, today)
        if age is None:
            undated.append(f"{name} ({dates})")
        elif age > MAX_PRICE_AGE_DAYS:
            old.append(f"{name} {age} days (as of {dates})")
    parts = []
    if old:
        parts.append(f"prices more than {MAX_PRICE_AGE_DAYS} days old: {', '.join(old)}")
    if undated:
        parts.append(f"prices without a date: {', '.join(undated)}, give dated rows with --catalog FILE")
    return f"{'; '.join(parts)}; {REFRESH}" if parts else None
