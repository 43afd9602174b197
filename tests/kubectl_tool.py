"""kubectl (for its built-in kustomize): on PATH, or where `make kubectl` installs it (.venv/bin). Missing,
the tests that need it skip locally and fail when CI is set."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml


def kubectl() -> str:
    found = shutil.which("kubectl") or shutil.which("kubectl", path=str(Path(sys.executable).parent))
    if found is None:
        message = "kubectl is not installed (`make kubectl` installs it)"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must run the kustomize tests")
        pytest.skip(message)
    return found


def kustomize(overlay: Path, resources: list[dict], components: list[Path]) -> list[dict]:
    """`kubectl kustomize` of an overlay holding `resources` with `components` added: the objects it builds."""
    overlay.mkdir(parents=True, exist_ok=True)
    (overlay / "objects.yaml").write_text(yaml.safe_dump_all(resources, sort_keys=False))
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": ["objects.yaml"],
         "components": [os.path.relpath(c, overlay) for c in components]}))
    built = subprocess.run([kubectl(), "kustomize", str(overlay)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return list(yaml.safe_load_all(built.stdout))


def write_component(folder: Path, files: dict[str, str]) -> Path:
    """`gpustack render --workloads`'s files (relative path -> text) written under `folder`: a kustomize Component."""
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder
