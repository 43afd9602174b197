"""GKE node pools with GKE's cluster autoscaler: the default provisioner of GKE.

`compile` spells each planned pool as the GKE and Compute Engine APIs take it (`GkeNodePool`, stored
in the plan), from the enum tables of `facts.py`; `check_pool` checks those values; `backend.py` maps
them to pulumi-gcp arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gpustack.clouds.dra import DraSupport
from gpustack.clouds._enums import EnumValue, enum_problems
from gpustack.clouds.base import COMPUTE_CLASS, FallbackMechanism, Feature
from gpustack.clouds.gcp import facts
from gpustack.clouds.provisioner import KubernetesMinimum, Provisioner
from gpustack.clouds.compiled import CompiledPool

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

# What the cluster must run for a ComputeClass fallback (GKE 1.30.3-gke.1451000 or later, Standard and Autopilot)
# and for flex-start GPUs, as minimums of targets[].kubernetes_version.
_CLASS_MINIMUM = KubernetesMinimum("spot first, on-demand fallback through a custom ComputeClass", "1.30",
                                   "1.30.3-gke.1451000",
                                   "https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes")
_FLEX_MINIMUM = KubernetesMinimum("flex-start GPUs", "1.32", facts.FLEX_VERSION,
                                  "https://cloud.google.com/kubernetes-engine/docs/concepts/dws")


@dataclasses.dataclass(frozen=True)
class NodeTaint:
    key: str
    value: str
    effect: str | None  # NO_SCHEDULE | PREFER_NO_SCHEDULE | NO_EXECUTE


@dataclasses.dataclass(frozen=True)
class Reservation:
    """The specific Compute Engine reservation of a reserved floor, and how the pool consumes it."""

    name: str
    count: int
    consume_reservation_type: str
    key: str


@dataclasses.dataclass(frozen=True)
class GkeNodePool(CompiledPool):
    accelerator_type: str | None
    gpu_driver_version: str
    gpu_partition_size: str | None  # MIG pools
    gpu_sharing_strategy: str | None  # time-sliced and MPS pools
    max_shared_clients_per_gpu: int | None
    spot: bool
    location_policy: str | None
    taints: tuple[NodeTaint, ...]
    resource_labels: tuple[tuple[str, str], ...]  # Compute Engine labels on the VMs
    reservation: Reservation | None
    # capacity: flex (facts.FLEX_SOURCE): flex-start VMs, each removed after max_run_duration; queued
    # provisioning for `flex.queued`; auto-repair off, reservation affinity none.
    flex_start: bool = False
    max_run_duration: str | None = None
    queued_provisioning: bool = False
    auto_repair: bool | None = None  # None: GKE's default
    consume_reservation_type: str | None = None  # NO_RESERVATION on flex pools

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["resource_labels"] = dict(self.resource_labels)
        if not self.flex_start:
            for key in ("flex_start", "max_run_duration", "queued_provisioning", "auto_repair",
                        "consume_reservation_type"):
                del out[key]
        return out


class NodePools(Provisioner):
    name = "managed"
    description = "GKE Standard node pools, scaled by GKE's cluster autoscaler"
    # DRA on GKE Standard (https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra): node pools with
    # gpu-driver-version=disabled (the user installs the NVIDIA driver and NVIDIA's DRA driver) and the label
    # cloud.google.com/gke-nvidia-gpu-dra-driver=true, which GKE's autoscaler reads to model the ResourceSlices
    # of a node at zero; GKE's own time-sharing, MPS and MIG partitions cannot be used with DRA.
    dra = DraSupport(
        scale_from_zero=True,
        node_labels=((facts.DRA_NODE_LABEL, "true"),),
        driver_root=facts.DRA_DRIVER_ROOT,
        refused_modes={"mig": ("GKE does not create MIG partitions (gpu_partition_size) on DRA node pools, and on GKE "
                               "no MIG manager runs to cut them (https://cloud.google.com/kubernetes-engine/docs/how-to/"
                               "set-up-dra)")},
        notes=("GKE DRA node pools: the GKE-managed driver is off (gpu_driver_version INSTALLATION_DISABLED): install "
               "the NVIDIA driver and NVIDIA's DRA driver as https://cloud.google.com/kubernetes-engine/docs/how-to/"
               "set-up-dra shows",),
        source="https://cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra",
    )
    unsupported = {
        Feature.NATIVE_SCHEDULE: "GKE has no scheduled scaling of node pools; the in-cluster auto-stop covers it",
        # NodeConfig.machineType is one machine type
        # (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/NodeConfig).
        Feature.INSTANCE_TYPE_ALTERNATIVES: "a GKE node pool has one machine type (NodeConfig.machineType); "
                                            "settings.provisioner: compute-class takes a priority list",
    }
    spot_taint = facts.SPOT_TAINT

    def compile(self, pool: Pool, target: Target) -> GkeNodePool:
        mode = pool.sharing.mode
        dra = target.setting("gpu_allocation") == "dra"  # GKE's own sharing and driver are off under DRA
        shared = mode not in ("none", "mig") and not dra
        reservation = None
        if pool.reserved_nodes:
            reservation = Reservation(facts.reservation_name(target.cluster, pool.cloud_name), pool.reserved_nodes,
                                      facts.RESERVATION_AFFINITY, facts.RESERVATION_KEY)
        return GkeNodePool(
            accelerator_type=facts.accelerator_type(pool.gpu, pool.instance_type),
            gpu_driver_version=facts.GPU_DRIVER_DISABLED if dra else facts.GPU_DRIVER_VERSION,
            gpu_partition_size=facts.partition_size(pool) if mode == "mig" and not dra else None,
            gpu_sharing_strategy=facts.sharing_strategy(mode) if shared else None,
            max_shared_clients_per_gpu=pool.sharing.replicas if shared else None,
            spot=pool.capacity == "spot",
            location_policy=(facts.SPOT_LOCATION_POLICY if pool.capacity == "spot" else
                             facts.FLEX_LOCATION_POLICY if pool.flex else None),
            taints=tuple(NodeTaint(t.key, t.value, facts.taint_effect(t.effect)) for t in pool.taints),
            resource_labels=tuple(sorted(pool.attribution.items())),
            reservation=reservation,
            flex_start=pool.flex is not None,
            max_run_duration=f"{pool.flex.max_run_seconds}s" if pool.flex else None,
            queued_provisioning=bool(pool.flex and pool.flex.queued),
            auto_repair=False if pool.flex else None,
            consume_reservation_type=facts.FLEX_RESERVATION_AFFINITY if pool.flex else None,
        )

    def kubernetes_minimums(self, pools: Sequence[Pool], fallback: bool) -> list[tuple[tuple[str, ...], KubernetesMinimum]]:
        found: list[tuple[tuple[str, ...], KubernetesMinimum]] = []
        if fallback:
            found.append(((), _CLASS_MINIMUM))
        if flex := tuple(p.name for p in pools if p.flex is not None):
            found.append((flex, _FLEX_MINIMUM))
        return found

    def pool_notes(self, pool: Pool) -> tuple[str, ...]:
        if pool.flex is None:
            return ()
        queued = (f" With queued provisioning the pool's nodes come only through ProvisioningRequests "
                  f"({facts.QUEUED_SOURCE}): a job is admitted when all of its nodes are granted."
                  if pool.flex.queued else "")
        return (f"Flex-start node pool (GKE {facts.FLEX_VERSION} or later): location policy ANY, reservation affinity "
                f"none, auto-repair off, as GKE requires ({facts.FLEX_SOURCE}).{queued}",)

    def check_pool(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, GkeNodePool)
        problems = super().check_pool(pool) + enum_problems(self.cloud.display_name, compiled_enums(pool))
        replicas, most = compiled.max_shared_clients_per_gpu, self.cloud.max_shared_clients_per_gpu or 0
        if compiled.gpu_sharing_strategy is not None and not (
                replicas and facts.MIN_SHARED_CLIENTS_PER_GPU <= replicas <= most):
            problems.append(f"max_shared_clients_per_gpu: {replicas} clients per GPU; GKE takes "
                            f"{facts.MIN_SHARED_CLIENTS_PER_GPU} to {most}")
        return problems + facts.label_problems(dict(compiled.resource_labels))

    # Node-pool fields that are ForceNew in the Terraform provider pulumi-gcp bridges (labels, taints,
    # node_locations and autoscaling update in place); read by `gpustack diff`.
    _FORCENEW_NODE_CONFIG = ("https://github.com/hashicorp/terraform-provider-google/blob/"
                             "8da4e91560e76da82f5cb52bc4c4d16dcd034bf8/google/services/container/node_config.go")
    _FORCENEW_NODE_POOL = ("https://github.com/hashicorp/terraform-provider-google/blob/"
                           "8da4e91560e76da82f5cb52bc4c4d16dcd034bf8/google/services/container/"
                           "resource_container_node_pool.go")
    _FORCENEW_ACCELERATOR = ("the GKE API does not update an accelerator's type or count in place "
                             "(https://github.com/GoogleCloudPlatform/magic-modules/pull/18493)")
    replacing_changes = {
        "instance_type": f"node_config.machine_type is ForceNew ({_FORCENEW_NODE_CONFIG})",
        "gpu": f"guest_accelerator.type is ForceNew ({_FORCENEW_NODE_CONFIG}); {_FORCENEW_ACCELERATOR}",
        "gpus_per_node": f"guest_accelerator.count is ForceNew ({_FORCENEW_NODE_CONFIG}); {_FORCENEW_ACCELERATOR}",
        "capacity": f"node_config.spot and node_config.reservation_affinity are ForceNew ({_FORCENEW_NODE_CONFIG})",
        "sharing.mode": f"guest_accelerator.gpu_sharing_config is ForceNew ({_FORCENEW_NODE_CONFIG})",
        "sharing.replicas": "guest_accelerator.gpu_sharing_config.max_shared_clients_per_gpu is ForceNew "
                            f"({_FORCENEW_NODE_CONFIG})",
        "sharing.mig": f"guest_accelerator.gpu_partition_size is ForceNew ({_FORCENEW_NODE_CONFIG})",
        "cluster": f"cluster is ForceNew ({_FORCENEW_NODE_POOL})",
        "settings.project": f"project is ForceNew ({_FORCENEW_NODE_POOL})",
        # device-plugin <-> dra switches the GKE-managed driver on or off (GPU_DRIVER_DISABLED on DRA pools).
        "settings.gpu_allocation": "guest_accelerator.gpu_driver_installation_config.gpu_driver_version is ForceNew "
                                   f"({_FORCENEW_NODE_CONFIG})",
    }

    # Spot first: GKE's autoscaler has no priority expander; a custom ComputeClass (cloud.google.com/v1)
    # lists node pools in priority order and GKE falls back to the next when one cannot scale up
    # (GKE 1.30.3-gke.1451000 or later, Standard and Autopilot). Node pools created by hand join a class
    # with the node label and the NoSchedule taint `cloud.google.com/compute-class=<class>`, and pods
    # select it with that node selector (about-custom-compute-classes#gke-standard-pools-compute-classes).
    fallback_mechanism = FallbackMechanism(
        COMPUTE_CLASS,
        pool_marker="cloud.google.com/compute-class",
        api_version="cloud.google.com/v1",
        user_action=f"run GKE {_CLASS_MINIMUM.exact} or later and select the class in the pods "
                    "(nodeSelector cloud.google.com/compute-class: <class>)",
        source="https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes",
    )


PROVISIONER = NodePools


def compiled_enums(pool: Pool) -> list[EnumValue]:
    """Every enum string the GKE backend sends for `pool`, as compiled."""
    compiled = pool.compiled
    assert isinstance(compiled, GkeNodePool)
    values = [
        EnumValue("guest_accelerators.type", f"GPU {pool.gpu!r} on {pool.instance_type!r}",
                  compiled.accelerator_type, facts.ACCELERATORS,
                  f"GKE accelerator types are known for {', '.join(sorted(facts.ACCELERATOR_TYPES))}"),
        EnumValue("gpu_driver_installation_config.gpu_driver_version", "the GKE-managed driver",
                  compiled.gpu_driver_version, facts.GPU_DRIVER_VERSIONS),
    ]
    if compiled.gpu_partition_size is not None:
        values.append(EnumValue("guest_accelerators.gpu_partition_size",
                                f"the MIG profiles of the pool on {pool.gpu}", compiled.gpu_partition_size,
                                frozenset(facts.partition_sizes(pool.gpu)),
                                "GKE cuts every GPU of a node pool into one partition size"))
    elif compiled.gpu_sharing_strategy is not None:
        values.append(EnumValue("gpu_sharing_config.gpu_sharing_strategy", f"sharing {pool.sharing.mode!r}",
                                compiled.gpu_sharing_strategy, facts.SHARING_STRATEGIES))
    values += [EnumValue("taints.effect", f"taint effect {t.effect!r}", c.effect, facts.TAINT_EFFECTS)
               for t, c in zip(pool.taints, compiled.taints)]
    if compiled.location_policy is not None:
        values.append(EnumValue("autoscaling.location_policy", f"a {pool.capacity} pool", compiled.location_policy,
                                facts.LOCATION_POLICIES))
    if compiled.consume_reservation_type is not None:
        values.append(EnumValue("reservation_affinity.consume_reservation_type", "a flex-start pool",
                                compiled.consume_reservation_type, facts.RESERVATION_AFFINITY_TYPES))
    if compiled.reservation:
        values.append(EnumValue("reservation_affinity.consume_reservation_type", "a reserved floor",
                                compiled.reservation.consume_reservation_type, facts.RESERVATION_AFFINITY_TYPES))
    return values
