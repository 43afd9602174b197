"""The policy pack, called as the engine calls it: each policy's validate with the props of each cloud's
node-pool resource (camelCase keys, numbers as floats), without starting the policy server.

A `Pool` describes a node pool once; `render` writes it as the props of EKS, GKE, AKS and OKE. Each
rule has one passing and one failing pool, checked on every cloud.
"""

from __future__ import annotations

import base64
import dataclasses

import pytest
from pulumi_policy import (PolicyResource, PolicyResourceOptions, ResourceValidationArgs, ResourceValidationPolicy,
                           StackValidationArgs, StackValidationPolicy)

from gpustack.clouds import CLOUDS
from gpustack.guardrails.policy_pack import PACK_NAME, policies

POLICIES = {p.name: p for p in policies()}
CLOUD_NAMES = CLOUDS.names()
STACK = "prod"
TEAM = {"team": "ml-platform", "environment": "prod"}


@dataclasses.dataclass(frozen=True)
class Pool:
    name: str = "train-h100"
    kind: str | None = "training"
    capacity: str = "on-demand"  # spot | on-demand
    labels: tuple[tuple[str, str], ...] = tuple(TEAM.items())
    checkpointing: str | None = None
    gpu_taint: bool = True
    min_nodes: int = 0
    max_nodes: int = 2
    instance: str | None = None  # default: a catalog GPU type of the cloud

    def node_labels(self) -> dict[str, str]:
        out = dict(self.labels)
        if self.kind:
            out.update({"gpustack.dev/kind": self.kind, "gpustack.dev/pool": self.name})
        if self.checkpointing is not None:
            out["gpustack.dev/checkpointing"] = self.checkpointing
        return out


TOKENS = {"aws": "aws:eks/nodeGroup:NodeGroup", "gcp": "gcp:container/nodePool:NodePool",
          "azure": "azure-native:containerservice:AgentPool", "oci": "oci:ContainerEngine/nodePool:NodePool"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}


def _eks(p: Pool) -> dict:
    return {
        "clusterName": "ml-prod",
        "nodeRoleArn": "arn:aws:iam::123456789012:role/nodes",
        "subnetIds": ["subnet-0a1b"],
        "nodeGroupName": p.name,
        "instanceTypes": [p.instance or "p5.48xlarge"],
        "amiType": "AL2023_x86_64_NVIDIA",
        "capacityType": "SPOT" if p.capacity == "spot" else "ON_DEMAND",
        "labels": p.node_labels(),
        "taints": [GPU_TAINT] if p.gpu_taint else [],
        "tags": dict(p.labels),
        "scalingConfig": {
            "minSize": float(p.min_nodes),
            "maxSize": float(p.max_nodes),
            "desiredSize": float(p.min_nodes),
        },
    }


def _gke(p: Pool) -> dict:
    return {"cluster": "ml-prod", "location": "us-central1", "name": p.name,
            "nodeConfig": {"machineType": p.instance or "a2-ultragpu-1g", "spot": p.capacity == "spot",
                           "labels": p.node_labels(), "resourceLabels": dict(p.labels),
                           "taints": [GPU_TAINT] if p.gpu_taint else [],
                           "guestAccelerators": [{"type": "nvidia-a100-80gb", "count": 1.0}]},
            "autoscaling": {"totalMinNodeCount": float(p.min_nodes), "totalMaxNodeCount": float(p.max_nodes)}}


def _aks(p: Pool) -> dict:
    return {"resourceGroupName": "rg-ml", "resourceName": "ml-prod", "agentPoolName": p.name.replace("-", "")[:12],
            "vmSize": p.instance or "Standard_NC24ads_A100_v4", "mode": "User",
            "scaleSetPriority": "Spot" if p.capacity == "spot" else "Regular", "nodeLabels": p.node_labels(),
            "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"] if p.gpu_taint else [], "tags": dict(p.labels),
            "enableAutoScaling": True, "minCount": float(p.min_nodes), "maxCount": float(p.max_nodes)}


def _oke(p: Pool) -> dict:
    taints = "nvidia.com/gpu=present:NoSchedule" if p.gpu_taint else "dedicated=ml:NoSchedule"
    script = (
        '#!/bin/bash\ncurl --fail -H "Authorization: Bearer Oracle" -L0 '
        "http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode >/var/run/oke-init.sh\n"
        f'bash /var/run/oke-init.sh --kubelet-extra-args "--register-with-taints={taints}"\n'
    )
    placement = {"availabilityDomain": "Uocm:US-ASHBURN-AD-1", "subnetId": "ocid1.subnet.oc1.iad.aaaa"}
    if p.capacity == "spot":
        placement["preemptibleNodeConfig"] = {"preemptionAction": {"type": "TERMINATE", "isPreserveBootVolume": False}}
    # An OKE pool has a size and no autoscaling bounds: the nodes it runs now (the minimum).
    size = p.min_nodes if p.min_nodes or p.kind == "notebook" else p.max_nodes
    return {"clusterId": "ocid1.cluster.oc1.iad.aaaa", "compartmentId": "ocid1.compartment.oc1..aaaa", "name": p.name,
            "nodeShape": p.instance or "VM.GPU.A10.1",
            "initialNodeLabels": [{"key": k, "value": v} for k, v in p.node_labels().items()],
            "nodeConfigDetails": {"size": float(size), "placementConfigs": [placement]},
            "nodeMetadata": {"user_data": base64.b64encode(script.encode()).decode()}, "freeformTags": dict(p.labels)}


RENDER = {"aws": _eks, "gcp": _gke, "azure": _aks, "oci": _oke}


def urn(token: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::ml::{token}::{name}"


def validate_resource(policy_name: str, cloud: str, pool: Pool, config: dict | None = None) -> list[str]:
    policy = POLICIES[policy_name]
    assert isinstance(policy, ResourceValidationPolicy)
    token = TOKENS[cloud]
    args = ResourceValidationArgs(resource_type=token, props=RENDER[cloud](pool), urn=urn(token, pool.name),
                                  name=pool.name, opts=None, provider=None, config=config, stack_tags=None)
    messages: list[str] = []
    policy.validate(args, lambda message, urn=None: messages.append(message))
    return messages


def resource(token: str, name: str, props: dict, dependencies: list[PolicyResource] = (),  # type: ignore[assignment]
             property_dependencies: dict | None = None, protect: bool = False) -> PolicyResource:
    opts = PolicyResourceOptions(protect, [], None, [], None, [], None)
    return PolicyResource(token, props, urn(token, name), name, opts, None, None, list(dependencies),
                          property_dependencies or {})


def pool_resource(cloud: str, pool: Pool) -> PolicyResource:
    return resource(TOKENS[cloud], pool.name, RENDER[cloud](pool))


def validate_stack(
    policy_name: str, resources: list[PolicyResource], config: dict | None = None
) -> list[tuple[str, str | None]]:
    policy = POLICIES[policy_name]
    assert isinstance(policy, StackValidationPolicy)
    found: list[tuple[str, str | None]] = []
    policy.validate(StackValidationArgs(resources, config), lambda message, urn=None: found.append((message, urn)))
    return found


# -- the pack ------------------------------------------------------------------------------------------
def test_the_pack_has_one_policy_per_rule_with_its_level():
    assert PACK_NAME == "gpustack-guardrails"
    levels = {name: p.enforcement_level.value for name, p in POLICIES.items()}
    assert levels == {"gpu-pool-taint": "mandatory", "gpu-pool-attribution-labels": "mandatory",
                      "spot-gpu-pool-checkpointing": "mandatory", "inference-pool-not-spot-only": "mandatory",
                      "dev-pool-auto-stop": "mandatory", "stack-gpu-budget": "mandatory",
                      "node-pool-replacement": "advisory", "inference-floor-spread": "advisory"}
    assert POLICIES["gpu-pool-attribution-labels"].config_schema.properties["labels"]["default"] == [
        "team",
        "environment",
    ]
    assert isinstance(POLICIES["dev-pool-auto-stop"], StackValidationPolicy)  # needs the stack's schedules


# -- resource policies: one passing and one failing pool per rule, on every cloud ----------------------
RESOURCE_CASES = {
    "gpu-pool-taint": (Pool(), Pool(gpu_taint=False), "without the nvidia.com/gpu NoSchedule taint"),
    "gpu-pool-attribution-labels": (
        Pool(),
        Pool(labels=(("team", "ml-platform"),)),
        "without the attribution label environment",
    ),
    "spot-gpu-pool-checkpointing": (
        Pool(capacity="spot", checkpointing="true"),
        Pool(capacity="spot", checkpointing="false"),
        "whose workloads do not checkpoint",
    ),
    "inference-pool-not-spot-only": (
        Pool(name="infer-a100", kind="inference"),
        Pool(name="infer-a100", kind="inference", capacity="spot"),
        "on spot capacity only",
    ),
}


@pytest.mark.parametrize("cloud", CLOUD_NAMES)
@pytest.mark.parametrize("rule", sorted(RESOURCE_CASES))
def test_resource_policy_passes_and_fails_on_every_cloud(rule, cloud):
    good, bad, why = RESOURCE_CASES[rule]
    assert validate_resource(rule, cloud, good) == []
    messages = validate_resource(rule, cloud, bad)
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"[{rule}] {STACK}, pool {bad.name}: ")
    assert why in messages[0] and "Fix: " in messages[0]


@pytest.mark.parametrize("cloud, fix", [
    ("aws", "capacityType: ON_DEMAND"), ("gcp", "nodeConfig.spot: false"), ("azure", "scaleSetPriority: Regular"),
    ("oci", "placement configs without preemptibleNodeConfig"),
])
def test_fixes_speak_the_resource_type(cloud, fix):
    (message,) = validate_resource("spot-gpu-pool-checkpointing", cloud, Pool(capacity="spot"))
    assert fix in message and "gpustack.dev/checkpointing absent" in message


def test_attribution_labels_come_from_the_pack_config():
    config = {"labels": ["team", "cost-center"]}
    (message,) = validate_resource("gpu-pool-attribution-labels", "aws", Pool(), config)
    assert "attribution label cost-center" in message and "environment" not in message


def test_a_cpu_pool_is_no_gpu_pool():
    cpu = Pool(name="system", kind=None, labels=(), gpu_taint=False, instance="m5.large")
    assert validate_resource("gpu-pool-taint", "aws", cpu) == []
    assert validate_resource("gpu-pool-attribution-labels", "aws", cpu) == []


def test_a_gke_n1_pool_has_gpus_only_with_accelerators():
    props = _gke(Pool(gpu_taint=False, labels=(), kind=None, instance="n1-standard-4"))
    props["nodeConfig"]["guestAccelerators"] = []
    args = ResourceValidationArgs(TOKENS["gcp"], props, urn(TOKENS["gcp"], "n1"), "n1", None, None)
    messages: list[str] = []
    POLICIES["gpu-pool-taint"].validate(args, lambda m, urn=None: messages.append(m))
    assert messages == []
    assert validate_resource("gpu-pool-taint", "gcp", Pool(gpu_taint=False, kind=None, instance="n1-standard-4"))


def test_values_unknown_during_preview_are_not_judged():
    from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, unknown_checking_proxy

    props = _eks(Pool(gpu_taint=False))
    props["taints"] = UNKNOWN_ARRAY_VALUE
    args = ResourceValidationArgs(
        TOKENS["aws"], unknown_checking_proxy(props), urn(TOKENS["aws"], "p"), "p", None, None
    )
    messages: list[str] = []
    POLICIES["gpu-pool-taint"].validate(args, lambda m, urn=None: messages.append(m))
    assert messages == []
    POLICIES["gpu-pool-attribution-labels"].validate(args, lambda m, urn=None: messages.append(m))
    assert messages == []  # labels are known and complete


# -- dev-pool-auto-stop: a stack policy, since the schedules are other resources ------------------------
NOTEBOOK = Pool(name="notebook-t4", kind="notebook", min_nodes=0, max_nodes=3)


def cronjob(pool: str, suffix: str = "stop") -> PolicyResource:
    token = "kubernetes:batch/v1:CronJob"
    return resource(token, f"{pool}-{suffix}", {
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": f"{pool}-{suffix}", "namespace": "gpustack-system", "labels": {"gpustack.dev/pool": pool}},
        "spec": {"schedule": "0 18 * * 1-5", "timeZone": "Europe/Berlin", "jobTemplate": {"spec": {}}}})


@pytest.mark.parametrize("cloud", CLOUD_NAMES)
def test_a_notebook_pool_with_cronjobs_passes(cloud):
    assert validate_stack("dev-pool-auto-stop", [pool_resource(cloud, NOTEBOOK), cronjob(NOTEBOOK.name),
                                                 cronjob(NOTEBOOK.name, "start")]) == []


@pytest.mark.parametrize("cloud", CLOUD_NAMES)
def test_a_notebook_pool_without_a_schedule_fails(cloud):
    pool = pool_resource(cloud, NOTEBOOK)
    found = validate_stack("dev-pool-auto-stop", [pool, cronjob("another-pool")])
    assert len(found) == 1
    message, where = found[0]
    assert message.startswith(f"[dev-pool-auto-stop] {STACK}, pool {NOTEBOOK.name}: notebook pool has no auto-stop")
    assert "CronJob" in message and where == pool.urn


@pytest.mark.parametrize("cloud", CLOUD_NAMES)
def test_a_notebook_pool_that_cannot_scale_to_zero_fails(cloud):
    pool = dataclasses.replace(NOTEBOOK, min_nodes=1)
    (found,) = validate_stack("dev-pool-auto-stop", [pool_resource(cloud, pool), cronjob(pool.name)])
    assert "cannot scale to zero: it keeps at least 1 node running" in found[0]


def test_an_eks_schedule_on_the_node_group_asg_counts():
    props = _eks(NOTEBOOK)
    props["resources"] = [{"autoscalingGroups": [{"name": "eks-notebook-asg"}]}]  # an output, after creation
    group = resource(TOKENS["aws"], NOTEBOOK.name, props)
    token = "aws:autoscaling/schedule:Schedule"
    stop = resource(token, "notebook-stop", {"autoscalingGroupName": "eks-notebook-asg", "scheduledActionName": "stop",
                                             "recurrence": "0 18 * * MON-FRI", "timeZone": "Europe/Berlin",
                                             "minSize": 0.0, "maxSize": 0.0, "desiredCapacity": 0.0})
    assert validate_stack("dev-pool-auto-stop", [group, stop]) == []
    elsewhere = resource(token, "other-stop", {"autoscalingGroupName": "eks-other-asg", "scheduledActionName": "stop"})
    assert len(validate_stack("dev-pool-auto-stop", [group, elsewhere])) == 1


def test_an_eks_schedule_whose_asg_is_unknown_in_preview_counts_by_dependency():
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    group = pool_resource("aws", NOTEBOOK)
    token = "aws:autoscaling/schedule:Schedule"
    stop = resource(
        token,
        "notebook-stop",
        {"autoscalingGroupName": UNKNOWN_STRING_VALUE, "scheduledActionName": "stop"},
        property_dependencies={"autoscalingGroupName": [group]},
    )
    assert validate_stack("dev-pool-auto-stop", [group, stop]) == []


def test_dev_pools_can_also_be_chosen_by_label():
    pool = Pool(name="train-dev", kind="training", labels=(("team", "ml"), ("environment", "dev")))
    config = {"matchLabels": {"environment": "dev"}}
    assert validate_stack("dev-pool-auto-stop", [pool_resource("gcp", pool)]) == []
    assert len(validate_stack("dev-pool-auto-stop", [pool_resource("gcp", pool)], config)) == 1


# -- stack-gpu-budget ---------------------------------------------------------------------------------
def fixed(cloud: str, nodes: int) -> PolicyResource:
    return pool_resource(cloud, Pool(min_nodes=nodes, max_nodes=nodes))


@pytest.mark.parametrize("cloud", CLOUD_NAMES)
def test_the_gpu_cap_passes_under_and_fails_over(cloud):
    resources = [fixed(cloud, 4)]  # catalog types with 8 (aws) or 1 GPU per node
    gpus = 32 if cloud == "aws" else 4
    assert validate_stack("stack-gpu-budget", resources) == []  # off unless configured
    assert validate_stack("stack-gpu-budget", resources, {"maxGpus": gpus}) == []
    ((message, where),) = validate_stack("stack-gpu-budget", resources, {"maxGpus": gpus - 1})
    assert message.startswith(f"[stack-gpu-budget] {STACK} (whole stack): the GPU pools of {STACK} can reach "
                              f"{gpus} GPUs") and where is None


@pytest.mark.parametrize("cloud", CLOUD_NAMES)
def test_the_cost_cap_uses_catalog_list_prices(cloud):
    resources = [fixed(cloud, 1)]
    ((message, _),) = validate_stack("stack-gpu-budget", resources, {"maxMonthlyUsd": 100})
    assert "/month at their maximum size, above the cap of $100/month" in message
    assert validate_stack("stack-gpu-budget", resources, {"maxMonthlyUsd": 1_000_000}) == []


def test_the_cap_says_when_it_cannot_count_a_pool():
    unknown = pool_resource("aws", Pool(instance="p9.96xlarge"))  # tainted and labelled: a GPU pool
    ((message, _),) = validate_stack("stack-gpu-budget", [unknown], {"maxGpus": 100})
    assert (
        "cannot check the cap on GPUs (100 GPUs)" in message and "p9.96xlarge is not in the gpustack catalog" in message
    )


def oke_autoscaler(nodes: str) -> PolicyResource:
    return resource(
        "oci:ContainerEngine/addon:Addon",
        "cluster-autoscaler",
        {
            "addonName": "ClusterAutoscaler",
            "clusterId": "ocid1.cluster.oc1.iad.aaaa",
            "removeAddonResourcesOnDelete": True,
            "configurations": [{"key": "authType", "value": "instance"}, {"key": "nodes", "value": nodes}],
        },
    )


def test_oke_bounds_come_from_the_cluster_autoscaler_add_on():
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    props = _oke(Pool(min_nodes=0, max_nodes=4))
    assert props["nodeConfigDetails"]["size"] == 4.0  # alone, the pool runs its size
    props["nodeConfigDetails"]["size"] = 0.0
    props["id"] = "ocid1.nodepool.oc1.iad.aaaa"  # an output, once the pool exists
    pool = resource(TOKENS["oci"], "train", props)
    assert validate_stack("stack-gpu-budget", [pool], {"maxGpus": 3}) == []  # size 0: no GPUs
    ((message, _),) = validate_stack("stack-gpu-budget", [pool, oke_autoscaler("0:4:ocid1.nodepool.oc1.iad.aaaa")],
                                     {"maxGpus": 3})
    assert "can reach 4 GPUs at their maximum size" in message
    # In a preview the add-on's bounds are not known yet: the pool is not judged, rather than miscounted.
    assert validate_stack("stack-gpu-budget", [pool, oke_autoscaler(UNKNOWN_STRING_VALUE)], {"maxGpus": 3}) == []


# -- node-pool-replacement ----------------------------------------------------------------------------
@pytest.mark.parametrize("cloud, paths", [
    ("aws", "capacityType, clusterName, instanceTypes, nodeRoleArn, subnetIds"),
    ("gcp", "cluster, nodeConfig.guestAccelerators, nodeConfig.machineType, nodeConfig.spot, project"),
    ("azure", "gpuInstanceProfile, resourceGroupName, resourceName, scaleSetPriority, vmSize"),
    ("oci", "clusterId, compartmentId"),
])
def test_replacement_is_flagged_once_per_stack_for_unprotected_pools(cloud, paths):
    # A policy sees the new inputs only: it names the pools a replacing change would drain, once.
    token = TOKENS[cloud]
    pools = [resource(token, name, RENDER[cloud](Pool(name=name))) for name in ("a", "b")]
    ((message, _),) = validate_stack("node-pool-replacement", pools)
    assert "2 GPU node pool(s) are recreated" in message and f"a ({paths}); b ({paths})" in message
    protected = [resource(token, "p", RENDER[cloud](Pool(name="p")), protect=True)]
    pinned_opts = PolicyResourceOptions(False, paths.split(", "), None, [], None, [], None)
    pinned = [PolicyResource(token, RENDER[cloud](Pool(name="q")), urn(token, "q"), "q", pinned_opts, None, None,
                             [], {})]
    assert validate_stack("node-pool-replacement", protected + pinned) == []


def test_replacement_follows_the_clouds_data(monkeypatch):
    monkeypatch.setattr(type(CLOUDS.get("oci").provisioner()), "replacing_changes", {})
    token = TOKENS["oci"]
    assert validate_stack("node-pool-replacement", [resource(token, "p", RENDER["oci"](Pool()))]) == []
