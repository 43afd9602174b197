"""Under Karpenter a NodePool or node-class change replaces no cloud resource: the nodes drift and are
replaced one by one within the budgets. `gpustack diff`, its Markdown, `gpustack check --baseline` and the
policy pack say so, and keep "replaced" for what still replaces a pool (a new NodePool)."""

from __future__ import annotations

import copy

import yaml

from conftest import TARGETS, spec_text
from gpustack.clouds import CLOUDS
from gpustack.clouds.provisioner import DRIFTS_NODES, REPLACES_POOL
from gpustack.diff import diff_plans
from gpustack.diff.model import PlanDiff
from gpustack.diff.report import render_diff_markdown
from gpustack.guardrails.from_plan import plan_views
from gpustack.guardrails.rules import node_pool_replacement
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.spec import load_text

TRAIN = {"name": "train", "kind": "training", "gpu": "H100", "checkpointing": True}
SERVE = {"name": "serve", "kind": "inference", "gpu": "A100-80GB", "mig": "1g.10gb", "replicas": {"min": 2, "max": 20}}
KARPENTER = {**TARGETS["aws"], "settings": {**TARGETS["aws"]["settings"], "provisioner": "karpenter"}}


def plan(workloads: list[dict], target: dict = KARPENTER):  # type: ignore[no-untyped-def]
    doc = yaml.safe_load(spec_text(workloads))
    doc["targets"] = [target]
    return build_plan(load_text(yaml.safe_dump(doc), "spec.yaml"))


def diff(old, new):  # type: ignore[no-untyped-def]
    return diff_plans(old, new, "old.yaml", "new.yaml")


def test_the_provisioners_say_what_a_change_does_to_the_nodes():
    aws = CLOUDS.get("aws")
    karpenter, managed = aws.provisioner("karpenter"), aws.provisioner("managed")
    drift = karpenter.node_change("labels")
    assert drift is not None and drift.kind == DRIFTS_NODES and "Drift" in drift.why and "disruption.md" in drift.why
    subnets = karpenter.node_change("settings.subnet_ids")
    assert subnets is not None and subnets.kind == DRIFTS_NODES and "subnetSelectorTerms" in subnets.why
    # The same subnet change recreates a managed node group.
    replaced = managed.node_change("settings.subnet_ids")
    assert replaced is not None and replaced.kind == REPLACES_POOL
    assert managed.node_change("labels") is None and not karpenter.replacing_changes


def test_a_label_change_drifts_the_nodepool_instead_of_replacing_it():
    old = plan([TRAIN])
    new = plan([{**TRAIN, "labels": {"team": "research"}}])
    [target] = diff(old, new).targets
    [pool] = target.pools
    assert pool.change == "drifted" and pool.new_name is None
    assert "one by one" in pool.why and "disruption budgets" in pool.why
    [labels] = pool.fields
    assert labels.field == "labels" and labels.replaces is None and "its nodes drift" in (labels.drifts or "")
    doc = diff(old, new).to_json()
    assert '"drifts": "the NodePool\'s template labels change' in doc and '"replaces"' not in doc
    report = render_diff_markdown(PlanDiff("old.yaml", "new.yaml", (target,)))
    assert "Drifted: same node pool, its nodes replaced one by one" in report
    assert "1 node pool will drift" in report and "1 node pool drift (nodes replaced one by one)" in report
    assert "pools drifting" in report
    # The generic replacement wording is gone for it.
    assert "will be replaced" not in report and "creates the node pool anew" not in report
    assert "node pools replaced" not in report and "node pool replaced" not in report


def test_new_subnets_drift_under_karpenter_and_replace_a_managed_node_group():
    wider = copy.deepcopy(KARPENTER)
    wider["settings"]["subnet_ids"] = ["subnet-0a1b", "subnet-0c2d"]
    [pool] = diff(plan([TRAIN]), plan([TRAIN], wider)).targets[0].pools
    assert pool.change == "drifted"
    managed = copy.deepcopy(wider)
    del managed["settings"]["provisioner"]
    [pool] = diff(plan([TRAIN], TARGETS["aws"]), plan([TRAIN], managed)).targets[0].pools
    assert pool.change == "replaced"


def test_a_new_nodepool_is_still_a_replacement():
    # No checkpointing any more: spot becomes on-demand, a new pool (and NodePool) takes over.
    [pool] = diff(plan([TRAIN]), plan([{**TRAIN, "checkpointing": False}])).targets[0].pools
    assert pool.change == "replaced" and pool.new_name != pool.name


def test_check_against_a_baseline_words_a_drift_as_one():
    old = plan([SERVE])
    new = plan([{**SERVE, "labels": {"team": "serving"}}])
    views = plan_views(new, old)[KARPENTER["name"]]
    assert all(v.replacements == () for v in views) and all(v.drifts for v in views)
    messages = [f.message for f in node_pool_replacement(views, {})]
    assert messages and all(m.startswith("this change drifts the pool's nodes, each replaced in turn") for m in messages)
    assert not any("replaces a node pool" in m for m in messages)


def test_the_pack_says_nodepools_drift_where_node_groups_are_recreated():
    from gpustack.guardrails.resources import pool_view

    planned = plan([TRAIN])
    [target] = planned.targets
    objects = [o for o in in_cluster(planned, target).node_objects if o["kind"] == "NodePool"]
    views = [v for o in objects if (v := pool_view("kubernetes:karpenter.sh/v1:NodePool", o,
                                                   f"urn:pulumi:s::p::t::{o['metadata']['name']}",
                                                   o["metadata"]["name"])) is not None]
    assert views
    [finding] = node_pool_replacement(views, {})
    assert "have every node replaced in turn (drift" in finding.message and "recreated" not in finding.message
    assert "spec.template.metadata.labels" in finding.message and "subnetSelectorTerms" in finding.message
