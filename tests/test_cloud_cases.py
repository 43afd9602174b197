"""Every registered cloud's behaviour table (`<bundle>/cases.py`, gpustack/clouds/cases.py): each case's
workload planned on the cloud's example target compiles to the pool the table says, or is refused where
and as it says."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import EVERY_CLOUD, example_target

from gpustack.clouds import CLOUDS
from gpustack.clouds.cases import PoolCase
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_text


def _cases(cloud: str) -> tuple[PoolCase, ...]:
    return tuple(CLOUDS.get(cloud).part("cases").CASES)


CASES = [(cloud, case) for cloud in EVERY_CLOUD for case in _cases(cloud)]


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
def test_every_cloud_brings_a_table_with_a_pool_and_a_refusal(cloud):
    cases = _cases(cloud)
    assert any(c.compiled for c in cases) and any(c.refused for c in cases), (
        f"{cloud}'s cases.py needs at least one compiled pool and one refusal")


@pytest.mark.parametrize(("cloud", "case"), CASES, ids=[f"{cloud}: {case.about}" for cloud, case in CASES])
def test_the_cloud_does_what_its_table_says(cloud, case):
    check_case(cloud, case)


def check_case(cloud: str, case: PoolCase, **top: object) -> None:
    """`case` planned on `cloud`'s example target (`top`: more top-level keys, e.g. a `catalog`)."""
    doc = {"version": 1, "name": "t", "targets": [example_target(cloud)],
           "workloads": [{"name": "w", **case.workload}], **top}
    text = yaml.safe_dump(doc, sort_keys=False)
    if case.refused:
        with pytest.raises(SpecError) as refused:
            build_plan(load_text(text, "spec.yaml"))
        problems = [(p.path, p.message) for p in refused.value.problems]
        assert any(path == case.refused_at and message.startswith(case.refused) for path, message in problems), \
            problems
        return
    plan = json.loads(build_plan(load_text(text, "spec.yaml")).to_json())
    pools = plan["targets"][0]["pools"]
    pool = next((p for p in pools if not case.capacity or p["capacity"] == case.capacity), None)
    assert pool is not None, f"no {case.capacity} pool among {[p['name'] for p in pools]}"
    if case.instance_type:
        assert pool["instance_type"] == case.instance_type
    assert {k: pool["compiled"].get(k, "<absent>") for k in case.compiled} == dict(case.compiled)
