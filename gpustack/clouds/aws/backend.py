"""EKS: one managed node group per pool, a capacity reservation for each reserved floor, and
Auto Scaling scheduled actions for pools with an active window.

Every value comes from the plan; enum strings come from each pool's `compiled` value (`EksNodeGroup`
of `managed.py`), checked when the spec was planned. Pulumi names derive from the pool's plan name (children) or the
target's name (the node role), so adding a workload never renames an existing resource.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, cast

import pulumi
import pulumi_aws as aws

from gpustack.backends.base import POOL_ID, DeployContext, GpuNodePool, checked
from gpustack.clouds.aws.managed import CapacityBlockLaunch, CapacityReservation, EksNodeGroup
from gpustack.plan.model import Plan, Pool, TargetPlan

# The three managed policies every EKS worker node role carries
# (https://docs.aws.amazon.com/eks/latest/userguide/create-node-role.html), by a short name for
# the attachment's Pulumi name.
NODE_POLICIES = {
    "worker": "AmazonEKSWorkerNodePolicy",
    "cni": "AmazonEKS_CNI_Policy",
    "ecr": "AmazonEC2ContainerRegistryReadOnly",
}


def declare(target: TargetPlan, plan: Plan, context: DeployContext) -> dict[str, GpuNodePool]:
    settings = dict(target.settings)
    subnet_ids = [str(s) for s in cast("list[object]", settings["subnet_ids"])]
    role = settings.get("node_role_arn") or context.node_role
    role_arn, role_ready = (_node_role(target, plan, role, context) if target.pools
                            else ("", []))
    existing = (aws.eks.get_node_groups_output(cluster_name=context.cluster_of(target), opts=context.invoke()).names
                if target.pools else None)

    def build(pool: Pool, opts: pulumi.ResourceOptions) -> dict[str, Any]:
        assert existing is not None
        return _node_group(target, pool, subnet_ids, role_arn, role_ready,
                           _desired_size(target, pool, existing, context), opts, context)

    return {pool.name: GpuNodePool(target.cloud, pool, build, context) for pool in target.pools}


def _node_role(target: TargetPlan, plan: Plan, arn: object,
               context: DeployContext) -> tuple[pulumi.Input[str], list[pulumi.Resource]]:
    """The node role's ARN from settings or the program, or one role per target with the standard worker
    policies."""
    if isinstance(arn, pulumi.Output):
        return arn, []
    if arn:
        return str(arn), []
    partition = aws.get_partition_output(opts=context.invoke())
    trust = partition.dns_suffix.apply(lambda suffix: json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": f"ec2.{suffix}"}, "Action": "sts:AssumeRole"}],
    }, sort_keys=True))
    role = aws.iam.Role(f"{target.name}-node-role", assume_role_policy=trust,
                        description=f"EKS GPU nodes of gpustack target {target.name}", tags=dict(plan.labels),
                        opts=context.options())
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{target.name}-node-role-{short}", role=role.name,
            policy_arn=partition.partition.apply(_managed_policy_arn(policy)),
            opts=context.options())
        for short, policy in NODE_POLICIES.items()
    ]
    return role.arn, [role, *attachments]


def _managed_policy_arn(policy: str) -> Callable[[str], str]:
    """The ARN of an AWS managed policy in a partition (aws, aws-cn, aws-us-gov)."""
    return lambda partition: f"arn:{partition}:iam::aws:policy/{policy}"


def _desired_size(target: TargetPlan, pool: Pool, existing: pulumi.Output[list[str]],
                  context: DeployContext) -> pulumi.Output[int]:
    """The desired size to send: the live one, kept inside the new bounds, or the floor for a new group.

    The autoscaler (and the scheduled actions) move the desired size, so sending the floor would undo
    their work; ignoring it instead sends the stale live value, which UpdateNodegroupConfig refuses once
    a floor rises above it or a maximum falls below it ("minSize ... less than or equal to desiredSize",
    https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupScalingConfig.html)."""
    def clamp(names: list[str]) -> pulumi.Input[int]:
        if pool.cloud_name not in (names or []):
            return pool.min_nodes
        live = aws.eks.get_node_group_output(cluster_name=context.cluster_of(target), node_group_name=pool.cloud_name,
                                             opts=context.invoke())
        return live.scaling_configs.apply(
            lambda configs: min(pool.max_nodes, max(pool.min_nodes, int(configs[0].desired_size))))
    return existing.apply(clamp)


def declare_reservation(pool: Pool, reservation: CapacityReservation, subnet_id: str, tags: dict[str, str],
                        opts: pulumi.ResourceOptions, context: DeployContext, suffix: str = "",
                        count: int | None = None) -> aws.ec2.CapacityReservation:
    """A floor's capacity reservation, in the zone of `subnet_id` (a reservation is zonal)."""
    zone = aws.ec2.get_subnet_output(id=subnet_id, opts=context.invoke())
    return aws.ec2.CapacityReservation(
        f"{pool.name}-reservation{suffix}",
        instance_type=pool.instance_type,
        instance_count=reservation.instance_count if count is None else count,
        availability_zone=zone.availability_zone,
        instance_platform=reservation.instance_platform,
        instance_match_criteria=reservation.instance_match_criteria,
        end_date_type=reservation.end_date_type,
        tags=tags,
        opts=opts)


def _node_group(target: TargetPlan, pool: Pool, subnet_ids: list[str], role_arn: pulumi.Input[str],
                role_ready: list[pulumi.Resource], desired_size: pulumi.Input[int],
                opts: pulumi.ResourceOptions, context: DeployContext) -> dict[str, Any]:
    compiled = pool.compiled
    assert isinstance(compiled, EksNodeGroup)
    if compiled.reservation and pool.spread_zones and pool.reservations:
        # A workload's availability: one node group and one reservation per subnet (so per zone), which
        # the cluster autoscaler can grow zone by zone for the pods' topology spread; "node groups
        # spanning multiple AZs" cannot be told which zone a pending pod needs (cluster-autoscaler
        # FAQ, https://github.com/kubernetes/autoscaler/blob/cluster-autoscaler-1.32.0/cluster-autoscaler/cloudprovider/aws/README.md#common-notes-and-gotchas).
        outputs: dict[str, Any] = {}
        for i, (subnet, count) in enumerate(pool.reservations):
            suffix = f"-{i}" if i else ""
            group = _one_group(target, pool, compiled, [subnet], role_arn, role_ready,
                               desired_size if not i else count, opts, context, suffix, count)
            outputs.update(group if not i else {f"{key}{suffix.replace('-', '_')}": value
                                                for key, value in group.items() if key != POOL_ID})
        return outputs
    return _one_group(target, pool, compiled, subnet_ids, role_arn, role_ready, desired_size, opts, context)


def _one_group(target: TargetPlan, pool: Pool, compiled: EksNodeGroup, subnet_ids: list[str],
               role_arn: pulumi.Input[str], role_ready: list[pulumi.Resource], desired_size: pulumi.Input[int],
               opts: pulumi.ResourceOptions, context: DeployContext, suffix: str = "",
               count: int | None = None) -> dict[str, Any]:
    """One node group of the pool (`suffix` '' for the pool's own, '-1'... for the other zones of a
    spread floor, each with `count` reserved nodes)."""
    tags = pool.attribution
    outputs: dict[str, Any] = {}
    reservation_spec = None
    market = None
    subnets: pulumi.Input[list[str]] = subnet_ids
    if compiled.block:
        # A block is zonal: the group launches in the target's subnets of the block's zone only, into the
        # block, with desired size 0 until the autoscaler grows it (EKS updates such a group only at 0).
        subnets = block_subnets(subnet_ids, compiled.block.zone, context)
        block_id = compiled.block.reservation_id or declare_block(pool, compiled.block, tags, opts).id
        reservation_spec = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=block_id))
        market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type=compiled.block.market_type)
        outputs["capacity_reservation_id"] = block_id
    elif compiled.reservation:
        # A reservation is zonal: the floor lives in the zone of the first subnet, and so does its
        # node group, which launches through a template that targets the reservation.
        subnets = subnet_ids = subnet_ids[:1]
        reservation = declare_reservation(pool, compiled.reservation, subnet_ids[0], tags, opts, context,
                                          suffix, count)
        reservation_spec = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=reservation.id))
        outputs["capacity_reservation_id"] = reservation.id
    template = _launch_template(pool, compiled, reservation_spec, opts, suffix, market)
    # The instance type stays on the node group: EKS fails when both name one.
    launch_template = aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str))
    size = aws.eks.NodeGroupScalingConfigArgs(min_size=pool.min_nodes, max_size=pool.max_nodes,
                                              desired_size=desired_size) if count is None else \
        aws.eks.NodeGroupScalingConfigArgs(min_size=count, max_size=count, desired_size=count)
    node_group = aws.eks.NodeGroup(
        f"{pool.name}-node-group{suffix}",
        cluster_name=context.cluster_of(target),
        node_group_name=pool.cloud_name if not suffix else f"{pool.cloud_name[:60]}{suffix}",
        node_role_arn=role_arn,
        subnet_ids=subnets,
        capacity_type=compiled.capacity_type,
        ami_type=compiled.ami_type,
        # A spot pool over alternatives takes them all (CreateNodegroup instanceTypes, at most 20).
        instance_types=list(pool.instance_types or (pool.instance_type,)),
        scaling_config=size,
        # A floor's update never launches beyond its reservation (gpustack.clouds.aws EKS.floor_upgrade).
        update_config=aws.eks.NodeGroupUpdateConfigArgs(**dict(pool.upgrade.settings)) if pool.upgrade else None,
        labels=dict(compiled.labels),
        taints=[aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=checked(t.effect))
                for t in compiled.taints],
        launch_template=launch_template,
        # The autoscaler reads these through eks:DescribeNodegroup for a group at zero (docs/deploy.md).
        tags={**tags, **dict(compiled.template_tags)},
        # Nodes cannot join before their role has its policies.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=role_ready)))
    asg_name = node_group.resources[0].autoscaling_groups[0].name
    for action in compiled.schedules:
        aws.autoscaling.Schedule(
            f"{pool.name}-{action.suffix}",
            autoscaling_group_name=asg_name,
            scheduled_action_name=action.name,
            recurrence=action.recurrence,
            time_zone=action.time_zone,
            min_size=action.min_size,
            max_size=action.max_size,
            desired_capacity=action.desired_capacity,
            opts=opts)
    outputs.update({POOL_ID: node_group.id, "autoscaling_group_name": asg_name})
    return outputs


def block_subnets(subnet_ids: list[str], zone: str, context: DeployContext) -> pulumi.Output[list[str]]:
    """The target's subnets in `zone`, sorted (the EC2 API returns them in no promised order)."""
    found = aws.ec2.get_subnets_output(filters=[
        aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=subnet_ids),
        aws.ec2.GetSubnetsFilterArgs(name="availability-zone", values=[zone])], opts=context.invoke())
    return found.ids.apply(sorted)


def declare_block(pool: Pool, block: CapacityBlockLaunch, tags: dict[str, str],
                  opts: pulumi.ResourceOptions) -> aws.ec2.CapacityBlockReservation:
    """Buys the block's offering: only when the spec names one (block.offering_id). Paid up front and never
    refunded: once created it cannot be deleted, and `pulumi destroy` only drops it from the state
    (pulumi-aws 7.51.1, ec2/capacity_block_reservation.py)."""
    assert block.offering_id is not None
    return aws.ec2.CapacityBlockReservation(
        f"{pool.name}-capacity-block", capacity_block_offering_id=block.offering_id,
        instance_platform=block.instance_platform, tags={**tags, "gpustack.dev/pool": pool.cloud_name},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=True)))


def _launch_template(pool: Pool, compiled: EksNodeGroup,
                     reservation: aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None,
                     opts: pulumi.ResourceOptions, suffix: str = "",
                     market: aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None = None) -> aws.ec2.LaunchTemplate:
    """The pool's launch template: attribution tags on the instance, its volumes and its network
    interfaces; a root volume sized by the plan; local NVMe for the kubelet and containerd; and, for a
    reserved floor, the capacity reservation to launch into."""
    tags = pool.attribution
    strategy = compiled.local_storage_strategy
    return aws.ec2.LaunchTemplate(
        f"{pool.name}-launch-template{suffix}",
        description=f"gpustack pool {pool.name}",
        tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                            for kind in compiled.tagged_at_launch],
        block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=compiled.root_device,
            ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_size=pool.disk_gib, volume_type=compiled.root_volume_type, delete_on_termination="true",
                encrypted="true"))],
        user_data=node_config_user_data(strategy) if strategy else None,
        capacity_reservation_specification=reservation,
        instance_market_options=market,
        tags=tags,
        opts=opts)


# nodeadm reads NodeConfig documents from a MIME multi-part user data; EKS merges its own part for the
# cluster (https://awslabs.github.io/amazon-eks-ami/nodeadm/, "Configuration").
_BOUNDARY = "GPUSTACK"


def node_config_user_data(local_storage: str) -> str:
    """Base64 user data with the NodeConfig that puts the kubelet and containerd on the local NVMe disks."""
    body = (f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{_BOUNDARY}"\n\n'
            f"--{_BOUNDARY}\nContent-Type: application/node.eks.aws\n\n"
            "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  instance:\n    localStorage:\n"
            f"      strategy: {local_storage}\n\n--{_BOUNDARY}--\n")
    return base64.b64encode(body.encode("ascii")).decode("ascii")

