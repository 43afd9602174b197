"""`gpustack check`: the guardrails on the plan, offline; exit 1 on a mandatory violation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EVERY_CLOUD, EXAMPLE, ROOT, TARGETS, spec_text
from gpustack.cli import main

LABELS = {"team": "ml-platform", "environment": "prod"}
CHECKPOINTED = {"name": "pretrain", "kind": "training", "gpu": "H100", "gpus": 8, "replicas": 1, "checkpointing": True}
SCHEDULE = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}


def write(tmp_path, workloads, clouds=("aws",), name="spec.yaml", **top):
    path = tmp_path / name
    path.write_text(spec_text(workloads, clouds, **({"labels": LABELS} | top)))
    return str(path)


def check(capsys, *args):
    code = main(["check", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def flat(text: str) -> str:
    """The table's text with its line wrapping undone."""
    return " ".join(text.split())


def besides_price_age(err: str) -> str:
    """stderr without the warning that the bundled prices are old, which depends on the day the test runs."""
    return "".join(line for line in err.splitlines(keepends=True) if "warning: prices more than " not in line)


def test_the_example_passes(capsys):
    code, out, _ = check(capsys, str(EXAMPLE))
    assert code == 0
    verdicts = [line for line in out.splitlines() if not line.startswith(" ")]
    assert [v.split(":")[0] for v in verdicts] == ["aws-prod", "azure-prod", "gcp-prod", "oci-prod"]
    assert all(v.split(": ", 1)[1].startswith("passes") for v in verdicts)
    # The example's serving floors have no `availability`: advised, never failed.
    rules = {line.split()[1] for line in out.splitlines() if line.strip().startswith(("ADVISORY", "MANDATORY"))}
    assert rules == {"inference-floor-spread"}


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
def test_spot_training_without_checkpointing_is_a_valid_spec_that_check_rejects(tmp_path, capsys, cloud):
    gpu = "A10" if cloud in ("azure", "oci") else "A100-80GB"  # VM shapes that can be spot on every cloud
    spec = write(tmp_path, [{"name": "ranker", "kind": "training", "gpu": gpu, "capacity": "spot"}], (cloud,))
    assert main(["validate", spec]) == 0
    capsys.readouterr()
    code, out, _ = check(capsys, spec)
    assert code == 1
    assert "fails: 1 mandatory violation" in out
    assert "MANDATORY  spot-gpu-pool-checkpointing  train-" in out
    assert "whose workloads do not checkpoint" in flat(out)
    assert "Fix: run it on on-demand capacity: remove `capacity: spot` from workload ranker, or set " \
           "`checkpointing: true` on workload ranker once its workloads save checkpoints." in flat(out)
    assert max(len(line) for line in out.splitlines()) <= 120


@pytest.mark.parametrize("workloads, rule, words", [
    ([CHECKPOINTED], "gpu-pool-attribution-labels", "without the attribution label environment"),
    ([{"name": "chat", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "replicas": {"min": 2, "max": 4},
       "capacity": "spot"}], "inference-pool-not-spot-only", "on spot capacity only"),
    ([{"name": "lab", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4}],
     "dev-pool-auto-stop", "notebook pool (workload lab) has no auto-stop schedule"),
    # (A reserved notebook with a schedule is refused by the spec itself; without one it breaks both checks.)
    ([{"name": "lab", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4,
       "capacity": "reserved"}], "dev-pool-auto-stop", "cannot scale to zero: it keeps at least 1 node running"),
])
def test_a_spec_breaking_a_rule_fails_with_the_rule_named(tmp_path, capsys, workloads, rule, words):
    top = {"labels": {"team": "ml-platform"}} if rule == "gpu-pool-attribution-labels" else {}
    spec = write(tmp_path, workloads, **top)
    code, out, _ = check(capsys, spec)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("  MANDATORY")]
    assert lines and {line.split()[1] for line in lines} == {rule}
    assert words in out and "Fix: " in out


def test_the_workloads_fix_of_a_notebook_says_how_to_add_a_schedule(tmp_path, capsys):
    spec = write(tmp_path, [{"name": "lab", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4}])
    _, out, _ = check(capsys, spec)
    assert 'Fix: add `schedule: {days: Mon-Fri, hours: "08:00-18:00", timezone: <IANA zone>}` to workload lab.' in out


def test_required_labels_from_the_command_line(tmp_path, capsys):
    spec = write(tmp_path, [CHECKPOINTED])
    assert check(capsys, spec)[0] == 0
    code, out, _ = check(capsys, spec, "--require-label", "team", "--require-label", "cost-center")
    assert code == 1 and "without the attribution label cost-center" in out and "environment" not in out


def test_the_budget_caps_come_from_the_policy_config(tmp_path, capsys):
    spec = write(tmp_path, [CHECKPOINTED])  # one p5.48xlarge node: 8 GPUs
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"stack-gpu-budget": {"maxGpus": 8}}))
    assert check(capsys, spec, "--config", str(config))[0] == 0
    config.write_text(json.dumps({"stack-gpu-budget": {"maxGpus": 7}}))
    code, out, _ = check(capsys, spec, "--config", str(config))
    assert code == 1
    assert "MANDATORY  stack-gpu-budget  (whole target)" in out
    assert "can reach 8 GPUs at their maximum size, above the cap of 7 GPUs" in out


def test_a_rule_made_advisory_reports_without_failing(tmp_path, capsys):
    spec = write(tmp_path, [{"name": "ranker", "kind": "training", "gpu": "A100-80GB", "capacity": "spot"}])
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"spot-gpu-pool-checkpointing": "advisory"}))
    code, out, _ = check(capsys, spec, "--config", str(config))
    assert code == 0 and "aws-t: passes, 1 advisory" in out and "ADVISORY   spot-gpu-pool-checkpointing" in out
    config.write_text(json.dumps({"all": "disabled"}))
    code, out, err = check(capsys, spec, "--config", str(config))
    assert (code, out, besides_price_age(err)) == (0, "aws-t: passes\n", "")


def test_json_output_names_rule_target_pool_and_fix(tmp_path, capsys):
    spec = write(tmp_path, [{"name": "ranker", "kind": "training", "gpu": "A100-80GB", "capacity": "spot"}])
    code, out, _ = check(capsys, spec, "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["mandatory"] == 1 and data["advisory"] == 0
    (violation,) = data["violations"]
    assert violation["rule"] == "spot-gpu-pool-checkpointing" and violation["target"] == "aws-t"
    assert violation["pool"].startswith("train-a100-80gb-spot-") and violation["fix"].startswith("run it on on-demand")


def test_replacing_changes_against_a_baseline_are_advisory(tmp_path, capsys):
    old = write(tmp_path, [CHECKPOINTED], name="old.yaml")
    code, out, err = check(capsys, old, "--baseline", old)
    assert (code, out, besides_price_age(err)) == (0, "aws-t: passes\n", "")
    # Same pool, new subnets: EKS recreates the node group.
    moved = tmp_path / "moved.yaml"
    subnet = TARGETS["aws"]["settings"]["subnet_ids"][0]
    moved.write_text(Path(old).read_text().replace(subnet, "subnet-0c2d"))
    code, out, _ = check(capsys, str(moved), "--baseline", old)
    assert code == 0 and "aws-t: passes, 1 advisory" in out
    assert "ADVISORY   node-pool-replacement  train-h100-spot-p5-48xlarge" in out
    assert "this change replaces a node pool, draining its nodes: in place:" in flat(out)
    subnets = TARGETS["aws"]["settings"]["subnet_ids"]
    moved_subnets = ["subnet-0c2d", *subnets[1:]]
    assert (f"settings.subnet_ids: {', '.join(subnets)} -> {', '.join(moved_subnets)} (subnet_ids is ForceNew"
            in flat(out))
    # No checkpointing any more: the pool moves from spot to on-demand, a new pool takes over.
    unsafe = write(tmp_path, [{**CHECKPOINTED, "checkpointing": False}], name="unsafe.yaml")
    code, out, _ = check(capsys, unsafe, "--baseline", old)
    assert "node-pool-replacement  train-h100-ondemand-p5-48xlarge" in out
    assert "node pool train-h100-spot-p5-48xlarge gives way to it" in flat(out)
    assert "capacity: spot -> on-demand" in flat(out)
    assert "node-pool-replacement" not in check(capsys, str(moved))[1]  # no baseline, nothing to compare
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"node-pool-replacement": "mandatory"}))
    assert check(capsys, str(moved), "--baseline", old, "--config", str(config))[0] == 1


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not valid JSON"),
        (
            '{"gpu-pool-taints": "advisory"}',
            "'gpu-pool-taints' is not a gpustack guardrail (did you mean 'gpu-pool-taint'?)",
        ),
        ('{"stack-gpu-budget": {"maxGpus": -1}}', "stack-gpu-budget.maxGpus: expected a whole number >= 0, got -1"),
        ('{"stack-gpu-budget": {"maxGpu": 4}}', "unknown option (did you mean 'maxGpus'?)"),
        ('{"all": "warn"}', "all: 'warn' is not an enforcement level"),
        ('["team"]', "expected a JSON object keyed by guardrail name"),
    ],
)
def test_a_bad_config_exits_2_with_a_message(tmp_path, capsys, content, message):
    config = tmp_path / "policy-config.json"
    config.write_text(content)
    code, out, err = check(capsys, str(EXAMPLE), "--config", str(config))
    assert code == 2 and out == "" and message in err and str(config) in err


def test_bad_input_exits_2(tmp_path, capsys):
    assert check(capsys, str(EXAMPLE), "--config", str(tmp_path / "none.json"))[2].endswith("none.json: no such file\n")
    code, _, err = check(capsys, str(EXAMPLE), "--target", "aws-prd")
    assert code == 2 and "did you mean 'aws-prod'?" in err
    code, _, err = check(capsys, str(EXAMPLE), "--baseline", str(tmp_path / "old.yaml"))
    assert code == 2 and "old.yaml: no such file" in err


def test_check_loads_no_pulumi_module():
    code = (
        "import sys\n"
        "from gpustack.cli import main\n"
        f"assert main(['check', {str(EXAMPLE)!r}]) == 0\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr


TWO_TEAMS = [{"name": "vision-serve", "kind": "inference", "gpu": "L4", "gpu_fraction": 0.5, "replicas": 2,
              "labels": {"team": "vision"}},
             {"name": "fraud-serve", "kind": "inference", "gpu": "L4", "gpu_fraction": 0.5, "replicas": 2,
              "labels": {"team": "fraud"}}]


def test_a_pool_shared_by_two_teams_says_so_and_offers_the_fixes(tmp_path, capsys):
    """Both workloads have `team`: telling them to add it would be wrong; the pool is shared."""
    spec = write(tmp_path, TWO_TEAMS, labels={"environment": "prod"})
    code, out, _ = check(capsys, spec, "--format", "json")
    [violation] = [v for v in json.loads(out)["violations"] if v["rule"] != "inference-floor-spread"]
    assert code == 1 and violation["rule"] == "gpu-pool-attribution-labels"
    assert "shared by workloads that differ in team (team: fraud-serve=fraud, vision-serve=vision)" in violation["message"]
    assert "add team to" not in violation["fix"]
    assert "`pools: {split_by: [team]}`" in violation["fix"] and "pods' team label" in violation["fix"]


def test_split_by_team_gives_each_team_its_pools_and_passes(tmp_path, capsys):
    spec = write(tmp_path, TWO_TEAMS, labels={"environment": "prod"}, pools={"split_by": ["team"]})
    code, out, _ = check(capsys, spec, "--format", "json")
    assert code == 0 and {v["rule"] for v in json.loads(out)["violations"]} == {"inference-floor-spread"}
    assert main(["plan", spec, "--format", "json"]) == 0
    pools = json.loads(capsys.readouterr().out)["targets"][0]["pools"]
    assert {p["name"]: (p["labels"]["team"], p["workloads"]) for p in pools} == {
        "infer-l4-ts2-reserved-g6-xlarge-fraud": ("fraud", ["fraud-serve"]),
        "infer-l4-ts2-reserved-g6-xlarge-vision": ("vision", ["vision-serve"])}


def test_without_split_by_pool_names_are_unchanged(tmp_path, capsys):
    spec = write(tmp_path, TWO_TEAMS, labels={"environment": "prod"})
    assert main(["plan", spec, "--format", "json"]) == 0
    [pool] = json.loads(capsys.readouterr().out)["targets"][0]["pools"]
    assert pool["name"] == "infer-l4-ts2-reserved-g6-xlarge"
    assert pool["labels_not_shared"] == {"team": {"fraud-serve": "fraud", "vision-serve": "vision"}}
