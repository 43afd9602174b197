"""The catalog, the clouds and the plan's model import each other at the top of the module, never inside a
function to get round a cycle: the plan and the catalog consult the clouds (their registry); the clouds
name the plan's types only for the type checker, and their compiled pools' base class lives with them
(`gpustack.clouds.compiled`). Each of the three imports first in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gpustack"
LAYERS = ("gpustack.catalog", "gpustack.clouds", "gpustack.plan.model")


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str | None:
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), None)


def deferred_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every gpustack import inside a function of the file."""
    found = []
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.append((node.lineno, node.module))
                elif isinstance(node, ast.Import):
                    found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, module) for line, module in found if module.startswith("gpustack")]


def test_no_function_local_import_between_the_catalog_the_clouds_and_the_plan_model():
    crossing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _layer(_module_of(path))
        if own is None:
            continue
        for line, module in deferred_imports(path):
            other = _layer(module)
            if other is not None and other != own:
                crossing.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module} inside a function")
    assert not crossing, crossing


@pytest.mark.parametrize("first", LAYERS)
def test_each_imports_first_in_a_fresh_interpreter(first):
    others = "; ".join(f"import {m}" for m in LAYERS if m != first)
    done = subprocess.run([sys.executable, "-c", f"import {first}; {others}"], capture_output=True, text=True,
                          cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr


def test_a_deferred_import_is_seen(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os\n\ndef f():\n    from gpustack.clouds import CLOUDS\n    return CLOUDS\n")
    assert deferred_imports(source) == [(4, "gpustack.clouds")]
