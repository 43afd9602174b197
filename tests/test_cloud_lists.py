"""The registry is the one list of clouds, in the tests too: a test module that spells every cloud out
leaves a new cloud silently out of its tests, so it fails here until it reads the registry
(`conftest.EVERY_CLOUD`, `CLOUDS.names()`)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import EVERY_CLOUD, TARGETS
from gpustack.clouds import CLOUDS

TESTS = Path(__file__).resolve().parent
# Lists still spelled out, each with why it is not read from the registry yet. (Tables keyed by cloud,
# such as conftest.TARGETS, are not lists: a test over the registry fails on a cloud they lack.)
KNOWN = {
    ("test_catalog_refresh.py", "test_all_four_clouds_from_one_folder"):
        "the clouds whose recorded price pages the test folder holds",
}


def _spelled_lists(tree: ast.Module, clouds: set[str]) -> list[tuple[str, int]]:
    """(enclosing top-level name, line) of every literal list, tuple or set that holds every registered
    cloud's name."""
    found = []
    for top in tree.body:
        name = getattr(top, "name", None) or next(
            (t.id for t in getattr(top, "targets", ()) if isinstance(t, ast.Name)), "")
        for node in ast.walk(top):
            if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                continue
            names = {i.value for i in node.elts if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if clouds <= names:
                found.append((name, node.lineno))
    return found


def test_no_test_module_spells_the_cloud_list_out():
    clouds = set(CLOUDS.names())
    offenders = []
    for path in sorted(p for p in TESTS.glob("*.py") if p.name != Path(__file__).name):
        for name, line in _spelled_lists(ast.parse(path.read_text(encoding="utf-8")), clouds):
            if (path.name, name) not in KNOWN:
                offenders.append(f"{path.name}:{line} ({name})")
    assert not offenders, ("these spell every cloud out, so a new cloud is left out of them; parametrize "
                           f"over conftest.EVERY_CLOUD instead: {', '.join(offenders)}")


def test_the_check_finds_a_spelled_out_list():
    tree = ast.parse("@pytest.mark.parametrize('cloud', ['aws', 'azure', 'gcp', 'oci'])\ndef test_x(cloud): pass\n")
    assert _spelled_lists(tree, {"aws", "azure", "gcp", "oci"}) == [("test_x", 1)]
    assert _spelled_lists(ast.parse("X = ('aws', 'gcp')\n"), {"aws", "azure", "gcp", "oci"}) == []


def test_every_registered_cloud_has_a_test_target():
    assert CLOUDS.names() == EVERY_CLOUD
    assert set(TARGETS) == set(EVERY_CLOUD)
