"""Kueue's objects for targets with `settings.queue: kueue` (kueue.x-k8s.io/v1beta2, served and stored by
Kueue v0.19; CRDs vendored under tests/schemas), built from the plan's `queueing` only:

- a ResourceFlavor per training and fine-tuning pool: the node labels Kueue matches against a Job's
  node affinity and adds to its pods, and the tolerations of the pool's taints, which it adds too;
- per provisioning class the plan names (queued provisioning), a ProvisioningRequestConfig and the
  AdmissionCheck of Kueue's provisioning controller that uses it;
- a ClusterQueue per team in one cohort, its flavors in the plan's order with their nominal quotas, open to
  the team's namespaces only;
- a LocalQueue of the team's name in each of its namespaces, which its Jobs name with
  kueue.x-k8s.io/queue-name (`gpustack render --workloads`).

Borrowing and preemption (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/): a Job that fits a
flavor only by borrowing there takes it (`whenCanBorrow: MayStopSearch`: idle spot in the cohort before a
new on-demand node), one that would need to preempt tries the next flavor first (`whenCanPreempt:
TryNextFlavor`); a team gets its nominal quota back from borrowers (`reclaimWithinCohort: Any`), never
from its own Jobs (`withinClusterQueue: Never`).
"""

from __future__ import annotations

from typing import Any

from gpustack.plan.model import Plan, TargetPlan
from gpustack.plan.queueing import QUEUE_LABEL, Queueing, TeamQueue
from gpustack.render.common import metadata, object_labels

API_VERSION = "kueue.x-k8s.io/v1beta2"
API_GROUP = "kueue.x-k8s.io"
# The provisioning admission check's controller (https://kueue.sigs.k8s.io/docs/admission-check-controllers/provisioning/).
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace
FLAVOR_FUNGIBILITY = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
PREEMPTION = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
KINDS = ("ResourceFlavor", "ProvisioningRequestConfig", "AdmissionCheck", "ClusterQueue", "LocalQueue")


def objects(plan: Plan, target: TargetPlan) -> list[dict[str, Any]]:
    queueing = target.queueing
    if queueing is None:
        return []
    labels = object_labels(plan, target)
    out: list[dict[str, Any]] = []
    for flavor in queueing.flavors:
        spec: dict[str, Any] = {"nodeLabels": dict(flavor.node_labels)}
        if flavor.tolerations:
            spec["tolerations"] = [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in flavor.tolerations]
        out.append({"apiVersion": API_VERSION, "kind": "ResourceFlavor",
                    "metadata": metadata(flavor.name, object_labels(plan, target, target.pool(flavor.pool))),
                    "spec": spec})
    for check in queueing.checks:
        out.append({"apiVersion": API_VERSION, "kind": "ProvisioningRequestConfig", "metadata": metadata(check.name, labels),
                    "spec": {"provisioningClassName": check.provisioning_class,
                             "managedResources": list(check.managed_resources)}})
        out.append({"apiVersion": API_VERSION, "kind": "AdmissionCheck", "metadata": metadata(check.name, labels),
                    "spec": {"controllerName": PROVISIONING_CONTROLLER,
                             "parameters": {"apiGroup": API_GROUP, "kind": "ProvisioningRequestConfig",
                                            "name": check.name}}})
    for queue in queueing.queues:
        out.append(cluster_queue(queueing, queue, labels))
        for namespace in queue.namespaces:
            out.append({"apiVersion": API_VERSION, "kind": "LocalQueue",
                        "metadata": metadata(queue.name, labels, namespace), "spec": {"clusterQueue": queue.name}})
    return out


def cluster_queue(queueing: Queueing, queue: TeamQueue, labels: dict[str, str]) -> dict[str, Any]:
    flavors = [{"name": quota.flavor, "resources": [{"name": name, "nominalQuota": amount}
                                                    for name, amount in quota.resources]}
               for quota in queue.quotas]
    spec: dict[str, Any] = {
        "cohortName": queueing.cohort,
        "namespaceSelector": {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In",
                                                    "values": list(queue.namespaces)}]},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": dict(FLAVOR_FUNGIBILITY),
        "preemption": dict(PREEMPTION),
        "resourceGroups": [{"coveredResources": list(queue.covered_resources), "flavors": flavors}],
    }
    if queue.admission_checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name, "onFlavors": list(on)}
                                                               for name, on in queue.admission_checks]}
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": metadata(queue.name, labels), "spec": spec}


def queue_labels(target: TargetPlan, workload: str) -> dict[str, str]:
    """The label a queued workload's Jobs carry (none when the target or the workload is not queued)."""
    queued = target.queueing.queue_of(workload) if target.queueing else None
    return {QUEUE_LABEL: queued.queue} if queued else {}
