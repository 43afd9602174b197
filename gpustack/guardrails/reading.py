"""The toolkit of the guardrail readers: what every cloud's `readers.py` builds its readers from.

A reader sees resource properties as the engine sends them to a policy (camelCase keys, numbers as
floats, `UNKNOWN` for values a preview does not know yet) and returns the neutral `Fields` of a pool.
A `PoolType` is one node-pool resource type of a cloud: its reader, and where it sets each plan field
(for fix messages and replacements). Nothing here names a cloud.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpustack.guardrails.view import POOL_LABEL, UNKNOWN, Taint

Props = Mapping[str, Any]

# The in-cluster auto-stop, on every cloud: what a fix message names as a schedule.
CRONJOB_SCHEDULE = f"kubernetes:batch/v1:CronJob resources labelled {POOL_LABEL}=<pool> that scale it to zero out of hours"


class Reader:
    """Reads dotted paths from props; notes the neutral fields whose value is unknown (preview)."""

    def __init__(self, props: Props) -> None:
        self.props = props
        self.unknown: set[str] = set()

    def get(self, path: str, field: str) -> Any:
        value: Any = self.props
        for part in path.split("."):
            if value is UNKNOWN:
                break
            if isinstance(value, Sequence) and not isinstance(value, str) and part.isdigit():
                value = value[int(part)] if int(part) < len(value) else None
            elif isinstance(value, Mapping):
                value = value.get(part)
            else:
                return None
        if value is UNKNOWN or _has_unknown(value):
            self.unknown.add(field)
            return None
        return value


def _has_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(_has_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_unknown(v) for v in value)
    return False


@dataclasses.dataclass(frozen=True)
class Fields:
    """What a reader found in one resource."""

    instance_type: str | None
    capacities: frozenset[str]
    labels: Mapping[str, str] | None
    taints: tuple[Taint, ...] | None
    min_nodes: int | None
    max_nodes: int | None
    cloud_name: str | None
    region: str | None = None
    gpus_declared: int | None = None  # GPUs per node the resource states itself (accelerator blocks)
    gpu_marker: bool = False  # the resource says it is a GPU pool, whatever the catalog knows
    catalog_applies: bool = True  # False when the instance type has GPUs only if the resource attaches them
    scaled_names: tuple[str, ...] = ()  # PoolView.scaled_names
    resource_id: str | None = None


@dataclasses.dataclass(frozen=True)
class PoolType:
    token: str
    cloud: str  # registry name, for catalog look-ups
    read: Callable[[Reader], Fields]
    paths: Mapping[str, str]  # plan field -> where the resource sets it (fix messages, replacements)
    capacity_values: Mapping[str, str]  # capacity -> how to ask for it
    gpu_taint: str  # how to declare the nvidia.com/gpu taint
    schedule: str  # what counts as an auto-stop schedule for this type
    bounded_by: str | None = None  # the type of the autoscaler resource that may hold the pool's bounds
    provisioner: str = ""  # the provisioner whose resource this is ("": the cloud's default)
    # Where types of several clouds share one token (Karpenter's NodePool): (props path, value) the
    # resource of this one has.
    selector: tuple[str, str] | None = None


def int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def taint_objects(items: Any, effects: Mapping[str, str]) -> tuple[Taint, ...]:
    """Taints written as objects; `effects` maps the cloud's effect spelling back to Kubernetes'."""
    return tuple(Taint(str(t.get("key", "")), str(t.get("value") or ""), effects.get(str(t.get("effect")), str(t.get("effect"))))
                 for t in items or () if isinstance(t, Mapping))


def taint_strings(items: Iterable[str]) -> tuple[Taint, ...]:
    """Taints written as kubelet takes them: key=value:Effect (value optional)."""
    out = []
    for text in items:
        head, _, effect = str(text).strip().rpartition(":")
        key, _, value = head.partition("=")
        if key:
            out.append(Taint(key, value, effect))
    return tuple(out)


def labels_of(value: Any) -> dict[str, str] | None:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else ({} if value is None else None)
