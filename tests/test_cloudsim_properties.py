"""The simulator's checks over random specs (hypothesis), on every cloud: whatever the workloads, the
program shows each cloud's autoscaler what a node of each pool offers, pods fit their pools and no pool of
another kind, one scale-up starts the planned nodes, no node is an unready GPU node, reserved floors
upgrade inside their reservations, and EKS and AKS scaling updates stay valid whatever the live size was
(a floor raised above it or a maximum lowered below it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cloudsim import upgrades
from cloudsim.checks import (
    misfits,
    scale_up_errors,
    simulated,
    template_mismatches,
    unready,
    upgrade_failures,
    view,
)
from conftest import EVERY_CLOUD, spec_text
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpustack import testing
from gpustack.clouds.aws import mocks as eks_mocks
from gpustack.clouds.azure import mocks as aks_mocks
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_text

SCHEDULE = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}


@st.composite
def workload(draw: st.DrawFn, index: int) -> dict:
    kind = draw(st.sampled_from(["training", "fine-tuning", "inference", "notebook"]))
    out: dict = {"name": f"w{index}", "kind": kind}
    if kind in ("training", "fine-tuning"):
        out.update(gpu=draw(st.sampled_from(["A100-80GB", "H100"])), gpus=draw(st.sampled_from([1, 2, 8])),
                   cpu=draw(st.sampled_from([4, 8])), memory="32Gi", checkpointing=draw(st.booleans()),
                   replicas=draw(st.integers(1, 3)))
    elif kind == "inference":
        out.update(gpu=draw(st.sampled_from(["A100-80GB", "L4", "T4"])), cpu=2, memory="16Gi")
        share = draw(st.sampled_from(["mig", "fraction", "memory"]))
        if share == "mig" and out["gpu"] == "A100-80GB":
            out["mig"] = draw(st.sampled_from(["1g.10gb", "2g.20gb", "3g.40gb"]))
        elif share == "memory":
            out["gpu_memory"] = draw(st.sampled_from(["5Gi", "10Gi", "20Gi"]))
        else:
            out["gpu_fraction"] = draw(st.sampled_from([0.1, 0.25, 0.5]))
        low = draw(st.integers(0, 4))
        out["replicas"] = {"min": low, "max": low + draw(st.integers(1, 6))}
    else:
        out.update(gpu=draw(st.sampled_from(["T4", "A10", "L4"])), gpu_fraction=draw(st.sampled_from([0.25, 0.5])),
                   cpu=1, memory="4Gi", replicas=draw(st.integers(1, 10)), schedule=SCHEDULE)
    return out


@st.composite
def specs(draw: st.DrawFn) -> list[dict]:
    return [draw(workload(i)) for i in range(draw(st.integers(1, 4)))]


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
@given(workloads=specs(), data=st.data())
def test_random_specs_behave_as_planned_on_every_cloud(cloud, workloads, data, tmp_path_factory, monkeypatch):
    text = spec_text(workloads, (cloud,))
    try:
        plan = build_plan(load_text(text, "spec.yaml"))
    except SpecError:
        assume(False)  # a GPU or share this cloud cannot give: reported to the user, nothing to deploy
    [target] = plan.targets
    assume(target.pools)
    # What was live before this `pulumi up`: any desired size, including above the new maximum or below
    # the new floor (the bounds moved since).
    live = {p.cloud_name: data.draw(st.integers(0, p.max_nodes + 3), label=p.cloud_name)
            for p in target.pools} if cloud in upgrades.SCALING_UPDATES else {}
    monkeypatch.setattr(eks_mocks, "LIVE_NODE_GROUPS", {n: {"desiredSize": s} for n, s in live.items()})
    monkeypatch.setattr(aks_mocks, "LIVE_AGENT_POOLS", dict(live))
    path = Path(tmp_path_factory.mktemp("spec")) / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    resources = testing.run_program(str(path), target.name)
    sims = simulated(plan, target, resources)
    seen = view(target)
    assert template_mismatches(seen, sims) == []
    assert misfits(seen, sims) == []
    assert scale_up_errors(seen, sims) == []
    assert unready(seen, sims) == []
    assert upgrade_failures(seen, sims, resources) == []
    for name, sim in sims.items():
        assert 0 <= sim.min_nodes <= sim.max_nodes and sim.max_nodes >= 1, name
        if cloud in upgrades.SCALING_UPDATES:
            sent, refusal = upgrades.SCALING_UPDATES[cloud](sim.resource, sim.resource["ignore_changes"],
                                                            live[sim.name])
            assert refusal is None, (name, sent)
    assert set(sims) == {p.name for p in target.pools}
    assert {w for w, _ in seen.pods.items()} == {pl.workload for p in target.pools for pl in p.placements
                                                 if pl.replicas}
