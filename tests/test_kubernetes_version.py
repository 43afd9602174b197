"""`targets[].kubernetes_version`: read as a quoted MAJOR.MINOR with located errors, carried into the plan and
its JSON, and what it lets gpustack refuse where the feature is chosen: auto-stop of kinds it patches whole
below 1.30 (no ValidatingAdmissionPolicy), DRA below 1.34, Karpenter's time-sliced DRA GPUs below 1.36.
Without it nothing is assumed, and the plan says once per feature that the minimum was not checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import TARGETS
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.render import autostop
from gpustack.spec import load_text
from gpustack.spec.kubernetes import patched_kinds, stopped_kinds
from test_autostop_kinds import fine_tuning, notebook
from test_dra import NOTEBOOKS, TRAIN

ALWAYS = {"days": "Mon-Sun", "hours": "00:00-24:00", "timezone": "UTC"}


def text(workloads: list[dict[str, Any]], version: object = None, cloud: str = "aws", **settings: str) -> str:
    target: dict[str, Any] = {**TARGETS[cloud], "settings": {**TARGETS[cloud]["settings"], **settings}}
    if version is not None:
        target["kubernetes_version"] = version
    return yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": workloads}, sort_keys=False)


def problems_of(spec_text: str) -> list[Any]:
    with pytest.raises(SpecError) as info:
        build_plan(load_text(spec_text, "spec.yaml"))
    return list(info.value.problems)


# -- reading ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "hint"), [("v1.31", "did you mean '1.31'?"), ("1.31.2", "did you mean '1.31'?"),
                                             ("1.33.3-gke.1136000", "did you mean '1.33'?"), ("1.031", ""),
                                             ("2.0", ""), ("latest", ""), ("1.31 ", ""), (" 1.31", "")])
def test_a_bad_version_is_located_with_the_rule_and_a_did_you_mean(value, hint):
    [problem] = problems_of(text([fine_tuning()], value))
    assert problem.path == "targets[0].kubernetes_version" and problem.location is not None
    assert 'MAJOR.MINOR, e.g. "1.31"' in problem.message
    assert (hint in problem.message) if hint else "did you mean" not in problem.message


@pytest.mark.parametrize(("value", "hint"), [(1.31, "(did you mean '1.31'?)"), (1.3, "(did you mean '1.3' or '1.30'?)"),
                                             (1, ""), (True, "")])
def test_an_unquoted_version_is_refused_not_guessed(value, hint):
    [problem] = problems_of(text([fine_tuning()], value))
    assert problem.path == "targets[0].kubernetes_version"
    assert ("quoted" in problem.message) or ("expected a string" in problem.message)
    assert (hint in problem.message) if hint else "did you mean" not in problem.message


def test_the_line_of_the_bad_version_is_given():
    spec = text([fine_tuning()], "v1.31")
    line = next(i for i, row in enumerate(spec.splitlines(), 1) if "kubernetes_version" in row)
    [problem] = problems_of(spec)
    assert problem.location is not None and problem.location.line == line


def test_the_version_is_in_the_plan_and_its_json_only_when_given():
    given = build_plan(load_text(text([fine_tuning()], "1.31")))
    assert given.targets[0].kubernetes_version == "1.31"
    assert json.loads(given.to_json())["targets"][0]["kubernetes_version"] == "1.31"
    absent = build_plan(load_text(text([fine_tuning()])))
    assert absent.targets[0].kubernetes_version is None
    assert "kubernetes_version" not in json.loads(absent.to_json())["targets"][0]


# -- auto-stop of kinds patched whole: the admission policy needs 1.30 --------------------------------------------

@pytest.mark.parametrize("kind", ["job", "cronjob"])
def test_a_chosen_patched_kind_below_1_30_is_refused_at_its_autostop(kind):
    [problem] = problems_of(text([fine_tuning(autostop={"kind": kind})], "1.29"))
    assert problem.path == "workloads[0].autostop.kind"
    assert "ValidatingAdmissionPolicy" in problem.message and "1.30" in problem.message
    assert "any image, any ServiceAccount" in problem.message and "deployment or statefulset" in problem.message
    assert len(str(problem)) < 520  # short enough to read (the loader fuzz allows 600)


def test_a_notebook_chosen_below_1_30_is_refused_too():
    [problem] = problems_of(text([notebook(autostop={"kind": "notebook"})], "1.28"))
    assert problem.path == "workloads[0].autostop.kind" and "'notebook'" in problem.message


def test_detected_jobs_and_cronjobs_below_1_30_are_refused_at_the_schedule_with_the_autostop_to_write():
    [problem] = problems_of(text([fine_tuning()], "1.29"))
    assert problem.path == "workloads[0].schedule"
    assert "job, cronjob" in problem.message and "autostop: {kind: deployment}" in problem.message
    assert len(str(problem)) < 520  # short enough to read (the loader fuzz allows 600)


@pytest.mark.parametrize("version", ["1.30", "1.31", "1.36"])
def test_from_1_30_the_same_spec_plans_and_renders_the_policy(version):
    plan = build_plan(load_text(text([fine_tuning(), notebook(autostop={"kind": "notebook"})], version)))
    kinds = [o["kind"] for o in autostop.objects(plan, plan.targets[0])]
    assert "ValidatingAdmissionPolicy" in kinds
    assert not any("not checked" in n and "ValidatingAdmissionPolicy" in n for n in plan.targets[0].notes)


@pytest.mark.parametrize("workload", [
    fine_tuning(autostop={"kind": "deployment"}), notebook(autostop={"kind": "statefulset"}),
    fine_tuning(schedule=ALWAYS), {**fine_tuning(), "schedule": None}])
def test_kinds_scaled_through_scale_or_no_jobs_at_all_plan_below_1_30(workload):
    workload = {k: v for k, v in workload.items() if v is not None}
    plan = build_plan(load_text(text([workload], "1.29")))
    kinds = {o["kind"] for o in autostop.objects(plan, plan.targets[0])}
    assert "ValidatingAdmissionPolicy" not in kinds


def test_keda_scaled_notebooks_below_1_30_are_not_refused():
    spec = load_text(text([notebook()], "1.29", autostop="keda"))
    plan = build_plan(spec)
    assert plan.targets[0].scaled_by_keda == ("nb",)
    assert "ValidatingAdmissionPolicy" not in {o["kind"] for o in autostop.objects(plan, plan.targets[0])}


@pytest.mark.parametrize("workloads", [
    [fine_tuning()], [notebook()], [notebook(autostop={"kind": "notebook"})], [fine_tuning(autostop={"kind": "job"})],
    [fine_tuning(autostop={"kind": "deployment"})], [notebook(autostop={"kind": "jupyterhub"})],
    [fine_tuning(schedule=ALWAYS)]])
@pytest.mark.parametrize("controller", ["cronjob", "keda"])
def test_the_check_refuses_exactly_where_the_rendered_objects_need_the_policy(workloads, controller):
    """The spec-level rule and the renderer agree: a policy is rendered iff a kind is patched whole, and
    auto-stop CronJobs (spec.timeZone) iff a kind is stopped."""
    spec = load_text(text(workloads, autostop=controller))
    plan = build_plan(spec)
    rendered = {o["kind"] for o in autostop.objects(plan, plan.targets[0])}
    patched = any(patched_kinds(w, spec.targets[0]) for w in spec.workloads)
    assert ("ValidatingAdmissionPolicy" in rendered) == patched
    assert ("CronJob" in rendered) == any(stopped_kinds(w, spec.targets[0]) for w in spec.workloads)


def test_without_a_version_the_plan_says_once_that_the_policy_minimum_was_not_checked():
    plan = build_plan(load_text(text([fine_tuning("a"), fine_tuning("b"), notebook()])))
    notes = [n for n in plan.targets[0].notes if "ValidatingAdmissionPolicy" in n]
    assert len(notes) == 1 and "1.30" in notes[0] and "not checked" in notes[0]
    quiet = build_plan(load_text(text([fine_tuning(autostop={"kind": "deployment"})])))
    assert not any("ValidatingAdmissionPolicy" in n for n in quiet.targets[0].notes)
    given = build_plan(load_text(text([fine_tuning()], "1.31")))
    assert not any("not checked" in n for n in given.targets[0].notes)


# -- DRA --------------------------------------------------------------------------------------------------------

def test_dra_below_1_34_is_refused_at_the_setting():
    [problem] = problems_of(text([TRAIN], "1.33", gpu_allocation="dra"))
    assert problem.path == "targets[0].settings.gpu_allocation"
    assert "1.34" in problem.message and "resource.k8s.io/v1" in problem.message and "device-plugin" in problem.message


def test_dra_from_1_34_plans_and_its_note_no_longer_says_unchecked():
    checked = build_plan(load_text(text([TRAIN], "1.34", gpu_allocation="dra"))).targets[0]
    [note] = [n for n in checked.notes if n.startswith("gpu_allocation dra")]
    assert "not checked" not in note
    unchecked = build_plan(load_text(text([TRAIN], gpu_allocation="dra"))).targets[0]
    [note] = [n for n in unchecked.notes if n.startswith("gpu_allocation dra")]
    assert "1.34" in note and "not checked" in note


def test_karpenter_time_sliced_dra_below_1_36_is_refused_and_from_1_36_needs_no_warning():
    [problem] = problems_of(text([NOTEBOOKS], "1.35", gpu_allocation="dra", provisioner="karpenter"))
    assert problem.path == "targets[0].settings.gpu_allocation"
    assert "time-slicing" in problem.message and "1.36" in problem.message
    target = build_plan(load_text(text([NOTEBOOKS], "1.36", gpu_allocation="dra", provisioner="karpenter"))).targets[0]
    assert not [w for w in target.warnings if w.code == "dra-sharing"]
    unchecked = build_plan(load_text(text([NOTEBOOKS], gpu_allocation="dra", provisioner="karpenter"))).targets[0]
    assert any("1.36" in w.message for w in unchecked.warnings if w.code == "dra-sharing")


def test_karpenter_dra_without_time_slicing_plans_on_1_34():
    target = build_plan(load_text(text([TRAIN], "1.34", gpu_allocation="dra", provisioner="karpenter"))).targets[0]
    assert target.gpu_allocation == "dra"


# -- the auto-stop CronJobs' time zone: spec.timeZone needs 1.27 ---------------------------------------------------

@pytest.mark.parametrize("workload", [fine_tuning(autostop={"kind": "deployment"}), notebook()])
def test_a_closing_window_below_1_27_is_refused_at_the_schedule(workload):
    [problem] = problems_of(text([workload], "1.26"))
    assert problem.path == "workloads[0].schedule"
    assert "spec.timeZone" in problem.message and "1.27" in problem.message


def test_from_1_27_scaled_kinds_plan_and_keda_or_the_hub_need_no_cronjobs_below_it():
    build_plan(load_text(text([fine_tuning(autostop={"kind": "deployment"})], "1.27")))
    build_plan(load_text(text([notebook()], "1.26", autostop="keda")))
    build_plan(load_text(text([notebook(autostop={"kind": "jupyterhub"})], "1.26")))


def test_without_a_version_a_window_of_scaled_kinds_notes_the_time_zone_minimum_only():
    plan = build_plan(load_text(text([fine_tuning(autostop={"kind": "deployment"})])))
    [note] = [n for n in plan.targets[0].notes if "not checked" in n]
    assert "spec.timeZone" in note and "1.27" in note and "ValidatingAdmissionPolicy" not in note


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=20), st.integers(), st.floats(allow_nan=True), st.booleans(),
                 st.lists(st.text(max_size=3), max_size=2), st.from_regex(r"[vV]?1\.[0-9]{1,3}(\.[0-9]{1,2})?", fullmatch=True)))
def test_any_value_is_read_or_refused_where_it_is_written(value):
    try:
        load_text(text([fine_tuning(autostop={"kind": "deployment"})], value), "spec.yaml")
    except SpecError as exc:
        assert exc.problems and all(p.location is not None and len(p.message) < 520 for p in exc.problems)


# -- what the planned pools need of the cluster, per provisioner (GKE's node pools) ---------------------------------

SPOT_TUNE = {"name": "tune", "kind": "fine-tuning", "gpu": "A100-80GB", "gpus": 1, "replicas": 2,
             "checkpointing": True, "capacity": "spot"}


def test_gke_spot_fallback_through_a_compute_class_below_1_30_is_refused_at_the_version():
    plan = build_plan(load_text(text([SPOT_TUNE], cloud="gcp")))
    assert plan.targets[0].fallback_groups  # the spot pool is backed by an on-demand one, through a ComputeClass
    [problem] = problems_of(text([SPOT_TUNE], "1.29", cloud="gcp"))
    assert problem.path == "targets[0].kubernetes_version"
    assert "ComputeClass" in problem.message and "1.30.3-gke.1451000" in problem.message
    build_plan(load_text(text([SPOT_TUNE], "1.30", cloud="gcp")))  # 1.30 itself: the patch level stays a note


def test_gke_flex_start_below_1_32_is_refused_naming_its_pools():
    from test_capacity_windows import TUNE
    [problem] = problems_of(text([TUNE], "1.31", cloud="gcp"))
    assert problem.path == "targets[0].kubernetes_version"
    assert "flex-start" in problem.message and "1.32.2-gke.1652000" in problem.message and "pools " in problem.message
    build_plan(load_text(text([TUNE], "1.32", cloud="gcp")))


def test_other_clouds_spot_fallback_needs_no_version():
    build_plan(load_text(text([SPOT_TUNE], "1.29", cloud="aws")))
