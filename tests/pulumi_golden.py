"""What a Pulumi program declares under mocks, as stable YAML for golden files: one entry per resource."""

from __future__ import annotations

import base64
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
    """Keys sorted; whole numbers as ints (mock inputs carry ints as floats, the wire format)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _readable(inputs: dict[str, Any]) -> dict[str, Any]:
    out = _plain(inputs)
    metadata = out.get("nodeMetadata")
    if isinstance(metadata, dict) and "user_data" in metadata:  # OCI cloud-init: shown decoded
        metadata = dict(metadata)
        metadata["user_data (decoded)"] = base64.b64decode(metadata.pop("user_data")).decode("utf-8")
        out["nodeMetadata"] = metadata
    return out


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (scripts) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _str)


def declared_yaml(title: str, resources: list[Declared]) -> str:
    """Every resource: type, name, parent (type::name, 'stack' for the stack), inputs, ignored changes."""
    entries = []
    for r in resources:
        entry: dict[str, Any] = {"type": r.type, "name": r.name, "parent": short_urn(r.parent)}
        if r.inputs:
            entry["inputs"] = _readable(r.inputs)
        if r.ignore_changes:
            entry["ignore_changes"] = list(r.ignore_changes)
        entries.append(entry)
    body = yaml.dump(entries, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120,
                     allow_unicode=True)
    return f"# {title}\n# Refresh with `make golden` and review the diff; OCI user_data is shown decoded.\n{body}"
