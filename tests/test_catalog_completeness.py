"""The bundled catalog against indexes of its sources (tests/data/catalog_index/, extracted from the
source snapshots, not from the catalog): every region a source prices appears, and every size of a
family the region sells is there, so the planner can pick the right size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpustack.catalog import load_catalog

INDEX = Path(__file__).parent / "data" / "catalog_index"


def index(cloud: str) -> dict:
    return json.loads((INDEX / f"{cloud}.json").read_text(encoding="utf-8"))["sources"]


def sizes_in(cloud: str, region: str) -> set[str]:
    return {row.name for row in load_catalog().in_region(cloud, region)}


def test_azure_has_every_region_and_size_karpenters_table_prices():
    on_demand = index("azure")["azure-karpenter-prices-2026-06"]["on_demand"]
    assert len(on_demand) >= 25
    bundled = set(load_catalog().regions("azure"))
    assert set(on_demand) <= bundled
    for region, sizes in on_demand.items():
        assert set(sizes) <= sizes_in("azure", region), region


def test_azure_eu_regions_have_the_spot_price_of_every_size_the_snapshot_meters():
    spot = index("azure")["azure-pricing-radar-2026-08"]["spot"]
    assert set(spot) == {"westeurope", "northeurope", "francecentral", "swedencentral"}
    catalog = load_catalog()
    for region, sizes in spot.items():
        priced = {row.name for row in catalog.in_region("azure", region) if row.spot is not None}
        assert set(sizes) <= priced, region


AWS_FAMILIES = [(source, region, family) for source, body in index("aws").items()
                for region, families in body["families"].items() for family in families]


@pytest.mark.parametrize("source, region, family", AWS_FAMILIES)
def test_aws_families_are_complete_where_sold(source, region, family):
    expected = set(index("aws")[source]["families"][region][family])
    assert {name for name in sizes_in("aws", region) if name.split(".")[0] == family} >= expected


def test_aws_has_every_region_the_sources_price_gpus_in():
    regions = set(index("aws")["vantage-aws-gpu-2026-08"]["families"])
    assert len(regions) >= 20
    assert set(load_catalog().regions("aws")) == regions


def test_no_bundled_region_is_outside_its_sources():
    azure = index("azure")
    listed = set(azure["azure-karpenter-prices-2026-06"]["on_demand"]) | set(azure["azure-pricing-radar-2026-08"]["spot"])
    assert set(load_catalog().regions("azure")) == listed


def test_oci_has_every_shape_in_every_region_read():
    source = index("oci")["skypilot-oci-v8"]
    assert len(source["regions"]) >= 15
    assert set(load_catalog().regions("oci")) == set(source["regions"])
    for region in source["regions"]:
        assert sizes_in("oci", region) == set(source["shapes"]), region


GCP_SOURCE = "cyclenerd-gcp-pricing-2026-07"
GCP_FAMILIES = [(region, family) for region, families in index("gcp")[GCP_SOURCE]["families"].items()
                for family in families]


@pytest.mark.parametrize("region, family", GCP_FAMILIES)
def test_gcp_families_are_complete_where_offered_and_priced(region, family):
    expected = set(index("gcp")[GCP_SOURCE]["families"][region][family])
    assert {name for name in sizes_in("gcp", region) if name.rsplit("-", 1)[0] == family} >= expected


def test_gcp_has_every_region_the_source_prices_and_offers_gpus_in():
    regions = set(index("gcp")[GCP_SOURCE]["families"])
    assert len(regions) >= 25
    assert set(load_catalog().regions("gcp")) == regions


def test_gcp_machines_offered_but_not_priced_have_no_row():
    # a row there would be a price no source gives (the older rows were dropped, not carried)
    for region, names in index("gcp")[GCP_SOURCE]["offered_not_priced"].items():
        assert not set(names) & sizes_in("gcp", region), region
