"""GKE with ComputeClasses (`settings.provisioner: compute-class`): one ComputeClass per group of pools
that carry a workload, each pool a priority, valid against the ComputeClass schema under tests/schemas,
rendered for GitOps and declared by the Pulumi program; a pending pod of each workload gets nodes from
its own class only, spot before on-demand and the floor's reservation before anything else."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

import provisioner_cases as cases
from cloudsim import compute_class as sim
from cloudsim.kube import Pod, quantity
from conftest import assert_golden, assert_golden_folder, compute_class_example_text
from gpustack.clouds.gcp.compute_class import CLASS_LABEL, ClassPool, compute_classes
from gpustack.plan import build_plan
from gpustack.plan.model import Pool
from gpustack.render import in_cluster
from gpustack.render.files import render_files
from gpustack.spec import load_text
from gpustack.testing import Declared, run_program
from pulumi_golden import declared_yaml
from test_render import validate

TARGET = "gcp-compute-class"
PLAN = build_plan(load_text(compute_class_example_text(), "compute-class.yaml"))
[PLANNED] = PLAN.targets
RENDERED = in_cluster(PLAN, PLANNED)
CLASSES = [o for o in RENDERED.node_objects if o["kind"] == "ComputeClass"]
BY_NAME = {c["metadata"]["name"]: c for c in CLASSES}
KUBECONFIG = {"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"}


def compiled(pool: Pool) -> ClassPool:
    assert isinstance(pool.compiled, ClassPool)
    return pool.compiled


def pools_of(name: str) -> list[Pool]:
    """The plan pools whose priorities the class lists, in the class's order (by their pool label)."""
    by_label = {p.name: p for p in PLANNED.pools}
    return [by_label[p["nodeLabels"]["gpustack.dev/pool"]] for p in BY_NAME[name]["spec"]["priorities"]]


def pod(request) -> Pod:  # type: ignore[no-untyped-def]
    tolerations = tuple({"key": t.key, "operator": "Exists", "effect": t.effect} for t in request.tolerations)
    return Pod(sim.pod_requests(dict(request.resources)), dict(request.node_selector), tolerations)


def offers(name: str, index: int) -> sim.Offer:
    pool = pools_of(name)[index]
    room = {k: quantity(v) for k, v in pool.node_allocatable}
    room.update({k: float(v) for k, v in pool.node_offers})
    return sim.Offer(room)


def everything(machine_type: str, spot: bool, reservation: str | None) -> bool:
    del machine_type, spot, reservation
    return True


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> list[Declared]:  # type: ignore[no-untyped-def]
    spec = tmp_path_factory.mktemp("compute-class") / "gpustack.yaml"
    spec.write_text(compute_class_example_text(), encoding="utf-8")
    return run_program(str(spec), TARGET, config=KUBECONFIG)  # the example's gcp target, with a kubeconfig


# -- the plan --------------------------------------------------------------------------------------
def test_each_pool_is_compiled_once_as_a_priority_of_its_class():
    [target] = json.loads(PLAN.to_json())["targets"]
    assert target["provisioner"] == "compute-class"
    for pool in target["pools"]:
        priority = pool["compiled"]["priority"]
        assert (priority["machine_type"], priority["gpu_count"]) == (pool["instance_type"], pool["gpus_per_node"])
        assert priority["spot"] == (pool["capacity"] == "spot")
        assert priority["boot_disk_gb"] == pool["disk"]["size_gib"]
        assert priority["node_labels"]["gpustack.dev/pool"] == pool["name"]
        assert pool["labels"][CLASS_LABEL] == pool["compiled"]["class_name"]


def test_every_workload_selects_one_class_whose_priorities_are_exactly_its_pools():
    for request in PLANNED.pod_requests:
        name = dict(request.node_selector)[CLASS_LABEL]
        assert {p.name for p in pools_of(name)} == set(request.pools), request.workload
        assert any(t.key == CLASS_LABEL for t in request.tolerations)
    assert {p.name for c in CLASSES for p in pools_of(c["metadata"]["name"])} == {p.name for p in PLANNED.pools}


def test_priorities_are_the_floors_reservation_then_spot_then_on_demand():
    rank = {"reserved": 0, "spot": 1, "on-demand": 2}
    for cls in CLASSES:
        capacities = [p.capacity for p in pools_of(cls["metadata"]["name"])]
        assert capacities == sorted(capacities, key=rank.__getitem__)
        for priority, pool in zip(cls["spec"]["priorities"], pools_of(cls["metadata"]["name"])):
            if pool.reserved_nodes:
                assert priority["reservations"] == {"affinity": "Specific",
                                                    "specific": [{"name": compiled(pool).priority.reservation,
                                                                  "project": "acme-ml-prod"}]}
            else:
                assert "reservations" not in priority
    [group] = PLANNED.fallback_groups
    [spot], [fallback] = group.spot, group.fallback
    [cls] = [c for c in CLASSES if spot in {p.name for p in pools_of(c["metadata"]["name"])}]
    assert [p.name for p in pools_of(cls["metadata"]["name"])] == [spot, fallback]
    assert cls["spec"]["activeMigration"] == {"optimizeRulePriority": True}  # back to spot once it is there


def test_gpu_sharing_is_spelled_as_the_class_api_takes_it():
    for pool in PLANNED.pools:
        gpu = next(p["gpu"] for c in CLASSES for p in c["spec"]["priorities"]
                   if p["nodeLabels"]["gpustack.dev/pool"] == pool.name)
        if pool.sharing.mode == "mig":
            assert gpu["gpuSharing"] == {"gpuPartitionSize": pool.mig_profiles[0]}
        elif pool.sharing.mode == "time-slicing":
            assert gpu["gpuSharing"] == {"sharingStrategy": "TIME_SHARING",
                                         "maxSharedClientsPerGPU": pool.sharing.replicas}
        else:
            assert "gpuSharing" not in gpu
        assert gpu["driverVersion"] == "default"


def test_classes_never_scale_up_outside_their_priorities_and_create_their_node_pools():
    for cls in CLASSES:
        spec = cls["spec"]
        assert spec["whenUnsatisfiable"] == "DoNotScaleUp" and spec["nodePoolAutoCreation"] == {"enabled": True}
        assert 1 <= spec["autoscalingPolicy"]["consolidationDelayMinutes"] <= 1440


def test_gaps_and_requirements_are_said_before_anything_is_rendered():
    [notebook] = [p for p in PLANNED.pools if p.schedule is not None]
    assert any("a ComputeClass has no schedule" in n for n in notebook.notes)
    floors = [p for p in PLANNED.pools if p.reserved_nodes]
    assert floors and all(any("keeps no minimum" in n for n in p.notes) for p in floors)
    shared = [p for p in PLANNED.pools if p.sharing.mode != "none"]
    assert shared and all(any("1.35.2-gke.1485000" in n for n in p.notes) for p in shared)
    assert any("1.33.3-gke.1136000" in n for n in PLANNED.notes)


# -- the schema ------------------------------------------------------------------------------------
def _cel(obj: Mapping[str, Any]) -> None:
    """The CEL rules of the schema (x-kubernetes-validations, which jsonschema does not run) that the
    classes gpustack writes could break."""
    for priority in obj["spec"]["priorities"]:
        if "nodepools" in priority:
            assert len(priority) == 1, "Nodepool field cannot be set along with other fields"
        assert not ("machineFamily" in priority and "machineType" in priority)
        assert not ("machineType" in priority and ({"minCores", "minMemoryGb"} & set(priority)))
        reservations = priority.get("reservations")
        if reservations:
            specific = reservations.get("specific") or []
            assert (reservations["affinity"] == "Specific") == bool(specific)


def test_every_rendered_class_validates_against_the_schema():
    assert CLASSES
    for obj in CLASSES:
        validate(obj)
        _cel(obj)


def test_validation_would_catch_a_wrong_field_or_value():
    bad = copy.deepcopy(CLASSES[0])
    bad["spec"]["priorities"][0]["gpu"]["driverVersion"] = "DEFAULT"  # the node-pool API's spelling
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
    bad = copy.deepcopy(CLASSES[0])
    bad["spec"]["priorities"][0]["storage"]["bootDiskSizeGb"] = 100  # no such field
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
    bad = copy.deepcopy(CLASSES[0])
    bad["spec"]["autoscalingPolicy"]["consolidationDelayMinutes"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


# -- GKE's documented matching ---------------------------------------------------------------------
def test_a_pending_pod_gets_nodes_from_the_first_priority_of_its_own_class_only():
    for request in PLANNED.pod_requests:
        choice = sim.scale_up(pod(request), CLASSES, offers, everything)
        assert choice is not None, request.workload
        own = dict(request.node_selector)[CLASS_LABEL]
        assert (choice.compute_class, choice.priority) == (own, 0)
        for other in CLASSES:  # selecting another class's nodes: refused by its taint or labels
            name = other["metadata"]["name"]
            if name == own:
                continue
            for index in range(len(other["spec"]["priorities"])):
                assert sim.why_not(pod(request), sim.node(other, index, offers(name, index))) is not None


def test_when_spot_is_unavailable_the_fallback_priority_creates_the_node():
    [group] = PLANNED.fallback_groups
    [request] = [r for r in PLANNED.pod_requests if set(r.pools) == {*group.spot, *group.fallback}]
    no_spot = lambda machine, spot, reservation: not spot
    choice = sim.scale_up(pod(request), CLASSES, offers, no_spot)
    assert choice is not None and not choice.spot and choice.priority == 1
    assert choice.machine_type == PLANNED.pool(group.fallback[0]).instance_type
    nothing = lambda machine, spot, reservation: False
    assert sim.scale_up(pod(request), CLASSES, offers, nothing) is None  # DoNotScaleUp: stays pending


def test_a_floors_pods_consume_its_reservation_first_then_the_on_demand_burst():
    [request] = [r for r in PLANNED.pod_requests
                 if any(PLANNED.pool(n).role == "burst" for n in r.pools)]
    floor = next(PLANNED.pool(n) for n in request.pools if PLANNED.pool(n).reserved_nodes)
    reservation = compiled(floor).priority.reservation
    first = sim.scale_up(pod(request), CLASSES, offers, everything)
    assert first is not None and first.reservation == reservation and first.priority == 0
    full = lambda machine, spot, held: held is None  # the reservation is used up
    then = sim.scale_up(pod(request), CLASSES, offers, full)
    assert then is not None and then.reservation is None and not then.spot and then.priority == 1


def test_a_pod_without_the_class_selector_gets_no_node():
    request = PLANNED.pod_requests[0]
    stray = Pod(sim.pod_requests(dict(request.resources)),
                {k: v for k, v in request.node_selector if k != CLASS_LABEL}, ())
    assert sim.scale_up(stray, CLASSES, offers, everything) is None


# -- the Pulumi program -----------------------------------------------------------------------------
def test_pulumi_declares_the_rendered_classes_and_reservations_and_no_node_pool(declared):
    from test_in_cluster_pulumi import plain

    objects = [plain(dict(r.inputs)) for r in declared if r.type == "kubernetes:cloud.google.com/v1:ComputeClass"]
    key = lambda o: o["metadata"]["name"]
    assert sorted(objects, key=key) == sorted((plain(o) for o in CLASSES), key=key)
    assert not [r for r in declared if r.type.startswith("gcp:container/nodePool")]
    reservations = {r.inputs["name"] for r in declared if r.type == "gcp:compute/reservation:Reservation"}
    assert reservations == {compiled(p).priority.reservation for p in PLANNED.pools if p.reserved_nodes}
    for r in declared:
        if r.type == "gcp:compute/reservation:Reservation":
            assert r.inputs["specificReservationRequired"] is True


def test_without_a_kubeconfig_the_program_stops_with_a_message(tmp_path):
    (tmp_path / "gpustack.yaml").write_text(compute_class_example_text(), encoding="utf-8")
    with pytest.raises(Exception, match=r"provisioned by GKE ComputeClasses.*gpustack:kubeconfig"):
        run_program(str(tmp_path / "gpustack.yaml"), TARGET)


def test_classes_are_built_from_the_compiled_pools_only():
    assert list(compute_classes(PLANNED.pools, {})) == [
        {**c, "metadata": {"name": c["metadata"]["name"], "labels": {}}} for c in CLASSES]


# -- golden files ---------------------------------------------------------------------------------
@pytest.mark.golden
def test_rendered_files_match_golden():
    assert_golden_folder(f"render/{TARGET}", render_files(RENDERED))


@pytest.mark.golden
def test_program_resources_match_golden(declared):
    what = ("Every resource `pulumi up` declares for the example's gcp target provisioned by GKE ComputeClasses "
            "(tests/conftest.py compute_class_example_text), with a kubeconfig")
    assert_golden(f"pulumi/{TARGET}.yaml", declared_yaml(what, declared))


# -- workloads wired to their class, and checked ----------------------------------------------------
def _patched() -> dict[str, dict]:
    return cases.patched_objects(PLANNED)


def _manifest_findings(objects: list[dict]):  # type: ignore[no-untyped-def]
    return cases.manifest_findings(PLANNED, objects)


def test_render_workloads_patches_select_the_class_and_pass_check_manifests():
    from strategic_merge import pod_spec

    patched = _patched()
    for request in PLANNED.pod_requests:
        spec = pod_spec(patched[request.workload])
        assert spec["nodeSelector"][CLASS_LABEL] == dict(request.node_selector)[CLASS_LABEL]
        assert {"key": CLASS_LABEL, "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert _manifest_findings(list(patched.values())) == []


def test_check_manifests_flags_pods_that_do_not_select_their_class():
    from strategic_merge import pod_spec

    patched = _patched()
    del pod_spec(patched["moderation"])["nodeSelector"][CLASS_LABEL]
    found = _manifest_findings(list(patched.values()))
    [finding] = [f for f in found if "do not select the class" in f.message]
    assert finding.workload == "moderation" and finding.path.endswith("nodeSelector")
    assert CLASS_LABEL in finding.fix


# -- guardrails read the classes -------------------------------------------------------------------
def _views(declared: list[Declared]):  # type: ignore[no-untyped-def]
    from gpustack.guardrails.resources import pool_view
    from test_in_cluster_pulumi import plain

    return [v for r in declared if (v := pool_view(r.type, plain(dict(r.inputs)), r.urn, r.name)) is not None]


def test_guardrails_read_each_class_as_its_pools(declared):
    views = {v.cloud_name: v for v in _views(declared)}
    assert set(views) == set(BY_NAME)
    for name, view in views.items():
        pools = pools_of(name)
        assert view.is_gpu and view.provisioner == "compute-class" and view.kind == pools[0].kind
        assert view.capacities == {p.capacity for p in pools}
        assert (view.instance_type, view.min_nodes) == (pools[0].instance_type, 0)
        assert any(t.key == "nvidia.com/gpu" and t.effect == "NoSchedule" for t in view.taints or ())


def test_guardrails_pass_the_classes_and_flag_spot_only_inference_and_unchecked_spot(declared):
    import dataclasses

    from gpustack.guardrails import evaluate
    from gpustack.guardrails.config import settings

    config = settings()
    views = _views(declared)
    assert [v for v in evaluate({TARGET: views}, config) if v.level == "mandatory"] == []
    spot_only = [dataclasses.replace(v, capacities=frozenset({"spot"})) if v.kind == "inference" else v for v in views]
    assert {r.rule for r in evaluate({TARGET: spot_only}, config)} >= {"inference-pool-not-spot-only"}
    unchecked = [dataclasses.replace(v, checkpointing=None) if "spot" in v.capacities else v for v in views]
    assert {r.rule for r in evaluate({TARGET: unchecked}, config)} >= {"spot-gpu-pool-checkpointing"}


# -- gpustack diff ---------------------------------------------------------------------------------
def test_diff_says_a_class_change_follows_on_new_nodes_and_replaces_no_node_pool():
    import yaml

    from gpustack.diff.compare import diff_plans

    doc = yaml.safe_load(compute_class_example_text())
    [moderation] = [w for w in doc["workloads"] if w["name"] == "moderation"]
    moderation["labels"] = {**moderation.get("labels", {}), "model": "llama-guard-2"}
    changed = build_plan(load_text(yaml.safe_dump(doc, sort_keys=False), "changed.yaml"))
    [target] = diff_plans(PLAN, changed, "old", "new").targets
    relabelled = [p for p in target.pools if any(f.field == "labels" for f in p.fields)]
    assert relabelled and all(p.change == "updated" for p in relabelled)
    assert all("nodes it creates from now on follow the change" in p.why and not any(f.replaces or f.drifts for f in p.fields)
               for p in relabelled)


def test_the_schema_names_its_sources():
    from pathlib import Path

    head = (Path(__file__).parent / "schemas" / "cloud.google.com_computeclasses.yaml").read_text(
        encoding="utf-8").split("group:")[0]
    assert "datreeio/CRDs-catalog/blob/77e49833da1a723ff2f1ec34251c5eafc8c75daa/cloud.google.com/computeclass_v1.json" in head
    assert "https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass" in head


def test_a_compiled_value_the_class_api_refuses_is_a_problem_before_rendering():
    import dataclasses

    from gpustack.clouds import CLOUDS

    provisioner = CLOUDS.get("gcp").provisioner("compute-class")
    [shared] = [p for p in PLANNED.pools if p.sharing.mode == "time-slicing"]
    c = compiled(shared)
    assert provisioner.check_pool(shared) == []
    for priority in (dataclasses.replace(c.priority, max_shared_clients=64),
                     dataclasses.replace(c.priority, sharing_strategy="TIMESHARE"),
                     dataclasses.replace(c.priority, driver_version="DEFAULT")):
        broken = dataclasses.replace(shared, compiled=dataclasses.replace(c, priority=priority))
        assert provisioner.check_pool(broken), priority
    bad_name = dataclasses.replace(shared, compiled=dataclasses.replace(c, class_name="Not_A_Label"))
    assert any("ComputeClass name" in m for m in provisioner.check_pool(bad_name))


def test_the_fallback_note_names_a_class_that_is_rendered():
    """Pods written from the note select a class that exists, so they do not stay Pending."""
    import re

    notes = [n for n in PLANNED.notes if n.startswith("Fallback pool(s)")]
    assert notes
    for note in notes:
        selected = re.search(rf"nodeSelector {re.escape(CLASS_LABEL)}: ([a-z0-9-]+)", note)
        assert selected and selected.group(1) in BY_NAME, note


def test_a_floor_has_no_upgrade_settings_under_a_class_and_a_warning_prices_the_headroom():
    """A ComputeClass declares no upgrade settings: the plan claims none and says what a surge costs."""
    floors = [p for p in PLANNED.pools if p.reserved_nodes]
    assert floors
    warned = {w.pool: w.message for w in PLANNED.warnings if w.code == "floor-upgrade"}
    for pool in floors:
        assert pool.upgrade is None
        assert f"${pool.price.usd_per_node_hour * 730:,.2f} a month" in warned[pool.name]
        assert "maxSurge 0" in warned[pool.name]
