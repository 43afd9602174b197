"""GKE's ComputeClass scale-up as documented: which priority of which class creates a node for a
pending pod.

About custom ComputeClasses (https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes):
- a pod uses a class only by selecting it, nodeSelector `cloud.google.com/compute-class: <class>`; the
  class's nodes carry that label and the NoSchedule taint of the same key ("Request ComputeClasses in
  workloads"), and GPU nodes the taint nvidia.com/gpu=present:NoSchedule
  (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus);
- GKE tries the priorities "in the order that they're listed" and uses the first one it can create
  nodes for; when "none of the priorities can be satisfied", whenUnsatisfiable DoNotScaleUp leaves the
  pod pending ("Choose fallback compute priorities", "Define scaling behavior when no rules apply");
- a priority with reservations.affinity Specific creates nodes only inside the named reservations,
  "with no fallback possible" within that priority (the CRD's description of the field), so the next
  priority takes over once they are used up.

A node of a priority offers what the plan says a node of its pool offers (`node_offers`, the kubelet's
`node_allocatable`), and carries the priority's nodeLabels and taints plus GKE's own above.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cloudsim.kube import Node, Pod, Taint, quantity, why_not

CLASS_LABEL = "cloud.google.com/compute-class"
GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")


@dataclasses.dataclass(frozen=True)
class Offer:
    """What one priority's node offers (from the plan's pool it compiles)."""

    allocatable: Mapping[str, float]


@dataclasses.dataclass(frozen=True)
class Choice:
    compute_class: str
    priority: int  # index into spec.priorities
    machine_type: str
    spot: bool
    reservation: str | None


def node(compute_class: Mapping[str, Any], index: int, offer: Offer) -> Node:
    """A node GKE creates for priority `index` of `compute_class`."""
    name = compute_class["metadata"]["name"]
    priority = compute_class["spec"]["priorities"][index]
    labels = {**priority.get("nodeLabels", {}), CLASS_LABEL: name}
    if priority.get("spot"):
        labels["cloud.google.com/gke-spot"] = "true"
    taints = [Taint(CLASS_LABEL, name, "NoSchedule"), GPU_TAINT]
    taints += [Taint(t["key"], t.get("value", ""), t["effect"]) for t in priority.get("taints", ())]
    if priority.get("spot"):
        taints.append(Taint("cloud.google.com/gke-spot", "true", "NoSchedule"))
    return Node(offer.allocatable, labels, tuple(taints))


def _reservation(priority: Mapping[str, Any]) -> str | None:
    reservations = priority.get("reservations") or {}
    if reservations.get("affinity") != "Specific":
        return None
    [specific] = reservations["specific"]
    return str(specific["name"])


def scale_up(pod: Pod, classes: Sequence[Mapping[str, Any]], offers: Callable[[str, int], Offer],
             available: Callable[[str, bool, str | None], bool]) -> Choice | None:
    """The priority GKE creates a node from for `pod`, or None (the pod stays pending).

    `offers(class, index)` is what a node of that priority offers; `available(machine_type, spot,
    reservation)` whether Compute Engine can create one now (spot capacity, room left in a reservation)."""
    selected = pod.node_selector.get(CLASS_LABEL)
    for compute_class in classes:
        name = compute_class["metadata"]["name"]
        if name != selected:
            continue  # a class provisions only for pods that select it
        for index, priority in enumerate(compute_class["spec"]["priorities"]):
            reservation = _reservation(priority)
            if not available(priority["machineType"], bool(priority.get("spot")), reservation):
                continue
            if why_not(pod, node(compute_class, index, offers(name, index))) is None:
                return Choice(name, index, priority["machineType"], bool(priority.get("spot")), reservation)
        return None  # whenUnsatisfiable: DoNotScaleUp
    return None


def pod_requests(requests: Mapping[str, str]) -> dict[str, float]:
    return {name: quantity(value) for name, value in requests.items()}
