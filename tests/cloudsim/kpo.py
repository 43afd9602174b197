"""Which capacity types Oracle's Karpenter provider (KPO) offers a NodePool for a shape.

Follows oracle/karpenter-provider-oci at tag v1.0.0 (de2166eb420429501ee7c302b5cce2bc8f6ec873),
pkg/providers/instancetype/provider.go:
- `ListInstanceTypes`: a GPU shape is offered at all only to a NodePool tainted nvidia.com/gpu (or
  amd.com/gpu) with effect NoSchedule;
- `setOfferings`: on-demand always; spot when the shape is preemptible (its shape metadata's
  preemptibleShapes, prefix match: `isPreemptibleShape`), the node class names no capacity reservation
  and the NodePool carries the oci.oraclecloud.com/oke-is-preemptible NoSchedule taint (key and effect:
  `checkTaintExists`); reserved when the node class names capacity reservations that resolve to one holding
  the shape, and only while it has room: `makeReservedOffering` (provider.go:355-379) sets
  `avail := Total - Used` (at least 0) and makes the offering available only when `avail != 0`, so a
  reservation of exactly the floor's size offers nothing to a replacement launched before the old node goes.
Inputs are the rendered NodePool and OCINodeClass; never the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# chart/config/oci-shape-meta.json, preemptibleShapes, the GPU shapes among them (v1.0.0).
PREEMPTIBLE_GPU_SHAPES = ("VM.GPU3.1", "VM.GPU2.1", "VM.GPU3.2", "VM.GPU3.4")


def _tainted(node_pool: Mapping[str, Any], key: str) -> bool:
    return any(t["key"] == key and t["effect"] == "NoSchedule" for t in node_pool["spec"]["template"]["spec"]["taints"])


def offered(node_pool: Mapping[str, Any], node_class: Mapping[str, Any], shape: str, gpus: int,
            reservation_room: int = 0) -> set[str]:
    """The karpenter.sh/capacity-type values KPO offers `node_pool` for `shape` (empty: not offered), with
    `reservation_room` instances of the shape left unused in the reservation the node class names."""
    if gpus and not (_tainted(node_pool, "nvidia.com/gpu") or _tainted(node_pool, "amd.com/gpu")):
        return set()
    reservations = bool(node_class["spec"].get("capacityReservationConfigs"))
    out = {"on-demand"}
    preemptible = shape.upper().startswith(tuple(s.upper() for s in PREEMPTIBLE_GPU_SHAPES))
    if preemptible and not reservations and _tainted(node_pool, "oci.oraclecloud.com/oke-is-preemptible"):
        out.add("spot")
    if reservations and reservation_room > 0:
        out.add("reserved")
    return out
