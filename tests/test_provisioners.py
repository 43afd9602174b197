"""The provisioner axis and the compile seam: a target picks how its pools are provisioned, and each
pool is compiled once, into the plan, in that provisioner's spelling."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import EXAMPLE, spec_text
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_spec, load_text

TRAIN = {"name": "train", "kind": "training", "gpu": "A100-80GB", "checkpointing": True}
PLAN = build_plan(load_spec(EXAMPLE))


def test_an_unknown_provisioner_is_a_located_error_naming_the_known_ones():
    text = spec_text([TRAIN]).replace("    subnet_ids:", "    provisioner: managd\n    subnet_ids:")
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    [problem] = [str(p) for p in info.value.problems]
    assert "targets[0].settings.provisioner: 'managd' is not valid: one of managed" in problem
    assert problem.startswith("spec.yaml:")


@pytest.mark.parametrize("cloud", sorted(CLOUDS.names()))
def test_the_default_provisioner_is_the_first_and_naming_it_changes_nothing(cloud):
    text = spec_text([TRAIN], (cloud,))
    implicit = build_plan(load_text(text))
    doc = yaml.safe_load(text)
    doc["targets"][0]["settings"]["provisioner"] = CLOUDS.get(cloud).default_provisioner
    explicit = build_plan(load_text(yaml.safe_dump(doc)))
    assert implicit.targets[0].provisioner == CLOUDS.get(cloud).provisioners[0]
    assert implicit.to_json() == explicit.to_json()


def test_every_pool_carries_its_compiled_value_in_the_plan_json():
    doc = json.loads(PLAN.to_json())
    for target in doc["targets"]:
        assert target["provisioner"] == CLOUDS.get(target["cloud"]).default_provisioner
        for pool in target["pools"]:
            assert pool["compiled"]["provisioner"] == target["provisioner"]


def test_compiled_values_are_the_cloud_spelling_of_the_plan():
    spot = {t.cloud: next(p for p in t.pools if p.capacity == "spot") for t in PLAN.targets}
    assert spot["aws"].compiled.capacity_type == "SPOT"
    assert spot["gcp"].compiled.spot and spot["gcp"].compiled.location_policy == "ANY"
    assert spot["azure"].compiled.scale_set_priority == "Spot"
    assert spot["oci"].compiled.preemption_action == "TERMINATE"
    for target in PLAN.targets:
        for pool in target.pools:
            if pool.schedule is not None:
                assert pool.schedule.start_crons and pool.schedule.stop_crons


def test_a_provisioner_gap_is_a_plan_note(monkeypatch):
    from gpustack.clouds.base import Feature

    provisioner = CLOUDS.get("aws").provisioner()
    monkeypatch.setattr(type(provisioner), "unsupported", {Feature.NATIVE_SCHEDULE: "no timetable here"})
    notebook = {"name": "nb", "kind": "notebook", "gpu": "T4", "replicas": 2,
                "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"}}
    [pool] = build_plan(load_text(spec_text([notebook]))).targets[0].pools
    assert "no timetable here." in pool.notes
    assert pool.compiled.schedules == ()  # the backend then declares no scheduled action


def test_what_a_node_leaves_for_pods_is_the_provisioners_node_image():
    """Kubelet reservations belong to the node image a provisioner launches: EKS's managed node groups
    keep EKS's formula (14.34 GiB of a g4dn.xlarge for pods); a provisioner with an image that applies
    the tiered formula leaves 12.30 GiB, so a 13 GiB replica fits one and not the other."""
    from gpustack.catalog import load_catalog
    from gpustack.clouds.kubelet import TIERED
    from gpustack.plan.asks import Ask
    from gpustack.plan.choices import slots_per_node

    aws = CLOUDS.get("aws")
    managed = aws.provisioner()
    other_image = type("OtherImage", (type(managed),), {"kubelet_reservation": TIERED})(aws)
    row = next(r for r in load_catalog().instances if r.cloud == "aws" and r.name == "g4dn.xlarge")
    ask = Ask("none", 1, 1, None, 1.0, 1.0, 0.0, 13.0)
    assert round(managed.template_node(row).memory_gib, 2) == 14.34
    assert round(other_image.template_node(row).memory_gib, 2) == 12.30
    assert (slots_per_node(row, ask, managed), slots_per_node(row, ask, other_image)) == (1, 0)


@pytest.mark.parametrize("feature, workload, field", [
    ("SPOT", {**TRAIN, "capacity": "spot"}, "workloads[0].capacity"),
    ("FRACTIONAL_SHARING", {"name": "chat", "kind": "inference", "gpu": "A10G", "gpu_fraction": 0.3, "replicas": 2,
                            "capacity": "on-demand", "sharing": "fractional"}, "workloads[0].sharing"),
])
def test_a_feature_the_provisioner_lacks_is_a_located_gap_at_validate_time(monkeypatch, tmp_path, capsys, feature,
                                                                          workload, field):
    # The cloud has the feature; its provisioner does not: validate reports the provisioner's gap.
    from gpustack.cli import main
    from gpustack.clouds.base import Feature

    provisioner = CLOUDS.get("aws").provisioner()
    assert CLOUDS.get("aws").supports(Feature[feature])
    monkeypatch.setattr(type(provisioner), "unsupported", {Feature[feature]: "this provisioner lacks it"})
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([workload]))
    assert main(["validate", str(spec)]) == 2
    [error, _] = capsys.readouterr().err.splitlines()
    assert error.startswith(f"error: {spec}:") and field in error and "this provisioner lacks it" in error
