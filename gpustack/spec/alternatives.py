"""`workloads[].instance_types` as a list per cloud: the instance types a spot pool may launch.

    instance_types:
      aws: [p4d.24xlarge, p4de.24xlarge, p5.48xlarge]   # the first is the pin; the others alternatives

Spot capacity is short per type and per zone, and interruptions come in waves per type: a spot pool
over several types takes what is free. The planner packs the pool on the first type, prices it at the
set's worst spot price (the pool may run on any of them), keeps the on-demand fallback on the first
type, and says where the cloud's node pools take one type only. Spot is for work that can be
interrupted: training, fine-tuning and notebooks.
"""

from __future__ import annotations

from typing import Any

from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

ALTERNATIVE_KINDS = ("training", "fine-tuning", "notebook")
# EKS managed node groups take at most 20 instance types (CreateNodegroup instanceTypes,
# https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html); Karpenter any number.
MAX_ALTERNATIVES = 20


def read_alternatives(reader: Reader, path: Path, value: list[Any], kind: Any) -> tuple[str, ...] | Any:
    """The checked list of instance types of one cloud (BAD after a located problem)."""
    if kind and kind not in ALTERNATIVE_KINDS:
        return reader.problem(path, f"a list of instance types is for spot pools ({', '.join(ALTERNATIVE_KINDS)}); "
                                    f"a {kind} workload pins one type: give a single name")
    if not value:
        return reader.problem(path, "expected at least one instance type")
    if len(value) > MAX_ALTERNATIVES:
        return reader.problem(path, f"{len(value)} instance types; at most {MAX_ALTERNATIVES}")
    types = []
    for j, name in enumerate(value):
        checked = reader.string(path + (j,), name)
        if checked is BAD:
            return BAD
        if checked in types:
            return reader.problem(path + (j,), f"{checked!r} is listed twice")
        types.append(checked)
    return tuple(types)
