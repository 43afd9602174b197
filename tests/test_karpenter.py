"""EKS with Karpenter (`settings.provisioner: karpenter`): per pool a NodePool and an EC2NodeClass,
valid against Karpenter v1.14.1's CRDs, rendered for GitOps and declared by the Pulumi program, and a
pending pod of each workload launches only NodePools of its own pools."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import jsonschema
import pytest
import yaml

import provisioner_cases as cases
from cloudsim import karpenter as sim
from conftest import TARGETS, karpenter_example_text, spec_text
from gpustack.catalog import load_catalog
from gpustack.clouds import CLOUDS
from gpustack.clouds.aws.karpenter import (
    AMI_ALIAS,
    NOTEBOOK_EMPTY_DELAY,
    RESERVATION_TAG,
    WEIGHTS,
    KarpenterPool,
)
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.spec import load_text
from gpustack.testing import Declared, run_program
from test_render import validate

TARGET = "aws-karpenter"
PLAN = build_plan(load_text(karpenter_example_text(), "karpenter.yaml"))
[PLANNED] = PLAN.targets
RENDERED = in_cluster(PLAN, PLANNED)
NODE_POOLS = [o for o in RENDERED.node_objects if o["kind"] == "NodePool"]
NODE_CLASSES = {o["metadata"]["name"]: o for o in RENDERED.node_objects if o["kind"] == "EC2NodeClass"}
OVERLAYS = [o for o in RENDERED.node_objects if o["kind"] == "NodeOverlay"]
ROWS = {row.name: row for row in load_catalog().in_region("aws", PLANNED.region)}


def node_pool(pool_name: str) -> dict:
    [found] = [o for o in NODE_POOLS if o["metadata"]["name"] == PLANNED.pool(pool_name).cloud_name]
    return found


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> list[Declared]:  # type: ignore[no-untyped-def]
    return cases.run_example(tmp_path_factory, karpenter_example_text(), TARGET)


# -- the plan --------------------------------------------------------------------------------------
def test_each_pool_is_compiled_once_into_the_plan_as_karpenter_spells_it():
    for pool in cases.compiled_pools(PLAN, "karpenter", "node.kubernetes.io/instance-type"):
        compiled = pool["compiled"]
        assert compiled["root_volume_size"] == f"{pool['disk']['size_gib']}Gi"


def test_limits_are_what_the_pools_maximum_of_nodes_offers_and_weights_try_reserved_then_spot_then_on_demand():
    for pool in PLANNED.pools:
        limits = node_pool(pool.name)["spec"]["limits"]
        assert limits["nodes"] == str(pool.max_nodes)
        offers = dict(pool.node_offers)
        assert limits["nvidia.com/gpu"] == str(pool.max_nodes * max(offers.get("nvidia.com/gpu", 0), pool.gpus_per_node))
        for name, count in offers.items():  # what the NodeOverlay says a node offers, times the nodes
            assert int(limits[name]) >= pool.max_nodes * count
        assert float(limits["cpu"]) == pool.max_nodes * pool.vcpus_per_node
        assert limits["memory"] == f"{pool.max_nodes * pool.memory_gib_per_node:g}Gi"
    [group] = PLANNED.fallback_groups
    [spot], [fallback] = group.spot, group.fallback
    assert node_pool(spot)["spec"]["weight"] > node_pool(fallback)["spec"]["weight"]
    assert WEIGHTS["reserved"] > WEIGHTS["spot"] > WEIGHTS["on-demand"]


def test_disruption_follows_what_the_nodes_carry():
    by_role = {(p.kind, p.role, dict(p.labels).get("gpustack.dev/checkpointing")): node_pool(p.name)["spec"]["disruption"]
               for p in PLANNED.pools}
    notebook = by_role[("notebook", "main", None)]
    assert (notebook["consolidationPolicy"], notebook["consolidateAfter"]) == ("WhenEmpty", NOTEBOOK_EMPTY_DELAY)
    floor = by_role[("inference", "floor", None)]
    assert {"nodes": "0", "reasons": ["Empty", "Underutilized"]} in floor["budgets"]
    assert {"nodes": "0", "reasons": ["Drifted"]} in floor["budgets"]  # its reservation has no room to replace
    assert by_role[("inference", "burst", None)]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert by_role[("training", "main", "true")]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert by_role[("training", "main", "false")]["consolidationPolicy"] == "WhenEmpty"  # a restart loses the run


def test_a_reserved_floor_launches_only_into_its_tagged_reservation():
    [floor] = [p for p in PLANNED.pools if p.reserved_nodes]
    requirements = node_pool(floor.name)["spec"]["template"]["spec"]["requirements"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in requirements
    node_class = NODE_CLASSES[floor.cloud_name]["spec"]
    assert node_class["capacityReservationSelectorTerms"] == [{"tags": {RESERVATION_TAG: floor.cloud_name}}]
    assert all("capacityReservationSelectorTerms" not in c["spec"] for name, c in NODE_CLASSES.items()
               if name != floor.cloud_name)
    assert any("Karpenter keeps no minimum" in note for note in floor.notes)


def test_the_node_class_carries_the_gpu_ami_alias_disk_tags_and_cluster_discovery():
    for pool in PLANNED.pools:
        spec = NODE_CLASSES[pool.cloud_name]["spec"]
        assert spec["amiSelectorTerms"] == [{"alias": AMI_ALIAS}]
        [root] = spec["blockDeviceMappings"]
        assert root["rootVolume"] and root["ebs"]["volumeSize"] == f"{pool.disk_gib}Gi" and root["ebs"]["encrypted"]
        assert spec["tags"] == pool.attribution  # attribution on instances, volumes and launch templates
        assert spec["subnetSelectorTerms"] == [{"id": s} for s in dict(PLANNED.settings)["subnet_ids"]]  # type: ignore[union-attr]
        assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": PLANNED.cluster}}]
        assert spec["role"] == f"KarpenterNodeRole-{PLANNED.cluster}"


def test_schedules_are_a_plan_note_the_auto_stop_cronjobs_carry_out():
    [notebook] = [p for p in PLANNED.pools if p.schedule is not None]
    assert any("Karpenter has no schedule" in n and "consolidateAfter" in n for n in notebook.notes)
    cronjobs = [o for o in RENDERED.objects if o["kind"] == "CronJob"]
    assert cronjobs and all(notebook.name in json.dumps(c) for c in cronjobs)


def test_what_karpenter_cannot_be_shown_is_warned_even_with_a_floor():
    gaps = {w.pool for w in PLANNED.warnings if w.code == "template-gap"}
    shared = {p.name for p in PLANNED.pools if p.sharing.mode in ("mig", "time-slicing")}
    assert gaps == shared
    [floor] = [p for p in PLANNED.pools if p.reserved_nodes]
    assert floor.min_nodes > 0 and floor.name in gaps


def test_a_label_karpenter_restricts_is_a_located_error():
    workload = {"name": "train", "kind": "training", "gpu": "A100-80GB", "checkpointing": True,
                "labels": {"karpenter.sh/team": "a"}}
    text = spec_text([workload]).replace("    subnet_ids:", "    provisioner: karpenter\n    subnet_ids:")
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml"))
    assert "label 'karpenter.sh/team' is in a domain a NodePool template may not set" in str(info.value)


# -- the objects against the CRDs of v1.14.1 ------------------------------------------------------
def cel_problems(obj: dict) -> list[str]:
    """The CEL rules of the CRDs (x-kubernetes-validations, which jsonschema does not run) that
    gpustack's objects touch, re-stated."""
    spec = obj["spec"]
    problems = []
    if obj["kind"] == "NodePool":
        problems.extend(cases.nodepool_cel_problems(obj)[0])
    elif obj["kind"] == "NodeOverlay":
        if any(key in ("cpu", "memory", "ephemeral-storage", "pods") for key in spec.get("capacity", {})):
            problems.append("invalid resource restricted")
        for req in spec["requirements"]:
            if req["operator"] in ("In", "NotIn") and not req["values"]:
                problems.append(f"requirements with operator '{req['operator']}' must have a value defined")
        if "price" in spec and "priceAdjustment" in spec:
            problems.append("cannot set both 'price' and 'priceAdjustment'")
    else:
        if ("role" in spec) == ("instanceProfile" in spec):
            problems.append("must specify exactly one of ['role', 'instanceProfile']")
        [term] = spec["amiSelectorTerms"]
        family = term["alias"].split("@")[0]
        if family not in ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025"):
            problems.append("family is not supported")
        if not spec["subnetSelectorTerms"] or not spec["securityGroupSelectorTerms"]:
            problems.append("selector terms cannot be empty")
        for key in spec.get("tags", {}):
            if key in ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                       "karpenter.k8s.aws/ec2nodeclass") or key.startswith("kubernetes.io/cluster"):
                problems.append(f"tag {key} is restricted")
        terms = spec.get("capacityReservationSelectorTerms", []) + spec["securityGroupSelectorTerms"]
        if any("" in t.get("tags", {}) or "" in t.get("tags", {}).values() for t in terms):
            problems.append("empty tag keys or values aren't supported")
        if sum(1 for m in spec["blockDeviceMappings"] if m.get("rootVolume")) > 1:
            problems.append("must have only one blockDeviceMappings with rootVolume")
    return problems


def test_every_node_object_validates_against_the_karpenter_crds():
    cases.assert_node_objects_valid(RENDERED, PLANNED, "EC2NodeClass", cel_problems)


def test_validation_would_catch_a_wrong_field_or_value():
    pool = copy.deepcopy(NODE_POOLS[0])
    pool["spec"]["disruption"]["consolidationPolicy"] = "WhenIdle"
    with pytest.raises(jsonschema.ValidationError):
        validate(pool)
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = "500GiB"
    with pytest.raises(jsonschema.ValidationError):
        validate(node_class)
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["amiSelectorTerm"] = node_class["spec"].pop("amiSelectorTerms")
    with pytest.raises(jsonschema.ValidationError):
        validate(node_class)
    pool = copy.deepcopy(NODE_POOLS[0])
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.sh/nodepool"] = "x"
    assert cel_problems(pool)
    overlay = copy.deepcopy(OVERLAYS[0])
    overlay["spec"]["capacity"]["nvidia.com/gpu"] = "four"
    with pytest.raises(jsonschema.ValidationError):
        validate(overlay)
    overlay["spec"]["capacity"] = {"cpu": "4"}
    assert cel_problems(overlay)


# -- a pending pod of each workload (Karpenter's scheduling semantics, tests/cloudsim/karpenter.py) --
def test_a_pending_pod_matches_its_own_pools_nodepools_and_no_other_kinds():
    cases.assert_each_pod_matches_its_pools_and_no_other_kind(PLANNED, NODE_POOLS, ROWS)


def test_pods_launch_their_nodes_spot_first_and_mig_pods_through_their_overlays():
    launches = {r.workload: sim.launching(cases.pod(r), NODE_POOLS, ROWS, OVERLAYS) for r in PLANNED.pod_requests}
    cloud = {p.name: p.cloud_name for p in PLANNED.pools}
    [group] = PLANNED.fallback_groups
    [spot], [fallback] = group.spot, group.fallback
    assert launches["llm-finetune"] == [cloud[spot], cloud[fallback]]
    # The non-checkpointed job does not tolerate spot: only on-demand training NodePools take it.
    assert launches["ranker-train"] and all(
        PLANNED.pool(n).capacity == "on-demand" for n in request_pools(launches["ranker-train"]))
    mig = {r.workload for r in PLANNED.pod_requests if any(k.startswith("nvidia.com/mig-") for k, _ in r.resources)}
    [floor] = [p for p in PLANNED.pools if p.reserved_nodes]
    for request in (r for r in PLANNED.pod_requests if r.workload in mig):  # the floor first, then its burst
        assert launches[request.workload][0] == floor.cloud_name
        assert set(request_pools(launches[request.workload])) == set(request.pools)
    # Without the NodeOverlay gate no instance type offers a MIG device: nothing launches, as warned.
    assert mig and all(sim.launching(cases.pod(r), NODE_POOLS, ROWS) == [] for r in PLANNED.pod_requests if r.workload in mig)
    warned = {w.pool for w in PLANNED.warnings if w.code == "template-gap"}
    assert all(set(r.pools) <= warned for r in PLANNED.pod_requests if r.workload in mig)


def test_an_overlay_offers_exactly_what_a_node_offers_and_only_to_its_own_nodepool():
    shared = [p for p in PLANNED.pools if p.sharing.mode in ("mig", "time-slicing")]
    assert {o["metadata"]["name"] for o in OVERLAYS} == {p.cloud_name for p in shared}
    for pool in PLANNED.pools:
        row = ROWS[pool.instance_type]
        offers = sim.offered(row, node_pool(pool.name), OVERLAYS)
        for name, count in pool.node_offers:
            assert offers[name] == count, (pool.name, name)
    whole = next(p for p in PLANNED.pools if p.sharing.mode == "none" and p.instance_type == "p4de.24xlarge")
    assert sim.offered(ROWS["p4de.24xlarge"], node_pool(whole.name), OVERLAYS)["nvidia.com/gpu"] == 8


def request_pools(names: list[str]) -> list[str]:
    by_cloud = {p.cloud_name: p.name for p in PLANNED.pools}
    return [by_cloud[n] for n in names]


def test_the_matcher_refuses_a_nodepool_without_the_kind_label_or_taint_toleration():
    request = next(r for r in PLANNED.pod_requests if r.workload == "ranker-train")
    own = node_pool(request.pools[0])
    assert sim.why_not(cases.pod(request), own, ROWS) is None
    unlabelled = copy.deepcopy(own)
    del unlabelled["spec"]["template"]["metadata"]["labels"]["gpustack.dev/kind"]
    assert "does not have known values" in (sim.why_not(cases.pod(request), unlabelled, ROWS) or "")
    tainted = copy.deepcopy(own)
    tainted["spec"]["template"]["spec"]["taints"].append({"key": "gpustack.dev/spot", "value": "true",
                                                          "effect": "NoSchedule"})
    assert "did not tolerate" in (sim.why_not(cases.pod(request), tainted, ROWS) or "")


# -- the Pulumi program -----------------------------------------------------------------------------
def test_pulumi_declares_the_rendered_node_objects_and_no_node_group(declared):
    cases.assert_declares_the_rendered_node_objects(declared, RENDERED, "gpustack:aws:GpuNodePool")
    assert not [r for r in declared if r.type.startswith(("aws:eks/", "aws:autoscaling/", "aws:ec2/launchTemplate"))]


def test_pulumi_declares_the_floor_reservation_the_node_class_selects(declared):
    [floor] = [p for p in PLANNED.pools if p.reserved_nodes]
    [reservation] = [r for r in declared if r.type == "aws:ec2/capacityReservation:CapacityReservation"]
    assert reservation.inputs["tags"][RESERVATION_TAG] == floor.cloud_name
    assert reservation.inputs["instanceCount"] == floor.reserved_nodes
    assert reservation.inputs["instanceMatchCriteria"] == "targeted"


def test_without_a_kubeconfig_the_program_stops_with_a_message(tmp_path):
    spec = tmp_path / "gpustack.yaml"
    spec.write_text(karpenter_example_text(), encoding="utf-8")
    with pytest.raises(Exception, match="gpustack:kubeconfig"):
        run_program(str(spec), TARGET)


def test_compiled_values_are_frozen_dataclasses():
    for pool in PLANNED.pools:
        assert isinstance(pool.compiled, KarpenterPool)


# -- golden files ---------------------------------------------------------------------------------
@pytest.mark.golden
def test_rendered_files_match_golden():
    cases.assert_rendered_golden(RENDERED, TARGET)


@pytest.mark.golden
def test_program_resources_match_golden(declared):
    cases.assert_program_golden(TARGET, "the example's aws target provisioned by Karpenter "
                                "(tests/conftest.py karpenter_example_text)", declared)


def test_the_vendored_crds_name_their_release():
    for name in ("karpenter.sh_nodepools.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml", "karpenter.sh_nodeoverlays.yaml"):
        head = (Path(__file__).parent / "schemas" / name).read_text(encoding="utf-8").split("group:")[0]
        assert "tag v1.14.1" in head and f"blob/v1.14.1/pkg/apis/crds/{name}" in head


# -- guardrails read the NodePools ------------------------------------------------------------------
def test_guardrails_read_each_nodepool_as_its_pool(declared):
    cases.assert_views_are_the_pools(declared, PLANNED, "karpenter")


def test_guardrails_pass_the_rendered_nodepools_and_flag_a_broken_one(declared):
    cases.assert_guardrails_pass_and_catch_an_untainted_pool(declared, TARGET)


# -- day 2 ---------------------------------------------------------------------------------------
def test_every_nodepool_launches_its_planned_maximum_under_karpenters_limit_rule():
    cases.assert_every_nodepool_launches_its_maximum(PLANNED, NODE_POOLS, ROWS, OVERLAYS)


def test_a_limit_of_gpus_times_nodes_launched_no_time_sliced_node_once_the_overlay_is_read():
    """The defect the limit rule hid: 3 GPUs for 3 nodes, each overlaid to offer 4 time-sliced replicas."""
    pool = next(p for p in PLANNED.pools if p.sharing.mode == "time-slicing")
    old = copy.deepcopy(node_pool(pool.name))
    old["spec"]["limits"]["nvidia.com/gpu"] = str(pool.max_nodes * pool.gpus_per_node)
    request = cases.pod_of(PLANNED, pool)
    assert sim.launchable(cases.pod(request), old, ROWS, OVERLAYS) == 0
    reason, _ = sim.launch(cases.pod(request), old, ROWS, OVERLAYS)
    assert reason == "all available instance types exceed limits for nodepool"
    assert sim.launchable(cases.pod(request), old, ROWS) == pool.max_nodes  # the gate off: each node counts its GPUs
    assert sim.launchable(cases.pod(request), node_pool(pool.name), ROWS, OVERLAYS) == pool.max_nodes


def test_karpenter_sees_the_instance_memory_less_its_vm_overhead_and_the_plan_fits_what_it_sees():
    g4dn = sim.capacity(ROWS["g4dn.2xlarge"], NODE_POOLS[0])
    assert g4dn["memory"] / sim.MIB == 32768 - math.ceil(32768 * 0.075)  # 30,310 Mi, not 32,768
    for pool in PLANNED.pools:
        seen = sim.offered(ROWS[pool.instance_type], node_pool(pool.name), OVERLAYS)
        planned_mib = int(dict(pool.node_allocatable)["memory"].removesuffix("Mi"))
        assert planned_mib == math.floor(seen["memory"] / sim.MIB), pool.name  # the plan is what Karpenter sees
    row = ROWS["g4dn.2xlarge"]
    managed = CLOUDS.get("aws").provisioner("managed").template_node(row)
    karpenter = CLOUDS.get("aws").provisioner("karpenter").template_node(row)
    assert managed.memory_gib - karpenter.memory_gib == pytest.approx(math.ceil(32768 * 0.075) / 1024)


def test_a_memory_tight_pod_is_planned_on_a_node_karpenter_believes_it_fits():
    """A replica asking for the managed node group's allocatable memory of a g4dn.2xlarge fits there, not in what
    Karpenter believes: the Karpenter plan picks a larger node, on which Karpenter launches it."""
    managed = CLOUDS.get("aws").provisioner("managed").template_node(ROWS["g4dn.2xlarge"])
    ask = f"{math.floor((managed.memory_gib - 1) * 1024)}Mi"
    workload = {"name": "tight", "kind": "training", "gpu": "T4", "memory": ask, "checkpointing": True}
    for provisioner in ("managed", "karpenter"):
        target = {**TARGETS["aws"], "settings": {**TARGETS["aws"]["settings"], "provisioner": provisioner}}
        doc = yaml.safe_load(spec_text([workload]))
        doc["targets"] = [target]
        plan = build_plan(load_text(yaml.safe_dump(doc), "spec.yaml"))
        [planned] = plan.targets
        [pool] = planned.pools
        if provisioner == "managed":
            assert pool.instance_type == "g4dn.2xlarge"
            continue
        assert pool.instance_type != "g4dn.2xlarge"
        nodes = [o for o in in_cluster(plan, planned).node_objects if o["kind"] == "NodePool"]
        [request] = planned.pod_requests
        rows = {r.name: r for r in load_catalog().in_region("aws", planned.region)}
        assert sim.launchable(cases.pod(request), nodes[0], rows) == pool.max_nodes
        pinned = copy.deepcopy(nodes[0])  # the same pod against a NodePool pinned to g4dn.2xlarge: no node
        pinned["spec"]["template"]["spec"]["requirements"][0]["values"] = ["g4dn.2xlarge"]
        assert sim.launch(cases.pod(request), pinned, rows)[0] is not None


def test_floors_and_training_without_checkpoints_keep_their_nodes_through_drift_expiry_and_upgrade():
    checked = cases.assert_floors_and_unprotected_training_keep_their_nodes(PLANNED, NODE_POOLS, NODE_CLASSES, ROWS)
    assert any(PLANNED.pool(n).role == "floor" for n in checked)
    assert any(PLANNED.pool(n).kind == "training" for n in checked)
    cases.assert_default_disruption_loses_or_strands_the_floors(PLANNED, NODE_POOLS, NODE_CLASSES, ROWS)


def test_floors_have_no_upgrade_settings_and_a_warning_prices_the_headroom():
    warned = {w.pool: w.message for w in PLANNED.warnings if w.code == "floor-upgrade"}
    for pool in (p for p in PLANNED.pools if p.reserved_nodes):
        assert pool.upgrade is None
        assert f"${pool.price.usd_per_node_hour * 730:,.2f} a month" in warned[pool.name]
        assert PLAN.to_dict()["targets"][0]["pools"][PLANNED.pools.index(pool)]["upgrade"] is None


def test_unprotected_training_pods_carry_do_not_disrupt_and_a_grace_period():
    [ranker_json] = [r for r in PLAN.to_dict()["targets"][0]["pod_requests"] if r["workload"] == "ranker-train"]
    assert ranker_json["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert ranker_json["termination_grace_period_seconds"] == 600
    for request in PLANNED.pod_requests:
        unprotected = request.kind in ("training", "fine-tuning") and not request.checkpointing
        assert (("karpenter.sh/do-not-disrupt", "true") in request.annotations) == unprotected, request.workload
        assert (request.termination_grace_seconds is not None) == unprotected
    # A drift while the job runs: with the annotation Karpenter leaves its node alone; without it, it tries.
    request = next(r for r in PLANNED.pod_requests if r.workload == "ranker-train")
    [pool] = [PLANNED.pool(n) for n in request.pools if PLANNED.pool(n).capacity == "on-demand"][:1]
    obj = node_pool(pool.name)
    node_class = NODE_CLASSES[pool.cloud_name]
    kept, why = sim.day_two("upgrade", obj, node_class, cases.pod(request), ROWS, 1, None, dict(request.annotations))
    assert kept == 1 and "do-not-disrupt" in why
    assert "do-not-disrupt" not in sim.day_two("upgrade", obj, node_class, cases.pod(request), ROWS, 1, None)[1]


def test_render_workloads_protects_unprotected_training_and_check_manifests_flags_its_absence():
    from strategic_merge import pod_spec

    patched = cases.patched_objects(PLANNED)
    assert cases.manifest_findings(PLANNED, list(patched.values())) == []
    job = patched["ranker-train"]
    template = job["spec"]["template"]
    assert template["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    [ranker] = [r for r in PLANNED.pod_requests if r.workload == "ranker-train"]
    assert pod_spec(job)["terminationGracePeriodSeconds"] == ranker.termination_grace_seconds
    assert "annotations" not in patched["llm-finetune"]["spec"]["template"]["metadata"]  # it resumes: may move
    del template["metadata"]["annotations"]
    del pod_spec(job)["terminationGracePeriodSeconds"]
    found = [f for f in cases.manifest_findings(PLANNED, list(patched.values())) if f.workload == "ranker-train"]
    assert {f.level for f in found} == {"error", "warning"}
    assert any("karpenter.sh/do-not-disrupt" in f.fix and f.path.endswith("annotations") for f in found)
    assert any(f.path.endswith("terminationGracePeriodSeconds") for f in found)
