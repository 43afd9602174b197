"""The rendered PrometheusRules judged by Prometheus itself: `promtool test rules` on synthetic series.

promtool ships in Debian's `prometheus` package (the Makefile's test set-up installs it). Without it
these tests skip locally and fail in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from conftest import EXAMPLE
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.render.alerts import POOL_SERIES_LABEL, rule_labels
from gpustack.spec import load_spec

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
PROMTOOL = shutil.which("promtool")
if PROMTOOL is None and os.environ.get("CI"):
    raise RuntimeError("promtool is missing in CI: the Makefile's test set-up installs Debian's prometheus package")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`)")


def rule_groups(target_name: str) -> dict:
    [rule] = [o for o in in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target(target_name)).objects
              if o["kind"] == "PrometheusRule"]
    return {"groups": rule["spec"]["groups"]}


def promtool(tmp_path, target_name: str, tests: list[dict], interval: str = "1m",
             rules: dict | None = None) -> subprocess.CompletedProcess:
    """`rules`: the rule groups to test (default: the example target's)."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules or rule_groups(target_name)))
    tests = [{"interval": "1m", **test} for test in tests]  # the series' step (promtool's default is not 1m)
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(
        {"rule_files": ["rules.yaml"], "evaluation_interval": interval, "tests": tests}))
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "tests.yaml")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def node_series(pool: str, node: str = "node-1", values: str = "1+0x60") -> dict:
    return {"series": f'kube_node_labels{{node="{node}",{POOL_SERIES_LABEL}="{pool}"}}', "values": values}


def util_series(node: str, value: int, minutes: int = 60) -> dict:
    return {"series": f'DCGM_FI_DEV_GPU_UTIL{{node="{node}",gpu="0",GPU_I_ID=""}}', "values": f"{value}+0x{minutes}"}


def _pool(target_name: str, name_start: str):
    return next(p for p in EXAMPLE_PLAN.target(target_name).pools if p.name.startswith(name_start))


def idle_alert(pool, node: str, description: str) -> dict:
    labels = {**rule_labels(pool), "node": node, "gpu": "0", "GPU_I_ID": ""}
    labels = {k: v for k, v in labels.items() if v != ""}
    return {"exp_labels": labels, "exp_annotations": {"summary": f"Idle GPU in pool {pool.name}",
                                                       "description": description}}


def _owner(pool) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(pool.attribution.items()))


@pytest.mark.parametrize("target", [t.name for t in EXAMPLE_PLAN.targets])
def test_rules_pass_promtool_check(tmp_path, target):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups(target)))
    assert PROMTOOL is not None
    checked = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_five_percent_for_twenty_minutes_fires_fifty_does_not(tmp_path):
    pool = _pool("aws-prod", "train-h100")
    description = (f"GPU 0 on node node-1 of pool {pool.name} ({pool.instance_type}) has been below 10% "
                   f"utilisation for 15m ({_owner(pool)}).")
    tests = [{"input_series": [node_series(pool.name), util_series("node-1", 5)],
              "alert_rule_test": [{"eval_time": "10m", "alertname": "GpuIdle", "exp_alerts": []},
                                  {"eval_time": "20m", "alertname": "GpuIdle",
                                   "exp_alerts": [idle_alert(pool, "node-1", description)]},
                                  {"eval_time": "20m", "alertname": "GpuMetricsMissing", "exp_alerts": []}]},
             {"input_series": [node_series(pool.name), util_series("node-1", 50)],
              "alert_rule_test": [{"eval_time": "40m", "alertname": "GpuIdle", "exp_alerts": []}]}]
    ran = promtool(tmp_path, "aws-prod", tests)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert pool.attribution["model"] == "llama-70b"  # the pool's attribution reached the alert's labels


def test_the_idle_alert_would_fail_promtool_with_another_pool_label(tmp_path):
    """The test above can fail: the same series expected under another pool's label does not pass."""
    pool = _pool("aws-prod", "train-h100")
    other = _pool("aws-prod", "train-a100")
    alert = idle_alert(pool, "node-1", "x")
    alert["exp_labels"]["gpustack_pool"] = other.name
    tests = [{"input_series": [node_series(pool.name), util_series("node-1", 5)],
              "alert_rule_test": [{"eval_time": "20m", "alertname": "GpuIdle", "exp_alerts": [alert]}]}]
    assert promtool(tmp_path, "aws-prod", tests).returncode != 0


def test_a_pool_without_dcgm_series_raises_the_no_data_alert(tmp_path):
    pool = _pool("aws-prod", "train-h100")
    labels = {**rule_labels(pool), "node": "node-1", POOL_SERIES_LABEL: pool.name}
    description = (f"Node node-1 of pool {pool.name} has reported no DCGM series for 15m: idle GPUs there "
                   f"raise no alert ({_owner(pool)}).")
    tests = [{"input_series": [node_series(pool.name)],
              "alert_rule_test": [{"eval_time": "20m", "alertname": "GpuMetricsMissing",
                                   "exp_alerts": [{"exp_labels": labels, "exp_annotations": {
                                       "summary": f"No GPU metrics from pool {pool.name}",
                                       "description": description}}]},
                                  {"eval_time": "20m", "alertname": "GpuIdle", "exp_alerts": []}]}]
    ran = promtool(tmp_path, "aws-prod", tests)
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_a_scheduled_pool_alive_outside_its_window_alerts_and_inside_does_not(tmp_path):
    # The example's notebook pool: Mon-Fri 08:00-18:00 Europe/Berlin. promtool's clock starts at
    # 1970-01-01 00:00 UTC, a Thursday: 01:00 Berlin is outside, 10:00-16:00 Berlin inside.
    pool = _pool("aws-prod", "notebook-")
    assert pool.schedule is not None and pool.schedule.hours == "08:00-18:00"
    labels = rule_labels(pool)
    description = (f"1 node(s) of pool {pool.name} are running outside its window (Mon-Fri 08:00-18:00 "
                   f"Europe/Berlin) for 30m: check the gpustack-stop CronJobs and what still runs there "
                   f"({_owner(pool)}).")
    fired = {"exp_labels": labels, "exp_annotations": {
        "summary": f"Scheduled pool {pool.name} runs outside its window", "description": description}}
    series = [node_series(pool.name, values="1+0x960"), util_series("node-1", 70, 960)]
    tests = [{"input_series": series,
              "alert_rule_test": [{"eval_time": "20m", "alertname": "GpuPoolOutsideWindow", "exp_alerts": []},
                                  {"eval_time": "40m", "alertname": "GpuPoolOutsideWindow", "exp_alerts": [fired]},
                                  {"eval_time": "10h", "alertname": "GpuPoolOutsideWindow", "exp_alerts": []},
                                  {"eval_time": "15h", "alertname": "GpuPoolOutsideWindow", "exp_alerts": []}]},
             {"input_series": [util_series("node-1", 70, 120)],  # no node of the pool: nothing to say
              "alert_rule_test": [{"eval_time": "90m", "alertname": "GpuPoolOutsideWindow", "exp_alerts": []}]}]
    ran = promtool(tmp_path, "aws-prod", tests)
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_only_scheduled_pools_get_the_window_alert():
    for target in EXAMPLE_PLAN.targets:
        rules = rule_groups(target.name)["groups"][0]["rules"]
        windowed = {r["labels"]["gpustack_pool"] for r in rules if r["alert"] == "GpuPoolOutsideWindow"}
        assert windowed == {p.name for p in target.pools if p.schedule is not None}
        assert {r["labels"]["gpustack_pool"] for r in rules if r["alert"] == "GpuMetricsMissing"} == \
            {p.name for p in target.pools}
