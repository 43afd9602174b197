"""What a node offers to pods once the kubelet and system daemons have taken their share.

Pods cannot use a node's full CPU and memory. gpustack sizes nodes with GKE's published
reservation formula (the most conservative of the documented ones) on every cloud, so a replica that
asks for a node's exact vCPU count is not planned onto a node where it could never schedule:
https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations
"""

from __future__ import annotations

import functools

# (cores in this tier, fraction reserved); the last tier covers every further core.
_CPU_TIERS = ((1, 0.06), (1, 0.01), (2, 0.005), (float("inf"), 0.0025))
# (GiB in this tier, fraction reserved)
_MEMORY_TIERS = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (float("inf"), 0.02))
_EVICTION_GIB = 100 / 1024
# GPU node daemons (device plugin, GPU feature discovery, DCGM exporter, node exporter, CNI):
# a round allowance, so replicas leave room for them.
_DAEMONS_CPU = 0.5
_DAEMONS_GIB = 1.0


def _tiered(total: float, tiers: tuple[tuple[float, float], ...]) -> float:
    reserved, left = 0.0, total
    for size, fraction in tiers:
        take = min(left, size)
        reserved += take * fraction
        left -= take
        if left <= 0:
            break
    return reserved


@functools.lru_cache(maxsize=1024)
def allocatable(vcpus: float, memory_gib: float) -> tuple[float, float]:
    """(cores, GiB) available to workload pods on a node of this size."""
    cpu = vcpus - _tiered(vcpus, _CPU_TIERS) - _DAEMONS_CPU
    memory = memory_gib - _tiered(memory_gib, _MEMORY_TIERS) - _EVICTION_GIB - _DAEMONS_GIB
    return max(cpu, 0.0), max(memory, 0.0)
