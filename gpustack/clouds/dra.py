"""GPUs through Dynamic Resource Allocation (`targets[].settings.gpu_allocation: dra`), as capability data.

Under DRA a pod asks for a GPU with a ResourceClaim (`resource.k8s.io/v1`) instead of an extended resource,
and NVIDIA's DRA driver publishes each node's GPUs and MIG devices as ResourceSlices. What a provisioner can
do with that is data of its own module (`Provisioner.dra`, a `DraSupport` next to its source): whether it
can run DRA pools at all (else a located error at `settings.gpu_allocation`), whether its autoscaler can
grow a DRA pool from zero nodes (it must know the devices a node would publish before the node exists),
what must be switched on, and which sharing modes it cannot give under DRA.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

DEVICE_PLUGIN = "device-plugin"
DRA = "dra"
GPU_ALLOCATIONS = (DEVICE_PLUGIN, DRA)

# resource.k8s.io/v1 (the API the claims are written for) is served from Kubernetes 1.34, where DRA went GA
# (https://kubernetes.io/blog/2025/09/01/kubernetes-v1-34-dra-updates/). A target below it
# (`targets[].kubernetes_version`) is refused at settings.gpu_allocation; one that gives no version gets a
# plan note saying the minimum was not checked.
MIN_KUBERNETES = "1.34"
MIN_KUBERNETES_SOURCE = "https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/"


@dataclasses.dataclass(frozen=True)
class DraSupport:
    """What a provisioner does with DRA pools; every field with its reason and source in words."""

    # Why the provisioner cannot run DRA pools at all (None: it can); a located error when asked for.
    refusal: str | None = None
    # Whether its autoscaler grows a pool at zero nodes for a pending pod with a ResourceClaim; and, where not,
    # why not (with the source) and what the pool then needs.
    scale_from_zero: bool = False
    scale_from_zero_gap: str = ""
    # What must be switched on for DRA to work with it (e.g. an alpha setting), said in a warning.
    switch: str = ""
    # Node labels a DRA pool's nodes must carry (e.g. what the autoscaler reads to model the devices).
    node_labels: tuple[tuple[str, str], ...] = ()
    # Sharing modes it cannot give under DRA: mode -> why (a located error when a pool needs it).
    refused_modes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # What a person must know per sharing mode under DRA (a warning on the pools of that mode).
    mode_notes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The Kubernetes minor version a sharing mode needs under DRA with this provisioner: mode -> "1.36".
    # A target below it is refused; at or above it the mode's note is not needed; without a version, the note.
    mode_minimums: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Where the NVIDIA driver lives on its nodes when the cloud's DRA guide says (else from the node image).
    driver_root: str = ""
    # What the cluster must run, for the plan's target notes.
    notes: tuple[str, ...] = ()
    source: str = ""


# The default of a provisioner whose module declares nothing.
UNDECLARED = DraSupport(refusal="gpustack has no source on how this provisioner treats pods with ResourceClaims")
