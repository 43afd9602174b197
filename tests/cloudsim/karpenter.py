"""Karpenter's choice for a pending pod: which rendered NodePools could launch a node for it.

Follows kubernetes-sigs/karpenter at commit 6e7eab7a0f485d7225eb98995fad9b66c79b322b (the core that
aws/karpenter-provider-aws v1.14.1 pins in go.mod), for any cloud's Karpenter: the provider is the one
whose node class the NodePool's nodeClassRef names (`provider`), and gives the label that names an
instance type, the labels it registers as well known and the kubelet reservation of its node image:
- pkg/scheduling/taints.go, `Taints.Tolerates`: every taint of the NodePool's template must be
  tolerated by the pod (core/v1 `Toleration.ToleratesTaint`, as `kube.tolerates`);
- pkg/scheduling/requirements.go, `Requirements.Compatible` with `AllowUndefinedWellKnownLabels`: the
  NodePool's requirements plus its template labels (each an `In` of one value) against the pod's
  node selector: a label the pod selects must be defined by the NodePool unless it is well known, and
  the values must intersect (`Intersects`);
- pkg/controllers/provisioning/scheduling/nodeclaim.go, the instance-type filter: some instance type
  the requirements allow must have room for the pod's requests. An instance type offers what the
  cloud describes (cpu, memory, nvidia.com/gpu as its GPU count), never MIG devices or time-sliced
  replicas; cpu and memory are what the kubelet leaves, the same model as the plan's;
- NodeOverlays, when Karpenter runs with the NodeOverlay feature gate (pass them; none = gate off):
  pkg/controllers/nodeoverlay/controller.go, `getOverlaidOfferings`, matches an overlay's
  requirements against the instance type's plus `karpenter.sh/nodepool` and the NodePool's template
  labels; pkg/cloudprovider/types.go, `ApplyCapacityOverlay`, assigns its capacity over the instance
  type's (keys it names replaced, others added); higher weight first.

Inputs are the rendered NodePool objects and the catalog; never the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cloudsim.kube import Pod, Taint, quantity, tolerates
from gpustack.catalog import InstanceType
from gpustack.clouds import CLOUDS
from gpustack.clouds.karpenter import NODEPOOL_LABEL, KarpenterProvisioner
from gpustack.plan.nodes import kubelet_allocatable

GIB = 2**30


def provider(node_pool: Mapping[str, Any]) -> KarpenterProvisioner:
    """The Karpenter provisioner of the cloud whose node class `node_pool` names (nodeClassRef.group)."""
    group = node_pool["spec"]["template"]["spec"]["nodeClassRef"]["group"]
    for cloud in CLOUDS:
        for name in cloud.provisioners:
            found = cloud.provisioner(name)
            if isinstance(found, KarpenterProvisioner) and found.node_class_group == group:
                return found
    raise AssertionError(f"no Karpenter provisioner has node class group {group!r}")


def requirements(node_pool: Mapping[str, Any]) -> dict[str, set[str] | None]:
    """key -> allowed values (None: Exists) of the NodePool's template (nodeclaimtemplate.go: the
    requirements, then the template labels added as single-value requirements)."""
    template = node_pool["spec"]["template"]
    out: dict[str, set[str] | None] = {}
    for req in template["spec"]["requirements"]:
        assert req["operator"] in ("In", "Exists"), "the matcher models the operators gpustack writes"
        values = set(req["values"]) if req["operator"] == "In" else None
        out[req["key"]] = values if req["key"] not in out else _intersect(out[req["key"]], values)
    for key, value in template["metadata"].get("labels", {}).items():
        out[key] = _intersect(out.get(key), {value})
    return out


def _intersect(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    if a is None:
        return b
    return a if b is None else a & b


def _taints(node_pool: Mapping[str, Any]) -> list[Taint]:
    return [Taint(t["key"], t.get("value", ""), t["effect"]) for t in node_pool["spec"]["template"]["spec"]["taints"]]


def _overlay_applies(overlay: Mapping[str, Any], node_pool: Mapping[str, Any], row: InstanceType) -> bool:
    labels = {**node_pool["spec"]["template"]["metadata"].get("labels", {}),
              NODEPOOL_LABEL: node_pool["metadata"]["name"], provider(node_pool).instance_type_label: row.name}
    for req in overlay["spec"]["requirements"]:
        assert req["operator"] == "In", "the matcher models the operators gpustack writes"
        if labels.get(req["key"]) not in req["values"]:
            return False
    return True


def offered(row: InstanceType, node_pool: Mapping[str, Any] | None = None,
            overlays: Sequence[Mapping[str, Any]] = ()) -> dict[str, float]:
    """What Karpenter believes a new node of `row` launched for `node_pool` offers: the cloud's GPU count,
    the kubelet's cpu and memory (of the provider's node image), and what the overlays that apply assign."""
    kubelet = (provider(node_pool) if node_pool is not None else CLOUDS.get(row.cloud).provisioner()).kubelet_reservation
    cpu, memory = kubelet_allocatable(row.vcpus, row.memory_gib, kubelet, row.name)
    capacity = {"cpu": cpu, "memory": memory * GIB, "nvidia.com/gpu": float(row.gpus)}
    applying = [o for o in overlays if node_pool is not None and _overlay_applies(o, node_pool, row)]
    for overlay in sorted(applying, key=lambda o: int(o["spec"].get("weight", 0))):  # the highest weight last
        capacity.update({name: quantity(value) for name, value in overlay["spec"].get("capacity", {}).items()})
    return capacity


def why_not(pod: Pod, node_pool: Mapping[str, Any], rows: Mapping[str, InstanceType],
            overlays: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """None when `node_pool` could launch a node for `pod`, else Karpenter's reason."""
    for taint in _taints(node_pool):
        if not tolerates(pod.tolerations, taint):
            return f"did not tolerate {taint.key}={taint.value}:{taint.effect}"
    allowed = requirements(node_pool)
    chosen = provider(node_pool)
    for key, value in pod.node_selector.items():
        if key not in allowed:
            if key in chosen.well_known_labels:
                continue
            return f"label {key!r} does not have known values"
        values = allowed[key]
        if values is not None and value not in values:
            return f"key {key}, In [{value}] not in {sorted(values)}"
    types = allowed.get(chosen.instance_type_label)
    candidates = [rows[name] for name in sorted(types or ()) if name in rows]
    for row in candidates:
        room = offered(row, node_pool, overlays)
        if all(room.get(name, 0.0) + 1e-9 >= amount for name, amount in pod.requests.items()):
            return None
    asked = ", ".join(f"{name}={amount:g}" for name, amount in sorted(pod.requests.items()))
    return f"no instance type of {sorted(types or ())} has room for {asked}"


def launching(pod: Pod, node_pools: Sequence[Mapping[str, Any]], rows: Mapping[str, InstanceType],
              overlays: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """The NodePools that could launch a node for `pod`, in the order Karpenter tries them
    (pkg/utils/nodepool/nodepool.go, `OrderByWeight`: larger weight first; equal weights by name, the
    name later in the alphabet first)."""
    fit = [p for p in node_pools if why_not(pod, p, rows, overlays) is None]
    fit.sort(key=lambda p: p["metadata"]["name"], reverse=True)
    fit.sort(key=lambda p: -int(p["spec"].get("weight", 0)))
    return [p["metadata"]["name"] for p in fit]


def pod_requests(requests: Mapping[str, str]) -> dict[str, float]:
    return {name: quantity(value) for name, value in requests.items()}
