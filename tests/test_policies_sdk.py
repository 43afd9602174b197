"""The props the pack reads are the ones the real SDK resources send.

One node pool per cloud (plus an EKS schedule and an auto-stop CronJob) is declared with the provider
SDKs under Pulumi mocks; the recorded inputs, as the engine would hand them to a policy, go through
the pack. A reader that looked for a prop under the wrong name would see no spot capacity, no labels
or no taint here, and these tests would fail.
"""

from __future__ import annotations

import base64

import pytest
from pulumi_policy import (PolicyResource, PolicyResourceOptions, ResourceValidationArgs, ResourceValidationPolicy,
                           StackValidationArgs)

from conftest import EXAMPLE
from gpustack.guardrails.policy_pack import plain, policies
from gpustack.guardrails.resources import pool_view
from gpustack.testing import outputs, run_program

LABELS = {"team": "ml-platform", "environment": "prod", "gpustack.dev/kind": "training",
          "gpustack.dev/checkpointing": "true"}
TAINT_SCRIPT = ('#!/bin/bash\nbash /var/run/oke-init.sh --kubelet-extra-args '
                '"--register-with-taints=nvidia.com/gpu=present:NoSchedule,'
                'oci.oraclecloud.com/oke-is-preemptible=present:NoSchedule"\n')


def _labels(pool: str) -> dict[str, str]:
    return {**LABELS, "gpustack.dev/pool": pool}


def _declare() -> None:
    import pulumi_aws as aws
    import pulumi_azure_native as azure
    import pulumi_gcp as gcp
    import pulumi_kubernetes as k8s
    import pulumi_oci as oci

    group = aws.eks.NodeGroup(
        "eks-train", cluster_name="ml-prod", node_role_arn="arn:aws:iam::123456789012:role/nodes",
        subnet_ids=["subnet-0a1b"], node_group_name="eks-train", capacity_type="SPOT", instance_types=["p5.48xlarge"],
        ami_type="AL2023_x86_64_NVIDIA", labels=_labels("eks-train"),
        taints=[aws.eks.NodeGroupTaintArgs(key="nvidia.com/gpu", value="present", effect="NO_SCHEDULE")],
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=0, max_size=2, desired_size=0))
    aws.autoscaling.Schedule(
        "eks-train-stop", autoscaling_group_name=group.resources[0].autoscaling_groups[0].name,
        scheduled_action_name="stop", recurrence="0 18 * * MON-FRI", time_zone="Europe/Berlin",
        min_size=0, max_size=0, desired_capacity=0)
    gcp.container.NodePool(
        "gke-train", cluster="ml-prod", location="us-central1", name="gke-train",
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type="a2-ultragpu-1g", spot=True, labels=_labels("gke-train"),
            taints=[gcp.container.NodePoolNodeConfigTaintArgs(key="nvidia.com/gpu", value="present",
                                                              effect="NO_SCHEDULE")],
            guest_accelerators=[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(type="nvidia-a100-80gb",
                                                                                     count=1)]),
        autoscaling=gcp.container.NodePoolAutoscalingArgs(total_min_node_count=0, total_max_node_count=2))
    azure.containerservice.AgentPool(
        "aks-train", resource_group_name="rg-ml", resource_name_="ml-prod", agent_pool_name="akstrain",
        vm_size="Standard_NC24ads_A100_v4", mode="User", scale_set_priority="Spot", scale_set_eviction_policy="Delete",
        spot_max_price=-1, node_labels=_labels("aks-train"),
        node_taints=["nvidia.com/gpu=present:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"],
        enable_auto_scaling=True, min_count=0, max_count=2, count=0)
    ce = oci.containerengine
    placement = ce.NodePoolNodeConfigDetailsPlacementConfigArgs(
        availability_domain="Uocm:US-ASHBURN-AD-1", subnet_id="ocid1.subnet.oc1.iad.aaaa",
        preemptible_node_config=ce.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigArgs(
            preemption_action=ce.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigPreemptionActionArgs(
                type="TERMINATE")))
    ce.NodePool(
        "oke-train", cluster_id="ocid1.cluster.oc1.iad.aaaa", compartment_id="ocid1.compartment.oc1..aaaa",
        name="oke-train", node_shape="VM.GPU.A10.1",
        initial_node_labels=[ce.NodePoolInitialNodeLabelArgs(key=k, value=v) for k, v in _labels("oke-train").items()],
        node_config_details=ce.NodePoolNodeConfigDetailsArgs(size=0, placement_configs=[placement]),
        node_metadata={"user_data": base64.b64encode(TAINT_SCRIPT.encode()).decode()})
    k8s.batch.v1.CronJob(
        "gke-train-stop",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name="gke-train-stop", namespace="gpustack-system", labels={"gpustack.dev/pool": "gke-train"}
        ),
        spec=k8s.batch.v1.CronJobSpecArgs(
            schedule="0 18 * * 1-5",
            time_zone="Europe/Berlin",
            job_template=k8s.batch.v1.JobTemplateSpecArgs(
                spec=k8s.batch.v1.JobSpecArgs(
                    template=k8s.core.v1.PodTemplateSpecArgs(
                        spec=k8s.core.v1.PodSpecArgs(
                            restart_policy="Never",
                            containers=[k8s.core.v1.ContainerArgs(name="stop", image="bitnami/kubectl")],
                        )
                    )
                )
            ),
        ),
    )


@pytest.fixture(scope="module")
def declared():
    return {d.name: d for d in run_program(str(EXAMPLE), "aws-prod", program=_declare)}


EXPECTED = {  # name -> (instance type, GPUs per node, declared taints besides the GPU one)
    "eks-train": ("p5.48xlarge", 8), "gke-train": ("a2-ultragpu-1g", 1),
    "aks-train": ("Standard_NC24ads_A100_v4", 1), "oke-train": ("VM.GPU.A10.1", 1),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_reader_finds_every_field_in_the_sdk_inputs(declared, name):
    d = declared[name]
    view = pool_view(d.type, d.inputs, d.urn, d.name)
    assert view is not None
    instance, gpus = EXPECTED[name]
    assert (view.instance_type, view.gpus_per_node, view.is_gpu) == (instance, gpus, True)
    assert view.capacities == {"spot"} and view.kind == "training" and view.checkpointing is True
    assert view.labels["team"] == "ml-platform" and view.pool_label == name
    assert any(t.key == "nvidia.com/gpu" and t.effect == "NoSchedule" for t in view.taints)
    assert (view.min_nodes, view.max_nodes) == ((0, 0) if name == "oke-train" else (0, 2))
    assert view.usd_per_node_hour and view.unknown == frozenset()


def _resource(d, dependencies=()) -> PolicyResource:
    props = dict(d.inputs)
    if d.type in outputs():  # a stack policy sees outputs: the inputs plus what the cloud computed
        props.update(outputs()[d.type](d.name, props))
    return PolicyResource(d.type, props, d.urn, d.name, PolicyResourceOptions(False, [], None, [], None, [], None),
                          None, None, list(dependencies), {})


def test_compliant_sdk_resources_pass_every_policy(declared):
    messages: list[str] = []
    report = lambda message, urn=None: messages.append(message)
    for policy in policies():
        if policy.name == "node-pool-replacement":
            continue  # advisory: unprotected pools are exposed to replacement (tested in test_policies)
        if isinstance(policy, ResourceValidationPolicy):
            for d in declared.values():
                policy.validate(ResourceValidationArgs(d.type, d.inputs, d.urn, d.name, None, None), report)
        else:  # the budget with a cap the pools stay under; the training pools are no dev pools
            config = {"maxGpus": 100, "maxMonthlyUsd": 1_000_000} if policy.name == "stack-gpu-budget" else None
            policy.validate(StackValidationArgs([_resource(d) for d in declared.values()], config), report)
    assert messages == []


def test_schedules_declared_with_the_sdks_are_found(declared):
    auto_stop = next(p for p in policies() if p.name == "dev-pool-auto-stop")
    resources = [_resource(d) for d in declared.values()]
    messages: list[str] = []
    config = {"kinds": ["training"]}  # treat the training pools as dev pools: two of them have schedules
    auto_stop.validate(StackValidationArgs(resources, config), lambda m, urn=None: messages.append(m))
    flagged = sorted(m.split(", pool ")[1].split(":")[0] for m in messages)
    assert flagged == ["aks-train", "oke-train"]  # eks-train has its ASG schedule, gke-train its CronJob


def test_plain_reads_through_the_engine_proxies():
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

    from gpustack.guardrails.view import UNKNOWN

    props = unknown_checking_proxy({"a": [{"b": UNKNOWN_STRING_VALUE}, 1.0], "c": "x"})
    assert plain(props) == {"a": [{"b": UNKNOWN}, 1.0], "c": "x"}
