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
