"""Dev auto-stop on every cloud: CronJobs that stop a scheduled pool's workloads and start them again.

Per scheduled pool and per namespace its workloads live in, a pair of batch/v1 CronJobs in that
namespace, in the window's own time zone (`spec.timeZone`, so daylight saving is the controller's
business). What they stop is each workload's plan choice (`pod_requests[].autostop`: the spec's
`autostop`, or detected from the kind of workload): Deployments and StatefulSets scaled to 0 through
their `/scale`, Jobs and CronJobs (with a CronJob's running Jobs) suspended, Kubeflow Notebooks
given the notebook controller's stop annotation; JupyterHub's servers are left to the hub's own
idle culler, whose chart values jupyterhub.py renders. Each object's state is saved first in the namespace's ConfigMap
`gpustack-autostop-state` and restored at the start (gpustack/incluster/autostop.py says how).

The pool's autoscaler minimum is 0, so the emptied nodes go away. Least privilege, per namespace:
a ServiceAccount whose Role allows, per kind its jobs stop, list (or get, by name, where the spec
names the object) and the one change that stops it: patch on `deployments/scale` and
`statefulsets/scale` only (it cannot change a pod template, so it cannot run anything as anyone);
patch on jobs, cronjobs or notebooks, which Kubernetes cannot narrow to a field (suspend is a field
of the object, the stop annotation is metadata), so it is narrowed by name where the spec names the
object, and a ValidatingAdmissionPolicy (admission.py) refuses any other change by this account; get
and update on the one state ConfigMap, named in `resourceNames` (Kubernetes cannot restrict `create`
by name, so the ConfigMap is rendered here, without data, and the job only fills it; an apply that
does not set `data` leaves the job's entries alone). A NetworkPolicy lets the job's pods reach
nothing but the API server's ports and accept no connection.

The job runs the standard-library program `gpustack/incluster/autostop.py` against the API server
with the pod's service-account token; one ConfigMap per namespace carries it and every CronJob there
mounts it. The official kubectl image has no shell to run a script in
(kubernetes/kubernetes build/server-image/kubectl; users report it, e.g. wireapp/wire-server#4801),
and the Docker Official Image for Python is maintained and pinned by digest here.
"""

from __future__ import annotations

from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.incluster import autostop as program
from gpustack.incluster import source
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render import admission
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
# The object kinds of the spec's `autostop` as the API spells them (jupyterhub: the hub's own culler).
PLURALS = {"deployment": "deployments", "statefulset": "statefulsets", "job": "jobs", "cronjob": "cronjobs",
           "notebook": "notebooks"}
GROUPS = {"deployments": "apps", "statefulsets": "apps", "jobs": "batch", "cronjobs": "batch",
          "notebooks": "kubeflow.org"}


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


# (plural, object name or None for the labelled ones, the program's argument)
Selection = tuple[str, str | None, str]


def selections(target: TargetPlan, pool: Pool, namespace: str) -> list[Selection]:
    """What the pool's jobs in `namespace` stop, as the program's SELECTION arguments: per kind, the
    objects labelled with the workloads that leave it to detection or name no object, then the
    objects named in the spec."""
    labelled: dict[str, set[str]] = {}
    named: set[tuple[str, str]] = set()
    for request in target.pod_requests:
        choice = request.autostop
        if (choice is None or request.workload not in pool.workloads or request.namespace != namespace
                or request.workload in target.scaled_by_keda):
            continue
        for kind in choice.kinds:
            if kind not in PLURALS:
                continue
            if choice.name:
                named.add((PLURALS[kind], choice.name))
            else:
                labelled.setdefault(PLURALS[kind], set()).add(request.workload)
    return ([(plural, None, f"{plural}={WORKLOAD_LABEL} in ({','.join(sorted(labelled[plural]))})")
             for plural in PLURALS.values() if plural in labelled]
            + [(plural, name, f"{plural}/{name}") for plural, name in sorted(named)])


def rules(chosen: list[Selection]) -> list[dict[str, Any]]:
    """The Role's rules for these selections, and nothing more: per kind, list (or get by name) and the
    one change that stops it (patch on `scale` for Deployments and StatefulSets; patch on the object
    for Jobs, CronJobs and Notebooks, narrowed to the named object where the spec names one; a
    CronJob's running Jobs have generated names, so get and patch on jobs cannot be), plus get and
    update on the state ConfigMap by name."""
    grants: dict[tuple[str, str, str], set[str] | None] = {}  # (group, resource, verb) -> names, None: any

    def allow(group: str, resource: str, verbs: tuple[str, ...], name: str | None) -> None:
        for verb in verbs:
            names = grants.get((group, resource, verb), set())
            grants[(group, resource, verb)] = None if names is None or name is None else names | {name}

    for plural, named, _ in chosen:
        group = GROUPS[plural]
        allow(group, plural, ("get",) if named else ("list",), named)
        allow(group, f"{plural}/scale" if plural in program.SCALED else plural, ("patch",), named)
        if plural == "cronjobs":
            allow("batch", "jobs", ("get", "patch"), None)
    allow("", "configmaps", ("get", "update"), STATE_CONFIGMAP)
    return folded(grants)


def folded(grants: dict[tuple[str, str, str], set[str] | None]) -> list[dict[str, Any]]:
    """(group, resource, verb) -> names as few Role rules: the resources of a group that share their
    verbs and names in one rule, the core group last."""
    verbs_of: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    for (group, resource, verb), names in sorted(grants.items(), key=lambda item: item[0]):
        verbs_of.setdefault((group, resource, tuple(sorted(names or ()))), []).append(verb)
    resources_of: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for (group, resource, named), granted in verbs_of.items():
        resources_of.setdefault((group, named, tuple(granted)), []).append(resource)
    out = []
    for (group, named, verbs), resources in sorted(resources_of.items(), key=lambda item: (item[0][0] == "", item[0])):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
        if named:
            rule["resourceNames"] = list(named)
        rule["verbs"] = list(verbs)
        out.append(rule)
    return out


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
    pod = pod_spec(["python3", f"{PROGRAM_DIR}/{PROGRAM_FILE}", action, namespace, str(max_replicas(target, pool)),
                    *(argument for _, _, argument in selections(target, pool, namespace))], PROGRAM_CONFIGMAP)
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


def api_server_egress(target: TargetPlan) -> dict[str, Any]:
    """The egress rule to the API server: the cloud's API server ports (`Cloud.api_server_ports`), at the
    addresses the target names (else any). The program reads the API server's address from
    KUBERNETES_SERVICE_HOST, so it needs no DNS."""
    ports = CLOUDS.get(target.cloud).api_server_ports
    rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": port} for port in ports]}
    if target.api_server_cidrs:
        rule["to"] = [{"ipBlock": {"cidr": cidr}} for cidr in target.api_server_cidrs]
    return rule


def network_policy(target: TargetPlan, labels: dict[str, str], namespace: str) -> dict[str, Any]:
    """The job's pods: no connection in, out only to the API server's ports (at its addresses, when known)."""
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata(ACCOUNT, labels, namespace),
        "spec": {
            "podSelector": {"matchExpressions": [{"key": ACTION_LABEL, "operator": "In", "values": ["start", "stop"]}]},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [api_server_egress(target)],
        },
    }


def rbac(plan: Plan, target: TargetPlan, namespace: str, chosen: list[Selection]) -> list[dict[str, Any]]:
    """The program's ConfigMap, the state it keeps, and the identity that may run it, in one namespace,
    allowed what the `chosen` selections of its jobs need."""
    labels = object_labels(plan, target)
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(PROGRAM_CONFIGMAP, labels, namespace),
         "data": {PROGRAM_FILE: source("autostop")}},
        # No `data`: the job's entries are its own, and an apply of this object leaves them alone.
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(STATE_CONFIGMAP, labels, namespace)},
        network_policy(target, labels, namespace),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(ACCOUNT, labels, namespace)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": metadata(ACCOUNT, labels, namespace), "rules": rules(chosen)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": metadata(ACCOUNT, labels, namespace),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
         "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}]},
    ]


def objects(plan: Plan, target: TargetPlan) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    chosen: dict[str, list[Selection]] = {}
    for pool, starts, stops in scheduled(target):
        for namespace in pool.namespaces:
            if not selections(target, pool, namespace):
                continue  # only the hub's culler stops these (jupyterhub)
            chosen.setdefault(namespace, []).extend(selections(target, pool, namespace))
            for action, crons in (("stop", stops), ("start", starts)):
                for index, cron in enumerate(crons, 1):
                    found.append(cronjob(plan, target, pool, namespace, action, cron,
                                         _numbered(action, index, len(crons))))
    for namespace in sorted(chosen):
        found.extend(rbac(plan, target, namespace, chosen[namespace]))
    plurals = {plural for picked in chosen.values() for plural, _, _ in picked}
    patched = (plurals | ({"jobs"} if "cronjobs" in plurals else set())) - set(program.SCALED)
    found.extend(admission.objects(object_labels(plan, target), patched))
    return found
