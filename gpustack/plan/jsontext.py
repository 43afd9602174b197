"""The plan as indented JSON text, byte for byte what `json.dumps(value, indent=2, ensure_ascii=False)` gives.

Why not `json.dumps` itself: with `indent`, Python (before 3.13) leaves its C encoder for a pure-Python
one built of nested generators, and on a platform of 20,000 workloads the plan's JSON took 6.5 s of
CPU, a fifth of planning. One recursive function over the same types, appending to a list, does the
same in a fraction of that (`benchmarks/perf.py` prints both). Strings go through the C
`encode_basestring` that `json.dumps` uses; numbers are spelled as `json.dumps` spells them.
tests/test_jsontext.py checks the equality on plans and on arbitrary JSON values.
"""

from __future__ import annotations

from json.encoder import encode_basestring  # the C function when available, as json.dumps uses
from typing import Any

_INDENT = "  "
_PIECES = 512  # a container written in more pieces than this is joined into one
_INFINITY = float("inf")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    """A dict key as `json.dumps` turns it into a string (skipkeys=False)."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _scalar(value: object) -> str | None:
    """The text of a value that is not a container; None for a list, tuple or dict."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, (list, tuple, dict)):
        return None
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def indented_json(value: object) -> str:
    """`value` as `json.dumps(value, indent=2, ensure_ascii=False)` writes it."""
    out: list[str] = []
    append = out.append
    names: dict[str, str] = {}  # a key's text with its colon: the plan repeats a few hundred keys

    def joined(start: int) -> None:
        """A written container's many small pieces as one string: a platform's plan is tens of millions
        of pieces, which as separate strings took several times the memory of the text."""
        if len(out) - start >= _PIECES:
            out[start:] = ["".join(out[start:])]

    def write(value: object, level: int) -> None:
        kind = type(value)
        if kind is dict:
            write_dict(value, level)  # type: ignore[arg-type]
        elif kind is list or kind is tuple:
            write_list(value, level)  # type: ignore[arg-type]
        else:  # numbers, booleans, None, and subclasses of str or of the containers
            text = _scalar(value)
            if text is not None:
                append(text)
            elif isinstance(value, dict):
                write_dict(value, level)
            else:
                write_list(value, level)  # type: ignore[arg-type]

    def write_dict(value: dict[Any, Any], level: int) -> None:
        if not value:
            append("{}")
            return
        start = len(out)
        inner = "\n" + _INDENT * (level + 1)
        lead, separator = "{" + inner, "," + inner
        for key, item in value.items():
            name = names.get(key) if type(key) is str else None
            if name is None:
                name = encode_basestring(_key(key)) + ": "
                if type(key) is str:
                    names[key] = name
            kind = type(item)  # the common leaves inline: a call per value was most of the time
            if kind is str:
                append(lead + name + encode_basestring(item))
            elif kind is int:
                append(lead + name + int.__repr__(item))
            else:
                append(lead + name)
                write(item, level + 1)
            lead = separator
        append("\n" + _INDENT * level + "}")
        joined(start)

    def write_list(value: list[Any] | tuple[Any, ...], level: int) -> None:
        if not value:
            append("[]")
            return
        start = len(out)
        inner = "\n" + _INDENT * (level + 1)
        lead, separator = "[" + inner, "," + inner
        for item in value:
            if type(item) is str:
                append(lead + encode_basestring(item))
            else:
                append(lead)
                write(item, level + 1)
            lead = separator
        append("\n" + _INDENT * level + "]")
        joined(start)

    write(value, 0)
    return "".join(out)
