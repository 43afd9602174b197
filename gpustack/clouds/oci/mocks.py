"""What the Pulumi mocks answer for OKE: the data sources the backend looks up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Canned answers for the data sources (invokes), keyed by token.
CALLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "oci:Identity/getAvailabilityDomains:getAvailabilityDomains": lambda args: {
        "compartmentId": args.get("compartmentId", ""),
        "availabilityDomains": [{"name": f"Uocm:US-ASHBURN-AD-{i}", "id": f"ad{i}"} for i in (1, 2, 3)]},
    "oci:ContainerEngine/getCluster:getCluster": lambda args: {
        "clusterId": args.get("clusterId", ""), "kubernetesVersion": "v1.31.1", "type": "ENHANCED_CLUSTER"},
    "oci:Core/getImage:getImage": lambda args: {
        "imageId": args.get("imageId", ""), "displayName": "Oracle-Linux-8.10-Gen2-GPU-2025.11.20-0-OKE-1.31.1-801"},
    "oci:ContainerEngine/getNodePoolOption:getNodePoolOption": lambda args: {
        "nodePoolOptionId": args.get("nodePoolOptionId", "all"),
        "sources": [
            {"imageId": "ocid1.image.oc1.iad.aaaagpu", "sourceName": "Oracle-Linux-8.10-Gen2-GPU-2025.11.20-0-OKE-1.31.1",
             "sourceType": "IMAGE"},
            {"imageId": "ocid1.image.oc1.iad.aaaacpu", "sourceName": "Oracle-Linux-8.10-2025.11.20-0-OKE-1.31.1",
             "sourceType": "IMAGE"},
        ]},
}

# OKE computes nothing the backend reads beyond the ids the mocks give every resource.
OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {}
