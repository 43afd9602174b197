"""Auto-stop for every kind of GPU work: the spec's `autostop` (checked where it is written), what the
plan records, the Role each kind needs and nothing more, and the program stopping and starting
Deployments, StatefulSets, Jobs, CronJobs (with their running Jobs) and Kubeflow Notebooks against a
fake API server that enforces the rendered Role (tests/fake_kube.py)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from fake_kube import FakeApi, granted, obj

from conftest import TARGETS, spec_text
from gpustack.errors import SpecError
from gpustack.incluster import autostop as program
from gpustack.plan import build_plan
from gpustack.render import autostop
from gpustack.spec import load_text

WINDOW = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}
NOW = "2026-12-01T17:00:00Z"


def notebook(name: str = "nb", **extra) -> dict:
    return {"name": name, "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4,
            "namespace": "research", "schedule": WINDOW, **extra}


def fine_tuning(name: str = "ft", **extra) -> dict:
    return {"name": name, "kind": "fine-tuning", "gpu": "A10G", "replicas": 2, "checkpointing": True,
            "namespace": "research", "schedule": WINDOW, **extra}


def plan_of(workloads: list[dict]):
    return build_plan(load_text(spec_text(workloads), "spec.yaml"))


def rendered(workloads: list[dict]) -> list[dict]:
    plan = plan_of(workloads)
    return autostop.objects(plan, plan.targets[0])


def role_of(workloads: list[dict]) -> dict:
    [role] = [o for o in rendered(workloads) if o["kind"] == "Role"]
    return role


def commands(workloads: list[dict]) -> dict[str, list[str]]:
    """The SELECTION arguments per CronJob action (every pool's jobs of the spec)."""
    out: dict[str, list[str]] = {}
    for job in rendered(workloads):
        if job["kind"] == "CronJob":
            command = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
            out.setdefault(command[2], []).extend(command[5:])
    return out


def problems(workload: dict) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_text(spec_text([workload]), "spec.yaml")
    return [f"{p.path}: {p.message}" for p in info.value.problems]


# -- the spec --------------------------------------------------------------------------------------

@pytest.mark.parametrize("autostop_field, expected", [
    ({"kind": "cronjobs"}, "workloads[0].autostop.kind: 'cronjobs' is not allowed (did you mean 'cronjob'?); allowed: "
                           "deployment, statefulset, job, cronjob, notebook, jupyterhub"),
    ({"knd": "job"}, ["workloads[0].autostop.knd: unknown key 'knd' (did you mean 'kind'?); allowed here: kind, name",
                      "workloads[0].autostop: missing required key 'kind'"]),
    ({"kind": "notebook"}, "workloads[0].autostop.kind: 'notebook' is not how a fine-tuning workload runs; allowed "
                           "for fine-tuning: deployment, statefulset, job, cronjob"),
    ({"kind": "cronjob", "name": "x" * 53}, "workloads[0].autostop.name: '" + "x" * 53 + "' is 53 characters; at most "
                                            "52 allowed"),
    ({"kind": "job", "name": "Nightly_Tune"}, "workloads[0].autostop.name: 'Nightly_Tune' is not valid: a job name is a "
                                              "DNS subdomain (lowercase letters, digits, '-' and '.'), at most 253 "
                                              "characters"),
    ("cronjob", "workloads[0].autostop: expected a mapping ({kind: cronjob, name: nightly-tune}), got a string "
                "'cronjob'"),
])
def test_a_bad_autostop_is_located_with_what_is_allowed(autostop_field, expected):
    assert problems(fine_tuning(autostop=autostop_field)) == (expected if isinstance(expected, list) else [expected])


def test_autostop_needs_a_schedule_and_jupyterhub_takes_no_name():
    unscheduled = {k: v for k, v in fine_tuning(autostop={"kind": "job"}).items() if k != "schedule"}
    assert problems(unscheduled) == ["workloads[0].autostop: autostop says what to stop outside the schedule: add a "
                                     "schedule, or remove it"]
    assert problems(notebook(autostop={"kind": "jupyterhub", "name": "hub"})) == [
        "workloads[0].autostop.name: jupyterhub takes no name: the hub's idle culler stops its servers (gpustack "
        "render writes its values)"]
    assert problems(notebook(autostop={"kind": "cronjob"})) == [
        "workloads[0].autostop.kind: 'cronjob' is not how a notebook workload runs; allowed for notebook: "
        "deployment, statefulset, notebook, jupyterhub"]


def test_the_error_points_at_the_line_of_the_bad_value():
    text = spec_text([fine_tuning(autostop={"kind": "cronjobs"})])
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    [problem] = info.value.problems
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "cronjobs" in t)
    assert str(problem).startswith(f"spec.yaml:{line}:")


def test_the_plan_records_the_choice_or_what_is_detected():
    plan = plan_of([notebook(), fine_tuning(autostop={"kind": "cronjob", "name": "nightly"}),
                    {"name": "serve", "kind": "inference", "gpu": "L4", "replicas": 1}])
    requests = {r["workload"]: r for r in json.loads(plan.to_json())["targets"][0]["pod_requests"]}
    assert requests["nb"]["autostop"] == {"kinds": ["deployment", "statefulset", "notebook"], "name": None,
                                          "detected": True}
    assert requests["ft"]["autostop"] == {"kinds": ["cronjob"], "name": "nightly", "detected": False}
    assert "autostop" not in requests["serve"]  # no schedule, nothing to stop


# -- what runs, and what it may do -----------------------------------------------------------------

SELECTOR = "gpustack.dev/workload in ({})"
STATE = ("get", "", "configmaps", autostop.STATE_CONFIGMAP), ("update", "", "configmaps", autostop.STATE_CONFIGMAP)
# Per spec `autostop`, exactly what the Role grants (beyond the state ConfigMap).
NEEDS = {
    "deployment": {("list", "apps", "deployments", None), ("patch", "apps", "deployments/scale", None)},
    "statefulset": {("list", "apps", "statefulsets", None), ("patch", "apps", "statefulsets/scale", None)},
    "job": {("list", "batch", "jobs", None), ("patch", "batch", "jobs", None)},
    "cronjob": {("list", "batch", "cronjobs", None), ("patch", "batch", "cronjobs", None),
                ("get", "batch", "jobs", None), ("patch", "batch", "jobs", None)},
    "notebook": {("list", "kubeflow.org", "notebooks", None), ("patch", "kubeflow.org", "notebooks", None)},
}
NAMED = {
    "deployment": {("get", "apps", "deployments", "x"), ("patch", "apps", "deployments/scale", "x")},
    "statefulset": {("get", "apps", "statefulsets", "x"), ("patch", "apps", "statefulsets/scale", "x")},
    "job": {("get", "batch", "jobs", "x"), ("patch", "batch", "jobs", "x")},
    # The CronJob's running Jobs have names the controller makes up: get and patch on jobs stay unnamed.
    "cronjob": {("get", "batch", "cronjobs", "x"), ("patch", "batch", "cronjobs", "x"),
                ("get", "batch", "jobs", None), ("patch", "batch", "jobs", None)},
    "notebook": {("get", "kubeflow.org", "notebooks", "x"), ("patch", "kubeflow.org", "notebooks", "x")},
}


@pytest.mark.parametrize("kind", sorted(NEEDS))
def test_the_role_grants_exactly_what_the_chosen_kind_needs(kind):
    make = notebook if kind in ("notebook", "statefulset") else fine_tuning
    assert granted(role_of([make(autostop={"kind": kind})])) == NEEDS[kind] | set(STATE)
    assert granted(role_of([make(autostop={"kind": kind, "name": "x"})])) == NAMED[kind] | set(STATE)


def test_detected_workloads_get_the_kinds_of_their_workload_kind_and_named_ones_only_theirs():
    workloads = [notebook("nb"), notebook("nb2", autostop={"kind": "notebook", "name": "ana"}),
                 notebook("nb3", autostop={"kind": "notebook"})]
    assert commands(workloads)["stop"] == [f"deployments={SELECTOR.format('nb')}",
                                           f"statefulsets={SELECTOR.format('nb')}",
                                           f"notebooks={SELECTOR.format('nb,nb3')}", "notebooks/ana"]
    assert granted(role_of(workloads)) == (NEEDS["deployment"] | NEEDS["statefulset"] | NEEDS["notebook"]
                                           | {("get", "kubeflow.org", "notebooks", "ana")} | set(STATE))
    tuning = [fine_tuning()]
    assert commands(tuning)["start"] == [f"{p}={SELECTOR.format('ft')}"
                                         for p in ("deployments", "statefulsets", "jobs", "cronjobs")] * 2  # 2 pools
    assert granted(role_of(tuning)) == set().union(*(NEEDS[k] for k in ("deployment", "statefulset", "job",
                                                                        "cronjob"))) | set(STATE)


def test_a_jupyterhub_workload_gets_no_job_and_no_role():
    assert not [o for o in rendered([notebook(autostop={"kind": "jupyterhub"})]) if o["kind"] in ("CronJob", "Role")]


# -- the program, per kind -------------------------------------------------------------------------

def every_kind_spec() -> list[dict]:
    return [notebook("nb", autostop={"kind": "notebook"}), notebook("nb2", autostop={"kind": "notebook",
                                                                                    "name": "ana"}),
            notebook("nb3"), fine_tuning("ft", autostop={"kind": "cronjob", "name": "nightly"}),
            fine_tuning("ft2")]


def fake(objects: dict[str, list[dict]], **options) -> FakeApi:
    return FakeApi(objects, role_of(every_kind_spec()), **options)


def run(api: FakeApi, action: str, selections: list[str], cap: int = 8) -> int:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(program, "call", api)
        patch.setattr(program, "now_utc", lambda: NOW)
        return program.main([action, "research", str(cap), *selections])


def labelled(name: str, workload: str, **spec) -> dict:
    return obj(name, {"gpustack.dev/workload": workload}, **spec)


def cluster() -> dict[str, list[dict]]:
    """One object of every kind, some running and some already stopped by their owners."""
    running_job = labelled("nightly-29000000", "ft")
    running_job["metadata"]["labels"] = {"batch.kubernetes.io/controller-uid": "u1"}  # the CronJob's, unlabelled
    return {
        "deployments": [labelled("web", "ft2", replicas=2), labelled("idle", "ft2", replicas=0)],
        "statefulsets": [labelled("jupyter-ana", "nb3", replicas=3)],
        "jobs": [labelled("tune-1", "ft2"), labelled("paused", "ft2", suspend=True),
                 {**labelled("done", "ft2"), "status": {"conditions": [{"type": "Complete", "status": "True"}]}},
                 running_job],
        "cronjobs": [{**obj("nightly", {}, schedule="0 1 * * *"),
                      "status": {"active": [{"kind": "Job", "name": "nightly-29000000", "namespace": "research"}]}},
                     labelled("weekly", "ft2", suspend=False)],
        "notebooks": [labelled("bob", "nb"), obj("ana", {}),
                      {**labelled("carol", "nb"), "metadata": {**labelled("carol", "nb")["metadata"],
                                                               "annotations": {program.STOP_ANNOTATION: "x"}}}],
    }


SELECTIONS = ["deployments=gpustack.dev/workload in (ft2)", "jobs=gpustack.dev/workload in (ft2)",
              "cronjobs=gpustack.dev/workload in (ft2)", "statefulsets=gpustack.dev/workload in (nb3)",
              "notebooks=gpustack.dev/workload in (nb)", "notebooks/ana", "cronjobs/nightly"]


def without_versions(objects: dict[str, list[dict]]) -> dict:
    out = copy.deepcopy(objects)
    for items in out.values():
        for item in items:
            item["metadata"].pop("resourceVersion")
    return out


def test_stop_then_start_restores_every_kind_exactly():
    api = fake(cluster())
    before = without_versions(api.objects)
    assert run(api, "stop", SELECTIONS) == 0
    suspended = {o["metadata"]["name"] for p in ("jobs", "cronjobs") for o in api.objects[p] if o["spec"].get("suspend")}
    assert suspended == {"tune-1", "paused", "nightly", "nightly-29000000", "weekly"}  # "done" has finished
    assert api.replicas() == {"web": 0, "idle": 0, "jupyter-ana": 0}
    stopped = {o["metadata"]["name"]: o["metadata"].get("annotations", {}).get(program.STOP_ANNOTATION)
               for o in api.objects["notebooks"]}
    assert stopped == {"bob": NOW, "ana": NOW, "carol": "x"}
    assert api.saved() == {"deployments.web": "2", "statefulsets.jupyter-ana": "3", "jobs.tune-1": "suspended",
                           "jobs.nightly-29000000": "suspended", "cronjobs.nightly": "suspended",
                           "cronjobs.weekly": "suspended", "notebooks.bob": NOW, "notebooks.ana": NOW}
    assert run(api, "stop", SELECTIONS) == 0  # a second stop saves nothing new and loses nothing
    assert len(api.saved()) == 8
    assert run(api, "start", SELECTIONS) == 0
    # What the owners had stopped stays stopped; everything else is as it was, to the field.
    assert without_versions(api.objects) == before
    assert api.saved() == {}


def test_a_cronjob_suspend_stops_its_running_job_too():
    api = fake(cluster())
    assert run(api, "stop", ["cronjobs/nightly"]) == 0
    assert api.get("jobs", "nightly-29000000")["spec"]["suspend"] is True
    assert api.get("cronjobs", "nightly")["spec"]["suspend"] is True
    assert run(api, "start", ["cronjobs/nightly"]) == 0
    assert api.get("jobs", "nightly-29000000")["spec"]["suspend"] is False
    assert api.get("cronjobs", "nightly")["spec"]["suspend"] is False


def test_an_object_started_by_someone_while_stopped_is_left_alone():
    api = fake(cluster())
    assert run(api, "stop", SELECTIONS) == 0
    api.get("jobs", "tune-1")["spec"]["suspend"] = False
    api.get("notebooks", "bob")["metadata"]["annotations"] = {}
    api.get("notebooks", "ana")["metadata"]["annotations"][program.STOP_ANNOTATION] = "2026-12-01T19:00:00Z"
    assert run(api, "start", SELECTIONS) == 0
    assert api.get("jobs", "tune-1")["spec"]["suspend"] is False and "bob" not in str(api.saved())
    # Stopped again by someone else (a new time): not ours to undo.
    assert api.get("notebooks", "ana")["metadata"]["annotations"] == {program.STOP_ANNOTATION: "2026-12-01T19:00:00Z"}
    assert api.saved() == {}


@pytest.mark.parametrize("key, bad", [
    ("jobs.tune-1", "true"), ("jobs.tune-1", "Suspended"), ("cronjobs.nightly", "suspended\n"),
    ("notebooks.ana", "yesterday"), ("notebooks.ana", "2026-12-01T17:00:00+00:00"), ("notebooks.ana", ""),
    ("deployments.web", "²"),
])
def test_a_bad_saved_value_is_reported_and_skipped_and_the_rest_start(key, bad, capsys):
    api = fake(cluster())
    assert run(api, "stop", SELECTIONS) == 0
    api.state["data"][key] = bad
    assert run(api, "start", SELECTIONS) == 1
    assert key in capsys.readouterr().err
    plural, name = key.split(".", 1)
    still = api.get(plural, name)
    assert still["spec"].get("suspend") is True or still["spec"].get("replicas") == 0 or \
        program.STOP_ANNOTATION in still["metadata"].get("annotations", {})
    others = {k for k in ("jobs.tune-1", "cronjobs.nightly", "notebooks.ana", "deployments.web") if k != key}
    for other in others:
        p, n = other.split(".", 1)
        started = api.get(p, n)
        assert not started["spec"].get("suspend") and started["spec"].get("replicas") != 0
        assert program.STOP_ANNOTATION not in started["metadata"].get("annotations", {})
    assert api.saved() == {}  # the bad entry went with the report
    assert run(api, "start", SELECTIONS) == 0


def test_a_missing_object_or_api_is_one_problem_and_the_rest_proceed(capsys):
    objects = cluster()
    objects["cronjobs"] = [c for c in objects["cronjobs"] if c["metadata"]["name"] != "nightly"]  # deleted
    api = fake(objects, missing={"notebooks"})  # and no Kubeflow in this cluster
    assert run(api, "stop", SELECTIONS + ["cronjobs/other"]) == 1
    out = capsys.readouterr()
    assert "no notebooks in this cluster's API: skipped" in out.out
    assert "notebooks/ana: 404" in out.err and "cronjobs/nightly: 404" in out.err
    assert "cronjobs/other: 403" in out.err  # not named in the spec, so not in the Role
    assert api.replicas() == {"web": 0, "idle": 0, "jupyter-ana": 0}
    assert api.get("cronjobs", "weekly")["spec"]["suspend"] is True


def test_the_program_never_does_more_than_the_role_allows():
    """Every call the program made for every kind passed the rendered Role (the fake answers 403 else),
    and a Role without the CronJob's jobs rule makes the CronJob's running Job a reported problem."""
    api = fake(cluster())
    assert run(api, "stop", SELECTIONS) == 0
    assert {m for m, _ in api.calls} == {"GET", "PATCH", "PUT"}
    narrow = FakeApi(cluster(), role_of([notebook("nb3")]))
    assert run(narrow, "stop", ["cronjobs/nightly", "statefulsets=gpustack.dev/workload in (nb3)"]) == 1
    assert narrow.replicas()["jupyter-ana"] == 0 and not narrow.get("cronjobs", "nightly")["spec"].get("suspend")


@pytest.mark.parametrize("text", ["cronjobs/nightly", "deployments=gpustack.dev/workload in (a,b)", "notebooks/a.b"])
def test_selections_parse(text):
    assert program.parse_selection(text) is not None


def test_on_a_keda_target_a_workload_that_chooses_its_objects_stays_with_the_job():
    """KEDA scales the Deployment or StatefulSet its workload kind runs as; a Kubeflow Notebook (or any
    object the spec's `autostop` names) is the built-in job's, which stops every kind."""
    aws = {**TARGETS["aws"], "settings": {**TARGETS["aws"]["settings"], "autostop": "keda",
                                          "prometheus_url": "http://prometheus.monitoring.svc:9090"}}
    doc = {"version": 1, "name": "t", "targets": [aws],
           "workloads": [notebook("nb"), notebook("kf", autostop={"kind": "notebook"})]}
    plan = build_plan(load_text(yaml.safe_dump(doc, sort_keys=False), "spec.yaml"))
    target = plan.targets[0]
    assert target.scaled_by_keda == ("nb",)
    jobs = [o for o in autostop.objects(plan, target) if o["kind"] == "CronJob"]
    assert jobs and all(j["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"][5:]
                        == ["notebooks=gpustack.dev/workload in (kf)"] for j in jobs)
