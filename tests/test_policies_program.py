"""The pack on what gpustack's own Pulumi program declares (real SDKs under mocks), and its agreement
with `gpustack check`: the example passes both; a spec that breaks a rule fails both, with that rule."""

from __future__ import annotations

import pytest
from pulumi_policy import (PolicyResource, PolicyResourceOptions, ResourceValidationArgs, ResourceValidationPolicy,
                           StackValidationArgs)

from conftest import EVERY_CLOUD, EXAMPLE, spec_text
from gpustack.guardrails import evaluate, settings
from gpustack.guardrails.from_plan import plan_views
from gpustack.guardrails.policy_pack import policies
from gpustack.guardrails.resources import pool_view
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import outputs, run_program

KUBECONFIG = {"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"}  # declares the in-cluster auto-stop too
LABELS = {"team": "ml-platform", "environment": "prod"}


def pack_verdicts(spec: str, target: str) -> tuple[list[tuple[str, str]], int]:
    """(policy, message) for every violation the pack finds in the target's stack, and its GPU pools."""
    declared = run_program(spec, target, config=KUBECONFIG)
    found: list[tuple[str, str]] = []
    resources = []
    for d in declared:
        props = dict(d.inputs)
        if d.type in outputs():  # a stack policy sees outputs: the inputs plus what the cloud computed
            props.update(outputs()[d.type](d.name, props))
        opts = PolicyResourceOptions(False, list(d.ignore_changes), None, [], None, [], None)
        resources.append(PolicyResource(d.type, props, d.urn, d.name, opts, None, None, [], {}))
    for policy in policies():
        def report(message, urn=None, name=policy.name):
            found.append((name, message))
        if isinstance(policy, ResourceValidationPolicy):
            for r in resources:
                policy.validate(ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, r.opts, None), report)
        else:
            policy.validate(StackValidationArgs(resources), report)
    pools = [v for d in declared if (v := pool_view(d.type, d.inputs, d.urn, d.name)) and v.is_gpu]
    return found, len(pools)


@pytest.mark.parametrize("target", ["aws-prod", "azure-prod", "gcp-prod", "oci-prod"])
def test_the_example_stacks_pass_the_pack(target):
    found, gpu_pools = pack_verdicts(str(EXAMPLE), target)
    assert gpu_pools == len(build_plan(load_spec(EXAMPLE)).target(target).pools)  # the pack sees every pool
    mandatory = [message for name, message in found if name != "node-pool-replacement"]
    assert mandatory == []


CASES = {  # cloud -> GPU that runs as spot and as a notebook there
    "aws": "A100-80GB", "gcp": "A100-80GB", "azure": "A10", "oci": "A10",
}


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
def test_check_and_the_pack_fail_the_same_spec_with_the_same_rules(tmp_path, cloud):
    gpu = CASES[cloud]
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([
        {"name": "ranker", "kind": "training", "gpu": gpu, "capacity": "spot"},  # no checkpointing
        {"name": "lab", "kind": "notebook", "gpu": gpu, "gpu_fraction": 0.5, "replicas": 2},  # no schedule
    ], (cloud,), labels=LABELS))
    plan = build_plan(load_spec(spec))
    target = plan.targets[0].name
    by_check = sorted({v.rule for v in evaluate(plan_views(plan), settings()) if v.level == "mandatory"})
    found, _ = pack_verdicts(str(spec), target)
    by_pack = sorted({name for name, _ in found if name != "node-pool-replacement"})
    assert by_check == by_pack == ["dev-pool-auto-stop", "spot-gpu-pool-checkpointing"]


@pytest.mark.parametrize("target", ["aws-prod", "azure-prod", "gcp-prod", "oci-prod"])
def test_the_pack_reads_each_pools_capacity_as_the_program_declares_it(target):
    # The wire names differ per SDK (azure-native spells capacityReservationGroupID): read from the
    # program's own resources, every pool's capacity matches the plan's.
    plan_pools = build_plan(load_spec(EXAMPLE)).target(target).pools
    # An EKS node group is ON_DEMAND whether or not its launch template targets a reservation (a
    # separate resource), so the pack reads an EKS floor as on-demand: priced high, never low.
    expected = sorted("on-demand" if target == "aws-prod" and p.capacity == "reserved" else p.capacity
                      for p in plan_pools)
    declared = run_program(str(EXAMPLE), target)
    views = [v for d in declared if (v := pool_view(d.type, d.inputs, d.urn, d.name)) and v.is_gpu]
    assert sorted(c for v in views for c in v.capacities) == expected
