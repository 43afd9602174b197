"""Stable resource identities: what defines a pool is the only thing its names depend on.

Replacing a node pool drains production, so these run the real Pulumi program (under mocks) on
every cloud and compare what it declares before and after a change that must not rename anything.
"""

from __future__ import annotations

import copy
import hashlib

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE
from gpustack.clouds import CLOUDS
from gpustack.testing import run_program

EXAMPLE_DOC = yaml.safe_load(EXAMPLE.read_text())
TARGETS = [t["name"] for t in EXAMPLE_DOC["targets"]]


# What the program declares per (spec text, target): the unchanged example is compared in several tests, and
# a run under mocks is the slow part.
_DECLARED: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}


def declared(doc: dict, target: str, tmp_path) -> frozenset[tuple[str, str]]:
    text = yaml.safe_dump(doc, sort_keys=False)
    if (text, target) not in _DECLARED:
        path = tmp_path / f"{target}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.yaml"
        path.write_text(text)
        _DECLARED[text, target] = frozenset((r.type, r.name) for r in run_program(str(path), target))
    return _DECLARED[text, target]


@pytest.mark.parametrize("target", TARGETS)
def test_adding_a_workload_keeps_every_existing_resource(target, tmp_path):
    before = declared(EXAMPLE_DOC, target, tmp_path)
    doc = copy.deepcopy(EXAMPLE_DOC)
    # A workload of its own pool group: one that joins a group may move the group to a cheaper type for
    # all (types are chosen over a pool's workloads together; against a deployed plan only when that
    # saves more than pools.type_change_saving, tests/test_plan.py).
    doc["workloads"].insert(0, {"name": "aa-new-service", "kind": "inference", "gpu": "A100-40GB",
                                "gpu_memory": "10Gi", "cpu": 2, "memory": "8Gi",
                                "replicas": {"min": 1, "max": 3}, "namespace": "serving"})
    for t in doc["targets"]:
        t["workloads"].insert(0, "aa-new-service")
    after = declared(doc, target, tmp_path)
    assert before <= after, sorted(before - after)


@pytest.mark.parametrize("target", TARGETS)
def test_changing_only_labels_changes_no_name(target, tmp_path):
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["labels"]["team"] = "ml-infra"
    doc["labels"]["owner"] = "alice"
    doc["workloads"][0]["labels"]["experiment-id"] = "exp-43"
    assert declared(doc, target, tmp_path) == declared(EXAMPLE_DOC, target, tmp_path)


identities = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", min_size=1,
                     max_size=120)


@settings(max_examples=300, deadline=None)
@given(st.lists(identities, min_size=2, max_size=20, unique=True))
def test_generated_pool_names_are_valid_and_never_collide(names):
    # Long names, shared prefixes, and names differing only in case or punctuation.
    names = names + [n.upper() for n in names] + [n.replace("-", "_") for n in names] + [n + "x" * 80 for n in names]
    names = list(dict.fromkeys(names))
    for cloud in CLOUDS:
        made = [cloud.pool_name(n) for n in names]
        assert all(cloud.pool_names.fits(m) for m in made), cloud.name
        assert len(set(made)) == len(made), (cloud.name, names)
