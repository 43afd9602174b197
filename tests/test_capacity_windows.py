"""capacity: block (EC2 Capacity Blocks) and capacity: flex (GKE flex-start): the spec, the plan and its
ladder, the Pulumi resources under mocks with the real SDKs, the Kubernetes objects against their CRDs,
and a block's end simulated (docs/capacity.md)."""

from __future__ import annotations

import copy
import datetime
import json
from typing import Any

import jsonschema
import pytest
import yaml

from cloudsim import capacity_block as sim
from conftest import TARGETS
from gpustack.clouds.aws import mocks as aws_mocks
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.plan.model import Plan, TargetPlan
from gpustack.render import in_cluster
from gpustack.spec import load_text
from gpustack.testing import Declared, run_program
from test_render import validate

KUBECONFIG = {"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"}
BLOCK = {"zone": "us-east-1b", "instance_type": "p5.48xlarge", "instances": 2, "start": "2026-12-07T11:30:00Z",
         "days": 7, "reservation_id": "cr-0123456789abcdef0", "upfront_usd": 14000}
PRETRAIN = {"name": "pretrain", "kind": "training", "gpu": "H100", "gpus": 8, "replicas": 2, "checkpointing": True,
            "capacity": "block", "block": BLOCK}
TUNE = {"name": "tune", "kind": "fine-tuning", "gpu": "H100", "gpus": 8, "replicas": 1, "checkpointing": True,
        "capacity": "flex", "flex": {"max_run_hours": 48, "queued": True}, "hours_per_month": 200}


def spec(workloads: list[dict[str, Any]], *targets: dict[str, Any], **top: Any) -> str:
    doc = {"version": 1, "name": "t", "targets": list(targets), "workloads": workloads, **top}
    return yaml.safe_dump(doc, sort_keys=False)


def aws(name: str = "aws-t", **settings: Any) -> dict[str, Any]:
    target = copy.deepcopy(TARGETS["aws"])
    target["name"] = name
    target["settings"] = {"subnet_ids": ["subnet-0a1b", "subnet-0c2d", "subnet-0e3f"], **settings}
    return target


def gcp(name: str = "gcp-t", **settings: Any) -> dict[str, Any]:
    target = copy.deepcopy(TARGETS["gcp"])
    target["name"] = name
    target["settings"].update(settings)
    return target


def plan_of(text: str) -> Plan:
    return build_plan(load_text(text, "capacity.yaml"))


def errors(text: str) -> str:
    with pytest.raises(SpecError) as info:
        plan_of(text)
    return str(info.value)


def with_block(**changes: Any) -> dict[str, Any]:
    workload = copy.deepcopy(PRETRAIN)
    workload["block"].update(changes)
    for key, value in changes.items():
        if value is None:
            del workload["block"][key]
    return workload


# -- the spec ------------------------------------------------------------------------------------
def test_block_durations_instances_and_ids_are_what_aws_sells():
    message = errors(spec([with_block(days=15)], aws()))
    assert "workloads[0].block.days" in message and "15 days is not a duration EC2 sells" in message
    assert "the nearest are 14 and 21" in message
    assert "capacity.yaml:" in message  # located
    assert "block.instances" in errors(spec([with_block(instances=65)], aws()))
    assert "exactly one of reservation_id" in errors(spec([with_block(offering_id="cb-0123456789abcdef0")], aws()))
    assert "exactly one of upfront_usd" in errors(spec([with_block(upfront_usd=None)], aws()))
    assert "is not in the format EC2 gives a reservation id" in errors(spec([with_block(reservation_id="cb-0123456789abcdef0")], aws()))
    assert "runs at most 168 hours" in errors(spec([{**TUNE, "flex": {"max_run_hours": 200}}], gcp()))


def test_a_block_or_flex_job_without_checkpointing_is_a_located_error():
    workload = {**PRETRAIN, "checkpointing": False}
    message = errors(spec([workload], aws()))
    assert "workloads[0].block" in message and "30 minutes before the end" in message
    message = errors(spec([{**TUNE, "checkpointing": False}], gcp()))
    assert "workloads[0].capacity" in message and "set checkpointing: true" in message


def test_time_boxed_capacity_is_for_jobs_only():
    serving = {"name": "chat", "kind": "inference", "gpu": "H100", "gpus": 8, "capacity": "flex"}
    assert "capacity: flex is for training and fine-tuning" in errors(spec([serving], gcp()))


def test_clouds_without_the_capacity_report_a_gap_naming_what_they_offer():
    assert "EKS has no flex-start capacity" in errors(spec([TUNE], aws()))
    assert "GKE has no capacity blocks" in errors(spec([PRETRAIN], gcp()))
    for cloud in ("azure", "oci"):
        message = errors(spec([TUNE], TARGETS[cloud]))
        assert "workloads[0].capacity" in message
        assert "open-ended" in message and "capacity reservation" in message


def test_a_block_outside_the_targets_region_or_of_another_gpu_is_located():
    assert "workloads[0].block.zone" in errors(spec([with_block(zone="eu-west-1a")], aws()))
    assert "workloads[0].block.instance_type" in errors(spec([with_block(instance_type="g5.xlarge")], aws()))
    message = errors(spec([{**PRETRAIN, "replicas": 3}], aws()))
    assert "workloads[0].block.instances" in message and "need 3 at peak" in message


# -- the plan and its ladder ------------------------------------------------------------------------
def block_target(provisioner: str = "managed") -> TargetPlan:
    [target] = plan_of(spec([PRETRAIN], aws(provisioner=provisioner))).targets
    return target


def test_a_block_pool_is_the_block_paid_up_front_and_never_refunded():
    target = block_target()
    [pool] = [p for p in target.pools if p.capacity == "block"]
    assert pool.block is not None and pool.block.refundable is False
    assert (pool.min_nodes, pool.max_nodes, pool.zones) == (0, 2, ("us-east-1b",))
    assert pool.monthly_cost_usd == pytest.approx(14000)
    assert pool.block.end == "2026-12-14T11:30:00Z" and pool.block.nodes_leave_minutes_before_end == 30
    assert "never refunded" in " ".join(pool.notes) and "30 minutes before the block ends" in " ".join(pool.notes)
    assert "go away 30 minutes before the end" in pool.reason  # the plan's why
    out = json.loads(plan_of(spec([PRETRAIN], aws())).to_json())["targets"][0]
    [shown] = [p for p in out["pools"] if p["capacity"] == "block"]
    assert shown["block"]["upfront_usd"] == 14000 and shown["block"]["refundable"] is False


def test_the_ladder_tries_the_block_then_on_demand_and_the_range_covers_its_worst_case():
    target = block_target()
    [ladder] = target.ladders
    assert [r.capacity for r in ladder.rungs] == ["block", "on-demand"]
    assert ladder.rungs[0].billing.startswith("upfront")
    on_demand = ladder.rungs[1]
    assert on_demand.role == "fallback" and on_demand.monthly_usd == pytest.approx(55.04 * 2 * 730)
    assert ladder.worst_case_monthly_usd == pytest.approx(14000 + on_demand.monthly_usd)
    assert target.cost.range.high >= ladder.worst_case_monthly_usd - 0.01
    assert target.cost.range.low == pytest.approx(14000)  # the fee is paid whatever runs


def test_the_fallback_note_names_the_rung_it_backs_and_asks_no_spot_toleration_for_a_block_or_flex():
    cases = {"capacity-block": block_target(), "flex-start": plan_of(spec([TUNE], gcp())).targets[0]}
    for rung, target in cases.items():
        [note] = [n for n in target.notes if n.startswith("Fallback pool(s)")]
        assert f"back {rung} pool(s)" in note and f"only when {rung} capacity is short" in note
        assert "spot" not in note.split("(docs/fallback.md")[0]
    spot_tune = {"name": "tune", "kind": "fine-tuning", "gpu": "H100", "gpus": 8, "checkpointing": True}
    [spot_note] = [n for n in plan_of(spec([spot_tune], aws())).targets[0].notes if n.startswith("Fallback pool(s)")]
    assert "back spot pool(s)" in spot_note and "tolerate the spot taint" in spot_note


def test_the_table_shows_a_windowed_ladder_and_its_worst_case():
    from gpustack.output.table import render_table

    text = render_table(plan_of(spec([PRETRAIN], aws())))
    assert "Capacity ladders:" in text
    assert "pretrain: block $14,000 up front -> on-demand $80,358; worst case $94,358/month" in text


def test_the_fallbacks_runs_cell_names_the_rung_it_backs():
    from gpustack.output.markdown import render_markdown
    from gpustack.output.table import render_table

    block = plan_of(spec([PRETRAIN], aws()))
    assert "when capacity-block is short" in render_table(block, wide=True)
    assert "when capacity-block is short" in render_markdown(block)
    assert "when spot is" not in render_table(block, wide=True)
    flex = plan_of(spec([TUNE], gcp()))
    assert "when flex-start is short" in render_table(flex, wide=True)


def test_a_default_checkpointed_job_gets_a_ladder_too():
    tune = {"name": "tune", "kind": "fine-tuning", "gpu": "H100", "gpus": 8, "checkpointing": True}
    [target] = plan_of(spec([tune], aws())).targets
    [ladder] = target.ladders
    assert [r.capacity for r in ladder.rungs] == ["spot", "on-demand"]


def test_flex_is_priced_at_the_published_upper_bound_unless_declared_and_says_so():
    [target] = plan_of(spec([TUNE], gcp())).targets
    [pool] = [p for p in target.pools if p.capacity == "flex"]
    assert pool.flex is not None and pool.flex.discount == 0.53
    assert "published upper bound" in pool.flex.discount_basis
    assert any(w.code == "flex-discount-assumed" for w in target.warnings)
    declared = spec([TUNE], gcp(), pricing={"flex_discount": 0.3})
    [declared_target] = plan_of(declared).targets
    [declared_pool] = [p for p in declared_target.pools if p.capacity == "flex"]
    assert declared_pool.price.usd_per_node_hour == pytest.approx(88.49 * 0.7)
    assert not any(w.code == "flex-discount-assumed" for w in declared_target.warnings)
    [ladder] = declared_target.ladders
    assert [r.capacity for r in ladder.rungs] == ["flex", "on-demand"]
    # The flex pool is not billed while its fallback carries the hours: the high end is the fallback's.
    assert declared_target.cost.range.high == pytest.approx(88.49 * 200, abs=0.01)


def test_a_block_keeps_its_pool_name_when_another_workload_is_added():
    one = {p.name for p in block_target().pools}
    other = {"name": "other", "kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True}
    [target] = plan_of(spec([PRETRAIN, other], aws())).targets
    assert one <= {p.name for p in target.pools}


# -- Pulumi under mocks ----------------------------------------------------------------------------
def declared_for(tmp_path: Any, text: str, target: str, **config: str) -> list[Declared]:
    path = tmp_path / "gpustack.yaml"
    path.write_text(text, encoding="utf-8")
    return run_program(str(path), target, config=dict(config))


def one(resources: list[Declared], type_: str) -> Declared:
    [found] = [r for r in resources if r.type == type_]
    return found


@pytest.fixture
def zones():
    aws_mocks.SUBNET_ZONES.update({"subnet-0a1b": "us-east-1a", "subnet-0c2d": "us-east-1b", "subnet-0e3f": "us-east-1b"})
    yield
    aws_mocks.SUBNET_ZONES.clear()


def test_a_block_is_a_capacity_block_launch_template_and_node_group_in_its_zone(tmp_path, zones):
    declared = declared_for(tmp_path, spec([PRETRAIN], aws()), "aws-t")
    templates = [r for r in declared if r.type == "aws:ec2/launchTemplate:LaunchTemplate" and "block" in r.name]
    [template] = templates
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template.inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    [group] = [r for r in declared if r.type == "aws:eks/nodeGroup:NodeGroup" and "block" in r.name]
    assert group.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert group.inputs["subnetIds"] == ["subnet-0c2d", "subnet-0e3f"]  # the block's zone only
    assert group.inputs["scalingConfig"] == {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    assert not [r for r in declared if r.type == "aws:ec2/capacityBlockReservation:CapacityBlockReservation"]
    [pool] = [p for p in block_target().pools if p.capacity == "block"]
    assert any("only at desired size 0" in note for note in pool.notes)


def test_a_block_is_bought_only_when_the_spec_names_an_offering_and_is_protected(tmp_path, zones):
    buying = with_block(reservation_id=None, offering_id="cb-0123456789abcdef0")
    [target] = plan_of(spec([buying], aws())).targets
    assert any(w.code == "capacity-block-purchase" and "does not refund" in w.message for w in target.warnings)
    declared = declared_for(tmp_path, spec([buying], aws()), "aws-t")
    bought = one(declared, "aws:ec2/capacityBlockReservation:CapacityBlockReservation")
    assert bought.inputs["capacityBlockOfferingId"] == "cb-0123456789abcdef0"
    assert bought.inputs["instancePlatform"] == "Linux/UNIX"
    assert bought.protect


def test_gke_flex_and_queued_node_pools_have_the_settings_gke_requires(tmp_path):
    plain = {**TUNE, "name": "tune2", "flex": {"max_run_hours": 24}}
    declared = declared_for(tmp_path, spec([TUNE, plain], gcp()), "gcp-t")
    pools = {r.inputs["name"]: r.inputs for r in declared if r.type == "gcp:container/nodePool:NodePool"}
    flex = [p for name, p in pools.items() if "flex" in name]
    assert len(flex) == 2
    for inputs in flex:
        assert inputs["nodeConfig"]["flexStart"] is True
        assert inputs["autoscaling"]["locationPolicy"] == "ANY"
        assert inputs["management"] == {"autoRepair": False}
        assert inputs["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
        assert "spot" not in inputs["nodeConfig"]
    queued = [p for p in flex if "queuedProvisioning" in p]
    assert [p["queuedProvisioning"] for p in queued] == [{"enabled": True}]
    assert sorted(p["nodeConfig"]["maxRunDuration"] for p in flex) == ["172800s", "86400s"]
    fallback = [p for name, p in pools.items() if "fallback" in name]
    assert fallback and all("flexStart" not in p["nodeConfig"] for p in fallback)


# -- Kubernetes objects against the vendored CRDs -----------------------------------------------------
def requirement_keys_allowed(node_pool: dict[str, Any]) -> list[str]:
    """The NodePool CRD's CEL rule on requirement keys of the karpenter.k8s.aws domain (v1.14.1), re-stated."""
    allowed = {"karpenter.k8s.aws/capacity-reservation-type", "karpenter.k8s.aws/capacity-reservation-id",
               "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-name",
               "karpenter.k8s.aws/instance-family"}
    keys = [r["key"] for r in node_pool["spec"]["template"]["spec"]["requirements"]]
    return [k for k in keys if k.split("/")[0].endswith("karpenter.k8s.aws") and k not in allowed]


def test_karpenter_selects_the_block_by_id_as_reserved_capacity_of_type_capacity_block():
    target = block_target("karpenter")
    plan = plan_of(spec([PRETRAIN], aws(provisioner="karpenter")))
    objects = in_cluster(plan, target).node_objects
    [pool] = [p for p in target.pools if p.capacity == "block"]
    [node_class] = [o for o in objects if o["kind"] == "EC2NodeClass" and o["metadata"]["name"] == pool.cloud_name]
    [node_pool] = [o for o in objects if o["kind"] == "NodePool" and o["metadata"]["name"] == pool.cloud_name]
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    requirements = {r["key"]: r["values"] for r in node_pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["reserved"]
    assert requirements["karpenter.k8s.aws/capacity-reservation-type"] == ["capacity-block"]
    assert requirements["topology.kubernetes.io/zone"] == ["us-east-1b"]
    for obj in objects:
        validate(obj)
    assert requirement_keys_allowed(node_pool) == []
    assert "ReservedCapacity" in " ".join(pool.notes)
    wrong = copy.deepcopy(node_class)
    wrong["spec"]["capacityReservationSelectorTerms"] = [{"id": "block-1"}]
    with pytest.raises(jsonschema.ValidationError):
        validate(wrong)


def test_a_compute_class_priority_asks_for_flex_start_as_the_crd_spells_it():
    [target] = plan_of(spec([TUNE], gcp(provisioner="compute-class"))).targets
    plan = plan_of(spec([TUNE], gcp(provisioner="compute-class")))
    [cls] = [o for o in in_cluster(plan, target).node_objects if o["kind"] == "ComputeClass"]
    first, second = cls["spec"]["priorities"]
    assert first["flexStart"] == {"enabled": True} and first["maxRunDurationSeconds"] == 48 * 3600
    assert first["spot"] is False  # the CRD's CEL rule: flex-start is incompatible with spot
    assert "flexStart" not in second
    validate(cls)
    wrong = copy.deepcopy(cls)
    wrong["spec"]["priorities"][0]["flexStart"] = {"on": True}
    with pytest.raises(jsonschema.ValidationError):
        validate(wrong)


# -- a block's end, simulated -------------------------------------------------------------------------
@pytest.mark.parametrize("provisioner, leaves_at, why", [
    ("managed", "2026-12-14T11:00:00+00:00", "ec2-terminated"),
    ("karpenter", "2026-12-14T10:50:00+00:00", "karpenter-nodeclaim-deleted"),
])
def test_at_the_blocks_end_the_job_resumes_from_its_checkpoint_on_the_next_rung(provisioner, leaves_at, why):
    target = block_target(provisioner)
    [ladder] = target.ladders
    blocks = {p.name: p.block for p in target.pools if p.block is not None}
    week = 7 * 24 * 60
    run = sim.run_job(ladder, blocks, work_minutes=week + 600, checkpoint_minutes=30, restart_minutes=15)
    stop = next(e for e in run.events if e.what == why)
    assert stop.at == datetime.datetime.fromisoformat(leaves_at)
    end = datetime.datetime.fromisoformat("2026-12-14T11:30:00+00:00")
    assert stop.at <= end - datetime.timedelta(minutes=30)  # never on a node EC2 is reclaiming
    assert run.pools == [ladder.rungs[0].pool, ladder.rungs[1].pool]
    assert ladder.rungs[1].capacity == "on-demand"
    assert 0 <= run.lost_minutes < 30  # only the work since the last checkpoint is redone
    assert run.events[-2].what == "resumed from checkpoint"


def test_without_checkpoints_the_blocks_end_throws_the_run_away():
    target = block_target("karpenter")
    [ladder] = target.ladders
    blocks = {p.name: p.block for p in target.pools if p.block is not None}
    run = sim.run_job(ladder, blocks, work_minutes=7 * 24 * 60 + 600, checkpoint_minutes=None, restart_minutes=15)
    assert run.events[-2].what == "restarted from scratch"
    assert run.lost_minutes > 7 * 24 * 60 - 60  # why the spec refuses a block job without checkpointing


@pytest.mark.parametrize("queued", [True, False])
def test_kueue_admits_a_queued_flex_pool_through_a_provisioning_request_and_only_then(queued):
    """capacity: flex with `flex.queued` and settings.queue: kueue: the flex pool's flavor carries the
    ProvisioningRequest admission check (GKE's queued provisioning needs one per Job); plain flex-start
    pools scale as any other and get no check."""
    from gpustack.render import in_cluster

    tune = {**TUNE, "flex": {"max_run_hours": 48, "queued": queued}}
    plan = plan_of(spec([tune], gcp(queue="kueue")))
    [target] = plan.targets
    [flex_pool] = [p for p in target.pools if p.capacity == "flex"]
    kinds = {o["kind"]: o for o in in_cluster(plan, target).objects}
    assert ("ProvisioningRequestConfig" in kinds) == queued
    assert ("AdmissionCheck" in kinds) == queued
    if queued:
        assert kinds["ProvisioningRequestConfig"]["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
        strategy = kinds["ClusterQueue"]["spec"]["admissionChecksStrategy"]["admissionChecks"]
        assert strategy == [{"name": kinds["AdmissionCheck"]["metadata"]["name"], "onFlavors": [flex_pool.name]}]
