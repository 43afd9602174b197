"""AKS: one user agent pool per planned pool, and a capacity reservation for each reserved floor.

Every value comes from the plan, the enum strings from each pool's `compiled` value (`AksAgentPool` of
`managed.py`, checked when the spec was planned); nothing is decided here. Logical names derive from the plan's pool name, so
adding a workload or reordering the spec never renames an existing resource.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi_azure_native import compute, containerservice

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool
from gpustack.clouds.azure.managed import AksAgentPool
from gpustack.plan.model import Plan, Pool, TargetPlan


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    del plan  # everything needed is in the target
    resource_group = str(dict(target.settings)["resource_group"])
    live = _live_counts(target, resource_group, context) if target.pools else pulumi.Output.from_input({})
    build = functools.partial(_agent_pool, target, resource_group, live, context.cluster_of(target))
    return {pool.name: GpuNodePool(target.cloud, pool, build, context) for pool in target.pools}


# azure-native gives every resource an alias for each past API version of its type (about 90 for
# AgentPool), so that stacks created with versioned types can move without a replacement. gpustack
# only ever declares the unversioned types, so those aliases can never match; resolving them costs
# about 0.1 s and 2 MiB per resource (docs/performance.md), so they are dropped before registration.
_VERSIONED_TYPE = re.compile(r"^azure-native:[A-Za-z]+/v\d{8}(preview)?:")


def _without_version_aliases(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    aliases = args.opts.aliases or []
    kept = [a for a in aliases
            if not (isinstance(a, pulumi.Alias) and isinstance(a.type_, str) and _VERSIONED_TYPE.match(a.type_))]
    if len(kept) == len(aliases):
        return None
    opts = copy.copy(args.opts)
    opts.aliases = kept
    return pulumi.ResourceTransformationResult(args.props, opts)


def _live_counts(target: TargetPlan, resource_group: str, context: DeployContext) -> pulumi.Output[dict[str, int]]:
    """The node count of every agent pool the cluster has now, by agent pool name (the managed cluster
    lists them all in agentPoolProfiles)."""
    cluster = containerservice.get_managed_cluster_output(resource_group_name=resource_group,
                                                          resource_name=context.cluster_of(target), opts=context.invoke())
    return cluster.agent_pool_profiles.apply(
        lambda profiles: {p.name: int(p.count or 0) for p in profiles or []})


def _count(pool: Pool, live: pulumi.Output[dict[str, int]]) -> pulumi.Output[int]:
    """The count to send: the live one, kept inside the new bounds, or the floor for a new pool.

    The autoscaler moves the count, so sending the floor would undo its work; ignoring it instead
    sends the stale value, which the agent-pool API refuses once a floor rises above it or a maximum
    falls below it ("agentPoolProfile.count was 0. It must be greater or equal to minCount:1 and less
    than or equal to maxCount", quoted in kubernetes-sigs/cluster-api-provider-azure#5947)."""
    return live.apply(lambda counts: min(pool.max_nodes, max(pool.min_nodes, counts[pool.cloud_name]))
                      if pool.cloud_name in counts else pool.min_nodes)


def _agent_pool(target: TargetPlan, resource_group: str, live: pulumi.Output[dict[str, int]],
                cluster: pulumi.Input[str], pool: Pool, opts: pulumi.ResourceOptions) -> Mapping[str, Any]:
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transformations=[_without_version_aliases]))
    compiled = pool.compiled
    assert isinstance(compiled, AksAgentPool)
    args: dict[str, Any] = dict(
        resource_group_name=resource_group,
        resource_name_=cluster,
        agent_pool_name=pool.cloud_name,
        mode=compiled.mode,
        os_type=compiled.os_type,
        os_sku=compiled.os_sku,
        type=compiled.type,
        vm_size=pool.instance_type,
        enable_auto_scaling=True,
        min_count=pool.min_nodes,
        max_count=pool.max_nodes,
        count=_count(pool, live),
        os_disk_size_gb=pool.disk_gib,
        node_labels=dict(pool.labels),
        node_taints=list(compiled.node_taints),
        # Attribution, and the node-template tags the autoscaler reads from the pool's scale set at zero.
        tags=dict(compiled.tags),
        scale_set_priority=compiled.scale_set_priority,
        gpu_profile=containerservice.GPUProfileArgs(driver=compiled.gpu_driver),
    )
    if compiled.scale_set_eviction_policy is not None:
        args.update(scale_set_eviction_policy=compiled.scale_set_eviction_policy, spot_max_price=compiled.spot_max_price)
    if pool.upgrade:  # a floor is reimaged in place, never surged beyond its reservation
        args["upgrade_settings"] = containerservice.AgentPoolUpgradeSettingsArgs(**dict(pool.upgrade.settings))
    if compiled.gpu_instance_profile is not None:
        args["gpu_instance_profile"] = compiled.gpu_instance_profile
    if pool.spread_zones:  # a workload's availability: a zonal pool, balanced over its zones
        args["availability_zones"] = list(pool.spread_zones)
    outputs: dict[str, Any] = {}
    pool_opts = opts
    if pool.reserved_nodes:
        group, reservations = _reservation(target, resource_group, pool, opts)
        args["capacity_reservation_group_id"] = group.id
        # AKS associates the group only if it already holds a reservation (else: a warning, no association).
        pool_opts = pulumi.ResourceOptions.merge(pool_opts, pulumi.ResourceOptions(depends_on=list(reservations)))
        outputs["capacity_reservation_group_id"] = group.id
    agent_pool = containerservice.AgentPool(pool.name, **args, opts=pool_opts)
    outputs[POOL_ID] = agent_pool.id
    return outputs


def _reservation(target: TargetPlan, resource_group: str, pool: Pool, opts: pulumi.ResourceOptions
                 ) -> tuple[compute.CapacityReservationGroup, list[compute.CapacityReservation]]:
    """The capacity reservation group holding the pool's floor: `reserved_nodes` VMs of its size, regional;
    or, for a floor spread over zones, a zonal group with one reservation per zone (a zonal pool needs a
    group with its zones, https://learn.microsoft.com/azure/virtual-machines/capacity-reservation-create)."""
    tags = pool.attribution
    zones = [zone for zone, _ in pool.reservations] if pool.spread_zones else []
    group = compute.CapacityReservationGroup(
        f"{pool.name}-crg", resource_group_name=resource_group, location=target.region, tags=tags,
        zones=zones or None, opts=opts)
    parts = pool.reservations if zones else ((None, pool.reserved_nodes),)
    reservations = [compute.CapacityReservation(
        f"{pool.name}-cr" + (f"-{zone}" if zone else ""), resource_group_name=resource_group, location=target.region,
        capacity_reservation_group_name=group.name, zones=[zone] if zone else None,
        sku=compute.SkuArgs(name=pool.instance_type, capacity=count), tags=tags, opts=opts)
        for zone, count in parts]
    return group, reservations
