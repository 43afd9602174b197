"""KEDA ScaledObjects: valid against KEDA's CRD, never next to a CronJob for the same workload, and scaling
as the plan says in a model of KEDA and its HPA (tests/kedasim.py), with the idle query judged by promtool."""

from __future__ import annotations

import copy
import datetime
import os
import shutil
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

from conftest import EXAMPLE, assert_golden
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.render.files import dump_yaml, file_name
from gpustack.render.keda import COOLDOWN_SECONDS, HPA_SCALE_DOWN_STABILIZATION_SECONDS
from gpustack.spec import load_text
from kedasim import KedaModel, cron_trigger, run
from test_render import validate

PROMETHEUS = "http://prometheus-operated.monitoring.svc:9090"
BERLIN = ZoneInfo("Europe/Berlin")
PROMTOOL = shutil.which("promtool")


def keda_example_text(autostop: str = "keda", idle: bool = False) -> str:
    """The example's aws target with KEDA: notebooks scale to zero when idle, moderation too (floors: true);
    with the CronJobs instead, only the window (or, with `idle`, the same idle actions by the built-in job)."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    [aws] = [t for t in doc["targets"] if t["name"] == "aws-prod"]
    settings = {**aws["settings"], "autostop": autostop, "prometheus_url": PROMETHEUS}
    for workload in doc["workloads"] if autostop == "keda" or idle else ():
        if workload["name"] == "notebooks":
            workload["idle"] = {"below": "10%", "for": "15m", "action": "scale-to-zero"}
        if workload["name"] == "moderation":
            workload["idle"] = {"below": "5%", "for": "30m", "action": "scale-to-zero", "floors": True}
    return yaml.safe_dump({**doc, "targets": [{**aws, "name": f"aws-{autostop}", "settings": settings}]},
                          sort_keys=False)


KEDA_PLAN = build_plan(load_text(keda_example_text(), "keda.yaml"))
KEDA_TARGET = KEDA_PLAN.targets[0]
OBJECTS = in_cluster(KEDA_PLAN, KEDA_TARGET).objects
SCALED = {o["spec"]["scaleTargetRef"]["name"]: o for o in OBJECTS if o["kind"] == "ScaledObject"}


def test_the_plan_says_who_scales_what():
    assert KEDA_TARGET.autostop == "keda" and KEDA_TARGET.prometheus_url == PROMETHEUS
    assert KEDA_TARGET.scaled_by_keda == ("moderation", "notebooks")
    target = KEDA_PLAN.to_dict()["targets"][0]
    assert target["scaled_by_keda"] == ["moderation", "notebooks"]
    assert {i["workload"]: (i["below_percent"], i["for_seconds"], i["action"]) for i in target["idle"]} == {
        "notebooks": (10.0, 900, "scale-to-zero"), "moderation": (5.0, 1800, "scale-to-zero")}
    assert any("scalingModifiers" in note and "largest metric" in note for note in KEDA_TARGET.notes)


def test_every_scaled_object_validates_against_the_keda_crd():
    assert set(SCALED) == {"notebooks", "moderation"}
    for obj in SCALED.values():
        validate(obj)
        spec = obj["spec"]  # the CRD's CEL rule, which jsonschema does not run
        assert spec["minReplicaCount"] <= spec.get("maxReplicaCount", 100)
    broken = copy.deepcopy(SCALED["notebooks"])
    broken["spec"]["triggers"][0]["metadata"]["desiredReplicas"] = 12  # metadata values are strings
    with pytest.raises(Exception, match="12"):
        validate(broken)


def test_no_cronjob_scales_a_workload_keda_scales():
    selected = " ".join(" ".join(o["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"])
                        for o in OBJECTS if o["kind"] == "CronJob")
    for workload in SCALED:
        assert workload not in selected
    # The same spec without KEDA: CronJobs for the notebooks' window, no ScaledObject.
    plan = build_plan(load_text(keda_example_text("cronjob"), "cronjob.yaml"))
    objects = in_cluster(plan, plan.targets[0]).objects
    assert not [o for o in objects if o["kind"] == "ScaledObject"]
    assert any("notebooks" in " ".join(o["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
                                       ["command"]) for o in objects if o["kind"] == "CronJob")


@pytest.mark.golden
def test_scaled_objects_match_golden():
    for obj in SCALED.values():
        assert_golden(f"keda/{file_name(obj)}", dump_yaml(obj))


# -- KEDA's behaviour ------------------------------------------------------------------------------
def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    """Berlin time in the week of Monday 2026-11-30 (day 0 = Monday)."""
    date = datetime.date(2026, 11, 30) + datetime.timedelta(days=day)
    return datetime.datetime(date.year, date.month, date.day, hour, minute, tzinfo=BERLIN)


class Workload:
    """What the busy query answers (its meaning, which promtool checks below): the replica count, unless
    the GPUs stayed below the threshold over the idle period and the newest pod is older than that."""

    def __init__(self, model: KedaModel, utilisation, below: float, period: datetime.timedelta):
        self.model, self.utilisation, self.below, self.period = model, utilisation, below, period
        self.created: datetime.datetime | None = None
        self.samples: list[tuple[datetime.datetime, float]] = []

    def query(self, now: datetime.datetime) -> float:
        if self.model.replicas == 0:
            self.created = None
            return 0.0
        if self.created is None:
            self.created = now
        self.samples.append((now, self.utilisation(now)))
        recent = [u for t, u in self.samples if now - t <= self.period and t >= self.created]
        idle = max(recent) < self.below and now - self.created >= self.period
        return 0.0 if idle else float(self.model.replicas)


def simulate(workload: str, utilisation, start, end, replicas: int = 0):
    scaled = SCALED[workload]
    model = KedaModel(scaled, {}, replicas=replicas)
    busy = Workload(model, utilisation, below=10 if workload == "notebooks" else 5,
                    period=datetime.timedelta(minutes=15 if workload == "notebooks" else 30))
    model.queries["busy"] = busy.query
    return dict(run(model, start, end)), model, busy


def replicas_at(history, when: datetime.datetime) -> int:
    return history[max(t for t in history if t <= when)]


def test_inside_the_window_busy_gets_the_plans_replicas_and_outside_none():
    history, _, _ = simulate("notebooks", lambda t: 60.0, at(1, 6), at(1, 20))
    assert replicas_at(history, at(1, 7, 59)) == 0
    assert all(replicas_at(history, at(1, h)) == 12 for h in range(9, 18))
    assert replicas_at(history, at(1, 18, 5)) == 0 and replicas_at(history, at(1, 19)) == 0


def test_idle_twenty_minutes_inside_the_window_goes_to_zero_until_the_next_window():
    busy_until = at(1, 10)
    history, _, _ = simulate("notebooks", lambda t: 60.0 if t < busy_until else 3.0, at(1, 6), at(2, 9))
    assert replicas_at(history, at(1, 9, 59)) == 12
    assert replicas_at(history, at(1, 10, 10)) == 12  # not yet idle for 15 minutes
    assert replicas_at(history, at(1, 10, 20)) == 0  # idle for 20 minutes: zero
    assert all(replicas_at(history, at(1, h)) == 0 for h in range(11, 24))
    assert replicas_at(history, at(2, 8, 5)) == 12  # the next window opens with the plan's count


def test_nobody_at_the_window_opening_stops_after_the_grace_period():
    history, _, _ = simulate("notebooks", lambda t: 0.0, at(1, 7), at(1, 12))
    assert replicas_at(history, at(1, 8, 5)) == 12
    assert replicas_at(history, at(1, 8, 20)) == 0 and replicas_at(history, at(1, 11)) == 0


def test_a_weekend_stays_at_zero():
    history, _, _ = simulate("notebooks", lambda t: 60.0, at(5, 0), at(6, 23))
    assert set(history.values()) == {0}


def test_without_the_formula_kedas_or_of_triggers_would_keep_an_idle_workload_up_all_window():
    """Why the formula: cron and prometheus triggers side by side hold the window's count, idle or not."""
    naive = copy.deepcopy(SCALED["notebooks"])
    del naive["spec"]["advanced"]["scalingModifiers"]
    naive["spec"]["triggers"] = [t for t in naive["spec"]["triggers"] if t["name"] != "opening"]
    model = KedaModel(naive, {})
    busy = Workload(model, lambda t: 3.0, below=10, period=datetime.timedelta(minutes=15))
    model.queries["busy"] = busy.query
    history = dict(run(model, at(1, 7), at(1, 14)))
    assert replicas_at(history, at(1, 13)) == 12


def test_without_a_window_idle_goes_to_zero_and_a_person_scaling_up_gets_the_idle_period():
    busy_until = at(1, 10)
    history, model, _ = simulate("moderation", lambda t: 40.0 if t < busy_until else 1.0, at(1, 9), at(1, 11),
                                    replicas=3)
    assert replicas_at(history, at(1, 9, 59)) == 3  # the HPA holds what runs
    assert replicas_at(history, at(1, 10, 25)) == 3 and replicas_at(history, at(1, 10, 35)) == 0
    model.replicas = 2  # a person scales it up again
    later = dict(run(model, at(1, 12), at(1, 13)))
    assert replicas_at(later, at(1, 12, 25)) == 2 and replicas_at(later, at(1, 12, 35)) == 0


def test_the_cron_model_follows_kedas_next_end_before_next_start_rule():
    meta = SCALED["notebooks"]["spec"]["triggers"][0]["metadata"]
    assert cron_trigger(meta, at(1, 12)) == (12.0, True)
    assert cron_trigger(meta, at(1, 7, 59)) == (0.0, False)
    assert cron_trigger(meta, at(5, 12)) == (0.0, False)  # Saturday
    assert COOLDOWN_SECONDS + 30 < HPA_SCALE_DOWN_STABILIZATION_SECONDS  # KEDA reaches zero before the HPA one


# -- the idle query, judged by Prometheus ----------------------------------------------------------
def _query(workload: str) -> str:
    [busy] = [t for t in SCALED[workload]["spec"]["triggers"] if t["name"] == "busy"]
    return str(busy["metadata"]["query"])


def _series(workload: str, ns: str, util: str | None, created: str = "0+0x120", replicas: str | None = "12+0x120",
            metric: str = 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""') -> list[dict]:
    pod = f'namespace="{ns}",pod="{workload}-0",uid="u0"'
    series = [{"series": f'kube_pod_labels{{{pod},label_gpustack_dev_workload="{workload}"}}', "values": "1+0x120"},
              {"series": f"kube_pod_created{{{pod}}}", "values": created}]
    if util is not None:
        series.append({"series": f'{metric},namespace="{ns}",pod="{workload}-0",gpu="0"}}', "values": util})
    if replicas is not None:
        kind = "statefulset" if workload == "notebooks" else "deployment"
        name = "kube_statefulset_replicas" if kind == "statefulset" else "kube_deployment_spec_replicas"
        series.append({"series": f'{name}{{namespace="{ns}",{kind}="{workload}"}}', "values": replicas})
    return series


def promtool_expr(tmp_path: Path, tests: list[dict]) -> subprocess.CompletedProcess:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": []}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(
        {"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
         "tests": [{"interval": "1m", **test} for test in tests]}))
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "tests.yaml")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def _expect(query: str, eval_time: str, value: float | None) -> dict:
    return {"expr": query, "eval_time": eval_time,
            "exp_samples": [] if value is None else [{"labels": "{}", "value": value}]}


@pytest.mark.skipif(PROMTOOL is None and not os.environ.get("CI"), reason="promtool not installed")
def test_the_busy_query_means_what_the_model_says(tmp_path):
    query = _query("notebooks")
    tests = [
        # busy until minute 30, then 3%: busy at 40 (50% within the last 15m), idle at 50
        {"input_series": _series("notebooks", "research", "50+0x29 3+0x90"),
         "promql_expr_test": [_expect(query, "40m", 12), _expect(query, "50m", None)]},
        # a pod created at minute 50 gets 15 minutes, idle or not
        {"input_series": _series("notebooks", "research", "3+0x120", created="0+0x49 3000+0x70"),
         "promql_expr_test": [_expect(query, "55m", 12), _expect(query, "70m", None)]},
        # no DCGM series: unknown, not idle; no kube-state-metrics count: the plan's, and idle still stops
        {"input_series": _series("notebooks", "research", None),
         "promql_expr_test": [_expect(query, "60m", 12)]},
        {"input_series": _series("notebooks", "research", "3+0x120", replicas=None),
         "promql_expr_test": [_expect(query, "60m", None)]},
        {"input_series": _series("notebooks", "research", "80+0x120", replicas=None),
         "promql_expr_test": [_expect(query, "60m", 12)]},
        # another workload's busy GPU does not keep this one up
        {"input_series": _series("notebooks", "research", "3+0x120")
         + [{"series": 'DCGM_FI_DEV_GPU_UTIL{namespace="research",pod="other-0",gpu="1"}', "values": "90+0x120"}],
         "promql_expr_test": [_expect(query, "60m", None)]},
    ]
    ran = promtool_expr(tmp_path, tests)
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.skipif(PROMTOOL is None and not os.environ.get("CI"), reason="promtool not installed")
def test_the_busy_query_reads_mig_instances_by_engine_activity(tmp_path):
    query = _query("moderation")
    mig = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID="3"'
    tests = [{"input_series": _series("moderation", "serving", "0.02+0x120", replicas="4+0x120", metric=mig),
              "promql_expr_test": [_expect(query, "60m", None)]},
             {"input_series": _series("moderation", "serving", "0.5+0x120", replicas="4+0x120", metric=mig),
              "promql_expr_test": [_expect(query, "60m", 4)]}]
    ran = promtool_expr(tmp_path, tests)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # the test can fail: 50% engine activity is not idle
    tests[1]["promql_expr_test"] = [_expect(query, "60m", None)]
    assert promtool_expr(tmp_path, tests).returncode != 0
