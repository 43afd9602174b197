"""Errors meant for people: where, what, what is allowed, and a guess at what was meant.

Every problem found in a spec becomes a `Problem` with the file, line and column of the offending
value, its field path (``workloads[2].mig``), the bad value and the rule it breaks. Problems are
collected rather than raised one at a time, so a user fixes a spec in one pass.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Sequence


@dataclasses.dataclass(frozen=True)
class Location:
    file: str
    line: int  # 1-based
    column: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclasses.dataclass(frozen=True)
class Problem:
    location: Location | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        field = f"{self.path}: " if self.path else ""
        return f"{where}{field}{self.message}"


class SpecError(Exception):
    """A spec that cannot be compiled; carries every problem found."""

    def __init__(self, problems: Sequence[Problem], partial: object | None = None):
        self.problems = tuple(problems)
        # The parts of the spec that read cleanly (a `Spec` of its valid targets and workloads), for the
        # checks that do not depend on the parts that did not; None when nothing usable was read.
        self.partial = partial
        super().__init__("\n".join(str(p) for p in self.problems))


class UsageError(Exception):
    """A command used wrongly (unknown target, bad argument): exit code 2, one line."""


def did_you_mean(value: object, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' when a choice is close to `value`, else ''."""
    if not isinstance(value, str):
        return ""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    if value.lower() in lowered and lowered[value.lower()] != value:
        return f" (did you mean {lowered[value.lower()]!r}?)"
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    if not close:
        close = [lowered[c] for c in difflib.get_close_matches(value.lower(), lowered, n=1, cutoff=0.6)]
    return f" (did you mean {close[0]!r}?)" if close else ""


def show(value: object, limit: int = 60) -> str:
    """A short, safe rendering of a user value for messages."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def one_of(choices: Iterable[str]) -> str:
    return ", ".join(choices)
