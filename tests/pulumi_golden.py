"""Golden-file text of what a Pulumi program declares under mocks: one YAML entry per resource."""

from __future__ import annotations

from typing import Any

import yaml

from gpustack.testing import Declared


def short_urn(urn: str) -> str:
    """'<type>::<name>' of a URN; 'stack' for the stack itself."""
    if not urn:
        return "stack"
    qualified_type, name = urn.split("::")[-2:]
    kind = qualified_type.split("$")[-1]
    return "stack" if kind == "pulumi:pulumi:Stack" else f"{kind}::{name}"


def _plain(value: Any) -> Any:
    """Keys sorted; ints arrive as floats on the wire, so show them as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def declared_yaml(title: str, resources: list[Declared]) -> str:
    entries = []
    for r in resources:
        entry: dict[str, Any] = {"type": r.type, "name": r.name, "parent": short_urn(r.parent)}
        if r.inputs:
            entry["inputs"] = _plain(r.inputs)
        if r.ignore_changes:
            entry["ignore_changes"] = list(r.ignore_changes)
        entries.append(entry)
    body = yaml.safe_dump(entries, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)
    return f"# {title}\n{body}"
