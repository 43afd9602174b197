"""What one node of a pool offers, what the pods of each workload must ask for, and how a reserved
floor is upgraded: the values the cloud's autoscaler, the device plugin and the pods must agree on.

- `node_offers`: the extended resources one node advertises once its device plugin runs. Whole GPUs
  and time-sliced / MPS replicas are `nvidia.com/gpu` (R replicas per GPU); MIG devices are
  `nvidia.com/mig-<profile>` under the device plugin's `mixed` strategy and `nvidia.com/gpu` under
  `single` (NVIDIA k8s-device-plugin README, "Configuration Option Details", MIG_STRATEGY; GKE's own
  plugin always names partitions `nvidia.com/gpu`:
  https://cloud.google.com/kubernetes-engine/docs/how-to/gpus-multi).
- The MIG strategy is one per cluster (the GPU Operator passes `mig.strategy` to every device
  plugin as MIG_STRATEGY), so it is decided per target: `single` when every MIG pool has one profile
  on every GPU of its nodes, `mixed` otherwise. Under `mixed` a node whose GPUs are all partitioned
  advertises no `nvidia.com/gpu`, which the Cluster Autoscaler's GPU processor counts as an unready
  GPU node while the node carries the cloud's GPU label
  (cluster-autoscaler/processors/customresources/gpu_processor.go,
  FilterOutNodesWithUnreadyResources): such pools do not get the label declared.
- `pod_requests`: per workload, the resources, node selector and tolerations its pods need to fit
  the pools that carry it and no pool of another kind.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence

from gpustack.clouds import Cloud
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.model import FloorUpgrade, Placement, PodRequest, Pool, Taint
from gpustack.plan.nodes import kubelet_allocatable
from gpustack.spec.model import HOURS_PER_MONTH

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# On MIG pools with one profile: the profile, so pods of a `single`-strategy cluster (where every MIG
# device is `nvidia.com/gpu`) select the pools cut into the slice size they asked for.
MIG_PROFILE_LABEL = "gpustack.dev/mig-profile"
# Node labels a pod selects: its kind (so it never lands on a pool of another kind) and its profile.
_SELECTED_LABELS = ("gpustack.dev/kind", MIG_PROFILE_LABEL)

SINGLE = "single"
MIXED = "mixed"


def mig_profiles(pool: Pool) -> tuple[str, ...]:
    return tuple(sorted({profile for group in pool.sharing.mig for profile, _ in group.layout}))


def _uniform(pool: Pool) -> bool:
    """One MIG profile on every GPU of the node: what the `single` strategy can advertise."""
    partitioned = sum(group.gpus for group in pool.sharing.mig)
    return len(mig_profiles(pool)) == 1 and partitioned == pool.gpus_per_node


def mig_strategy(pools: Sequence[Pool], cloud: Cloud) -> str:
    """The device plugin's MIG strategy for a target: `single` unless a MIG pool needs `mixed`."""
    if cloud.native_mig_strategy is not None:
        return cloud.native_mig_strategy
    mig = [p for p in pools if p.sharing.mode == "mig"]
    return SINGLE if all(_uniform(p) for p in mig) else MIXED


# HAMi (enforced fractions): its device plugin advertises nvidia.com/gpu = GPUs x deviceSplitCount, and
# pods ask for one vGPU plus a percent of the GPU's cores (nvidia.com/gpucores), which only HAMi's scheduler
# knows (Project-HAMi/HAMi README; gpustack/render/hami.py sets the split: 100 over the smallest percent,
# at least HAMi's default 10).
HAMI_CORES_RESOURCE = "nvidia.com/gpucores"
# The same percent of the GPU's memory (charts/hami/values.yaml resourceMemPercentage): without a memory
# ask HAMi gives a pod the whole card's memory (device-configmap.yaml defaultMemory: 0) and counts it so,
# and no second pod would fit the GPU.
HAMI_MEMORY_PERCENT_RESOURCE = "nvidia.com/gpumem-percentage"
HAMI_DEFAULT_SPLIT = 10


def hami_split(pools: Sequence[Pool]) -> int:
    smallest = min((round(pl.gpu_share * 100) for p in pools if p.sharing.mode == "fractional"
                    for pl in p.placements), default=0)
    return max(HAMI_DEFAULT_SPLIT, 100 // smallest) if smallest else HAMI_DEFAULT_SPLIT


def node_offers(pool: Pool, strategy: str, split: int = HAMI_DEFAULT_SPLIT) -> tuple[tuple[str, int], ...]:
    """The extended resources one node of `pool` advertises, by name."""
    sharing = pool.sharing
    if sharing.mode == "fractional":
        return ((GPU_RESOURCE, pool.gpus_per_node * split),)
    if sharing.by_clients:
        return ((GPU_RESOURCE, pool.gpus_per_node * (sharing.replicas or 1)),)
    if sharing.mode != "mig":
        return ((GPU_RESOURCE, pool.gpus_per_node),)
    devices: Counter[str] = Counter()
    for group in sharing.mig:
        for profile, count in group.layout:
            devices[profile] += count * group.gpus
    whole = pool.gpus_per_node - sum(group.gpus for group in sharing.mig)
    if strategy == SINGLE:
        return ((GPU_RESOURCE, sum(devices.values()) + whole),)
    offers = {f"{MIG_RESOURCE_PREFIX}{profile}": count for profile, count in devices.items()}
    if whole:
        offers[GPU_RESOURCE] = whole
    return tuple(sorted(offers.items()))


def _pod_gpu_resource(pool: Pool, profile: str | None, gpus: int) -> tuple[str, int]:
    if pool.sharing.mode == "mig" and pool.mig_strategy == MIXED:
        return f"{MIG_RESOURCE_PREFIX}{profile}", 1
    if pool.sharing.mode == "none":
        return GPU_RESOURCE, gpus
    return GPU_RESOURCE, 1


def node_allocatable(pool: Pool, provisioner: Provisioner) -> tuple[tuple[str, str], ...]:
    """The kubelet's allocatable cpu and memory of one node of the provisioner's node image, rounded
    down (millicores, MiB)."""
    cpu, memory = kubelet_allocatable(pool.vcpus_per_node, pool.memory_gib_per_node,
                                      provisioner.kubelet_reservation, pool.instance_type)
    return (("cpu", f"{math.floor(cpu * 1000)}m"), ("memory", f"{math.floor(memory * 1024)}Mi"))


def quantity_cpu(cores: float) -> str:
    return f"{cores:g}" if float(cores).is_integer() else f"{round(cores * 1000)}m"


def quantity_memory(gib: float) -> str:
    return f"{gib:g}Gi" if float(gib).is_integer() else f"{math.ceil(gib * 1024)}Mi"


def pod_requests(pools: Sequence[Pool], provisioner: Provisioner) -> tuple[PodRequest, ...]:
    """Per workload of the target: what its pods ask for, select and tolerate (the same on every pool
    that carries it: one Deployment or Job spans its floor and burst, or its spot and fallback pools)."""
    mechanism = provisioner.fallback_mechanism
    selected = _SELECTED_LABELS + ((mechanism.pool_marker,) if mechanism and mechanism.pool_marker else ())
    carriers: dict[str, list[Pool]] = {}
    placed: dict[tuple[str, str], Placement] = {}  # (workload, pool name) -> its placement: no scans
    for pool in pools:
        for placement in pool.placements:
            if placement.replicas:
                carriers.setdefault(placement.workload, []).append(pool)
                placed[placement.workload, pool.name] = placement
    # Thousands of workloads share a few hundred pools and pod shapes: each answer once.
    asked: dict[tuple[object, ...], tuple[tuple[str, str], ...]] = {}
    selected_on: dict[tuple[str, ...], tuple[tuple[tuple[str, str], ...], tuple[Taint, ...]]] = {}
    requests = []
    for workload, mine in sorted(carriers.items()):
        asks = set()
        for pool in mine:
            placement = placed[workload, pool.name]
            shape = (pool.name, placement.profile, placement.gpu_share, placement.cpu, placement.memory_gib)
            if shape not in asked:
                asked[shape] = _pod_resources(pool, placement)
            asks.add(asked[shape])
        assert len(asks) == 1, (workload, asks)  # the pools of one workload share its sharing mode
        names = tuple(p.name for p in mine)
        if names not in selected_on:
            selected_on[names] = _selector_and_taints(mine, selected)
        selector, taints = selected_on[names]
        requests.append(PodRequest(workload, asks.pop(), selector, taints, tuple(sorted(names))))
    return tuple(requests)


def _pod_resources(pool: Pool, placement: Placement) -> tuple[tuple[str, str], ...]:
    """What a pod of this placement asks for: its GPU resource, HAMi's percents, CPU and memory."""
    gpus = round(placement.gpu_share) if pool.sharing.mode == "none" else 1
    resource = _pod_gpu_resource(pool, placement.profile, gpus)
    extra: list[tuple[str, str]] = []
    if pool.sharing.mode == "fractional":
        percent = str(round(placement.gpu_share * 100))
        extra.extend(((HAMI_CORES_RESOURCE, percent), (HAMI_MEMORY_PERCENT_RESOURCE, percent)))
    if placement.cpu:
        extra.append(("cpu", quantity_cpu(placement.cpu)))
    if placement.memory_gib:
        extra.append(("memory", quantity_memory(placement.memory_gib)))
    return tuple(sorted([(resource[0], str(resource[1])), *extra]))


def _selector_and_taints(pools: list[Pool], selected: tuple[str, ...]
                         ) -> tuple[tuple[tuple[str, str], ...], tuple[Taint, ...]]:
    """The selected labels every one of `pools` carries, and their taints (each key and effect once)."""
    common = set(dict(pools[0].labels).items())
    for pool in pools[1:]:
        common &= set(dict(pool.labels).items())
    selector = tuple(sorted((k, v) for k, v in common if k in selected))
    taints: dict[tuple[str, str], Taint] = {}
    for pool in pools:
        for taint in pool.taints:
            taints.setdefault((taint.key, taint.effect), taint)
    return selector, tuple(taints[k] for k in sorted(taints))


def floor_upgrade(pool: Pool, provisioner: Provisioner) -> FloorUpgrade | None:
    """Upgrade settings of a reserved floor that never surge beyond its reservation, with what the
    cloud's default surge would cost in reservation headroom instead (None where the provisioner declares
    none: `Provisioner.floor_upgrade_rule`)."""
    rule = provisioner.floor_upgrade_rule
    if rule is None or not pool.reserved_nodes:
        return None
    surge = rule.default_surge(pool.reserved_nodes)
    node_month = pool.price.usd_per_node_hour * HOURS_PER_MONTH
    return FloorUpgrade(
        max_surge=rule.max_surge, max_unavailable=min(rule.max_unavailable, pool.reserved_nodes),
        headroom_nodes=rule.max_surge, headroom_monthly_usd=rule.max_surge * node_month,
        default_surge_nodes=surge, default_headroom_monthly_usd=surge * node_month,
        settings=rule.settings, source=rule.source)


def annotate(pools: Sequence[Pool], provisioner: Provisioner
             ) -> tuple[tuple[Pool, ...], tuple[PodRequest, ...], list[tuple[str, str]]]:
    """The pools with their offers, MIG strategy, autoscaler labels and upgrade settings; the pods'
    requests; and (pool, warning) where the cloud's autoscaler cannot be shown what a pool at zero offers."""
    cloud = provisioner.cloud
    strategy = mig_strategy(pools, cloud)
    split = hami_split(pools)
    out = []
    warnings = []
    for pool in pools:
        labels = dict(pool.labels)
        profiles = mig_profiles(pool)
        if pool.sharing.mode == "mig" and len(profiles) == 1:
            labels[MIG_PROFILE_LABEL] = profiles[0]
        offers = node_offers(pool, strategy, split)
        autoscaler_labels: tuple[tuple[str, str], ...] = ()
        gpu_label = cloud.declared_gpu_label(pool.gpu)
        # A node whose every device is a MIG device advertises no nvidia.com/gpu under `mixed`: with the
        # GPU label the autoscaler would count it as an unready GPU node for good.
        if gpu_label and any(name == GPU_RESOURCE for name, _ in offers):
            autoscaler_labels = (gpu_label,)
        pool = dataclasses.replace(pool, labels=tuple(sorted(labels.items())), node_offers=offers,
                                   node_allocatable=node_allocatable(pool, provisioner),
                                   mig_strategy=strategy if pool.sharing.mode == "mig" else None,
                                   autoscaler_labels=autoscaler_labels, upgrade=floor_upgrade(pool, provisioner))
        gap = provisioner.template_gap(pool)
        if gap and (pool.min_nodes == 0 or not provisioner.keeps_min_nodes):
            warnings.append((pool.name, f"pool {pool.name!r}: {gap}"))
        elif pool.sharing.mode == "fractional" and pool.min_nodes == 0:
            warnings.append((pool.name, (f"pool {pool.name!r}: its pods ask for {HAMI_CORES_RESOURCE}, which no node "
                                         "advertises (HAMi's scheduler accounts for it): the Cluster Autoscaler's "
                                         "scheduling simulation (NodeResourcesFit) finds no node for them, so they "
                                         "cannot start a node of a pool at zero; keep a floor of one node")))
        out.append(pool)
    return tuple(out), pod_requests(out, provisioner), warnings
