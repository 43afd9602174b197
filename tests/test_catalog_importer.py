"""`make catalog SOURCES=DIR`: the bundled per-cloud files rebuilt from source snapshots (small fixture
snapshots in the sources' own formats here), deterministically, with the moves printed."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from gpustack.catalog.feeds import RefreshError
from gpustack.catalog.importer import main, rebuild
from gpustack.catalog.rows import InstanceType
from gpustack.catalog.snapshots import Snapshot, skypilot_rows
from gpustack.clouds.aws.snapshot import _pick, _spot_feed

SOURCES = Path(__file__).parent / "fixtures" / "catalog_sources"


def rows_of(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    return {(r["region"], r["instance_type"]): r for r in csv.DictReader(path.open(encoding="utf-8"))}


@pytest.fixture()
def built(tmp_path):
    lines = rebuild(SOURCES, tmp_path)
    return tmp_path, "\n".join(lines)


def skypilot_aws_rows() -> dict[tuple[str, str], InstanceType]:
    """The fixture's SkyPilot AWS rows as read, before newer bundled rows (the spot feed's) win a region."""
    from gpustack.catalog import load_catalog
    from gpustack.clouds.aws.snapshot import _note, regional_zone

    catalog = load_catalog()
    snap = Snapshot("skypilot-aws-v8", SOURCES / "aws" / "skypilot-aws-v8", "2025-11")
    rows, _ = skypilot_rows([snap], "aws", lambda name: (m.name if (m := catalog.gpu(name)) else None),
                            regional_zone, _note)
    return {(r.region, r.name): r for r in rows}


def test_aws_spot_is_the_lowest_regional_zone_price_without_placeholders_or_local_zones(built):
    _, out = built
    rows = skypilot_aws_rows()
    g5 = rows[("eu-west-1", "g5.2xlarge")]
    # euw1-az3's 1.35296 equals on-demand: a placeholder, not a price; az2 is the lowest real one
    assert (g5.gpu, g5.gpus, g5.vcpus, g5.memory_gib) == ("A10G", 1, 8, 32)
    assert (g5.on_demand, g5.spot, g5.source, g5.as_of) == (1.35296, 0.6179, "skypilot-aws-v8", "2025-11")
    west = rows[("us-west-2", "g5.xlarge")]
    assert west.spot == 0.45 and "usw2-az1" in west.note  # the Local Zone's 0.31 is left out
    p4d = rows[("us-west-2", "p4d.24xlarge")]
    assert (p4d.gpu, p4d.source) == ("A100-40GB", "skypilot-aws-v8")  # SkyPilot's "A100" is the 40 GB part
    assert ("us-west-2", "g4ad.xlarge") not in rows and ("us-west-2", "g6f.large") not in rows  # AMD; a fraction
    assert "accelerators the catalog has no GPU model for (left out): Radeon Pro V520" in out
    assert "fractional-GPU types (left out): g6f.large" in out
    assert "types with no on-demand price in the source (left out): p5e.48xlarge" in out


def test_gcp_rows_are_priced_machines_in_the_regions_compute_engine_lists_them_in(built):
    data, out = built
    rows = rows_of(data / "gcp.csv")
    g2 = rows[("us-central1", "g2-standard-4")]
    assert (g2["gpu"], g2["gpus"], g2["vcpus"], g2["memory_gib"], g2["source"], g2["as_of"]) == (
        "L4", "1", "4", "16", "cyclenerd-gcp-pricing-2026-07", "2026-07-30")
    assert (g2["on_demand_usd"], g2["spot_usd"]) == ("0.70683", "0.39734")  # hour and hour_spot, rounded to 5 decimals
    assert ("africa-south1", "g2-standard-4") not in rows  # priced there, but not offered there
    assert rows[("europe-west4", "g2-standard-8")]["spot_usd"] == ""  # a spot figure equal to on-demand
    a3 = rows[("us-east4", "a3-highgpu-8g")]
    assert (a3["gpu"], a3["gpus"], a3["memory_gib"]) == ("H100", "8", "1872")
    g4 = rows[("us-central1", "g4-standard-48")]
    assert (g4["gpu"], g4["gpus"]) == ("RTX-PRO-6000", "1")
    assert "fractional-GPU machine types (left out): g4-standard-12" in out  # an eighth of a GPU
    # n1 + T4 is not priced by the snapshot: the bundled rows stay, with their own source and date
    t4 = rows[("us-central1", "n1-standard-4")]
    assert (t4["gpu"], t4["source"], t4["as_of"]) == ("T4", "skypilot-gcp-v8", "2025-09")
    assert "bundled rows kept" in out and "n1-standard-4" in out


def test_azure_takes_the_newer_snapshot_where_two_overlap_and_marks_spot_unknown_elsewhere(built):
    data, out = built
    rows = rows_of(data / "azure.csv")
    t4 = rows[("westeurope", "Standard_NC4as_T4_v3")]
    # matched by name ("NC4as T4 v3"); the Windows Spot item and E20as v6 (same price) are not taken
    assert (t4["on_demand_usd"], t4["spot_usd"], t4["source"], t4["as_of"]) == (
        "0.658", "0.457113", "azure-pricing-radar-2026-08", "2026-08-22")
    assert rows[("westeurope", "Standard_NC24ads_A100_v4")]["spot_usd"] == "1.097295"
    east = rows[("eastus", "Standard_NC8as_T4_v3")]
    assert (east["on_demand_usd"], east["spot_usd"], east["source"]) == ("0.752", "", "azure-karpenter-prices-2026-06")
    assert east["note"] == "no Spot price in the sources for this region"
    assert (east["gpu"], east["vcpus"], east["memory_gib"]) == ("T4", "8", "56")  # the bundled facts
    assert ("eastus", "Standard_D2s_v5") not in rows
    assert "without instance facts in the catalog (left out): Standard_NC8ads_A10_v4" in out
    h200 = rows[("eastus", "Standard_ND96isr_H200_v5")]  # a size no bundled row has: facts sourced in the bundle
    assert (h200["gpu"], h200["gpus"], h200["vcpus"], h200["memory_gib"]) == ("H200", "8", "96", "1850")
    assert h200["note"].startswith("facts: microsoft/aspire")


def test_every_rebuilt_row_is_dated_and_the_moves_are_printed(built):
    data, out = built
    assert "+ aws eu-west-1 g5.2xlarge" not in out  # the bundled catalog has it already
    assert "- oci us-ashburn-1 BM.GPU.H100.8 (was on-demand" in out  # not in the fixture's OCI snapshot
    assert "+ oci eu-frankfurt-1 VM.GPU3.1" not in out and "oci: wrote oci.csv: 3 rows in 2 regions" in out
    assert "gcp: its bundle reads no snapshots" not in out and "gcp: wrote gcp.csv" in out
    for name in ("aws.csv", "azure.csv", "oci.csv"):
        assert all(r["as_of"] and r["source"] for r in rows_of(data / name).values())


def test_the_same_snapshots_give_the_same_bytes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    rebuild(SOURCES, tmp_path / "a")
    rebuild(SOURCES, tmp_path / "b")
    for name in ("aws.csv", "azure.csv", "oci.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_snapshot_folder_must_be_a_known_source_key(tmp_path):
    shutil.copytree(SOURCES / "oci", tmp_path / "oci" / "skypilot-oci-v9")
    with pytest.raises(RefreshError, match=re.escape("'skypilot-oci-v9' is not a source key of sources.yaml")):
        rebuild(tmp_path, tmp_path)


def test_a_karpenter_table_must_have_the_date_sources_yaml_gives(tmp_path):
    folder = tmp_path / "azure" / "azure-karpenter-prices-2026-06"
    folder.mkdir(parents=True)
    table = (SOURCES / "azure" / "azure-karpenter-prices-2026-06" / "zz_generated.pricing.go").read_text()
    (folder / "zz_generated.pricing.go").write_text(table.replace("2026-06-18T03", "2026-07-01T03"))
    with pytest.raises(RefreshError, match=re.escape("generated on 2026-07-01, but sources.yaml gives")):
        rebuild(tmp_path, tmp_path)


def test_the_command_says_what_is_wrong_and_exits_2(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main([str(SOURCES), "--check", "--data", str(tmp_path)]) == 0
    assert "would write aws.csv" in capsys.readouterr().out and not (tmp_path / "aws.csv").exists()


def _aws_row(source, as_of, on_demand, spot, note=""):
    return InstanceType(cloud="aws", region="us-east-1", name="g5.xlarge", gpu="A10G", gpus=1, vcpus=4,
                        memory_gib=16, on_demand=on_demand, spot=spot, source=source, note=note, as_of=as_of)


def test_an_on_demand_table_confirms_an_older_on_demand_price_but_never_its_spot_price():
    old = _aws_row("skypilot-aws-v8", "2025-11", 1.006, 0.45)
    (kept,), _ = _pick([old, _aws_row("aws-karpenter-prices-2026-07", "2026-07-20", 1.006, None)])
    # same price to the cent: the spot price stays, with its own date, and the note names the confirmation
    assert (kept.spot, kept.as_of, kept.source) == (0.45, "2025-11", "skypilot-aws-v8")
    assert kept.note == ("on-demand confirmed by aws-karpenter-prices-2026-07 (2026-07-20), spot price and date "
                         "of skypilot-aws-v8 (2025-11)")
    (again,), _ = _pick([kept, _aws_row("aws-karpenter-prices-2026-07", "2026-07-20", 1.006, None)])
    assert again.note == kept.note  # a rebuild reading its own output says it once
    (newer,), _ = _pick([old, _aws_row("aws-karpenter-prices-2026-07", "2026-07-20", 1.016, None)])
    assert (newer.on_demand, newer.spot, newer.as_of) == (1.016, None, "2026-07-20")  # a new price: no old spot


FEED = Snapshot("aws-spot-feed-2026-08", Path("spot.json"), "2026-08-06")


def test_the_spot_feed_gives_a_newer_spot_price_to_the_newest_on_demand_price_dated_by_the_older_of_the_two():
    old = _aws_row("skypilot-aws-v8", "2025-11", 1.006, 0.45)
    karpenter = _aws_row("aws-karpenter-prices-2026-07", "2026-07-20", 1.006, None)
    (row,), _ = _pick([old, karpenter], {("us-east-1", "g5.xlarge"): (0.5089, FEED)})
    assert (row.on_demand, row.spot, row.as_of, row.source) == (1.006, 0.5089, "2026-07-20", "aws-spot-feed-2026-08")
    assert row.note == ("on-demand of aws-karpenter-prices-2026-07 (2026-07-20); spot from aws-spot-feed-2026-08 "
                        "(2026-08-06)")
    # a rebuild reading its own output (the row carried, the on-demand table given again) says the same
    (again,), _ = _pick([row, karpenter], {("us-east-1", "g5.xlarge"): (0.5089, FEED)})
    assert again == row
    # without the feed the row keeps its spot price: nothing newer replaces it
    (kept,), _ = _pick([row, karpenter])
    assert (kept.spot, kept.as_of) == (0.5089, "2026-07-20")


def test_a_feed_price_at_or_above_on_demand_is_not_a_spot_price():
    karpenter = _aws_row("aws-karpenter-prices-2026-07", "2026-07-20", 1.006, None)
    (row,), notes = _pick([karpenter], {("us-east-1", "g5.xlarge"): (1.006, FEED)})
    assert (row.spot, row.source) == (None, "aws-karpenter-prices-2026-07")
    assert notes == ["us-east-1 g5.xlarge: aws-spot-feed-2026-08 spot 1.006 is not below on-demand 1.006 USD/h; "
                     "left out"]


def test_a_row_without_a_spot_price_takes_the_feeds_dated_by_the_feed():
    vantage = _aws_row("vantage-aws-gpu-2026-08", "2026-08-26", 1.006, None)
    (row,), notes = _pick([vantage], {("us-east-1", "g5.xlarge"): (0.5089, FEED)})
    assert (row.on_demand, row.spot, row.as_of, row.source) == (1.006, 0.5089, "2026-08-06", "aws-spot-feed-2026-08")
    assert notes == []


def test_a_feed_price_equal_to_on_demand_at_the_feeds_four_decimals_is_the_cap_not_a_spot_price():
    vantage = _aws_row("vantage-aws-gpu-2026-08", "2026-08-26", 11.81123, None)
    (row,), notes = _pick([vantage], {("us-east-1", "g5.xlarge"): (11.8112, FEED)})
    assert row.spot is None and "not below on-demand" in notes[0]
    (below,), _ = _pick([vantage], {("us-east-1", "g5.xlarge"): (11.8111, FEED)})
    assert below.spot == 11.8111


def test_the_spot_feed_is_read_for_regions_proper_and_numeric_linux_prices(tmp_path):
    feed = tmp_path / "spot.json"
    sizes = [{"size": "g5.xlarge", "valueColumns": [{"name": "linux", "prices": {"USD": "0.5089"}},
                                                    {"name": "mswin", "prices": {"USD": "0.3167"}}]},
             {"size": "p5.48xlarge", "valueColumns": [{"name": "linux", "prices": {"USD": "N/A*"}}]}]
    regions = [{"region": region, "instanceTypes": [{"type": "gpuCurrentGen", "sizes": sizes}]}
               for region in ("us-east-1", "us-east-1-atl-1")]
    feed.write_text(json.dumps({"vers": 0.01, "config": {"regions": regions}}))
    assert _spot_feed(feed.read_text(), str(feed)) == {("us-east-1", "g5.xlarge"): 0.5089}
    with pytest.raises(RefreshError, match="not a spot pricing feed"):
        _spot_feed('{"config": {}}', "spot.json")
    twice = [{"region": "us-east-1", "instanceTypes": [{"type": "gpuCurrentGen", "sizes": [
        {"size": "g5.xlarge", "valueColumns": [{"name": "linux", "prices": {"USD": price}}]} for price in ("1", "2")]}]}]
    with pytest.raises(RefreshError, match=re.escape("us-east-1 g5.xlarge is listed with two Linux prices")):
        _spot_feed(json.dumps({"config": {"regions": twice}}), "spot.json")


# The regions of the feed of 2026-08-06 whose GPU group lists a size the catalog has; me-central-1,
# me-south-1 and the GovCloud regions are not in the feed.
FEED_REGIONS = {"af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
                "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-5",
                "ca-central-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
                "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "sa-east-1", "us-east-1", "us-east-2",
                "us-west-1", "us-west-2"}


def test_the_bundled_aws_spot_prices_are_the_feeds_of_2026_08_06_in_every_region_it_lists():
    from gpustack.catalog import load_catalog

    catalog = load_catalog()
    spot = [r for r in catalog.rows_of("aws") if r.spot is not None]
    assert {r.region for r in spot} == FEED_REGIONS
    assert all(r.source == "aws-spot-feed-2026-08" and r.as_of == "2026-08-06" and r.spot < r.on_demand
               for r in spot)
    p4de = catalog.instance("aws", "us-east-1", "p4de.24xlarge")
    assert (p4de.on_demand, p4de.spot, p4de.as_of) == (27.44705, 21.8259, "2026-08-06")
    g5 = catalog.instance("aws", "eu-west-1", "g5.xlarge")  # SkyPilot's 0.5727 of 2025-11 before
    assert (g5.spot, g5.as_of) == (0.7264, "2026-08-06")


def test_make_catalog_reads_a_spot_feed_folder_and_prices_the_rows_it_lists(tmp_path):
    sources = tmp_path / "sources"
    shutil.copytree(SOURCES, sources)
    sizes = [{"size": "g5.xlarge", "valueColumns": [{"name": "linux", "prices": {"USD": "0.4101"}}]}]
    feed = {"config": {"regions": [{"region": "us-west-2", "instanceTypes": [{"type": "gpuCurrentGen", "sizes": sizes}]}]}}
    (sources / "aws" / "aws-spot-feed-2026-08").mkdir()
    (sources / "aws" / "aws-spot-feed-2026-08" / "spot.json").write_text(json.dumps(feed))
    out = tmp_path / "data"
    out.mkdir()
    rebuild(sources, out)
    west = rows_of(out / "aws.csv")[("us-west-2", "g5.xlarge")]
    # the feed given now prices the row over SkyPilot's zone price (2025-11) and over the bundled copy of the
    # same feed; the on-demand price is the newest table's (the bundled vantage-derived one), named in the note
    assert (west["spot_usd"], west["source"], west["as_of"]) == ("0.4101", "aws-spot-feed-2026-08", "2026-08-06")
    assert west["note"] == "on-demand of vantage-aws-gpu-2026-08 (2026-08-26); spot from aws-spot-feed-2026-08 (2026-08-06)"
