"""A user catalog merged over the bundled one: any region, any type, negotiated prices, located errors.

The rows written here are test data for the mechanism (their source says so), not prices of a cloud.
"""

from __future__ import annotations

import datetime
import json

import pytest

from conftest import spec_text
from gpustack.catalog import load_catalog, with_catalog_files
from gpustack.cli import main
from gpustack.commands._shared import print_warnings
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_spec, load_text

HEADER = "cloud,region,instance_type,gpu,gpus,vcpus,memory_gib,on_demand_usd,spot_usd,source,note,as_of\n"
# A region the bundled catalog does not price, and a type it does not list.
CALGARY = "aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,0.5,test row (not a price of AWS),,2026-11-20\n"
TRAIN = {"name": "train", "kind": "training", "gpu": "A10G", "gpus": 1, "replicas": 2, "checkpointing": True}


def calgary_spec(tmp_path, **top):
    spec = spec_text([TRAIN], **top).replace("us-east-1", "ca-west-1")
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    return path


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_region_outside_the_bundle_is_refused_as_a_catalog_gap(tmp_path):
    with pytest.raises(SpecError) as info:
        load_spec(calgary_spec(tmp_path))
    message = str(info.value)
    assert "the bundled catalog has no EKS GPU instance types in 'ca-west-1'" in message
    assert "add rows with --catalog FILE (or `catalog: FILE` in the spec)" in message
    assert "gpustack catalog refresh --cloud aws --region ca-west-1" in message


def test_plan_a_region_outside_the_bundle_with_catalog_option(tmp_path, capsys):
    catalog = write(tmp_path, "mine.csv", HEADER + CALGARY)
    assert main(["plan", str(calgary_spec(tmp_path)), "--catalog", str(catalog), "--format", "json"]) == 0
    target = json.loads(capsys.readouterr().out)["targets"][0]
    assert target["region"] == "ca-west-1"
    assert target["cost"]["prices_as_of"] == "2026-11-20"
    [pool] = target["pools"]
    assert (pool["instance_type"], pool["capacity"]) == ("g5.xlarge", "spot")
    assert pool["monthly_cost_usd"] == pytest.approx(2 * 0.5 * 730)


def test_the_spec_names_its_catalog_relative_to_its_folder(tmp_path):
    (tmp_path / "prices").mkdir()
    write(tmp_path / "prices", "mine.csv", HEADER + CALGARY)
    spec = load_spec(calgary_spec(tmp_path, catalog="prices/mine.csv"))
    plan = build_plan(spec)
    assert plan.targets[0].pools[0].instance_type == "g5.xlarge"


def test_a_missing_spec_catalog_is_reported_at_its_line(tmp_path):
    path = calgary_spec(tmp_path, catalog="nope.csv")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    [problem] = info.value.problems
    line = path.read_text().splitlines().index("catalog: nope.csv") + 1
    assert str(problem) == (f"{path}:{line}:10: catalog: {tmp_path / 'nope.csv'}: no such catalog file (relative "
                            "paths start at the spec's folder)")


def test_negotiated_prices_replace_list_prices(tmp_path):
    bundled = load_catalog().instance("aws", "us-east-1", "g4dn.xlarge")
    assert bundled is not None and bundled.on_demand > 0.40
    quote = "aws,us-east-1,g4dn.xlarge,T4,1,4,16,0.40,,negotiated quote (test row),,2026-11-01\n"
    merged = with_catalog_files([str(write(tmp_path, "quote.csv", HEADER + quote))])
    row = merged.instance("aws", "us-east-1", "g4dn.xlarge")
    # The empty spot price changes nothing: the bundled one stays, credited to its own source.
    assert (row.on_demand, row.spot, row.origin) == (0.40, bundled.spot, str(tmp_path / "quote.csv"))
    assert row.spot_source == bundled.source
    assert len([r for r in merged.instances if r.name == "g4dn.xlarge" and r.region == "us-east-1"]) == 1
    assert merged.instance("aws", "us-east-1", "g4dn.2xlarge") == load_catalog().instance("aws", "us-east-1",
                                                                                          "g4dn.2xlarge")


def test_a_price_override_may_name_a_type_of_the_user_catalog(tmp_path):
    catalog = write(tmp_path, "mine.csv", HEADER + CALGARY)
    spec = spec_text([TRAIN], pricing={"instances": {"g5.xlarge": {"spot": 0.45}}}).replace("us-east-1", "ca-west-1")
    plan = build_plan(load_text(spec, "spec.yaml", [str(catalog)]))
    assert plan.targets[0].pools[0].monthly_cost_usd == pytest.approx(2 * 0.45 * 730)


def test_a_bundled_source_key_dates_a_user_row(tmp_path):
    row = "aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,,skypilot-aws-v8,\n"
    merged = with_catalog_files([str(write(tmp_path, "mine.csv", HEADER.replace(",as_of", "") + row))])
    assert merged.instance("aws", "ca-west-1", "g5.xlarge").as_of == load_catalog().sources["skypilot-aws-v8"].as_of


@pytest.mark.parametrize("row, message", [
    ("aws,ca-west-1,g5.xlarge,A10,1,4,16,1.25,,quote,,2026-11-20",
     None),  # a valid row: the reference for the bad ones below
    ("aws,ca-west-1,g5.xlarge,A10GG,1,4,16,1.25,,quote,,2026-11-20",
     "mine.csv:2:25: gpu: 'A10GG' is not a GPU model of the catalog (did you mean 'A10G'?); known: T4, L4, A10G, A10,"),
    ("aws,ca-west-1,g5.xlarge,A10G,0,4,16,1.25,,quote,,2026-11-20",
     "mine.csv:2:30: gpus: '0' is not a positive whole number of GPUs per node"),
    ("aws,ca-west-1,g5.xlarge,A10G,1,4,16,-1,,quote,,2026-11-20",
     "mine.csv:2:37: on_demand_usd: '-1' is outside 0..10000 USD per node-hour"),
    ("aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,2,quote,,2026-11-20",
     "mine.csv:2:42: spot_usd: spot 2 is more than on_demand_usd 1.25: spot capacity is sold below the on-demand "
     "price"),
    ("aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,,,,2026-11-20",
     "mine.csv:2:43: source: every row names its source"),
    ("aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,,quote,,",
     "mine.csv:2:50: as_of: no date for source 'quote': give as_of (YYYY-MM-DD, the date the prices describe)"),
    ("aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,,quote,,20.11.2026",
     "mine.csv:2:50: as_of: '20.11.2026' is not a date: YYYY-MM-DD or YYYY-MM"),
    ("amazon,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,,quote,,2026-11-20",
     "mine.csv:2:1: cloud: 'amazon' is not a cloud; known: aws, azure, gcp, oci"),
    ("aws,EU West 3,g5.xlarge,A10G,1,4,16,1.25,,quote,,2026-11-20",
     "mine.csv:2:5: region: 'EU West 3' is not a region name"),
    ("aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,,quote,2026-11-20",
     "mine.csv:2:1: 11 fields where the header names 12"),
])
def test_rows_are_checked_with_located_errors(tmp_path, row, message):
    path = write(tmp_path, "mine.csv", HEADER + row + "\n")
    if message is None:
        assert with_catalog_files([str(path)]).instance("aws", "ca-west-1", "g5.xlarge").gpu == "A10"
        return
    with pytest.raises(SpecError) as info:
        with_catalog_files([str(path)])
    [problem] = info.value.problems
    assert str(problem).startswith(str(tmp_path / message.split(":", 1)[0]) + ":" + message.split(":", 1)[1])


def test_duplicate_rows_and_unknown_columns_are_refused(tmp_path):
    path = write(tmp_path, "mine.csv", HEADER + CALGARY + CALGARY)
    with pytest.raises(SpecError) as info:
        with_catalog_files([str(path)])
    assert str(info.value) == (f"{path}:3:1: instance_type: aws ca-west-1 g5.xlarge is listed on line 2 too; one row "
                               "per cloud, region and instance type")
    path = write(tmp_path, "cols.csv", HEADER.replace("note", "notes") + CALGARY)
    with pytest.raises(SpecError) as info:
        with_catalog_files([str(path)])
    assert str(info.value).startswith(f"{path}:1:84: notes: 'notes' is not a catalog column (did you mean 'note'?)")


def test_gpu_missing_in_a_region_is_a_catalog_gap_with_the_way_in():
    text = spec_text([{"name": "big", "kind": "training", "gpu": "H200", "gpus": 8}], ("azure",))
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    message = str(info.value)
    assert "the bundled catalog has no H200 rows for AKS eastus (target 'azure-t')" in message
    assert "if AKS offers H200 there, add rows with --catalog FILE" in message
    assert "gpustack catalog refresh --cloud azure --region eastus" in message
    assert "not offered by" not in message


def test_plans_say_how_old_their_prices_are(tmp_path, capsys):
    catalog = write(tmp_path, "mine.csv", HEADER + CALGARY)
    plan = build_plan(load_spec(calgary_spec(tmp_path), [str(catalog)]))
    print_warnings(plan, today=datetime.date(2027, 1, 1))
    assert capsys.readouterr().err == ""
    print_warnings(plan, today=datetime.date(2027, 6, 1))
    assert capsys.readouterr().err == (
        "warning: prices more than 180 days old: aws-t 193 days (as of 2026-11-20); run gpustack catalog "
        "refresh, or give current or negotiated prices with --catalog FILE\n")


def test_the_plan_itself_does_not_change_with_the_day(tmp_path, capsys):
    catalog = write(tmp_path, "mine.csv", HEADER + CALGARY)
    plan = build_plan(load_spec(calgary_spec(tmp_path), [str(catalog)]))
    assert "days old" not in plan.to_json()


def test_a_gpu_the_cloud_cannot_run_is_a_cloud_gap_with_its_source():
    text = spec_text([{"name": "nb", "kind": "notebook", "gpu": "A10G", "gpu_fraction": 0.5}], ("gcp",))
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    message = str(info.value)
    assert "A10G is not offered by GKE (target 'gcp-t'): GKE has no accelerator type for A10G (https://" in message
    assert "--catalog" not in message


@pytest.mark.parametrize("command", [
    ["validate"], ["plan", "--format", "json"], ["check"], ["render", "--target", "aws-t", "--out", "{out}"],
])
def test_every_planning_command_takes_a_catalog(tmp_path, capsys, command):
    catalog = write(tmp_path, "mine.csv", HEADER + CALGARY)
    spec = calgary_spec(tmp_path)
    args = [a.replace("{out}", str(tmp_path / "rendered")) for a in command]
    assert main([args[0], str(spec), *args[1:], "--catalog", str(catalog)]) in (0, 1)  # check may find violations
    assert "no EKS prices for 'ca-west-1'" not in capsys.readouterr().err
    assert main([args[0], str(spec), *args[1:]]) == 2
    assert "the bundled catalog has no EKS GPU instance types in 'ca-west-1'" in capsys.readouterr().err


def test_diff_takes_a_catalog(tmp_path, capsys):
    catalog = write(tmp_path, "mine.csv", HEADER + CALGARY)
    spec = calgary_spec(tmp_path)
    assert main(["diff", str(spec), str(spec), "--catalog", str(catalog), "--format", "json"]) == 0
    assert main(["diff", str(spec), str(spec)]) == 2


@pytest.mark.parametrize("command", [["check"], ["diff", "{spec}"], ["plan"], ["validate"]])
def test_every_command_that_prices_warns_when_the_prices_are_old(tmp_path, capsys, command):
    catalog = write(tmp_path, "old.csv", HEADER + CALGARY.replace("2026-11-20", "2020-01-01"))
    spec = str(calgary_spec(tmp_path))
    args = [a.replace("{spec}", spec) for a in command]
    assert main([args[0], spec, *args[1:], "--catalog", str(catalog)]) in (0, 1)  # check may find violations
    assert "warning: prices more than 180 days old: aws-t " in capsys.readouterr().err
