"""CONTRIBUTING.md names only what exists: every backticked repository path and every make target."""

from __future__ import annotations

import re
from pathlib import Path

from gpustack.clouds import CLOUDS

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
SPANS = sorted(set(re.findall(r"`([^`\n]+)`", TEXT)))
FILE_NAME = re.compile(r"[\w.-]+\.(py|md|toml|csv|yaml|json)")


def _expanded(span: str) -> list[str]:
    """A path with `<cloud>` (and `<provisioner>`) as the path of every registered cloud (and its provisioners)."""
    if "<cloud>" not in span:
        return [span]
    out = []
    for cloud in CLOUDS:
        with_cloud = span.replace("<cloud>", cloud.name)
        out += ([with_cloud.replace("<provisioner>", p.replace("-", "_")) for p in cloud.provisioners]
                if "<provisioner>" in with_cloud else [with_cloud])
    return out


def _repo_paths() -> list[str]:
    # Paths with a placeholder other than <cloud> are what a contributor creates (`gpustack/clouds/<name>/`).
    return [path for span in SPANS if "/" in span and " " not in span and "://" not in span
            and "=" not in span and not re.search(r"<(?!cloud>|provisioner>)", span) for path in _expanded(span)]


def test_every_repository_path_it_names_exists():
    paths = _repo_paths()
    assert "gpustack/clouds/aws/managed.py" in paths and "tests/fakecloud/" in paths  # the scan reads the text
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_every_file_name_it_names_exists_in_the_repository():
    names = [span for span in SPANS if FILE_NAME.fullmatch(span)]
    assert "facts.py" in names
    files = {p.name for p in ROOT.rglob("*") if ".venv" not in p.parts and p.is_file()}
    assert [n for n in names if n not in files] == []


def test_every_make_target_it_names_exists():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.MULTILINE))
    named = {span.split()[1] for span in SPANS if re.fullmatch(r"make [a-z][\w-]*", span)}
    assert {"demo", "test", "lint", "typecheck", "fmt", "golden", "templates", "bench-perf", "bench-packing"} <= named
    assert named - targets == set()


def test_the_readme_links_it():
    assert "(CONTRIBUTING.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
