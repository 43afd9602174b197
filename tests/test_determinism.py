"""Same input, byte-identical output: across runs, hash seeds, and any reordering of the spec."""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys

import pytest
import yaml

from conftest import EXAMPLE, ROOT
from gpustack.plan import build_plan
from gpustack.spec import load_text

EXAMPLE_DOC = yaml.safe_load(EXAMPLE.read_text())


def shuffled(value: object, rng: random.Random) -> object:
    """The same document with every mapping's keys and the targets/workloads lists reordered."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def plan_json(doc: dict) -> str:
    return build_plan(load_text(yaml.safe_dump(doc, sort_keys=False))).to_json()


@pytest.mark.parametrize("seed", range(6))
def test_reordered_keys_workloads_and_targets_give_the_same_plan(seed):
    rng = random.Random(seed)
    doc = shuffled(copy.deepcopy(EXAMPLE_DOC), rng)
    rng.shuffle(doc["workloads"])
    rng.shuffle(doc["targets"])
    for target in doc["targets"]:
        rng.shuffle(target["workloads"])
    assert plan_json(doc) == plan_json(EXAMPLE_DOC)


def test_plan_is_identical_across_hash_seeds():
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-m", "gpustack", "plan", str(EXAMPLE), "--format", "json"],
                                capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1


def _tree(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", [
    ["render", str(EXAMPLE), "--target", "aws-prod", "--out"],
    ["new", "--name", "ml-platform"],
])
def test_rendered_files_and_projects_are_identical_across_hash_seeds(command, tmp_path):
    trees = []
    for seed in ("0", "7"):
        out = tmp_path / f"out-{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-m", "gpustack", *command, str(out)], capture_output=True,
                                text=True, cwd=ROOT, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        trees.append(_tree(out))
    assert trees[0] == trees[1] and trees[0]


def test_rendered_files_do_not_depend_on_the_order_of_the_spec(tmp_path):
    from gpustack.render import in_cluster
    from gpustack.render.files import render_files

    rng = random.Random(3)
    doc = shuffled(copy.deepcopy(EXAMPLE_DOC), rng)
    rng.shuffle(doc["workloads"])
    rng.shuffle(doc["targets"])
    plans = [build_plan(load_text(text)) for text in (yaml.safe_dump(doc, sort_keys=False), EXAMPLE.read_text())]
    for target in ("aws-prod", "azure-prod", "gcp-prod", "oci-prod"):
        files = [render_files(in_cluster(p, p.target(target))) for p in plans]
        assert files[0] == files[1], target
