"""`pricing.discount`: an enterprise agreement's flat discount, applied under every other rate, shown as
its own line; and a user catalog row with an empty spot price keeping the bundled spot price.

The expected figures are recomputed here from the bundled catalog rows, not read from the planner.
"""

from __future__ import annotations

import json

import pytest

from conftest import spec_text
from gpustack.catalog import load_catalog, with_catalog_files
from gpustack.cli import main
from gpustack.errors import SpecError
from gpustack.output.html import render_plan_html as render_html
from gpustack.output.markdown import render_markdown
from gpustack.output.table import render_table
from gpustack.plan import build_plan
from gpustack.spec import load_text

HOURS = 730
CHAT = {"name": "chat", "kind": "inference", "gpu": "A10G", "replicas": {"min": 2, "max": 2}}
TRAIN = {"name": "train", "kind": "training", "gpu": "A10G", "replicas": 2, "checkpointing": True}
NOTEBOOK = {"name": "lab", "kind": "notebook", "gpu": "A10G", "replicas": 2,
            "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}}


def plan_json(workloads, clouds=("aws",), **pricing):
    spec = load_text(spec_text(workloads, clouds, **({"pricing": pricing} if pricing else {})), "spec.yaml")
    return json.loads(build_plan(spec).to_json())


def cents(value: float) -> int:
    return round(round(value, 2) * 100)


def bundled(name: str):
    row = load_catalog().instance("aws", "us-east-1", name)
    assert row is not None
    return row


def test_every_price_is_the_list_price_less_the_discount_and_commitments_apply_on_top():
    target = plan_json([CHAT, TRAIN], discount=0.1, commitment_discount=0.3)["targets"][0]
    by_capacity = {p["capacity"]: p for p in target["pools"]}
    spot, reserved = by_capacity["spot"], by_capacity["reserved"]
    row = bundled(spot["instance_type"])
    assert spot["price"]["usd_per_node_hour"] == round(row.spot * 0.9, 6)
    assert spot["price"]["list_usd_per_node_hour"] == row.spot
    row = bundled(reserved["instance_type"])
    # The commitment's rate first, then the agreement's discount on the committed spend.
    assert reserved["price"]["usd_per_node_hour"] == round(round(row.on_demand * 0.7, 6) * 0.9, 6)
    assert reserved["price"]["list_usd_per_node_hour"] == round(row.on_demand * 0.7, 6)
    assert "less the enterprise discount 0.1 (spec pricing.discount)" in reserved["price"]["source"]


def test_the_discount_line_is_the_list_cost_less_the_planned_cost_to_the_cent():
    target = plan_json([CHAT, TRAIN], discount=0.1, commitment_discount=0.3)["targets"][0]
    listed = planned = 0.0
    for pool in target["pools"]:
        row = bundled(pool["instance_type"])
        list_price = {"spot": row.spot, "reserved": round(row.on_demand * 0.7, 6)}.get(pool["capacity"],
                                                                                        row.on_demand)
        node_hours = pool["max_nodes"] * HOURS  # always-on pools: their peak all month
        listed += list_price * node_hours
        planned += round(list_price * 0.9, 6) * node_hours
    cost = target["cost"]
    assert cost["planned_monthly_usd"] == round(planned, 2)
    assert cost["discount"] == {"fraction": 0.1, "list_baseline_monthly_usd": cost["discount"]["list_baseline_monthly_usd"],
                                "list_planned_monthly_usd": round(listed, 2),
                                "monthly_usd": (cents(listed) - cents(planned)) / 100}
    # The baseline: two whole on-demand A10G replicas each for chat and train, at the cheapest list price per GPU.
    cheapest = min(r.on_demand / r.gpus for r in load_catalog().in_region("aws", "us-east-1") if r.gpu == "A10G")
    assert cost["discount"]["list_baseline_monthly_usd"] == round(4 * cheapest * HOURS, 2)
    assert cost["baseline_monthly_usd"] == round(4 * round(cheapest * 0.9, 6) * HOURS, 2)
    assert sum(cents(s["monthly_usd"]) for s in cost["breakdown"]) == (cents(cost["baseline_monthly_usd"])
                                                                       - cents(cost["planned_monthly_usd"]))


def test_a_move_that_changes_nothing_still_saves_exactly_nothing():
    # Always on, no spot, no commitment: schedules, spot and commitments change nothing.
    steps = {s["step"]: s["monthly_usd"] for s in plan_json([CHAT], discount=0.15)["targets"][0]["cost"]["breakdown"]}
    assert (steps["schedules"], steps["spot"], steps["commitments"]) == (0.0, 0.0, 0.0)


def test_a_flat_discount_scales_every_saving_and_leaves_the_share_saved():
    plain = plan_json([CHAT, TRAIN, NOTEBOOK], commitment_discount=0.3)["targets"][0]["cost"]
    discounted = plan_json([CHAT, TRAIN, NOTEBOOK], commitment_discount=0.3, discount=0.2)["targets"][0]["cost"]
    for before, after in zip(plain["breakdown"], discounted["breakdown"], strict=True):
        assert after["monthly_usd"] == pytest.approx(before["monthly_usd"] * 0.8, abs=0.02)
    assert discounted["savings_pct"] == pytest.approx(plain["savings_pct"], abs=0.1)
    assert plain["discount"] is None


def test_a_discount_per_cloud_leaves_the_other_clouds_at_list_prices():
    train = {**TRAIN, "gpu": "T4"}
    plain = plan_json([train], ("aws", "gcp"))
    per_cloud = plan_json([train], ("aws", "gcp"), discount={"eks": 0.1})
    aws, gcp = per_cloud["targets"]
    assert aws["cost"]["discount"]["fraction"] == 0.1
    assert gcp["cost"]["discount"] is None
    assert gcp["cost"] == plain["targets"][1]["cost"]
    assert aws["cost"]["planned_monthly_usd"] < plain["targets"][0]["cost"]["planned_monthly_usd"]


@pytest.mark.parametrize(("discount", "line", "message"), [
    (1.5, "  discount: 1.5", "pricing.discount: 1.5 is too large; it must be less than 1"),
    ("ten", "  discount: ten", "pricing.discount: expected a fraction off every price (0.1 = 10%), or one per "
                               "cloud: {<cloud>: 0.1, ...}"),
    ({"awz": 0.1}, "    awz: 0.1", "pricing.discount.awz: 'awz' is not allowed (did you mean 'aws'?)"),
    ({"azure": 0.1}, "    azure: 0.1", "pricing.discount.azure: no target runs on AKS: this discount would never "
                                       "be used"),
])
def test_a_wrong_discount_is_a_located_error(discount, line, message):
    text = spec_text([TRAIN], pricing={"discount": discount})
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    [problem] = info.value.problems
    assert str(problem).startswith(f"spec.yaml:{text.splitlines().index(line) + 1}:")
    assert message in str(problem)


def test_the_discount_is_its_own_line_in_every_rendering():
    spec = load_text(spec_text([CHAT, TRAIN], pricing={"discount": 0.1}), "spec.yaml")
    plan = build_plan(spec)
    d = plan.targets[0].cost.discount
    assert d is not None
    line = (f"10% off every price (pricing.discount), before commitments: -${d.monthly_usd:,.0f}/month off "
            f"${d.list_planned_monthly_usd:,.0f}/month at list prices (baseline at list prices "
            f"${d.list_baseline_monthly_usd:,.0f}/month); the figures above are net of it")
    table = " ".join(render_table(plan).split())
    assert "Enterprise discount: " + line in table
    assert f"**Enterprise discount**: {line}" in render_markdown(plan)
    assert f"<h3>Enterprise discount</h3>\n<p>{line}</p>" in render_html(plan)
    plain = build_plan(load_text(spec_text([CHAT, TRAIN]), "spec.yaml"))
    assert "Enterprise discount" not in render_table(plain) + render_markdown(plain) + render_html(plain)


HEADER = "cloud,region,instance_type,gpu,gpus,vcpus,memory_gib,on_demand_usd,spot_usd,source,note,as_of\n"


def test_an_empty_spot_price_in_a_user_row_keeps_the_bundled_spot_price_and_its_source(tmp_path, capsys):
    row = bundled("g5.xlarge")
    quote = tmp_path / "quote.csv"
    quote.write_text(HEADER + "aws,us-east-1,g5.xlarge,A10G,1,4,16,0.90,,our quote Q-7 (test row),,2026-11-01\n")
    merged = with_catalog_files([str(quote)]).instance("aws", "us-east-1", "g5.xlarge")
    assert (merged.on_demand, merged.spot, merged.source) == (0.90, row.spot, "our quote Q-7 (test row)")
    assert (merged.spot_source, merged.spot_as_of) == (row.source, row.as_of)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([TRAIN, CHAT]))
    assert main(["plan", str(spec), "--catalog", str(quote), "--format", "json"]) == 0
    target = json.loads(capsys.readouterr().out)["targets"][0]
    prices = {p["capacity"]: p["price"] for p in target["pools"] if p["instance_type"] == "g5.xlarge"}
    assert prices["spot"]["usd_per_node_hour"] == row.spot
    assert prices["spot"]["source"].startswith(f"catalog {row.source} (spot price as of {row.as_of}, kept from the "
                                               "row replaced)")
    assert prices["reserved"]["usd_per_node_hour"] == 0.90
    assert "our quote Q-7 (test row)" in prices["reserved"]["source"]
    # The plan's price date is the oldest price it uses: the kept spot price's.
    assert target["cost"]["prices_as_of"] == f"{row.as_of} to 2026-11-01"


def test_a_user_on_demand_price_below_the_bundled_spot_price_drops_it(tmp_path):
    row = bundled("g5.xlarge")
    quote = tmp_path / "quote.csv"
    below = round(row.spot / 2, 4)
    quote.write_text(HEADER + f"aws,us-east-1,g5.xlarge,A10G,1,4,16,{below},,our quote (test row),,2026-11-01\n")
    assert with_catalog_files([str(quote)]).instance("aws", "us-east-1", "g5.xlarge").spot is None
