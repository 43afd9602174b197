"""Shared test helpers: small specs built as text, and golden files."""

from __future__ import annotations

import difflib
import os
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "stacks" / "gpustack.yaml"
GOLDEN = Path(__file__).resolve().parent / "golden"

# One valid target per cloud, in the catalog's main regions.
TARGETS = {
    "aws": {"name": "aws-t", "cloud": "aws", "region": "us-east-1", "cluster": "c1",
            "settings": {"subnet_ids": ["subnet-0a1b"]}},
    "azure": {"name": "azure-t", "cloud": "azure", "region": "eastus", "cluster": "c1",
              "settings": {"resource_group": "rg-1"}},
    "gcp": {"name": "gcp-t", "cloud": "gcp", "region": "us-central1", "cluster": "c1",
            "settings": {"node_locations": ["us-central1-a"]}},
    "oci": {"name": "oci-t", "cloud": "oci", "region": "us-ashburn-1", "cluster": "ocid1.cluster.oc1.iad.aaaa",
            "settings": {"compartment_id": "ocid1.compartment.oc1..aaaa", "subnet_id": "ocid1.subnet.oc1.iad.aaaa"}},
}


def spec_text(workloads: list[dict], clouds: tuple[str, ...] = ("aws",), **top: object) -> str:
    """A spec as YAML text with the given workloads and one target per cloud."""
    doc = {"version": 1, "name": "t", "targets": [TARGETS[c] for c in clouds], "workloads": workloads, **top}
    return yaml.safe_dump(doc, sort_keys=False)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def assert_golden(name: str, text: str) -> None:
    """Compare `text` with tests/golden/<name>; `make golden` rewrites the files."""
    path = GOLDEN / name
    if os.environ.get("GPUSTACK_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path.relative_to(ROOT)}: run `make golden` and review it"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{name}", "now", n=2))
        pytest.fail(f"{name} differs from its golden file (refresh with `make golden` if intended):\n{diff[:6000]}")
