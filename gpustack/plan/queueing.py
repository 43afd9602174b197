"""The plan's queueing decisions (`targets[].settings.queue: kueue`) as values: which flavors the
queues offer, each team's quota per flavor, and which queue each workload's Jobs go to. Built by
`gpustack.plan.queues`; rendered as Kueue objects by `gpustack.render.kueue`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpustack.plan.model import Pairs, Taint

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # the label a Job names its LocalQueue by


@dataclasses.dataclass(frozen=True)
class QueueFlavor:
    """One pool as a Kueue ResourceFlavor: the node labels Kueue matches and injects, the tolerations
    it adds to admitted pods, and the provisioning class where Kueue must ask for its nodes first."""

    name: str  # the ResourceFlavor's name: the pool's
    pool: str
    capacity: str
    role: str
    node_labels: Pairs
    tolerations: tuple[Taint, ...]
    provisioning_class: str | None = None  # queued provisioning: the ProvisioningRequest class
    provisioning_source: str = ""


@dataclasses.dataclass(frozen=True)
class FlavorQuota:
    """What one team may use of one flavor: the covered resources' nominal quotas, in their order."""

    flavor: str
    resources: Pairs  # resource -> quantity (Kubernetes spelling)


@dataclasses.dataclass(frozen=True)
class TeamQueue:
    """One team's ClusterQueue (and the LocalQueues of the same name in its namespaces)."""

    name: str
    team: str  # the team's label value(s), as the spec writes them
    namespaces: tuple[str, ...]
    covered_resources: tuple[str, ...]
    quotas: tuple[FlavorQuota, ...]  # in the order Kueue tries the flavors
    workloads: tuple[str, ...]
    admission_checks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # check -> the flavors it applies to


@dataclasses.dataclass(frozen=True)
class QueuedWorkload:
    workload: str
    namespace: str
    queue: str  # the LocalQueue its Jobs name (kueue.x-k8s.io/queue-name)
    team: str


@dataclasses.dataclass(frozen=True)
class ProvisioningCheck:
    """An AdmissionCheck of Kueue's provisioning controller with its ProvisioningRequestConfig."""

    name: str
    provisioning_class: str
    managed_resources: tuple[str, ...]
    flavors: tuple[str, ...]
    source: str


@dataclasses.dataclass(frozen=True)
class Queueing:
    system: str  # kueue
    cohort: str
    team_keys: tuple[str, ...]  # the label keys whose values name a team
    flavors: tuple[QueueFlavor, ...]
    queues: tuple[TeamQueue, ...]
    workloads: tuple[QueuedWorkload, ...]
    checks: tuple[ProvisioningCheck, ...] = ()
    unqueued: tuple[str, ...] = ()  # workloads that run as Deployments / StatefulSets (inference, notebook)

    def queue_of(self, workload: str) -> QueuedWorkload | None:
        return next((w for w in self.workloads if w.workload == workload), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system, "cohort": self.cohort, "team_keys": list(self.team_keys),
            "flavors": [{"name": f.name, "pool": f.pool, "capacity": f.capacity, "role": f.role,
                         "node_labels": dict(f.node_labels),
                         "tolerations": [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in f.tolerations],
                         "provisioning_class": f.provisioning_class} for f in self.flavors],
            "queues": [{"name": q.name, "team": q.team, "namespaces": list(q.namespaces),
                        "covered_resources": list(q.covered_resources),
                        "quotas": [{"flavor": fq.flavor, "nominal": dict(fq.resources)} for fq in q.quotas],
                        "workloads": list(q.workloads),
                        "admission_checks": {name: list(flavors) for name, flavors in q.admission_checks}}
                       for q in self.queues],
            "workloads": [{"workload": w.workload, "namespace": w.namespace, "queue": w.queue, "team": w.team}
                          for w in self.workloads],
            "checks": [{"name": c.name, "provisioning_class": c.provisioning_class,
                        "managed_resources": list(c.managed_resources), "flavors": list(c.flavors),
                        "source": c.source} for c in self.checks],
            "unqueued": list(self.unqueued),
        }
