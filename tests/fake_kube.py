"""A fake Kubernetes API server for the auto-stop program: the objects of one namespace (Deployments,
StatefulSets, Jobs, CronJobs, Kubeflow Notebooks) and its state ConfigMap. It answers only what a
rendered Role allows (403 otherwise, resourceNames included), checks resourceVersions (409), applies
JSON merge patches (RFC 7386) and refuses a patch that changes more than the stop needs, and models
the controllers' visible effect: a suspended Job has no running pods, a stopped Notebook's StatefulSet
has 0 replicas."""

from __future__ import annotations

import copy
import io
import re
import urllib.error
import urllib.parse

from gpustack.incluster import autostop as program

GROUPS = {"apps": ("deployments", "statefulsets"), "batch": ("jobs", "cronjobs"), "kubeflow.org": ("notebooks",)}
# What each patch may touch: the Role lets the job patch the whole object, so the tests check the program
# sends only this (and the admission policy would refuse anything else).
PATCHABLE = {"deployments/scale": {"spec": {"replicas"}}, "statefulsets/scale": {"spec": {"replicas"}},
             "jobs": {"spec": {"suspend"}}, "cronjobs": {"spec": {"suspend"}},
             "notebooks": {"metadata": {"annotations"}}}


def granted(role: dict) -> set[tuple[str, str, str, str | None]]:
    """(verb, API group, resource, name or None for any): everything a Role allows, no wildcard."""
    found = set()
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, "no nonResourceURLs"
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert all("*" not in v for v in rule.get(field, [])), (field, rule)
        names = rule.get("resourceNames") or [None]
        found |= {(v, g, r, n) for v in rule["verbs"] for g in rule["apiGroups"] for r in rule["resources"]
                  for n in names}
    return found


def merge(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def obj(name: str, labels: dict | None = None, **spec) -> dict:
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": labels or {"gpustack.dev/workload": "nb"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}, **spec}}


class FakeApi:
    def __init__(self, objects: dict[str, list[dict]], role: dict, namespace: str = "research",
                 state: dict | None = None, conflicts: int = 0, failing: set[str] = frozenset(),
                 missing: set[str] = frozenset()):
        self.objects = {plural: objects.get(plural, []) for plurals in GROUPS.values() for plural in plurals}
        for plural in ("jobs", "cronjobs"):  # the API server defaults an unset suspend to false
            # (kubernetes pkg/apis/batch/v1/defaults.go, SetDefaults_Job and SetDefaults_CronJob)
            for item in self.objects[plural]:
                item["spec"].setdefault("suspend", False)
        self.namespace = namespace
        self.state = {"metadata": {"name": program.STATE, "resourceVersion": "1"}}
        if state is not None:
            self.state["data"] = dict(state)
        self.allowed = granted(role)
        self.calls: list[tuple[str, str]] = []
        self.updates: list[tuple[str, dict, dict]] = []  # (resource, before, after) of every patch applied
        self.conflicts = conflicts
        self.failing = failing
        self.missing = missing  # plurals whose API the cluster does not serve (no CRD)

    def authorize(self, verb: str, group: str, resource: str, name: str | None) -> None:
        if (verb, group, resource, None) not in self.allowed and (verb, group, resource, name) not in self.allowed:
            raise urllib.error.HTTPError("", 403, f"forbidden: {verb} {group}/{resource} {name}", {}, io.BytesIO())

    def find(self, plural: str, name: str) -> dict:
        found = [o for o in self.objects[plural] if o["metadata"]["name"] == name]
        if not found:
            raise urllib.error.HTTPError("", 404, "Not Found", {}, io.BytesIO())
        return found[0]

    def __call__(self, method: str, path: str, body=None, content_type: str = "application/json"):
        self.calls.append((method, path.split("?")[0]))
        parts = path.split("?")[0].split("/")
        if parts[1] == "api":  # /api/v1/namespaces/<ns>/configmaps/<name>
            assert parts[4] == self.namespace
            self.authorize({"GET": "get", "PUT": "update"}[method], "", "configmaps", parts[6])
            if method == "GET":
                return copy.deepcopy(self.state)
            if body["metadata"]["resourceVersion"] != self.state["metadata"]["resourceVersion"]:
                raise program.Conflict(path)
            self.state = copy.deepcopy(body)
            self.state["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
            return self.state
        # /apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>[/scale]]
        group, plural = parts[2], parts[6]
        assert parts[5] == self.namespace and plural in GROUPS[group]
        if plural in self.missing:
            raise urllib.error.HTTPError("", 404, "Not Found", {}, io.BytesIO())
        name = parts[7] if len(parts) > 7 else None
        if method == "GET" and name is None:
            self.authorize("list", group, plural, None)
            selector = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["labelSelector"][0]
            wanted = set(re.fullmatch(r"gpustack\.dev/workload in \((.*)\)", selector).group(1).split(","))
            items = [o for o in self.objects[plural] if o["metadata"]["labels"].get("gpustack.dev/workload") in wanted]
            return {"items": copy.deepcopy(items)}
        if method == "GET":
            self.authorize("get", group, plural, name)
            return copy.deepcopy(self.find(plural, name))
        assert method == "PATCH" and content_type == "application/merge-patch+json"
        resource = plural + ("/" + parts[8] if len(parts) > 8 else "")
        self.authorize("patch", group, resource, name)
        target = self.find(plural, name)
        if name in self.failing:
            raise urllib.error.HTTPError(path, 500, "Internal error", {}, io.BytesIO())
        if self.conflicts or body["metadata"]["resourceVersion"] != target["metadata"]["resourceVersion"]:
            self.conflicts = max(0, self.conflicts - 1)
            target["metadata"]["resourceVersion"] = str(int(target["metadata"]["resourceVersion"]) + 1)
            raise program.Conflict(path)
        changed = {k: set(v) - ({"resourceVersion"} if k == "metadata" else set()) for k, v in body.items()}
        assert {k: v for k, v in changed.items() if v} == PATCHABLE[resource], (resource, body)
        if plural == "notebooks":
            assert set(body["metadata"]["annotations"]) == {program.STOP_ANNOTATION}, body
        version = str(int(target["metadata"]["resourceVersion"]) + 1)
        patched = merge(target, {k: v for k, v in body.items() if k != "metadata"} | {
            "metadata": {k: v for k, v in body.get("metadata", {}).items() if k != "resourceVersion"}})
        if "annotations" in body["metadata"] and patched["metadata"].get("annotations") == {}:
            del patched["metadata"]["annotations"]  # an empty map is not stored (omitempty)
        before = copy.deepcopy(target)
        target.clear()
        target.update(patched)
        target["metadata"]["resourceVersion"] = version
        self.updates.append((resource, before, copy.deepcopy(target)))
        return copy.deepcopy(target)

    def get(self, plural: str, name: str) -> dict:
        return self.find(plural, name)

    def replicas(self) -> dict[str, int]:
        return {o["metadata"]["name"]: o["spec"]["replicas"] for p in ("deployments", "statefulsets")
                for o in self.objects[p]}

    def saved(self) -> dict[str, str]:
        return self.state.get("data") or {}
