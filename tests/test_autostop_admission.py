"""The ValidatingAdmissionPolicy that narrows the auto-stop account's `patch` on Jobs, CronJobs and
Kubeflow Notebooks to the stop itself, evaluated with a CEL implementation (cel-python): every update
the program makes passes, any other change by that account is refused, other users are not matched."""

from __future__ import annotations

import copy
import functools

import celpy
import pytest
from fake_kube import FakeApi

from gpustack.incluster import autostop as program
from gpustack.render import admission
from test_autostop_kinds import SELECTIONS, cluster, every_kind_spec, rendered, role_of, run

ACCOUNT = "system:serviceaccount:research:gpustack-autostop"


def policy_of(workloads: list[dict]) -> dict:
    [policy] = [o for o in rendered(workloads) if o["kind"] == "ValidatingAdmissionPolicy"]
    [binding] = [o for o in rendered(workloads) if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    return policy


POLICY = policy_of(every_kind_spec())


@functools.cache
def compiled(expression: str) -> celpy.Runner:
    """The policy's few expressions are parsed once: parsing CEL, not evaluating it, is what takes time."""
    env = celpy.Environment()
    return env.program(env.compile(expression))


def evaluate(expression: str, activation: dict) -> bool:
    result = compiled(expression).evaluate(
        {name: celpy.json_to_cel(value) for name, value in activation.items()})
    assert isinstance(result, celpy.celtypes.BoolType), (expression, result)
    return bool(result)


def admitted(resource: str, before: dict, after: dict, user: str = ACCOUNT, policy: dict = POLICY) -> bool:
    """What the API server decides for an UPDATE under the policy (True: allowed)."""
    spec = policy["spec"]
    group = {"jobs": "batch", "cronjobs": "batch", "notebooks": "kubeflow.org"}[resource]
    if not any(group in r["apiGroups"] and resource in r["resources"] and "UPDATE" in r["operations"]
               for r in spec["matchConstraints"]["resourceRules"]):
        return True
    activation = {"object": after, "oldObject": before,
                  "request": {"userInfo": {"username": user}, "resource": {"group": group, "resource": resource}}}
    if not all(evaluate(c["expression"], activation) for c in spec["matchConditions"]):
        return True
    return all(evaluate(v["expression"], activation) for v in spec["validations"])


def stopped_and_started() -> list[tuple[str, dict, dict]]:
    api = FakeApi(cluster(), role_of(every_kind_spec()))
    assert run(api, "stop", SELECTIONS) == 0 and run(api, "start", SELECTIONS) == 0
    return [u for u in api.updates if u[0] in ("jobs", "cronjobs", "notebooks")]


def test_every_update_the_program_makes_is_admitted():
    updates = stopped_and_started()
    assert {resource for resource, _, _ in updates} == {"jobs", "cronjobs", "notebooks"}
    for resource, before, after in updates:
        assert admitted(resource, before, after), (resource, before, after)


def changed(obj: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(obj)
    here = out
    for key in path[:-1]:
        here = here.setdefault(key, {})
    here[path[-1]] = value
    return out


CRONJOB = {"metadata": {"name": "nightly", "labels": {"gpustack.dev/workload": "ft"}},
           "spec": {"schedule": "0 1 * * *", "suspend": False, "jobTemplate": {"spec": {"template": {"spec": {
               "serviceAccountName": "tuner", "containers": [{"name": "c", "image": "trainer:1"}]}}}}}}
JOB = {"metadata": {"name": "tune-1", "labels": {"gpustack.dev/workload": "ft"}},
       "spec": {"suspend": False, "parallelism": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}
NOTEBOOK = {"metadata": {"name": "ana", "annotations": {"notebooks.kubeflow.org/server-type": "jupyter"}},
            "spec": {"template": {"spec": {"containers": [{"name": "ana", "image": "jupyter:1"}]}}}}
STOP = ("metadata", "annotations", program.STOP_ANNOTATION)


@pytest.mark.parametrize("resource, before, path, value", [
    ("cronjobs", CRONJOB, ("spec", "jobTemplate", "spec", "template", "spec", "containers"),
     [{"name": "c", "image": "evil:1"}]),
    ("cronjobs", CRONJOB, ("spec", "jobTemplate", "spec", "template", "spec", "serviceAccountName"), "admin"),
    ("cronjobs", CRONJOB, ("spec", "schedule"), "* * * * *"),
    ("cronjobs", CRONJOB, ("metadata", "labels", "gpustack.dev/workload"), "other"),
    ("cronjobs", CRONJOB, ("metadata", "ownerReferences"), [{"kind": "Gone", "name": "x"}]),
    ("jobs", JOB, ("spec", "parallelism"), 100),
    ("jobs", JOB, ("spec", "template", "spec", "nodeSelector"), {"pool": "h100"}),
    ("jobs", JOB, ("metadata", "annotations"), {"a": "b"}),
    ("notebooks", NOTEBOOK, ("spec", "template", "spec", "containers"), [{"name": "ana", "image": "evil:1"}]),
    ("notebooks", NOTEBOOK, ("metadata", "annotations", "notebooks.kubeflow.org/server-type"), "other"),
    ("notebooks", NOTEBOOK, ("metadata", "annotations", "extra"), "1"),
    ("notebooks", NOTEBOOK, ("metadata", "finalizers"), ["hold"]),
])
def test_any_other_change_by_the_account_is_refused(resource, before, path, value):
    stop = changed(before, STOP, "2026-12-01T17:00:00Z") if resource == "notebooks" else \
        changed(before, ("spec", "suspend"), True)
    assert admitted(resource, before, stop)  # the stop alone passes
    assert not admitted(resource, before, changed(stop, path, value))
    assert not admitted(resource, before, changed(before, path, value))
    assert admitted(resource, before, changed(before, path, value), user="alice")  # not this policy's business


def test_removing_another_annotation_is_refused_and_removing_the_stop_is_not():
    stopped = changed(NOTEBOOK, STOP, "2026-12-01T17:00:00Z")
    assert admitted("notebooks", stopped, NOTEBOOK)
    assert not admitted("notebooks", stopped, {**NOTEBOOK, "metadata": {"name": "ana"}})


def test_the_policy_covers_only_the_resources_in_use():
    only_deployments = [{"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 1,
                         "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"},
                         "autostop": {"kind": "statefulset"}}]
    assert not [o for o in rendered(only_deployments) if o["kind"].startswith("ValidatingAdmission")]
    tuning = [{"name": "ft", "kind": "fine-tuning", "gpu": "A10G", "replicas": 1, "checkpointing": True,
               "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"},
               "autostop": {"kind": "cronjob"}}]
    [rule] = policy_of(tuning)["spec"]["matchConstraints"]["resourceRules"]
    assert rule == {"apiGroups": ["batch"], "apiVersions": ["*"], "operations": ["UPDATE"],
                    "resources": ["cronjobs", "jobs"]}
    assert admission.NAME == "gpustack-autostop"
