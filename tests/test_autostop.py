"""Dev auto-stop: the CronJobs, their least privilege (list the workloads, patch only their scale,
get/update one state ConfigMap by name, egress only to the API server), and the scaling program
(gpustack/incluster/autostop.py, tested as the module it is, against a fake API server that enforces
the Role)."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import urllib.error
import urllib.parse

import fake_kube
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
        replicas = sum(p.replicas for p in pool.placements)  # the example's one notebook workload
        selector = f"gpustack.dev/workload in ({','.join(pool.workloads)})"
        # A notebook workload without `autostop`: its Deployments, StatefulSets and Kubeflow Notebooks.
        assert command[2:] == [action, "research", str(replicas), f"deployments={selector}",
                               f"statefulsets={selector}", f"notebooks={selector}"]


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


def test_jobs_run_unprivileged_with_an_image_pinned_by_digest():
    for job in of_kind(all_example_objects(), "CronJob"):
        pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert container["image"] == autostop.IMAGE
        # name:tag@digest: the runtime pulls the digest, the tag says which release it is.
        assert re.fullmatch(r"python:\d+\.\d+\.\d+-alpine\d+\.\d+@sha256:[0-9a-f]{64}", container["image"])
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert pod["serviceAccountName"] == autostop.ACCOUNT
        assert job["spec"]["concurrencyPolicy"] == "Forbid"


def test_start_is_bounded_by_the_plan_maximum_of_the_pools_workloads():
    jobs = of_kind(objects_of([notebook("nb", replicas=4), notebook("nb2", replicas=6)]), "CronJob")
    assert jobs
    for job in jobs:
        command = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
        assert command[4] == "6"


# -- least privilege: what the Role allows, by name where Kubernetes can ---------------------------

# (verb, API group, resource, name or None for any): everything the job's identity may do.
ALLOWED = {("list", "apps", "deployments", None), ("list", "apps", "statefulsets", None),
           ("patch", "apps", "deployments/scale", None), ("patch", "apps", "statefulsets/scale", None),
           ("list", "kubeflow.org", "notebooks", None), ("patch", "kubeflow.org", "notebooks", None),
           ("get", "", "configmaps", autostop.STATE_CONFIGMAP), ("update", "", "configmaps", autostop.STATE_CONFIGMAP)}


granted = fake_kube.granted


@pytest.mark.parametrize("objects", [
    all_example_objects(),
    objects_of([notebook("nb-a", "team-a"), notebook("nb-b", "team-b")], "gcp"),
], ids=["example", "two-namespaces"])
def test_roles_allow_listing_scaling_and_the_state_configmap_only(objects):
    assert not of_kind(objects, "ClusterRole") and not of_kind(objects, "ClusterRoleBinding")
    roles = of_kind(objects, "Role")
    assert roles
    for role in roles:
        # Not patch on the workloads themselves: that would let the job rewrite a pod template.
        assert granted(role) == ALLOWED
    for binding in of_kind(objects, "RoleBinding"):
        namespace = binding["metadata"]["namespace"]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": autostop.ACCOUNT}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": autostop.ACCOUNT, "namespace": namespace}]
    states = [m for m in of_kind(objects, "ConfigMap") if m["metadata"]["name"] == autostop.STATE_CONFIGMAP]
    assert sorted(m["metadata"]["namespace"] for m in states) == sorted(r["metadata"]["namespace"] for r in roles)
    assert all("data" not in m for m in states), "an apply must never reset the saved counts"


def test_a_network_policy_per_namespace_lets_the_jobs_reach_only_the_api_server():
    objects = objects_of([notebook("nb-a", "team-a"), notebook("nb-b", "team-b")])
    policies = {p["metadata"]["namespace"]: p for p in of_kind(objects, "NetworkPolicy")}
    assert set(policies) == {"team-a", "team-b"}
    for job in of_kind(objects, "CronJob"):
        policy = policies[job["metadata"]["namespace"]]["spec"]
        labels = job["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
        [expression] = policy["podSelector"]["matchExpressions"]
        assert expression["operator"] == "In" and labels[expression["key"]] in expression["values"]
        assert policy["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy  # nothing comes in
        [egress] = policy["egress"]
        assert egress == {"ports": [{"protocol": "TCP", "port": 443}]}  # EKS's API server port
        env = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
        assert all("HOST" not in e["name"] for e in env), "the API server's address comes from the pod, no DNS"


# -- the scaling program ---------------------------------------------------------------------------

def deployment(name: str, replicas: int, labels: dict | None = None) -> dict:
    return {"metadata": {"name": name, "resourceVersion": "1", "annotations": {},
                         "labels": labels or {"gpustack.dev/workload": "nb"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}


@pytest.mark.parametrize("text, cap, expected", [
    ("3", 4, (3, None)),
    ("4", 4, (4, None)),
    ("999999999", 4, (4, "saved count 999999999 is above the plan's maximum 4: restored 4")),
])
def test_saved_counts_within_the_cap(text, cap, expected):
    assert program.saved_count(text, cap) == expected


@pytest.mark.parametrize("text", ["²", "٣", "lots", "", "0", "03", "-1", "+3", " 3", "3 ", "3\n", "3_0", "1e3",
                                  "9" * 400, None, 3, ["3"]])
def test_a_saved_count_that_is_not_a_plain_number_is_refused(text):
    count, problem = program.saved_count(text, 8)
    assert count is None and "is not a whole number from 1 to 8" in problem
    assert len(problem) < 120


class FakeApi(fake_kube.FakeApi):
    """The fake API server (tests/fake_kube.py) enforcing the example's rendered Role."""

    def __init__(self, objects: dict[str, list[dict]], conflicts: int = 0, state: dict | None = None,
                 failing: set[str] = frozenset()):
        [role] = of_kind(autostop.objects(EXAMPLE_PLAN, EXAMPLE_PLAN.targets[0]), "Role")
        super().__init__(objects, role, state=state, conflicts=conflicts, failing=failing)


def run_script(api: FakeApi, action: str, cap: int = 8) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(program, "call", api)
        return program.main([action, "research", str(cap), "deployments=gpustack.dev/workload in (nb,nb2)",
                             "statefulsets=gpustack.dev/workload in (nb,nb2)"])


def test_stop_then_start_restores_every_replica_count_and_touches_nothing_else():
    other = deployment("not-ours", 5, labels={"app": "web"})
    api = FakeApi({"deployments": [deployment("a", 3), deployment("b", 0), other],
                   "statefulsets": [deployment("s", 2, labels={"gpustack.dev/workload": "nb2"})]})
    before = copy.deepcopy(api.objects)
    assert run_script(api, "stop") == 0
    assert api.replicas() == {"a": 0, "b": 0, "not-ours": 5, "s": 0}
    assert api.saved() == {"deployments.a": "3", "statefulsets.s": "2"}
    assert run_script(api, "stop") == 0  # a repeated stop keeps the saved counts
    assert api.saved() == {"deployments.a": "3", "statefulsets.s": "2"}
    assert run_script(api, "start") == 0
    assert api.replicas() == {"a": 3, "b": 0, "not-ours": 5, "s": 2}
    assert api.saved() == {}
    # The workloads are as they were (no annotation, no template change), only their versions moved.
    for plural, objs in api.objects.items():
        for obj, old in zip(objs, before[plural], strict=True):
            assert {**obj["metadata"], "resourceVersion": "-"} == {**old["metadata"], "resourceVersion": "-"}
            assert obj["spec"] == old["spec"]
    assert {m for m, _ in api.calls} == {"GET", "PATCH", "PUT"}
    assert all(p.endswith("/scale") for m, p in api.calls if m == "PATCH")


def test_the_old_annotation_program_would_be_forbidden():
    """Patching the workload itself (not its scale) is what the Role no longer allows."""
    api = FakeApi({"deployments": [deployment("a", 3)], "statefulsets": []})
    with pytest.raises(urllib.error.HTTPError) as error:
        api("PATCH", "/apis/apps/v1/namespaces/research/deployments/a", {"metadata": {"resourceVersion": "1"}},
            "application/merge-patch+json")
    assert error.value.code == 403
    with pytest.raises(urllib.error.HTTPError):
        api("GET", "/api/v1/namespaces/research/configmaps/gpustack-autostop-program")


def test_an_object_scaled_up_while_stopped_keeps_its_count_and_loses_the_entry():
    api = FakeApi({"deployments": [deployment("a", 2)], "statefulsets": []}, state={"deployments.a": "3"})
    assert run_script(api, "start") == 0
    assert api.replicas() == {"a": 2} and api.saved() == {}


def test_a_bad_saved_count_is_an_error_for_that_object_only():
    api = FakeApi({"deployments": [deployment("a", 0), deployment("b", 0), deployment("c", 0)],
                   "statefulsets": [deployment("s", 0, labels={"gpustack.dev/workload": "nb2"})]},
                  state={"deployments.a": "²", "deployments.b": "3", "deployments.c": "9" * 400,
                         "statefulsets.s": "2", "deployments.gone": "4"})
    assert run_script(api, "start") == 1  # reported, but every good count is back
    assert api.replicas() == {"a": 0, "b": 3, "c": 0, "s": 2}
    assert api.saved() == {"deployments.gone": "4"}  # another pool's entry, or a deleted object: kept
    assert run_script(api, "start") == 0  # the bad entries went with the report


def test_an_unbounded_saved_count_is_restored_at_the_plan_maximum(capsys):
    api = FakeApi({"deployments": [deployment("a", 0)], "statefulsets": []}, state={"deployments.a": "100000"})
    assert run_script(api, "start", cap=4) == 1
    assert api.replicas() == {"a": 4}
    assert "above the plan's maximum 4" in capsys.readouterr().err


def test_a_failing_object_keeps_its_saved_count_and_the_others_proceed():
    api = FakeApi({"deployments": [deployment("a", 0), deployment("b", 0)], "statefulsets": []},
                  state={"deployments.a": "3", "deployments.b": "2"}, failing={"a"})
    assert run_script(api, "start") == 1
    assert api.replicas() == {"a": 0, "b": 2} and api.saved() == {"deployments.a": "3"}
    api.failing = set()
    assert run_script(api, "start") == 0 and api.replicas() == {"a": 3, "b": 2}


def test_stop_saves_the_count_before_scaling():
    api = FakeApi({"deployments": [deployment("a", 3), deployment("b", 1)], "statefulsets": []}, failing={"a"})
    assert run_script(api, "stop") == 1
    assert api.replicas() == {"a": 3, "b": 0} and api.saved() == {"deployments.a": "3", "deployments.b": "1"}
    assert run_script(api, "start") == 0  # a is still running: its entry goes, its count stays
    assert api.replicas() == {"a": 3, "b": 1} and api.saved() == {}


def test_a_conflicting_change_is_retried_not_lost():
    api = FakeApi({"deployments": [deployment("a", 3)], "statefulsets": []}, conflicts=1)
    assert run_script(api, "stop") == 0
    assert api.replicas() == {"a": 0} and api.saved() == {"deployments.a": "3"}


def test_script_reports_failure_with_a_nonzero_exit():
    api = FakeApi({"deployments": [deployment("a", 3)], "statefulsets": []}, conflicts=99)
    assert run_script(api, "stop") == 1


SELECTION = "deployments=gpustack.dev/workload in (nb)"


@pytest.mark.parametrize("argv", [["stop", "ns", "4"], ["pause", "ns", "4", SELECTION], ["start", "ns", "²", SELECTION],
                                  ["start", "ns", "0", SELECTION], ["start", "ns", "9" * 400, SELECTION],
                                  ["start", "ns", "4", "pods=gpustack.dev/workload in (nb)"],
                                  ["start", "ns", "4", "deployments=app in (nb)"],
                                  ["start", "ns", "4", "deployments=gpustack.dev/workload in (nb),x=y"],
                                  ["start", "ns", "4", "jobs/Not_A_Name"], ["start", "ns", "4", "jobs/"],
                                  ["start", "Bad NS", "4", SELECTION]])
def test_bad_arguments_are_a_usage_error(argv, capsys):
    assert program.main(argv) == 2 and "usage: autostop.py" in capsys.readouterr().err


def test_the_program_runs_alone_with_the_standard_library(tmp_path):
    """The ConfigMap carries the module's text; in the pod nothing else of gpustack exists."""
    (tmp_path / autostop.PROGRAM_FILE).write_text(source("autostop"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-I", "-S", autostop.PROGRAM_FILE, "pause", "ns", "sel", "4"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "usage: autostop.py stop|start" in result.stderr, result.stderr


def test_every_cronjob_mounts_the_program_from_its_namespace_configmap():
    for target in EXAMPLE_PLAN.targets:
        objs = autostop.objects(EXAMPLE_PLAN, target)
        maps = {o["metadata"]["namespace"]: o for o in objs
                if o["kind"] == "ConfigMap" and o["metadata"]["name"] == autostop.PROGRAM_CONFIGMAP}
        jobs = [o for o in objs if o["kind"] == "CronJob"]
        assert jobs and set(maps) == {j["metadata"]["namespace"] for j in jobs}
        for job in jobs:
            pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            [volume] = pod["volumes"]
            assert volume["configMap"]["name"] == maps[job["metadata"]["namespace"]]["metadata"]["name"]
            assert pod["containers"][0]["command"][1] == f"{autostop.PROGRAM_DIR}/{autostop.PROGRAM_FILE}"
        assert all(m["data"] == {autostop.PROGRAM_FILE: source("autostop")} for m in maps.values())
