"""A spot pool over several instance types (`instance_types: {<cloud>: [a, b, c]}`) or GPU models
(`gpu: [A100-80GB, H100]`): planned over the set
where the provisioner takes it (EKS managed node groups, Karpenter), priced at the set's worst spot price,
with the on-demand fallback on the first type, one priority per type in a GKE ComputeClass; a capability gap
where a pool has one machine type."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from conftest import TARGETS
from gpustack.catalog import load_catalog
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.plan.prices import PriceBook
from gpustack.render import in_cluster
from gpustack.spec import load_spec
from gpustack.testing import run_program
from cloudsim.checks import simulated_groups, view
from cloudsim.kube import estimate_scale_up, why_not
from test_render import validate

# Three spot types per cloud, one GPU each (the same replicas per node), of different sizes.
TYPES = {
    "aws": ("T4", ["g4dn.2xlarge", "g4dn.4xlarge", "g4dn.8xlarge"]),
    "gcp": ("L4", ["g2-standard-8", "g2-standard-12", "g2-standard-16"]),
    "azure": ("T4", ["Standard_NC8as_T4_v3", "Standard_NC16as_T4_v3", "Standard_NC4as_T4_v3"]),
}


def write(tmp_path, cloud: str, types: list[str] | str, provisioner: str | None = None, gpu: str | None = None,
          kind: str = "fine-tuning") -> str:
    target = copy.deepcopy(TARGETS[cloud])
    if provisioner:
        target["settings"]["provisioner"] = provisioner
    workload = {"name": "tune", "kind": kind, "gpu": gpu or TYPES[cloud][0], "replicas": 4,
                "instance_types": {cloud: types}, "labels": {"team": "ml", "environment": "dev"}}
    if kind != "notebook":
        workload.update(checkpointing=True, hours_per_month=100)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": [workload]},
                                   sort_keys=False))
    return str(path)


def pools(path: str) -> dict:
    return {p.capacity if p.role != "fallback" else "fallback": p for p in build_plan(load_spec(path)).targets[0].pools}


def worst_spot(cloud: str, region: str, types: list[str]) -> float:
    catalog = load_catalog()
    book = PriceBook.for_cloud(load_spec_pricing(), catalog, cloud)
    return max(book.for_capacity(catalog.instance(cloud, region, t), "spot").usd_per_node_hour for t in types)


def load_spec_pricing():  # the spec gives no prices: the catalog's
    from gpustack.spec.model import Pricing
    return Pricing(None, None, ())


@pytest.mark.parametrize("provisioner", [None, "karpenter"])
def test_an_eks_spot_pool_spans_three_types_at_their_worst_spot_price(tmp_path, provisioner):
    types = TYPES["aws"][1]
    found = pools(write(tmp_path, "aws", types, provisioner))
    spot, fallback = found["spot"], found["fallback"]
    assert spot.instance_types == tuple(types) and spot.instance_type == types[0]
    worst = worst_spot("aws", "us-east-1", types)
    cheapest_first = worst_spot("aws", "us-east-1", types[:1])
    assert worst > cheapest_first  # the rule bites: not the first type's price
    assert spot.price.usd_per_node_hour == worst and "worst spot price" in spot.price.source
    assert spot.monthly_cost_usd == pytest.approx(worst * spot.hours_per_month * spot.max_nodes)
    assert any("priced at the worst of their spot prices" in n for n in spot.notes)
    assert fallback.instance_types == () and fallback.instance_type == types[0]  # the fallback keeps one type


def test_mixed_sizes_warn_under_the_cluster_autoscaler_not_under_karpenter(tmp_path):
    codes = {w.code for w in build_plan(load_spec(write(tmp_path, "aws", TYPES["aws"][1]))).warnings}
    assert "mixed-instance-types" in codes
    codes = {w.code for w in build_plan(load_spec(write(tmp_path, "aws", TYPES["aws"][1], "karpenter"))).warnings}
    assert "mixed-instance-types" not in codes


def test_eks_managed_node_group_declares_every_type(tmp_path):
    declared = run_program(write(tmp_path, "aws", TYPES["aws"][1]), TARGETS["aws"]["name"])
    groups = {r.inputs["capacityType"]: r.inputs["instanceTypes"] for r in declared
              if r.type == "aws:eks/nodeGroup:NodeGroup"}
    assert groups == {"SPOT": TYPES["aws"][1], "ON_DEMAND": TYPES["aws"][1][:1]}


def scale_from_zero(spec: str) -> tuple[list[tuple[str, str | None, str | None, int]], list[str]]:
    """For each type of the spot node group as simulated (tests/cloudsim/cluster.py): whether the
    autoscaler's template of that type at zero takes the workload's pod, whether a node of that type
    holds it, and the nodes one scale-up from zero starts for the pool's replicas; and the warnings.
    The AWS autoscaler models a mixed group by one type (cloudprovider/aws/aws_manager.go,
    buildInstanceType) and binpacks on its template (estimator/binpacking_estimator.go, Estimate)."""
    plan = build_plan(load_spec(spec))
    [target] = plan.targets
    spot = next(p for p in target.pools if p.capacity == "spot")
    [group] = simulated_groups(plan, target, run_program(spec, target.name))[spot.name]
    pod = view(target).pods["tune"][0]
    replicas = sum(p.replicas for p in spot.placements)
    out = []
    for row, template, node in zip(group.rows, group.templates, group.nodes, strict=True):
        started, unhelped = estimate_scale_up([pod] * replicas, template, spot.max_nodes)
        out.append((row.name, why_not(pod, template), why_not(pod, node), started if not unhelped else -1))
    return out, [w.code for w in plan.warnings]


def test_the_simulated_autoscaler_scales_the_mixed_spot_group_from_zero_on_each_of_its_types(tmp_path):
    each, _ = scale_from_zero(write(tmp_path, "aws", TYPES["aws"][1]))
    assert each == [(t, None, None, 4) for t in TYPES["aws"][1]]  # four 1-GPU replicas, one node each


def test_the_simulation_sees_a_type_too_small_for_the_pod_which_the_plan_warns_of(tmp_path):
    spec = write(tmp_path, "aws", ["g4dn.8xlarge", "g4dn.4xlarge"])
    doc = yaml.safe_load(Path(spec).read_text())
    doc["workloads"][0]["cpu"] = 20  # more than a g4dn.4xlarge (16 vCPUs) has
    Path(spec).write_text(yaml.safe_dump(doc, sort_keys=False))
    each, warnings = scale_from_zero(spec)
    # The template takes the pod (the group's tags describe the first type), a 4xlarge node does not.
    assert each[0] == ("g4dn.8xlarge", None, None, 4)
    assert each[1][0] == "g4dn.4xlarge" and each[1][1] is None and each[1][2] == "Insufficient cpu"
    assert "mixed-instance-types" in warnings


def test_karpenter_node_pool_requires_any_of_the_types(tmp_path):
    plan = build_plan(load_spec(write(tmp_path, "aws", TYPES["aws"][1], "karpenter")))
    spot = next(p for p in plan.targets[0].pools if p.capacity == "spot")
    requirement = next(r for r in spot.compiled.requirements if r.key == "node.kubernetes.io/instance-type")
    assert (requirement.operator, tuple(requirement.values)) == ("In", tuple(TYPES["aws"][1]))


@pytest.mark.parametrize("cloud, provisioner", [("gcp", None), ("azure", None)])
def test_one_machine_type_per_pool_is_a_capability_gap(tmp_path, cloud, provisioner):
    plan = build_plan(load_spec(write(tmp_path, cloud, TYPES[cloud][1], provisioner)))
    spot = next(p for p in plan.targets[0].pools if p.capacity == "spot")
    assert spot.instance_types == () and spot.instance_type == TYPES[cloud][1][0]
    gaps = [w.message for w in plan.warnings if w.code == "capability-gap" and w.pool == spot.name]
    assert len(gaps) == 1 and "runs on" in gaps[0] and TYPES[cloud][1][1] in gaps[0]


def test_a_gke_compute_class_spot_pool_gets_one_spot_priority_per_machine_type(tmp_path):
    types = TYPES["gcp"][1]
    plan = build_plan(load_spec(write(tmp_path, "gcp", types, "compute-class")))
    [target] = plan.targets
    spot = next(p for p in target.pools if p.capacity == "spot")
    assert spot.instance_types == tuple(types)
    assert not [w for w in plan.warnings if w.code == "capability-gap" and w.pool == spot.name]
    assert spot.price.usd_per_node_hour == worst_spot("gcp", target.region, types) > worst_spot("gcp", target.region,
                                                                                                  types[:1])
    [cls] = [o for o in in_cluster(plan, target).node_objects if o["kind"] == "ComputeClass"]
    validate(cls)  # tests/schemas/cloud.google.com_computeclasses.yaml
    priorities = [(p["machineType"], p["spot"], p["gpu"]["type"], p["gpu"]["count"]) for p in cls["spec"]["priorities"]]
    assert priorities == [*((t, True, "nvidia-l4", 1) for t in types), (types[0], False, "nvidia-l4", 1)]
    assert {p["nodeLabels"]["gpustack.dev/pool"] for p in cls["spec"]["priorities"][:3]} == {spot.name}
    assert any(n.startswith("One spot priority per machine type") for n in spot.notes)


def test_notebooks_may_list_types_too(tmp_path):
    found = pools(write(tmp_path, "aws", TYPES["aws"][1], kind="notebook"))
    assert "on-demand" in found  # notebooks are on-demand: the list does not make a spot pool of them


def test_a_list_on_inference_is_a_located_error(tmp_path):
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, "aws", TYPES["aws"][1], kind="inference"))
    assert any(p.path == "workloads[0].instance_types.aws" and "for spot pools" in p.message
               for p in caught.value.problems)


@pytest.mark.parametrize("types, index, words", [
    (["g4dn.2xlarge", "g4dn.12xlarge"], 1, "same GPU count"),
    (["g4dn.2xlarge", "g5.2xlarge"], 1, "has A10G GPUs, not T4"),
    (["g4dn.2xlarge", "g4dn.2xlarge"], 1, "listed twice"),
])
def test_bad_alternatives_are_located_at_their_entry(tmp_path, types, index, words):
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, "aws", types))
    assert any(p.path == f"workloads[0].instance_types.aws[{index}]" and words in p.message
               for p in caught.value.problems), caught.value.problems


def test_a_single_name_keeps_its_meaning(tmp_path):
    found = pools(write(tmp_path, "aws", "g4dn.4xlarge"))
    assert found["spot"].instance_type == "g4dn.4xlarge" and found["spot"].instance_types == ()


# -- several GPU models: `gpu: [A100-80GB, H100]` ----------------------------------------------------
def models_spec(tmp_path, cloud: str, models: list[str], gpus: int = 8, provisioner: str | None = None,
                kind: str = "fine-tuning", **extra) -> str:
    target = copy.deepcopy(TARGETS[cloud])
    if provisioner:
        target["settings"]["provisioner"] = provisioner
    workload = {"name": "tune", "kind": kind, "gpu": models, "gpus": gpus, "replicas": 2,
                "labels": {"team": "ml", "environment": "dev"}, **extra}
    if kind != "notebook":
        workload.update(checkpointing=True, hours_per_month=100)
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": [workload]},
                                   sort_keys=False))
    return str(path)


@pytest.mark.parametrize("provisioner", [None, "karpenter"])
def test_an_eks_spot_pool_over_two_gpu_models_takes_a_type_of_each_at_the_worst_spot_price(tmp_path, provisioner):
    path = models_spec(tmp_path, "aws", ["A100-80GB", "H100"], provisioner=provisioner)
    found = pools(path)
    spot, fallback = found["spot"], found["fallback"]
    # Packed on the first model's 8-GPU type; the H100 type of 8 GPUs with at least its CPUs and memory.
    assert (spot.gpu, spot.instance_type) == ("A100-80GB", "p4de.24xlarge")
    assert spot.instance_types == ("p4de.24xlarge", "p5.48xlarge") and spot.gpu_models == ("A100-80GB", "H100")
    worst = worst_spot("aws", "us-east-1", ["p4de.24xlarge", "p5.48xlarge"])
    each = [worst_spot("aws", "us-east-1", [name]) for name in ("p4de.24xlarge", "p5.48xlarge")]
    assert each[0] != each[1] and worst == max(each)  # the dearer type's spot price, whichever model it is
    assert spot.price.usd_per_node_hour == worst and "worst spot price" in spot.price.source
    assert any("GPUs: A100-80GB or H100" in n for n in spot.notes)
    assert (fallback.instance_type, fallback.instance_types, fallback.gpu_models) == ("p4de.24xlarge", (), ())
    plan_json = json.loads(build_plan(load_spec(path)).to_json())
    [spot_json] = [p for p in plan_json["targets"][0]["pools"] if p["capacity"] == "spot"]
    assert spot_json["gpu_models"] == ["A100-80GB", "H100"]
    if provisioner == "karpenter":
        requirement = next(r for r in spot.compiled.requirements if r.key == "node.kubernetes.io/instance-type")
        assert tuple(requirement.values) == ("p4de.24xlarge", "p5.48xlarge")
    else:
        groups = {r.inputs["capacityType"]: r.inputs["instanceTypes"] for r in run_program(path, "aws-t")
                  if r.type == "aws:eks/nodeGroup:NodeGroup"}
        assert groups == {"SPOT": ["p4de.24xlarge", "p5.48xlarge"], "ON_DEMAND": ["p4de.24xlarge"]}


def test_the_simulated_autoscaler_scales_the_two_model_group_from_zero_on_each_type(tmp_path):
    each, _ = scale_from_zero(models_spec(tmp_path, "aws", ["A100-80GB", "H100"]))
    assert each == [("p4de.24xlarge", None, None, 2), ("p5.48xlarge", None, None, 2)]  # 8 GPUs a replica


def test_a_gke_compute_class_gives_each_gpu_model_its_priority_with_its_accelerator(tmp_path):
    plan = build_plan(load_spec(models_spec(tmp_path, "gcp", ["A100-80GB", "H100"], provisioner="compute-class")))
    [target] = plan.targets
    [cls] = [o for o in in_cluster(plan, target).node_objects if o["kind"] == "ComputeClass"]
    validate(cls)
    assert [(p["machineType"], p["spot"], p["gpu"]["type"]) for p in cls["spec"]["priorities"]] == [
        ("a2-ultragpu-8g", True, "nvidia-a100-80gb"), ("a3-highgpu-8g", True, "nvidia-h100-80gb"),
        ("a2-ultragpu-8g", False, "nvidia-a100-80gb")]


def test_gke_node_pools_keep_the_first_model_with_a_capability_gap(tmp_path):
    plan = build_plan(load_spec(models_spec(tmp_path, "gcp", ["A100-80GB", "H100"])))
    spot = next(p for p in plan.targets[0].pools if p.capacity == "spot")
    assert (spot.instance_types, spot.gpu_models) == ((), ())
    [gap] = [w.message for w in plan.warnings if w.code == "capability-gap" and w.pool == spot.name]
    assert "runs on a2-ultragpu-8g only, not on a3-highgpu-8g" in gap


def test_a_model_without_a_type_of_the_pools_gpu_count_is_left_out_with_a_warning(tmp_path):
    plan = build_plan(load_spec(models_spec(tmp_path, "aws", ["H100", "H200"], gpus=1)))
    spot = next(p for p in plan.targets[0].pools if p.capacity == "spot")
    assert spot.instance_types == () and spot.instance_type == "p5.4xlarge"  # H200 comes 8 to a node only
    [left] = [w.message for w in plan.warnings if w.code == "gpu-model-left-out"]
    assert left.startswith(f"pool {spot.name!r} does not launch H200: no instance type here has 1 of it per node")


@pytest.mark.parametrize("models, extra, kind, path, words", [
    (["A100-80GB", "H100"], {}, "inference", "workloads[0].gpu", "a list of GPU models is for spot pools"),
    (["H100", "A100-40GB"], {}, "training", "workloads[0].gpu[1]", "A100-40GB has 40 GB per GPU, less than the 80"),
    (["H100", "H100"], {}, "training", "workloads[0].gpu[1]", "listed twice"),
    (["A100-80GB", "H10"], {}, "training", "workloads[0].gpu[1]", "is not a GPU model of the catalog"),
    (["A100-80GB", "H100"], {"mig": "1g.10gb", "gpus": None}, "notebook", "workloads[0].gpu[1]",
     "a MIG workload runs on one GPU model"),
])
def test_bad_gpu_lists_are_located(tmp_path, models, extra, kind, path, words):
    spec = models_spec(tmp_path, "aws", models, kind=kind, **{k: v for k, v in extra.items() if v is not None})
    if extra.get("gpus", 1) is None:
        doc = yaml.safe_load(Path(spec).read_text())
        del doc["workloads"][0]["gpus"]
        Path(spec).write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    assert any(p.path == path and words in p.message for p in caught.value.problems), caught.value.problems


def test_a_single_gpu_model_keeps_its_meaning_and_its_plan(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "list").mkdir()
    one = build_plan(load_spec(models_spec(tmp_path / "one", "aws", "A100-80GB"))).to_json()
    assert one == build_plan(load_spec(models_spec(tmp_path / "list", "aws", ["A100-80GB"]))).to_json()
    assert "gpu_models" not in one
