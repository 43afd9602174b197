"""A strategic merge patch (kubectl / kustomize) for the fields gpustack's workload patches touch.

Maps merge recursively; a list merges by its patch merge key where the Kubernetes API declares one
(`patchStrategy:"merge" patchMergeKey:...` in k8s.io/api core/v1 and apps/v1 types.go) and is
replaced as a whole otherwise (tolerations, nodeSelectorTerms, preferred affinity terms).
https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/#notes-on-the-strategic-merge-patch
"""

from __future__ import annotations

import copy
from typing import Any

MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
              "env": "name", "volumeMounts": "mountPath", "ports": "containerPort", "imagePullSecrets": "name"}


def merge(original: Any, patch: Any, field: str = "") -> Any:
    if isinstance(original, dict) and isinstance(patch, dict):
        out = copy.deepcopy(original)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value, key)
            else:
                out[key] = copy.deepcopy(value)
        return out
    if isinstance(original, list) and isinstance(patch, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        out = copy.deepcopy(original)
        for item in patch:
            found = next((i for i, o in enumerate(out) if o.get(key) == item.get(key)), None)
            if found is None:
                out.append(copy.deepcopy(item))
            else:
                out[found] = merge(out[found], item)
        return out
    return copy.deepcopy(patch)


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a workload object (Pod, Deployment, StatefulSet, Job, CronJob)."""
    if obj["kind"] == "Pod":
        return obj["spec"]  # type: ignore[no-any-return]
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    return obj["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def pod_labels(obj: dict[str, Any]) -> dict[str, str]:
    if obj["kind"] == "Pod":
        return obj["metadata"].get("labels", {})  # type: ignore[no-any-return]
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["metadata"].get("labels", {})  # type: ignore[no-any-return]
    return obj["spec"]["template"]["metadata"].get("labels", {})  # type: ignore[no-any-return]


def plain_object(kind: str, name: str, namespace: str) -> dict[str, Any]:
    """What a team writes before gpustack: one container, an image, no placement at all."""
    container = {"name": name, "image": "registry.example.com/ml/" + name + ":1.0",
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
    meta = {"name": name, "namespace": namespace, "labels": {"app": name}}
    if kind in ("Deployment", "StatefulSet"):
        spec: dict[str, Any] = {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}
        if kind == "StatefulSet":
            spec["serviceName"] = name
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}
    if kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta, "spec": {"template": template}}
    if kind == "CronJob":
        template["spec"]["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta,
                "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": template}}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}
