"""A fifth cloud touches its own bundle, one registry entry and its golden cases.

The bundle is tests/fakecloud (FKS): facts, a managed provisioner, a backend, readers, mocks and a
catalog file, and nothing in gpustack/ names it. The bundles under gpustack/clouds are discovered;
one outside it is registered by whoever loads it, here with `CLOUDS.scoped()` (the registry's hook for
bundles from elsewhere, so the rest of the suite never sees a fifth cloud) and `CLOUDS.register(FKS)`,
the one registry entry. The spec then goes the whole way: validate, plan, render, the Pulumi program
under mocks, `gpustack check` and the policy pack on what the program declares.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import test_cloud_bundles as bundle_checks
import test_cloud_cases as cloud_cases
import test_policies_program as pack
import test_render as rendering
from conftest import assert_golden
from fakecloud import backend
from fakecloud.facts import FKS
from gpustack.cli import main
from gpustack.clouds import CLOUDS, Cloud
from gpustack.errors import SpecError
from gpustack.guardrails import evaluate, settings
from gpustack.guardrails.from_plan import plan_views
from gpustack.guardrails.resources import pool_types, pool_view
from gpustack.plan import Plan, build_plan
from gpustack.render import in_cluster
from gpustack.render.files import render_files
from gpustack.spec import load_spec, load_text
from gpustack.testing import run_program
from pulumi_golden import declared_yaml

BUNDLE = Path(__file__).resolve().parent / "fakecloud"
SPEC = BUNDLE / "gpustack.yaml"
TARGET = "fake-prod"


@pytest.fixture(scope="module")
def fks() -> Cloud:
    with CLOUDS.scoped():
        CLOUDS.register(FKS)
        yield CLOUDS.get(FKS.name)


@pytest.fixture(scope="module")
def plan(fks: Cloud) -> Plan:
    return build_plan(load_spec(SPEC))


def test_the_registry_takes_a_bundle_from_outside_and_forgets_it_after():
    with CLOUDS.scoped():
        CLOUDS.register(FKS)
        assert CLOUDS.get("fks").bundle == "fakecloud"  # its parts are imported from its own package
        assert backend.NODE_POOL in pool_types()
    assert FKS.name not in CLOUDS.names() and backend.NODE_POOL not in pool_types()
    with pytest.raises(KeyError, match="not a cloud"):
        CLOUDS.get(FKS.name)


def test_every_hook_the_registry_test_checks(fks):
    bundle_checks.test_facts_say_what_shared_code_asks(fks)
    bundle_checks.test_readers_cover_the_clouds_node_pools(fks)
    bundle_checks.test_mocks_and_backend(fks)
    example = fks.example
    text = yaml.safe_dump({
        "version": 1, "name": "example", "catalog": str(BUNDLE / "instances.csv"),
        "targets": [{"name": "t", "cloud": fks.name, "region": example.region, "cluster": example.cluster,
                     "settings": dict(example.settings)}],
        "workloads": [{"name": "train", "kind": "training", "gpu": "T4", "checkpointing": True}]})
    [target] = build_plan(load_text(text, "example.yaml")).targets
    assert target.cloud == fks.name and target.pools


def test_the_spec_validates_and_plans_in_the_clouds_spelling(fks, plan, capsys):
    assert main(["validate", str(SPEC)]) == 0
    assert "valid (1 target, 3 workloads, 3 pools)" in capsys.readouterr().out
    [target] = plan.targets
    assert target.cloud == fks.name and target.provisioner == "managed"
    by_kind = {p.kind: p for p in target.pools}
    assert {k: (p.capacity, p.compiled.billing) for k, p in by_kind.items()} == {
        "training": ("on-demand", "ON_DEMAND"), "inference": ("reserved", "RESERVED"),
        "notebook": ("on-demand", "ON_DEMAND")}
    assert all(fks.pool_names.fits(p.cloud_name) and p.compiled.project == "ml-platform" for p in target.pools)
    # The provisioner's gaps, said where they apply: no spot (the checkpointed training falls back to
    # on-demand), no scheduled scaling (the in-cluster auto-stop takes the notebooks' window).
    assert [w.code for w in plan.warnings if w.workload == "train"] == ["spot-unavailable"]
    assert "FKS node pools cannot ask for spot capacity" in plan.warnings[0].message
    assert "checkpointed training runs on spot; no spot on FKS" in by_kind["training"].reason
    assert any("FKS has no scheduled scaling" in note for note in by_kind["notebook"].notes)
    assert by_kind["notebook"].schedule is not None and by_kind["notebook"].schedule.stop_crons


@pytest.mark.golden
def test_plan_rendering_and_program_match_their_golden_cases(plan):
    assert_golden("fakecloud/plan.json", plan.to_json())
    target = plan.target(TARGET)
    files = render_files(in_cluster(plan, target))
    assert {"nvidia", "autostop"} <= {path.split("/")[0].split("-")[0] for path in files} or files
    for relative, text in files.items():
        assert_golden(f"fakecloud/render/{relative}", text)
    declared = run_program(str(SPEC), TARGET)
    assert_golden("fakecloud/pulumi.yaml", declared_yaml(f"{TARGET}: what the program declares under mocks",
                                                         declared))


def test_every_rendered_object_validates(plan):
    rendered = in_cluster(plan, plan.target(TARGET))
    assert any(o["kind"] == "CronJob" for o in rendered.objects)  # the notebooks' auto-stop
    for obj in rendered.objects:
        rendering.validate(obj)


def test_the_program_declares_what_the_readers_read_back(plan):
    target = plan.target(TARGET)
    declared = run_program(str(SPEC), TARGET)
    views = {v.cloud_name: v for d in declared if (v := pool_view(d.type, d.inputs, d.urn, d.name))}
    assert sorted(views) == sorted(p.cloud_name for p in target.pools)
    for pool in target.pools:
        view = views[pool.cloud_name]
        assert view.is_gpu and view.cloud == FKS.name
        assert (view.instance_type, set(view.capacities), view.min_nodes, view.max_nodes) == (
            pool.instance_type, {pool.capacity}, pool.min_nodes, pool.max_nodes)
        assert view.taints == pool.taints and dict(pool.labels).items() <= (view.labels or {}).items()


def test_check_and_the_pack_pass_it_and_fail_a_spec_that_breaks_a_rule(fks, plan, tmp_path, capsys):
    assert main(["check", str(SPEC), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["mandatory"] == 0
    found, gpu_pools = pack.pack_verdicts(str(SPEC), TARGET)
    assert gpu_pools == len(plan.target(TARGET).pools)
    assert [name for name, _ in found if name != "node-pool-replacement"] == []
    # A notebook pool without a schedule: `gpustack check` and the pack both say so.
    doc = yaml.safe_load(SPEC.read_text())
    (tmp_path / "instances.csv").write_bytes((BUNDLE / "instances.csv").read_bytes())
    doc["catalog"] = "instances.csv"  # a spec's catalog lies in its folder
    del doc["workloads"][2]["schedule"]
    broken = tmp_path / "spec.yaml"
    broken.write_text(yaml.safe_dump(doc))
    by_check = {v.rule for v in evaluate(plan_views(build_plan(load_spec(broken))), settings())
                if v.level == "mandatory"}
    found, _ = pack.pack_verdicts(str(broken), TARGET)
    assert by_check == {name for name, _ in found if name != "node-pool-replacement"} == {"dev-pool-auto-stop"}


def test_a_capability_gap_of_its_provisioner_is_a_located_error(fks):
    doc = yaml.safe_load(SPEC.read_text())
    doc["catalog"] = str(BUNDLE / "instances.csv")
    doc["workloads"][0]["capacity"] = "spot"  # pinned: never swapped for on-demand
    with pytest.raises(SpecError) as info:
        build_plan(load_text(yaml.safe_dump(doc, sort_keys=False), "spec.yaml"))
    [problem] = [str(p) for p in info.value.problems]
    assert problem.startswith("spec.yaml:") and "workloads[0].capacity" in problem
    assert "FKS node pools cannot ask for spot capacity" in problem


def test_it_does_what_its_behaviour_table_says(fks):
    cases = fks.part("cases").CASES
    assert any(c.compiled for c in cases) and any(c.refused for c in cases)
    for case in cases:
        cloud_cases.check_case(fks.name, case, catalog=str(BUNDLE / "instances.csv"))
