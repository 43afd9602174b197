"""The template node each cloud's Cluster Autoscaler builds for a node group at zero nodes, from what
the program declares: the instance type's facts plus the tags, labels and taints the provider's code
reads. One function per cloud, each following that provider's code path; nothing here reads the plan.

Instance facts (vCPU, memory, GPUs) come from gpustack's catalog, standing in for the autoscaler's own
tables (cloudprovider/aws/ec2_instance_types.go, the Azure SKU API, GCE machine types, OCI shapes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cloudsim.kube import Node, Taint, quantity
from gpustack.catalog import InstanceType, load_catalog
from gpustack.clouds import CLOUDS
from gpustack.plan.nodes import DAEMONS, kubelet_allocatable

GIB = 2**30
_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")

# -- EKS managed node groups (cloudprovider/aws) --------------------------------------------------
AWS_GPU_LABEL = "k8s.amazonaws.com/accelerator"  # aws_cloud_provider.go, GPULabel
AWS_RESOURCES = "k8s.io/cluster-autoscaler/node-template/resources/"  # aws_manager.go
AWS_LABELS = "k8s.io/cluster-autoscaler/node-template/label/"
AWS_TAINTS = "k8s.io/cluster-autoscaler/node-template/taint/"
_EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def with_daemonsets(template: Node) -> Node:
    """simulator/node_info_utils.go, SanitizedTemplateNodeInfoFromNodeGroup / podsExpectedOnFreshNode: the
    template carries the pods of the DaemonSets that would run on a new node (here the GPU daemons
    gpustack plans room for: device plugin, feature discovery, DCGM exporter, node exporter, CNI)."""
    cpu, memory_gib = DAEMONS
    allocatable = dict(template.allocatable)
    allocatable["cpu"] = max(0.0, allocatable["cpu"] - cpu)
    allocatable["memory"] = max(0.0, allocatable["memory"] - memory_gib * GIB)
    return Node(allocatable, template.labels, template.taints)


def _capacity(row: InstanceType) -> dict[str, float]:
    return {"pods": 110.0, "cpu": float(row.vcpus), "memory": row.memory_gib * GIB, "nvidia.com/gpu": float(row.gpus)}


def _aws_resources(tags: Mapping[str, str]) -> dict[str, float]:
    """aws_manager.go, extractAllocatableResourcesFromAsg / extractAllocatableResourcesFromTags
    (values that do not parse as quantities are skipped)."""
    out = {}
    for key, value in tags.items():
        name = key.split(AWS_RESOURCES, 1)[1] if AWS_RESOURCES in key else ""
        if name:
            try:
                out[name] = quantity(value)
            except ValueError:
                continue
    return out


def eks_template(node_group: Mapping[str, Any], cluster: str, row: InstanceType) -> Node:
    """aws_manager.go, buildNodeFromTemplate, for the Auto Scaling group EKS creates for a managed node group.

    EKS tags that group itself with `eks:cluster-name` and `eks:nodegroup-name` (and the autoscaler's
    discovery tags); the node group's own `tags` do not reach it
    (https://docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html, and
    aws/containers-roadmap#608). extractLabelsFromAsg turns `eks:` keys into the labels `cluster-name`
    and `nodegroup-name`, which send the autoscaler to eks:DescribeNodegroup
    (aws_wrapper.go, getManagedNodegroupInfo): the node group's labels (plus amiType, capacityType and
    its name), its taints (those with a value) and the resources of its `node-template/resources/` tags.
    """
    inputs = node_group["inputs"]
    name = inputs["nodeGroupName"]
    asg_tags = {"eks:cluster-name": cluster, "eks:nodegroup-name": name,
                "k8s.io/cluster-autoscaler/enabled": "true", f"k8s.io/cluster-autoscaler/{cluster}": "owned"}
    capacity = _capacity(row)
    capacity.update(_aws_resources(asg_tags))
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
              "node.kubernetes.io/instance-type": row.name}
    for key, value in asg_tags.items():  # extractLabelsFromAsg
        label = key.split(AWS_LABELS, 1)[1] if AWS_LABELS in key else key.split("eks:", 1)[1] if "eks:" in key else ""
        if label:
            labels[label] = value
    taints = [Taint(key.split(AWS_TAINTS, 1)[1], *value.split(":", 1)) for key, value in asg_tags.items()
              if AWS_TAINTS in key and _TAINT_VALUE.fullmatch(value)]
    if labels.get("nodegroup-name") and labels.get("cluster-name"):
        described = {"amiType": str(inputs.get("amiType", "")),
                     "eks.amazonaws.com/capacityType": str(inputs.get("capacityType", "ON_DEMAND")),
                     "eks.amazonaws.com/nodegroup": name, **dict(inputs.get("labels") or {})}
        labels.update(described)  # joinNodeLabelsChoosingUserValuesOverAPIValues: the API's values win
        taints += [Taint(t["key"], t["value"], _EKS_EFFECTS[t["effect"]]) for t in inputs.get("taints") or ()
                   if t.get("key") is not None and t.get("value") is not None]
        capacity.update(_aws_resources(dict(inputs.get("tags") or {})))
    return Node(capacity, labels, tuple(taints))


# -- AKS agent pools (cloudprovider/azure) -----------------------------------------------------
AZURE_GPU_LABEL = "kubernetes.azure.com/accelerator"  # azure_cloud_provider.go, GPULabel
AZURE_LABELS = "k8s.io_cluster-autoscaler_node-template_label_"  # azure_util.go
AZURE_TAINTS = "k8s.io_cluster-autoscaler_node-template_taint_"
AZURE_RESOURCES = "k8s.io_cluster-autoscaler_node-template_resources_"
# azure_instance_gpu_sku.go, NvidiaEnabledSKUs (the entries of the SKUs gpustack's catalog carries).
NVIDIA_ENABLED_SKUS = frozenset({"standard_nc4as_t4_v3", "standard_nc8as_t4_v3", "standard_nc16as_t4_v3",
                                 "standard_nc64as_t4_v3", "standard_nc24ads_a100_v4", "standard_nc48ads_a100_v4",
                                 "standard_nc96ads_a100_v4", "standard_nd96asr_v4", "standard_nd96amsr_a100_v4",
                                 "standard_nc6s_v3", "standard_nc12s_v3", "standard_nc24s_v3"})


def aks_template(agent_pool: Mapping[str, Any], row: InstanceType) -> Node:
    """azure_scale_set.go, TemplateNodeInfo -> azure_template.go, buildNodeFromTemplate and
    processVMSSTemplate, with label prediction on (azure_config.go: EnableLabelPredictionsOnTemplate
    defaults to true).

    The scale set carries the agent pool's tags (AKS applies node pool tags to its scale set:
    https://learn.microsoft.com/en-us/azure/aks/use-tags) and AKS's `aks-managed-poolName`. At this tag
    a VMSS template gets no labels or taints from the AKS API (TemplateNodeInfo passes empty
    inputLabels/inputTaints): labels come from `..._node-template_label_` tags (`_` -> `/`, `~2` -> `_`),
    taints from `..._node-template_taint_` tags, resources from `..._node-template_resources_` tags
    (`_` -> `/`, then `~2` -> `/`), and every tag is also copied as a label.
    """
    inputs = agent_pool["inputs"]
    tags = {**dict(inputs.get("tags") or {}), "aks-managed-poolName": inputs["agentPoolName"]}
    capacity = _capacity(row)
    node_labels: dict[str, str] = dict(tags)
    node_labels.update({"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                        "node.kubernetes.io/instance-type": row.name})
    labels = {key[len(AZURE_LABELS):].replace("_", "/").replace("~2", "_"): value
              for key, value in tags.items() if key.startswith(AZURE_LABELS) and key != AZURE_LABELS}
    labels["agentpool"] = labels["kubernetes.azure.com/agentpool"] = tags["aks-managed-poolName"]
    if row.name.lower().removesuffix("_promo") in NVIDIA_ENABLED_SKUS:
        labels[AZURE_GPU_LABEL] = labels["accelerator"] = "nvidia"
    for key, value in tags.items():  # extractAllocatableResourcesFromScaleSet
        if key.startswith(AZURE_RESOURCES) and key != AZURE_RESOURCES:
            try:
                capacity[key[len(AZURE_RESOURCES):].replace("_", "/").replace("~2", "/")] = quantity(value)
            except ValueError:
                continue
    node_labels.update(labels)
    taints = tuple(Taint(key[len(AZURE_TAINTS):].replace("_", "/").replace("~2", "_"), *value.split(":", 1))
                   for key, value in tags.items() if key.startswith(AZURE_TAINTS) and _TAINT_VALUE.fullmatch(value))
    return Node(capacity, node_labels, taints)


# -- GKE node pools -------------------------------------------------------------------------------
GCE_GPU_LABEL = "cloud.google.com/gke-accelerator"  # gce/gce_cloud_provider.go, GPULabel
_GKE_EFFECTS = _EKS_EFFECTS


def gke_partitions(gpu: str, partition_size: str | None) -> int:
    if not partition_size:
        return 1
    model = load_catalog().gpu(gpu)
    assert model is not None and model.mig is not None
    profile = model.mig.profile(partition_size)
    assert profile is not None, partition_size
    return profile.shape.max_count


def gke_template(node_pool: Mapping[str, Any], row: InstanceType) -> Node:
    """GKE's autoscaler (not the OSS gce provider) builds the template from the node pool's config: the
    node labels and taints GKE writes into kube-env (gce/templates.go reads `node_labels`,
    `node_taints`), GKE's GPU labels (gke-accelerator, gke-gpu-partition-size,
    gke-gpu-sharing-strategy, gke-max-shared-clients-per-gpu), and as nvidia.com/gpu the physical GPUs x
    partitions x shared clients (machinetypes.PhysicalToAllocatable in GKE's autoscaler: "4 * 3 * 5 = 60
    Allocatable GPU units")."""
    config = node_pool["inputs"]["nodeConfig"]
    [accelerator] = config["guestAccelerators"]
    sharing = accelerator.get("gpuSharingConfig") or {}
    clients = int(sharing.get("maxSharedClientsPerGpu") or 1)
    partitions = gke_partitions(row.gpu, accelerator.get("gpuPartitionSize"))
    capacity = _capacity(row)
    # gce/templates.go, BuildNodeFromTemplate: allocatable = capacity less the kube_reserved GKE writes into
    # kube-env (BuildAllocatableFromKubeEnv), GKE's published reservation formula.
    capacity["cpu"], memory_gib = kubelet_allocatable(row.vcpus, row.memory_gib,
                                                      CLOUDS.get(row.cloud).kubelet_reservation, row.name)
    capacity["memory"] = memory_gib * GIB
    capacity["nvidia.com/gpu"] = float(int(accelerator["count"]) * partitions * clients)
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": row.name,
              "cloud.google.com/gke-nodepool": node_pool["inputs"].get("name", ""),
              GCE_GPU_LABEL: accelerator["type"], **dict(config.get("labels") or {})}
    if accelerator.get("gpuPartitionSize"):
        labels["cloud.google.com/gke-gpu-partition-size"] = accelerator["gpuPartitionSize"]
    if sharing:
        labels["cloud.google.com/gke-gpu-sharing-strategy"] = {"TIME_SHARING": "time-sharing", "MPS": "mps"}[
            sharing["gpuSharingStrategy"]]
        labels["cloud.google.com/gke-max-shared-clients-per-gpu"] = str(clients)
    if config.get("spot"):
        labels["cloud.google.com/gke-spot"] = "true"
    taints = tuple(Taint(t["key"], t["value"], _GKE_EFFECTS[t["effect"]]) for t in config.get("taints") or ())
    return Node(capacity, labels, taints)


# -- OKE node pools (cloudprovider/oci/nodepools) ------------------------------------------------
_REGISTER_WITH_TAINTS = re.compile(r"-?-register-with-taints[= ](\S*)")  # registered_taints.go


def _parse_taints(spec: str) -> list[Taint]:
    """k8s.io/kubernetes taints.ParseTaints for `key=value:Effect` and `key:Effect`."""
    taints = []
    for item in filter(None, spec.split(",")):
        head, effect = item.rsplit(":", 1)
        key, _, value = head.partition("=")
        taints.append(Taint(key, value, effect))
    return taints


def oke_template(node_pool: Mapping[str, Any], row: InstanceType) -> Node:
    """oci_manager.go, buildNodeFromTemplate: the pool's initial node labels; taints of the
    `kubelet-extra-args` metadata (registered_taints.go), then nvidia.com/gpu="":NoSchedule on GPU
    shapes; cpu, memory and nvidia.com/gpu from the shape; nothing else (no resource tags)."""
    inputs = node_pool["inputs"]
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": row.name}
    labels.update({item["key"]: item["value"] for item in inputs.get("initialNodeLabels") or ()})
    args = str((inputs.get("nodeMetadata") or {}).get("kubelet-extra-args", ""))
    match = _REGISTER_WITH_TAINTS.search(args)
    taints = _parse_taints(match.group(1)) if match else []
    if row.gpus > 0:
        taints.append(Taint("nvidia.com/gpu", "", "NoSchedule"))
    return Node(_capacity(row), labels, tuple(taints))
