"""What the Pulumi mocks answer for GKE: nothing beyond the inputs (the backend calls no data source)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpustack.testing import auto_name

CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    # A cluster declared without `name` is auto-named by the provider.
    "gcp:container/cluster:Cluster": lambda name, inputs: {"name": inputs.get("name") or auto_name(name)},
}
