"""GKE under Pulumi mocks with the real pulumi-gcp SDK: what `pulumi up` would declare."""

from __future__ import annotations

import pytest

from conftest import EXAMPLE, assert_golden, spec_text
from gpustack.cli import main
from gpustack.clouds.gcp import facts as gke
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import Declared, run_program
from pulumi_golden import declared_yaml

NODE_POOL = "gcp:container/nodePool:NodePool"
RESERVATION = "gcp:compute/reservation:Reservation"


@pytest.fixture(scope="module")
def declared() -> list[Declared]:
    return run_program(str(EXAMPLE), "gcp-prod")


@pytest.fixture(scope="module")
def target():
    return build_plan(load_spec(EXAMPLE)).target("gcp-prod")


def node_pool(resources: list[Declared], pool) -> dict:
    [found] = [r for r in resources if r.type == NODE_POOL and r.name == f"{pool.name}-node-pool"]
    return found.inputs


@pytest.mark.golden
def test_example_resources_match_golden(declared):
    assert_golden("pulumi/gcp-prod.yaml",
                  declared_yaml("Every resource `pulumi up` declares for gcp-prod of stacks/gpustack.yaml", declared))


def test_training_pool_is_spot_with_the_gpu_taint_and_gke_installed_driver(declared, target):
    [pool] = [p for p in target.pools if p.kind == "training" and p.capacity == "spot"]
    inputs = node_pool(declared, pool)
    config = inputs["nodeConfig"]
    assert config["spot"] is True and config["machineType"] == "a3-highgpu-8g"
    assert config["guestAccelerators"] == [{"type": "nvidia-h100-80gb", "count": 8,
                                            "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}]
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in config["taints"]
    assert {"key": "cloud.google.com/gke-spot", "value": "true", "effect": "NO_SCHEDULE"} in config["taints"]
    assert inputs["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 2, "locationPolicy": "ANY"}
    assert inputs["name"] == pool.cloud_name and inputs["cluster"] == "ml-prod"
    assert inputs["location"] == "us-central1" and inputs["project"] == "acme-ml-prod"
    assert inputs["nodeLocations"] == ["us-central1-a", "us-central1-b", "us-central1-c"]  # all offer H100
    assert config["diskSizeGb"] == pool.disk_gib == 500
    assert config["labels"] == dict(pool.labels)
    assert config["resourceLabels"] == {"team": "ml-platform", "cost-center": "4711", "environment": "prod",
                                        "model": "llama-70b", "experiment-id": "exp-42"}


def test_inference_floor_consumes_its_own_specific_reservations_one_per_zone(declared, target):
    floors = [p for p in target.pools if p.capacity == "reserved"]
    assert len(floors) == 3  # one per MIG profile: GKE takes one partition size per pool
    for pool in floors:
        parts = dict(pool.reservations) or {pool.zones[0]: pool.reserved_nodes}
        reservations = [r.inputs for r in declared if r.type == RESERVATION and r.name.startswith(f"{pool.name}-reservation")]
        assert {r["zone"]: r["specificReservation"]["count"] for r in reservations} == parts
        assert len({r["name"] for r in reservations}) == 1  # one name, unique per zone
        for reservation in reservations:
            assert reservation["specificReservationRequired"] is True
            assert reservation["specificReservation"]["instanceProperties"] == {
                "machineType": pool.instance_type, "guestAccelerators": [
                    {"acceleratorType": "nvidia-a100-80gb", "acceleratorCount": pool.gpus_per_node}]}
        inputs = node_pool(declared, pool)
        assert inputs["nodeConfig"]["reservationAffinity"] == {
            "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
            "values": [reservations[0]["name"]]}
        assert inputs["nodeLocations"] == sorted(parts)
        assert "spot" not in inputs["nodeConfig"]
        assert inputs["autoscaling"] == {"totalMinNodeCount": pool.reserved_nodes,
                                         "totalMaxNodeCount": pool.reserved_nodes}
        assert inputs["initialNodeCount"] == -(-pool.reserved_nodes // len(parts))  # per zone
        [profile] = {p for g in pool.sharing.mig for p, _ in g.layout}
        assert inputs["nodeConfig"]["guestAccelerators"][0]["gpuPartitionSize"] == profile
    names = {r.inputs["name"] for r in declared if r.type == RESERVATION}
    assert names == {f"ml-prod-{p.cloud_name}" for p in floors}


def test_notebooks_are_time_shared_with_the_planned_clients_and_no_cloud_schedule(declared, target):
    [pool] = [p for p in target.pools if p.kind == "notebook"]
    accelerator = node_pool(declared, pool)["nodeConfig"]["guestAccelerators"][0]
    assert accelerator["gpuSharingConfig"] == {"gpuSharingStrategy": "TIME_SHARING",
                                               "maxSharedClientsPerGpu": pool.sharing.replicas}
    assert pool.sharing.replicas == 4 and accelerator["type"] == "nvidia-tesla-t4"
    assert any("no scheduled scaling" in note for note in pool.notes)  # the in-cluster auto-stop covers it
    assert {r.type for r in declared} == {"gpustack:index:GpuPools", "gpustack:gcp:GpuNodePool", NODE_POOL, RESERVATION}


def test_mps_pools_get_the_mps_strategy(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([{"name": "lab", "kind": "notebook", "gpu": "L4", "gpu_fraction": 0.25,
                                "replicas": 8, "sharing": "mps"}], ("gcp",)))
    [inputs] = [r.inputs for r in run_program(str(spec), "gcp-t") if r.type == NODE_POOL]
    assert inputs["nodeConfig"]["guestAccelerators"][0]["gpuSharingConfig"] == {
        "gpuSharingStrategy": "MPS", "maxSharedClientsPerGpu": 4}


def test_children_are_parented_to_their_pool_component(declared):
    components = {r.urn: r.name for r in declared if r.type == "gpustack:gcp:GpuNodePool"}
    for r in declared:
        if r.custom:
            assert r.parent in components and r.name.startswith(components[r.parent] + "-"), r.name


def test_labels_gce_cannot_carry_are_rejected_for_gke_only(tmp_path, capsys):
    workload = {"name": "chat", "kind": "inference", "gpu": "L4", "gpu_fraction": 0.5, "replicas": 2,
                "labels": {"model": "Llama-3.1"}}
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([workload], ("aws", "gcp")))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    # Located where the label is written, once (not at the target, once per pool).
    line = spec.read_text().splitlines().index("    model: Llama-3.1") + 1
    assert f"spec.yaml:{line}:5: workloads[0].labels.model: label model='Llama-3.1' cannot be a Compute Engine label" in err
    assert "e.g. model='llama-3-1'" in err and "1 problem found" in err  # EKS tags take it as it is


def test_a_bad_enum_value_is_a_located_validation_error(monkeypatch, capsys):
    monkeypatch.setattr(gke, "GPU_DRIVER_VERSION", "LATESTT")
    assert main(["validate", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    line = EXAMPLE.read_text().splitlines().index("  - name: gcp-prod") + 1  # where the target starts
    assert (f"{EXAMPLE}:{line}:5: targets[2]: pool 'train-h100-spot-a3-highgpu-8g': gpu_driver_installation_config."
            "gpu_driver_version: 'LATESTT' (for the GKE-managed driver) is not accepted by GKE") in err
    assert "did you mean 'LATEST'?" in err


def test_an_unknown_partition_size_is_a_validation_error(monkeypatch, capsys):
    monkeypatch.setitem(gke._PARTITION_SIZES, "A100-80GB", ("1g.10gb", "2g.20gb", "7g.80gb"))
    monkeypatch.setattr(gke.GKE, "mig_profiles", lambda self, gpu, profiles: profiles)  # as if the planner allowed it
    assert main(["validate", str(EXAMPLE)]) == 2
    assert "gpu_partition_size: '3g.40gb' (for the MIG profiles of the pool on A100-80GB) is not accepted by GKE" \
        in capsys.readouterr().err


def test_a_floor_of_two_nodes_gets_one_reservation_in_each_of_two_zones(tmp_path):
    import yaml

    from conftest import TARGETS
    floor = {"name": "serve", "kind": "inference", "gpu": "A100-80GB", "gpus": 1, "sharing": "none",
             "capacity": "reserved", "replicas": 2, "instance_types": {"gcp": "a2-ultragpu-1g"}}
    target = {**TARGETS["gcp"], "settings": {"node_locations": ["us-central1-a", "us-central1-b", "us-central1-c"]}}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": [floor]}))
    declared = run_program(str(spec), target["name"])
    reservations = sorted((r.name, r.inputs["zone"], r.inputs["specificReservation"]["count"], r.inputs["name"])
                          for r in declared if r.type == RESERVATION)
    [pool] = [r.inputs for r in declared if r.type == NODE_POOL]
    # us-central1-b offers no A100 80GB: the floor is split over a and c, one node and one reservation each.
    assert [(zone, count) for _, zone, count, _ in reservations] == [("us-central1-a", 1), ("us-central1-c", 1)]
    assert all(name.endswith(f"-reservation-{zone}") for name, zone, _, _ in reservations)
    assert len({cloud_name for *_, cloud_name in reservations}) == 1
    assert pool["nodeLocations"] == ["us-central1-a", "us-central1-c"]
    assert pool["nodeConfig"]["reservationAffinity"]["values"] == [reservations[0][3]]
    assert pool["initialNodeCount"] == 1  # per zone
