"""The Kubernetes side: nodes, pods, the scheduler's fit, the autoscaler's scale-up estimate and its
unready-GPU rule."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

# utils/gpu/gpu.go, GPUVendorResourceNames: what NodeHasGpuAllocatable looks for.
GPU_VENDOR_RESOURCES = ("nvidia.com/gpu", "habana.ai/gaudi", "gpu.intel.com/xe", "amd.com/gpu", "microsoft.com/directx")
_QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
_SCALE = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: object) -> float:
    """A Kubernetes quantity (apimachinery resource.ParseQuantity, the forms gpustack writes)."""
    match = _QUANTITY.fullmatch(str(text))
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * _SCALE[match.group(2)]


@dataclasses.dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute


@dataclasses.dataclass(frozen=True)
class Node:
    """A node as the autoscaler sees it: allocatable (= capacity on templates), labels, taints."""

    allocatable: Mapping[str, float]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]


@dataclasses.dataclass(frozen=True)
class Pod:
    requests: Mapping[str, float]
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]  # {key, operator (Equal|Exists), value, effect}


def tolerates(tolerations: Sequence[Mapping[str, str]], taint: Taint) -> bool:
    """k8s.io/api core/v1 Toleration.ToleratesTaint."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.effect:
            continue
        if t.get("key") and t["key"] != taint.key:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.value:
            return True
    return False


def why_not(pod: Pod, node: Node, used: Mapping[str, float] | None = None) -> str | None:
    """None when `pod` fits `node` (NodeResourcesFit, NodeAffinity by nodeSelector, TaintToleration;
    PreferNoSchedule never blocks), else the scheduler's reason."""
    used = used or {}
    for key, value in pod.node_selector.items():
        if node.labels.get(key) != value:
            return f"node(s) didn't match Pod's node affinity/selector ({key}={value})"
    for taint in node.taints:
        if taint.effect != "PreferNoSchedule" and not tolerates(pod.tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    for name, amount in pod.requests.items():
        if used.get(name, 0.0) + amount > node.allocatable.get(name, 0.0) + 1e-9:
            return f"Insufficient {name}"
    return None


def estimate_scale_up(pods: Sequence[Pod], template: Node, max_new_nodes: int) -> tuple[int, list[Pod]]:
    """How many nodes of a group at zero one scale-up starts for `pods`, and the pods it cannot help.

    estimator/binpacking_estimator.go, BinpackingNodeEstimator.Estimate: equivalence groups in the
    order of estimator/decreasing_pod_orderer.go (cpu/template cpu + memory/template memory, largest
    first); each pod goes to any new node that has room, else to the last node added, else to a new
    node while the limiter allows one (the group's max size); a pod that does not fit an empty
    template node stops the group."""
    groups: dict[tuple, list[Pod]] = {}
    for pod in pods:
        key = (tuple(sorted(pod.requests.items())), tuple(sorted(pod.node_selector.items())),
               tuple(tuple(sorted(t.items())) for t in pod.tolerations))
        groups.setdefault(key, []).append(pod)

    def score(group: list[Pod]) -> float:
        pod = group[0]
        return sum(pod.requests.get(r, 0.0) / template.allocatable[r]
                   for r in ("cpu", "memory") if template.allocatable.get(r))

    ordered = sorted(groups.values(), key=score, reverse=True)
    nodes: list[dict[str, float]] = []  # what the pods placed on each new node use
    unhelped: list[Pod] = []
    may_add = True

    def place(pod: Pod, used: dict[str, float]) -> None:
        for name, amount in pod.requests.items():
            used[name] = used.get(name, 0.0) + amount
        used["pods"] = used.get("pods", 0.0) + 1

    for group in ordered:
        index = 0
        while index < len(group):  # tryToScheduleOnExistingNodes: any new node, until one pod fails
            home = next((used for used in nodes if why_not(group[index], template, used) is None), None)
            if home is None:
                break
            place(group[index], home)
            index += 1
        rest = group[index:]
        for position, pod in enumerate(rest):  # tryToScheduleOnNewNodes: the last node, else a new one
            if not may_add:
                unhelped.extend(rest[position:])
                break
            if nodes and why_not(pod, template, nodes[-1]) is None:
                place(pod, nodes[-1])
                continue
            if nodes and not nodes[-1]:
                unhelped.extend(rest[position:])  # it did not fit an empty node: no new node helps
                break
            if len([n for n in nodes if n]) >= max_new_nodes:
                may_add = False  # the limiter refuses: the group is at its max size
                unhelped.extend(rest[position:])
                break
            nodes.append({})
            if why_not(pod, template) is not None:
                unhelped.extend(rest[position:])
                break
            place(pod, nodes[-1])
    return len([n for n in nodes if n]), unhelped


def counted_as_unready_gpu(node: Node, gpu_label: str | None) -> bool:
    """processors/customresources/gpu_processor.go, FilterOutNodesWithUnreadyResources: a node with the
    provider's GPU label and no GPU allocatable is overridden to unready (gpu.NodeHasGpuAllocatable)."""
    if not gpu_label or gpu_label not in node.labels:
        return False
    return not any(node.allocatable.get(name, 0) > 0 for name in GPU_VENDOR_RESOURCES)


def booting(node: Node) -> Node:
    """A new node as it registers, Ready before its device plugin runs: no extended resources yet."""
    return Node({k: v for k, v in node.allocatable.items() if "/" not in k}, node.labels, node.taints)


def next_scale_up(pods: Sequence[Pod], started: int, node: Node, template: Node, gpu_label: str | None,
                  max_new_nodes: int) -> int:
    """The nodes the autoscaler's next loop adds for `pods` while the `started` nodes of the last scale-up
    are booting (Ready, device plugin not yet running).

    core/static_autoscaler.go, RunOnce: upcoming nodes, among them those registered but not ready, are
    added to the snapshot from the group's template "so that we can pack unschedulable pods on them and
    not trigger another scale-up"; a node that carries the provider's GPU label without GPU allocatable
    is overridden to unready (processors/customresources/gpu_processor.go,
    FilterOutNodesWithUnreadyResources) and so still counts as upcoming. Without the label the node is
    ready, the pods do not fit it, and the loop scales up again."""
    new = booting(node)
    if counted_as_unready_gpu(new, gpu_label):
        return 0  # still upcoming: the pods are packed on its template
    left = [pod for pod in pods if why_not(pod, new) is not None]
    more, _ = estimate_scale_up(left, template, max_new_nodes - started)
    return more
