"""JupyterHub: the idle culler's values for the zero-to-jupyterhub chart, per `autostop: {kind: jupyterhub}`.

A hub's single-user servers are pods the hub spawns and tracks; stopping them behind its back leaves
the hub with servers it believes run. The chart's own answer is the idle culler
(jupyterhub-idle-culler, run by the hub as a service), set by the `cull` values (chart 4.4.0,
https://github.com/jupyterhub/zero-to-jupyterhub-k8s/blob/4.4.0/jupyterhub/values.yaml, `cull:`; the
hub passes them as the culler's flags, jupyterhub/files/hub/jupyterhub_config.py):

- `cull.timeout` (`--timeout`): seconds without activity before a server is stopped: the workload's
  `idle.for` when its action is scale-to-zero, else the chart's 3600. The culler's idleness is the
  hub's activity record (users and kernels), not GPU utilisation;
- `cull.every` (`--cull-every`): how often it checks, the chart's 600 seconds, or half the timeout
  when that is shorter;
- `cull.maxAge` (`--max-age`): the longest a server lives, active or not: one day's window, so no
  server started inside a window runs a whole window past its close. The culler has no timetable:
  a server still busy at the close runs until it goes idle or reaches this age.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpustack.plan.model import Pool, TargetPlan

CHART = "jupyterhub"
CHART_VERSION = "4.4.0"
CHART_REPO = "https://hub.jupyter.org/helm-chart/"
DEFAULT_TIMEOUT = 3600  # the chart's cull.timeout
DEFAULT_EVERY = 600  # the chart's cull.every


@dataclasses.dataclass(frozen=True)
class HubValues:
    namespace: str
    workload: str
    values: dict[str, Any]

    @property
    def file(self) -> str:
        return f"helm/{self.namespace}-{self.workload}-jupyterhub-values.yaml"


def window_seconds(pool: Pool) -> int:
    assert pool.schedule is not None
    span = pool.schedule.end_minute - pool.schedule.start_minute
    return (span if span > 0 else span + 24 * 60) * 60


def culler(target: TargetPlan, workload: str, pool: Pool) -> dict[str, Any]:
    policy = next((p for p in target.idle if p.workload == workload and p.action == "scale-to-zero"), None)
    timeout = policy.for_seconds if policy is not None else DEFAULT_TIMEOUT
    return {"enabled": True, "timeout": timeout, "every": min(DEFAULT_EVERY, max(60, timeout // 2)),
            "maxAge": window_seconds(pool)}


def hub_values(target: TargetPlan) -> tuple[HubValues, ...]:
    """One values file per workload whose `autostop` is the hub's culler, in a stable order."""
    found = []
    for request in sorted(target.pod_requests, key=lambda r: (r.namespace, r.workload)):
        if request.autostop is None or request.autostop.kinds != ("jupyterhub",):
            continue
        pool = next(p for p in target.pools if request.workload in p.workloads and p.schedule is not None)
        found.append(HubValues(request.namespace, request.workload, {"cull": culler(target, request.workload, pool)}))
    return tuple(found)


def header(hub: HubValues) -> str:
    return (f"# JupyterHub's idle culler for notebook workload {hub.namespace}/{hub.workload}: merge into the values\n"
            f"# of the hub's release (chart {CHART} {CHART_VERSION}, {CHART_REPO}), e.g.\n"
            f"#   helm upgrade <release> {CHART} --repo {CHART_REPO} --reuse-values -f {hub.file}\n"
            "# timeout: idle seconds before a server stops; every: how often the culler checks; maxAge: one\n"
            "# day's window, the longest any server lives (the culler has no timetable).\n")
