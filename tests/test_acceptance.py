"""What the clouds accept: for every rule, a spec that breaks it gets the located error or the documented
fallback, and a spec that honours it plans as asked."""

from __future__ import annotations

import pytest

from conftest import TARGETS, spec_text

from gpustack.catalog import load_catalog
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_text


def plan(workloads: list[dict], cloud: str, **settings: object):
    text = spec_text(workloads, (cloud,))
    if settings:
        merged = {**TARGETS[cloud]["settings"], **settings}
        target = {**TARGETS[cloud], "settings": {k: v for k, v in merged.items() if v is not None}}
        text = spec_text(workloads, (cloud,)).replace(
            _settings_yaml(TARGETS[cloud]), _settings_yaml(target))
    return build_plan(load_text(text, "spec.yaml")).targets[0], text


def _settings_yaml(target: dict) -> str:
    import yaml
    return yaml.safe_dump([target], sort_keys=False)


def refused(workloads: list[dict], cloud: str, **settings: object) -> tuple[str, str]:
    with pytest.raises(SpecError) as info:
        plan(workloads, cloud, **settings)
    [problem] = info.value.problems
    text = spec_text(workloads, (cloud,))
    return str(problem), text


def line_of(text: str, needle: str, nth: int = 1) -> int:
    start = -1
    for _ in range(nth):
        start = text.index(needle, start + 1)
    return text.count("\n", 0, start) + 1


def codes(target) -> list[str]:
    return [w.code for w in target.warnings]


SERVE = {"name": "serve", "kind": "inference", "gpus": 1, "replicas": {"min": 2, "max": 4}}


# -- Azure capacity reservations: supported GPU series only ------------------------------------------

@pytest.mark.parametrize("gpu", ["H100", "H100-NVL", "A100-40GB"])
def test_azure_floor_on_an_unreservable_series_runs_on_demand_with_a_warning(gpu):
    target, _ = plan([{**SERVE, "gpu": gpu, "sharing": "none"}], "azure")
    assert {p.capacity for p in target.pools} == {"on-demand"}
    assert all(p.reserved_nodes == 0 for p in target.pools)
    [floor] = target.pools
    assert floor.min_nodes >= 1  # the floor still runs: kept by min_nodes
    assert "reservation-unavailable" in codes(target)
    message = next(w.message for w in target.warnings if w.code == "reservation-unavailable")
    assert "capacity-reservation-overview" in message


def test_azure_floor_on_a_supported_series_is_reserved():
    target, _ = plan([{**SERVE, "gpu": "A100-80GB", "sharing": "none"}], "azure")
    floor = [p for p in target.pools if p.capacity == "reserved"]
    assert floor and floor[0].instance_type.endswith("ads_A100_v4") and floor[0].reserved_nodes >= 1
    assert "reservation-unavailable" not in codes(target)


def test_azure_pinned_reserved_capacity_that_cannot_be_reserved_is_a_located_error():
    workload = {**SERVE, "gpu": "H100", "sharing": "none", "capacity": "reserved"}
    message, text = refused([workload], "azure")
    assert message.startswith(f"spec.yaml:{line_of(text, 'capacity: reserved')}:")
    assert "workloads[0].capacity" in message
    assert "refuses reserved capacity" in message and "ND-series" in message
    assert "what would work: capacity: spot or on-demand" in message  # eastus: Spot unknown, not refused


def test_azure_pinned_instance_type_that_cannot_be_reserved_is_a_located_error():
    workload = {**SERVE, "gpu": "A100-80GB", "sharing": "none",
                "instance_types": {"azure": "Standard_ND96amsr_A100_v4"}}
    message, text = refused([workload], "azure")
    assert message.startswith(f"spec.yaml:{line_of(text, 'azure: Standard_ND96amsr_A100_v4')}:")
    assert "workloads[0].instance_types.azure" in message
    assert "pin a type it accepts on reserved (Standard_NC24ads_A100_v4" in message


# -- Azure Spot: only sizes with a known Spot meter --------------------------------------------------

TRAIN = {"name": "train", "kind": "training", "gpus": 1, "replicas": 2, "checkpointing": True}


# A source that lists the region's Spot meters but none for this size: Azure does not sell it as Spot there.
NO_METER = ("cloud,region,instance_type,gpu,gpus,vcpus,memory_gib,on_demand_usd,spot_usd,source,note,as_of\n"
            "azure,eastus,Standard_NC40ads_H100_v5,H100-NVL,1,40,320,6.98,,retail-prices-2026-11,,2026-11-30\n"
            "azure,eastus,Standard_NC80adis_H100_v5,H100-NVL,2,80,640,13.96,,retail-prices-2026-11,,2026-11-30\n")


def with_no_meter(tmp_path, workloads: list[dict]) -> str:
    (tmp_path / "meters.csv").write_text(NO_METER, encoding="utf-8")
    return spec_text(workloads, ("azure",), catalog="meters.csv")  # next to the spec (base_dir=tmp_path)


def test_azure_spot_without_a_known_meter_falls_back_to_on_demand(tmp_path):
    target = build_plan(load_text(with_no_meter(tmp_path, [{**TRAIN, "gpu": "H100-NVL"}]), "spec.yaml",
                                  base_dir=tmp_path)).targets[0]
    assert [p.capacity for p in target.pools] == ["on-demand"]
    assert "spot-unavailable" in codes(target)


def test_azure_spot_where_the_sources_list_no_meters_is_planned_at_the_on_demand_price():
    target, _ = plan([{**TRAIN, "gpu": "H100-NVL"}], "azure")  # eastus: an on-demand-only price table
    [pool] = target.pools
    assert pool.capacity == "spot" and "no-spot-price" in codes(target)
    assert pool.price.usd_per_node_hour == load_catalog().instance("azure", "eastus", pool.instance_type).on_demand


def test_azure_spot_with_a_meter_runs_on_spot():
    target, _ = plan([{**TRAIN, "gpu": "A10"}], "azure")
    assert [p.capacity for p in target.pools] == ["spot"]


def test_azure_pinned_spot_without_a_meter_is_a_located_error(tmp_path):
    text = with_no_meter(tmp_path, [{**TRAIN, "gpu": "H100-NVL", "capacity": "spot"}])
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml", base_dir=tmp_path))
    [problem] = info.value.problems
    message = str(problem)
    assert message.startswith(f"spec.yaml:{line_of(text, 'capacity: spot')}:")
    assert "no Azure Spot meter is known" in message and "capacity: on-demand" in message


# -- GCP: A3 High below 8 GPUs is Spot / Flex-start only; A3 Ultra has no plain on-demand ---------------

def test_gcp_small_h100_floor_moves_to_a_type_that_can_be_reserved():
    target, _ = plan([{**SERVE, "gpu": "H100", "sharing": "none"}], "gcp")
    types = {p.instance_type for p in target.pools}
    assert types == {"a3-highgpu-8g"}
    assert any(p.capacity == "reserved" for p in target.pools)


def test_gcp_small_h100_training_on_spot_uses_the_small_type():
    target, _ = plan([{**TRAIN, "gpu": "H100", "replicas": 1}], "gcp")
    assert [(p.capacity, p.instance_type) for p in target.pools] == [("spot", "a3-highgpu-1g")]


def test_gcp_pinned_spot_only_type_on_demand_is_a_located_error():
    workload = {**TRAIN, "gpu": "H100", "checkpointing": False, "instance_types": {"gcp": "a3-highgpu-2g"}}
    message, text = refused([workload], "gcp")
    assert message.startswith(f"spec.yaml:{line_of(text, 'gcp: a3-highgpu-2g')}:")
    assert "runs only as Spot or Flex-start" in message
    assert "pin a type it accepts on on-demand (a3-highgpu-8g" in message and "capacity: spot" in message


def test_gcp_on_demand_h200_is_a_located_error_naming_what_works():
    notebook = {"name": "nb", "kind": "notebook", "gpu": "H200", "gpu_fraction": 0.5, "replicas": 2}
    message, text = refused([notebook], "gcp")
    assert message.startswith(f"spec.yaml:{line_of(text, 'gpu: H200')}:")
    assert "has no plain on-demand" in message and "capacity: spot or reserved" in message


# -- OCI: bare-metal shapes are never preemptible -----------------------------------------------------

def test_oci_bare_metal_spot_falls_back_to_on_demand():
    target, _ = plan([{**TRAIN, "gpu": "H100", "gpus": 8}], "oci")
    assert [p.capacity for p in target.pools] == ["on-demand"]
    assert "spot-unavailable" in codes(target)


def test_oci_vm_shape_runs_preemptible():
    target, _ = plan([{**TRAIN, "gpu": "A10"}], "oci")
    assert [(p.capacity, p.instance_type) for p in target.pools] == [("spot", "VM.GPU.A10.1")]


def test_oci_pinned_spot_on_bare_metal_is_a_located_error():
    message, text = refused([{**TRAIN, "gpu": "H100", "gpus": 8, "capacity": "spot"}], "oci")
    assert message.startswith(f"spec.yaml:{line_of(text, 'capacity: spot')}:")
    assert "cannot be preemptible" in message and "capacity: on-demand or reserved" in message


# -- Zones: in the target's region, offering the pool's GPU ---------------------------------------------

def test_gke_node_locations_of_another_region_are_a_located_error():
    with pytest.raises(SpecError) as info:
        plan([{**TRAIN, "gpu": "T4"}], "gcp", node_locations=["us-central1-a", "us-east4-a"])
    [problem] = info.value.problems
    assert "targets[0].settings.node_locations[1]" in str(problem)
    assert "'us-east4-a' is a zone of us-east4, not of the target's region us-central1" in str(problem)


def test_gke_pool_is_placed_only_in_zones_that_offer_its_gpu():
    target, _ = plan([{**TRAIN, "gpu": "A100-80GB"}], "gcp", node_locations=["us-central1-a", "us-central1-b"])
    [pool] = target.pools
    assert pool.zones == ("us-central1-a",)
    assert any("do not offer A100-80GB" in note for note in pool.notes)


def test_gke_no_zone_offering_the_gpu_is_a_located_error():
    with pytest.raises(SpecError) as info:
        plan([{**TRAIN, "gpu": "A100-80GB"}], "gcp", node_locations=["us-central1-b"])
    [problem] = info.value.problems
    assert "targets[0].settings.node_locations" in str(problem)
    assert "zones of us-central1 that do: us-central1-a, us-central1-c" in str(problem)


def test_gke_pool_without_node_locations_warns_which_zones_offer_its_gpu():
    target, _ = plan([{**TRAIN, "gpu": "H100"}], "gcp", node_locations=None)
    assert "zones-unchecked" in codes(target)
    message = next(w.message for w in target.warnings if w.code == "zones-unchecked")
    assert "us-central1-a, us-central1-b, us-central1-c" in message
    listed, _ = plan([{**TRAIN, "gpu": "H100"}], "gcp")
    assert "zones-unchecked" not in codes(listed)


def test_oke_availability_domain_of_another_region_is_a_located_error():
    with pytest.raises(SpecError) as info:
        plan([{**TRAIN, "gpu": "A10"}], "oci", availability_domains=["Uocm:PHX-AD-1"])
    assert "settings.availability_domains[0]" in str(info.value.problems[0])
    target, _ = plan([{**TRAIN, "gpu": "A10"}], "oci", availability_domains=["Uocm:US-ASHBURN-AD-1"])
    assert target.pools


# -- Reserved floors across zones, or a warning ------------------------------------------------------

FLOOR = {**SERVE, "gpu": "A100-80GB", "sharing": "none", "capacity": "reserved", "replicas": 2,
         "instance_types": {"gcp": "a2-ultragpu-1g", "aws": "p4de.24xlarge"}}


def test_gke_floor_is_spread_with_one_reservation_per_zone():
    target, _ = plan([FLOOR], "gcp", node_locations=["us-central1-a", "us-central1-c"])
    [pool] = target.pools
    assert pool.reservations == (("us-central1-a", 1), ("us-central1-c", 1))
    assert "floor-single-zone" not in codes(target)


def test_gke_floor_in_one_zone_is_warned():
    target, _ = plan([FLOOR], "gcp")
    [pool] = target.pools
    assert pool.reservations == ()
    assert "floor-single-zone" in codes(target)


def test_eks_floor_of_several_nodes_warns_that_it_sits_in_one_zone():
    target, _ = plan([{**FLOOR, "replicas": 16}], "aws")
    assert "floor-single-zone" in codes(target)
    target, _ = plan([{**FLOOR, "replicas": 1}], "aws")  # one node is one zone: nothing to spread
    assert "floor-single-zone" not in codes(target)


# -- Disks: sized for GPU images, per workload -------------------------------------------------------

def test_root_volume_defaults_by_gpu_class():
    small, _ = plan([{**TRAIN, "gpu": "T4"}], "aws")
    large, _ = plan([{**TRAIN, "gpu": "H100"}], "aws")
    assert small.pools[0].disk_gib == 150 and large.pools[0].disk_gib == 500


def test_disk_override_gets_its_own_pool_and_size():
    target, _ = plan([{**TRAIN, "gpu": "T4"}, {**TRAIN, "name": "big", "gpu": "T4", "disk": "1Ti"}], "aws")
    disks = {p.workloads: (p.disk_gib, p.name) for p in target.pools}
    assert disks[("big",)][0] == 1024 and disks[("big",)][1].endswith("disk1024")
    assert disks[("train",)][0] == 150 and "disk" not in disks[("train",)][1]


def test_disk_beyond_the_cloud_limit_is_a_located_error():
    message, text = refused([{**TRAIN, "gpu": "A10", "disk": "4Ti"}], "azure")
    assert message.startswith(f"spec.yaml:{line_of(text, 'disk: 4Ti')}:")
    assert "workloads[0].disk" in message and "30Gi to 2048Gi" in message


def test_disk_too_small_for_a_gpu_node_is_a_located_error():
    with pytest.raises(SpecError) as info:
        load_text(spec_text([{**TRAIN, "gpu": "T4", "disk": "10Gi"}]), "spec.yaml")
    assert "workloads[0].disk" in str(info.value) and "less than 30Gi" in str(info.value)


def test_gcp_h200_on_spot_plans_where_on_demand_is_refused():
    target, _ = plan([{**TRAIN, "gpu": "H200", "gpus": 8}], "gcp", node_locations=["us-central1-b"])
    assert [(p.capacity, p.instance_type) for p in target.pools] == [("spot", "a3-ultragpu-8g")]


def test_azure_rules_by_size_name():
    from gpustack.clouds.azure import acceptance

    assert acceptance.reservation_refusal("Standard_NV36ads_A10_v5") is None
    assert acceptance.reservation_refusal("Standard_NC8as_T4_v3") is None
    assert "ND-series" in acceptance.reservation_refusal("Standard_ND96isr_H100_v5")
    assert acceptance.reservation_refusal("Standard_NC40ads_H100_v5") is not None  # NCads H100 v5
    assert "B-series or promo" in acceptance.spot_refusal("Standard_B4ms", "eastus", 0.05)
    assert acceptance.spot_refusal("Standard_NC24ads_A100_v4", "eastus", 1.2) is None


def test_aks_floor_of_several_nodes_warns_that_it_is_not_spread_over_zones():
    """AKS agent pools and capacity reservation groups are regional: nothing spreads the floor."""
    target, _ = plan([{**FLOOR, "replicas": 3}], "azure")
    [warning] = [w for w in target.warnings if w.code == "floor-single-zone"]
    assert "is not spread over zones, so one zone outage can take all of it" in warning.message
    assert "learn.microsoft.com/azure/aks/availability-zones" in warning.message
    target, _ = plan([{**FLOOR, "replicas": 1}], "azure")
    assert "floor-single-zone" not in codes(target)
