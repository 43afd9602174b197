"""Which resources of a stack stop a node pool out of hours: the pack's view of "has a schedule".

Two kinds count: a Kubernetes CronJob whose labels name the pool under `gpustack.dev/pool` (the
in-cluster auto-stop, on every cloud), and a cloud's own scheduled scaling, read by the
`SCHEDULE_TYPES` of its bundle's `readers.py` (e.g. a scheduled action on the Auto Scaling group of
a node group). `schedule_stops_pool` is the one place that matches a schedule to a pool.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.guardrails.view import POOL_LABEL, UNKNOWN, PoolView

CRONJOB = "kubernetes:batch/v1:CronJob"


@dataclasses.dataclass(frozen=True)
class ScheduleRef:
    urn: str
    # A cloud schedule: the name of what it scales (one of a pool's `scaled_names`), when known.
    scales: str | None = None
    depends_on: frozenset[str] = frozenset()  # URNs the name of what it scales comes from
    pool_label: str | None = None  # CronJob: the value of its gpustack.dev/pool label


ScheduleReader = Callable[[Mapping[str, Any], str, Iterable[str]], ScheduleRef]


def cloud_schedule_types() -> dict[str, ScheduleReader]:
    """Every cloud's scheduled-scaling resource types (`SCHEDULE_TYPES` of each bundle's readers)."""
    return _schedule_types_of(CLOUDS.generation)


@functools.cache
def _schedule_types_of(generation: int) -> dict[str, ScheduleReader]:
    del generation  # once per set of registered clouds
    return {token: read for cloud in CLOUDS for token, read in cloud.part("readers").SCHEDULE_TYPES.items()}


def schedule_ref(resource_type: str, props: Mapping[str, Any], urn: str,
                 dependencies: Iterable[str] = ()) -> ScheduleRef | None:
    """The schedule a resource declares, or None when it declares none."""
    read = cloud_schedule_types().get(resource_type)
    if read is not None:
        return read(props, urn, dependencies)
    if resource_type == CRONJOB:
        metadata = props.get("metadata")
        labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
        value = labels.get(POOL_LABEL) if isinstance(labels, Mapping) else None
        if isinstance(value, str):
            return ScheduleRef(urn, pool_label=value)
        if value is UNKNOWN:
            return ScheduleRef(urn, pool_label=None)
    return None


def schedule_stops_pool(schedule: ScheduleRef, pool: PoolView) -> bool:
    """Whether `schedule` belongs to `pool`.

    A CronJob names the pool by its gpustack.dev/pool node label (the plan's pool name) or by its
    name on the cloud. A cloud schedule names what it scales (the cloud's reader gives a pool the
    names it is scaled by, `scaled_names`); while that name is not known yet (a preview before the
    node pool exists) its dependency on the node pool stands for it.
    """
    if schedule.pool_label is not None:
        return schedule.pool_label in {pool.pool_label, pool.cloud_name} - {None}
    if schedule.scales is not None and pool.scaled_names:
        return schedule.scales in pool.scaled_names
    return bool(pool.urn) and pool.urn in schedule.depends_on


def with_schedules(pools: list[PoolView], schedules: list[ScheduleRef]) -> list[PoolView]:
    """The pools with `scheduled` set from the schedules of the same stack."""
    return [dataclasses.replace(p, scheduled=any(schedule_stops_pool(s, p) for s in schedules)) for p in pools]
