"""`gpustack diff OLD NEW`: what a spec change adds, removes, resizes and replaces, and what it costs."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import EXAMPLE, assert_golden, spec_text
from gpustack.cli import main
from gpustack.diff import diff_plans
from gpustack.diff.report import render_diff_markdown
from gpustack.plan import build_plan
from gpustack.spec import load_text

OLD_LABEL, NEW_LABEL = "main:stacks/gpustack.yaml", "stacks/gpustack.yaml"


def changed_example() -> str:
    """The example with a typical pull request's edits: a MIG profile, a notebook share, a bigger
    training job, one workload dropped and one added."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    for w in doc["workloads"]:
        if w["name"] == "chat":
            w["mig"] = "2g.20gb"
        if w["name"] == "notebooks":
            w["gpu_fraction"] = 0.5
        if w["name"] == "llm-pretrain":
            w["replicas"] = 3
    doc["workloads"] = [w for w in doc["workloads"] if w["name"] != "ranker-train"]
    doc["workloads"].append({"name": "rerank", "kind": "inference", "gpu": "A100-80GB", "gpu_fraction": 0.5,
                             "replicas": {"min": 1, "max": 2}})
    for t in doc["targets"]:
        t["workloads"] = [w for w in t["workloads"] if w != "ranker-train"] + ["rerank"]
    return yaml.safe_dump(doc, sort_keys=False)


def plan(text: str, file: str = "spec.yaml"):
    return build_plan(load_text(text, file))


@pytest.fixture(scope="module")
def example_diff():
    return diff_plans(plan(EXAMPLE.read_text(), OLD_LABEL), plan(changed_example(), NEW_LABEL), OLD_LABEL, NEW_LABEL)


@pytest.mark.golden
def test_markdown_diff_matches_golden(example_diff):
    assert_golden("diff/example.md", render_diff_markdown(example_diff))


@pytest.mark.golden
def test_json_diff_matches_golden(example_diff):
    assert_golden("diff/example.json", example_diff.to_json())


def test_cost_delta_per_target_is_new_minus_old_planned_cost(example_diff):
    old, new = plan(EXAMPLE.read_text()), plan(changed_example())
    data = json.loads(example_diff.to_json())
    for target in data["targets"]:
        before = old.target(target["name"]).cost.planned_monthly_usd
        after = new.target(target["name"]).cost.planned_monthly_usd
        assert target["monthly_cost_usd"]["delta"] == pytest.approx(after - before, abs=0.01)
    assert data["monthly_cost_delta_usd"] == pytest.approx(sum(t["monthly_cost_usd"]["delta"]
                                                               for t in data["targets"]), abs=0.01)


def test_a_dropped_workload_removes_its_pool_and_an_added_one_adds_pools(example_diff):
    azure = next(t for t in example_diff.targets if t.name == "azure-prod")
    removed = [p for p in azure.pools if p.change == "removed"]
    added = [p for p in azure.pools if p.change == "added"]
    assert [p.workloads for p in removed] == [("ranker-train",)]
    assert {p.workloads for p in added} == {("rerank",)}


def test_more_replicas_resize_a_pool_in_place(example_diff):
    for target in example_diff.targets:
        [pretrain] = [p for p in target.pools if "llm-pretrain" in p.workloads]
        assert pretrain.change == "resized"
        assert {f.field for f in pretrain.fields} == {"nodes", "GPUs"}


def test_identical_specs_say_no_changes(tmp_path, capsys):
    copy = tmp_path / "copy.yaml"
    copy.write_text(EXAMPLE.read_text())
    assert main(["diff", str(EXAMPLE), str(copy)]) == 0
    out = capsys.readouterr().out
    assert "No changes" in out and "###" not in out
    assert main(["diff", str(EXAMPLE), str(copy), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["changed"] is False and data["monthly_cost_delta_usd"] == 0
    assert {t["status"] for t in data["targets"]} == {"unchanged"}


def test_a_change_exits_0_and_target_narrows_the_report(tmp_path, capsys):
    new = tmp_path / "new.yaml"
    new.write_text(changed_example())
    assert main(["diff", str(EXAMPLE), str(new), "--target", "gcp-prod"]) == 0
    out = capsys.readouterr().out
    assert "### gcp-prod (GKE)" in out and "aws-prod" not in out


def test_unknown_target_is_a_usage_error(tmp_path, capsys):
    assert main(["diff", str(EXAMPLE), str(EXAMPLE), "--target", "gcp-prd"]) == 2
    assert "no target 'gcp-prd' in either spec (did you mean 'gcp-prod'?)" in capsys.readouterr().err


def test_a_bad_new_spec_is_reported_with_its_location(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(spec_text([{"name": "x", "kind": "trainig", "gpu": "H100"}]))
    assert main(["diff", str(EXAMPLE), str(bad)]) == 2
    assert f"{bad}:" in capsys.readouterr().err


def test_added_and_removed_targets():
    one = spec_text([{"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4}], ("aws",))
    two = spec_text([{"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4}],
                    ("gcp",))
    diff = diff_plans(plan(one), plan(two), "a", "b")
    assert [(t.name, t.status) for t in diff.targets] == [("aws-t", "removed"), ("gcp-t", "added")]
    gcp = diff.targets[1]
    assert gcp.delta_usd == pytest.approx(gcp.new_monthly_usd, abs=0.01) and gcp.delta_usd > 0
    assert [p.change for p in gcp.pools] == ["added"]
