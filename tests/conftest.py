"""Shared test helpers: small specs built as text, and golden files."""

from __future__ import annotations

import difflib
import os
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from gpustack.clouds import CLOUDS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "stacks" / "gpustack.yaml"
GOLDEN = Path(__file__).resolve().parent / "golden"

# Every registered cloud, from the registry (the one list of clouds): what "on every cloud" means here.
EVERY_CLOUD = CLOUDS.names()

# Every provisioner of every registered cloud, as (cloud, provisioner): the `every_provisioner` fixture.
EVERY_PROVISIONER = tuple((cloud, name) for cloud in EVERY_CLOUD for name in CLOUDS.get(cloud).provisioners)


@pytest.fixture(params=EVERY_PROVISIONER, ids=[f"{cloud}-{name}" for cloud, name in EVERY_PROVISIONER])
def every_provisioner(request: pytest.FixtureRequest) -> tuple[str, str]:
    """Runs a test once per provisioner of every registered cloud: (cloud, provisioner)."""
    return request.param


# A setting whose pattern is a choice of words (`hashed|descriptive`) picks a behaviour: the test targets
# leave it at the cloud's default, so a test runs the defaults unless it sets one.
_CHOICE = re.compile(r"[a-z][-a-z]*(\|[a-z][-a-z]*)+")


def example_target(cloud: str) -> dict[str, object]:
    """A valid target of `cloud`, `<cloud>-t`: the cloud's own example target (`Cloud.example`, what
    `gpustack new` writes) without the settings that choose a behaviour."""
    facts = CLOUDS.get(cloud)
    choices = {s.name for s in facts.settings if s.pattern and _CHOICE.fullmatch(s.pattern)}
    settings = {k: list(v) if isinstance(v, tuple) else v for k, v in facts.example.settings.items()
                if k not in choices}
    return {"name": f"{cloud}-t", "cloud": cloud, "region": facts.example.region, "cluster": facts.example.cluster,
            "settings": settings}


# One valid target per registered cloud (tests/test_cloud_lists.py), from the cloud's example.
TARGETS = {cloud: example_target(cloud) for cloud in EVERY_CLOUD}


def spec_text(workloads: list[dict], clouds: tuple[str, ...] = ("aws",), **top: object) -> str:
    """A spec as YAML text with the given workloads and one target per cloud."""
    doc = {"version": 1, "name": "t", "targets": [TARGETS[c] for c in clouds], "workloads": workloads, **top}
    return yaml.safe_dump(doc, sort_keys=False)


def provisioner_example_text(example_target: str, name: str, provisioner: str, **settings: str) -> str:
    """The example's target `example_target` as `name`, provisioned by `provisioner` with `settings` added (a
    test-only spec, so the example's own targets and their resources stay as they are)."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    [target] = [t for t in doc["targets"] if t["name"] == example_target]
    target = {**target, "name": name, "settings": {**target["settings"], "provisioner": provisioner, **settings}}
    return yaml.safe_dump({**doc, "targets": [target]}, sort_keys=False)


def karpenter_example_text() -> str:
    """The example's aws target as `aws-karpenter`, provisioned by Karpenter."""
    return provisioner_example_text("aws-prod", "aws-karpenter", "karpenter")


def compute_class_example_text() -> str:
    """The example's gcp target as `gcp-compute-class`, provisioned by GKE ComputeClasses."""
    return provisioner_example_text("gcp-prod", "gcp-compute-class", "compute-class")


def nap_example_text() -> str:
    """The example's azure target as `azure-nap`, provisioned by AKS node auto-provisioning."""
    return provisioner_example_text("azure-prod", "azure-nap", "nap")


# The OKE GPU image an OCINodeClass is pinned to in the test specs (KPO needs one: settings.image_id).
OKE_GPU_IMAGE = "ocid1.image.oc1.iad.aaaaaaaaexampleokegpuimage"


def oci_karpenter_example_text() -> str:
    """The example's oci target as `oci-karpenter`, provisioned by Oracle's Karpenter provider on a pinned
    OKE GPU image."""
    return provisioner_example_text("oci-prod", "oci-karpenter", "karpenter", image_id=OKE_GPU_IMAGE)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture(autouse=True, scope="session")
def _installed_from_a_checkout():
    """`gpustack new` reads where gpustack was installed from; the tests see a checkout, wherever they run."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gpustack.commands._package.installed_direct_url", lambda: None)
        yield


_WRITTEN: set[Path] = set()  # golden files written by this run (`make golden`)
_IN_GOLDEN_TEST = [False]


@pytest.fixture(autouse=True)
def _golden_marker(request: pytest.FixtureRequest):
    """Golden files are compared only by tests marked `golden`, so `make golden` (which runs those and
    prunes every file they did not write) rewrites the folder wholesale."""
    _IN_GOLDEN_TEST[0] = request.node.get_closest_marker("golden") is not None
    yield
    _IN_GOLDEN_TEST[0] = False


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("GPUSTACK_GOLDEN_PRUNE") and os.environ.get("GPUSTACK_UPDATE_GOLDEN") and exitstatus == 0:
        for stale in sorted(p for p in GOLDEN.rglob("*") if p.is_file() and p not in _WRITTEN):
            stale.unlink()
        for folder in sorted((p for p in GOLDEN.rglob("*") if p.is_dir()), reverse=True):
            if not any(folder.iterdir()):
                folder.rmdir()


def assert_golden_folder(folder: str, files: dict[str, str]) -> None:
    """Compare every file of `files` with tests/golden/<folder>/, which holds no other file."""
    for relative, text in files.items():
        assert_golden(f"{folder}/{relative}", text)
    if not os.environ.get("GPUSTACK_UPDATE_GOLDEN"):
        root = GOLDEN / folder
        assert {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} == set(files)


def assert_golden(name: str, text: str) -> None:
    """Compare `text` with tests/golden/<name>; `make golden` rewrites the files."""
    assert _IN_GOLDEN_TEST[0], "a test that compares golden files is marked @pytest.mark.golden"
    path = GOLDEN / name
    if os.environ.get("GPUSTACK_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        _WRITTEN.add(path)
        return
    assert path.exists(), f"no golden file {path.relative_to(ROOT)}: run `make golden` and review it"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"golden/{name}", "now", n=2))
        pytest.fail(f"{name} differs from its golden file (refresh with `make golden` if intended):\n{diff[:6000]}")


@pytest.fixture(autouse=True)
def _no_ci_job_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test is its own run: warnings said once per CI job (RUNNER_TEMP) are said in every test."""
    monkeypatch.delenv("RUNNER_TEMP", raising=False)
    monkeypatch.delenv("GPUSTACK_WARN_ONCE_DIR", raising=False)
