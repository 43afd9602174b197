"""The spec's `idle` and the in-cluster settings: strict, located, with the fix."""

from __future__ import annotations

import copy

import pytest
import yaml

from conftest import TARGETS, spec_text
from gpustack.errors import SpecError
from gpustack.spec import load_text
from gpustack.spec.model import Idle

NOTEBOOK = {"name": "nb", "kind": "notebook", "gpu": "L4", "gpu_fraction": 0.5, "replicas": 3}
PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"


def load(workloads: list[dict], **settings: object):
    doc = yaml.safe_load(spec_text(workloads))
    target = copy.deepcopy(TARGETS["aws"])
    target["settings"].update(settings)
    doc["targets"] = [target]
    return load_text(yaml.safe_dump(doc, sort_keys=False), "spec.yaml")


def problems(workloads: list[dict], **settings: object) -> str:
    with pytest.raises(SpecError) as caught:
        load(workloads, **settings)
    return str(caught.value)


def test_idle_is_opt_in_and_read_strictly():
    assert load([NOTEBOOK]).workloads[0].idle is None
    spec = load([dict(NOTEBOOK, idle={"below": "10%", "for": "15m"})])
    assert spec.workloads[0].idle == Idle(10.0, 900, "alert")
    spec = load([dict(NOTEBOOK, idle={"below": "7.5%", "for": "2h", "action": "scale-to-zero"})],
                prometheus_url=PROMETHEUS, autostop="keda")
    assert spec.workloads[0].idle == Idle(7.5, 7200, "scale-to-zero")


@pytest.mark.parametrize("idle, expected", [
    ({"below": "10%", "for": "15m", "acton": "alert"}, "spec.yaml:21:5: workloads[0].idle.acton: unknown key 'acton' "
                                                      "(did you mean 'action'?)"),
    ({"below": 10, "for": "15m"}, "workloads[0].idle.below: write the share with a percent sign, e.g. below: 10%"),
    ({"below": "80%", "for": "15m"}, "80% is out of range: idle means below 1% to 50% utilisation"),
    ({"below": "10%", "for": "2m"}, "workloads[0].idle.for: 2m is out of range: from 5m to 24h"),
    ({"below": "10%", "for": "15 minutes"}, "'15 minutes' is not a duration such as 15m or 2h"),
    ({"below": "10%", "for": "15m", "action": "scale-to-zer"}, "did you mean 'scale-to-zero'?"),
    ({"below": "10%"}, "workloads[0].idle: missing required key 'for'"),
    ({"below": "10%", "for": "15m", "floors": True}, "floors: true only matters with action: scale-to-zero"),
])
def test_a_bad_idle_is_located_with_what_is_allowed(idle, expected):
    assert expected in problems([dict(NOTEBOOK, idle=idle)])


def test_an_inference_floor_is_never_scaled_away_unless_asked():
    floor = {"name": "svc", "kind": "inference", "gpu": "L4", "replicas": {"min": 2, "max": 4},
             "idle": {"below": "10%", "for": "15m", "action": "scale-to-zero"}}
    message = problems([floor], prometheus_url=PROMETHEUS, autostop="keda")
    assert "workloads[0].idle.action: this inference workload keeps a floor of 2 replicas" in message
    assert "add floors: true" in message
    asked = copy.deepcopy(floor)
    asked["idle"]["floors"] = True
    assert load([asked], prometheus_url=PROMETHEUS, autostop="keda").workloads[0].idle == Idle(10.0, 900, "scale-to-zero", True)
    no_floor = dict(floor, replicas={"min": 0, "max": 4})
    assert load([no_floor], prometheus_url=PROMETHEUS, autostop="keda").workloads[0].idle is not None


def test_jobs_are_not_scaled_to_zero():
    job = {"name": "t", "kind": "training", "gpu": "L4", "idle": {"below": "10%", "for": "15m",
                                                                 "action": "scale-to-zero"}}
    assert "scale-to-zero applies to inference and notebook workloads" in problems([job], prometheus_url=PROMETHEUS)


def test_an_idle_action_needs_prometheus_and_the_url_is_checked():
    acting = dict(NOTEBOOK, idle={"below": "10%", "for": "15m", "action": "scale-to-zero"})
    assert "targets[0]: workloads nb scale to zero when idle" in problems([acting], autostop="keda")
    assert "targets[0]: workloads nb scale to zero when idle" in problems([acting])  # the built-in job too
    for bad in ("http://Prometheus:9090", "http://prom:9090/?q=1", "http://prom;rm -rf /", "ftp://prom",
                "http://prom:99999", "http://prom:9090\n"):
        assert "settings.prometheus_url" in problems([acting], prometheus_url=bad, autostop="keda"), bad
    assert "settings.autostop" in problems([NOTEBOOK], autostop="kedaa")
