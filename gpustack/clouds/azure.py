"""Azure AKS: user agent pools."""

from __future__ import annotations

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import Cloud, Feature, NameRule, Setting

# gpuInstanceProfile values and the profile each creates: one profile for every GPU of the pool
# (MicrosoftDocs/azure-aks-docs articles/aks/gpu-multi-instance.md; GPUInstanceProfile enum).
GPU_INSTANCE_PROFILES = ("MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g")
_MIG_KEYS = {"1g": "MIG1g", "2g": "MIG2g", "3g": "MIG3g", "4g": "MIG4g", "7g": "MIG7g"}


def gpu_instance_profile(shape_key: str) -> str | None:
    """MIG1g ... MIG7g for a generic profile shape (1g, 2g, ...); None when AKS has no such value."""
    return _MIG_KEYS.get(shape_key)


@CLOUDS.register
class AKS(Cloud):
    name = "azure"
    aliases = ("aks",)
    display_name = "AKS"
    backend = "gpustack.backends.azure"
    settings = (
        Setting("resource_group", True, "string", "the resource group of the AKS cluster",
                r"^[-\w\._\(\)]{1,90}$", "a resource group name (at most 90 letters, digits, '-', '_', '.', '(', ')')"),
    )
    cluster_rule = (r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$", "an AKS cluster name (at most 63 letters, digits, '-', '_')")
    # Linux user pools: ^[a-z][a-z0-9]{0,11}$ (AKS REST API, Agent Pools - Create Or Update,
    # parameter agentPoolName).
    pool_names = NameRule(12, r"[a-z][a-z0-9]{0,11}", "",
                          "https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/create-or-update")
    unsupported = {
        Feature.MIG_MIXED_LAYOUTS: "AKS creates one MIG profile per agent pool (gpuInstanceProfile); "
                                   "mixed profiles exist only in a preview API",
        Feature.NATIVE_SCHEDULE: "AKS has no scheduled scaling of agent pools; the in-cluster auto-stop covers it",
    }
    # Spot pools get this label and taint from AKS (confirmed in the AKS spot node pool docs).
    # gpuInstanceProfile partitions the pool's GPUs; the device plugin still needs a MIG strategy.
    native_mig_partitioning = True
    spot_node_label = ("kubernetes.azure.com/scalesetpriority", "spot")
    spot_taint = ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")

    def mig_profiles(self, gpu: str, mig_profiles: tuple[str, ...]) -> tuple[str, ...]:
        del gpu
        # Only the profiles MIG1g ... MIG7g create: the 1-memory-slice 1g and the plain 2g/3g/4g/7g.
        return tuple(p for p in mig_profiles if "+" not in p and _shape_of(p) in _MIG_KEYS)

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


def _shape_of(profile: str) -> str:
    return profile.split(".", 1)[0]
