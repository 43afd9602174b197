"""`gpustack.pulumi.GpuPools` in a program of a team's own, which also creates the cluster: run under
mocks with the real provider SDKs, as `pulumi up` would run it."""

from __future__ import annotations

import subprocess
import sys

import pulumi
import pytest

from conftest import EXAMPLE, ROOT
from gpustack.errors import UsageError
from gpustack.files import FileRefused
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import run_program

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
COMPONENT = "gpustack:index:GpuPools"


def platform_program(seen: dict, cluster_name: str = "ml-prod", as_output: bool = True):  # type: ignore[no-untyped-def]
    """What a platform team already has (a provider, a role, the cluster), plus the GPU pools."""

    def program() -> None:
        import pulumi_aws as aws

        from gpustack.pulumi import GpuPools

        provider = aws.Provider("us-east", region="us-east-1")
        role = aws.iam.Role("cluster-role", assume_role_policy="{}", opts=pulumi.ResourceOptions(provider=provider))
        cluster = aws.eks.Cluster("ml-prod", name=cluster_name, role_arn=role.arn,
                                  vpc_config=aws.eks.ClusterVpcConfigArgs(subnet_ids=["subnet-0a1b"]),
                                  opts=pulumi.ResourceOptions(provider=provider))
        gpu = GpuPools("gpu", spec=str(EXAMPLE), target="aws-prod", cluster=cluster.name if as_output else cluster_name,
                       opts=pulumi.ResourceOptions(provider=provider))
        pulumi.export("gpu_pools", gpu.pool_names)
        pulumi.Output.all(gpu.pool_names, gpu.pool_ids, gpu.gpus, gpu.monthly_cost_usd).apply(
            lambda values: seen.update(zip(("names", "ids", "gpus", "cost"), values)))

    return program


@pytest.fixture(scope="module")
def declared():
    seen: dict = {}
    return run_program(str(EXAMPLE), "aws-prod", platform_program(seen)), seen


def test_the_pools_are_children_of_the_component_next_to_the_program_s_own_cluster(declared):
    resources, _ = declared
    by_urn = {r.urn: r for r in resources}
    [component] = [r for r in resources if r.type == COMPONENT]
    plan = build_plan(load_spec(EXAMPLE)).target("aws-prod")
    groups = [r for r in resources if r.type == NODE_GROUP]
    assert sorted(g.inputs["nodeGroupName"] for g in groups) == sorted(p.cloud_name for p in plan.pools)

    def ancestors(r):  # type: ignore[no-untyped-def]
        while r.parent in by_urn:
            r = by_urn[r.parent]
            yield r.urn

    assert all(component.urn in set(ancestors(g)) for g in groups)
    # The program's own resources stay its own.
    [cluster] = [r for r in resources if r.type == "aws:eks/cluster:Cluster"]
    assert "::pulumi:pulumi:Stack::" in cluster.parent


def test_node_groups_wait_for_the_cluster_and_use_the_program_s_provider(declared):
    resources, _ = declared
    [cluster] = [r for r in resources if r.type == "aws:eks/cluster:Cluster"]
    for group in (r for r in resources if r.type == NODE_GROUP):
        assert cluster.urn in group.dependencies, group.name
        assert "pulumi:providers:aws::us-east::" in group.provider  # the program's provider, inherited


def test_typed_outputs_give_both_names_ids_gpus_and_cost(declared):
    _, seen = declared
    plan = build_plan(load_spec(EXAMPLE)).target("aws-prod")
    assert seen["names"] == {p.name: p.cloud_name for p in plan.pools}
    assert sorted(seen["ids"]) == sorted(p.name for p in plan.pools) and all(seen["ids"].values())
    assert (seen["gpus"], seen["cost"]) == (plan.gpus.provisioned, round(plan.cost.planned_monthly_usd, 2))


def test_a_cluster_the_spec_does_not_name_fails_with_a_message():
    with pytest.raises(pulumi.RunError, match="names cluster 'ml-prod' in the spec, but the program passes 'ml-stag"):
        run_program(str(EXAMPLE), "aws-prod", platform_program({}, cluster_name="ml-staging", as_output=False))


def test_a_created_cluster_the_spec_does_not_name_stops_every_pool_where_the_plan_needs_its_name():
    """OKE reads the cluster the spec names before it declares a pool: a created cluster of another id
    is known only once it resolves, and then no pool is created (in a process of its own, since each
    pool's failed registration is reported when the process collects it)."""
    code = (
        "import sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from gpustack import testing\n"
        "from test_component_program import EXAMPLE, oke_program\n"
        "created = testing.RecordingMocks.new_resource\n"
        "import os\n"
        "def new_resource(self, args):\n"
        # One write per line: the mocks register from several threads, and print's pieces interleave.
        "    os.write(1, f'created {args.typ} {args.name}\\n'.encode())\n"
        "    return created(self, args)\n"
        "testing.RecordingMocks.new_resource = new_resource\n"
        "testing.run_program(str(EXAMPLE), 'oci-prod', oke_program())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode != 0
    assert "RunError: gpustack: target 'oci-prod' names cluster 'ocid1.cluster.oc1.iad.aaaaaaaaexampleclusterid' " \
           "in the spec, but the program passes 'team-oke-id'" in result.stderr
    created = sorted({tuple(line.split()[1:3]) for line in result.stdout.splitlines() if line.startswith("created ")})
    # At most the program's own cluster and the (empty) component; no node pool.
    program_own = {("oci:ContainerEngine/cluster:Cluster", "team-oke"), (COMPONENT, "gpu")}
    assert ("oci:ContainerEngine/cluster:Cluster", "team-oke") in created and set(created) <= program_own, created


def test_main_keeps_the_urns_of_stacks_it_declared_before():
    """main() is the component configured from gpustack:spec and gpustack:target; what it declared
    at the stack's root before is aliased there, so no existing pool is replaced."""
    resources = run_program(str(EXAMPLE), "aws-prod")
    [component] = [r for r in resources if r.type == COMPONENT]
    children = [r for r in resources if r.parent == component.urn]
    assert children and all(r.aliases for r in children), [r.name for r in children if not r.aliases]


@pytest.mark.parametrize("raised", [UsageError("--catalog x: refused"), FileRefused("is not a regular file")])
def test_a_usage_error_or_a_refused_file_is_a_run_error_not_a_traceback(monkeypatch, raised):
    import gpustack.pulumi as component

    def refuse(*args, **kwargs):
        raise raised
    monkeypatch.setattr(component, "load_spec", refuse)
    with pytest.raises(pulumi.RunError, match=f"gpustack: {raised}"):
        component.compile_target(EXAMPLE, "aws-prod")


def test_an_unmergeable_live_priority_table_is_a_run_error():
    from gpustack.backends.kubernetes import _merged
    with pytest.raises(pulumi.RunError, match="gpustack: the cluster's k: `priorities` must map priorities"):
        _merged([{"name": "n"}, {"priorities": "- a"}, {"metadata": {"name": "n"}, "data": {"priorities": ""}}], "k")
