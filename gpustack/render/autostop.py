"""Dev auto-stop on every cloud: CronJobs that scale a scheduled pool's workloads to zero and back.

Per scheduled pool and per namespace its workloads live in, a pair of batch/v1 CronJobs in that
namespace, in the window's own time zone (`spec.timeZone`, so daylight saving is the controller's
business):

- stop (the window closes): every Deployment and StatefulSet labelled
  `gpustack.dev/workload in (<the pool's workloads>)` with replicas > 0 has its count saved in the
  namespace's ConfigMap `gpustack-autostop-state`, then is scaled to 0 through its `/scale`;
- start (the window opens): each object with a saved count gets it back (unless someone scaled it
  up meanwhile), bounded by the plan's largest replica count for the pool's workloads, and the
  entry goes.

The pool's autoscaler minimum is 0, so the emptied nodes go away. Least privilege, per namespace:
a ServiceAccount whose Role allows list on deployments and statefulsets, patch on their `scale`
subresource only (it cannot change a pod template, so it cannot run anything as anyone), and get
and update on the one state ConfigMap, named in `resourceNames` (Kubernetes cannot restrict
`create` by name, so the ConfigMap is rendered here, without data, and the job only fills it; an
apply that does not set `data` leaves the job's entries alone). A NetworkPolicy lets the job's
pods reach nothing but the API server's ports and accept no connection.

The job runs the standard-library program `gpustack/incluster/autostop.py` against the API server
with the pod's service-account token; one ConfigMap per namespace carries it and every CronJob there
mounts it. The official kubectl image has no shell to run a script in
(kubernetes/kubernetes build/server-image/kubectl; users report it, e.g. wireapp/wire-server#4801),
and the Docker Official Image for Python is maintained and pinned by digest here.
"""

from __future__ import annotations

from typing import Any

from gpustack.incluster import autostop as program
from gpustack.incluster import source
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render.common import WORKLOAD_LABEL, fitted_name, metadata, object_labels

# Docker Official Image "python" (https://hub.docker.com/_/python), pinned by the digest of its
# multi-platform index: python:3.13.15-alpine3.24, built 2026-09-17, as Docker's repo-info records it
# (https://github.com/docker-library/repo-info/blob/27b273677675a1ecbe5671d65986aa5dfe618a4f/repos/python/remote/3.13.15-alpine3.24.md).
IMAGE_TAG = "python:3.13.15-alpine3.24"
IMAGE_DIGEST = "sha256:79e7a9b9ff1cbceff819f856fb374477792a5967759d94df266de7b7b4120e6f"
IMAGE = f"{IMAGE_TAG}@{IMAGE_DIGEST}"  # the runtime pulls the digest; the tag says which release it is
STATE_CONFIGMAP = program.STATE
ACTION_LABEL = "gpustack.dev/autostop"
ACCOUNT = "gpustack-autostop"
PROGRAM_CONFIGMAP = "gpustack-autostop-program"
PROGRAM_FILE = "autostop.py"
PROGRAM_DIR = "/opt/gpustack"
# The controller appends 11 characters to Job names, which are at most 63
# (https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#writing-a-cronjob-spec).
CRONJOB_NAME_MAX = 52
RULES = [
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["list"]},
    {"apiGroups": ["apps"], "resources": ["deployments/scale", "statefulsets/scale"], "verbs": ["patch"]},
    {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [STATE_CONFIGMAP], "verbs": ["get", "update"]},
]
# The ports the API server of a managed control plane serves on, as its endpoints (what a NetworkPolicy
# sees after the `kubernetes` Service's address is translated): 443 on EKS, AKS and GKE, 6443 on OKE
# (https://docs.oracle.com/en-us/iaas/Content/ContEng/Concepts/contengnetworkconfig.htm). The
# program reads the API server's address from KUBERNETES_SERVICE_HOST, so it needs no DNS.
API_SERVER_PORTS = (443, 6443)


def scheduled(target: TargetPlan) -> list[tuple[Pool, tuple[str, ...], tuple[str, ...]]]:
    """Pools with a window that closes, with their start and stop crons (a window open all week needs
    no jobs)."""
    found = []
    for pool in target.pools:
        if pool.schedule is None or set(pool.workloads) <= set(target.scaled_by_keda):
            continue  # no window, or KEDA scales its workloads (keda.py; a pool holds one kind, so all or none)
        if pool.schedule.start_crons:
            found.append((pool, pool.schedule.start_crons, pool.schedule.stop_crons))
    return found


def max_replicas(target: TargetPlan, pool: Pool) -> int:
    """The largest replica count the plan gives any of the pool's workloads (over all its pools):
    what a start may restore at most."""
    counts: dict[str, int] = {}
    for other in target.pools:
        for placement in other.placements:
            counts[placement.workload] = counts.get(placement.workload, 0) + placement.replicas
    return max((counts.get(name, 0) for name in pool.workloads), default=0) or 1


def selector(pool: Pool) -> str:
    return f"{WORKLOAD_LABEL} in ({','.join(sorted(pool.workloads))})"


def cronjob_name(action: str, pool: Pool) -> str:
    return fitted_name(f"gpustack-{action}", pool.name, CRONJOB_NAME_MAX)


def _numbered(action: str, index: int, count: int) -> str:
    """'stop', or 'stop-2' when a window needs several crons for one action (a rare merged week)."""
    return action if count == 1 else f"{action}-{index}"


def pod_spec(command: list[str], program_configmap: str) -> dict[str, Any]:
    """The pod of a gpustack job: `command` run unprivileged from the program mounted from its ConfigMap."""
    container = {
        "name": "scale",
        "image": IMAGE,
        "command": command,
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "volumeMounts": [{"name": "program", "mountPath": PROGRAM_DIR, "readOnly": True}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
    }
    return {
        "serviceAccountName": ACCOUNT,
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "program", "configMap": {"name": program_configmap}}],
    }


def cronjob(plan: Plan, target: TargetPlan, pool: Pool, namespace: str, action: str, schedule: str,
            name_action: str | None = None) -> dict[str, Any]:
    assert pool.schedule is not None
    labels = dict(object_labels(plan, target, pool), **{ACTION_LABEL: action})
    labels = dict(sorted(labels.items()))
    pod = pod_spec(["python3", f"{PROGRAM_DIR}/{PROGRAM_FILE}", action, namespace, selector(pool),
                    str(max_replicas(target, pool))], PROGRAM_CONFIGMAP)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": metadata(cronjob_name(name_action or action, pool), labels, namespace),
        "spec": {
            "schedule": schedule,
            "timeZone": pool.schedule.timezone,
            "concurrencyPolicy": "Forbid",
            # A controller that was down at the time still acts within the hour, never much later.
            "startingDeadlineSeconds": 3600,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {
                "backoffLimit": 3,
                "activeDeadlineSeconds": 600,
                "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": {"labels": labels}, "spec": pod},
            }},
        },
    }


def network_policy(labels: dict[str, str], namespace: str) -> dict[str, Any]:
    """The job's pods: no connection in, out only to the API server's ports."""
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata(ACCOUNT, labels, namespace),
        "spec": {
            "podSelector": {"matchExpressions": [{"key": ACTION_LABEL, "operator": "In", "values": ["start", "stop"]}]},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [{"ports": [{"protocol": "TCP", "port": port} for port in API_SERVER_PORTS]}],
        },
    }


def rbac(plan: Plan, target: TargetPlan, namespace: str) -> list[dict[str, Any]]:
    """The program's ConfigMap, the state it keeps, and the identity that may run it, in one namespace."""
    labels = object_labels(plan, target)
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(PROGRAM_CONFIGMAP, labels, namespace),
         "data": {PROGRAM_FILE: source("autostop")}},
        # No `data`: the job's entries are its own, and an apply of this object leaves them alone.
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(STATE_CONFIGMAP, labels, namespace)},
        network_policy(labels, namespace),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(ACCOUNT, labels, namespace)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": metadata(ACCOUNT, labels, namespace), "rules": [dict(rule) for rule in RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": metadata(ACCOUNT, labels, namespace),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
         "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}]},
    ]


def objects(plan: Plan, target: TargetPlan) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    namespaces: set[str] = set()
    for pool, starts, stops in scheduled(target):
        for namespace in pool.namespaces:
            namespaces.add(namespace)
            for action, crons in (("stop", stops), ("start", starts)):
                for index, cron in enumerate(crons, 1):
                    found.append(cronjob(plan, target, pool, namespace, action, cron,
                                         _numbered(action, index, len(crons))))
    for namespace in sorted(namespaces):
        found.extend(rbac(plan, target, namespace))
    return found
