"""The bundled catalog: every region is documented in its README, every row sourced and dated."""

from __future__ import annotations

import re
from pathlib import Path

from gpustack.catalog import load_catalog
from gpustack.catalog.freshness import start_of

README = Path(__file__).resolve().parent.parent / "gpustack" / "catalog" / "data" / "README.md"


def coverage_table() -> set[tuple[str, str]]:
    """(cloud, region) pairs the README's coverage tables name (a cell may list several regions)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Coverage", 1)[1].split("\n## ", 1)[0]
    clouds = set(load_catalog().clouds)
    pairs = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in clouds:
            pairs |= {(cells[0], region.strip()) for region in cells[1].split(",")}
    return pairs


def test_every_bundled_region_is_in_the_readme_and_nothing_else():
    catalog = load_catalog()
    regions = {(row.cloud, row.region) for row in catalog.instances}
    assert coverage_table() == regions


def test_the_readme_row_counts_match_the_data():
    catalog = load_catalog()
    text = README.read_text(encoding="utf-8")
    total = int(re.search(r"## Coverage \((\d+) rows", text).group(1))
    assert total == len(catalog.instances)


def test_every_row_has_a_known_source_and_a_date():
    catalog = load_catalog()
    for row in catalog.instances:
        assert row.source in catalog.sources, row
        assert start_of(row.as_of) is not None, row


def test_the_main_regions_of_each_cloud_are_bundled():
    regions = {(row.cloud, row.region) for row in load_catalog().instances}
    for cloud, region in [("aws", "eu-west-1"), ("aws", "eu-central-1"), ("aws", "ap-northeast-1"),
                          ("gcp", "europe-west4"), ("gcp", "asia-southeast1"), ("oci", "eu-frankfurt-1"),
                          ("oci", "uk-london-1"), ("oci", "ap-tokyo-1"),
                          ("azure", "westeurope"), ("azure", "swedencentral"), ("azure", "japaneast")]:
        assert (cloud, region) in regions


def test_azure_has_eu_and_apac_regions_with_their_own_dates():
    rows = [row for row in load_catalog().instances if row.cloud == "azure"]
    dates = {(row.region, row.as_of) for row in rows}
    assert {("westeurope", "2026-08-22"), ("swedencentral", "2026-08-22"), ("japaneast", "2026-06-18")} <= dates
    h100 = {row.region: row for row in rows if row.name == "Standard_ND96isr_H100_v5"}
    assert h100["westeurope"].gpus == h100["japaneast"].gpus == 8  # facts of the corrected eastus row
    assert h100["westeurope"].spot is not None and h100["japaneast"].spot is None  # the APAC source has no Spot
