"""The planner's promises on the reproducers of tests/fixtures/planner: types chosen per pool over its
workloads together, never beaten by one pinned type; an honest savings split; notes that match the
decision. Dollar figures are derived from the catalog's prices, read here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpustack.catalog import load_catalog
from gpustack.plan import build_plan
from gpustack.plan.model import HOURS_PER_MONTH
from gpustack.spec import load_text

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "planner"


def text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def plan_of(source: str):  # type: ignore[no-untyped-def]
    return build_plan(load_text(source, "spec.yaml"))


def on_demand(cloud: str, region: str, instance: str) -> float:
    row = load_catalog().instance(cloud, region, instance)
    assert row is not None
    return row.on_demand


def pinned(source: str, cloud: str, instance: str, only_fractional: bool = False) -> str:
    doc = yaml.safe_load(source)
    for workload in doc["workloads"]:
        if not only_fractional or workload.get("sharing") == "fractional":
            workload["instance_types"] = {cloud: instance}
    return yaml.safe_dump(doc, sort_keys=False)


# -- 1. types chosen together ---------------------------------------------------------------------

def test_two_l4_services_share_one_four_gpu_node_instead_of_four_one_gpu_nodes():
    target = plan_of(text("l4-fractions.yaml")).targets[0]
    [pool] = target.pools
    assert (pool.instance_type, pool.max_nodes, pool.workloads) == ("g6.12xlarge", 1, ("chat", "embed"))
    assert pool.monthly_cost_usd == pytest.approx(on_demand("aws", "us-east-1", "g6.12xlarge") * HOURS_PER_MONTH)
    # What each workload alone would pick: 4 one-GPU nodes together.
    apart = 4 * on_demand("aws", "us-east-1", "g6.4xlarge") * HOURS_PER_MONTH
    saving = apart - pool.monthly_cost_usd
    assert f"g6.12xlarge carries all 11 replicas for ${saving:,.0f}/month" in " ".join(pool.notes)


def test_openb_fractional_h100_is_not_beaten_by_pinning_every_workload_to_one_type():
    source = text("openb-h100-fractional.yaml")
    planned = plan_of(source).targets[0]
    # p5.48xlarge is the one H100 type that holds every workload (p5.4xlarge has one GPU).
    pin = plan_of(pinned(source, "aws", "p5.48xlarge")).targets[0]
    assert planned.cost.planned_monthly_usd <= pin.cost.planned_monthly_usd
    # The fractional workloads share one pool (one type), not two that cannot share GPUs.
    fractional = [p for p in planned.pools if p.sharing.mode == "fractional"]
    assert len(fractional) == 1


# -- 2. the savings split of a floor and its burst ------------------------------------------------

def test_a_floor_and_a_burst_of_whole_gpus_save_nothing_by_sharing_and_all_by_schedules():
    target = plan_of(text("t4-floor-burst.yaml")).targets[0]
    hourly = on_demand("aws", "us-east-1", "g4dn.xlarge")
    floor, burst = 1 * hourly * HOURS_PER_MONTH, 4 * hourly * 100
    steps = {s.step: s.monthly_usd for s in target.cost.breakdown}
    assert target.cost.planned_monthly_usd == pytest.approx(floor + burst, abs=0.01)
    # Nothing is shared: the used-hours baseline is the plan, and the whole saving is the burst's hours.
    assert target.cost.baseline_at_used_hours_monthly_usd == pytest.approx(target.cost.planned_monthly_usd, abs=0.01)
    assert steps["sharing"] == 0.0
    assert steps["schedules"] == pytest.approx(5 * hourly * HOURS_PER_MONTH - floor - burst, abs=0.01)
    [placement] = next(p for p in target.pools if p.role == "burst").placements
    assert placement.hours_per_month == 100


# -- 6. words that match the decision --------------------------------------------------------------

def test_a_fractional_pool_never_speaks_of_mig_layouts():
    for pool in plan_of(text("openb-h100-fractional.yaml")).targets[0].pools:
        words = " ".join(pool.notes)
        assert "MIG" not in words, pool.name
        if pool.sharing.mode == "fractional":
            assert "Fractions:" in words


def test_a_pool_says_once_how_it_was_packed():
    # The fractions on one-GPU nodes: their packing is above its bounds in both nodes and GPUs.
    source = pinned(text("openb-h100-fractional.yaml"), "aws", "p5.4xlarge", only_fractional=True)
    for pool in plan_of(source).targets[0].pools:
        said = [n for n in pool.notes if n.startswith("Packed by")]
        assert len(said) <= 1, said
    fractional = next(p for p in plan_of(source).targets[0].pools if p.sharing.mode == "fractional")
    [said] = [n for n in fractional.notes if n.startswith("Packed by")]
    assert "nodes, at most" in said and "GPUs in use, at most" in said


def test_a_pools_cost_is_recomputable_to_the_cent_from_the_plan_json():
    source = text("t4-floor-burst.yaml").replace("hours_per_month: 100", "hours_per_month: 100.125")
    data = json.loads(plan_of(source).to_json())
    for pool in data["targets"][0]["pools"]:
        recomputed = pool["price"]["usd_per_node_hour"] * pool["max_nodes"] * pool["hours_per_month"]
        assert round(recomputed, 2) == pool["monthly_cost_usd"], pool["name"]
    assert any(pool["hours_per_month"] == 100.125 for pool in data["targets"][0]["pools"])


# -- 3. a CPU-bound MIG mix near its bound ----------------------------------------------------------

def test_a_cpu_bound_mig_mix_is_within_ten_percent_of_a_sound_node_bound():
    from gpustack.clouds import CLOUDS

    source = text("mig-cpu-bound.yaml")
    [pool] = plan_of(source).targets[0].pools
    row = load_catalog().instance("aws", "us-east-1", pool.instance_type)
    assert row is not None
    # What a node offers pods as the target's provisioner (the default one) sees it.
    cores = CLOUDS.get("aws").provisioner(None).template_node(row).vcpus
    asked = sum(w["cpu"] * w["replicas"] for w in yaml.safe_load(source)["workloads"])
    # The bound the plan reports is at least the summed cores over a node's: sound, and what binds here.
    assert pool.gpus.nodes_lower_bound >= -(-asked // cores)
    assert pool.max_nodes <= 1.10 * pool.gpus.nodes_lower_bound
    # Every node carries the same layouts, which hold every replica of each profile.
    held: dict[str, int] = {}
    for group in pool.sharing.mig:
        for profile, count in group.layout:
            held[profile] = held.get(profile, 0) + count * group.gpus * pool.max_nodes
    for w in yaml.safe_load(source)["workloads"]:
        held[w["mig"]] -= w["replicas"]
    assert min(held.values()) >= 0
