"""A user catalog is data from a possibly hostile pull request: its header is never echoed raw, and a
spec cannot make gpustack read a file outside its own folder (the runner's environment, /etc/passwd)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import spec_text
from gpustack.cli import main

ATTACKS = Path(__file__).parent / "fixtures" / "attacks"
TRAIN = {"name": "train", "kind": "training", "gpu": "A10G", "gpus": 1, "replicas": 2, "checkpointing": True}


def spec_file(tmp_path: Path, **top) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(spec_text([TRAIN], **top))
    return path


@pytest.mark.parametrize("attack", ["catalog-terminal-header.csv", "catalog-environ.csv", "catalog-passwd.csv"])
def test_a_hostile_catalog_header_is_refused_without_echoing_it(tmp_path, capsys, attack):
    assert main(["validate", str(spec_file(tmp_path)), "--catalog", str(ATTACKS / attack)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\x00" not in err
    for secret in ("hunter2", "MYSECRET", "root:x", "/bin/bash", "owned"):
        assert secret not in err
    assert f"{ATTACKS / attack}:1:" in err  # still located


def test_the_environment_is_not_shown_through_a_catalog(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPUSTACK_TEST_SECRET", "s3cr3t-value")
    assert main(["validate", str(spec_file(tmp_path)), "--catalog", "/proc/self/environ"]) == 2
    assert "s3cr3t-value" not in capsys.readouterr().err


@pytest.mark.parametrize("written", ["/proc/self/environ", "../../../../../../etc/passwd", "link/passwd"])
def test_a_spec_catalog_outside_the_spec_folder_is_refused(tmp_path, capsys, written):
    os.symlink("/etc", tmp_path / "link")
    assert main(["validate", str(spec_file(tmp_path, catalog=written))]) == 2
    err = capsys.readouterr().err
    assert "outside the spec's folder" in err and "--catalog FILE" in err
    assert "root:" not in err
