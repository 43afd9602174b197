"""The cost model as a FinOps analyst recomputes it: every rule with figures worked out by hand.

AWS us-east-1 g4dn.xlarge (1 x T4, 4 vCPU, 16 GiB) is $0.526 on-demand per hour in the catalog, so a T4
replica that fits it is priced on it in the baseline and in the plan alike. The spot tests pin its spot
price at $0.20 (`PINNED`, the spec's pricing.instances): the catalog's spot prices move with each
refresh, the arithmetic checked here does not.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EVERY_CLOUD, TARGETS, spec_text
from gpustack.catalog import load_catalog
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.plan.attribution import shapley, to_cents
from gpustack.plan.model import money
from gpustack.spec import load_text

OD, SPOT, MONTH = 0.526, 0.20, 730
PINNED = {"instances": {"g4dn.xlarge": {"on_demand": OD, "spot": SPOT}}}


def plan_of(workloads: list[dict], clouds: tuple[str, ...] = ("aws",), **top: object):
    return build_plan(load_text(spec_text(workloads, clouds, **top), "spec.yaml"))


def gpus_sold(cloud: str) -> tuple[str, ...]:
    """The GPU models the bundled catalog sells in the test target's region of `cloud`, the cheapest per
    GPU first (ties by name): read from the catalog, so a new cloud or a new row needs no table here."""
    cheapest: dict[str, float] = {}
    for row in load_catalog().in_region(cloud, TARGETS[cloud]["region"]):
        cheapest[row.gpu] = min(cheapest.get(row.gpu, float("inf")), row.on_demand / row.gpus)
    return tuple(sorted(cheapest, key=lambda gpu: (cheapest[gpu], gpu)))


def steps(target) -> dict[str, float]:
    return {s.step: s.monthly_usd for s in target.cost.breakdown}


SERVE = {"name": "serve", "kind": "inference", "gpu": "T4", "gpus": 1, "cpu": 2, "memory": "8Gi", "replicas": 1}
JOB = {"name": "job", "kind": "training", "gpu": "T4", "gpus": 1, "cpu": 2, "memory": "8Gi", "replicas": 1,
       "checkpointing": True, "hours_per_month": 100}


# -- commitments: only a declared one discounts the floor ---------------------------------------

def test_a_reserved_floor_without_a_declared_commitment_costs_on_demand_and_recommends_one():
    target = plan_of([SERVE]).targets[0]
    [pool] = target.pools
    assert (pool.capacity, pool.instance_type) == ("reserved", "g4dn.xlarge")
    assert pool.price.usd_per_node_hour == OD and "no commitment is declared" in pool.price.source
    assert pool.monthly_cost_usd == pytest.approx(383.98)
    assert steps(target)["commitments"] == 0 and target.cost.commitment is None
    [rec] = target.cost.commitment_recommendations
    # 1 node x $0.526 x 730 h = $383.98 on-demand; the catalog's AWS rate 15%: $57.60 a month saved,
    # worth it above 85% use; the savings plan commits to 0.526 x 0.85 = $0.4471 an hour.
    assert (rec.instrument, rec.term, rec.instance_type, rec.quantity, rec.gpus) == (
        "compute-savings-plan", "1y", "g4dn.xlarge", 1, 1)
    assert round(rec.monthly_saving_usd, 2) == 57.60 and round(rec.break_even_utilisation, 2) == 0.85
    assert round(rec.commitment_usd_per_hour, 4) == 0.4471
    assert not rec.declared and "aws-savingsplans-faq" in rec.source


def test_a_declared_commitment_discounts_the_floor_and_is_the_commitments_step():
    commitments = {"aws": {"instrument": "compute-savings-plan", "term": "1y", "discount": 0.2, "scope": "account"}}
    target = plan_of([SERVE], pricing={"commitments": commitments}).targets[0]
    [pool] = target.pools
    # $0.526 x 0.8 = $0.4208 an hour, $307.18 a month: the $76.80 below $383.98 is the commitment's.
    assert pool.price.usd_per_node_hour == 0.4208
    assert "declared commitment (compute-savings-plan 1y, scope account)" in pool.price.source
    assert target.cost.planned_monthly_usd == 307.18
    assert steps(target) == {"sharing": 0, "spot": 0, "commitments": 76.80, "schedules": 0}
    assert target.cost.commitment.instrument == "compute-savings-plan"
    assert target.cost.commitment_recommendations[0].declared


def test_a_commitment_may_give_prices_per_instance_type_and_the_short_form_still_counts():
    by_price = {"aws": {"instrument": "reserved-instance", "term": "3y", "prices": {"g4dn.xlarge": 0.3}}}
    [pool] = plan_of([SERVE], pricing={"commitments": by_price}).targets[0].pools
    assert pool.price.usd_per_node_hour == 0.3 and pool.monthly_cost_usd == pytest.approx(219.0)
    [pool] = plan_of([SERVE], pricing={"commitment_discount": 0.25}).targets[0].pools
    assert pool.price.usd_per_node_hour == round(OD * 0.75, 6)


def test_gcp_recommendations_say_how_to_attach_the_commitment_to_the_reservation():
    serve = {**SERVE, "gpu": "L4"}
    [rec] = plan_of([serve], ("gcp",)).targets[0].cost.commitment_recommendations
    assert rec.instrument == "committed-use-discount" and "existing_reservations" in rec.how


def test_oci_commitments_are_negotiated_so_no_saving_is_made_up():
    serve = {**SERVE, "gpu": "A10"}
    [rec] = plan_of([serve], ("oci",)).targets[0].cost.commitment_recommendations
    assert rec.monthly_saving_usd is None and rec.discount is None and "negotiated" in rec.source


@pytest.mark.parametrize("commitments, message", [
    ({"aws": {"instrument": "savings-plan", "discount": 0.2}},
     "pricing.commitments.aws.instrument: 'savings-plan' is not allowed"),
    ({"aws": {"instrument": "compute-savings-plan"}}, "give exactly one of discount"),
    ({"gcp": {"instrument": "committed-use-discount", "discount": 0.3}}, "no target runs on GKE"),
    ({"aws": {"instrument": "compute-savings-plan", "term": "2y", "discount": 0.2}}, "allowed: 1y, 3y"),
    # "an instance type of EKS", never "a EKS instance type"
    ({"aws": {"instrument": "reserved-instance", "prices": {"g4dn.xlarg": 0.3}}},
     "pricing.commitments.aws.prices.g4dn.xlarg: 'g4dn.xlarg' is not an instance type of EKS in the catalog "
     "(did you mean 'g4dn.xlarge'?)"),
])
def test_a_bad_commitment_is_refused_with_its_place(commitments, message):
    with pytest.raises(SpecError) as caught:
        plan_of([SERVE], pricing={"commitments": commitments})
    assert message in str(caught.value)


# -- order-free attribution -----------------------------------------------------------------

def test_a_part_time_spot_job_splits_its_saving_fairly_between_spot_and_its_hours():
    target = plan_of([JOB], pricing=PINNED).targets[0]
    [pool] = target.pools
    assert (pool.capacity, pool.instance_type) == ("spot", "g4dn.xlarge")
    # baseline 730 h on-demand = $383.98; planned 100 h of spot = $20.00. Spot saves (0.526 - 0.20)/h
    # over 730 h (spot first) or 100 h (hours first): Shapley takes the mean, 415 h x 0.326 = $135.29;
    # the hours save 630 h x 0.526 or 630 h x 0.20: mean 315 h x 0.726 = $228.69. Applying spot first
    # would have shown 730 x 0.326 = $237.98 for spot, most of it really the job's hours.
    assert target.cost.baseline_monthly_usd == 383.98 and target.cost.planned_monthly_usd == 20.0
    assert steps(target) == {"sharing": 0, "spot": 135.29, "commitments": 0, "schedules": 228.69}
    # The same work on whole on-demand GPUs for the hours it runs: 100 h x 0.526.
    assert target.cost.baseline_at_used_hours_monthly_usd == 52.6


def test_the_baseline_replica_gets_an_instance_that_holds_its_cpu_so_sharing_is_not_negative():
    # 30 cores per replica: g4dn.xlarge (4 vCPU) cannot hold it; g4dn.8xlarge (32 vCPU, 1 T4) at $2.176
    # can, and is the cheapest per replica (g4dn.metal holds 3 for $7.824, $2.608 each).
    serve = {**SERVE, "cpu": 30}
    target = plan_of([serve]).targets[0]
    assert target.pools[0].instance_type == "g4dn.8xlarge"
    assert target.cost.baseline_monthly_usd == round(2.176 * MONTH, 2) == 1588.48
    assert steps(target)["sharing"] == 0  # against $0.526 a GPU the old baseline showed -$1,204.50


# -- the range ---------------------------------------------------------------------------------

def test_a_fallback_pool_is_free_in_the_estimate_and_carries_the_whole_job_at_the_high_end():
    tune = {**JOB, "kind": "fine-tuning"}
    target = plan_of([tune], pricing=PINNED).targets[0]
    fallback = next(p for p in target.pools if p.role == "fallback")
    assert fallback.monthly_cost_usd == 0 and fallback.instance_type == "g4dn.xlarge"
    # planned: 100 h of spot = $20.00. With no spot all month the fallback runs those 100 h at $0.526.
    assert target.cost.planned_monthly_usd == 20.0
    assert (target.cost.range.low, target.cost.range.high) == (20.0, 52.6)


def test_a_burst_ranges_from_its_expected_share_to_its_peak_all_month():
    serve = {**SERVE, "replicas": {"min": 1, "max": 3}}
    target = plan_of([serve]).targets[0]
    floor, burst = sorted(target.pools, key=lambda p: p.role != "floor")
    assert (floor.max_nodes, burst.min_nodes, burst.max_nodes) == (1, 0, 2)
    # planned: 3 nodes always on = $1,151.94; low: the floor and half of the 2 burst nodes = $767.96.
    assert target.cost.planned_monthly_usd == 1151.94
    assert (target.cost.range.low, target.cost.range.high) == (767.96, 1151.94)
    quarter = plan_of([{**serve, "burst_share": 0.25}]).targets[0]
    assert quarter.cost.range.low == round(383.98 + 0.25 * 2 * 383.98, 2) == 575.97
    # hours_per_month prices the burst for its hours; the high end still has it at its peak all month.
    part_time = plan_of([{**serve, "hours_per_month": 365}]).targets[0]
    assert part_time.cost.planned_monthly_usd == round(383.98 + 2 * OD * 365, 2) == 767.96
    assert part_time.cost.range.high == 1151.94


def test_spot_prices_say_what_they_are():
    [pool] = plan_of([JOB]).targets[0].pools
    assert "the region's price on the EC2 Spot pricing page" in pool.price.source
    assert "aws-spot-feed-2026-08" in pool.price.source and "2026-08-06" in pool.price.source


def test_oci_vm_shapes_are_preemptible_at_half_the_on_demand_price():
    job = {**JOB, "gpu": "A10", "cpu": 8, "memory": "32Gi"}
    [pool] = plan_of([job], ("oci",)).targets[0].pools
    assert (pool.capacity, pool.instance_type) == ("spot", "VM.GPU.A10.1")
    assert pool.price.usd_per_node_hour == 1.0 and "oracle-preemptible-pricing" in pool.price.source


# -- unit costs --------------------------------------------------------------------------------

def test_the_floor_serves_all_month_so_fewer_burst_hours_make_each_request_cheaper():
    serve = {**SERVE, "replicas": {"min": 1, "max": 3}, "requests_per_hour": 1000}
    always = plan_of([serve]).targets[0].workloads[0]
    part_time = plan_of([{**serve, "hours_per_month": 365}]).targets[0].workloads[0]
    # 730,000 requests a month either way: $1,151.94 / 730 and $767.96 / 730 per 1,000.
    assert round(always.usd_per_1k_requests, 4) == round(1151.94 / 730, 4) == 1.578
    assert round(part_time.usd_per_1k_requests, 4) == round(767.96 / 730, 4) == 1.052
    assert part_time.usd_per_1k_requests < always.usd_per_1k_requests


# -- the steps always add up ---------------------------------------------------------------------

@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=16, max_size=16))
def test_shapley_values_add_up_to_the_total_and_round_to_it_exactly(values):
    moves = ("a", "b", "c", "d")
    subsets = [frozenset(c) for r in range(5) for c in itertools.combinations(moves, r)]
    table = dict(zip(subsets, values))
    found = shapley(moves, table.__getitem__)
    assert sum(found.values()) == pytest.approx(table[frozenset()] - table[frozenset(moves)], abs=1e-3)
    total = round(money(table[frozenset()]) * 100) - round(money(table[frozenset(moves)]) * 100)
    cents = to_cents([found[m] for m in moves], total)
    assert sum(cents) == total
    assert all(abs(c - found[m] * 100) < 2 for c, m in zip(cents, moves))


def test_cents_left_over_by_rounding_go_to_the_largest_remainder_then_to_the_first_step():
    # Three equal thirds of $10: 333 cents each and one left over, which goes to the first step.
    assert to_cents([10 / 3, 10 / 3, 10 / 3], 1000) == [334, 333, 333]
    # Remainders .4, .6 and .1 of a cent, two cents left: the .6 step first, then the .4 one.
    assert to_cents([1.004, 2.006, 3.001], 602) == [101, 201, 300]
    # A sum rounded down a cent: the cent comes off the smallest remainder (the last of equal ones).
    assert to_cents([10 / 3, 10 / 3, 10 / 3], 998) == [333, 333, 332]


WORKLOADS = st.fixed_dictionaries({
    "kind": st.sampled_from(["training", "fine-tuning", "inference", "notebook"]),
    "gpu": st.sampled_from(["T4", "A100-80GB", "L4"]),
    "share": st.sampled_from([None, 0.25, 0.5]),
    "replicas": st.integers(1, 6),
    "floor": st.integers(0, 3),
    "hours": st.sampled_from([None, 50, 400]),
    "cpu": st.sampled_from([None, 2, 6]),
})


def _workload(i: int, w: dict) -> dict:
    out: dict = {"name": f"w{i}", "kind": w["kind"], "gpu": w["gpu"]}
    if w["cpu"]:
        out["cpu"] = w["cpu"]
    if w["kind"] in ("inference", "notebook") and w["share"]:
        out["gpu_fraction"] = w["share"]
    if w["kind"] == "inference":
        out["replicas"] = {"min": min(w["floor"], w["replicas"]), "max": w["replicas"]}
    else:
        out["replicas"] = w["replicas"]
    if w["kind"] in ("training", "fine-tuning"):
        out["checkpointing"] = True
    if w["hours"] and w["kind"] != "notebook":
        out["hours_per_month"] = w["hours"]
    if w["kind"] == "notebook" and w["hours"]:
        out["schedule"] = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"}
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(WORKLOADS, min_size=1, max_size=4), st.sampled_from(EVERY_CLOUD),
       st.sampled_from([{}, {"commitment_discount": 0.3}, {"spot_discount": 0.6}]))
def test_the_steps_always_add_up_to_baseline_minus_planned_to_the_cent(workloads, cloud, pricing):
    sold = gpus_sold(cloud)  # a GPU the region does not sell becomes its cheapest one
    specs = [_workload(i, {**w, "gpu": w["gpu"] if w["gpu"] in sold else sold[0]}) for i, w in enumerate(workloads)]
    target = plan_of(specs, (cloud,), **({"pricing": pricing} if pricing else {})).targets[0]
    c = target.cost
    assert round(sum(s.monthly_usd for s in c.breakdown) * 100) == round(
        c.baseline_monthly_usd * 100) - round(c.planned_monthly_usd * 100)
    assert c.range.low <= c.planned_monthly_usd <= c.range.high
    if "commitment_discount" not in pricing:
        assert {s.step: s.monthly_usd for s in c.breakdown}["commitments"] == 0


# -- what a node offers, and what a machine's price includes ------------------------------------

def test_eks_nodes_keep_what_the_eks_ami_reserves_not_the_tiered_formula():
    from gpustack.clouds.aws.facts import KUBELET_RESERVATION
    from gpustack.clouds.kubelet import TIERED
    from gpustack.plan.nodes import allocatable

    # g4dn.xlarge (4 vCPU, 16 GiB, 29 pods by its ENIs): 11 MiB x 29 + 255 MiB = 574 MiB kube-reserved,
    # 100 MiB eviction, 1 GiB for the GPU daemons: 16 - 0.5605 - 0.0977 - 1 = 14.34 GiB for pods, where the
    # tiered formula (25% of 4 GiB, 20% of 4, 10% of 8) keeps 2.6 GiB and leaves 12.30.
    assert round(allocatable(4, 16, KUBELET_RESERVATION, "g4dn.xlarge")[1], 2) == 14.34
    assert round(allocatable(4, 16, TIERED)[1], 2) == 12.30
    serve = {**SERVE, "memory": "14Gi"}
    [pool] = plan_of([serve]).targets[0].pools
    assert pool.instance_type == "g4dn.xlarge"  # on the tiered formula it would need a g4dn.2xlarge


def test_a3_prices_include_the_local_ssd_the_machine_comes_with():
    from gpustack.catalog import load_catalog

    row = load_catalog().instance("gcp", "us-central1", "a3-highgpu-8g")
    # host + 8 H100 = $87.83247 an hour, plus 6,000 GB of Local SSD at $0.080 per GB-month.
    assert row.on_demand == round(87.83247 + 6000 * 0.080 / 730, 5) == 88.49


def test_mig_memory_is_what_the_driver_reports_so_10gi_does_not_fit_a_1g_10gb():
    from gpustack.catalog.mig import MIG_MODELS

    a100 = MIG_MODELS["A100-80GB"]
    # GPU Feature Discovery reports 9,984 MiB (9.75 GiB) for 1g.10gb, 20,096 MiB for the 2-slice profiles.
    assert a100.profile("1g.10gb").usable_memory_gib == 9.75
    assert a100.smallest_holding(memory_gib=9.75).name == "1g.10gb"
    assert a100.smallest_holding(memory_gib=10).name == "1g.20gb"
    serve = {"name": "embed", "kind": "inference", "gpu": "A100-80GB", "gpu_memory": "10Gi", "replicas": 2}
    [pool] = plan_of([serve]).targets[0].pools
    assert {p for group in pool.sharing.mig for p, _ in group.layout} == {"1g.20gb"}
