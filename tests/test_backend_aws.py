"""EKS under Pulumi mocks with the real pulumi-aws SDK: what `pulumi up` would declare."""

from __future__ import annotations

import pytest
import yaml

from conftest import EXAMPLE, assert_golden, spec_text
from gpustack.cli import main
from gpustack.clouds.aws import facts as eks
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import Declared, run_program
from pulumi_golden import declared_yaml, short_urn

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@pytest.fixture(scope="module")
def declared() -> list[Declared]:
    return run_program(str(EXAMPLE), "aws-prod")


@pytest.fixture(scope="module")
def target():
    return build_plan(load_spec(EXAMPLE)).target("aws-prod")


def one(resources: list[Declared], type_: str, name: str) -> Declared:
    [found] = [r for r in resources if r.type == type_ and r.name == name]
    return found


def pool_of(target, kind: str, capacity: str):
    [pool] = [p for p in target.pools if p.kind == kind and p.capacity == capacity and p.role != "fallback"]
    return pool


@pytest.mark.golden
def test_example_resources_match_golden(declared):
    assert_golden("pulumi/aws-prod.yaml",
                  declared_yaml("Every resource `pulumi up` declares for aws-prod of stacks/gpustack.yaml", declared))


def test_training_pool_is_spot_with_the_nvidia_ami_and_gpu_taint(declared, target):
    pool = pool_of(target, "training", "spot")
    inputs = one(declared, NODE_GROUP, f"{pool.name}-node-group").inputs
    assert inputs["capacityType"] == "SPOT"
    assert inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert inputs["instanceTypes"] == ["p5.48xlarge"]
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in inputs["taints"]
    assert {"key": "gpustack.dev/spot", "value": "true", "effect": "NO_SCHEDULE"} in inputs["taints"]
    assert inputs["nodeGroupName"] == pool.cloud_name
    assert inputs["scalingConfig"] == {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    # The plan's labels and the GPU label the autoscaler waits on for the device plugin.
    assert inputs["labels"] == {**dict(pool.labels), "k8s.amazonaws.com/accelerator": "nvidia-h100"}
    assert inputs["labels"]["gpustack.dev/kind"] == "training"
    # Attribution, and what one node offers for the autoscaler's template at zero (eks:DescribeNodegroup).
    template = "k8s.io/cluster-autoscaler/node-template/resources/"
    assert inputs["tags"] == {"team": "ml-platform", "cost-center": "4711", "environment": "prod",
                              "model": "llama-70b", "experiment-id": "exp-42",
                              f"{template}nvidia.com/gpu": "8", f"{template}cpu": inputs["tags"][f"{template}cpu"],
                              f"{template}memory": inputs["tags"][f"{template}memory"]}


def test_inference_floor_is_on_demand_in_a_targeted_capacity_reservation(declared, target):
    pool = pool_of(target, "inference", "reserved")
    reservation = one(declared, "aws:ec2/capacityReservation:CapacityReservation", f"{pool.name}-reservation")
    assert reservation.inputs["instanceType"] == pool.instance_type == "p4de.24xlarge"
    assert reservation.inputs["instanceCount"] == pool.reserved_nodes == pool.min_nodes == 1
    assert reservation.inputs["availabilityZone"] == "us-east-1a"  # the first subnet's zone (canned answer)
    assert reservation.inputs["instanceMatchCriteria"] == "targeted"
    template = one(declared, "aws:ec2/launchTemplate:LaunchTemplate", f"{pool.name}-launch-template")
    target_id = template.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target_id == {"capacityReservationId": f"{pool.name}-reservation-id"}
    assert "instanceType" not in template.inputs  # EKS fails when the template and the node group both name one
    node_group = one(declared, NODE_GROUP, f"{pool.name}-node-group").inputs
    assert node_group["capacityType"] == "ON_DEMAND"
    assert node_group["launchTemplate"] == {"id": f"{pool.name}-launch-template-id", "version": "1"}
    assert node_group["subnetIds"] == ["subnet-0a1b2c3d4e5f60718"]  # only the reservation's zone
    assert node_group["instanceTypes"] == ["p4de.24xlarge"]


def test_pools_without_a_reservation_use_every_subnet(declared, target):
    pool = pool_of(target, "inference", "on-demand")
    node_group = one(declared, NODE_GROUP, f"{pool.name}-node-group").inputs
    assert node_group["subnetIds"] == ["subnet-0a1b2c3d4e5f60718", "subnet-0c2d3e4f5a6b70819"]
    template = one(declared, "aws:ec2/launchTemplate:LaunchTemplate", f"{pool.name}-launch-template").inputs
    assert "capacityReservationSpecification" not in template


def test_every_pool_launches_from_a_template_that_tags_instances_volumes_and_interfaces(declared, target):
    templates = {r.name: r.inputs for r in declared if r.type == "aws:ec2/launchTemplate:LaunchTemplate"}
    assert len(templates) == len(target.pools)
    for pool in target.pools:
        template = templates[f"{pool.name}-launch-template"]
        node_group = one(declared, NODE_GROUP, f"{pool.name}-node-group").inputs
        assert node_group["launchTemplate"] == {"id": f"{pool.name}-launch-template-id", "version": "1"}
        assert "diskSize" not in node_group  # EKS refuses disk_size together with a launch template
        # Node-group tags stay on the node group; only these reach the bill (Cost Explorer by tag).
        assert template["tagSpecifications"] == [{"resourceType": kind, "tags": pool.attribution}
                                                 for kind in ("instance", "volume", "network-interface")]
        assert pool.attribution["team"] == "ml-platform"
        [root] = template["blockDeviceMappings"]
        assert root == {"deviceName": "/dev/xvda", "ebs": {"volumeSize": pool.disk_gib, "volumeType": "gp3",
                                                           "deleteOnTermination": "true", "encrypted": "true"}}
        assert pool.disk_gib >= 150  # not the 20 GiB default a CUDA image fills


def test_local_nvme_holds_the_kubelet_and_containerd(declared, target):
    import base64
    pool = pool_of(target, "training", "spot")  # p5.48xlarge: 8 x 3.84 TB NVMe
    template = one(declared, "aws:ec2/launchTemplate:LaunchTemplate", f"{pool.name}-launch-template").inputs
    user_data = base64.b64decode(template["userData"]).decode()
    assert "Content-Type: application/node.eks.aws" in user_data
    assert "kind: NodeConfig" in user_data and "strategy: RAID0" in user_data


def test_notebooks_stop_and_start_on_their_schedule(declared, target):
    pool = pool_of(target, "notebook", "on-demand")
    schedules = {r.name: r.inputs for r in declared if r.type == "aws:autoscaling/schedule:Schedule"}
    assert set(schedules) == {f"{pool.name}-start", f"{pool.name}-stop"}
    start, stop = schedules[f"{pool.name}-start"], schedules[f"{pool.name}-stop"]
    assert (start["recurrence"], stop["recurrence"]) == ("0 8 * * 1-5", "0 18 * * 1-5")
    assert start["timeZone"] == stop["timeZone"] == "Europe/Berlin"
    assert (start["minSize"], start["maxSize"], start["desiredCapacity"]) == (0, 3, 0)
    assert (stop["minSize"], stop["maxSize"], stop["desiredCapacity"]) == (0, 0, 0)
    asg = f"eks-{pool.name}-node-group-asg"  # the mock's name for the node group's Auto Scaling group
    assert start["autoscalingGroupName"] == stop["autoscalingGroupName"] == asg


def test_a_window_across_midnight_stops_the_next_day(tmp_path):
    nightly = {"name": "nightly", "kind": "fine-tuning", "gpu": "A10G", "replicas": 2, "checkpointing": True,
               "schedule": {"days": "Mon-Fri", "hours": "22:00-06:30", "timezone": "America/New_York"}}
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([nightly]))
    schedules = [r.inputs for r in run_program(str(spec), "aws-t") if r.type == "aws:autoscaling/schedule:Schedule"]
    assert sorted((s["recurrence"], s["maxSize"]) for s in schedules) == [
        ("0 22 * * 1-5", 2), ("0 22 * * 1-5", 2), ("30 6 * * 2-6", 0), ("30 6 * * 2-6", 0)]  # spot and fallback
    assert {s["timeZone"] for s in schedules} == {"America/New_York"}


def test_children_are_parented_to_their_pool_component(declared, target):
    components = {r.urn: r for r in declared if r.type == "gpustack:aws:GpuNodePool"}
    assert sorted(c.name for c in components.values()) == sorted(p.name for p in target.pools)
    for r in declared:
        if r.custom and not r.type.startswith("aws:iam/"):
            assert r.parent in components, r.name
            assert r.name.startswith(components[r.parent].name + "-"), r.name
        elif r.custom:  # the node role is target-wide: a child of the target's GpuPools component
            assert short_urn(r.parent) == "gpustack:index:GpuPools::aws-prod" and r.name.startswith("aws-prod-node-role")


def test_a_node_role_with_the_three_worker_policies_unless_settings_name_one(declared, tmp_path):
    attached = sorted(
        r.inputs["policyArn"] for r in declared if r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    )
    assert attached == ["arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
                        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
                        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"]
    role = one(declared, "aws:iam/role:Role", "aws-prod-node-role")
    assert yaml.safe_load(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }
    arn = "arn:aws:iam::123456789012:role/eks-gpu-nodes"
    doc = yaml.safe_load(spec_text([{"name": "t1", "kind": "training", "gpu": "T4", "checkpointing": True}]))
    doc["targets"][0]["settings"]["node_role_arn"] = arn
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    resources = run_program(str(spec), "aws-t")
    assert not [r for r in resources if r.type.startswith("aws:iam/")]
    assert {r.inputs["nodeRoleArn"] for r in resources if r.type == NODE_GROUP} == {arn}


def test_adding_a_workload_renames_and_changes_nothing_already_declared(declared, tmp_path):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["targets"][0]["workloads"].remove("notebooks")
    smaller = tmp_path / "gpustack.yaml"
    smaller.write_text(yaml.safe_dump(doc, sort_keys=False))
    before = {r.urn: r.inputs for r in run_program(str(smaller), "aws-prod")}
    after = {r.urn: r.inputs for r in declared}
    assert before and all(after.get(urn) == inputs for urn, inputs in before.items())


def test_arm_gpu_families_get_the_arm_nvidia_ami():
    assert eks.ami_type("g5g.xlarge") == eks.ami_type("p6e-gb200.36xlarge") == "AL2023_ARM_64_NVIDIA"
    assert eks.ami_type("g6e.12xlarge") == "AL2023_x86_64_NVIDIA"
    assert eks.ami_type("trn1.32xlarge") is None


def test_a_bad_enum_value_is_a_located_validation_error(monkeypatch, capsys):
    monkeypatch.setitem(eks.NVIDIA_AMI_TYPE_BY_FAMILY, "p5", "AL2023_x86_64_NVDIA")
    assert main(["validate", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    assert (f"{EXAMPLE}:11:5: targets[0]: pool 'train-h100-spot-p5-48xlarge': ami_type: 'AL2023_x86_64_NVDIA' "
            "(for instance family 'p5') is not accepted by EKS") in err
    assert "did you mean 'AL2023_x86_64_NVIDIA'?" in err and "1 problem found" in err


def test_an_instance_family_without_a_known_ami_is_a_validation_error(monkeypatch, capsys):
    monkeypatch.delitem(eks.NVIDIA_AMI_TYPE_BY_FAMILY, "g4dn")
    assert main(["validate", str(EXAMPLE)]) == 2
    assert "ami_type: EKS has no value for instance family 'g4dn'; NVIDIA AMI types are known for" in \
        capsys.readouterr().err

