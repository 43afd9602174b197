"""Dev auto-stop: the CronJobs, their RBAC (nothing beyond get/list/patch), and the scaling program
(gpustack/incluster/autostop.py, tested as the module it is)."""

from __future__ import annotations

import copy
import io
import re
import subprocess
import sys
import urllib.error
import urllib.parse

import pytest

from conftest import EXAMPLE, spec_text
from gpustack.incluster import autostop as program
from gpustack.incluster import source
from gpustack.plan import build_plan
from gpustack.render import autostop, in_cluster
from gpustack.spec import load_spec, load_text

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def notebook(name: str, namespace: str = "default", **extra) -> dict:
    return {"name": name, "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4,
            "namespace": namespace,
            "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}, **extra}


def objects_of(workloads: list[dict], cloud: str = "aws") -> list[dict]:
    plan = build_plan(load_text(spec_text(workloads, (cloud,)), "spec.yaml"))
    return list(in_cluster(plan, plan.targets[0]).objects)


def of_kind(objects, kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def all_example_objects() -> list[dict]:
    return [o for t in EXAMPLE_PLAN.targets for o in in_cluster(EXAMPLE_PLAN, t).objects]


# -- CronJobs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", [t.name for t in EXAMPLE_PLAN.targets])
def test_every_cloud_gets_a_stop_and_a_start_job_for_the_notebook_pool(target):
    plan_target = EXAMPLE_PLAN.target(target)
    [pool] = [p for p in plan_target.pools if p.schedule]
    jobs = of_kind(in_cluster(EXAMPLE_PLAN, plan_target).objects, "CronJob")
    by_action = {j["metadata"]["labels"][autostop.ACTION_LABEL]: j for j in jobs}
    assert set(by_action) == {"stop", "start"} and len(jobs) == 2
    for action, schedule in (("stop", "0 18 * * 1-5"), ("start", "0 8 * * 1-5")):
        job = by_action[action]
        assert job["metadata"]["namespace"] == "research"
        assert job["spec"]["schedule"] == schedule and job["spec"]["timeZone"] == "Europe/Berlin"
        assert job["metadata"]["labels"]["gpustack.dev/pool"] == pool.name
        command = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
        assert command[2:] == [action, "research", f"gpustack.dev/workload in ({','.join(pool.workloads)})"]


def test_cronjob_names_fit_52_characters_and_are_dns_labels():
    jobs = of_kind(all_example_objects(), "CronJob")
    long_pool = notebook("a-notebook-workload-with-a-long-name")
    jobs += of_kind(objects_of([long_pool]), "CronJob")
    assert jobs
    for job in jobs:
        name = job["metadata"]["name"]
        assert len(name) <= autostop.CRONJOB_NAME_MAX and DNS_LABEL.match(name), name


def test_cronjob_names_do_not_change_when_another_workload_is_added():
    before = {j["metadata"]["name"] for j in of_kind(objects_of([notebook("nb")]), "CronJob")}
    other = notebook("late-nb", schedule={"days": "Sat", "hours": "10:00-14:00", "timezone": "UTC"})
    after = {j["metadata"]["name"] for j in of_kind(objects_of([other, notebook("nb")]), "CronJob")}
    assert before < after and len(after) == 4


def test_a_pool_spanning_namespaces_gets_jobs_and_rbac_in_each():
    objects = objects_of([notebook("nb-a", "team-a"), notebook("nb-b", "team-b")])
    jobs = of_kind(objects, "CronJob")
    assert sorted(j["metadata"]["namespace"] for j in jobs) == ["team-a", "team-a", "team-b", "team-b"]
    for kind in ("ServiceAccount", "Role", "RoleBinding"):
        assert sorted(o["metadata"]["namespace"] for o in of_kind(objects, kind)) == ["team-a", "team-b"]


def test_a_window_open_all_week_gets_no_jobs():
    always = notebook("nb", schedule={"days": "daily", "hours": "00:00-24:00", "timezone": "UTC"})
    objects = objects_of([always])
    assert not of_kind(objects, "CronJob") and not of_kind(objects, "Role")


def test_jobs_run_unprivileged_with_a_pinned_image():
    for job in of_kind(all_example_objects(), "CronJob"):
        pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert container["image"] == autostop.IMAGE and not container["image"].endswith(":latest")
        assert re.fullmatch(r"python:\d+\.\d+\.\d+-alpine\d+\.\d+", container["image"])
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert pod["serviceAccountName"] == autostop.ACCOUNT
        assert job["spec"]["concurrencyPolicy"] == "Forbid"


# -- RBAC: exactly get/list/patch on deployments, statefulsets and their scale -------------------

ALLOWED = {("apps", "deployments"), ("apps", "deployments/scale"),
           ("apps", "statefulsets"), ("apps", "statefulsets/scale")}


@pytest.mark.parametrize("objects", [
    all_example_objects(),
    objects_of([notebook("nb-a", "team-a"), notebook("nb-b", "team-b")], "gcp"),
], ids=["example", "two-namespaces"])
def test_roles_grant_nothing_beyond_get_list_patch_on_the_workloads(objects):
    assert not of_kind(objects, "ClusterRole") and not of_kind(objects, "ClusterRoleBinding")
    roles = of_kind(objects, "Role")
    assert roles
    for role in roles:
        granted = set()
        for rule in role["rules"]:
            assert set(rule) <= {"apiGroups", "resources", "verbs"}, "no resourceNames/nonResourceURLs tricks"
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field] and all("*" not in v for v in rule[field]), (field, rule)
            assert set(rule["verbs"]) == {"get", "list", "patch"}
            granted |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
        assert granted == ALLOWED
    for binding in of_kind(objects, "RoleBinding"):
        namespace = binding["metadata"]["namespace"]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": autostop.ACCOUNT}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": autostop.ACCOUNT, "namespace": namespace}]


# -- the scaling program ---------------------------------------------------------------------------

def deployment(name: str, replicas: int, saved: str | None = None, labels: dict | None = None) -> dict:
    annotations = {autostop.ANNOTATION: saved} if saved is not None else {}
    return {"metadata": {"name": name, "resourceVersion": "1", "annotations": annotations,
                         "labels": labels or {"gpustack.dev/workload": "nb"}},
            "spec": {"replicas": replicas}}


@pytest.mark.parametrize("action, obj, expected", [
    ("stop", deployment("a", 3), {"metadata": {"resourceVersion": "1", "annotations": {autostop.ANNOTATION: "3"}},
                                  "spec": {"replicas": 0}}),
    ("stop", deployment("a", 0), None),  # already at zero: nothing to save
    ("stop", deployment("a", 0, saved="3"), None),  # a second stop keeps the saved count
    ("start", deployment("a", 0, saved="3"), {"metadata": {"resourceVersion": "1",
                                                           "annotations": {autostop.ANNOTATION: None}},
                                              "spec": {"replicas": 3}}),
    ("start", deployment("a", 0), None),  # never stopped by gpustack: leave it alone
    # Scaled up by hand while stopped: keep that count, drop the stale annotation.
    ("start", deployment("a", 2, saved="3"), {"metadata": {"resourceVersion": "1",
                                                           "annotations": {autostop.ANNOTATION: None}}}),
    ("start", deployment("a", 0, saved="lots"), {"metadata": {"resourceVersion": "1",
                                                              "annotations": {autostop.ANNOTATION: None}}}),
])
def test_patch_for_each_case(action, obj, expected):
    assert program.patch_for(action, obj) == expected


class FakeApi:
    """An API server holding Deployments and StatefulSets, with merge-patch and resourceVersion checks."""

    def __init__(self, objects: dict[str, list[dict]], conflicts: int = 0):
        self.objects = objects
        self.calls: list[tuple[str, str]] = []
        self.conflicts = conflicts

    def __call__(self, method: str, path: str, body=None):
        self.calls.append((method, path.split("?")[0]))
        parts = path.split("?")[0].split("/")
        plural = parts[6]
        if method == "GET":
            selector = urllib.parse.unquote(path.split("labelSelector=")[1])
            wanted = set(re.search(r"in \((.*)\)", selector).group(1).split(","))
            items = [o for o in self.objects[plural] if o["metadata"]["labels"].get("gpustack.dev/workload") in wanted]
            return {"items": copy.deepcopy(items)}
        assert method == "PATCH"
        [obj] = [o for o in self.objects[plural] if o["metadata"]["name"] == parts[7]]
        if self.conflicts or body["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
            self.conflicts = max(0, self.conflicts - 1)
            obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
            raise urllib.error.HTTPError(path, 409, "Conflict", {}, io.BytesIO(b"{}"))
        for key, value in body["metadata"].get("annotations", {}).items():
            if value is None:
                obj["metadata"]["annotations"].pop(key, None)
            else:
                obj["metadata"]["annotations"][key] = value
        obj["spec"].update(body.get("spec", {}))
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return obj


def run_script(api: FakeApi, action: str) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(program, "call", api)
        return program.main([action, "research", "gpustack.dev/workload in (nb,nb2)"])


def test_stop_then_start_restores_every_replica_count_and_touches_nothing_else():
    other = deployment("not-ours", 5, labels={"app": "web"})
    api = FakeApi({"deployments": [deployment("a", 3), deployment("b", 0), other],
                   "statefulsets": [deployment("s", 2, labels={"gpustack.dev/workload": "nb2"})]})
    assert run_script(api, "stop") == 0
    replicas = {o["metadata"]["name"]: o["spec"]["replicas"] for objs in api.objects.values() for o in objs}
    assert replicas == {"a": 0, "b": 0, "not-ours": 5, "s": 0}
    assert run_script(api, "stop") == 0  # a repeated stop keeps the saved counts
    assert run_script(api, "start") == 0
    replicas = {o["metadata"]["name"]: o["spec"]["replicas"] for objs in api.objects.values() for o in objs}
    assert replicas == {"a": 3, "b": 0, "not-ours": 5, "s": 2}
    assert all(autostop.ANNOTATION not in o["metadata"]["annotations"] for objs in api.objects.values() for o in objs)
    # Only the verbs the Role grants: list (GET on the collection) and patch.
    assert {m for m, _ in api.calls} == {"GET", "PATCH"}
    assert all(p.startswith("/apis/apps/v1/namespaces/research/") for _, p in api.calls)


def test_a_conflicting_change_is_retried_not_lost():
    api = FakeApi({"deployments": [deployment("a", 3)], "statefulsets": []}, conflicts=1)
    assert run_script(api, "stop") == 0
    assert api.objects["deployments"][0]["spec"]["replicas"] == 0
    assert api.objects["deployments"][0]["metadata"]["annotations"][autostop.ANNOTATION] == "3"


def test_script_reports_failure_with_a_nonzero_exit():
    api = FakeApi({"deployments": [deployment("a", 3)], "statefulsets": []}, conflicts=99)
    assert run_script(api, "stop") == 1


def test_the_program_runs_alone_with_the_standard_library(tmp_path):
    """The ConfigMap carries the module's text; in the pod nothing else of gpustack exists."""
    (tmp_path / autostop.PROGRAM_FILE).write_text(source("autostop"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-I", "-S", autostop.PROGRAM_FILE, "pause", "ns", "sel"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "usage: autostop.py stop|start" in result.stderr, result.stderr


def test_every_cronjob_mounts_the_program_from_its_namespace_configmap():
    for target in EXAMPLE_PLAN.targets:
        objs = autostop.objects(EXAMPLE_PLAN, target)
        maps = {o["metadata"]["namespace"]: o for o in objs if o["kind"] == "ConfigMap"}
        jobs = [o for o in objs if o["kind"] == "CronJob"]
        assert jobs and set(maps) == {j["metadata"]["namespace"] for j in jobs}
        for job in jobs:
            pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            [volume] = pod["volumes"]
            assert volume["configMap"]["name"] == maps[job["metadata"]["namespace"]]["metadata"]["name"]
            assert pod["containers"][0]["command"][1] == f"{autostop.PROGRAM_DIR}/{autostop.PROGRAM_FILE}"
        assert all(m["data"] == {autostop.PROGRAM_FILE: source("autostop")} for m in maps.values())
