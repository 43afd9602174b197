"""The Pulumi program declares exactly the objects `gpustack render` writes (mocks, real SDKs)."""

from __future__ import annotations

import pytest
from pulumi.runtime import rpc

from conftest import EXAMPLE
from gpustack.plan import build_plan
from gpustack.render import in_cluster
from gpustack.spec import load_spec
from gpustack.testing import run_program

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
KUBECONFIG = {"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"}


def plain(value):
    """Mock inputs arrive with ints as floats; make them comparable with the rendered dicts."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def declared_objects(resources) -> tuple[list[dict], list]:
    objects, releases = [], []
    for r in resources:
        if r.type == "kubernetes:helm.sh/v3:Release":
            releases.append(r)
        elif r.type.startswith("kubernetes:"):
            objects.append(plain(dict(r.inputs)))
    return objects, releases


@pytest.mark.parametrize("target", [t.name for t in EXAMPLE_PLAN.targets])
def test_pulumi_declares_the_rendered_objects(target):
    rendered = in_cluster(EXAMPLE_PLAN, EXAMPLE_PLAN.target(target))
    resources = run_program(str(EXAMPLE), target, config=KUBECONFIG)
    objects, releases = declared_objects(resources)
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
    assert sorted(objects, key=key) == sorted((plain(o) for o in rendered.objects), key=key)
    # The provider gets the kubeconfig, and keeps it secret.
    [provider] = [r for r in resources if r.type == "pulumi:providers:kubernetes"]
    assert provider.inputs["kubeconfig"] == {rpc._special_sig_key: rpc._special_secret_sig,
                                             "value": KUBECONFIG["gpustack:kubeconfig"]}
    # An object the cluster already has (its own priority-expander ConfigMap) is refused, not replaced.
    assert provider.inputs["upsertExistingObjects"] in (False, "false")
    assert provider.inputs["enablePatchForce"] in (False, "false")
    if rendered.operator is None:
        assert releases == []
        return
    [release] = releases
    inputs = plain(release.inputs)
    assert inputs["values"] == rendered.operator.values
    assert (inputs["chart"], inputs["version"], inputs["namespace"], inputs["name"]) == (
        rendered.operator.chart, rendered.operator.version, rendered.operator.namespace, rendered.operator.name)
    assert inputs["repositoryOpts"] == {"repo": rendered.operator.repository}


def test_without_a_kubeconfig_the_in_cluster_layer_is_skipped():
    resources = run_program(str(EXAMPLE), "aws-prod")
    assert not [r for r in resources if r.type.startswith(("kubernetes:", "pulumi:providers:kubernetes"))]


def test_the_admission_policy_comes_before_the_rbac_it_limits():
    """A Role granting `patch` on whole Jobs, CronJobs or Notebooks waits for the ValidatingAdmissionPolicy and
    its binding (Pulumi path), and sorts after them in rendered files: never a window with the grant alone."""
    resources = run_program(str(EXAMPLE), "aws-prod", config=KUBECONFIG)
    admission = {r.urn for r in resources if r.type.startswith("kubernetes:admissionregistration.k8s.io/v1:"
                                                                "ValidatingAdmissionPolicy")}
    assert len(admission) == 2
    rbac = [r for r in resources if r.type in ("kubernetes:rbac.authorization.k8s.io/v1:Role",
                                               "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")]
    assert rbac and all(admission <= set(r.dependencies) for r in rbac)
    from gpustack.plan import build_plan
    from gpustack.render import in_cluster
    from gpustack.spec import load_spec
    plan = build_plan(load_spec(EXAMPLE))
    kinds = [o["kind"] for o in in_cluster(plan, plan.target("aws-prod")).objects]
    assert kinds.index("ValidatingAdmissionPolicyBinding") < kinds.index("Role")
