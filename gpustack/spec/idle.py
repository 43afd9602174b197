"""The spec's per-workload `idle: {below: 10%, for: 15m, action: scale-to-zero | alert, floors: false}`.

Opt-in: a workload without `idle` keeps today's behaviour, the per-pool idle alert only. With
`action: scale-to-zero` its Deployment or StatefulSet goes to zero replicas once its GPUs stay below
`below` for `for` (KEDA where the target says `settings.autostop: keda`, else the built-in job).
An inference workload with a steady floor (`replicas.min` above 0) runs on a reserved floor that is
billed whether it serves or not, and scaling it away trades latency for no saving: the action is
refused there unless the workload says `floors: true`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from gpustack.errors import show
from gpustack.spec.model import IDLE_ACTIONS, IDLE_KINDS, Idle, IdleAction, Replicas, Target, Workload
from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

IDLE_KEYS = ("below", "for")
IDLE_OPTIONAL = ("action", "floors")
# Below 1% nothing counts as idle; above 50% a half-busy GPU would be stopped.
BELOW_MIN, BELOW_MAX = 1.0, 50.0
# At least 5 minutes: DCGM samples every 30 s and the built-in job runs every 5 minutes; at most a day.
FOR_MIN_SECONDS, FOR_MAX_SECONDS = 5 * 60, 24 * 3600
_PERCENT = re.compile(r"([0-9]{1,2}(\.[0-9]{1,2})?)%")
_DURATION = re.compile(r"([1-9][0-9]{0,4})(m|h)")
WHAT = "{below: 10%, for: 15m, action: scale-to-zero | alert}"


def parse_percent(value: object) -> float:
    if isinstance(value, str) and (match := _PERCENT.fullmatch(value)):
        percent = float(match.group(1))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f"write the share with a percent sign, e.g. below: {value:g}%")
    else:
        raise ValueError(f"{show(value)} is not a percentage such as 10%")
    if not BELOW_MIN <= percent <= BELOW_MAX:
        raise ValueError(f"{value} is out of range: idle means below {BELOW_MIN:g}% to {BELOW_MAX:g}% utilisation")
    return percent


def parse_duration_seconds(value: object) -> int:
    if not isinstance(value, str) or not (match := _DURATION.fullmatch(value)):
        raise ValueError(f"{show(value)} is not a duration such as 15m or 2h (minutes or hours)")
    seconds = int(match.group(1)) * (60 if match.group(2) == "m" else 3600)
    if not FOR_MIN_SECONDS <= seconds <= FOR_MAX_SECONDS:
        raise ValueError(f"{value} is out of range: from 5m to 24h")
    return seconds


def read_idle(reader: Reader, path: Path, value: Any, kind: Any, replicas: Any) -> Idle | Any:
    """The checked `idle` of a workload of `kind` with `replicas`, or BAD after located problems."""
    value = reader.mapping(path, value, required=IDLE_KEYS, optional=IDLE_OPTIONAL, what=WHAT)
    if value is BAD or any(key not in value for key in IDLE_KEYS):
        return BAD
    below = reader.parsed(path + ("below",), value["below"], parse_percent)
    seconds = reader.parsed(path + ("for",), value["for"], parse_duration_seconds)
    action = reader.choice(path + ("action",), value["action"], IDLE_ACTIONS) if "action" in value else "alert"
    floors = reader.boolean(path + ("floors",), value["floors"]) if "floors" in value else False
    if BAD in (below, seconds, action, floors):
        return BAD
    if action == "scale-to-zero" and kind and kind not in IDLE_KINDS:
        return reader.problem(path + ("action",), f"scale-to-zero applies to {' and '.join(IDLE_KINDS)} workloads "
                                                  f"(Deployments, StatefulSets); {kind} runs as Jobs, which end by "
                                                  "themselves: use action: alert")
    if action == "scale-to-zero" and isinstance(replicas, Replicas) and replicas.min > 0 and kind == "inference" \
            and not floors:
        return reader.problem(path + ("action",), f"this inference workload keeps a floor of {replicas.min} "
                                                  "replicas on reserved capacity, billed idle or not: scaling it to "
                                                  "zero saves nothing and drops its traffic; add floors: true to "
                                                  "do it anyway, or use action: alert")
    if floors and action != "scale-to-zero":
        return reader.problem(path + ("floors",), "floors: true only matters with action: scale-to-zero")
    return Idle(below, seconds, cast(IdleAction, action), floors)


def _culled_by_the_hub(workload: Workload) -> bool:
    """A JupyterHub's servers: its idle culler acts (gpustack/render/jupyterhub.py), not Prometheus."""
    return workload.autostop is not None and workload.autostop.kind == "jupyterhub"


def check_prometheus(reader: Reader, targets: Sequence[Target], workloads: Sequence[Workload]) -> None:
    """A target running a workload that scales to zero when idle must say where Prometheus is."""
    by_name = {w.name: w for w in workloads}
    for target in targets:
        acting = [name for name in target.workloads
                  if (idle := by_name[name].idle) is not None and idle.action == "scale-to-zero"
                  and not _culled_by_the_hub(by_name[name])]
        if acting and target.setting("prometheus_url") is None:
            reader.problem(("targets", target.index), f"workloads {', '.join(acting)} scale to zero when idle, which "
                                                      "reads GPU utilisation from Prometheus: add settings."
                                                      "prometheus_url, e.g. http://prometheus-operated.monitoring."
                                                      "svc:9090")
