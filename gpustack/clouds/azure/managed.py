"""AKS user agent pools with the AKS-managed Cluster Autoscaler: the default provisioner of AKS.

`compile` spells each planned pool as the agent-pool API takes it (`AksAgentPool`, stored in the
plan), from `facts.agent_pool_enums`, with the tags that show the autoscaler a pool at zero
(`node_template_tags`, in the spelling `facts` cites); `check_pool` checks those values against `facts.ALLOWED`;
`backend.py` maps them to pulumi-azure-native arguments.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds._enums import check_enums
from gpustack.clouds.azure import facts
from gpustack.clouds.base import PRIORITY_EXPANDER, FallbackMechanism, Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.clouds.compiled import CompiledPool

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target


@dataclasses.dataclass(frozen=True)
class AksAgentPool(CompiledPool):
    mode: str
    os_type: str
    os_sku: str
    type: str
    scale_set_priority: str
    scale_set_eviction_policy: str | None  # spot pools
    spot_max_price: float | None  # spot pools
    gpu_driver: str  # gpu_profile.driver
    gpu_instance_profile: str | None  # MIG pools
    node_taints: tuple[str, ...]  # key=value:Effect, as AKS takes them
    # Attribution, and the node-template tags the autoscaler reads from the pool's scale set at zero.
    tags: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["tags"] = dict(self.tags)
        return out

    def enums(self) -> dict[str, str | None]:
        """The enum fields, by SDK argument name (those a pool does not set left out)."""
        values: dict[str, str | None] = {"mode": self.mode, "os_type": self.os_type, "os_sku": self.os_sku,
                                         "type": self.type, "scale_set_priority": self.scale_set_priority,
                                         "gpu_driver": self.gpu_driver}
        if self.scale_set_eviction_policy is not None:
            values["scale_set_eviction_policy"] = self.scale_set_eviction_policy
        if self.gpu_instance_profile is not None:
            values["gpu_instance_profile"] = self.gpu_instance_profile
        return values


def _tag_key(key: str) -> str:
    """A label or taint key in a tag name (`facts.TEMPLATE_LABEL_TAG`): `_` written `~2`, `/` written `_`."""
    return key.replace("_", "~2").replace("/", "_")


def node_template_tags(pool: Pool) -> dict[str, str]:
    """Agent pool tags that show the autoscaler a node of `pool` at zero: labels (and AKS's GPU label),
    taints, allocatable cpu and memory, and extended resources."""
    tags = {f"{facts.TEMPLATE_LABEL_TAG}{_tag_key(k)}": v for k, v in pool.labels}
    tags[f"{facts.TEMPLATE_LABEL_TAG}{_tag_key(facts.GPU_LABEL)}"] = facts.GPU_LABEL_VALUE
    tags.update({f"{facts.TEMPLATE_TAINT_TAG}{_tag_key(t.key)}": f"{t.value}:{t.effect}" for t in pool.taints})
    offers = [*pool.node_allocatable, *((name, str(count)) for name, count in pool.node_offers)]
    tags.update({f"{facts.TEMPLATE_RESOURCES_TAG}{name.replace('/', '_')}": value for name, value in offers})
    return tags


def agent_pool_tags(pool: Pool) -> dict[str, str]:
    """The agent pool's tags: attribution, and the node template the autoscaler reads from its scale set."""
    return {**pool.attribution, **node_template_tags(pool)}


class AgentPools(Provisioner):
    name = "managed"
    description = "AKS user agent pools, scaled by the AKS-managed Cluster Autoscaler"
    # DRA: agent pools run NVIDIA's DRA driver; the AKS-managed Cluster Autoscaler (the upstream one's Azure
    # provider) cannot grow a pool at zero for a claim.
    dra = DraSupport(
        scale_from_zero=False,
        scale_from_zero_gap="the Cluster Autoscaler's Azure provider builds a node group's template node without ResourceSlices, so its scale-up simulation finds no device for a claim while the group is at zero (https://github.com/kubernetes/autoscaler/issues/7799; only the cluster-api provider models them, https://github.com/kubernetes/autoscaler/pull/7804)",
        source="https://github.com/kubernetes/autoscaler/issues/7799",
    )
    unsupported = {
        Feature.NATIVE_SCHEDULE: "AKS has no scheduled scaling of agent pools; the in-cluster auto-stop covers it",
        # An agent pool has one vmSize (AGENT_POOL_API).
        Feature.INSTANCE_TYPE_ALTERNATIVES: "an AKS agent pool has one VM size (vmSize, "
                                            "https://learn.microsoft.com/rest/api/aks/agent-pools/create-or-update); "
                                            "settings.provisioner: nap takes a list",
    }
    # Spot pools get this taint from AKS (confirmed in the AKS spot node pool docs); pools declare it too.
    spot_taint = ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")

    def compile(self, pool: Pool, target: Target) -> AksAgentPool:
        enums = facts.agent_pool_enums(pool)
        spot = "scale_set_eviction_policy" in enums
        return AksAgentPool(
            mode=str(enums["mode"]), os_type=str(enums["os_type"]), os_sku=str(enums["os_sku"]),
            type=str(enums["type"]), scale_set_priority=str(enums["scale_set_priority"]),
            scale_set_eviction_policy=enums.get("scale_set_eviction_policy"),
            spot_max_price=facts.SPOT_MAX_PRICE if spot else None,
            gpu_driver=str(enums["gpu_driver"]),
            gpu_instance_profile=enums.get("gpu_instance_profile"),
            node_taints=tuple(f"{t.key}={t.value}:{t.effect}" for t in pool.taints),
            tags=tuple(sorted(agent_pool_tags(pool).items())),
        )

    def check_pool(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, AksAgentPool)
        problems = super().check_pool(pool)
        if len(pool.mig_profiles) > 1:
            problems.append(f"an AKS agent pool takes one MIG profile (gpuInstanceProfile); this pool has "
                            f"{', '.join(pool.mig_profiles)}")
        enums = compiled.enums()
        if pool.sharing.mode == "mig":
            enums["gpu_instance_profile"] = compiled.gpu_instance_profile
        problems.extend(check_enums(enums, facts.ALLOWED, self.cloud.display_name))
        if len(compiled.tags) > facts.MAX_TAGS:
            problems.append(f"{len(compiled.tags)} tags on the agent pool (attribution labels and the autoscaler's "
                            f"node-template labels, taints and resources); Azure allows {facts.MAX_TAGS} per "
                            "resource: use fewer attribution labels")
        return problems  # each label as a tag: `AKS.check_label`, located where the spec writes it

    # Agent-pool properties AKS cannot change after creation; read by `gpustack diff`. A key
    # "field:value" matches a change to or from that value only.
    _FORCENEW_PULUMI = "https://github.com/pulumi/pulumi-azure-native/pull/3655"
    _FORCENEW_POOL_ID = "https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/create-or-update"
    replacing_changes = {
        "instance_type": "AKS cannot change the VM size of a node pool after it is created "
                         "(https://learn.microsoft.com/en-us/azure/aks/manage-node-pools#limitations); "
                         f"pulumi-azure-native replaces the pool ({_FORCENEW_PULUMI})",
        "sharing.mig": "AKS cannot change the GPU instance profile (gpuInstanceProfile) after node pool creation "
                       "(https://learn.microsoft.com/en-us/azure/aks/gpu-multi-instance); pulumi-azure-native "
                       f"replaces the pool ({_FORCENEW_PULUMI})",
        "capacity:spot": "AKS cannot change a pool's scaleSetPriority (Spot or Regular) after creation "
                         "(https://learn.microsoft.com/en-us/azure/aks/spot-node-pool#limitations)",
        "cluster": f"the cluster name is part of the agent pool's resource id ({_FORCENEW_POOL_ID})",
        "settings.resource_group": f"the resource group is part of the agent pool's resource id ({_FORCENEW_POOL_ID})",
    }

    # Spot first: AKS runs the Cluster Autoscaler itself; its expander is the cluster's autoscaler
    # profile (ManagedCluster autoScalerProfile.expander, default `random`), which gpustack does not
    # own, and `priority` reads kube-system/cluster-autoscaler-priority-expander (AKS blog "Scaling
    # safely with Azure AKS spot node pools", Azure/AKS blog/_posts/2025-07-17-Scaling-safely-with-spot-on-aks.md).
    # A node group's id is the pool's scale set, `aks-<agent pool name>-<number>-vmss` (Azure provider
    # README note, kubernetes/autoscaler#1896; node names such as aks-nodepool1-27324113-vmss000000).
    fallback_mechanism = FallbackMechanism(
        PRIORITY_EXPANDER,
        node_group=r"^aks-{pool}-[0-9]+-vmss$",
        node_group_example="aks-{pool}-27324113-vmss",
        namespace="kube-system",  # the AKS-managed autoscaler reads its ConfigMap there (blog post below)
        user_action="set the cluster's autoscaler profile expander to priority (az aks update "
                    "--cluster-autoscaler-profile expander=priority; ManagedCluster autoScalerProfile.expander)",
        source="https://github.com/Azure/AKS/blob/master/blog/_posts/2025-07-17-Scaling-safely-with-spot-on-aks.md",
    )


PROVISIONER = AgentPools
