"""A cluster that already has a priority-expander ConfigMap: gpustack's spot-first entries merged into it
(`gpustack render --merge-priorities`, `gpustack:priorityExpander: merge`), judged by the expander's own rule."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLE
from gpustack.cli import main
from gpustack.clouds import CLOUDS
from gpustack.render.autoscaling import PRIORITY_CONFIGMAP, priority_configmap
from gpustack.render.priority_merge import OWNED_KEY, PriorityMergeError, merge_priorities, parse_priorities
from gpustack.testing import RecordingMocks, run_program
from test_fallback import TUNE_GPU, expander_choice, plan_for, priorities, tune
from test_in_cluster_pulumi import KUBECONFIG, plain
from test_render import validate

# The cluster's own table: its CPU node groups first, everything else eligible below them.
OWNER_TABLE = "50:\n  - ^eks-cpu-.*\n10:\n  - .*\n"


def cluster_configmap(priorities_text: str = OWNER_TABLE, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": PRIORITY_CONFIGMAP, "namespace": "kube-system", "labels": {"owner": "platform"}},
            "data": {"priorities": priorities_text, **data}}


def aws_case():
    plan = plan_for("aws", tune(TUNE_GPU["aws"]), tune("L4", "tune2"))
    target = plan.targets[0]
    mechanism = CLOUDS.get("aws").provisioner().fallback_mechanism
    name = lambda pool: mechanism.node_group_example.replace("{pool}", pool.cloud_name)
    groups = [([name(target.pool(s)) for s in g.spot], [name(target.pool(f)) for f in g.fallback])
              for g in target.fallback_groups]
    return plan, target, priority_configmap(plan, target), groups


def test_merged_table_keeps_the_owners_entries_and_still_tries_spot_first():
    _, _, ours, groups = aws_case()
    merged = merge_priorities(cluster_configmap(), ours, "existing.yaml")
    validate(merged)
    table = priorities(merged)
    owner = parse_priorities(OWNER_TABLE, "owner")
    for priority, regexes in owner.items():
        assert table[priority] == regexes  # every entry the cluster's owner wrote, at its priority
    cpu = "eks-cpu-m5-40bbb26b-8679-eb64-d33a-4ba475413529"
    assert expander_choice(table, [cpu, "eks-other-1"]) == [cpu]  # the owner's ranking is unchanged
    for [spot], [fallback] in groups:
        # The owner's `.*` at 10 matches gpustack's groups too: at 30/20 it would not matter, but an
        # owner's catch-all above 20 would tie spot and fallback; gpustack sits above the owner's highest.
        assert expander_choice(table, [spot, fallback, cpu]) == [spot]
        assert expander_choice(table, [fallback, cpu]) == [fallback]


def test_a_naive_merge_at_gpustacks_fixed_priorities_would_tie_spot_and_fallback():
    # What the shift prevents: the owner's catch-all at 50 and gpustack's entries left at 30/20.
    _, _, ours, groups = aws_case()
    naive = {**parse_priorities("50:\n  - .*\n", "owner"), **priorities(ours)}
    [spot], [fallback] = groups[0]
    assert sorted(expander_choice(naive, [spot, fallback])) == sorted([spot, fallback])
    merged = priorities(merge_priorities(cluster_configmap("50:\n  - .*\n"), ours, "existing.yaml"))
    assert expander_choice(merged, [spot, fallback]) == [spot]


def test_merging_again_changes_nothing_and_a_removed_pool_leaves_no_entry():
    _, _, ours, _ = aws_case()
    once = merge_priorities(cluster_configmap(), ours, "existing.yaml")
    assert merge_priorities(once, ours, "existing.yaml") == once
    # One fine-tuning workload fewer: its regexes (listed under gpustack-owned) go; the owner's stay.
    smaller_plan = plan_for("aws", tune(TUNE_GPU["aws"]))
    smaller = priority_configmap(smaller_plan, smaller_plan.targets[0])
    again = merge_priorities(once, smaller, "existing.yaml")
    every = [r for regexes in priorities(again).values() for r in regexes]
    assert len(every) == len(parse_priorities(OWNER_TABLE, "owner")[50]) + 1 + 2
    assert sorted(again["data"][OWNED_KEY].splitlines()) == sorted(
        r for regexes in priorities(smaller).values() for r in regexes if r != ".*")


def test_a_configmap_with_only_gpustacks_entries_is_gpustacks_own():
    _, _, ours, _ = aws_case()
    merged = merge_priorities(cluster_configmap(""), ours, "existing.yaml")
    assert priorities(merged) == priorities(ours)  # `.*` kept: nothing of an owner to decide
    assert merge_priorities(merged, ours, "existing.yaml") == merged


@pytest.mark.parametrize("text, problem", [
    ("x: [a]", "priority 'x' is not a whole number"),
    ("'30': [a]", "priority '30' is not a whole number"),  # Go reads map[int]: a quoted key fails
    ("30.5: [a]", "priority '30.5'"),
    ("30: a", "expected a list of regexes"),
    ("30: ['(']", "is not a valid regex"),
    ("- a", "must map priorities to lists"),
    ("30: [a]\n30: [b]", "duplicate key '30'"),
])
def test_a_priorities_value_the_autoscaler_would_refuse_is_refused(text, problem):
    _, _, ours, _ = aws_case()
    with pytest.raises(PriorityMergeError, match=problem.replace("(", r"\(").replace("[", r"\[")):
        merge_priorities(cluster_configmap(text), ours, "existing.yaml")


def test_another_object_is_refused():
    _, _, ours, _ = aws_case()
    other = copy.deepcopy(cluster_configmap())
    other["metadata"]["namespace"] = "default"
    with pytest.raises(PriorityMergeError, match="default/cluster-autoscaler-priority-expander; the autoscaler reads "
                                                 "kube-system/cluster-autoscaler-priority-expander"):
        merge_priorities(other, ours, "existing.yaml")
    with pytest.raises(PriorityMergeError, match="expected the cluster's ConfigMap"):
        merge_priorities({"kind": "Secret", "metadata": {}}, ours, "existing.yaml")


# -- gpustack render --merge-priorities --------------------------------------------------------------

def test_render_writes_the_merged_configmap(tmp_path):
    existing = tmp_path / "existing.yaml"
    existing.write_text(yaml.safe_dump(cluster_configmap()))
    out = tmp_path / "out"
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out),
                 "--merge-priorities", str(existing)]) == 0
    [path] = out.glob("*priority-expander.yaml")
    text = path.read_text()
    assert "--merge-priorities" in text and "gpustack-owned" in text
    merged = yaml.safe_load(text)
    validate(merged)
    assert priorities(merged)[50] == ["^eks-cpu-.*"] and priorities(merged)[10] == [".*"]
    assert merged["metadata"]["labels"]["owner"] == "platform"


@pytest.mark.parametrize("content, problem", [
    ("kind: Secret\n", "expected the cluster's ConfigMap"),
    (yaml.safe_dump(cluster_configmap("30: a")), "expected a list of regexes"),
])
def test_render_refuses_a_bad_existing_configmap_with_exit_2_and_writes_nothing(tmp_path, capsys, content, problem):
    existing = tmp_path / "existing.yaml"
    existing.write_text(content)
    out = tmp_path / "out"
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(out),
                 "--merge-priorities", str(existing)]) == 2
    assert problem in capsys.readouterr().err
    assert not out.exists()


def test_render_refuses_to_merge_for_a_target_without_a_priority_configmap(tmp_path, capsys):
    existing = tmp_path / "existing.yaml"
    existing.write_text(yaml.safe_dump(cluster_configmap()))
    assert main(["render", str(EXAMPLE), "--target", "gcp-prod", "--out", str(tmp_path / "out"),
                 "--merge-priorities", str(existing)]) == 2
    assert "writes no priority-expander ConfigMap" in capsys.readouterr().err


def test_render_refuses_a_device_as_the_existing_configmap(tmp_path, capsys):
    assert main(["render", str(EXAMPLE), "--target", "aws-prod", "--out", str(tmp_path / "out"),
                 "--merge-priorities", "/dev/zero"]) == 2
    assert "is not a regular file" in capsys.readouterr().err


# -- the Pulumi program: gpustack:priorityExpander ----------------------------------------------------

def test_program_merges_into_the_live_configmap_with_a_patch(monkeypatch):
    live = cluster_configmap()
    original = RecordingMocks.new_resource

    def new_resource(self, args):
        if args.typ == "kubernetes:core/v1:ConfigMap" and args.resource_id:  # the read of the cluster's own
            return args.resource_id, {"metadata": live["metadata"], "data": live["data"]}
        return original(self, args)

    monkeypatch.setattr(RecordingMocks, "new_resource", new_resource)
    resources = run_program(str(EXAMPLE), "aws-prod", config={**KUBECONFIG, "gpustack:priorityExpander": "merge"})
    created = [r for r in resources if r.type == "kubernetes:core/v1:ConfigMap"
               and r.inputs.get("metadata", {}).get("name") == PRIORITY_CONFIGMAP]
    assert created == []  # never created over the cluster's own
    [patch] = [r for r in resources if r.type == "kubernetes:core/v1:ConfigMapPatch"]
    inputs = plain(patch.inputs)
    assert inputs["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    assert inputs["metadata"]["labels"].get("owner") is None  # the owner's labels stay the owner's
    table = priorities(inputs)
    assert table[50] == ["^eks-cpu-.*"] and table[10] == [".*"]
    assert max(table) > 50 and OWNED_KEY in inputs["data"]


def test_program_refuses_an_unknown_priority_expander_choice():
    with pytest.raises(Exception, match="gpustack:priorityExpander is 'merg'; expected one of create, merge"):
        run_program(str(EXAMPLE), "aws-prod", config={**KUBECONFIG, "gpustack:priorityExpander": "merg"})


def test_a_merge_near_the_top_of_the_range_parses_again_and_stays_idempotent():
    """An owner priority of 999999999: the merge writes priorities above it that its own parser (and the
    next merge, and the live merge in `pulumi up`) accepts, as the autoscaler's Go int does."""
    _, _, ours, _ = aws_case()
    owner = (Path(__file__).parent / "fixtures" / "attacks" / "priorities-near-top.yaml").read_text()
    once = merge_priorities(cluster_configmap(owner), ours, "existing.yaml")
    assert max(priorities(once)) == 999999999 + 20
    assert merge_priorities(once, ours, "existing.yaml") == once


def test_a_merge_that_would_pass_the_largest_priority_is_refused_the_first_time():
    _, _, ours, _ = aws_case()
    owner = (Path(__file__).parent / "fixtures" / "attacks" / "priorities-at-the-top.yaml").read_text()
    with pytest.raises(PriorityMergeError, match="leaves no room above it"):
        merge_priorities(cluster_configmap(owner), ours, "existing.yaml")
