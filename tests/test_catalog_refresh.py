"""`gpustack catalog refresh` on recorded responses of the four price APIs (tests/fixtures/prices).

The fixtures are pages in each API's own format (see tests/fixtures/README.md); nothing here reaches
the network: recorded pages go through the same parsing code as live ones.
"""

from __future__ import annotations

import csv
import json
import shutil
import socket
import urllib.request
from pathlib import Path

import pytest

from conftest import spec_text
from gpustack.catalog import load_catalog
from gpustack.catalog.feeds import NetworkPages, RefreshError
from gpustack.catalog.refresh import refresh
from gpustack.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PRICES = FIXTURES / "prices"


def run_refresh(tmp_path, capsys, *args, out="catalog.csv", input_path=PRICES):
    code = main(["catalog", "refresh", "--input", str(input_path), "--as-of", "2026-11-30",
                 "--out", str(tmp_path / out), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows_of(path):
    return {(r["cloud"], r["region"], r["instance_type"]): r for r in csv.DictReader(path.open())}


def test_azure_consumption_spot_and_reservation_meters(tmp_path, capsys):
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "azure", "--region", "eastus")
    assert code == 0, out
    rows = rows_of(tmp_path / "catalog.csv")
    assert set(rows) == {("azure", "eastus", "Standard_NC24ads_A100_v4"), ("azure", "eastus", "Standard_NC4as_T4_v3")}
    a100 = rows[("azure", "eastus", "Standard_NC24ads_A100_v4")]
    # Linux pay-as-you-go and Spot; the Windows, Low Priority and Dev/Test meters are not taken.
    assert (a100["on_demand_usd"], a100["spot_usd"]) == ("3.673", "0.44443")
    assert a100["reserved_1y_usd"] == "2.283105"  # 20000 for the 1-year term / 8760 hours
    assert (a100["gpu"], a100["gpus"], a100["as_of"]) == ("A100-80GB", "1", "2026-11-30")
    t4 = rows[("azure", "eastus", "Standard_NC4as_T4_v3")]
    assert (t4["on_demand_usd"], t4["spot_usd"], t4["note"]) == ("0.526", "", "no Spot meter")
    assert "skipped 1 Windows meters" in out and "skipped 1 Low Priority meters" in out
    assert "skipped 1 Dev/Test meters" in out
    assert "no Spot meter for Standard_NC4as_T4_v3" in out
    assert "1 priced sizes are not GPU sizes of the catalog" in out  # Standard_F16s
    assert "spot - -> 0.4444" in out  # moved: the bundled row had no spot price, the API has one


def test_aws_on_demand_and_lowest_zone_spot(tmp_path, capsys):
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "aws", "--region", "us-east-1")
    assert code == 0, out
    rows = rows_of(tmp_path / "catalog.csv")
    assert set(rows) == {("aws", "us-east-1", "g4dn.xlarge"), ("aws", "us-east-1", "p5.48xlarge")}
    g4 = rows[("aws", "us-east-1", "g4dn.xlarge")]
    # The latest price per zone (1a moved from 0.30 to 0.20), the lowest zone; the Local Zone and the
    # Windows price are left out.
    assert (g4["on_demand_usd"], g4["spot_usd"], g4["note"]) == ("0.526", "0.2", "spot: lowest of 2 zones")
    p5 = rows[("aws", "us-east-1", "p5.48xlarge")]
    assert (p5["on_demand_usd"], p5["spot_usd"]) == ("55.04", "")  # the Capacity Block price is not taken
    assert "skipped 1 not Linux price items" in out and "skipped 1 capacity block price items" in out
    assert "no spot price for p5.48xlarge" in out


def test_gcp_machine_price_is_the_sum_of_its_skus(tmp_path, capsys):
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "gcp", "--region", "us-central1")
    assert code == 0, out
    rows = rows_of(tmp_path / "catalog.csv")
    # The A2 core, RAM and A100 40GB SKUs price every a2-highgpu / a2-megagpu type; nothing else was recorded.
    assert {k[2] for k in rows} == {"a2-highgpu-1g", "a2-highgpu-2g", "a2-highgpu-4g", "a2-highgpu-8g",
                                    "a2-megagpu-16g"}
    row = rows[("gcp", "us-central1", "a2-highgpu-1g")]
    # 12 vCPU x 0.031611 + 85 GiB x 0.004237 + 1 A100 x 2.933908 (the real SKUs of the sample response).
    assert float(row["on_demand_usd"]) == pytest.approx(12 * 0.031611 + 85 * 0.004237 + 2.933908)
    assert row["spot_usd"] == "" and "no Spot SKU" in row["note"]  # no Preemptible GPU SKU was recorded
    bundled = load_catalog().instance("gcp", "us-central1", "a2-highgpu-1g")
    assert float(row["on_demand_usd"]) == pytest.approx(bundled.on_demand, abs=1e-4)
    assert "no GPU SKU for" in out and "g2-standard-4" in out


def test_oci_per_gpu_prices_across_pages(tmp_path, capsys):
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "oci", "--region", "eu-frankfurt-1")
    assert code == 0, out
    rows = rows_of(tmp_path / "catalog.csv")
    prices = {k[2]: float(r["on_demand_usd"]) for k, r in rows.items()}
    assert prices["VM.GPU.A10.2"] == 4.0 and prices["BM.GPU.H100.8"] == 80.0
    assert prices["BM.GPU.A100-v2.8"] == 32.0  # page 2, the older `prices` block
    assert prices["BM.GPU3.8"] == 23.6
    assert "BM.GPU.H200.8" not in prices and "no price list item for" in out
    assert all(r["region"] == "eu-frankfurt-1" and r["spot_usd"] == "" for r in rows.values())


def test_all_four_clouds_from_one_folder(tmp_path, capsys):
    code, out, _ = run_refresh(tmp_path, capsys, "--region", "us-east-1", "--region", "eastus",
                               "--region", "us-central1", "--region", "us-ashburn-1")
    assert code == 0, out
    clouds = {k[0] for k in rows_of(tmp_path / "catalog.csv")}
    assert clouds == {"aws", "azure", "gcp", "oci"}


def test_a_refreshed_catalog_plans_and_dates_the_plan(tmp_path, capsys):
    assert run_refresh(tmp_path, capsys, "--cloud", "oci", "--region", "eu-frankfurt-1")[0] == 0
    spec = tmp_path / "spec.yaml"
    workload = {"name": "train", "kind": "training", "gpu": "H100", "gpus": 8}
    spec.write_text(spec_text([workload], ("oci",)).replace("us-ashburn-1", "eu-frankfurt-1"))
    assert main(["plan", str(spec), "--catalog", str(tmp_path / "catalog.csv"), "--format", "json"]) == 0
    target = json.loads(capsys.readouterr().out)["targets"][0]
    assert target["cost"]["prices_as_of"] == "2026-11-30"
    assert target["pools"][0]["instance_type"] == "BM.GPU.H100.8"


def test_gpu_filter_keeps_the_other_rows(tmp_path, capsys):
    assert run_refresh(tmp_path, capsys, "--cloud", "oci", "--region", "eu-frankfurt-1")[0] == 0
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "oci", "--region", "eu-frankfurt-1", "--gpu", "A10")
    assert code == 0
    assert "compared with the previous" in out and "0 added, 0 removed, 0 moved" in out
    assert ("oci", "eu-frankfurt-1", "BM.GPU.H100.8") in rows_of(tmp_path / "catalog.csv")


def test_changes_are_reported_against_the_previous_file(tmp_path, capsys):
    assert run_refresh(tmp_path, capsys, "--cloud", "oci", "--region", "eu-frankfurt-1")[0] == 0
    recorded = tmp_path / "recorded"
    shutil.copytree(PRICES / "oci", recorded)
    page = json.loads((recorded / "products-1.json").read_text())
    page["items"][0]["currencyCodeLocalizations"][0]["prices"][0]["value"] = 2.2  # A10: +10%
    page["items"][1]["currencyCodeLocalizations"][0]["prices"][0]["value"] = 10.4  # H100: +4%, not reported
    (recorded / "products-1.json").write_text(json.dumps(page))
    page2 = json.loads((recorded / "products-2.json").read_text())
    page2["items"] = [i for i in page2["items"] if "E3" not in i["displayName"]]
    (recorded / "products-2.json").write_text(json.dumps(page2))
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "oci", "--region", "eu-frankfurt-1",
                               input_path=recorded)
    assert code == 0
    assert "0 added, 4 removed, 3 moved by more than 5%" in out
    assert "  ~ oci eu-frankfurt-1 VM.GPU.A10.1: on-demand 2 -> 2.2 (+10.0%)" in out
    assert "  - oci eu-frankfurt-1 BM.GPU3.8 (was on-demand 23.6, spot - USD/h)" in out
    assert "BM.GPU.H100.8" not in out


@pytest.mark.parametrize("drop, message", [
    ("prices-2.json", "links to a next page (https://prices.azure.com:443/api/retail/prices?$filter="),
    (None, "page 3 of 'prices' was never asked for: page 2 has no link to a next page"),
])
def test_pagination_must_match_the_recorded_pages(tmp_path, capsys, drop, message):
    recorded = tmp_path / "recorded"
    shutil.copytree(PRICES / "azure", recorded)
    if drop:
        (recorded / drop).unlink()
    else:
        shutil.copy(recorded / "prices-2.json", recorded / "prices-3.json")
    code, _, err = run_refresh(tmp_path, capsys, "--cloud", "azure", "--region", "eastus", input_path=recorded)
    assert code == 2 and message in err


@pytest.mark.parametrize("cloud, region, message", [
    ("azure", "eastus", "prices-2.json: not valid JSON (line"),
    ("gcp", "us-central1", "skus-2.json: page 2: skus[1].pricingInfo is missing"),
])
def test_a_malformed_page_is_a_clear_error_and_the_old_catalog_is_kept(tmp_path, capsys, cloud, region, message):
    assert run_refresh(tmp_path, capsys, "--cloud", cloud, "--region", region)[0] == 0
    before = (tmp_path / "catalog.csv").read_bytes()
    code, _, err = run_refresh(tmp_path, capsys, "--cloud", cloud, "--region", region,
                               input_path=FIXTURES / "prices-malformed")
    assert code == 2 and message in err and "Traceback" not in err
    assert (tmp_path / "catalog.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.csv"]  # no temporary file left behind


def test_recorded_input_needs_its_date(tmp_path, capsys):
    code = main(["catalog", "refresh", "--input", str(PRICES), "--out", str(tmp_path / "c.csv")])
    assert code == 2
    assert "give --as-of YYYY-MM-DD, the day they were recorded" in capsys.readouterr().err
    assert not (tmp_path / "c.csv").exists()


@pytest.mark.parametrize("args, message", [
    (["--cloud", "amazon"], "--cloud 'amazon' has no price feed"),
    (["--gpu", "H1000"], "--gpu 'H1000' is not a GPU model of the catalog (did you mean 'H100'?)"),
    (["--region", "EU West"], "--region 'EU West' is not a region name"),
])
def test_bad_arguments_are_refused(tmp_path, capsys, args, message):
    code, _, err = run_refresh(tmp_path, capsys, *args)
    assert code == 2 and message in err


def test_network_pages_follow_next_links_with_urllib(monkeypatch):
    """The live path: the same parser, pages fetched with urllib (a stand-in opener; no network)."""
    from gpustack.clouds.azure import prices as azure

    pages = [json.loads((PRICES / "azure" / name).read_text()) for name in ("prices-1.json", "prices-2.json")]
    asked = []

    class Response:
        def __init__(self, body):
            self.body, self.headers = body, {"Content-Type": "application/json"}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self, limit):
            return self.body

    def opener(request, timeout):
        asked.append(request.full_url)
        return Response(json.dumps(pages[len(asked) - 1]).encode())

    facts = {r.name: r for r in load_catalog().instances if r.cloud == "azure"}
    result = azure.refresh(NetworkPages(opener=opener), "eastus", facts)
    assert asked[0].startswith("https://prices.azure.com/api/retail/prices?api-version=2023-01-01-preview&")
    assert "armRegionName%20eq%20%27eastus%27" in asked[0]
    assert asked[1] == pages[0]["NextPageLink"]
    assert {r.name for r in result.rows} == {"Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3"}


def test_plan_never_touches_the_network(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise AssertionError("plan tried to open a network connection")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    from conftest import EXAMPLE

    assert main(["plan", str(EXAMPLE), "--format", "json"]) == 0


def test_refresh_function_writes_nothing_for_an_unreadable_input(tmp_path):
    with pytest.raises(RefreshError, match="no such file or folder"):
        refresh(load_catalog(), tmp_path / "c.csv", input_path=tmp_path / "missing", as_of="2026-11-30")
    assert not (tmp_path / "c.csv").exists()


def test_aws_requests_are_signed_as_signature_version_4_says():
    """The get-vanilla vector of AWS's SigV4 test suite (credentials AKIDEXAMPLE, 2015-08-30 12:36 UTC)."""
    import datetime

    from gpustack.catalog.feeds import Request
    from gpustack.clouds.aws import prices

    credentials = prices._Credentials()
    credentials.key, credentials.secret, credentials.token = (
        "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "")
    signed = prices.sign(Request("https://example.amazonaws.com/"), credentials,
                         now=datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.UTC),
                         scope_of=("service", "us-east-1"))
    assert dict(signed.headers)["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")


def test_aws_public_offer_file_as_a_single_recorded_page(tmp_path, capsys):
    """Without credentials AWS is read from its per-region offer file, which has no spot prices."""
    code, out, _ = run_refresh(tmp_path, capsys, "--cloud", "aws", "--region", "us-east-1",
                               input_path=FIXTURES / "aws-offer-file-us-east-1.json")
    assert code == 0, out
    rows = rows_of(tmp_path / "catalog.csv")
    # The unused-capacity-reservation price of the same type is not the on-demand rate.
    assert {k: (r["on_demand_usd"], r["spot_usd"]) for k, r in rows.items()} == {
        ("aws", "us-east-1", "g5.xlarge"): ("1.006", "")}
