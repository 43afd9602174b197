"""Three rules of every plan, each tested by name: spot nodes carry their provisioner's taint, pods that
may run on spot carry the checkpointing label, and a shortened pool name ends in a hash of its identity."""

from __future__ import annotations

import hashlib

import pytest

from conftest import TARGETS, spec_text
from gpustack.clouds import CLOUDS, NameRule
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.plan.model import TargetPlan
from gpustack.plan.pools import CHECKPOINTING_LABEL, GPU_TAINT
from gpustack.render.workloads import wiring
from gpustack.spec import load_text

GPUS = ("T4", "A10G", "A10")  # one of them is sold on spot in each cloud's test region


def _plan(cloud: str, checkpointing: bool = True) -> TargetPlan:
    """A training job (on spot when checkpointed), the same job pinned to on-demand, an on-demand
    notebook and an inference service with a reserved floor, on `cloud`."""
    for gpu in GPUS:
        workloads = [{"name": "train", "kind": "training", "gpu": gpu, "checkpointing": checkpointing},
                     {"name": "pinned", "kind": "training", "gpu": gpu, "checkpointing": True,
                      "capacity": "on-demand"},
                     {"name": "lab", "kind": "notebook", "gpu": gpu},
                     {"name": "serve", "kind": "inference", "gpu": gpu, "replicas": {"min": 1, "max": 2}}]
        try:
            target = build_plan(load_text(spec_text(workloads, (cloud,)), "spec.yaml")).targets[0]
        except SpecError:  # the GPU is not sold in the test region
            continue
        if not checkpointing or any(p.capacity == "spot" for p in target.pools):
            return target
    raise AssertionError(f"none of {GPUS} is planned on spot on {cloud}")


def _triples(taints) -> list[tuple[str, str, str]]:
    return [(t.key, t.value, t.effect) for t in taints]


@pytest.mark.parametrize("cloud", sorted(TARGETS))
def test_rule_spot_taint_spot_pools_carry_their_provisioners_taint_and_no_other_pool_does(cloud):
    target = _plan(cloud)
    spot_taint = CLOUDS.get(cloud).provisioner(target.provisioner).spot_taint
    assert spot_taint is not None
    assert {"spot", "on-demand", "reserved"} <= {p.capacity for p in target.pools}
    for pool in target.pools:
        expected = _triples([GPU_TAINT]) + ([spot_taint] if pool.capacity == "spot" else [])
        assert _triples(pool.taints) == expected, pool.name
    [train] = [r for r in target.pod_requests if r.workload == "train"]
    assert (spot_taint[0], spot_taint[2]) in {(t.key, t.effect) for t in train.tolerations}


@pytest.mark.parametrize("cloud", sorted(TARGETS))
def test_rule_pod_label_only_checkpointed_pods_that_may_run_on_spot_carry_the_checkpointing_label(cloud):
    target = _plan(cloud)
    labels = {r.workload: wiring(target, r).pod_labels for r in target.pod_requests}
    assert labels["train"][CHECKPOINTING_LABEL] == "true"
    # On on-demand only: nothing for a disruption policy to spare, whether it checkpoints or not.
    assert CHECKPOINTING_LABEL not in labels["pinned"] and CHECKPOINTING_LABEL not in labels["lab"]
    uncheckpointed = _plan(cloud, checkpointing=False)
    assert all(CHECKPOINTING_LABEL not in wiring(uncheckpointed, r).pod_labels for r in uncheckpointed.pod_requests)


def test_rule_pool_name_hash_a_shortened_name_ends_in_a_hash_of_the_whole_identity():
    rule = NameRule(20, r"[a-z][a-z0-9-]{0,19}", "-", "a limit for this test")
    readable = "inference-reserved-a100-80gb-3g40gb"
    name = rule.make("target-a/inference-reserved-a100", readable)
    assert name == "inference-r-" + hashlib.sha256(b"target-a/inference-reserved-a100").hexdigest()[:8]
    # The same readable text under another identity: another name (the hash is not of the shortened text).
    other = rule.make("target-b/inference-reserved-a100", readable)
    assert other != name and other.startswith("inference-r-")
    # A name that fits is kept as it is, with no hash.
    assert rule.make("anything", "train-h100") == "train-h100"
