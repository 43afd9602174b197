"""The spec's per-workload `availability: {zones: 2, max_replicas_per_node: 1}` (inference only).

A must-stay-up service says how many zones its replicas spread over and how many of them one node
may carry, so that one zone outage or one node lost never takes all of its floor. The planner sizes
the floor and the burst so that the replicas fit under both limits, spreads the reserved floor (and
its capacity reservations) over that many zones, and `render --workloads` gives the pods the
topology spread constraints that hold the scheduler to it. Without it, `gpustack check` warns on an
inference floor that sits on one node or in one zone.
"""

from __future__ import annotations

from typing import Any

from gpustack.spec.model import Availability
from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

AVAILABILITY_OPTIONAL = ("zones", "max_replicas_per_node")
EXAMPLE = "{zones: 2, max_replicas_per_node: 1}"
# No region of the four clouds has more than six zones (availability domains) for one GPU.
MAX_ZONES = 6
MAX_REPLICAS_PER_NODE = 64


def read_availability(reader: Reader, path: Path, value: Any, kind: Any) -> Availability | Any:
    """The checked `availability` of a workload of `kind` (BAD after recording a located problem)."""
    value = reader.mapping(path, value, optional=AVAILABILITY_OPTIONAL, what=EXAMPLE)
    if value is BAD:
        return BAD
    if kind and kind != "inference":
        return reader.problem(path, f"availability is for inference workloads (their floors serve); a {kind} "
                                    "workload is restarted from its checkpoint or its schedule instead")
    if not value:
        return reader.problem(path, f"give zones, max_replicas_per_node or both, e.g. availability: {EXAMPLE}")
    zones = reader.integer(path + ("zones",), value["zones"], minimum=1, maximum=MAX_ZONES) \
        if "zones" in value else 1
    per_node = reader.integer(path + ("max_replicas_per_node",), value["max_replicas_per_node"], minimum=1,
                              maximum=MAX_REPLICAS_PER_NODE) if "max_replicas_per_node" in value else None
    if zones is BAD or per_node is BAD:
        return BAD
    return Availability(zones, per_node)
