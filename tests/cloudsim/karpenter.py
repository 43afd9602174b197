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
  type's (keys it names replaced, others added); higher weight first;
- the capacity an instance type reports (`capacity`): cpu, nvidia.com/gpu and memory less the provider's VM
  memory overhead on a first launch (aws/karpenter-provider-aws v1.14.1, pkg/providers/instancetype/types.go
  `memory`: MiB less ceil(MiB x vmMemoryOverheadPercent), default 0.075 in pkg/operator/options/options.go;
  Azure/karpenter-provider-azure v1.14.2, pkg/providers/instancetype/instancetype.go
  `CalculateMemoryWithoutOverhead`: whole GiB less ceil(bytes x 0.075) bytes; Oracle's provider takes none);
  allocatable is that less the kubelet's reservation;
- NodePool limits, kubernetes-sigs/karpenter at 2266468104f36373ed002241afaee2d3bbc26078 (v1.14.0-20),
  pkg/controllers/provisioning/scheduling/scheduler.go: `remainingResources` starts at spec.limits (NewScheduler)
  less the capacity of the NodePool's nodes (cluster state, `node.Capacity()`); a new NodeClaim is refused when
  `nodes` is exhausted ("node limits have been exhausted for nodepool"), and `filterByRemainingResources` drops
  every instance type whose capacity exceeds what is left of any limit ("all available instance types exceed
  limits for nodepool"); a launch subtracts its capacity (`subtractMax`);
- offerings: a capacity type the NodePool requires is offered when available; a reserved offering only while
  the reservation has room (AWS: pkg/providers/instancetype/offering/reserved_capacity_resolver.go,
  `Available: ... reservationCapacity != 0`; KPO v1.0.0: pkg/providers/instancetype/provider.go
  makeReservedOffering, `avail := Total - Used`, available when not 0);
- day 2 (`day_two`): drift launches a replacement before removing the drifted node and only within the
  Drifted budget (disruption docs, "Drift"), so a replacement the limits or the reservation refuse leaves the
  node drifted and serving; expiry drains the node at once, whatever the budgets (disruption docs,
  "Expiration"), unless expireAfter is Never; pods annotated karpenter.sh/do-not-disrupt: "true" block
  consolidation and drift of their node while the NodePool has no terminationGracePeriod, and are not
  evicted by an expiry's drain (disruption docs, "Pod-Level Controls").

Inputs are the rendered NodePool and node class objects and the catalog; never the plan.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cloudsim.kube import Pod, Taint, quantity, tolerates
from gpustack.catalog import InstanceType
from gpustack.clouds import CLOUDS
from gpustack.clouds.karpenter import NODEPOOL_LABEL, KarpenterProvisioner

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


MIB = 2**20
# The provider's VM memory overhead by node class group (module docstring).
VM_MEMORY_OVERHEAD = {"karpenter.k8s.aws": 0.075, "karpenter.azure.com": 0.075}


def _group(node_pool: Mapping[str, Any]) -> str:
    return str(node_pool["spec"]["template"]["spec"]["nodeClassRef"]["group"])


def memory_bytes(row: InstanceType, node_pool: Mapping[str, Any] | None) -> float:
    """The memory capacity Karpenter gives a new node of `row`, the VM overhead taken."""
    group = _group(node_pool) if node_pool is not None else ""
    overhead = VM_MEMORY_OVERHEAD.get(group, 0.0)
    if group == "karpenter.azure.com":  # whole GiB, less ceil(bytes x overhead) bytes
        whole = int(row.memory_gib) * GIB
        return whole - math.ceil(whole * overhead)
    mib = round(row.memory_gib * 1024)  # MiB, less ceil(MiB x overhead) MiB
    return (mib - math.ceil(mib * overhead)) * MIB


def capacity(row: InstanceType, node_pool: Mapping[str, Any] | None = None,
             overlays: Sequence[Mapping[str, Any]] = ()) -> dict[str, float]:
    """InstanceType.Capacity: cpu, memory (VM overhead off), the cloud's GPU count, the applying overlays assigned."""
    out = {"cpu": float(row.vcpus), "memory": memory_bytes(row, node_pool), "nvidia.com/gpu": float(row.gpus)}
    applying = [o for o in overlays if node_pool is not None and _overlay_applies(o, node_pool, row)]
    for overlay in sorted(applying, key=lambda o: int(o["spec"].get("weight", 0))):  # the highest weight last
        out.update({name: quantity(value) for name, value in overlay["spec"].get("capacity", {}).items()})
    return out


def offered(row: InstanceType, node_pool: Mapping[str, Any] | None = None,
            overlays: Sequence[Mapping[str, Any]] = ()) -> dict[str, float]:
    """What Karpenter believes a new node of `row` launched for `node_pool` offers pods: its capacity less the
    kubelet's reservation of the provider's node image (computed on the instance's full memory)."""
    kubelet = (provider(node_pool) if node_pool is not None else CLOUDS.get(row.cloud).provisioner()).kubelet_reservation
    kubelet = dataclasses.replace(kubelet, vm_memory_overhead=0.0)  # the overhead is `capacity`'s, from the source
    cpu, memory = kubelet.reserved(row.name, row.vcpus, row.memory_gib)
    out = capacity(row, node_pool, overlays)
    out["cpu"] = max(out["cpu"] - cpu, 0.0)
    out["memory"] = max(out["memory"] - memory * GIB, 0.0)
    return out


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


def _capacity_types(node_pool: Mapping[str, Any]) -> set[str]:
    return requirements(node_pool).get("karpenter.sh/capacity-type") or set()


def launch(pod: Pod, node_pool: Mapping[str, Any], rows: Mapping[str, InstanceType],
           overlays: Sequence[Mapping[str, Any]] = (), nodes: Sequence[Mapping[str, float]] = (),
           reservation_room: int | None = None, available: frozenset[str] = frozenset({"spot", "on-demand"})
           ) -> tuple[str | None, dict[str, float] | None]:
    """(Karpenter's refusal or None, the new node's capacity) for one NodeClaim of `node_pool` for `pod`, with
    `nodes` (their capacities) already in the NodePool, `reservation_room` nodes left in the reservation its node
    class selects (None: none selected) and `available` the other capacity types the cloud has now."""
    if (reason := why_not(pod, node_pool, rows, overlays)) is not None:
        return reason, None
    limits = {name: quantity(value) for name, value in node_pool["spec"].get("limits", {}).items()}
    remaining = {name: amount - sum(n.get(name, 0.0) for n in nodes) for name, amount in limits.items()}
    if "nodes" in remaining:
        remaining["nodes"] = limits["nodes"] - len(nodes)
        if remaining["nodes"] <= 0:
            return "node limits have been exhausted for nodepool", None
    chosen = provider(node_pool)
    names = requirements(node_pool).get(chosen.instance_type_label) or set()
    fitting = []
    for name in sorted(names):
        if name not in rows:
            continue
        node = capacity(rows[name], node_pool, overlays)
        if all(node.get(key, 0.0) <= left + 1e-9 for key, left in remaining.items() if key != "nodes"):
            fitting.append(node)
    if not fitting:
        return "all available instance types exceed limits for nodepool", None
    offered_types = set(available)
    if reservation_room:
        offered_types.add("reserved")
    if not _capacity_types(node_pool) & offered_types:
        return f"no offering of {sorted(_capacity_types(node_pool))} is available", None
    return None, fitting[0]


def launchable(pod: Pod, node_pool: Mapping[str, Any], rows: Mapping[str, InstanceType],
               overlays: Sequence[Mapping[str, Any]] = (), reservation_room: int | None = None,
               available: frozenset[str] = frozenset({"spot", "on-demand"}), most: int = 1000) -> int:
    """How many nodes `node_pool` launches one after another for pods like `pod`, from none, until Karpenter
    refuses (a launch into the reservation uses one node of its room)."""
    nodes: list[dict[str, float]] = []
    room = reservation_room
    while len(nodes) < most:
        reserved_only = _capacity_types(node_pool) <= {"reserved"}
        reason, node = launch(pod, node_pool, rows, overlays, nodes, room, frozenset() if reserved_only else available)
        if reason is not None or node is None:
            break
        nodes.append(node)
        if room and (reserved_only or "reserved" in _capacity_types(node_pool)):
            room -= 1
    return len(nodes)


def _budget(node_pool: Mapping[str, Any], reason: str, nodes: int) -> int:
    """Nodes the NodePool's budgets allow to disrupt at once for `reason` (default: 10%, rounded up)."""
    budgets = node_pool["spec"].get("disruption", {}).get("budgets") or [{"nodes": "10%"}]
    allowed = nodes
    for budget in budgets:
        if budget.get("reasons") and reason not in budget["reasons"]:
            continue
        value = str(budget["nodes"])
        count = math.ceil(nodes * int(value[:-1]) / 100) if value.endswith("%") else int(value)
        allowed = min(allowed, count)
    return allowed


def day_two(event: str, node_pool: Mapping[str, Any], node_class: Mapping[str, Any], pod: Pod,
            rows: Mapping[str, InstanceType], nodes: int, reservation_room: int | None,
            pod_annotations: Mapping[str, str] = (), available: frozenset[str] = frozenset({"spot", "on-demand"})
            ) -> tuple[int, str]:
    """(nodes still serving the pool's pods, what happened) after `event` on a NodePool running `nodes` nodes:
    "ami" (a new image of the node class's image family is released), "upgrade" (the control plane's
    Kubernetes version changes) or "expiry" (the nodes' lifetime reaches expireAfter)."""
    template = node_pool["spec"]["template"]["spec"]
    protected = dict(pod_annotations or {}).get("karpenter.sh/do-not-disrupt") == "true"
    if event == "expiry":
        if template.get("expireAfter", "720h") == "Never":
            return nodes, "never expires"
        if protected:
            return nodes, "drained, its do-not-disrupt pods not evicted (the node stays until they end)"
        return 0, "expired: drained at once, before any replacement"
    drifts = event == "upgrade" or _image_follows_releases(node_class)
    if not drifts:
        return nodes, "not drifted: the node class pins its image"
    if protected and "terminationGracePeriod" not in template:
        return nodes, "drifted, not disrupted: its pods carry do-not-disrupt"
    if _budget(node_pool, "Drifted", nodes) == 0:
        return nodes, "drifted, not disrupted: the Drifted budget is 0"
    capacities = [capacity(rows[sorted(requirements(node_pool)[provider(node_pool).instance_type_label])[0]], node_pool)
                  ] * nodes
    reserved_only = _capacity_types(node_pool) <= {"reserved"}
    reason, _ = launch(pod, node_pool, rows, (), capacities, reservation_room, frozenset() if reserved_only else available)
    if reason is not None:
        return nodes, f"drifted, its replacement refused ({reason}): the node keeps serving"
    return nodes, "replaced: the replacement launched before the drifted node drained"


def _image_follows_releases(node_class: Mapping[str, Any]) -> bool:
    """Whether a new image release drifts the node class's nodes: an `@latest` AMI alias (AWS), an image
    family without a pinned version (Azure), never a pinned image id (KPO's imageId)."""
    spec = node_class["spec"]
    aliases = [t.get("alias", "") for t in spec.get("amiSelectorTerms", ())]
    if aliases:
        return any(a.endswith("@latest") for a in aliases)
    image = spec.get("volumeConfig", {}).get("bootVolumeConfig", {}).get("imageConfig", {})
    if image:
        return not image.get("imageId")
    return True  # NAP: each new node image of the family drifts the nodes
