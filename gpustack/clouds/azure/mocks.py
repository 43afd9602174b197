"""What the Pulumi mocks answer for AKS: the outputs Azure computes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpustack.testing import auto_name

# Agent pools that already exist in the cluster, by name: their live node count, as the managed
# cluster's agentPoolProfiles report it. Empty: a first `pulumi up`. Tests set it to simulate an update.
LIVE_AGENT_POOLS: dict[str, int] = {}

# Canned answers for the data sources (invokes), keyed by token.
CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "azure-native:containerservice:getManagedCluster": lambda args: {
        "id": args.get("resourceName", ""), "name": args.get("resourceName", ""),
        "agentPoolProfiles": [{"name": name, "count": count} for name, count in sorted(LIVE_AGENT_POOLS.items())]},
}

# Outputs the cloud computes, keyed by resource type: (logical name, inputs) -> outputs.
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    # azure-native names the group after its logical name (plus a random suffix, left out here).
    "azure-native:compute:CapacityReservationGroup": lambda name, inputs: {"name": name},
    # A managed cluster declared without `resource_name` is auto-named by the provider.
    "azure-native:containerservice:ManagedCluster": lambda name, inputs: {
        "name": inputs.get("resourceName") or auto_name(name)},
}
