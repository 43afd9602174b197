"""A team's own Pulumi program that creates its cluster with auto-naming and adds `GpuPools`, as
docs/component.md shows it: run under mocks with the real provider SDKs (`gpustack.testing.run_program`)."""

from __future__ import annotations

import pulumi
import pytest

from conftest import EXAMPLE
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import auto_name, run_program

PLAN = build_plan(load_spec(EXAMPLE))
KUBECONFIG = '{"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []}'


def eks_program(as_output: bool = False, **options):  # type: ignore[no-untyped-def]
    """The program of docs/component.md: an auto-named EKS cluster, a node role of its own, GpuPools."""

    def program() -> None:
        import pulumi_aws as aws
        import pulumi_kubernetes as k8s

        from gpustack.pulumi import GpuPools

        cluster_role = aws.iam.Role("cluster-role", assume_role_policy="{}")
        cluster = aws.eks.Cluster("team-cluster", role_arn=cluster_role.arn,
                                  vpc_config=aws.eks.ClusterVpcConfigArgs(subnet_ids=["subnet-0a1b", "subnet-0c2d"]))
        nodes = aws.iam.Role("team-nodes", assume_role_policy="{}")
        kubernetes = k8s.Provider("team-cluster", kubeconfig=KUBECONFIG)
        gpu = GpuPools("gpu", spec=str(EXAMPLE), target="aws-prod", cluster=cluster.name if as_output else cluster,
                       kubernetes=kubernetes, node_role=nodes.arn, **options)
        pulumi.export("gpu_pools", gpu.pool_names)

    return program


def _of(resources, kind: str):  # type: ignore[no-untyped-def]
    return [r for r in resources if r.type == kind]


@pytest.mark.parametrize("as_output", [False, True], ids=["resource", "output"])
def test_an_auto_named_eks_cluster_gets_the_node_groups(as_output):
    resources = run_program(str(EXAMPLE), "aws-prod", eks_program(as_output))
    [cluster] = _of(resources, "aws:eks/cluster:Cluster")
    groups = _of(resources, "aws:eks/nodeGroup:NodeGroup")
    assert len(groups) == len(PLAN.target("aws-prod").pools)
    assert {g.inputs["clusterName"] for g in groups} == {auto_name("team-cluster")}
    assert auto_name("team-cluster") != PLAN.target("aws-prod").cluster
    assert all(cluster.urn in g.dependencies for g in groups), "the pools wait for the cluster"
    # node_role: the program's role, and none of gpustack's
    assert {g.inputs["nodeRoleArn"] for g in groups} == {"arn:aws:iam::123456789012:role/team-nodes"}
    assert [r.name for r in _of(resources, "aws:iam/role:Role")] == ["cluster-role", "team-nodes"]
    assert not _of(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")


def _in_cluster(resources) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    by_kind: dict[str, list[str]] = {}
    for r in resources:
        if r.type.startswith("kubernetes:") and r.custom and r.type != "pulumi:providers:kubernetes":
            kind = r.inputs.get("kind") or r.type.rsplit(":", 1)[-1]
            by_kind.setdefault(kind, []).append(r.name)
    return by_kind


def test_left_out_parts_are_absent_and_the_rest_stays():
    everything = _in_cluster(run_program(str(EXAMPLE), "aws-prod", eks_program()))
    assert everything["Release"] and everything["PrometheusRule"] and everything["CronJob"], "present by default"
    left = _in_cluster(run_program(str(EXAMPLE), "aws-prod",
                                   eks_program(gpu_operator=False, autostop=False, alerts=False)))
    assert "Release" not in left and "PrometheusRule" not in left
    assert not [n for n in left.get("CronJob", []) if "-stop-" in n or "-start-" in n], "no auto-stop CronJobs"
    assert "gpu-operator" not in left.get("Namespace", []) and "gpustack-system" not in left.get("Namespace", [])
    # The NVIDIA sharing configs stay: the team's own operator reads them.
    assert [n for n in left["ConfigMap"] if n.startswith("gpu-operator/")] == \
        [n for n in everything["ConfigMap"] if n.startswith("gpu-operator/")]


def test_an_auto_named_aks_cluster_gets_the_agent_pools():
    def program() -> None:
        import pulumi_azure_native as azure_native

        from gpustack.pulumi import GpuPools

        cluster = azure_native.containerservice.ManagedCluster("team-aks", resource_group_name="ml-platform",
                                                               dns_prefix="team")
        GpuPools("gpu", spec=str(EXAMPLE), target="azure-prod", cluster=cluster)

    resources = run_program(str(EXAMPLE), "azure-prod", program)
    pools = _of(resources, "azure-native:containerservice:AgentPool")
    assert len(pools) == len(PLAN.target("azure-prod").pools)
    assert {p.inputs["resourceName"] for p in pools} == {auto_name("team-aks")}


def test_an_auto_named_gke_cluster_gets_the_node_pools():
    def program() -> None:
        import pulumi_gcp as gcp

        from gpustack.pulumi import GpuPools

        cluster = gcp.container.Cluster("team-gke", location="us-central1", initial_node_count=1)
        GpuPools("gpu", spec=str(EXAMPLE), target="gcp-prod", cluster=cluster)

    resources = run_program(str(EXAMPLE), "gcp-prod", program)
    pools = _of(resources, "gcp:container/nodePool:NodePool")
    assert len(pools) == len(PLAN.target("gcp-prod").pools)
    assert {p.inputs["cluster"] for p in pools} == {auto_name("team-gke")}


def oke_program():  # type: ignore[no-untyped-def]
    """OKE: a created cluster whose OCID the spec does not name (the backend reads the cluster first)."""

    def program() -> None:
        import pulumi_oci as oci

        from gpustack.pulumi import GpuPools

        cluster = oci.containerengine.Cluster("team-oke", compartment_id="ocid1.compartment.oc1..team",
                                              kubernetes_version="v1.31.1", vcn_id="ocid1.vcn.oc1.iad.team")
        GpuPools("gpu", spec=str(EXAMPLE), target="oci-prod", cluster=cluster)

    return program


def test_node_role_on_a_cloud_without_one_is_a_run_error():
    def program() -> None:
        from gpustack.pulumi import GpuPools

        GpuPools("gpu", spec=str(EXAMPLE), target="gcp-prod", node_role="x")

    with pytest.raises(pulumi.RunError, match="GKE node pools take no identity of their own from gpustack"):
        run_program(str(EXAMPLE), "gcp-prod", program)


def test_karpenter_on_eks_checks_a_created_cluster_against_the_spec(tmp_path):
    """Its EC2NodeClass finds subnets by the tag karpenter.sh/discovery: <the spec's cluster>: an auto-named
    cluster would leave the NodePools without nodes, so the program stops with the reason."""
    from conftest import karpenter_example_text

    spec = tmp_path / "gpustack.yaml"
    spec.write_text(karpenter_example_text(), encoding="utf-8")

    def program() -> None:
        import pulumi_aws as aws
        import pulumi_kubernetes as k8s

        from gpustack.pulumi import GpuPools

        cluster = aws.eks.Cluster("team-cluster", role_arn="arn:aws:iam::123456789012:role/c",
                                  vpc_config=aws.eks.ClusterVpcConfigArgs(subnet_ids=["subnet-0a1b"]))
        GpuPools("gpu", spec=str(spec), target="aws-karpenter", cluster=cluster,
                 kubernetes=k8s.Provider("team-cluster", kubeconfig=KUBECONFIG))

    with pytest.raises(Exception, match=r"karpenter\.sh/discovery") as info:
        run_program(str(spec), "aws-karpenter", program)
    assert f"passes '{auto_name('team-cluster')}'" in str(info.value)
