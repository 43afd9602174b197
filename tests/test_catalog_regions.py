"""Plans in regions beyond the first few: the right size of a family is there, so packing pays."""

from __future__ import annotations

import datetime

from conftest import EXAMPLE, spec_text
from gpustack.catalog import Catalog, load_catalog
from gpustack.catalog.freshness import stale_message
from gpustack.clouds.gcp.facts import accelerator_type
from gpustack.plan import build_plan
from gpustack.spec import load_spec, load_text

# One A10G training job and an A10G service of 1 to 3 replicas with 4 CPUs and 16 GiB, in eu-west-1.
EU_WEST_1 = [{"name": "train", "kind": "training", "gpu": "A10G", "gpus": 1, "replicas": 1},
             {"name": "serve", "kind": "inference", "gpu": "A10G", "cpu": 4, "memory": "16Gi",
              "replicas": {"min": 1, "max": 3}}]


def eu_west_1_plan(catalog: Catalog | None = None):
    text = spec_text(EU_WEST_1, ("aws",)).replace("us-east-1", "eu-west-1")
    return build_plan(load_text(text, "spec.yaml"), catalog).targets[0]


def test_eu_west_1_plans_at_or_below_its_baseline_with_the_whole_g5_family():
    target = eu_west_1_plan()
    assert target.region == "eu-west-1"
    serve = [p for p in target.pools if p.kind == "inference"]
    # 4 CPUs and 16 GiB do not fit beside the system reserve of a g5.xlarge (4 vCPUs, 16 GiB): the
    # next size up, g5.2xlarge, carries each replica
    assert {p.instance_type for p in serve} == {"g5.2xlarge"}
    assert target.cost.planned_monthly_usd <= target.cost.baseline_monthly_usd


def test_without_the_middle_sizes_the_same_spec_costs_more_than_its_baseline():
    full = load_catalog()
    cut = tuple(r for r in full.instances
                if not (r.cloud == "aws" and r.region == "eu-west-1" and r.name in ("g5.2xlarge", "g5.4xlarge")))
    short = Catalog(full.gpus, cut, full.sources, full.discounts, spot_rules=full.spot_rules)
    target = eu_west_1_plan(short)
    assert "g5.2xlarge" not in {p.instance_type for p in target.pools}
    assert target.cost.planned_monthly_usd > target.cost.baseline_monthly_usd  # the gap the complete family closes


TODAY = datetime.date(2026, 12, 1)


def test_the_price_age_counts_from_the_rows_a_plan_uses():
    # one GCP region: g2 + L4 is priced from the 2026-07-30 table, n1 + T4 only from SkyPilot's 2025-09 rows
    def target(gpu: str):
        text = spec_text([{"name": "ml", "kind": "training", "gpu": gpu, "gpus": 1, "replicas": 1}], ("gcp",))
        [planned] = build_plan(load_text(text, "spec.yaml")).targets
        return planned

    fresh, old = target("L4"), target("T4")
    assert fresh.prices_as_of == "2026-07-30" and stale_message(fresh.prices_as_of, TODAY) is None
    assert old.prices_as_of == "2025-09" and "days old" in (stale_message(old.prices_as_of, TODAY) or "")


def test_every_aws_region_the_catalog_has_is_quiet_about_price_age_today():
    from gpustack.catalog import load_catalog

    assert min(r.as_of for r in load_catalog().rows_of("aws")) == "2026-08-06"


def test_the_bundled_examples_azure_target_is_quiet_about_price_age_today():
    [azure] = [t for t in build_plan(load_spec(EXAMPLE)).targets if t.cloud == "azure"]
    assert azure.prices_as_of.startswith("2026-06-18") and stale_message(azure.prices_as_of, TODAY) is None


def test_gcp_plans_in_the_regions_the_2026_source_adds_at_its_prices():
    l4 = spec_text([{"name": "serve", "kind": "inference", "gpu": "L4", "gpus": 1, "replicas": 1}], ("gcp",))
    [target] = build_plan(load_text(l4.replace("us-central1", "europe-west2"), "spec.yaml")).targets
    assert target.region == "europe-west2" and {p.instance_type for p in target.pools} == {"g2-standard-4"}
    assert target.prices_as_of == "2026-07-30" and stale_message(target.prices_as_of, TODAY) is None


def test_an_rtx_pro_6000_on_gke_is_a_g4_machine_with_its_accelerator_type():
    viz = spec_text([{"name": "viz", "kind": "training", "gpu": "RTX-PRO-6000", "gpus": 1, "replicas": 1}], ("gcp",))
    [target] = build_plan(load_text(viz, "spec.yaml")).targets
    assert {p.instance_type for p in target.pools} == {"g4-standard-48"}
    assert accelerator_type("RTX-PRO-6000", "g4-standard-48") == "nvidia-rtx-pro-6000"
