"""GKE: one node pool per pool, with GKE's own GPU sharing and MIG partitioning, and a specific
Compute Engine reservation for each reserved floor.

GKE has no scheduled scaling of node pools; the plan says so for every scheduled pool and the
in-cluster auto-stop covers it. Every value comes from the plan; enum strings come from
each pool's `compiled` value (`GkeNodePool` of `managed.py`), checked when the spec was planned. Pulumi names derive from the
pool's plan name, so adding a workload never renames an existing resource.
"""

from __future__ import annotations

import math
from typing import Any

import pulumi
import pulumi_gcp as gcp

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool, checked
from gpustack.clouds.gcp.managed import GkeNodePool
from gpustack.plan.model import Plan, Pool, TargetPlan

# initial_node_count forces a new node pool when it changes, and the autoscaler changes the live
# count; the pulumi-gcp docstring advises ignoring later changes.
_INITIAL_COUNT_IGNORED = ["initialNodeCount"]


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    del plan  # everything a GKE pool needs is on the target

    def build(pool: Pool, opts: pulumi.ResourceOptions) -> dict[str, Any]:
        return _node_pool(target, pool, context.cluster_of(target), opts)

    return {pool.name: GpuNodePool(target.cloud, pool, build, context) for pool in target.pools}


def _node_pool(target: TargetPlan, pool: Pool, cluster: pulumi.Input[str],
               opts: pulumi.ResourceOptions) -> dict[str, Any]:
    settings = dict(target.settings)
    project = settings.get("project")
    assert project is None or isinstance(project, str)  # the spec's pattern admits strings only
    # The plan's zones: those of settings.node_locations that offer the pool's GPU.
    zones = list(pool.zones)
    compiled = pool.compiled
    assert isinstance(compiled, GkeNodePool)
    accelerator = checked(compiled.accelerator_type)
    outputs: dict[str, Any] = {}
    reservation_affinity = None
    if compiled.reservation:
        name = compiled.reservation.name
        zones = declare_reservations(pool, name, accelerator, project, opts)
        reservation_affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type=compiled.reservation.consume_reservation_type, key=compiled.reservation.key,
            values=[name])
        outputs["reservation_name"] = name
    elif compiled.consume_reservation_type is not None:
        reservation_affinity = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type=compiled.consume_reservation_type)
    node_pool = gcp.container.NodePool(
        f"{pool.name}-node-pool",
        name=pool.cloud_name,
        cluster=cluster,
        location=target.region,
        project=project,
        node_locations=zones or None,
        initial_node_count=math.ceil(pool.min_nodes / len(zones)) if pool.min_nodes and zones else None,
        autoscaling=gcp.container.NodePoolAutoscalingArgs(
            total_min_node_count=pool.min_nodes, total_max_node_count=pool.max_nodes,
            location_policy=compiled.location_policy),
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type=pool.instance_type,
            disk_size_gb=pool.disk_gib,
            spot=True if compiled.spot else None,
            labels=dict(pool.labels),
            resource_labels=dict(compiled.resource_labels),
            taints=[gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=checked(t.effect))
                    for t in compiled.taints],
            guest_accelerators=[_accelerator(pool, compiled)],
            reservation_affinity=reservation_affinity,
            flex_start=True if compiled.flex_start else None,
            max_run_duration=compiled.max_run_duration),
        management=gcp.container.NodePoolManagementArgs(auto_repair=compiled.auto_repair)
        if compiled.auto_repair is not None else None,
        queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True)
        if compiled.queued_provisioning else None,
        # A floor's nodes are recreated one at a time inside its reservation, never surged beyond it.
        upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(**dict(pool.upgrade.settings))
        if pool.upgrade else None,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=_INITIAL_COUNT_IGNORED)))
    outputs[POOL_ID] = node_pool.id
    return outputs


def declare_reservations(pool: Pool, name: str, accelerator: str, project: str | None,
                         opts: pulumi.ResourceOptions) -> list[str]:
    """The specific Compute Engine reservation(s) of a reserved floor, named `name`; returns their zones.

    Reservations are zonal: one per zone of the plan's spread (all under the pool's reservation name,
    unique per zone), else the whole floor in the pool's first zone."""
    parts = list(pool.reservations) or [(pool.zones[0], pool.reserved_nodes)]
    for zone, count in parts:
        suffix = "" if len(parts) == 1 and not pool.reservations else f"-{zone}"
        gcp.compute.Reservation(
            f"{pool.name}-reservation{suffix}",
            name=name,
            zone=zone,
            project=project,
            specific_reservation=gcp.compute.ReservationSpecificReservationArgs(
                count=count,
                instance_properties=gcp.compute.ReservationSpecificReservationInstancePropertiesArgs(
                    machine_type=pool.instance_type,
                    guest_accelerators=[
                        gcp.compute.ReservationSpecificReservationInstancePropertiesGuestAcceleratorArgs(
                            accelerator_type=accelerator, accelerator_count=pool.gpus_per_node)])),
            # Only node pools that name it may consume it, so other VMs cannot eat the floor.
            specific_reservation_required=True,
            opts=opts)
    return [zone for zone, _ in parts]


def _accelerator(pool: Pool, compiled: GkeNodePool) -> gcp.container.NodePoolNodeConfigGuestAcceleratorArgs:
    sharing = None
    if compiled.gpu_sharing_strategy is not None:
        sharing = gcp.container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
            gpu_sharing_strategy=compiled.gpu_sharing_strategy,
            max_shared_clients_per_gpu=checked(compiled.max_shared_clients_per_gpu))
    return gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
        type=checked(compiled.accelerator_type),
        count=pool.gpus_per_node,
        gpu_partition_size=compiled.gpu_partition_size,
        gpu_sharing_config=sharing,
        gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
            gpu_driver_version=compiled.gpu_driver_version))
