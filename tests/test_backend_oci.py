"""OKE: what `pulumi up` declares, run under mocks with the real pulumi-oci SDK."""

from __future__ import annotations

import base64
import re

import pulumi
import pytest
import yaml

from conftest import EXAMPLE, TARGETS, assert_golden
from gpustack.clouds.oci import backend
from gpustack.cli import main
from gpustack.clouds.oci import facts as oke
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import Declared, run_program
from pulumi_golden import declared_yaml

NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
RESERVATION = "oci:Core/computeCapacityReservation:ComputeCapacityReservation"
ADDON = "oci:ContainerEngine/addon:Addon"
COMPONENT = "gpustack:oci:GpuNodePool"
GPU_TAINT_FLAG = "--register-with-taints="


@pytest.fixture(scope="module")
def example() -> list[Declared]:
    return run_program(str(EXAMPLE), "oci-prod")


@pytest.fixture(scope="module")
def example_plan():
    return build_plan(load_spec(EXAMPLE)).target("oci-prod")


def node_pools(resources: list[Declared]) -> dict[str, dict]:
    return {r.name: r.inputs for r in resources if r.type == NODE_POOL}


def script(inputs: dict) -> str:
    return base64.b64decode(inputs["nodeMetadata"]["user_data"]).decode("utf-8")


def write_spec(tmp_path, workloads: list[dict], **settings: object) -> str:
    target = dict(TARGETS["oci"], settings={**TARGETS["oci"]["settings"], **settings})
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": workloads},
                                   sort_keys=False))
    return str(path)


TRAIN_A10 = {"name": "detector", "kind": "training", "gpu": "A10", "replicas": 2, "checkpointing": True}


@pytest.mark.golden
def test_example_resources_match_golden(example):
    assert_golden(
        "pulumi/oci-prod.yaml",
        declared_yaml("Every resource `pulumi up` declares for oci-prod of stacks/gpustack.yaml", example),
    )


def test_one_node_pool_per_planned_pool_with_the_planned_shape_and_labels(example, example_plan):
    pools = node_pools(example)
    assert sorted(pools) == sorted(p.name for p in example_plan.pools)
    for pool in example_plan.pools:
        inputs = pools[pool.name]
        assert inputs["name"] == pool.cloud_name and len(pool.cloud_name) <= 32
        assert inputs["nodeShape"] == pool.instance_type
        assert inputs["clusterId"] == "ocid1.cluster.oc1.iad.aaaaaaaaexampleclusterid"
        assert inputs["compartmentId"] == "ocid1.compartment.oc1..aaaaaaaaexamplecompartmentid"
        assert inputs["initialNodeLabels"] == [{"key": k, "value": v} for k, v in pool.labels]
        assert inputs["nodeConfigDetails"]["size"] == pool.min_nodes
        assert inputs["freeformTags"] == inputs["nodeConfigDetails"]["freeformTags"]
        assert inputs["freeformTags"]["team"] == "ml-platform" and "gpustack.dev/pool" not in inputs["freeformTags"]
        # The cluster's version, and the newest x86 GPU image built for it (canned node-pool options).
        assert inputs["kubernetesVersion"] == "v1.31.1"
        # A boot volume sized for GPU images (the ~47 GB default fills with one), as a string in this API.
        assert inputs["nodeSourceDetails"] == {"imageId": "ocid1.image.oc1.iad.aaaagpu", "sourceType": "IMAGE",
                                               "bootVolumeSizeInGbs": str(pool.disk_gib)}
        assert pool.disk_gib >= 150


def test_preemptible_vm_pool_terminates_in_every_availability_domain(example, example_plan):
    [pool] = [p for p in example_plan.pools if "detector-train" in p.workloads]
    assert (pool.capacity, pool.instance_type) == ("spot", "VM.GPU.A10.1")
    placements = node_pools(example)[pool.name]["nodeConfigDetails"]["placementConfigs"]
    assert [p["availabilityDomain"] for p in placements] == [f"Uocm:US-ASHBURN-AD-{i}" for i in (1, 2, 3)]
    for placement in placements:
        assert placement["preemptibleNodeConfig"] == {
            "preemptionAction": {"type": "TERMINATE", "isPreserveBootVolume": False}}
        assert "capacityReservationId" not in placement
        assert placement["subnetId"] == "ocid1.subnet.oc1.iad.aaaaaaaaexamplesubnetid"


def test_bare_metal_pools_are_never_preemptible(example, example_plan):
    bare_metal = [p for p in example_plan.pools if p.instance_type.startswith("BM.")]
    assert bare_metal
    for pool in bare_metal:
        assert pool.capacity != "spot"
        for placement in node_pools(example)[pool.name]["nodeConfigDetails"]["placementConfigs"]:
            assert "preemptibleNodeConfig" not in placement


def test_reserved_floor_is_placed_on_its_capacity_reservation(example, example_plan):
    [floor] = [p for p in example_plan.pools if p.capacity == "reserved"]
    reservations = [r for r in example if r.type == RESERVATION]
    assert [r.name for r in reservations] == [f"{floor.name}-reservation"]
    reservation = reservations[0]
    # pulumi-oci types reservedCount as a string (the API's int64 travels as text).
    assert reservation.inputs["instanceReservationConfigs"] == [
        {"instanceShape": floor.instance_type, "reservedCount": str(floor.reserved_nodes)}]
    assert reservation.inputs["isDefaultReservation"] is False
    [placement] = node_pools(example)[floor.name]["nodeConfigDetails"]["placementConfigs"]
    assert placement["capacityReservationId"] == f"{reservation.name}-id"
    assert placement["availabilityDomain"] == reservation.inputs["availabilityDomain"] == "Uocm:US-ASHBURN-AD-1"
    assert "preemptibleNodeConfig" not in placement  # reservations and preemptible capacity never mix
    assert reservation.parent == next(r.urn for r in example if r.type == COMPONENT and r.name == floor.name)


def test_every_pool_registers_its_taints_through_cloud_init(example, example_plan):
    for pool in example_plan.pools:
        text = script(node_pools(example)[pool.name])
        assert text.startswith("#!/bin/bash\n") and "/var/run/oke-init.sh" in text
        # The root filesystem grows onto the whole boot volume before the node joins.
        assert text.index("/usr/libexec/oci-growfs -y") < text.index("oke-init.sh")
        [flag] = re.findall(r'--kubelet-extra-args "(--register-with-taints=[^"]+)"', text)
        # The form policies recognise: the GPU taint first, then the pool's other taints.
        assert flag == GPU_TAINT_FLAG + ",".join(f"{t.key}={t.value}:{t.effect}" for t in pool.taints)
        assert flag.startswith(GPU_TAINT_FLAG + "nvidia.com/gpu=present:NoSchedule")
    [spot] = [p for p in example_plan.pools if p.capacity == "spot"]
    assert "oci.oraclecloud.com/oke-is-preemptible=present:NoSchedule" in script(node_pools(example)[spot.name])


def test_cluster_autoscaler_addon_holds_every_pools_bounds(example, example_plan):
    [addon] = [r for r in example if r.type == ADDON]
    # Target-wide: a child of the target's GpuPools component, not of one pool.
    assert addon.name == "oci-prod-cluster-autoscaler" and addon.parent.endswith("$gpustack:index:GpuPools::oci-prod")
    assert addon.inputs["addonName"] == "ClusterAutoscaler"
    assert addon.inputs["removeAddonResourcesOnDelete"] is True
    config = {c["key"]: c["value"] for c in addon.inputs["configurations"]}
    assert config["authType"] == "instance"
    expected = [f"{p.min_nodes}:{p.max_nodes}:{p.name}-id" for p in sorted(example_plan.pools, key=lambda p: p.name)]
    assert config["nodes"].split(",") == expected  # the mock's node pool ids


def test_settings_replace_the_lookups_and_can_leave_autoscaling_to_the_user(tmp_path):
    spec = write_spec(tmp_path, [TRAIN_A10], image_id="ocid1.image.oc1.iad.pinned",
                      availability_domains=["Uocm:US-ASHBURN-AD-3", "Uocm:US-ASHBURN-AD-2"], cluster_autoscaler="none")
    resources = run_program(spec, "oci-t")
    [inputs] = node_pools(resources).values()
    assert inputs["nodeSourceDetails"]["imageId"] == "ocid1.image.oc1.iad.pinned"
    assert [p["availabilityDomain"] for p in inputs["nodeConfigDetails"]["placementConfigs"]] == [
        "Uocm:US-ASHBURN-AD-2", "Uocm:US-ASHBURN-AD-3"]
    assert not [r for r in resources if r.type == ADDON]


def test_every_child_is_parented_to_its_pool_component(example):
    components = {r.urn: r for r in example if r.type == COMPONENT}
    for r in example:
        if r.custom and r.type != ADDON:  # the add-on is target-wide
            parent = components[r.parent]
            assert r.name == parent.name or r.name.startswith(parent.name + "-")


SOURCES = [
    {
        "image_id": "gpu-old",
        "source_name": "Oracle-Linux-8.10-Gen2-GPU-2025.01.31-0-OKE-1.31.1-752",
        "source_type": "IMAGE",
    },
    {
        "image_id": "gpu-new",
        "source_name": "Oracle-Linux-8.10-Gen2-GPU-2025.11.20-0-OKE-1.31.1-801",
        "source_type": "IMAGE",
    },
    {
        "image_id": "gpu-arm",
        "source_name": "Oracle-Linux-8.10-aarch64-GPU-2025.12.01-0-OKE-1.31.1-900",
        "source_type": "IMAGE",
    },
    {
        "image_id": "gpu-1.31.10",
        "source_name": "Oracle-Linux-8.10-Gen2-GPU-2025.12.01-0-OKE-1.31.10-900",
        "source_type": "IMAGE",
    },
    {"image_id": "cpu", "source_name": "Oracle-Linux-8.10-2025.12.01-0-OKE-1.31.1-900", "source_type": "IMAGE"},
]


def test_gpu_image_is_the_newest_x86_gpu_image_for_the_cluster_version():
    assert backend.gpu_image(SOURCES, "v1.31.1") == "gpu-new"
    assert backend.gpu_image(SOURCES, "v1.31.10") == "gpu-1.31.10"


def test_no_gpu_image_for_the_version_says_what_to_set():
    with pytest.raises(pulumi.RunError, match=r"no x86 GPU node image for Kubernetes v1\.30\.1.*settings\.image_id"):
        backend.gpu_image(SOURCES, "v1.30.1")


def test_a_bad_enum_value_is_a_located_problem_of_validate(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(oke, "PREEMPTION_ACTION", "STOP")
    spec = write_spec(tmp_path, [TRAIN_A10])
    assert main(["validate", spec]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"{re.escape(spec)}:\d+:\d+: targets\[0\]: pool 'train-a10-spot-vm-gpu-a10-1': "
                     r"preemption_action: 'STOP' is not accepted by OKE; allowed: TERMINATE", err), err


def test_a_bad_autoscaler_setting_is_a_located_problem(tmp_path, capsys):
    spec = write_spec(tmp_path, [TRAIN_A10], cluster_autoscaler="karpenter")
    assert main(["validate", spec]) == 2
    assert "settings.cluster_autoscaler" in capsys.readouterr().err


def test_a_looked_up_image_never_rolls_existing_pools_but_a_pinned_one_does(tmp_path):
    declared = run_program(str(EXAMPLE), "oci-prod")
    pools = [d for d in declared if d.type == "oci:ContainerEngine/nodePool:NodePool"]
    assert pools and all("nodeSourceDetails.imageId" in d.ignore_changes for d in pools)
    doc = yaml.safe_load(EXAMPLE.read_text())
    next(t for t in doc["targets"] if t["name"] == "oci-prod")["settings"]["image_id"] = "ocid1.image.oc1.iad.pinned"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    pinned = [d for d in run_program(str(spec), "oci-prod") if d.type == "oci:ContainerEngine/nodePool:NodePool"]
    assert all("nodeSourceDetails.imageId" not in d.ignore_changes for d in pinned)
    assert {d.inputs["nodeSourceDetails"]["imageId"] for d in pinned} == {"ocid1.image.oc1.iad.pinned"}


def test_looked_up_image_and_version_move_together(example):
    """After a control-plane upgrade the cluster reports a new version; sending it with the old image
    gets a 409, so both stay as created until settings.image_id moves them."""
    for inputs_pool in [d for d in example if d.type == NODE_POOL]:
        assert {"nodeSourceDetails.imageId", "kubernetesVersion"} <= set(inputs_pool.ignore_changes)


def test_a_pinned_image_sets_the_version_of_its_pools(tmp_path):
    spec = write_spec(tmp_path, [TRAIN_A10], image_id="ocid1.image.oc1.iad.pinned")
    [pool] = [d for d in run_program(spec, "oci-t") if d.type == NODE_POOL]
    assert pool.inputs["kubernetesVersion"] == "v1.31.1"  # from the image's name (canned: ...-OKE-1.31.1-801)
    assert "kubernetesVersion" not in pool.ignore_changes and "nodeSourceDetails.imageId" not in pool.ignore_changes


def test_a_pinned_image_must_be_an_oke_image_no_newer_than_the_cluster():
    assert backend.pinned_image_version("i", "Oracle-Linux-8.10-Gen2-GPU-2025.11.20-0-OKE-1.30.9-801", "v1.31.1") \
        == "v1.30.9"
    with pytest.raises(pulumi.RunError, match=r"built for Kubernetes 1\.32\.1, newer than the cluster's v1\.31\.1"):
        backend.pinned_image_version("i", "Oracle-Linux-8.10-Gen2-GPU-2025.11.20-0-OKE-1.32.1-801", "v1.31.1")
    with pytest.raises(pulumi.RunError, match="is not an OKE node image"):
        backend.pinned_image_version("i", "Oracle-Linux-8.10-2025.11.20-0", "v1.31.1")


def test_a_basic_cluster_fails_before_anything_is_declared_when_the_addon_is_wanted(tmp_path, monkeypatch):
    from gpustack.clouds.oci import mocks

    monkeypatch.setitem(mocks.CALLS, "oci:ContainerEngine/getCluster:getCluster",
                        lambda args: {"kubernetesVersion": "v1.31.1", "type": "BASIC_CLUSTER"})
    spec = write_spec(tmp_path, [TRAIN_A10])
    with pytest.raises(Exception, match=r"is a BASIC_CLUSTER cluster.*ENHANCED_CLUSTER.*cluster_autoscaler: none"):
        run_program(spec, "oci-t")
    # With the autoscaler left to the user, a basic cluster is fine.
    spec = write_spec(tmp_path, [TRAIN_A10], cluster_autoscaler="none")
    assert [d for d in run_program(spec, "oci-t") if d.type == NODE_POOL]


def test_enhanced_cluster_check_names_the_fix():
    backend.check_cluster_type("c", "ENHANCED_CLUSTER")
    with pytest.raises(pulumi.RunError, match="upgrade the cluster"):
        backend.check_cluster_type("c", "BASIC_CLUSTER")
