"""The registry is the one list of clouds, in the tests too: a test module that spells every cloud out
leaves a new cloud silently out of its tests, so it fails here until it reads the registry
(`conftest.EVERY_CLOUD`, `CLOUDS.names()`)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import EVERY_CLOUD, TARGETS
from gpustack.clouds import CLOUDS

TESTS = Path(__file__).resolve().parent
# Lists (and tables keyed by cloud) still spelled out, each with why it is not read from the registry yet.
KNOWN = {
    ("test_catalog_refresh.py", "test_all_four_clouds_from_one_folder"):
        "the clouds whose recorded price pages the test folder holds",
    ("test_surface_fuzz.py", "FEEDS"):
        "the clouds with a price feed (prices.py is optional in a bundle) and their recorded pages",
}


def _spelled_lists(tree: ast.Module, clouds: set[str]) -> list[tuple[str, int]]:
    """(enclosing top-level name, line) of every literal list, tuple or set that holds every registered
    cloud's name, and of every literal mapping keyed by them all that the module iterates (a table per
    cloud whose keys choose the clouds a test runs on: a cloud it lacks is silently left out; a table
    only indexed by cloud fails with a KeyError on a cloud it lacks, which is loud enough)."""
    iterated = _iterated_names(tree)
    found = []
    for top in tree.body:
        name = getattr(top, "name", None) or next(
            (t.id for t in getattr(top, "targets", ()) if isinstance(t, ast.Name)), "")
        for node in ast.walk(top):
            if isinstance(node, ast.Dict):
                if name not in iterated:
                    continue
                items = [k for k in node.keys if k is not None]
            elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                items = node.elts
            else:
                continue
            names = {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if clouds <= names:
                found.append((name, node.lineno))
    return found


def _iterated_names(tree: ast.Module) -> set[str]:
    """Names whose keys the module walks: `sorted(N)`, `N.items()`, `for _ in N` and the like."""
    out = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args
                and node.func.id in {"sorted", "list", "set", "tuple", "iter", "enumerate"}
                and isinstance(node.args[0], ast.Name)):
            out.add(node.args[0].id)
        elif (isinstance(node, ast.Attribute) and node.attr in {"items", "keys", "values"}
              and isinstance(node.value, ast.Name)):
            out.add(node.value.id)
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name):
            out.add(node.iter.id)
    return out


def test_no_test_module_spells_the_cloud_list_out():
    clouds = set(CLOUDS.names())
    offenders = []
    for path in sorted(p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name):
        module = str(path.relative_to(TESTS))
        for name, line in _spelled_lists(ast.parse(path.read_text(encoding="utf-8")), clouds):
            if (module, name) not in KNOWN:
                offenders.append(f"{module}:{line} ({name})")
    assert not offenders, ("these spell every cloud out, so a new cloud is left out of them; parametrize "
                           f"over conftest.EVERY_CLOUD instead: {', '.join(offenders)}")


def test_the_check_finds_a_spelled_out_list():
    tree = ast.parse("@pytest.mark.parametrize('cloud', ['aws', 'azure', 'gcp', 'oci'])\ndef test_x(cloud): pass\n")
    assert _spelled_lists(tree, {"aws", "azure", "gcp", "oci"}) == [("test_x", 1)]
    assert _spelled_lists(ast.parse("X = ('aws', 'gcp')\n"), {"aws", "azure", "gcp", "oci"}) == []


def test_the_check_finds_a_table_keyed_by_every_cloud():
    table = "TARGETS = {'aws': {}, 'azure': {}, 'gcp': {}, 'oci': {}}\n"
    walked = table + "@pytest.mark.parametrize('cloud', sorted(TARGETS))\ndef test_x(cloud): pass\n"
    assert _spelled_lists(ast.parse(walked), {"aws", "azure", "gcp", "oci"}) == [("TARGETS", 1)]
    indexed = table + "def test_x(cloud): TARGETS[cloud]\n"
    assert _spelled_lists(ast.parse(indexed), {"aws", "azure", "gcp", "oci"}) == []
    assert _spelled_lists(ast.parse("X = {'aws': 1, 'gcp': 2}\n"), {"aws", "azure", "gcp", "oci"}) == []


def test_every_registered_cloud_has_a_test_target():
    assert CLOUDS.names() == EVERY_CLOUD
    assert set(TARGETS) == set(EVERY_CLOUD)
