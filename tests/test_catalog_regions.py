"""Plans in regions beyond the first few: the right size of a family is there, so packing pays."""

from __future__ import annotations

from conftest import spec_text
from gpustack.catalog import Catalog, load_catalog
from gpustack.plan import build_plan
from gpustack.spec import load_text

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
