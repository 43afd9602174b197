"""`workloads[].instance_types` as a list per cloud, and `gpu` as a list of models: the instance types
and GPU models a spot pool may launch.

    instance_types:
      aws: [p4d.24xlarge, p4de.24xlarge, p5.48xlarge]   # the first is the pin; the others alternatives

Spot capacity is short per type and per zone, and interruptions come in waves per type: a spot pool
over several types takes what is free. The planner packs the pool on the first type, prices it at the
set's worst spot price (the pool may run on any of them), keeps the on-demand fallback on the first
type, and says where the cloud's node pools take one type only. Spot is for work that can be
interrupted: training, fine-tuning and notebooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gpustack.spec.model import Workload
from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

ALTERNATIVE_KINDS = ("training", "fine-tuning", "notebook")
# EKS managed node groups take at most 20 instance types (CreateNodegroup instanceTypes,
# https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html); Karpenter any number.
MAX_ALTERNATIVES = 20


def _bad_list(reader: Reader, path: Path, value: list[Any], kind: Any, what: str, single: str,
              most: int) -> bool:
    """A list of alternatives (`what`: "instance types", "GPU models") given for a kind that runs on one
    (`single`), empty, or longer than `most`: reported at `path`."""
    if kind and kind not in ALTERNATIVE_KINDS:
        reader.problem(path, f"a list of {what} is for spot pools ({', '.join(ALTERNATIVE_KINDS)}); "
                             f"a {kind} workload {single}: give a single name")
    elif not value:
        reader.problem(path, f"expected at least one {what[:-1]}")
    elif len(value) > most:
        reader.problem(path, f"{len(value)} {what}; at most {most}")
    else:
        return False
    return True


def read_alternatives(reader: Reader, path: Path, value: list[Any], kind: Any) -> tuple[str, ...] | Any:
    """The checked list of instance types of one cloud (BAD after a located problem)."""
    if _bad_list(reader, path, value, kind, "instance types", "pins one type", MAX_ALTERNATIVES):
        return BAD
    types = []
    for j, name in enumerate(value):
        checked = reader.string(path + (j,), name)
        if checked is BAD:
            return BAD
        if checked in types:
            return reader.problem(path + (j,), f"{checked!r} is listed twice")
        types.append(checked)
    return tuple(types)


# `gpu: [A100-80GB, H100]`: GPU models a spot pool may also launch. The first is the workload's GPU: the
# pool is packed and its on-demand fallback planned on it; the others add, per target, a type of the same
# GPUs per node to the spot pool (gpustack/plan/alternatives.py).
MAX_GPU_MODELS = 4


def read_gpus(reader: Reader, read_one: Callable[[Path, Any], Any], path: Path, value: Any, kind: Any) -> Any:
    """The workload's GPU model: `value`'s, or the first of a list of them (checked here, BAD after a
    located problem); the list's others are read by `gpu_alternatives` once the workload is read."""
    if not isinstance(value, list):
        return read_one(path, value)
    if _bad_list(reader, path, value, kind, "GPU models", "runs on one model", MAX_GPU_MODELS):
        return BAD
    models = [read_one(path + (j,), name) for j, name in enumerate(value)]
    if not all(models):
        return BAD
    names = [m.name for m in models]
    for j, name in enumerate(names):
        if name in names[:j]:
            return reader.problem(path + (j,), f"{name!r} is listed twice")
    return models[0]


def gpu_alternatives(reader: Reader, read_one: Callable[[Path, Any], Any], path: Path, value: Any,
                     workload: Workload) -> Workload | Any:
    """`workload` with the other GPU models of its `gpu` list (at `path`), each checked to serve a
    replica as the first does: at least its memory per GPU, and no MIG profile (a profile is one
    model's); BAD after a located problem."""
    listed = value.get("gpu") if isinstance(value, dict) else None
    if not isinstance(listed, list) or len(listed) < 2:
        return workload
    first = read_one(path + ("gpu", 0), listed[0])
    others = []
    for j, name in enumerate(listed[1:], 1):
        model = read_one(path + ("gpu", j), name)
        if workload.mig:
            return reader.problem(path + ("gpu", j), f"mig: {workload.mig} is a profile of {first.name}: a MIG "
                                                     "workload runs on one GPU model")
        if model.memory_gib < first.memory_gib:
            return reader.problem(path + ("gpu", j), f"{model.name} has {model.memory_gib:g} GB per GPU, less than "
                                                     f"the {first.memory_gib:g} GB of {first.name} the replica is "
                                                     "sized for: list models with at least as much memory")
        others.append(model.name)
    return dataclasses.replace(workload, gpu_alternatives=tuple(others))
