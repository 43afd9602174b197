"""Every cloud is one bundle: the registry test checks each hook of each registered cloud, and shared
code never names a cloud."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from gpustack.catalog import load_catalog
from gpustack.clouds import CLOUDS, Cloud
from gpustack.clouds.base import BUNDLE_PARTS, COMPUTE_CLASS, PRIORITY_EXPANDER, ExampleTarget
from gpustack.plan import build_plan
from gpustack.spec import load_text

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpustack"
CLOUD_NAMES = sorted(CLOUDS.names())


@pytest.fixture(params=CLOUD_NAMES)
def cloud(request) -> Cloud:
    return CLOUDS.get(request.param)


def test_the_bundle_is_the_package_named_after_the_cloud(cloud):
    assert cloud.bundle == f"gpustack.clouds.{cloud.name}"
    for part in BUNDLE_PARTS:
        assert (PACKAGE / "clouds" / cloud.name / f"{part}.py").is_file(), part


def test_facts_say_what_shared_code_asks(cloud):
    assert cloud.display_name and cloud.pool_names.source.startswith("https://")
    assert isinstance(cloud.image_has_gpu_driver, bool) and isinstance(cloud.image_has_container_toolkit, bool)
    assert cloud.api_server_ports and all(0 < port < 65536 for port in cloud.api_server_ports)
    mechanism = cloud.provisioner().fallback_mechanism
    if mechanism is not None:
        assert mechanism.source.startswith("https://") and mechanism.user_action
        if mechanism.kind == PRIORITY_EXPANDER:
            assert mechanism.namespace and mechanism.node_group_example
        else:
            assert mechanism.kind == COMPUTE_CLASS and mechanism.pool_marker and mechanism.api_version


def test_readers_cover_the_clouds_node_pools(cloud):
    readers = cloud.part("readers")
    assert readers.POOL_TYPES and all(t.cloud == cloud.name for t in readers.POOL_TYPES)
    for pool_type in readers.POOL_TYPES:
        assert {"instance_type", "capacity", "labels", "taints", "min_nodes", "max_nodes", "cloud_name"} <= set(
            pool_type.paths)
    assert isinstance(readers.SCHEDULE_TYPES, dict) and isinstance(readers.AUTOSCALER_TYPES, dict)
    bounded = {t.bounded_by for t in readers.POOL_TYPES} - {None}
    assert bounded <= set(readers.AUTOSCALER_TYPES), "a pool type bounded by an autoscaler nobody reads"


def test_mocks_and_backend(cloud):
    mocks = cloud.part("mocks")
    assert isinstance(mocks.CALLS, dict) and isinstance(mocks.OUTPUTS, dict)
    assert callable(cloud.part("backend").declare)


def test_the_example_target_validates_and_plans(cloud):
    example = cloud.example
    assert isinstance(example, ExampleTarget) and example.provider_config
    gpu = min(row.gpu for row in load_catalog().in_region(cloud.name, example.region))
    settings = {k: list(v) if isinstance(v, tuple) else v for k, v in example.settings.items()}
    text = yaml.safe_dump({
        "version": 1, "name": "example",
        "targets": [{"name": "t", "cloud": cloud.name, "region": example.region, "cluster": example.cluster,
                     "settings": settings}],
        "workloads": [{"name": "train", "kind": "training", "gpu": gpu, "checkpointing": True}]})
    [target] = build_plan(load_text(text, "example.yaml")).targets
    assert target.cloud == cloud.name and target.pools


# -- shared code names no cloud --------------------------------------------------------------------
def _words() -> re.Pattern[str]:
    names = {w for cloud in CLOUDS for w in (cloud.name, *cloud.aliases, cloud.display_name)}
    return re.compile(rf"\b({'|'.join(sorted(map(re.escape, names)))})\b", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _shared_modules() -> list[Path]:
    """Every Python module but the bundles': the package (pipeline, backends, render, plan, the Pulumi
    component and program, guardrails) and the policy pack."""
    bundles = {PACKAGE / "clouds" / name for name in CLOUD_NAMES}
    modules = [*PACKAGE.rglob("*.py"), *(ROOT / "policies").glob("*.py")]
    return [p for p in sorted(modules) if not any(b in p.parents for b in bundles)]


# Template files that may name a cloud, and why.
TEMPLATES_EXEMPT = {
    # Rendered from the registry by `make templates` (tests/test_new.py compares): a cloud's stack and
    # login come from its bundle.
    "templates/pulumi/gpustack": "rendered",
    "templates/backstage/template.yaml": "rendered",  # from template.yaml.j2, which is scanned
    # Third-party GitHub Actions pinned by commit, under their publishers' names; a bundle's
    # PreviewLogin picks one by key.
    "templates/project/github/actions.yaml": "pins",
}


def _template_files() -> list[Path]:
    root = ROOT / "templates"
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix not in (".py", ".pyc")
            and not any(rel == exempt or rel.startswith(f"{exempt}/") for exempt in TEMPLATES_EXEMPT
                        if (rel := str(p.relative_to(ROOT))))]


def _named_in_text(text: str) -> list[tuple[int, str, str]]:
    """(line, cloud word, line) for every line of a template naming a cloud, comment lines aside."""
    words = _words()
    return [(n, match.group(0), line) for n, line in enumerate(text.splitlines(), 1)
            if not line.lstrip().startswith(("#", "{#")) and (match := words.search(line))]


def _readme_texts(tree: ast.AST) -> set[int]:
    """The README's text of each workload key (the `doc` of a `WorkloadField`, gpustack/spec/fields.py):
    documentation for people, as docstrings are."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "WorkloadField":
            docs = [*node.args[2:3], *(k.value for k in node.keywords if k.arg == "doc")]
            found.update(id(n) for doc in docs for n in ast.walk(doc) if isinstance(n, ast.Constant))
    return found


def _named_clouds(source: str) -> list[tuple[int, str, str]]:
    """(line, cloud word, string) for every string constant of `source` naming a cloud, docstrings and the
    README's texts aside."""
    words = _words()
    tree = ast.parse(source)
    docs = _docstrings(tree) | _readme_texts(tree)
    return [(node.lineno, match.group(0), node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and (match := words.search(node.value))]


def test_shared_code_holds_no_cloud_name_literal():
    """Outside gpustack/clouds/<cloud>/ no string (docstrings and comments aside) names a cloud, by its
    registry name, an alias or its display name: shared code asks the cloud object instead."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {word!r} in {text[:60]!r}"
             for path in _shared_modules() for line, word, text in _named_clouds(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_templates_name_no_cloud():
    """The project, Backstage and Markdown templates hold no cloud name either: what differs per cloud
    is passed in from its bundle (e.g. where the auto-stop is in-cluster, the Backstage stacks)."""
    assert len(_template_files()) > 10 and (ROOT / "templates" / "backstage" / "template.yaml.j2") in _template_files()
    found = [f"{path.relative_to(ROOT)}:{line}: {word!r} in {text.strip()[:60]!r}"
             for path in _template_files() for line, word, text in _named_in_text(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_the_scan_covers_every_stage():
    scanned = {str(p.relative_to(ROOT)) for p in _shared_modules()}
    assert {"gpustack/pulumi.py", "gpustack/program.py", "gpustack/backends/base.py", "gpustack/backends/kubernetes.py",
            "gpustack/render/autoscaling.py", "gpustack/plan/planner.py", "gpustack/clouds/base.py",
            "policies/__main__.py"} <= scanned
    assert not any(p.startswith(f"gpustack/clouds/{name}/") for p in scanned for name in CLOUD_NAMES)


def test_the_scan_finds_a_planted_name():
    # The scan must be able to fail: a cloud's name in a string is caught, in a docstring it is not.
    first = CLOUDS.get(CLOUD_NAMES[0])
    planted = f'"""Docstrings may name {first.display_name}."""\nX = "{first.name}"\nY = "on {first.display_name}"\n'
    assert [line for line, _, _ in _named_clouds(planted)] == [2, 3]
    template = f"# {first.display_name} in a comment\nenum: [{first.name}-prod]\non {first.display_name}\n"
    assert [line for line, _, _ in _named_in_text(template)] == [2, 3]


def test_the_bundles_docstring_lists_exactly_its_modules(cloud):
    """A bundle's docstring is its map: every module it names exists, and every module is named."""
    import importlib

    doc = importlib.import_module(cloud.bundle).__doc__ or ""
    listed = set(re.findall(r"^\s+(\w+\.py)\s", doc, re.MULTILINE))
    present = {p.name for p in (PACKAGE / "clouds" / cloud.name).glob("*.py")} - {"__init__.py"}
    assert listed == present


def test_only_the_readme_text_of_a_workload_field_may_name_a_cloud():
    source = 'WorkloadField("key", read, "pins, e.g. {aws: p5.48xlarge}", not_for="aws only")\n'
    assert [(word, text) for _, word, text in _named_clouds(source)] == [("aws", "aws only")]
