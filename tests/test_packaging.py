"""What `pip install gpustack` ships: every package, the catalog data and every template file,
packaged from pyproject.toml alone."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile

from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_of_the_tree_is_listed():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpustack").rglob("__init__.py")}
    assert on_disk - listed == set(), "add these packages to [tool.setuptools] packages in pyproject.toml"
    assert listed - on_disk == {"gpustack_templates"}


def test_the_wheel_carries_the_catalog_and_every_template(tmp_path):
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    [wheel] = tmp_path.glob("gpustack-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    templates = {"gpustack_templates/" + str(p.relative_to(ROOT / "templates"))
                 for p in (ROOT / "templates").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    data = {str(p.relative_to(ROOT)) for p in (ROOT / "gpustack" / "catalog" / "data").iterdir() if p.is_file()}
    assert templates - shipped == set() and data - shipped == set()
    # The licence travels with every install: the Apache-2.0 text, and metadata that names it.
    [license_file] = [n for n in shipped if n.endswith(".dist-info/licenses/LICENSE")]
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(license_file) == (ROOT / "LICENSE").read_bytes()
        [metadata] = [n for n in shipped if n.endswith(".dist-info/METADATA")]
        headers = archive.read(metadata).decode().split("\n\n")[0].splitlines()
    assert "License-Expression: Apache-2.0" in headers and "License-File: LICENSE" in headers
    assert (ROOT / "LICENSE").read_text().split()[:3] == ["Apache", "License", "Version"]
    assert "setup.py" not in {p.name for p in ROOT.iterdir()}
