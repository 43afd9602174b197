"""Properties of the planner over random specs: a move that changes nothing saves exactly $0, and no
single instance type pinned for every workload of a GPU model plans for less than the planner."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpustack.catalog import Catalog, load_catalog
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.plan.model import HOURS_PER_MONTH
from gpustack.spec import load_text
from tests.conftest import TARGETS

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
REGION = TARGETS["aws"]["region"]


def one_gpu_type_catalog() -> Catalog:
    """The bundled catalog with one T4 type of one GPU: every whole-GPU replica sits alone on a node of
    the type its baseline is priced on, so sharing (packing, types) has nothing to change."""
    full = load_catalog()
    t4 = [r for r in full.in_region("aws", REGION) if r.gpu == "T4" and r.gpus == 1]
    cheapest = min(t4, key=lambda r: (r.on_demand, r.name))
    return Catalog(full.gpus, (cheapest,), full.sources, full.discounts)


def spec_of(workloads: list[dict], **top: object) -> str:
    doc = {"version": 1, "name": "p", "targets": [TARGETS["aws"]], "workloads": workloads, **top}
    return yaml.safe_dump(doc, sort_keys=False)


@st.composite
def whole_t4_specs(draw: st.DrawFn) -> str:
    hours = draw(st.sampled_from([None, 50, 100, 365.5, 730]))  # one per spec (see below)
    workloads = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["training", "fine-tuning", "inference"]))
        w: dict[str, object] = {"name": f"w{i}", "kind": kind, "gpu": "T4", "gpus": 1,
                                "cpu": draw(st.sampled_from([0.5, 1, 2, 3])),
                                "memory": draw(st.sampled_from(["1Gi", "4Gi", "12Gi"]))}
        if kind == "inference":
            low = draw(st.integers(0, 4))
            w["replicas"] = {"min": low, "max": low + draw(st.integers(0, 4))} if draw(st.booleans()) else low + 1
        else:
            w["replicas"] = draw(st.integers(1, 4))
            w["checkpointing"] = draw(st.booleans())
        if hours is not None:
            w["hours_per_month"] = hours
        workloads.append(w)
    top: dict[str, object] = {}
    if draw(st.booleans()):
        top["pricing"] = {"commitment_discount": draw(st.sampled_from([0.2, 0.4]))}
    return spec_of(workloads, **top)


@PROPERTY
@given(whole_t4_specs())
def test_a_move_that_changes_nothing_saves_exactly_zero(source: str) -> None:
    # Every workload of a spec runs the same hours: a burst pool is billed at the longest hours of its
    # replicas, which is the sharing move's doing when the hours differ.
    spec = load_text(source, "spec.yaml")
    target = build_plan(spec, one_gpu_type_catalog()).targets[0]
    steps = {s.step: s.monthly_usd for s in target.cost.breakdown}
    counted = [p for p in target.pools if p.role != "fallback"]
    assert steps["sharing"] == 0.0, source
    if not any(p.capacity == "spot" for p in counted):
        assert steps["spot"] == 0.0, source
    if not any(p.capacity == "reserved" for p in counted) or not target.commitment_discount:
        assert steps["commitments"] == 0.0, source
    if all(p.hours_per_month == HOURS_PER_MONTH for p in counted):
        assert steps["schedules"] == 0.0, source
    assert round(sum(steps.values()), 2) == round(target.cost.baseline_monthly_usd - target.cost.planned_monthly_usd, 2)


GPU_MODELS = ("T4", "L4", "A10G")


@st.composite
def mixed_specs(draw: st.DrawFn) -> str:
    workloads = []
    for i in range(draw(st.integers(1, 4))):
        gpu = draw(st.sampled_from(GPU_MODELS))
        kind = draw(st.sampled_from(["training", "inference", "inference"]))
        w: dict[str, object] = {"name": f"w{i}", "kind": kind, "gpu": gpu,
                                "cpu": draw(st.sampled_from([1, 2, 4, 6, 12])),
                                "memory": draw(st.sampled_from(["4Gi", "16Gi", "40Gi"]))}
        if kind == "inference" and draw(st.booleans()):
            w["gpu_fraction"] = draw(st.sampled_from([0.25, 0.3, 0.5]))
        else:
            w["gpus"] = draw(st.sampled_from([1, 1, 2, 4]))
        if kind == "inference":
            low = draw(st.integers(0, 6))
            w["replicas"] = {"min": low, "max": low + draw(st.integers(0, 8))}
            w["capacity"] = draw(st.sampled_from([None, "on-demand"]))
            if w["capacity"] is None:
                del w["capacity"]
        else:
            w["replicas"] = draw(st.integers(1, 6))
            w["checkpointing"] = True
        workloads.append(w)
    return spec_of(workloads)


def pinned(source: str, gpu: str, instance: str) -> str:
    doc = yaml.safe_load(source)
    for workload in doc["workloads"]:
        if workload["gpu"] == gpu:
            workload["instance_types"] = {"aws": instance}
    return yaml.safe_dump(doc, sort_keys=False)


@PROPERTY
@given(mixed_specs())
def test_no_single_pinned_type_plans_for_less_than_the_planner(source: str) -> None:
    planned = build_plan(load_text(source, "spec.yaml")).targets[0].cost.planned_monthly_usd
    rows = load_catalog().in_region("aws", REGION)
    used = {w["gpu"] for w in yaml.safe_load(source)["workloads"]}
    compared = 0
    for gpu in sorted(used):
        for row in sorted((r for r in rows if r.gpu == gpu), key=lambda r: r.name):
            try:
                pin = build_plan(load_text(pinned(source, gpu, row.name), "spec.yaml")).targets[0]
            except SpecError:
                continue  # the pin does not validate (a replica does not fit, a capacity is refused)
            compared += 1
            assert planned <= pin.cost.planned_monthly_usd + 0.005, (gpu, row.name, source)
    assert compared, source
