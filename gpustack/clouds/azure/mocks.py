"""What the Pulumi mocks answer for AKS: the outputs Azure computes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The AKS backend calls no data source.
CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}

# Outputs the cloud computes, keyed by resource type: (logical name, inputs) -> outputs.
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    # azure-native names the group after its logical name (plus a random suffix, left out here).
    "azure-native:compute:CapacityReservationGroup": lambda name, inputs: {"name": name},
}
