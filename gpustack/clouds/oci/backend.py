"""OKE: one managed node pool per planned pool, capacity reservations for reserved floors, and the
Cluster Autoscaler add-on holding every pool's bounds.

Every value comes from the plan, the target's settings or `gpustack.clouds.oci.facts`; the enum strings
and the cloud-init script from each pool's `compiled` value (`OkeNodePool` of `managed.py`, checked
when the spec was planned); nothing is decided here. Logical names derive from the plan's
pool name (and the target name for the add-on), so reordering the spec never renames a resource.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pulumi
import pulumi_oci as oci

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool
from gpustack.clouds.oci import facts
from gpustack.clouds.oci.managed import OkeNodePool
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render.autoscaling import needs_node_group_ids


@dataclasses.dataclass(frozen=True)
class _Where:
    """Where and from what the target's nodes launch."""

    cluster_id: str
    compartment_id: str
    subnet_id: str
    kubernetes_version: pulumi.Input[str]
    image_id: pulumi.Input[str]
    image_pinned: bool  # from settings.image_id; else looked up, and then only new pools take a newer one
    availability_domains: pulumi.Output[list[str]]  # sorted


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    del plan  # everything needed is in the target
    settings = dict(target.settings)
    compartment = str(settings["compartment_id"])
    wants_addon = settings.get("cluster_autoscaler", "addon") == "addon" and bool(target.pools)
    # Read before anything is declared, so a cluster the add-on cannot run on fails the preview, not
    # the end of `pulumi up` with the pools already created.
    # A plain (not output) read: the cluster exists before its pools are planned onto it.
    cluster = oci.containerengine.get_cluster(cluster_id=target.cluster,
                                              opts=pulumi.InvokeOptions(parent=context.parent))
    if wants_addon:
        check_cluster_type(target.cluster, cluster.type)
    image: pulumi.Input[str]
    if settings.get("image_id"):
        image = str(settings["image_id"])
        # The pools run the version the pinned image is built for: the two move together.
        version: pulumi.Input[str] = pinned_image_version(
            image, oci.core.get_image(image_id=image, opts=pulumi.InvokeOptions(parent=context.parent)).display_name,
            cluster.kubernetes_version)
    else:
        # The cluster's version, on the newest GPU image built for it.
        version = cluster.kubernetes_version
        options = oci.containerengine.get_node_pool_option_output(node_pool_option_id=target.cluster,
                                                                  compartment_id=compartment, opts=context.invoke())
        image = options.sources.apply(lambda sources: gpu_image(sources, cluster.kubernetes_version))
    domains = availability_domains(settings, compartment, context)
    where = _Where(target.cluster, compartment, str(settings["subnet_id"]), version, image,
                   bool(settings.get("image_id")), domains)
    pools = {pool.name: GpuNodePool(target.cloud, pool, functools.partial(_node_pool, where), context)
             for pool in target.pools}
    if wants_addon:
        # The priority expander only together with its ConfigMap, which needs the in-cluster layer.
        priority = needs_node_group_ids(target) and context.in_cluster
        _autoscaler(target, [(pools[p.name].outputs[POOL_ID], p) for p in sorted(target.pools, key=lambda p: p.name)],
                    priority, context)
    return pools


def availability_domains(settings: Mapping[str, object], compartment: str,
                         context: DeployContext) -> pulumi.Output[list[str]]:
    """The target's availability domains, sorted: settings.availability_domains, else all of the compartment's."""
    if settings.get("availability_domains"):
        return pulumi.Output.from_input(sorted(str(d) for d in cast("list[object]", settings["availability_domains"])))
    found = oci.identity.get_availability_domains_output(compartment_id=compartment, opts=context.invoke())
    return found.availability_domains.apply(lambda ads: sorted(ad["name"] for ad in ads))


def declare_reservation(pool: Pool, compartment_id: str, domain: pulumi.Input[str], tags: Mapping[str, str],
                        opts: pulumi.ResourceOptions, suffix: str = "",
                        count: int | None = None) -> oci.core.ComputeCapacityReservation:
    """The capacity reservation of a reserved floor: its shape, as many instances as the floor (or `count`,
    the part of a spread floor in this domain), in one availability domain (a reservation holds one shape in
    one domain), whichever provisioner launches into it."""
    return oci.core.ComputeCapacityReservation(
        f"{pool.name}-reservation{suffix}", compartment_id=compartment_id, availability_domain=domain,
        display_name=pool.cloud_name, is_default_reservation=False, freeform_tags=dict(tags),
        instance_reservation_configs=[oci.core.ComputeCapacityReservationInstanceReservationConfigArgs(
            instance_shape=pool.instance_type,
            reserved_count=str(pool.reserved_nodes if count is None else count))],
        opts=opts)


def check_cluster_type(cluster_id: str, cluster_type: str) -> None:
    """OKE add-ons, the Cluster Autoscaler among them, run on enhanced clusters only."""
    if cluster_type != facts.ENHANCED_CLUSTER:
        raise pulumi.RunError(
            f"gpustack: cluster {cluster_id} is a {cluster_type or 'basic'} cluster, and OKE's Cluster Autoscaler "
            f"add-on runs only on an {facts.ENHANCED_CLUSTER} ({facts.CLUSTER_TYPES_SOURCE}): upgrade the cluster "
            "(oci ce cluster update --cluster-id ... --type ENHANCED_CLUSTER), or set settings.cluster_autoscaler: "
            "none and run the autoscaler yourself (docs/deploy.md)")


def pinned_image_version(image_id: str, image_name: str, cluster_version: str) -> str:
    """The Kubernetes version a pinned OKE image is built for ('-OKE-<version>' in its name), which the
    pools then run; refused when it is not an OKE image or is newer than the control plane."""
    match = re.search(r"-OKE-(\d+\.\d+\.\d+)(-|$)", image_name)
    if not match:
        raise pulumi.RunError(f"gpustack: settings.image_id {image_id} ({image_name!r}) is not an OKE node image: its "
                              "name has no -OKE-<Kubernetes version>; use an image from the cluster's node-pool options")
    if _version(match.group(1)) > _version(cluster_version):
        raise pulumi.RunError(f"gpustack: settings.image_id {image_id} is built for Kubernetes {match.group(1)}, newer "
                              f"than the cluster's {cluster_version}: nodes may not run ahead of the control plane")
    return f"v{match.group(1)}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _node_pool(where: _Where, pool: Pool, opts: pulumi.ResourceOptions) -> Mapping[str, Any]:
    compiled = pool.compiled
    assert isinstance(compiled, OkeNodePool)
    tags = pool.attribution
    outputs: dict[str, Any] = {}
    placements: pulumi.Input[Sequence[Any]]
    if pool.reserved_nodes and pool.spread_zones and pool.reservations:
        # A workload's availability: one placement per availability domain, each with its own
        # reservation (a reservation holds one shape in one domain; a placement config names the
        # reservation of its domain, NodePoolNodeConfigDetailsPlacementConfig.capacityReservationId,
        # https://docs.oracle.com/en-us/iaas/api/#/en/containerengine/20180222/datatypes/NodePoolPlacementConfigDetails).
        parts = [(domain, declare_reservation(pool, where.compartment_id, domain, tags, opts, suffix=f"-{i}" if i else "",
                                              count=count)) for i, (domain, count) in enumerate(pool.reservations)]
        placements = pulumi.Output.all(*[r.id for _, r in parts]).apply(
            lambda ids: [_placement(where.subnet_id, domain, capacity_reservation_id=i)
                         for (domain, _), i in zip(parts, ids)])
        outputs["capacity_reservation_id"] = parts[0][1].id
    elif pool.reserved_nodes:
        # The floor lives in one availability domain: a reservation holds one shape in one domain.
        domain = where.availability_domains.apply(lambda names: names[0])
        reservation = declare_reservation(pool, where.compartment_id, domain, tags, opts)
        placements = pulumi.Output.all(domain, reservation.id).apply(
            lambda a: [_placement(where.subnet_id, a[0], capacity_reservation_id=a[1])])
        outputs["capacity_reservation_id"] = reservation.id
    else:
        placements = where.availability_domains.apply(
            lambda names: [_placement(where.subnet_id, name, preemption_action=compiled.preemption_action)
                           for name in names])
    node_pool = oci.containerengine.NodePool(
        pool.name,
        cluster_id=where.cluster_id,
        compartment_id=where.compartment_id,
        name=pool.cloud_name,
        node_shape=pool.instance_type,
        kubernetes_version=where.kubernetes_version,
        node_source_details=oci.containerengine.NodePoolNodeSourceDetailsArgs(
            image_id=where.image_id, source_type=compiled.node_source_type,
            boot_volume_size_in_gbs=str(pool.disk_gib)),
        node_config_details=oci.containerengine.NodePoolNodeConfigDetailsArgs(
            size=pool.min_nodes, placement_configs=placements, freeform_tags=tags),
        initial_node_labels=[oci.containerengine.NodePoolInitialNodeLabelArgs(key=k, value=v) for k, v in pool.labels],
        # The kubelet registers the taints through the cloud-init; the autoscaler reads them for a pool at
        # zero from kubelet-extra-args (facts.KUBELET_EXTRA_ARGS).
        node_metadata={"user_data": user_data(compiled), facts.KUBELET_EXTRA_ARGS: compiled.kubelet_extra_args},
        # A floor's nodes are cycled one at a time without an instance beyond its reservation.
        node_pool_cycling_details=oci.containerengine.NodePoolNodePoolCyclingDetailsArgs(
            **dict(pool.upgrade.settings)) if pool.upgrade else None,
        freeform_tags=tags,
        # The autoscaler owns the node count once the pool exists; `size` only sizes the first creation.
        # A looked-up image is the newest Oracle publishes: taking it would roll every pool on an
        # unrelated `pulumi up`, so existing pools keep theirs until settings.image_id says otherwise,
        # and keep their Kubernetes version with it: after a control-plane upgrade, a new version
        # with the old image is refused by OKE (409), so the two only ever move together.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=[
            "nodeConfigDetails.size",
            *([] if where.image_pinned else ["nodeSourceDetails.imageId", "kubernetesVersion"])])),
    )
    outputs[POOL_ID] = node_pool.id
    return outputs


def _placement(subnet_id: str, domain: str, *, preemption_action: str | None = None,
               capacity_reservation_id: str | None = None
               ) -> oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs:
    preemptible_config = None
    if preemption_action:  # never together with a reservation: preemptible capacity cannot use one
        preemptible_config = oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigArgs(
            preemption_action=oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigPreemptibleNodeConfigPreemptionActionArgs(
                type=preemption_action, is_preserve_boot_volume=False))
    return oci.containerengine.NodePoolNodeConfigDetailsPlacementConfigArgs(
        availability_domain=domain, subnet_id=subnet_id, capacity_reservation_id=capacity_reservation_id,
        preemptible_node_config=preemptible_config)


def user_data(compiled: OkeNodePool) -> str:
    """`node_metadata.user_data`: the compiled cloud-init script, base64-encoded as OCI expects."""
    return base64.b64encode(compiled.cloud_init.encode("utf-8")).decode("ascii")


def gpu_image(sources: Sequence[Mapping[str, Any]], kubernetes_version: str) -> str:
    """The newest x86 GPU node image built for `kubernetes_version` among the node-pool options.

    GPU images have 'GPU' in their name, ARM images 'aarch64', and OKE images end in
    '-OKE-<version>[-build]' (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengrunninggpunodes.htm).
    """
    version = kubernetes_version.lstrip("v")
    built_for = re.compile(rf"-OKE-{re.escape(version)}(-|$)")
    fits = [s for s in sources if str(s.get("source_type", "")).upper() == facts.NODE_SOURCE_TYPE
            and "GPU" in s["source_name"] and "aarch64" not in s["source_name"] and built_for.search(s["source_name"])]
    if not fits:
        raise pulumi.RunError(f"gpustack: no x86 GPU node image for Kubernetes {kubernetes_version} among the "
                              "cluster's node-pool options; set settings.image_id to an OKE GPU image OCID")
    return str(max(fits, key=lambda s: (_image_date(s["source_name"]), s["source_name"]))["image_id"])


def _image_date(name: str) -> tuple[int, ...]:
    match = re.search(r"-(\d{4})\.(\d{2})\.(\d{2})-", name)
    return tuple(int(g) for g in match.groups()) if match else ()


def _autoscaler(target: TargetPlan, pools: list[tuple[pulumi.Output[str], Pool]],
                priority: bool = False, context: DeployContext | None = None) -> oci.containerengine.Addon:
    """OKE's Cluster Autoscaler add-on with `<min>:<max>:<node pool OCID>` for every pool of the target
    (https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengconfiguringclusteraddons-configurationarguments.htm)."""
    bounds = [pulumi.Output.concat(str(p.min_nodes), ":", str(p.max_nodes), ":", pool_id) for pool_id, p in pools]
    nodes = pulumi.Output.all(*bounds).apply(lambda parts: ",".join(parts))
    return oci.containerengine.Addon(
        f"{target.name}-cluster-autoscaler",
        addon_name=facts.AUTOSCALER_ADDON,
        cluster_id=target.cluster,
        remove_addon_resources_on_delete=True,
        configurations=[
            oci.containerengine.AddonConfigurationArgs(key="authType", value=facts.AUTOSCALER_AUTH_TYPE),
            oci.containerengine.AddonConfigurationArgs(key="nodes", value=nodes),
            *([oci.containerengine.AddonConfigurationArgs(key="expander", value=facts.AUTOSCALER_EXPANDER)]
              if priority else []),
        ],
        opts=(context or DeployContext()).options(),
    )
