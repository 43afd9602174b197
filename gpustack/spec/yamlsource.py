"""Safe, located YAML: every value keeps the line and column it came from.

PyYAML's safe composer builds a node graph with marks; we turn it into plain Python values and a
side table of marks keyed by field path. Rules that a trustworthy loader needs and PyYAML does not
enforce by itself:

- duplicate mapping keys are an error (PyYAML keeps the last one silently);
- merge keys (`<<: *defaults`) follow the YAML merge type: the mapping's own keys win, then earlier
  merged mappings; what they merge counts against the alias budget at every use;
- aliases are expanded with a budget, so an alias bomb ("billion laughs") fails fast;
- nesting depth and file size are bounded, so deep or huge input fails with a message,
  not a RecursionError or an exhausted machine;
- only the safe core schema: no tags that construct Python objects;
- no control characters (C0, DEL, C1) and no invisible format characters (bidirectional overrides,
  zero-width spaces) in any string, key or value: they reach terminals, file names and Markdown.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import yaml

from gpustack.nogc import no_cyclic_gc
from gpustack.errors import Location, Problem, SpecError, show

try:  # libyaml is much faster on large specs; the pure-Python loader is the same grammar.
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader

# Limits, documented in README "Limits".
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 1_000_000  # values after alias expansion (20,000 workloads of 20 fields are 800,000)
MAX_INTEGER = 10**15  # larger whole numbers are no spec value, and some cannot even be printed
MAX_EXPANDED_BYTES = 64 * 1024 * 1024  # the text of every scalar, after alias expansion

Path = tuple[str | int, ...]

# Characters no spec string may hold: C0 and C1 controls (newline and tab included: every spec string is
# one line), DEL, zero-width and bidirectional formatting characters, the byte-order mark.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
# Kubernetes objects hold text of several lines (scripts, embedded YAML): line breaks and tabs allowed.
_INVISIBLE_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def path_str(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclasses.dataclass
class Document:
    """A parsed spec: plain data plus the location of every value and key."""

    file: str
    data: Any
    marks: dict[Path, tuple[int, int]]  # 0-based (line, column) of each value
    key_marks: dict[Path, tuple[int, int]]  # of each mapping key
    # Keys YAML read as something other than text (`on:` is true in YAML 1.1), by path: what they were.
    typed_keys: dict[Path, str] = dataclasses.field(default_factory=dict)

    def where(self, path: Path) -> Location | None:
        """The location of the value at `path`, or of its nearest located parent."""
        path = tuple(path)
        while True:
            if path in self.marks:
                line, column = self.marks[path]
                return Location(self.file, line + 1, column + 1)
            if not path:
                return None
            path = path[:-1]

    def where_key(self, path: Path) -> Location | None:
        mark = self.key_marks.get(tuple(path))
        return Location(self.file, mark[0] + 1, mark[1] + 1) if mark else self.where(path)


def _loc(file: str, mark: Any) -> Location:
    return Location(file, mark.line + 1, mark.column + 1)


def _fail(file: str, mark: Any | None, message: str) -> SpecError:
    return SpecError([Problem(_loc(file, mark) if mark is not None else Location(file, 1, 1), "", message)])


_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}


def parse(text: str | bytes, file: str, multiline: bool = False) -> Document:
    """Parse one YAML document into located plain data, or raise SpecError. `multiline`: strings may
    hold line breaks and tabs (a Kubernetes object), not only one line of visible text (a spec)."""
    text = _yaml_text(text, file, "a spec")
    with no_cyclic_gc():  # parsing allocates many small acyclic objects: collections only cost time here
        return _parse(text, file, multiline)


def _yaml_text(text: str | bytes, file: str, what: str) -> str:
    """`text` as a str within the size limit, UTF-8 and free of NUL bytes, or raise SpecError."""
    if isinstance(text, bytes):
        if len(text) > MAX_FILE_BYTES:
            raise _fail(file, None, f"the file is {len(text):,} bytes; {what} may be at most {MAX_FILE_BYTES:,} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(file, None, f"the file is not UTF-8 text (byte {exc.start} is {text[exc.start]:#04x})") from None
    if len(text) > MAX_FILE_BYTES:
        raise _fail(file, None, f"the file is {len(text):,} characters; {what} may be at most {MAX_FILE_BYTES:,}")
    if "\x00" in text:
        raise _fail(file, None, "the file contains NUL bytes: it is not a YAML text file")
    return text


def parse_all(text: str | bytes, file: str) -> list[Document]:
    """Parse a multi-document YAML stream (`kubectl`/`kustomize build` output) into located documents,
    empty ones left out, under the same limits and rules as `parse`, or raise SpecError."""
    text = _yaml_text(text, file, "a manifest file")
    with no_cyclic_gc():
        roots: list[yaml.Node] = []
        try:
            _check_size(text, file)
            loader = _Loader(text)
            try:
                while loader.check_node():
                    node = loader.get_node()
                    if node is not None:
                        roots.append(node)
            finally:
                loader.dispose()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise _fail(file, mark, f"not valid YAML: {exc.problem or exc.context or 'invalid YAML'}") from None
        except yaml.YAMLError as exc:
            raise _fail(file, None, f"not valid YAML: {str(exc).splitlines()[0]}") from None
        except RecursionError:
            raise _fail(file, None, f"the YAML is nested too deeply (at most {MAX_DEPTH} levels)") from None
        return [_Converter(file, multiline=True).convert(root) for root in roots]


def _parse(text: str, file: str, multiline: bool) -> Document:
    try:
        _check_size(text, file)
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "invalid YAML"
        raise _fail(file, mark, f"not valid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise _fail(file, None, f"not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise _fail(file, None, f"the YAML is nested too deeply (at most {MAX_DEPTH} levels)") from None
    if root is None:
        raise _fail(file, None, "the file is empty; a spec starts with 'version: 1'")
    return _Converter(file, multiline).convert(root)


class _Converter:
    def __init__(self, file: str, multiline: bool = False):
        self.file = file
        self.invisible = _INVISIBLE_IN_TEXT if multiline else _INVISIBLE
        self.marks: dict[Path, tuple[int, int]] = {}
        self.key_marks: dict[Path, tuple[int, int]] = {}
        self.typed_keys: dict[Path, str] = {}

    def convert(self, root: yaml.Node) -> Document:
        data = self._value(root, (), 0)
        return Document(self.file, data, self.marks, self.key_marks, self.typed_keys)

    def _value(self, node: yaml.Node, path: Path, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _fail(self.file, node.start_mark, f"the YAML is nested more than {MAX_DEPTH} levels deep")
        mark = node.start_mark
        self.marks[path] = (mark.line, mark.column)
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in _SCALAR_TAGS:
                raise _fail(self.file, node.start_mark, f"the YAML tag {node.tag!r} is not allowed in a spec")
            return self._checked(self._scalar(node), node, path)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != "tag:yaml.org,2002:seq":
                raise _fail(self.file, node.start_mark, f"the YAML tag {node.tag!r} is not allowed in a spec")
            return [self._value(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            if node.tag != "tag:yaml.org,2002:map":
                raise _fail(self.file, node.start_mark, f"the YAML tag {node.tag!r} is not allowed in a spec")
            out: dict[Any, Any] = {}
            explicit = [(k, v) for k, v in node.value if k.tag != _MERGE]
            merged = _merged_pairs(node, self.file, depth)
            for i, (key_node, value_node) in enumerate(explicit + merged):
                from_merge = i >= len(explicit)
                if not isinstance(key_node, yaml.ScalarNode):
                    raise _fail(self.file, key_node.start_mark, "a mapping key must be a plain value, not a list or mapping")
                if key_node.tag not in _SCALAR_TAGS:
                    raise _fail(self.file, key_node.start_mark, f"the YAML tag {key_node.tag!r} is not allowed in a spec")
                resolved = self._checked(self._scalar(key_node), key_node, path + (str(key_node.value),))
                # Not text (`on:` is true in YAML 1.1): keep the text as written; readers refuse it where text is meant.
                key = resolved if isinstance(resolved, str) else str(key_node.value)
                if key in out and from_merge:
                    continue  # a key the mapping gives itself, or an earlier merged mapping, wins
                if not isinstance(resolved, str):
                    self.typed_keys[path + (key,)] = type(resolved).__name__
                if key in out:
                    first = self.key_marks.get(path + (key,))
                    seen = f" (first at line {first[0] + 1})" if first else ""
                    raise _fail(self.file, key_node.start_mark, f"duplicate key {key!r}{seen}; each key may appear once")
                self.key_marks[path + (key,)] = (key_node.start_mark.line, key_node.start_mark.column)
                out[key] = self._value(value_node, path + (key,), depth + 1)
            return out
        raise _fail(self.file, node.start_mark, "unsupported YAML node")  # pragma: no cover

    def _checked(self, value: Any, node: yaml.ScalarNode, path: Path) -> Any:
        if isinstance(value, str) and (found := self.invisible.search(value)):
            message = (f"{show(value)} contains the control character U+{ord(found.group()):04X}; spec strings "
                       "are one line of visible text")
            raise SpecError([Problem(_loc(self.file, node.start_mark), path_str(path), message)])
        return value

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        # Resolve with the safe constructor, one scalar at a time (no object construction).
        tag = node.tag
        value = node.value
        if tag == "tag:yaml.org,2002:str":
            return value
        try:
            constructor = yaml.SafeLoader.yaml_constructors[tag]
            result = constructor(_SCALAR_LOADER, node)
        except (ValueError, OverflowError, IndexError, yaml.YAMLError):  # e.g. `!!int ""`: keep the text
            return value
        if tag == "tag:yaml.org,2002:timestamp":
            return value  # dates are not spec values; keep the text so the field check reports it
        if isinstance(result, int) and not isinstance(result, bool) and abs(result) > MAX_INTEGER:
            raise _fail(self.file, node.start_mark, f"the number {show(value, 30)} is too large to be a spec value "
                                                    f"(at most {MAX_INTEGER:,})")
        return result


_MERGE = "tag:yaml.org,2002:merge"


def _merged_pairs(node: yaml.MappingNode, file: str, depth: int) -> list[tuple[yaml.Node, yaml.Node]]:
    """The key/value pairs `<<` merges into `node`, in precedence order (YAML merge key type,
    https://yaml.org/type/merge.html): a mapping or a list of mappings, earlier ones first, each with
    its own merges after its own keys. The node's own keys come before all of them (and win)."""
    if depth > MAX_DEPTH:
        raise _fail(file, node.start_mark, f"the YAML is nested more than {MAX_DEPTH} levels deep")
    out: list[tuple[yaml.Node, yaml.Node]] = []
    merges = [(k, v) for k, v in node.value if k.tag == _MERGE]
    if len(merges) > 1:
        raise _fail(file, merges[1][0].start_mark, "duplicate merge key '<<'; merge several mappings with one: "
                                                   "<<: [*first, *second]")
    for _, value_node in merges:
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, yaml.MappingNode) or source.tag != "tag:yaml.org,2002:map":
                raise _fail(file, source.start_mark, "a merge key ('<<') takes a mapping or a list of mappings, "
                                                     "e.g. <<: *defaults")
            out.extend((k, v) for k, v in source.value if k.tag != _MERGE)
            out.extend(_merged_pairs(source, file, depth + 1))
    return out


def _check_size(text: str, file: str) -> None:
    """Refuse a document whose values, once aliases are expanded, pass MAX_NODES or MAX_EXPANDED_BYTES,
    or that nests deeper than MAX_DEPTH, from the parser's events, before any node is built: time and
    memory stay bounded by the limits, not by what an alias bomb or a flood of keys expands to."""
    loader = _Loader(text)
    anchors: dict[str, tuple[int, int]] = {}
    open_nodes: list[list[Any]] = []  # [values, bytes, anchor] of each collection being read
    values = size = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
                if isinstance(event, yaml.ScalarEvent):
                    these = (1, len(event.value))
                    if event.anchor is not None:
                        anchors[event.anchor] = these
                else:
                    these = anchors.get(event.anchor or "", (1, 0))
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                open_nodes.append([1, 0, event.anchor])
                values += 1
                if len(open_nodes) > MAX_DEPTH:
                    raise _fail(file, event.start_mark, f"the YAML is nested more than {MAX_DEPTH} levels deep")
                continue
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                count, length, anchor = open_nodes.pop()
                if anchor is not None:
                    anchors[anchor] = (count, length)
                if open_nodes:
                    open_nodes[-1][0] += count
                    open_nodes[-1][1] += length
                continue
            else:
                continue
            if open_nodes:
                open_nodes[-1][0] += these[0]
                open_nodes[-1][1] += these[1]
            values += these[0]
            size += these[1]
            if values > MAX_NODES or size > MAX_EXPANDED_BYTES:
                what = (f"{MAX_NODES:,} values" if values > MAX_NODES else f"{MAX_EXPANDED_BYTES:,} bytes of text")
                raise _fail(file, event.start_mark, f"the YAML is too large once aliases are expanded: at most "
                                                    f"{what}; refusing it")
    finally:
        loader.dispose()


class _ScalarLoader(yaml.SafeLoader):
    def __init__(self) -> None:  # only the scalar constructors are used; no stream
        pass


_SCALAR_LOADER = _ScalarLoader()
