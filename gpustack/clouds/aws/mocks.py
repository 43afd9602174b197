"""What the Pulumi mocks answer for EKS: the data sources the backend calls, the outputs AWS computes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Canned answers for the data sources (invokes), keyed by token.
CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "aws:index/getPartition:getPartition": lambda args: {
        "id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com", "reverseDnsPrefix": "com.amazonaws"},
    "aws:ec2/getSubnet:getSubnet": lambda args: {
        "id": args.get("id", "subnet-0"), "availabilityZone": "us-east-1a", "vpcId": "vpc-0"},
}

# Outputs the cloud computes, keyed by resource type: (logical name, inputs) -> outputs.
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "aws:eks/nodeGroup:NodeGroup": lambda name, inputs: {
        "resources": [{"autoscalingGroups": [{"name": f"eks-{name}-asg"}]}], "arn": f"arn:aws:eks:::{name}"},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda name, inputs: {"latestVersion": 1, "defaultVersion": 1},
    "aws:iam/role:Role": lambda name, inputs: {"arn": f"arn:aws:iam::123456789012:role/{name}",
                                               "name": inputs.get("name", name)},
}
