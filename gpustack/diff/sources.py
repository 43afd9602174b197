"""Where `gpustack diff` reads a spec: a file, or `REF:PATH` from git (`main:stacks/gpustack.yaml`).

A git path is read as `git show REF:PATH` would read it, so PATH is relative to the repository root (or to the
current directory when it starts with `./`). Errors name the argument and say what is wrong.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gpustack.errors import UsageError
from gpustack.plan import Plan, build_plan
from gpustack.spec import load_spec
from gpustack.spec.load import load_text


def load_plan(source: str, catalogs: Sequence[str] = (), current: Plan | None = None) -> Plan:
    """The plan of the spec at `source` (a file, or REF:PATH when no such file exists); `current`: the
    plan deployed now, whose pools keep their instance types unless moving saves enough.

    A git spec's `catalog:` is read from the working tree, relative to PATH's folder."""
    if Path(source).exists() or ":" not in source:
        return build_plan(load_spec(source, catalogs), current=current)
    return build_plan(load_text(git_show(source), source, catalogs, base_dir=Path(source.partition(":")[2]).parent),
                      current=current)


def git_show(source: str) -> bytes:
    rev, _, path = source.partition(":")
    if not rev or not path or rev.startswith("-"):
        raise UsageError(f"{source}: no such file, and not a git REF:PATH (for example main:stacks/gpustack.yaml)")
    if shutil.which("git") is None:
        raise UsageError(f"{source}: reading a spec from git needs the git command, which is not installed")
    found = _git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if found.returncode != 0:
        if b"not a git repository" in found.stderr:
            raise UsageError(f"{source}: not inside a git repository, so {rev!r} cannot be read")
        raise UsageError(f"{source}: no git revision {rev!r} (a branch, tag or commit; in CI, fetch it first: "
                         f"{fetch_hint(rev)})")
    kind = _git("cat-file", "-t", f"{rev}:{path}")
    if kind.returncode != 0:
        raise UsageError(f"{source}: {path!r} does not exist in {rev} (git paths start at the repository root; "
                         "use ./PATH for one relative to the current directory)")
    if kind.stdout.strip() != b"blob":
        raise UsageError(f"{source}: {path!r} is a directory in {rev}, not a spec file")
    from gpustack.spec.yamlsource import MAX_FILE_BYTES

    size = _git("cat-file", "-s", f"{rev}:{path}").stdout.strip()
    if not size.isdigit() or int(size) > MAX_FILE_BYTES:  # read no more than a spec may hold
        raise UsageError(f"{source}: {path!r} in {rev} is larger than a spec may be ({MAX_FILE_BYTES:,} bytes)")
    return _git("cat-file", "blob", f"{rev}:{path}").stdout


_SAFE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")


def fetch_hint(rev: str) -> str:
    """The command that makes `rev` readable in a fresh CI clone.

    `origin/main` names branch main of remote origin, which `git fetch origin main` creates (`git fetch
    origin origin/main` asks origin for a branch it does not have); a bare branch name needs a local
    branch, `git fetch origin main:main`; a commit is fetched by its id.
    """
    if not _SAFE_REF.fullmatch(rev):  # the hint is a command people paste into a shell
        return "git fetch origin <branch>"
    remotes = _git("remote").stdout.decode("utf-8", "replace").split()
    if rev.startswith("refs/remotes/") and rev.count("/") >= 3:
        rev = rev.removeprefix("refs/remotes/")
    remote, _, branch = rev.partition("/")
    if branch and remote in remotes:
        return f"git fetch {remote} {branch}"
    if re.fullmatch(r"[0-9a-f]{7,40}", rev):
        return f"git fetch origin {rev}"
    return f"git fetch origin {rev}:{rev}"


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], capture_output=True, check=False, timeout=60)
