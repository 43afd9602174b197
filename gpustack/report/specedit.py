"""Changing a spec's YAML text in place: only the values changed, comments, order and quoting kept.

The spec loader records where every value starts (gpustack/spec/yamlsource.py `Document.marks`); the
same text composed again gives each node's extent, checked against that record. A value written once
and used again through an anchor, alias or merge key is not edited (the change would reach every use):
that is an error saying which field to change by hand.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

import yaml

from gpustack.errors import UsageError
from gpustack.spec.yamlsource import Document, Path, path_str

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%/-]{0,62}")


@dataclasses.dataclass(frozen=True)
class Edit:
    """Set the value at `path` (which exists), or add `path[-1]` to the mapping at `path[:-1]`."""

    path: Path
    value: Any
    add: bool = False


def yaml_text(value: Any) -> str:
    """A value as YAML flow text: plain where that reads back as the same string, else JSON-quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and yaml.safe_load(value) == value:
            return value
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no YAML text for {type(value).__name__}")


class SpecText:
    """A spec's text and its loaded document, composed once for any number of edits."""

    def __init__(self, text: str, doc: Document):
        self.text = text
        self.doc = doc
        root = yaml.compose(text, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader)
        if root is None:
            raise UsageError("--write-spec: the spec is empty")
        self.root: yaml.Node = root
        self.shared = _shared_spans(text)

    def apply(self, edits: Sequence[Edit]) -> str:
        """The text with every edit made, each at its located position (the last in the file first)."""
        changes = [_change(self.text, self.doc, self.root, self.shared, edit) for edit in edits]
        out = self.text
        for start, end, new in sorted(changes, reverse=True):
            out = out[:start] + new + out[end:]
        return out


def _node(root: yaml.Node, doc: Document, path: Path) -> yaml.Node:
    node = root
    for part in path:
        found = None
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            found = node.value[part]
        if found is None:
            raise _refused(path, "it is not written in the spec itself (a merge key or an alias gives it)")
        node = found
    mark = doc.marks.get(tuple(path))
    if mark is None or mark != (node.start_mark.line, node.start_mark.column):
        raise _refused(path, "its position differs from the one the spec loader recorded")
    return node


def _change(text: str, doc: Document, root: yaml.Node, shared: list[tuple[int, int]],
            edit: Edit) -> tuple[int, int, str]:
    if edit.add:
        parent = _node(root, doc, edit.path[:-1])
        _check_not_shared(shared, parent, edit.path)
        return _addition(text, parent, str(edit.path[-1]), yaml_text(edit.value))
    node = _node(root, doc, edit.path)
    _check_not_shared(shared, node, edit.path)
    if not isinstance(node, yaml.ScalarNode):
        raise _refused(edit.path, "it is not a single value")
    return node.start_mark.index, node.end_mark.index, yaml_text(edit.value)


def _addition(text: str, mapping: yaml.Node, key: str, value: str) -> tuple[int, int, str]:
    if not isinstance(mapping, yaml.MappingNode) or not mapping.value:
        raise UsageError(f"cannot add {key!r}: its place in the spec is not a mapping")
    if mapping.flow_style:
        closing = text.rindex("}", 0, mapping.end_mark.index)
        return closing, closing, f", {key}: {value}"
    indent = mapping.value[0][0].start_mark.column
    last = mapping.value[-1][1].end_mark
    assert last is not None  # composed from text: every node has marks
    line_start = text.rfind("\n", 0, last.index) + 1
    if text[line_start:last.index].strip() == "":  # a block value ends where the next line starts
        position = line_start
    else:
        newline = text.find("\n", last.index)
        position = len(text) if newline < 0 else newline + 1
    prefix = "" if position == 0 or text[position - 1] == "\n" else "\n"
    return position, position, f"{prefix}{' ' * indent}{key}: {value}\n"


def _shared_spans(text: str) -> list[tuple[int, int]]:
    """The extents of anchored nodes: what an alias or merge key may use again."""
    spans = []
    stack: list[tuple[int, bool]] = []
    for event in yaml.parse(text, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):
        begin, end = _index(event.start_mark), _index(event.end_mark)
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append((begin, event.anchor is not None))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            start, anchored = stack.pop()
            if anchored:
                spans.append((start, end))
        elif isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
            spans.append((begin, end))
    return spans


def _index(mark: object) -> int:
    index = getattr(mark, "index", None)
    assert isinstance(index, int)  # parsed from text: every event has marks
    return index


def _check_not_shared(shared: list[tuple[int, int]], node: yaml.Node, path: Path) -> None:
    if any(start <= node.start_mark.index < end for start, end in shared):
        raise _refused(path, "it is written under a YAML anchor, which other places may use again")


def _refused(path: Path, why: str) -> UsageError:
    return UsageError(f"--write-spec: cannot change {path_str(path)} in place: {why}; apply that recommendation "
                      "by hand")
