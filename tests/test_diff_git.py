"""`gpustack diff REF:PATH NEW`: the old spec read from git, with short errors that say what is wrong."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import spec_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

NOTEBOOKS = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 8}


def git(repo, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                    *args], cwd=repo, check=True, capture_output=True, timeout=60)


def gpustack(cwd, *args: str, root=None) -> subprocess.CompletedProcess[str]:
    # git must not find a repository above the test's own directory (`root`, default `cwd`)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str((root or cwd).parent)}
    return subprocess.run([sys.executable, "-m", "gpustack", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "gpustack.yaml").write_text(spec_text([NOTEBOOKS], ("aws",)))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "spec")
    (tmp_path / "stacks" / "gpustack.yaml").write_text(spec_text([{**NOTEBOOKS, "replicas": 16}], ("aws",)))
    return tmp_path


def test_old_spec_from_a_branch(repo):
    result = gpustack(repo, "diff", "main:stacks/gpustack.yaml", "stacks/gpustack.yaml")
    assert result.returncode == 0, result.stderr
    assert "## gpustack diff: `main:stacks/gpustack.yaml` → `stacks/gpustack.yaml`" in result.stdout
    assert "**Resized in place**" in result.stdout


def test_a_path_relative_to_the_current_directory(repo):
    result = gpustack(repo / "stacks", "diff", "HEAD:./gpustack.yaml", "gpustack.yaml", "--format", "json",
                      root=repo)
    assert result.returncode == 0, result.stderr
    assert '"changed": true' in result.stdout


@pytest.mark.parametrize("old, message", [
    ("nope:stacks/gpustack.yaml", "gpustack: nope:stacks/gpustack.yaml: no git revision 'nope'"),
    ("main:stacks/missing.yaml", "gpustack: main:stacks/missing.yaml: 'stacks/missing.yaml' does not exist in main"),
    ("main:stacks", "gpustack: main:stacks: 'stacks' is a directory in main, not a spec file"),
])
def test_a_bad_ref_or_path_is_one_located_line(repo, old, message):
    result = gpustack(repo, "diff", old, "stacks/gpustack.yaml")
    assert result.returncode == 2
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1
    assert result.stdout == ""


def test_an_invalid_old_spec_is_located_in_the_git_version(repo):
    (repo / "stacks" / "gpustack.yaml").write_text(spec_text([{**NOTEBOOKS, "kind": "notbook"}], ("aws",)))
    git(repo, "commit", "-q", "-am", "broken")
    result = gpustack(repo, "diff", "HEAD:stacks/gpustack.yaml", "stacks/gpustack.yaml")
    assert result.returncode == 2
    assert "HEAD:stacks/gpustack.yaml:" in result.stderr and "did you mean 'notebook'?" in result.stderr


def test_outside_a_repository(tmp_path):
    (tmp_path / "s.yaml").write_text(spec_text([NOTEBOOKS], ("aws",)))
    result = gpustack(tmp_path, "diff", "main:s.yaml", "s.yaml")
    assert result.returncode == 2
    assert "not inside a git repository" in result.stderr


def test_check_takes_the_baseline_from_git_like_diff(repo):
    """CI runs the replacement guardrail against the base branch: --baseline REF:PATH, as diff takes."""
    result = gpustack(repo, "check", "stacks/gpustack.yaml", "--baseline", "main:stacks/gpustack.yaml",
                      "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    assert "no such file" not in result.stderr
    missing = gpustack(repo, "check", "stacks/gpustack.yaml", "--baseline", "nope:stacks/gpustack.yaml")
    assert missing.returncode == 2 and "no git revision 'nope'" in missing.stderr


def test_a_baseline_that_replaces_a_pool_is_flagged_from_git(repo):
    (repo / "stacks" / "gpustack.yaml").write_text(spec_text([{**NOTEBOOKS, "gpu": "L4"}], ("aws",)))
    result = gpustack(repo, "check", "stacks/gpustack.yaml", "--baseline", "main:stacks/gpustack.yaml",
                      "--format", "json")
    assert result.returncode in (0, 1), result.stderr  # the spec's own mandatory findings aside
    rules = [v["rule"] for v in json.loads(result.stdout)["violations"]]
    assert "node-pool-replacement" in rules


@pytest.mark.parametrize("rev, hint", [
    ("origin/main", "git fetch origin main)"),          # not `git fetch origin origin/main`, which fails
    ("refs/remotes/origin/release-1", "git fetch origin release-1)"),
    ("main", "git fetch origin main:main)"),            # a local branch, so main:PATH resolves
    ("0123abcd", "git fetch origin 0123abcd)"),
])
def test_a_missing_ref_suggests_a_fetch_that_works(repo, rev, hint):
    git(repo, "remote", "add", "origin", "https://git.example.invalid/repo.git")
    git(repo, "branch", "-m", "main", "work")
    result = gpustack(repo, "diff", f"{rev}:stacks/gpustack.yaml", "stacks/gpustack.yaml")
    assert result.returncode == 2
    assert result.stderr.rstrip().endswith(hint), result.stderr
