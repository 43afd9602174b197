"""The ResourceClaimTemplates (and shared ResourceClaims) of a DRA target, one per workload, from the
plan's `PodRequest.claim` (gpustack/plan/claims.py holds the driver facts and their source).

A claim has one request, `gpu`, for `count` devices of its DeviceClass that meet every CEL selector (the
pool's GPU product, and the MIG profile the plan chose); time-slicing and MPS add NVIDIA's opaque
`GpuConfig` for that request. resource.k8s.io/v1 (Kubernetes 1.34+).
"""

from __future__ import annotations

from typing import Any

from gpustack.plan import claims
from gpustack.plan.model import Plan, PodRequest, TargetPlan
from gpustack.render.common import metadata, object_labels

API_VERSION = "resource.k8s.io/v1"
# The API the claims are validated against (resource.k8s.io/v1 is served from 1.34).
KUBERNETES_VERSION = "1.34.0"


def claim_spec(claim: claims.DeviceClaim) -> dict[str, Any]:
    """The ResourceClaimSpec of a claim."""
    exactly: dict[str, Any] = {"deviceClassName": claim.device_class, "allocationMode": "ExactCount",
                               "count": claim.count}
    if claim.selectors:
        exactly["selectors"] = [{"cel": {"expression": expression}} for expression in claim.selectors]
    devices: dict[str, Any] = {"requests": [{"name": claim.request, "exactly": exactly}]}
    if claim.strategy is not None:
        sharing: dict[str, Any] = {"strategy": claim.strategy}
        if claim.strategy == "TimeSlicing":
            sharing["timeSlicingConfig"] = {"interval": "Default"}
        elif claim.mps_active_thread_percentage is not None:
            sharing["mpsConfig"] = {"defaultActiveThreadPercentage": claim.mps_active_thread_percentage}
        devices["config"] = [{"requests": [claim.request], "opaque": {
            "driver": claims.DRIVER,
            "parameters": {"apiVersion": claims.CONFIG_API_VERSION, "kind": claims.CONFIG_KIND, "sharing": sharing}}}]
    return {"devices": devices}


def claim_object(plan: Plan, target: TargetPlan, request: PodRequest) -> dict[str, Any] | None:
    claim = request.claim
    if claim is None:
        return None
    meta = metadata(claim.name, object_labels(plan, target), request.namespace)
    spec = claim_spec(claim)
    if claim.kind == claims.TEMPLATE:
        return {"apiVersion": API_VERSION, "kind": claims.TEMPLATE, "metadata": meta, "spec": {"spec": spec}}
    return {"apiVersion": API_VERSION, "kind": claims.SHARED, "metadata": meta, "spec": spec}


def objects(plan: Plan, target: TargetPlan) -> list[dict[str, Any]]:
    found = (claim_object(plan, target, r) for r in target.pod_requests)
    return [obj for obj in found if obj is not None]
