"""Node pools the cloud replaces: per-cloud data with sources, and what `gpustack diff` says about them."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from conftest import TARGETS, spec_text
from gpustack.clouds import CLOUDS
from gpustack.diff import diff_plans
from gpustack.diff.compare import pool_fields
from gpustack.diff.model import PlanDiff
from gpustack.diff.report import render_diff_markdown
from gpustack.plan import build_plan
from gpustack.spec import load_text

SERVE = {"name": "serve", "kind": "inference", "gpu": "A100-80GB", "mig": "1g.10gb", "replicas": {"min": 2, "max": 4}}
NOTEBOOKS = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 8}


def diff(old: list[dict], new: list[dict], cloud: str, old_target: dict | None = None,
         new_target: dict | None = None):
    def plan(workloads, target):
        doc = yaml.safe_load(spec_text(workloads, (cloud,)))
        if target:
            doc["targets"] = [target]
        return build_plan(load_text(yaml.safe_dump(doc), "spec.yaml"))
    return diff_plans(plan(old, old_target), plan(new, new_target), "old.yaml", "new.yaml").targets[0]


def test_aks_mig_profile_change_replaces_the_agent_pools():
    busy = {**SERVE, "replicas": {"min": 2, "max": 20}}  # a floor and a burst, before and after
    target = diff([busy], [{**busy, "mig": "2g.20gb"}], "azure")
    replaced = [p for p in target.pools if p.change == "replaced"]
    assert len(replaced) == 2  # the reserved floor and the on-demand burst
    assert not [p for p in target.pools if p.change in ("added", "removed")]
    for pool in replaced:
        assert pool.new_name != pool.name and "mig-2g-20gb" in pool.new_name
        [mig] = [f for f in pool.fields if f.field == "sharing.mig"]
        assert (mig.old, mig.new) == ("1x[7x1g.10gb]", "1x[3x2g.20gb]")
        assert "gpuInstanceProfile" in mig.replaces and "https://" in mig.replaces
    report = render_diff_markdown(PlanDiff("old.yaml", "new.yaml", (target,)))
    assert "2 node pools will be replaced" in report and "gpuInstanceProfile" in report


def test_gke_time_sharing_clients_change_replaces_the_node_pool():
    target = diff([NOTEBOOKS], [{**NOTEBOOKS, "gpu_fraction": 0.5}], "gcp")
    [pool] = [p for p in target.pools if p.change == "replaced"]
    [clients] = [f for f in pool.fields if f.field == "sharing.replicas"]
    assert (clients.old, clients.new) == ("4", "2")
    assert "max_shared_clients_per_gpu is ForceNew" in clients.replaces
    assert "ts2" in pool.new_name


def test_gke_partition_size_change_replaces_the_node_pools():
    target = diff([SERVE], [{**SERVE, "mig": "3g.40gb"}], "gcp")
    replaced = [p for p in target.pools if p.change == "replaced"]
    assert replaced and all(any(f.field == "sharing.mig" and "gpu_partition_size" in (f.replaces or "")
                                for f in p.fields) for p in replaced)


def test_gke_switch_to_dra_replaces_the_node_pools_for_their_driver_setting():
    whole = {"name": "train", "kind": "training", "gpu": "A100-80GB", "gpus": 8}
    dra = copy.deepcopy(TARGETS["gcp"])
    dra.setdefault("settings", {})["gpu_allocation"] = "dra"
    target = diff([whole], [whole], "gcp", TARGETS["gcp"], dra)
    replaced = [p for p in target.pools if p.change == "replaced"]
    assert replaced and len(replaced) == len(target.pools)
    for pool in replaced:
        [field] = [f for f in pool.fields if f.field == "settings.gpu_allocation"]
        assert (field.old, field.new) == ("device-plugin", "dra")
        assert "gpu_driver_installation_config" in (field.replaces or "")


def test_a_forcenew_field_replaces_a_pool_that_keeps_its_name():
    moved = copy.deepcopy(TARGETS["gcp"])
    moved["settings"]["project"] = "other-project-1"
    base = copy.deepcopy(TARGETS["gcp"])
    base["settings"]["project"] = "first-project-1"
    target = diff([NOTEBOOKS], [NOTEBOOKS], "gcp", base, moved)
    [pool] = target.pools
    assert (pool.change, pool.new_name) == ("replaced", pool.name)
    [field] = pool.fields
    assert field.field == "settings.project" and "project is ForceNew" in field.replaces


def test_eks_subnets_replace_but_labels_update_in_place():
    wider = copy.deepcopy(TARGETS["aws"])
    wider["settings"]["subnet_ids"] = ["subnet-0a1b", "subnet-0c2d"]
    [pool] = diff([NOTEBOOKS], [NOTEBOOKS], "aws", TARGETS["aws"], wider).pools
    assert pool.change == "replaced" and "subnet_ids is ForceNew" in pool.fields[0].replaces
    [pool] = diff([NOTEBOOKS], [{**NOTEBOOKS, "labels": {"team": "research"}}], "aws").pools
    assert pool.change == "updated"
    assert [(f.field, f.old, f.new, f.replaces) for f in pool.fields] == [("labels", "", "team=research", None)]


@pytest.mark.parametrize("cloud", ["aws", "oci"])
def test_a_new_mig_layout_without_native_partitioning_is_a_repartition(cloud):
    target = diff([SERVE], [{**SERVE, "replicas": {"min": 2, "max": 9}}], cloud)
    changes = {p.change for p in target.pools}
    assert "replaced" not in changes
    # One 8-GPU node holds the whole peak before and after: the reserved pool gets new layouts.
    [pool] = [p for p in target.pools if "reserved" in p.name]
    assert pool.change == "repartitioned"
    assert "MIG manager" in pool.why
    assert {f.field for f in pool.fields} >= {"sharing.mig"}


def test_every_provisioner_names_known_fields_with_a_source(every_provisioner):
    cloud, name = every_provisioner
    known = set(pool_fields(*_any_pool())) | {f"settings.{s.name}" for c in CLOUDS for s in c.settings}
    provisioner = CLOUDS.get(cloud).provisioner(name)
    for key, reason in {**provisioner.replacing_changes, **provisioner.drifting_changes}.items():
        field = key.split(":", 1)[0]
        assert field in known, key
        assert re.search(r"https://\S+", reason), key


def _any_pool():
    target = build_plan(load_text(spec_text([NOTEBOOKS], ("aws",)), "s.yaml")).targets[0]
    return target, target.pools[0]


def test_the_docs_list_every_replacing_field_of_every_provisioner(every_provisioner):
    from conftest import ROOT

    cloud, name = every_provisioner
    docs = (ROOT / "docs" / "previews.md").read_text()
    provisioner = CLOUDS.get(cloud).provisioner(name)
    assert [key for key in {**provisioner.replacing_changes, **provisioner.drifting_changes}
            if f"`{key}`" not in docs] == []
