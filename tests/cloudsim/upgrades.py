"""A node-pool upgrade of a reserved floor, per cloud, against its reservation; and the EKS scaling
config an update sends.

Each cloud replaces nodes in rounds: it creates up to `surge` new nodes before draining old ones and
takes down up to `unavailable` old nodes at once. A floor's reservation holds `reserved` nodes: a new
node beyond it is refused (EKS launch templates target the reservation; GKE nodes of a pool with a
specific reservation are "subject to" it), or runs outside it without the reservation's guarantee
(AKS over-allocation). Sources per cloud below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class UpgradeSettings:
    surge: int
    unavailable: int
    on_short: str  # what happens when a surge node finds no room: fail | degrade | outside
    source: str


@dataclasses.dataclass(frozen=True)
class UpgradeOutcome:
    completed: bool
    peak_nodes: int  # nodes at once, old and new
    outside_reservation: int  # node launches that did not fit the reservation
    why: str


def eks_settings(node_group: Mapping[str, Any]) -> UpgradeSettings:
    """API_NodegroupUpdateConfig: maxUnavailable (default 1); DEFAULT "launches the new instances first",
    scaling up by the larger of twice the number of Availability Zones or maxUnavailable
    (managed-node-update-behavior, scale-up phase), and new nodes that find no capacity end in
    NodeCreationFailure; MINIMAL "terminates the old instances before launching the new instances"."""
    inputs = node_group["inputs"]
    config = inputs.get("updateConfig") or {}
    unavailable = int(config.get("maxUnavailable") or 1)
    source = "https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html"
    if config.get("updateStrategy") == "MINIMAL":
        return UpgradeSettings(0, unavailable, "fail", source)
    zones = len(inputs.get("subnetIds") or [None])
    return UpgradeSettings(max(2 * zones, unavailable), unavailable, "fail", source)


def gke_settings(node_pool: Mapping[str, Any]) -> UpgradeSettings:
    """upgradeSettings: SURGE with maxSurge 1, maxUnavailable 0 by default; with fewer surge nodes
    available GKE lowers the parallelism, and with none and maxUnavailable 0 "the upgrade fails" and is
    retried (https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota)."""
    settings = node_pool["inputs"].get("upgradeSettings") or {}
    surge = int(settings.get("maxSurge", 1))
    unavailable = int(settings.get("maxUnavailable", 0))
    return UpgradeSettings(surge, unavailable, "degrade" if unavailable else "fail",
                           "https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota")


def aks_settings(agent_pool: Mapping[str, Any]) -> UpgradeSettings:
    """upgradeSettings: max surge 1 and max unavailable 0 by default; VMs beyond a capacity reservation
    group's quantity are allowed but "don't receive the capacity availability SLA"
    (https://learn.microsoft.com/azure/virtual-machines/capacity-reservation-overallocate;
    articles/aks/upgrade-aks-node-pools-rolling.md)."""
    settings = agent_pool["inputs"].get("upgradeSettings") or {}
    return UpgradeSettings(int(str(settings.get("maxSurge", "1")).rstrip("%")),
                           int(str(settings.get("maxUnavailable", "0")).rstrip("%")), "outside",
                           "https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-node-pools-rolling")


def oke_settings(node_pool: Mapping[str, Any]) -> UpgradeSettings:
    """nodePoolCyclingDetails: maximumSurge 1, maximumUnavailable 0 by default; without cycling the nodes
    are replaced by hand with the same defaults
    (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/balance-service-availability-cost.htm).
    A new instance of a pool placed in a capacity reservation fails when the reservation is full."""
    cycling = node_pool["inputs"].get("nodePoolCyclingDetails") or {}
    return UpgradeSettings(int(cycling.get("maximumSurge", "1")), int(cycling.get("maximumUnavailable", "0")),
                           "fail", "https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/balance-service-availability-cost.htm")


SETTINGS = {"aws": eks_settings, "gcp": gke_settings, "azure": aks_settings, "oci": oke_settings}


def upgrade(settings: UpgradeSettings, nodes: int, reserved: int) -> UpgradeOutcome:
    """Replace every one of `nodes` old nodes, in rounds, with room for `reserved` nodes in the reservation."""
    old, peak, outside = nodes, nodes, 0
    while old:
        surge = min(settings.surge, old)
        room = max(0, reserved - nodes)  # old and new nodes together stay at `nodes` between rounds
        if surge > room:
            if settings.on_short == "fail":
                return UpgradeOutcome(False, peak, outside + surge - room,
                                      f"{surge} surge node(s) and room for {room} in the reservation ({settings.source})")
            if settings.on_short == "outside":
                outside += surge - room
            else:
                surge = room
        down = min(settings.unavailable, old - surge)
        if surge + down == 0:
            return UpgradeOutcome(False, peak, outside, f"no surge room and no unavailable node allowed ({settings.source})")
        peak = max(peak, old + surge)
        old -= surge + down
    return UpgradeOutcome(outside == 0, peak, outside,
                          "completed" if outside == 0 else f"{outside} node(s) ran outside the reservation")


def eks_scaling_update(node_group: Mapping[str, Any], ignore_changes: tuple[str, ...],
                       live_desired: int) -> tuple[dict[str, int], str | None]:
    """The scalingConfig an update of an existing node group sends, and the EKS API's refusal if any.

    Pulumi keeps the live value of an ignored property, so an ignored desiredSize sends the current one.
    UpdateNodegroupConfig refuses desiredSize below minSize or above maxSize, and maxSize below 1
    (API_NodegroupScalingConfig: "minSize ... less than or equal to desiredSize", maxSize >= 1)."""
    config = {k: int(v) for k, v in node_group["inputs"]["scalingConfig"].items()}
    if "scalingConfig.desiredSize" in ignore_changes:
        config["desiredSize"] = live_desired
    low, high, desired = config["minSize"], config["maxSize"], config["desiredSize"]
    if high < 1:
        return config, f"maxSize {high} is below 1"
    if not low <= desired <= high:
        return config, f"desiredSize {desired} is outside minSize {low} .. maxSize {high}"
    return config, None


def aks_scaling_update(agent_pool: Mapping[str, Any], ignore_changes: tuple[str, ...],
                       live_count: int) -> tuple[dict[str, int], str | None]:
    """The minCount, maxCount and count an update of an existing agent pool sends, and the agent-pool
    API's refusal if any: with autoscaling on, count must lie between minCount and maxCount
    ("agentPoolProfile.count was 0. It must be greater or equal to minCount:1 and less than or equal to
    maxCount:1000", the resource provider's answer quoted in kubernetes-sigs/cluster-api-provider-azure#5947;
    https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/create-or-update). An ignored count sends
    the value Pulumi holds, at best the live one."""
    inputs = agent_pool["inputs"]
    config = {k: int(inputs[k]) for k in ("minCount", "maxCount", "count")}
    if "count" in ignore_changes:
        config["count"] = live_count
    low, high, count = config["minCount"], config["maxCount"], config["count"]
    if high < max(low, 1):
        return config, f"maxCount {high} is below minCount {low} or 1"
    if not low <= count <= high:
        return config, f"count {count} is outside minCount {low} .. maxCount {high}"
    return config, None


# The update each cloud's node pool sends when its bounds move, from the live size (EKS, AKS: the API
# takes a size that must lie inside the bounds). GKE and OKE send no size on an update: their counts
# (initialNodeCount, nodeConfigDetails.size) size the first creation only and are ignored after.
SCALING_UPDATES = {"aws": eks_scaling_update, "azure": aks_scaling_update}
