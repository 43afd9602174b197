"""The built-in idle action: per workload with `idle.action: scale-to-zero` that KEDA does not scale, a
CronJob every 5 minutes asking Prometheus whether the workload is idle and scaling it to zero if so
(gpustack/incluster/idle.py), where `settings.autostop` is `cronjob`.

Per namespace: the program's ConfigMap, the auto-stop state ConfigMap (unless auto-stop renders it
there already: one object, one contract), a ServiceAccount whose Role allows, by name, get on each
workload's object, patch on its `scale`, and get and update on the state ConfigMap; and a NetworkPolicy
letting the job's pods reach only the API server's ports, DNS in kube-system (the Prometheus URL is a
host name) and Prometheus's port (in its namespace when the URL is a Service name `<svc>.<ns>.svc`).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from gpustack.incluster import source
from gpustack.plan.model import IdlePolicy, Plan, TargetPlan
from gpustack.render import autostop, promql
from gpustack.render.common import fitted_name, metadata, object_labels
from gpustack.render.workloads import OBJECT_KINDS

ACCOUNT = "gpustack-idle"
PROGRAM_CONFIGMAP = "gpustack-idle-program"
PROGRAM_FILE = "idle.py"
SCHEDULE = "*/5 * * * *"
PLURALS = {"Deployment": "deployments", "StatefulSet": "statefulsets"}
_SERVICE_HOST = re.compile(r"[a-z0-9-]+\.([a-z0-9-]+)\.svc(\.cluster\.local)?")


def acting(target: TargetPlan) -> list[IdlePolicy]:
    hub = {r.workload for r in target.pod_requests if r.autostop and r.autostop.kinds == ("jupyterhub",)}
    return [p for p in target.idle
            if p.action == "scale-to-zero" and p.workload not in target.scaled_by_keda and p.workload not in hub]


def object_of(target: TargetPlan, policy: IdlePolicy) -> tuple[str, bool]:
    """(plural of the workload's object, whether its GPUs are MIG instances)."""
    request = next(r for r in target.pod_requests if r.workload == policy.workload)
    return PLURALS[OBJECT_KINDS[request.kind]], promql.uses_mig(target, policy.workload)


def cronjob(plan: Plan, target: TargetPlan, policy: IdlePolicy) -> dict[str, Any]:
    plural, mig = object_of(target, policy)
    assert target.prometheus_url is not None  # the spec requires it with an idle action
    labels = dict(sorted({**object_labels(plan, target), autostop.ACTION_LABEL: "idle"}.items()))
    command = ["python3", f"{autostop.PROGRAM_DIR}/{PROGRAM_FILE}", policy.namespace, plural, policy.workload,
               target.prometheus_url, promql.idle(policy, mig)]
    pod = dict(autostop.pod_spec(command, PROGRAM_CONFIGMAP), serviceAccountName=ACCOUNT)
    return {
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": metadata(fitted_name("gpustack-idle", policy.workload, autostop.CRONJOB_NAME_MAX), labels,
                             policy.namespace),
        "spec": {"schedule": SCHEDULE, "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 240,
                 "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 3,
                 "jobTemplate": {"spec": {"backoffLimit": 1, "activeDeadlineSeconds": 240,
                                          "ttlSecondsAfterFinished": 3600,
                                          "template": {"metadata": {"labels": labels}, "spec": pod}}}},
    }


def prometheus_peer(url: str) -> dict[str, Any]:
    """Prometheus's port, and its namespace when the URL names a Service."""
    parsed = urllib.parse.urlsplit(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    peer: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": port}]}
    match = _SERVICE_HOST.fullmatch(parsed.hostname or "")
    if match:
        peer["to"] = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": match.group(1)}}}]
    return peer


def network_policy(target: TargetPlan, labels: dict[str, str], namespace: str, url: str) -> dict[str, Any]:
    dns = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
           "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    api = autostop.api_server_egress(target)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata(ACCOUNT, labels, namespace),
            "spec": {"podSelector": {"matchLabels": {autostop.ACTION_LABEL: "idle"}},
                     "policyTypes": ["Ingress", "Egress"], "egress": [api, dns, prometheus_peer(url)]}}


def role_rules(target: TargetPlan, policies: list[IdlePolicy]) -> list[dict[str, Any]]:
    names: dict[str, list[str]] = {}
    for policy in policies:
        names.setdefault(object_of(target, policy)[0], []).append(policy.workload)
    rules: list[dict[str, Any]] = []
    for plural, workloads in sorted(names.items()):
        rules.append({"apiGroups": ["apps"], "resources": [plural], "resourceNames": sorted(workloads),
                      "verbs": ["get"]})
        rules.append({"apiGroups": ["apps"], "resources": [f"{plural}/scale"], "resourceNames": sorted(workloads),
                      "verbs": ["patch"]})
    rules.append({"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [autostop.STATE_CONFIGMAP],
                  "verbs": ["get", "update"]})
    return rules


def objects(plan: Plan, target: TargetPlan, rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The idle jobs and what they need; `rendered` are the objects already there (auto-stop's)."""
    found: list[dict[str, Any]] = []
    by_namespace: dict[str, list[IdlePolicy]] = {}
    for policy in acting(target):
        by_namespace.setdefault(policy.namespace, []).append(policy)
        found.append(cronjob(plan, target, policy))
    labels = object_labels(plan, target)
    have = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in rendered}
    assert target.prometheus_url is not None or not by_namespace
    for namespace, policies in sorted(by_namespace.items()):
        found.append({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": metadata(PROGRAM_CONFIGMAP, labels, namespace), "data": {autostop.PROGRAM_FILE: source("autostop"),
                                                                        PROGRAM_FILE: source("idle")}})
        if ("ConfigMap", namespace, autostop.STATE_CONFIGMAP) not in have:  # no `data`: the jobs' entries
            found.append({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": metadata(autostop.STATE_CONFIGMAP, labels, namespace)})
        found.append(network_policy(target, labels, namespace, str(target.prometheus_url)))
        found.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(ACCOUNT, labels, namespace)})
        found.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                      "metadata": metadata(ACCOUNT, labels, namespace), "rules": role_rules(target, policies)})
        found.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                      "metadata": metadata(ACCOUNT, labels, namespace),
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
                      "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}]})
    return found
