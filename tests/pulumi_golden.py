"""What a Pulumi program declares, as stable YAML for golden files."""

from __future__ import annotations

import base64
from typing import Any

import yaml

from gpustack.testing import Declared


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


def declared_yaml(resources: list[Declared]) -> str:
    """Every resource: type, name, parent (type::name, none for the stack) and its inputs."""
    by_urn = {r.urn: r for r in resources}
    docs = []
    for r in resources:
        parent = by_urn.get(r.parent)
        entry: dict[str, Any] = {"type": r.type, "name": r.name}
        if parent is not None:
            entry["parent"] = f"{parent.type}::{parent.name}"
        if r.inputs:
            entry["inputs"] = _readable(r.inputs)
        docs.append(entry)
    header = ("# What `pulumi up` declares for this target (mocked provider, real SDK); refresh with\n"
              "# `make golden` and review the diff. OCI user_data is shown decoded.\n")
    return header + yaml.dump(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=110, allow_unicode=True)
