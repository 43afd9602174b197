"""Typed reads from a located document, collecting every problem instead of stopping at the first.

Each `read_*` method returns the converted value, or `BAD` after recording a problem that names the
location, the field path, the bad value and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpustack.errors import Problem, did_you_mean, one_of, show
from gpustack.spec.yamlsource import Document, Path, path_str


class _Bad:
    def __repr__(self) -> str:
        return "BAD"

    def __bool__(self) -> bool:
        return False


BAD: Any = _Bad()

# Patterns are applied with fullmatch: `$` alone lets a trailing newline through.
DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
MAX_UNKNOWN_KEYS = 20  # per mapping; the rest are counted in one problem


def type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class Reader:
    def __init__(self, doc: Document):
        self.doc = doc
        self.problems: list[Problem] = []

    # -- reporting ----------------------------------------------------------------------------
    def problem(self, path: Path, message: str, *, at_key: bool = False) -> Any:
        where = self.doc.where_key(path) if at_key else self.doc.where(path)
        self.problems.append(Problem(where, path_str(path), message))
        return BAD

    def get(self, path: Path) -> Any:
        value: Any = self.doc.data
        for part in path:
            value = value[part]
        return value

    # -- structure ----------------------------------------------------------------------------
    def mapping(self, path: Path, value: Any, *, required: Iterable[str] = (),
                optional: Iterable[str] = (), what: str = "") -> dict[str, Any] | Any:
        """Check a mapping's keys: unknown keys get a 'did you mean', missing ones are named."""
        required = tuple(required)
        allowed = required + tuple(optional)
        if not isinstance(value, dict):
            return self.problem(path, f"expected a mapping{' (' + what + ')' if what else ''}, got {type_name(value)}"
                                      f" {show(value) if value is not None else ''}".rstrip())
        ok = True
        unknown = 0
        for key in value:
            if key not in allowed:
                unknown += 1
                if unknown > MAX_UNKNOWN_KEYS:  # a flood of keys: name the first ones, count the rest
                    continue
            if path + (key,) in self.doc.typed_keys:
                ok = False
                self.typed_key_problem(path + (key,))
            elif key not in allowed:
                ok = False
                self.problem(path + (key,), f"unknown key {key!r}{did_you_mean(key, allowed)}; "
                                            f"allowed here: {one_of(allowed)}", at_key=True)
        if unknown > MAX_UNKNOWN_KEYS:
            self.problem(path, f"{unknown - MAX_UNKNOWN_KEYS:,} more unknown keys; allowed here: {one_of(allowed)}")
        for key in required:
            if key not in value:
                ok = False
                self.problem(path, f"missing required key {key!r}")
        return value if ok else {k: v for k, v in value.items() if k in allowed}

    def typed_key_problem(self, path: Path) -> Any:
        kind = {"bool": "true/false", "int": "a number", "float": "a number", "NoneType": "nothing (null)"}.get(
            self.doc.typed_keys[path], self.doc.typed_keys[path])
        return self.problem(path, f"YAML reads the key {path[-1]!r} as {kind}, not text; quote it: \"{path[-1]}\"",
                            at_key=True)

    def sequence(self, path: Path, value: Any, *, min_items: int = 0, what: str = "") -> list[Any] | Any:
        if not isinstance(value, list):
            return self.problem(path, f"expected a list{' of ' + what if what else ''}, got {type_name(value)}")
        if len(value) < min_items:
            return self.problem(path, f"needs at least {min_items} {what or 'item'}{'s' if min_items != 1 else ''}")
        return value

    # -- scalars ------------------------------------------------------------------------------
    def string(self, path: Path, value: Any, *, pattern: re.Pattern[str] | None = None,
               rule: str = "", max_len: int | None = None) -> str | Any:
        if not isinstance(value, str):
            return self.problem(path, f"expected a string, got {type_name(value)} {show(value)}")
        if max_len is not None and len(value) > max_len:
            return self.problem(path, f"{show(value)} is {len(value)} characters; at most {max_len} allowed")
        if pattern is not None and not pattern.fullmatch(value):
            return self.problem(path, f"{show(value)} is not valid: {rule}")
        return value

    def dns_label(self, path: Path, value: Any, *, max_len: int = 63) -> str | Any:
        return self.string(path, value, pattern=DNS_LABEL, max_len=max_len,
                           rule=f"use lowercase letters, digits and '-', starting and ending with a letter or digit"
                                f" (a DNS label, at most {max_len} characters)")

    def choice(self, path: Path, value: Any, choices: Iterable[str],
               aliases: Mapping[str, str] | None = None) -> str | Any:
        choices = tuple(choices)
        aliases = aliases or {}
        if isinstance(value, str) and value in choices:
            return value
        if isinstance(value, str) and value in aliases:
            return aliases[value]
        every = choices + tuple(aliases)
        return self.problem(
            path,
            f"{show(value)} is not allowed{did_you_mean(value, every)}; "
            f"allowed: {one_of(choices)}"
            + (f" (aliases: {one_of(f'{a}={t}' for a, t in aliases.items())})" if aliases else ""),
        )

    def boolean(self, path: Path, value: Any) -> bool | Any:
        if isinstance(value, bool):
            return value
        return self.problem(path, f"expected true or false, got {type_name(value)} {show(value)}")

    def integer(self, path: Path, value: Any, *, minimum: int | None = None,
                maximum: int | None = None) -> int | Any:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                return self.problem(path, f"expected a whole number, got {type_name(value)} {show(value)}")
        return self._bounds(path, value, minimum, maximum)

    def number(self, path: Path, value: Any, *, minimum: float | None = None, maximum: float | None = None,
               exclusive_minimum: bool = False, exclusive_maximum: bool = False) -> float | Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self.problem(path, f"expected a number, got {type_name(value)} {show(value)}")
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            return self.problem(path, f"expected a finite number, got {value}")
        if minimum is not None and (value < minimum or (exclusive_minimum and value == minimum)):
            bound = f"greater than {minimum:g}" if exclusive_minimum else f"at least {minimum:g}"
            return self.problem(path, f"{value:g} is too small; it must be {bound}")
        if maximum is not None and (value > maximum or (exclusive_maximum and value == maximum)):
            bound = f"less than {maximum:g}" if exclusive_maximum else f"at most {maximum:g}"
            return self.problem(path, f"{value:g} is too large; it must be {bound}")
        return value

    def _bounds(self, path: Path, value: int, minimum: int | None, maximum: int | None) -> int | Any:
        if minimum is not None and value < minimum:
            return self.problem(path, f"{value} is too small; it must be at least {minimum}")
        if maximum is not None and value > maximum:
            return self.problem(path, f"{value:,} is too large; it must be at most {maximum:,}")
        return value

    def parsed(self, path: Path, value: Any, parse: Callable[[Any], Any]) -> Any:
        """Run a parser that raises ValueError with a message for people."""
        try:
            return parse(value)
        except ValueError as exc:
            return self.problem(path, str(exc))
