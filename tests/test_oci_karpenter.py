"""OKE with Oracle's Karpenter provider (`settings.provisioner: karpenter` on oci): per pool a NodePool and
an OCINodeClass, valid against KPO v1.0.0's CRDs (its NodePool CRD is Karpenter v1.6.2's), rendered for
GitOps and declared by the Pulumi program; KPO offers each NodePool the capacity it asks for, and a
pending pod of each workload launches only NodePools of its own pools."""

from __future__ import annotations

import base64
import copy
import dataclasses
from pathlib import Path

import jsonschema
import pytest
import yaml

from cloudsim import karpenter as sim
from cloudsim import kpo
import provisioner_cases as cases
from cloudsim.kube import Pod
from conftest import EXAMPLE, OKE_GPU_IMAGE, oci_karpenter_example_text, spec_text
from gpustack.catalog import load_catalog
from gpustack.clouds.oci.karpenter import RESERVATION_TAG, OCIKarpenterPool
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.render.workloads import affinity
from gpustack.spec import load_spec, load_text
from gpustack.testing import Declared
from test_karpenter import cel_problems
from test_render import _strict, validate

TARGET = "oci-karpenter"
PLAN = build_plan(load_text(oci_karpenter_example_text(), "oci-karpenter.yaml"))
[PLANNED] = PLAN.targets
RENDERED = in_cluster(PLAN, PLANNED)
OBJECTS = {(o["kind"], o["metadata"]["name"]): o for o in RENDERED.node_objects}
NODE_POOLS = [o for (kind, _), o in OBJECTS.items() if kind == "NodePool"]
NODE_CLASSES = {name: o for (kind, name), o in OBJECTS.items() if kind == "OCINodeClass"}
ROWS = {row.name: row for row in load_catalog().in_region("oci", PLANNED.region)}
# KPO's own NodePool CRD (Karpenter v1.6.2's), kept apart from v1.14.1's of the same group and kind.
_KPO_NODEPOOL = yaml.safe_load((Path(__file__).parent / "schemas" / "oci" / "karpenter.sh_nodepools.yaml").read_text())
KPO_NODEPOOL_SCHEMA = _strict(_KPO_NODEPOOL["openAPIV3Schema"])
# V100 is the GPU whose VM shapes KPO v1.0.0 sells preemptible: a checkpointed job and a fine-tune on spot.
V100_WORK = [{"name": "v100-train", "kind": "training", "gpu": "V100", "checkpointing": True, "replicas": 2},
             {"name": "v100-tune", "kind": "fine-tuning", "gpu": "V100", "checkpointing": True}]


def oci_karpenter(workloads: list[dict], image: bool = True) -> str:
    doc = yaml.safe_load(spec_text(workloads, ("oci",)))
    settings = doc["targets"][0]["settings"]
    settings["provisioner"] = "karpenter"
    if image:
        settings["image_id"] = OKE_GPU_IMAGE
    return yaml.safe_dump(doc, sort_keys=False)


def node_pool(pool_name: str, pools: list[dict] = NODE_POOLS) -> dict:
    [found] = [o for o in pools if o["metadata"]["name"] == PLANNED.pool(pool_name).cloud_name]
    return found


def validate_kpo(obj: dict) -> None:
    """An object against KPO's CRDs: its NodePools against its v1.6.2 NodePool CRD, besides v1.14.1's."""
    validate(obj)
    if obj["kind"] == "NodePool":
        jsonschema.validate(obj, KPO_NODEPOOL_SCHEMA)


def node_class_cel(obj: dict) -> list[str]:
    """The CEL rules of the OCINodeClass CRD (x-kubernetes-validations, which jsonschema does not run)
    that gpustack's objects touch, re-stated."""
    spec = obj["spec"]
    problems = []
    image = spec["volumeConfig"]["bootVolumeConfig"]["imageConfig"]
    if ("imageId" in image) == ("imageFilter" in image):
        problems.append("must specify exactly one of ['imageFilter', 'imageId']")
    subnet = spec["networkConfig"]["primaryVnicConfig"]["subnetConfig"]
    if ("subnetId" in subnet) == ("subnetFilter" in subnet):
        problems.append("must specify exactly one of ['subnetFilter', 'subnetId']")
    for config in spec.get("capacityReservationConfigs", []):
        if ("capacityReservationId" in config) == ("capacityReservationFilter" in config):
            problems.append("must specify exactly one of ['capacityReservationFilter', 'capacityReservationId']")
        found = config.get("capacityReservationFilter", {})
        if found and not {"displayName", "freeformTags", "definedTags"} & set(found):
            problems.append("expected at least one, got none, ['displayName', 'freeformTags', 'definedTags']")
    if sum(1 for key in ("capacityReservationConfigs", "clusterPlacementGroupConfigs", "computeClusterConfig")
           if spec.get(key)) > 1:
        problems.append("At most one of capacityReservationConfigs, clusterPlacementGroupConfigs, or "
                        "computeClusterConfig may be set")
    return problems


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> list[Declared]:  # type: ignore[no-untyped-def]
    return cases.run_example(tmp_path_factory, oci_karpenter_example_text(), TARGET)


# -- the plan --------------------------------------------------------------------------------------
def test_each_pool_is_compiled_once_into_the_plan_as_kpo_spells_it():
    pools = cases.compiled_pools(PLAN, "karpenter", "node.kubernetes.io/instance-type")
    gpu_shape = {"key": "oci.oraclecloud.com/gpu-shape", "operator": "In", "values": ["true"]}
    assert all(gpu_shape in p["compiled"]["requirements"] for p in pools)
    assert all((p["compiled"]["boot_volume_gb"], p["compiled"]["image_id"]) == (p["disk"]["size_gib"], OKE_GPU_IMAGE)
               for p in pools)
    assert all(p["compiled"]["overlay_capacity"] == {} for p in pools)  # Karpenter v1.6.2 has no NodeOverlay


def test_the_node_class_pins_the_gpu_image_sizes_and_grows_the_boot_volume_and_tags_the_nodes():
    settings = dict(PLANNED.settings)
    for pool in PLANNED.pools:
        spec = NODE_CLASSES[pool.cloud_name]["spec"]
        boot = spec["volumeConfig"]["bootVolumeConfig"]
        assert boot["imageConfig"] == {"imageType": "OKEImage", "imageId": OKE_GPU_IMAGE}
        assert boot["sizeInGBs"] == pool.disk_gib
        # The root filesystem grows onto the whole volume before OKE's bootstrap (as on managed pools).
        assert base64.b64decode(spec["preBootstrapInitScript"]).decode() == "#!/bin/bash\n/usr/libexec/oci-growfs -y\n"
        assert spec["networkConfig"]["primaryVnicConfig"]["subnetConfig"] == {"subnetId": settings["subnet_id"]}
        assert spec["nodeCompartmentId"] == settings["compartment_id"]
        assert spec["freeformTags"] == pool.attribution


def test_a_reserved_floor_launches_only_into_its_tagged_reservation():
    floors = [p for p in PLANNED.pools if p.reserved_nodes]
    assert len(floors) == 3  # the example's three inference workloads, time-sliced (no MIG under KPO)
    for floor in floors:
        _assert_reserved_floor(floor, floors)


def _assert_reserved_floor(floor, floors) -> None:  # type: ignore[no-untyped-def]
    requirements = node_pool(floor.name)["spec"]["template"]["spec"]["requirements"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in requirements
    assert NODE_CLASSES[floor.cloud_name]["spec"]["capacityReservationConfigs"] == [{"capacityReservationFilter": {
        "compartmentId": dict(PLANNED.settings)["compartment_id"], "freeformTags": {RESERVATION_TAG: floor.cloud_name}}}]
    assert all("capacityReservationConfigs" not in c["spec"] for name, c in NODE_CLASSES.items()
               if name not in {f.cloud_name for f in floors})
    assert any("Karpenter keeps no minimum" in n for n in floor.notes)
    assert any("ReservedCapacity gate is on by default" in n for n in floor.notes)


def test_bare_metal_and_shapes_kpo_does_not_sell_preemptible_run_on_demand():
    # The example's checkpointed H100 training asks for spot: BM.GPU.H100.8 cannot be preemptible (OCI), and
    # the A10 job's VM.GPU.A10.1 is not among KPO's preemptible shapes.
    assert not [p for p in PLANNED.pools if p.capacity == "spot"]
    messages = " ".join(w.message for w in PLANNED.warnings)
    assert "bare-metal shapes such as BM.GPU.H100.8 cannot be preemptible" in messages
    assert "KPO v1.0.0 offers spot only for the shapes its shape metadata lists as preemptible" in messages
    assert "not VM.GPU.A10.1" in messages


def test_checkpointed_work_on_preemptible_shapes_runs_on_spot_with_okes_preemptible_taint():
    [target] = build_plan(load_text(oci_karpenter(V100_WORK), "spec.yaml")).targets
    spot = [p for p in target.pools if p.capacity == "spot"]
    assert spot and all(p.instance_type.startswith("VM.GPU3.") for p in spot)
    for pool in spot:
        assert ("oci.oraclecloud.com/oke-is-preemptible", "present", "NoSchedule") in \
            {(t.key, t.value, t.effect) for t in pool.taints}
    [group] = target.fallback_groups
    weights = {p.name: p.compiled.weight for p in target.pools}  # type: ignore[union-attr]
    assert all(weights[s] > weights[f] for s in group.spot for f in group.fallback)


def test_kpo_offers_every_nodepool_the_capacity_it_requires():
    for plan in (PLAN, build_plan(load_text(oci_karpenter(V100_WORK), "spec.yaml"))):
        [target] = plan.targets
        objects = in_cluster(plan, target).node_objects
        classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "OCINodeClass"}
        for obj in (o for o in objects if o["kind"] == "NodePool"):
            pool = next(p for p in target.pools if p.cloud_name == obj["metadata"]["name"])
            wanted = next(r["values"] for r in obj["spec"]["template"]["spec"]["requirements"]
                          if r["key"] == "karpenter.sh/capacity-type")
            node_class = classes[obj["spec"]["template"]["spec"]["nodeClassRef"]["name"]]
            offers = kpo.offered(obj, node_class, pool.instance_type, pool.gpus_per_node, pool.reserved_nodes)
            assert set(wanted) <= offers, (pool.name, wanted, offers)
            if pool.reserved_nodes:  # the floor's nodes fill the reservation: nothing is left for a replacement
                assert "reserved" not in kpo.offered(obj, node_class, pool.instance_type, pool.gpus_per_node, 0)
    # Without OKE's preemptible taint KPO would offer a spot NodePool nothing.
    [target] = build_plan(load_text(oci_karpenter(V100_WORK), "spec.yaml")).targets
    spot = next(p for p in target.pools if p.capacity == "spot")
    obj = next(o for o in in_cluster(build_plan(load_text(oci_karpenter(V100_WORK), "spec.yaml")), target).node_objects
               if o["kind"] == "NodePool" and o["metadata"]["name"] == spot.cloud_name)
    untainted = copy.deepcopy(obj)
    untainted["spec"]["template"]["spec"]["taints"] = [
        t for t in untainted["spec"]["template"]["spec"]["taints"] if t["key"] != "oci.oraclecloud.com/oke-is-preemptible"]
    assert "spot" not in kpo.offered(untainted, {"spec": {}}, spot.instance_type, spot.gpus_per_node)


def test_what_kpo_cannot_be_shown_is_warned_on_every_shared_pool():
    gaps = {w.pool: w.message for w in PLANNED.warnings if w.code == "template-gap"}
    shared = {p.name for p in PLANNED.pools if p.sharing.mode in ("mig", "time-slicing")}
    assert set(gaps) == shared
    assert all("no NodeOverlay" in m and "Karpenter v1.6.2" in m for m in gaps.values())
    assert not [o for o in RENDERED.node_objects if o["kind"] == "NodeOverlay"]


def test_without_a_pinned_image_the_spec_fails_with_a_located_error():
    workload = {"name": "train", "kind": "training", "gpu": "A100-80GB", "checkpointing": True}
    with pytest.raises(SpecError) as info:
        build_plan(load_text(oci_karpenter([workload], image=False), "spec.yaml"))
    text = str(info.value)
    assert "settings.image_id is required with provisioner 'karpenter'" in text and "imageFilter" in text
    assert "spec.yaml:" in text


def test_the_plan_says_kpo_provisions_and_not_the_autoscaler_add_on():
    assert any("Oracle's Karpenter provider (KPO) v1.0.0" in n for n in PLANNED.notes)
    assert not any("Cluster Autoscaler add-on" in n for n in PLANNED.notes)


def test_zones_are_spelled_as_kpo_labels_its_nodes():
    doc = yaml.safe_load(oci_karpenter(V100_WORK[:1]))
    doc["targets"][0]["settings"]["availability_domains"] = ["Uocm:US-ASHBURN-AD-1"]
    [target] = build_plan(load_text(yaml.safe_dump(doc), "spec.yaml")).targets
    [pool] = target.pools
    zone = next(r for r in pool.compiled.requirements if r.key == "topology.kubernetes.io/zone")  # type: ignore[union-attr]
    assert zone.values == ("US-ASHBURN-AD-1",)


# -- the objects against KPO's CRDs ----------------------------------------------------------------
def test_every_node_object_validates_against_kpos_crds():
    assert len(NODE_POOLS) == len(NODE_CLASSES) == len(PLANNED.pools)
    for obj in RENDERED.node_objects:
        validate_kpo(obj)
        assert (cel_problems(obj) if obj["kind"] == "NodePool" else node_class_cel(obj)) == []


def test_validation_would_catch_a_wrong_field_or_value():
    pool = copy.deepcopy(NODE_POOLS[0])
    pool["spec"]["disruption"]["consolidationPolicy"] = "Balanced"  # Karpenter v1.14's, not v1.6.2's
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(pool, KPO_NODEPOOL_SCHEMA)
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["volumeConfig"]["bootVolumeConfig"]["sizeInGBs"] = "500"
    with pytest.raises(jsonschema.ValidationError):
        validate(node_class)
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["networkConfig"]["primaryVnicConfig"]["subnetId"] = "x"
    with pytest.raises(jsonschema.ValidationError):
        validate(node_class)
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["volumeConfig"]["bootVolumeConfig"]["imageConfig"]["imageFilter"] = {
        "osFilter": "Oracle Linux", "osVersionFilter": "8"}
    assert node_class_cel(node_class)


def test_the_vendored_crds_name_their_release():
    schemas = Path(__file__).parent / "schemas"
    for path in (schemas / "oci.oraclecloud.com_ocinodeclasses.yaml", schemas / "oci" / "karpenter.sh_nodepools.yaml"):
        head = path.read_text(encoding="utf-8").split("group:")[0]
        assert "tag v1.0.0 (commit de2166eb420429501ee7c302b5cce2bc8f6ec873)" in head
        assert f"blob/de2166eb420429501ee7c302b5cce2bc8f6ec873/pkg/apis/crds/{path.name}" in head


# -- a pending pod of each workload (Karpenter's scheduling semantics, tests/cloudsim/karpenter.py) --
def admits(request, node_pool: dict) -> bool:  # type: ignore[no-untyped-def]
    """Whether the required node affinity gpustack wires into the workload (render/workloads.py `affinity`)
    admits the nodes of `node_pool` (their template labels, each an In requirement of one value)."""
    labels = node_pool["spec"]["template"]["metadata"]["labels"]
    terms = affinity(request, {p.name: p for p in PLANNED.pools})["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return any(all(e["operator"] == "In" and labels.get(e["key"]) in e["values"] for e in t["matchExpressions"])
               for t in terms)


def test_a_pending_pod_matches_exactly_its_own_pools_nodepools_and_no_other_kinds():
    kind_of = {p.cloud_name: p.kind for p in PLANNED.pools}
    for request in PLANNED.pod_requests:
        mine = {PLANNED.pool(name).cloud_name for name in request.pools}
        kind = {kind_of[name] for name in mine}
        shape = cases.without_requests(cases.pod(request))  # its node selector, tolerations and requirements only
        by_selector = {p["metadata"]["name"] for p in NODE_POOLS if sim.why_not(shape, p, ROWS) is None}
        assert mine <= by_selector and {kind_of[name] for name in by_selector} == kind, (request.workload, by_selector)
        # With the pool affinity the workload is wired with: its own NodePools, exactly.
        assert {n for n in by_selector if admits(request, node_pool_named(n))} == mine, request.workload


def node_pool_named(name: str) -> dict:
    [found] = [o for o in NODE_POOLS if o["metadata"]["name"] == name]
    return found


def test_whole_gpu_pods_launch_their_own_nodes_and_no_pod_asks_for_a_device_no_shape_offers():
    launches = {r.workload: [n for n in sim.launching(cases.pod(r), NODE_POOLS, ROWS) if admits(r, node_pool_named(n))]
                for r in PLANNED.pod_requests}
    whole = [r for r in PLANNED.pod_requests if all(PLANNED.pool(n).sharing.mode == "none" for n in r.pools)]
    assert whole
    for request in whole:
        assert launches[request.workload] == [PLANNED.pool(n).cloud_name for n in request.pools], request.workload
    # No NodeOverlay in Karpenter v1.6.2: no shape offers a MIG device, so a MIG pod would launch nothing.
    # MIG is a gap of the provisioner: the example's MIG inference is time-sliced at the same share, with a
    # warning, and every pod asks for what a shape offers, so each launches a node of its own pools.
    assert not [r for r in PLANNED.pod_requests if any(k.startswith("nvidia.com/mig-") for k, _ in r.resources)]
    assert {p.sharing.mode for p in PLANNED.pools} == {"none", "time-slicing"}
    assert any(w.code == "capability-gap" and "MIG" in w.message for w in PLANNED.warnings)
    for request in PLANNED.pod_requests:
        assert launches[request.workload], request.workload


def test_the_same_mig_spec_keeps_mig_on_okes_managed_node_pools():
    managed = build_plan(load_spec(EXAMPLE)).target("oci-prod")
    assert "mig" in {p.sharing.mode for p in managed.pools}


def test_a_fine_tune_launches_its_spot_pool_before_its_fallback():
    plan = build_plan(load_text(oci_karpenter(V100_WORK), "spec.yaml"))
    [target] = plan.targets
    pools = [o for o in in_cluster(plan, target).node_objects if o["kind"] == "NodePool"]
    rows = {row.name: row for row in load_catalog().in_region("oci", target.region)}
    request = next(r for r in target.pod_requests if r.workload == "v100-tune")
    tolerations = tuple({"key": t.key, "operator": "Exists", "effect": t.effect} for t in request.tolerations)
    launched = sim.launching(Pod(sim.pod_requests(dict(request.resources)), dict(request.node_selector), tolerations),
                             pools, rows)
    [group] = target.fallback_groups
    assert launched == [target.pool(group.spot[0]).cloud_name, target.pool(group.fallback[0]).cloud_name]


# -- the Pulumi program -----------------------------------------------------------------------------
def test_pulumi_declares_the_rendered_node_objects_and_no_node_pool_or_add_on(declared):
    cases.assert_declares_the_rendered_node_objects(declared, RENDERED, "gpustack:oci:GpuNodePool")
    assert not [r for r in declared if r.type.startswith(("oci:ContainerEngine/nodePool", "oci:ContainerEngine/addon"))]


def test_pulumi_declares_the_floor_reservation_the_node_class_selects(declared):
    floors = {p.cloud_name: p for p in PLANNED.pools if p.reserved_nodes}
    declared_reservations = [r.inputs for r in declared
                             if r.type == "oci:Core/computeCapacityReservation:ComputeCapacityReservation"]
    assert len(declared_reservations) == len(floors) == 3  # one per floor, each tagged for its node class
    for inputs in declared_reservations:
        floor = floors[inputs["freeformTags"][RESERVATION_TAG]]
        assert (inputs["compartmentId"], inputs["availabilityDomain"]) == (
            dict(PLANNED.settings)["compartment_id"], "Uocm:US-ASHBURN-AD-1")
        assert [(c["instanceShape"], c["reservedCount"]) for c in inputs["instanceReservationConfigs"]] == [
            (floor.instance_type, str(floor.reserved_nodes))]
    assert all(isinstance(p.compiled, OCIKarpenterPool) for p in PLANNED.pools)  # frozen values in the plan


def test_without_a_kubeconfig_the_program_stops_with_a_message(tmp_path):
    cases.assert_stops_without_a_kubeconfig(tmp_path, oci_karpenter_example_text(), TARGET)


# -- guardrails read the NodePools ------------------------------------------------------------------
_views = cases.views


def test_guardrails_read_each_nodepool_as_an_oke_pool(declared):
    cases.assert_views_are_the_pools(declared, PLANNED, "karpenter")  # OKE's: told from EKS's by nodeClassRef


def test_guardrails_pass_the_rendered_nodepools_and_flag_spot_only_inference(declared):
    views = _views(declared)
    assert cases.guardrail_findings(TARGET, views)[0] == []
    broken = [dataclasses.replace(v, capacities=frozenset({"spot"})) if v.kind == "inference" else
              dataclasses.replace(v, taints=()) if v.kind == "training" else v for v in views]
    assert cases.guardrail_findings(TARGET, broken)[1] >= {"gpu-pool-taint", "inference-pool-not-spot-only"}


# -- golden files ---------------------------------------------------------------------------------
@pytest.mark.golden
def test_rendered_files_and_program_resources_match_golden(declared):
    cases.assert_rendered_golden(RENDERED, TARGET)
    cases.assert_program_golden(TARGET, "the example's oci target provisioned by Oracle's Karpenter provider "
                                "(tests/conftest.py oci_karpenter_example_text)", declared)


# -- day 2 ---------------------------------------------------------------------------------------
def test_every_nodepool_launches_its_planned_maximum_under_karpenters_limit_rule():
    cases.assert_every_nodepool_launches_its_maximum(PLANNED, NODE_POOLS, ROWS)


def test_the_floors_keep_their_nodes_through_a_new_image_an_upgrade_and_an_expiry():
    checked = cases.assert_floors_and_unprotected_training_keep_their_nodes(PLANNED, NODE_POOLS, NODE_CLASSES, ROWS)
    floors = [p for p in PLANNED.pools if p.reserved_nodes]
    assert floors
    for floor in floors:
        assert floor.name in checked and floor.upgrade is None
        obj = next(o for o in NODE_POOLS if o["metadata"]["name"] == floor.cloud_name)
        assert obj["spec"]["template"]["spec"]["expireAfter"] == "Never"
        assert any(w.code == "floor-upgrade" and w.pool == floor.name for w in PLANNED.warnings)
    cases.assert_default_disruption_loses_or_strands_the_floors(PLANNED, NODE_POOLS, NODE_CLASSES, ROWS)
