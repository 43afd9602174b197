"""Idle-GPU alerts: one rule per pool, naming the pool and its cost owner, joined to the node's pool."""

from __future__ import annotations

import re

import pytest

from conftest import EXAMPLE, spec_text
from gpustack.clouds import CLOUDS
from gpustack.plan import build_plan
from gpustack.render import alerts, in_cluster, operator
from gpustack.spec import load_spec, load_text

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
PROM_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def rules_of(plan, target, alert="GpuIdle") -> list[dict]:
    [rule] = [o for o in in_cluster(plan, target).objects if o["kind"] == "PrometheusRule"]
    [group] = rule["spec"]["groups"]
    return [r for r in group["rules"] if r["alert"] == alert]


@pytest.mark.parametrize("target", [t.name for t in EXAMPLE_PLAN.targets])
def test_one_rule_per_pool_naming_pool_and_owner(target):
    plan_target = EXAMPLE_PLAN.target(target)
    rules = rules_of(EXAMPLE_PLAN, plan_target)
    assert [r["labels"]["gpustack_pool"] for r in rules] == sorted(p.name for p in plan_target.pools)
    pools = {p.name: p for p in plan_target.pools}
    for rule in rules:
        pool = pools[rule["labels"]["gpustack_pool"]]
        assert rule["alert"] == "GpuIdle" and rule["for"] == "15m"
        assert f'kube_node_labels{{label_gpustack_dev_pool="{pool.name}"}}' in rule["expr"]
        assert "and on (node)" in rule["expr"] and "DCGM_FI_DEV_GPU_UTIL" in rule["expr"]
        assert re.search(r"< 10\b", rule["expr"])
        # The cost owner: the spec's attribution labels, as Prometheus label names.
        assert rule["labels"]["team"] == "ml-platform" and rule["labels"]["cost_center"] == "4711"
        assert all(PROM_LABEL.match(k) for k in rule["labels"])
        assert "team=ml-platform" in rule["annotations"]["description"]


def test_workload_labels_shared_by_a_pool_reach_its_alert():
    target = EXAMPLE_PLAN.target("aws-prod")
    [rule] = [r for r in rules_of(EXAMPLE_PLAN, target) if r["labels"]["gpustack_pool"].startswith("train-h100")]
    assert rule["labels"]["model"] == "llama-70b" and rule["labels"]["experiment_id"] == "exp-42"


def test_mig_pools_use_the_profiling_metric_for_mig_instances():
    target = EXAMPLE_PLAN.target("aws-prod")
    for rule in rules_of(EXAMPLE_PLAN, target):
        mig = rule["labels"]["gpustack_pool"].startswith("infer-")
        assert ('DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""} * 100 < 10' in rule["expr"]) == mig
        assert ('DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""} < 10' in rule["expr"]) == mig


def test_expressions_have_balanced_brackets_and_quotes():
    for target in EXAMPLE_PLAN.targets:
        for rule in rules_of(EXAMPLE_PLAN, target):
            expr = rule["expr"]
            assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}")
            assert expr.count('"') % 2 == 0


@pytest.mark.parametrize("target", [t.name for t in EXAMPLE_PLAN.targets])
def test_the_join_label_is_what_the_operator_servicemonitor_adds(target):
    # The rule joins on `node`; where gpustack installs the operator, its ServiceMonitor relabels it in.
    plan_target = EXAMPLE_PLAN.target(target)
    release = operator.release(plan_target, CLOUDS.get(plan_target.cloud))
    if release is None:
        return  # GKE: the documented standalone exporter must add the same relabeling
    monitor = release.values["dcgmExporter"]["serviceMonitor"]
    assert monitor["enabled"] is True
    assert {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node",
            "action": "replace"} in monitor["relabelings"]


def test_label_name_sanitising_matches_kube_state_metrics():
    assert alerts.POOL_SERIES_LABEL == "label_gpustack_dev_pool"
    plan = build_plan(load_text(spec_text(
        [{"name": "t", "kind": "training", "gpu": "T4", "checkpointing": True}],
        labels={"example.com/owner": "ana", "9lives": "x"}), "spec.yaml"))
    [rule] = rules_of(plan, plan.targets[0])
    assert rule["labels"]["example_com_owner"] == "ana" and rule["labels"]["_9lives"] == "x"
