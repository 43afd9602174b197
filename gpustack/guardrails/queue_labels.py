"""`gpustack check --manifests` on a queued target (`settings.queue: kueue`): each Job of a queued workload
names its team's LocalQueue, or Kueue never admits it through the team's quota.

Kueue's batch/v1 Job integration reads the queue from the Job's `kueue.x-k8s.io/queue-name` label
(https://kueue.sigs.k8s.io/docs/tasks/run/jobs/); a CronJob's Jobs take it from its jobTemplate's labels.
Without it, Kueue leaves the Job alone (manageJobsWithoutQueueName defaults to false), so it runs outside
any quota; with another queue, it is admitted against another team's quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpustack.plan.model import TargetPlan
from gpustack.plan.queueing import QUEUE_LABEL
from gpustack.spec.yamlsource import Path

# Where each kind keeps the labels of the Jobs it makes (only Jobs are queued).
JOB_LABEL_PATHS: dict[str, Path] = {"Job": ("metadata", "labels"),
                                    "CronJob": ("spec", "jobTemplate", "metadata", "labels")}


def queue_problems(target: TargetPlan, workload: str, kind: str,
                   document: Mapping[str, Any]) -> list[tuple[Path, str, str]]:
    """(path, message, fix) for a Job or CronJob of `workload` that does not name its queue."""
    queued = target.queueing.queue_of(workload) if target.queueing else None
    if queued is None or kind not in JOB_LABEL_PATHS:
        return []
    path = JOB_LABEL_PATHS[kind]
    labels: Any = document
    for part in path:
        labels = labels.get(part) if isinstance(labels, dict) else None
    have = labels.get(QUEUE_LABEL) if isinstance(labels, dict) else None
    fix = f"label it {QUEUE_LABEL}: {queued.queue} (`gpustack render --workloads` writes the patch)"
    jobs, name = ("its Jobs", "name") if kind == "CronJob" else ("it", "names")
    if have is None:
        return [(path, f"target {target.name} queues {workload} with Kueue, but {jobs} {name} no queue "
                       f"({QUEUE_LABEL}): Kueue leaves {jobs} alone, outside team {queued.team}'s quota", fix)]
    if str(have) != queued.queue:
        return [(path, f"{jobs} {name} queue {have!r}, but {workload} is queued in {queued.queue!r} "
                       f"(team {queued.team}): admitted against another quota, or never", fix)]
    return []
