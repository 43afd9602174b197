"""The command line: exit codes, messages for people, no Pulumi on the fast paths."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import EXAMPLE, ROOT, spec_text
from gpustack.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpustack", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_validate_the_example(capsys):
    assert main(["validate", str(EXAMPLE)]) == 0
    assert "valid (4 targets, 9 workloads" in capsys.readouterr().out


def test_plan_json_follows_the_contract(capsys):
    assert main(["plan", str(EXAMPLE), "--format", "json", "--target", "gcp-prod"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in data["targets"]] == ["gcp-prod"]


def test_plan_table_explains_choices(capsys):
    assert main(["plan", str(EXAMPLE), "--target", "aws-prod"]) == 0
    out = capsys.readouterr()
    assert "train-h100-spot-p5-48xlarge" in out.out and "checkpointed training runs on spot" in out.out
    assert "warning: aws-prod: training 'ranker-train' has no checkpointing" in out.err


def test_bad_spec_exits_2_with_located_errors_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(spec_text([{"name": "x", "kind": "trainig", "gpu": "H100"}]))
    result = run("validate", str(bad))
    assert result.returncode == 2
    assert f"{bad}:" in result.stderr and "did you mean 'training'?" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["plan", "missing.yaml"], "missing.yaml: no such file"),
    (["plan", str(EXAMPLE), "--target", "aws-prd"], "no target 'aws-prd' in the spec (did you mean 'aws-prod'?)"),
    (["plan", str(EXAMPLE), "--format", "yaml"], "invalid choice: 'yaml'"),
])
def test_usage_errors_exit_2(args, message, capsys):
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse refuses before any command runs
        code = exit_.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_validate_and_plan_import_no_pulumi_module():
    code = (
        "import sys\n"
        "from gpustack.cli import main\n"
        f"assert main(['validate', {str(EXAMPLE)!r}]) == 0\n"
        f"assert main(['plan', {str(EXAMPLE)!r}, '--format', 'json']) == 0\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi'))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr


def test_validate_takes_several_files_and_reports_the_problems_of_all(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(spec_text([{"name": "x", "kind": "training", "gpu": "H100"}]))
    bad1, bad2 = tmp_path / "bad1.yaml", tmp_path / "bad2.yaml"
    bad1.write_text(spec_text([{"name": "x", "kind": "trainig", "gpu": "H100"}]))
    bad2.write_text(spec_text([{"name": "x", "kind": "training", "gpu": "H1000"}]))
    assert main(["validate", str(good), str(bad1), str(bad2)]) == 2
    out = capsys.readouterr()
    assert out.out.startswith(f"{good}: valid (1 target, 1 workload")
    assert f"{bad1}:" in out.err and "did you mean 'training'?" in out.err and f"{bad2}:" in out.err
    assert out.err.rstrip().endswith("gpustack: 2 problems found in 2 of 3 files")
    assert main(["validate", "--quiet", str(good), str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == ""
