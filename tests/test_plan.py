"""The planner and cost model: decisions per kind on every cloud, hand-computed figures, a golden plan."""

from __future__ import annotations

import json
import random

import pytest
import yaml

from conftest import EVERY_CLOUD, EXAMPLE, TARGETS, assert_golden, spec_text
from gpustack.plan import build_plan
from gpustack.spec import load_spec, load_text

CLOUDS = EVERY_CLOUD


def plan_of(workloads: list[dict], clouds: tuple[str, ...] = ("aws",), **top: object):
    return build_plan(load_text(spec_text(workloads, clouds, **top), "spec.yaml"))


@pytest.mark.golden
def test_example_plan_matches_golden_json():
    assert_golden("plan/example.json", build_plan(load_spec(EXAMPLE)).to_json())


def test_plan_json_is_byte_identical_across_runs():
    assert build_plan(load_spec(EXAMPLE)).to_json() == build_plan(load_spec(EXAMPLE)).to_json()


def test_contract_fields_are_present():
    data = json.loads(build_plan(load_spec(EXAMPLE)).to_json())
    assert set(data) >= {"version", "name", "targets"}
    for target in data["targets"]:
        assert set(target) >= {"name", "cloud", "region", "pools", "gpus", "cost"}
        assert set(target["gpus"]) >= {"baseline", "lower_bound", "required", "provisioned"}
        assert set(target["cost"]) >= {"baseline_monthly_usd", "planned_monthly_usd", "savings_pct", "breakdown"}
        assert [s["step"] for s in target["cost"]["breakdown"]] == ["sharing", "spot", "commitments", "schedules"]
        for pool in target["pools"]:
            assert set(pool) >= {"name", "kind", "capacity", "instance_type", "gpu", "gpus_per_node", "min_nodes",
                                 "max_nodes", "sharing", "schedule", "workloads", "labels", "taints",
                                 "monthly_cost_usd"}


# -- decisions per kind, one table over the four clouds ------------------------------------------

TRAINING = {"name": "pretrain", "kind": "training", "gpu": "H100", "gpus": 8, "replicas": 2, "checkpointing": True}


@pytest.mark.parametrize("cloud, capacity, warnings", [
    ("aws", "spot", ()),
    # eastus: the sources list no Spot meters there, so priced at on-demand; and the autoscaler predicts no
    # GPU label for ND96isr_H100_v5 at zero.
    ("azure", "spot", ("no-spot-price", "template-gap")),
    ("gcp", "spot", ()),
    ("oci", "on-demand", ("spot-unavailable",)),  # bare-metal H100 shapes cannot be preemptible
])
def test_checkpointed_training_runs_on_spot_where_the_cloud_allows(cloud, capacity, warnings):
    target = plan_of([TRAINING], (cloud,)).targets[0]
    [pool] = target.pools
    assert (pool.kind, pool.capacity, pool.gpus_per_node, pool.max_nodes, pool.min_nodes) == (
        "training", capacity, 8, 2, 0)
    assert pool.taints[0].key == "nvidia.com/gpu" and pool.taints[0].effect == "NoSchedule"
    assert tuple(w.code for w in target.warnings) == warnings


@pytest.mark.parametrize("cloud", CLOUDS)
def test_training_without_checkpointing_stays_on_demand_with_a_warning(cloud):
    target = plan_of([{**TRAINING, "checkpointing": False, "gpu": "A100-80GB"}], (cloud,)).targets[0]
    assert {p.capacity for p in target.pools} == {"on-demand"}
    assert "no-checkpointing" in [w.code for w in target.warnings]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_inference_gets_a_reserved_floor_and_an_on_demand_burst(cloud):
    serve = {"name": "chat", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb",
             "replicas": {"min": 4, "max": 10}}
    pools = plan_of([serve], (cloud,)).targets[0].pools
    floor = [p for p in pools if p.capacity == "reserved"]
    burst = [p for p in pools if p.capacity == "on-demand"]
    assert all(p.min_nodes == p.max_nodes == p.reserved_nodes > 0 for p in floor)
    assert all(p.min_nodes == 0 and p.reserved_nodes == 0 for p in burst)
    assert all(p.sharing.mode == "mig" for p in pools)
    if burst:  # the floor holds replicas.min; the burst pool carries the rest of the peak
        assert sum(pl.replicas for p in floor for pl in p.placements) == 4
        assert sum(pl.replicas for p in burst for pl in p.placements) == 6
    else:  # the reserved nodes have room for the peak: they carry all of it, said in a note
        assert sum(pl.replicas for p in floor for pl in p.placements) == 10
        assert any("room for the peak" in note for p in floor for note in p.notes)


def test_the_burst_rides_on_the_floors_spare_room_first():
    # One g4dn.xlarge holds 4 quarter-GPU replicas: a floor of 1 replica leaves room for the peak of 4,
    # so there is no on-demand pool at all (it would have doubled the cost).
    serve = {"name": "s", "kind": "inference", "gpu": "T4", "gpu_fraction": 0.25, "replicas": {"min": 1, "max": 4}}
    [pool] = plan_of([serve]).targets[0].pools
    assert (pool.capacity, pool.max_nodes, pool.instance_type) == ("reserved", 1, "g4dn.xlarge")
    # Beyond the floor's room the burst pool gets only the extra nodes: 9 replicas need 3 nodes, 1 reserved.
    serve["replicas"] = {"min": 1, "max": 9}
    floor, burst = sorted(plan_of([serve]).targets[0].pools, key=lambda p: p.capacity != "reserved")
    assert (floor.max_nodes, burst.min_nodes, burst.max_nodes) == (1, 0, 2)


@pytest.mark.parametrize("cloud, gpu", [("aws", "T4"), ("azure", "T4"), ("gcp", "T4"), ("oci", "A10")])
def test_notebooks_are_time_sliced_on_demand_and_scheduled(cloud, gpu):
    notebook = {"name": "nb", "kind": "notebook", "gpu": gpu, "gpu_fraction": 0.25, "replicas": 12,
                "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}}
    [pool] = plan_of([notebook], (cloud,)).targets[0].pools
    assert (pool.capacity, pool.sharing.mode, pool.sharing.replicas, pool.min_nodes) == (
        "on-demand", "time-slicing", 4, 0)
    assert pool.schedule is not None and pool.schedule.active_hours_per_week == 50


def test_fine_tuning_gets_spot_and_an_on_demand_fallback_scaled_to_zero():
    tune = {"name": "tune", "kind": "fine-tuning", "gpu": "A100-80GB", "gpus": 1, "replicas": 4,
            "checkpointing": True, "hours_per_month": 100}
    pools = plan_of([tune], ("azure",)).targets[0].pools
    assert sorted((p.capacity, p.role, p.min_nodes) for p in pools) == [("on-demand", "fallback", 0),
                                                                         ("spot", "main", 0)]
    fallback = next(p for p in pools if p.role == "fallback")
    assert fallback.monthly_cost_usd == 0  # carries load only when spot is short


# -- hand-computed figures -----------------------------------------------------------------------

def test_forty_half_gpu_replicas_need_twenty_gpus_on_single_gpu_nodes():
    serve = {"name": "s", "kind": "inference", "gpu": "T4", "gpu_fraction": 0.5, "replicas": 40}
    target = plan_of([serve]).targets[0]
    [pool] = target.pools
    assert pool.gpus_per_node == 1
    assert (target.gpus.baseline, target.gpus.lower_bound, target.gpus.required, target.gpus.provisioned) == (
        40, 20, 20, 20)
    assert pool.sharing.replicas == 2


def test_office_hours_are_fifty_hours_a_week_or_29_8_percent_of_always_on():
    notebook = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpus": 1, "replicas": 1,
                "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}}
    target = plan_of([notebook]).targets[0]
    [pool] = target.pools
    assert pool.schedule.active_hours_per_week == 50
    assert round(pool.hours_per_month / 730, 3) == 0.298
    # g4dn.xlarge at $0.526/h: always on $383.98, scheduled $114.29; the schedules step is the difference.
    assert pool.instance_type == "g4dn.xlarge"
    assert round(pool.monthly_cost_usd, 2) == round(0.526 * 50 * 730 / 168, 2) == 114.28
    assert {s.step: s.monthly_usd for s in target.cost.breakdown}["schedules"] == round(383.98 - 114.28, 2)


def test_breakdown_adds_up_to_baseline_minus_planned():
    for target in build_plan(load_spec(EXAMPLE)).targets:
        total = sum(step.monthly_usd for step in target.cost.breakdown)
        assert abs(total - (target.cost.baseline_monthly_usd - target.cost.planned_monthly_usd)) < 0.005
        assert target.cost.savings_pct == round(100 * (target.cost.baseline_monthly_usd
                                                       - target.cost.planned_monthly_usd)
                                                / target.cost.baseline_monthly_usd, 1)


def test_baseline_is_whole_on_demand_gpus_per_replica_always_on_on_an_instance_that_holds_it():
    # 3 replicas of 2 H100s on AWS: p5.4xlarge has 1 GPU and cannot hold one; p5.48xlarge holds 4 replicas.
    target = plan_of([{**TRAINING, "gpus": 2, "replicas": 3}]).targets[0]
    from gpustack.catalog import load_catalog

    rows = [r for r in load_catalog().in_region("aws", "us-east-1") if r.gpu == "H100" and r.gpus >= 2]
    per_replica = min(r.on_demand / (r.gpus // 2) for r in rows)
    assert target.cost.baseline_monthly_usd == round(3 * per_replica * 730, 2)


def test_spec_prices_override_the_catalog():
    notebook = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpus": 1, "replicas": 1}
    base = plan_of([notebook]).targets[0].pools[0]
    priced = plan_of([notebook], pricing={"instances": {base.instance_type: {"on_demand": 0.25}}}).targets[0].pools[0]
    assert priced.instance_type == base.instance_type
    assert priced.price.usd_per_node_hour == 0.25 and priced.price.source == "spec pricing.instances"
    assert priced.monthly_cost_usd == 0.25 * 730
    # A higher override makes another type the cheapest: the choice follows the prices given.
    dearer = plan_of([notebook], pricing={"instances": {base.instance_type: {"on_demand": 5.0}}}).targets[0].pools[0]
    assert dearer.instance_type != base.instance_type


def test_spot_discount_and_commitment_discount_from_the_spec():
    serve = {"name": "s", "kind": "inference", "gpu": "T4", "gpus": 1, "replicas": 1}
    train = {**TRAINING, "gpu": "T4", "gpus": 1, "replicas": 1}
    target = plan_of([serve, train], pricing={"spot_discount": 0.5, "commitment_discount": 0.25}).targets[0]
    by_capacity = {p.capacity: p for p in target.pools}
    assert by_capacity["reserved"].price.usd_per_node_hour == round(0.526 * 0.75, 6)
    assert by_capacity["spot"].price.usd_per_node_hour == round(0.526 * 0.5, 6)


def test_spot_discount_is_the_fraction_taken_off_on_demand():
    # 0.7 off: the spot node-hour costs 30% of on-demand (a discount of 0.5 reads the same either way).
    train = {**TRAINING, "gpu": "T4", "gpus": 1, "replicas": 1}
    [pool] = plan_of([train], pricing={"spot_discount": 0.7}).targets[0].pools
    assert pool.capacity == "spot"
    assert pool.price.usd_per_node_hour == round(0.526 * 0.3, 6) == 0.1578
    assert pool.price.source == "on-demand x (1 - spec spot_discount 0.7)"


def test_unit_costs_divide_the_workloads_share_of_its_pools():
    train = {**TRAINING, "runs_per_month": 4, "hours_per_month": 100}
    target = plan_of([train]).targets[0]
    [unit] = target.workloads
    assert unit.usd_per_run == pytest.approx(target.pools[0].monthly_cost_usd / 4)
    serve = {"name": "s", "kind": "inference", "gpu": "T4", "gpus": 1, "replicas": 2, "requests_per_hour": 1000}
    [unit] = plan_of([serve]).targets[0].workloads
    assert unit.usd_per_1k_requests == pytest.approx(unit.monthly_usd / 730)


# -- identity and determinism --------------------------------------------------------------------

def test_adding_a_workload_to_a_deployed_plan_never_renames_or_changes_the_instance_of_existing_pools():
    # Against the deployed plan (what gpustack diff compares with): a pool keeps its type unless moving
    # saves more than pools.type_change_saving; planned afresh, a pool's type is its workloads' cheapest.
    deployed = build_plan(load_spec(EXAMPLE))
    before = {(t.name, p.name): (p.cloud_name, p.instance_type) for t in deployed.targets for p in t.pools}
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["workloads"].insert(0, {"name": "zz-new", "kind": "inference", "gpu": "A100-80GB", "mig": "2g.20gb",
                                "cpu": 4, "replicas": {"min": 2, "max": 5}})
    # On gcp-prod, moving the new workload's pool group onto one type saves 12%: under this threshold.
    doc["pools"] = {"type_change_saving": 0.5}
    for target in doc["targets"]:
        target["workloads"].append("zz-new")
    after = {(t.name, p.name): (p.cloud_name, p.instance_type)
             for t in build_plan(load_text(yaml.safe_dump(doc)), current=deployed).targets for p in t.pools}
    for key, value in before.items():
        assert after.get(key) == value, key


def test_reordering_workloads_and_targets_gives_the_same_plan():
    workloads = [TRAINING, {"name": "s", "kind": "inference", "gpu": "A100-80GB", "gpu_memory": "20Gi",
                            "replicas": {"min": 1, "max": 5}},
                 {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.5, "replicas": 3}]
    clouds = ("aws", "azure", "gcp")
    reference = plan_of(workloads, clouds).to_json()
    rng = random.Random(7)
    for _ in range(5):
        shuffled = rng.sample(workloads, len(workloads))
        assert plan_of(shuffled, tuple(rng.sample(clouds, len(clouds)))).to_json() == reference


def test_zero_replicas_plan_nothing_and_say_so():
    target = plan_of([{**TRAINING, "replicas": 0}]).targets[0]
    assert target.pools == () and [w.code for w in target.warnings] == ["zero-replicas"]


def test_a_target_with_no_workloads_plans_no_pools():
    text = spec_text([TRAINING]).replace("  settings:", "  workloads: []\n  settings:")
    target = build_plan(load_text(text)).targets[0]
    assert target.pools == () and target.cost.planned_monthly_usd == 0
    assert [w.code for w in target.warnings] == ["no-workloads"]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_cloud_pool_names_are_valid_for_the_cloud(cloud):
    from gpustack.clouds import CLOUDS as REGISTRY

    for target in build_plan(load_spec(EXAMPLE)).targets:
        if target.cloud == cloud:
            rule = REGISTRY.get(cloud).pool_names
            assert all(rule.fits(p.cloud_name) for p in target.pools)


def test_targets_table_covers_every_registered_cloud():
    from gpustack.clouds import CLOUDS as REGISTRY

    assert set(TARGETS) == set(REGISTRY.names()) == set(CLOUDS)


def test_replicas_min_zero_plans_no_reservation():
    serve = {"name": "s", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb",
             "replicas": {"min": 0, "max": 4}}
    [pool] = plan_of([serve]).targets[0].pools
    assert (pool.capacity, pool.reserved_nodes, pool.min_nodes) == ("on-demand", 0, 0)


def test_a_window_crossing_midnight_counts_its_hours_once():
    notebook = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpus": 1, "replicas": 1,
                "schedule": {"days": "Mon-Fri", "hours": "22:00-06:00", "timezone": "UTC"}}
    [pool] = plan_of([notebook]).targets[0].pools
    assert pool.schedule.active_hours_per_week == 40  # 5 nights of 8 hours
    assert round(pool.hours_per_month, 2) == round(40 * 730 / 168, 2)


def test_equivalent_windows_share_a_pool_whatever_their_spelling():
    spellings = [("Mon-Fri", "08:00-24:00"), ("weekdays", "08:00-00:00"), ("Mon,Tue,Wed,Thu,Fri", "08:00-24:00")]
    notebooks = [{"name": f"nb{i}", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 2,
                  "schedule": {"days": days, "hours": hours, "timezone": "UTC"}}
                 for i, (days, hours) in enumerate(spellings)]
    [pool] = plan_of(notebooks).targets[0].pools
    assert (pool.schedule.days, pool.schedule.hours) == ("Mon-Fri", "08:00-24:00")
    assert pool.workloads == ("nb0", "nb1", "nb2")


@pytest.mark.parametrize("workload, code", [
    ({"name": "t", "kind": "training", "gpu": "T4", "capacity": "spot"}, "spot-without-checkpointing"),
    ({"name": "t", "kind": "fine-tuning", "gpu": "T4", "capacity": "spot"}, "spot-without-checkpointing"),
    ({"name": "t", "kind": "inference", "gpu": "T4", "capacity": "spot"}, "spot-only-inference"),
    ({"name": "t", "kind": "notebook", "gpu": "T4", "capacity": "spot"}, "spot-notebook"),
])
def test_an_explicit_spot_capacity_is_honoured_and_its_risk_said(workload, code):
    target = plan_of([workload]).targets[0]
    assert "spot" in {p.capacity for p in target.pools}
    assert code in [w.code for w in target.warnings]


def test_explicit_spot_fine_tuning_keeps_its_on_demand_fallback():
    tune = {"name": "t", "kind": "fine-tuning", "gpu": "T4", "capacity": "spot", "checkpointing": True}
    pools = plan_of([tune]).targets[0].pools
    assert sorted((p.capacity, p.role) for p in pools) == [("on-demand", "fallback"), ("spot", "main")]


def test_memory_shares_divide_what_the_driver_reports_not_the_nominal_size():
    # An L4 is sold as 24 GB; the driver reports 22,888 MiB (22.35 GiB). Two 12Gi replicas do not fit.
    serve = {"name": "s", "kind": "inference", "gpu": "L4", "gpu_memory": "12Gi", "replicas": 2}
    [pool] = plan_of([serve]).targets[0].pools
    assert pool.sharing.mode == "none" and pool.gpus.required == 2
    serve["gpu_memory"] = "11Gi"
    [pool] = plan_of([serve]).targets[0].pools
    assert (pool.sharing.mode, pool.sharing.replicas, pool.gpus.required) == ("time-slicing", 2, 1)


def test_a_pinned_instance_type_holds_whatever_the_replica_count():
    # Left to itself the choice follows the replica count (a new type = a new node pool); a pin fixes it.
    serve = {"name": "chat", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "cpu": 6, "memory": "48Gi",
             "replicas": {"min": 0, "max": 1}, "instance_types": {"gke": "a2-ultragpu-4g"}}
    for peak in (1, 3, 9, 20):
        serve["replicas"]["max"] = peak
        pools = plan_of([serve], ("gcp",)).targets[0].pools
        assert {p.instance_type for p in pools} == {"a2-ultragpu-4g"}, peak


def test_a_pin_for_another_cloud_changes_nothing_here():
    train = {**TRAINING, "instance_types": {"azure": "Standard_ND96isr_H100_v5"}}
    assert plan_of([train]).targets[0].pools[0].instance_type == "p5.48xlarge"


def _consistent(pool) -> bool:
    g = pool.gpus
    return (g.requested_lower_bound <= g.lower_bound <= g.required <= g.provisioned
            and g.nodes_lower_bound <= pool.max_nodes and all(v <= g.required for _, v in g.bounds))


@pytest.mark.parametrize("clouds", [("aws",), ("azure",), ("gcp",)])
def test_a_floor_and_its_burst_each_report_their_own_bounds_not_the_joint_ones(clouds):
    """A burst pool of at most 1 node cannot need 3 nodes, and a target's bound without rounding never
    exceeds what it provisions: the joint packing's figures are split between the two pools."""
    from conftest import spec_text
    from gpustack.spec import load_text

    workloads = [{"name": "chat", "kind": "inference", "gpu": "A100-80GB", "gpu_fraction": 0.1,
                  "replicas": {"min": 4, "max": 10}},
                 {"name": "embed", "kind": "inference", "gpu": "A100-80GB", "gpu_fraction": 0.3,
                  "replicas": {"min": 1, "max": 4}}]
    for target in build_plan(load_text(spec_text(workloads, clouds), "s.yaml")).targets:
        assert [p.name for p in target.pools if not _consistent(p)] == []
        g = target.gpus
        assert g.requested_lower_bound <= g.lower_bound <= g.required <= g.provisioned


def test_the_example_pools_and_targets_have_consistent_gpu_figures():
    for target in build_plan(load_spec(EXAMPLE)).targets:
        assert [p.name for p in target.pools if not _consistent(p)] == [], target.name
        g = target.gpus
        assert g.requested_lower_bound <= g.lower_bound <= g.required <= g.provisioned
