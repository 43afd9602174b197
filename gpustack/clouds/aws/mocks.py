"""What the Pulumi mocks answer for EKS: the data sources the backend calls, the outputs AWS computes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpustack.testing import auto_name

# EKS node groups that already exist, by name: their live scaling config (wire names), as
# eks:DescribeNodegroup reports it. Empty: a first `pulumi up`. Tests set it to simulate an update.
LIVE_NODE_GROUPS: dict[str, dict[str, int]] = {}

# The zone of each subnet the mocks know (others: us-east-1a). Tests set it to spread subnets over zones.
SUBNET_ZONES: dict[str, str] = {}

# Canned answers for the data sources (invokes), keyed by token.
CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "aws:index/getPartition:getPartition": lambda args: {
        "id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws"},
    "aws:ec2/getSubnet:getSubnet": lambda args: {
        "id": args.get("id", "subnet-0"), "availabilityZone": SUBNET_ZONES.get(args.get("id", ""), "us-east-1a"),
        "vpcId": "vpc-0"},
    "aws:ec2/getSubnets:getSubnets": lambda args: _subnets(args.get("filters", [])),
    "aws:eks/getNodeGroups:getNodeGroups": lambda args: {
        "id": args.get("clusterName", ""), "clusterName": args.get("clusterName", ""), "names": sorted(LIVE_NODE_GROUPS)},
    "aws:eks/getNodeGroup:getNodeGroup": lambda args: {
        "id": args.get("nodeGroupName", ""), "clusterName": args.get("clusterName", ""),
        "nodeGroupName": args.get("nodeGroupName", ""),
        "scalingConfigs": [LIVE_NODE_GROUPS.get(args.get("nodeGroupName", ""), {})]},
}

def _subnets(filters: list[dict[str, Any]]) -> dict[str, Any]:
    """ec2:DescribeSubnets over the filters the backend sends: subnet-id and availability-zone."""
    values = {f["name"]: list(f["values"]) for f in filters}
    ids = [s for s in values.get("subnet-id", []) if SUBNET_ZONES.get(s, "us-east-1a") in values.get(
        "availability-zone", [SUBNET_ZONES.get(s, "us-east-1a")])]
    return {"id": "us-east-1", "ids": ids, "filters": filters}


# Outputs the cloud computes, keyed by resource type: (logical name, inputs) -> outputs.
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "aws:eks/nodeGroup:NodeGroup": lambda name, inputs: {
        "resources": [{"autoscalingGroups": [{"name": f"eks-{name}-asg"}]}], "arn": f"arn:aws:eks:::{name}"},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda name, inputs: {"latestVersion": 1, "defaultVersion": 1},
    # A cluster declared without `name` is auto-named by the provider.
    "aws:eks/cluster:Cluster": lambda name, inputs: {"name": inputs.get("name") or auto_name(name)},
    "aws:iam/role:Role": lambda name, inputs: {"arn": f"arn:aws:iam::123456789012:role/{name}",
                                               "name": inputs.get("name", name)},
}
