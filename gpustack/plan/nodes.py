"""What a node offers to pods once the kubelet and system daemons have taken their share.

Pods cannot use a node's full CPU and memory. The node keeps what its image's kubelet reservation
formula says (`Provisioner.kubelet_reservation`, by default the cloud's, data with its source in the cloud's bundle; the tiered
formula where a cloud publishes none), so a replica that asks for a node's exact vCPU count is not
planned onto a node where it could never schedule.
"""

from __future__ import annotations

import functools

from gpustack.clouds.kubelet import TIERED, KubeletReservation

# GPU node daemons (device plugin, GPU feature discovery, DCGM exporter, node exporter, CNI):
# a round allowance, so replicas leave room for them.
_DAEMONS_CPU = 0.5
_DAEMONS_GIB = 1.0
DAEMONS = (_DAEMONS_CPU, _DAEMONS_GIB)


def kubelet_allocatable(vcpus: float, memory_gib: float, reservation: KubeletReservation = TIERED,
                        instance_type: str = "") -> tuple[float, float]:
    """(cores, GiB) the kubelet reports as allocatable: capacity less what the node keeps for itself."""
    cpu, memory = reservation.reserved(instance_type, vcpus, memory_gib)
    return max(vcpus - cpu, 0.0), max(memory_gib - memory, 0.0)


@functools.lru_cache(maxsize=4096)
def allocatable(vcpus: float, memory_gib: float, reservation: KubeletReservation = TIERED,
                instance_type: str = "") -> tuple[float, float]:
    """(cores, GiB) available to workload pods on a node of this size, the GPU daemons' share taken."""
    cpu, memory = kubelet_allocatable(vcpus, memory_gib, reservation, instance_type)
    return max(cpu - _DAEMONS_CPU, 0.0), max(memory - _DAEMONS_GIB, 0.0)
