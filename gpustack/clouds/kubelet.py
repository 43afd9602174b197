"""What the kubelet and the system daemons keep of a node, by the formula the node image applies.

A node pool's image sets the kubelet's kube-reserved and eviction threshold; pods get the rest
(Allocatable). Each cloud's default node image has its own formula, and a cloud declares it as
`Cloud.kubelet_reservation`; planning reads it through `Provisioner.kubelet_reservation`, which a
provisioner launching another image overrides with that image's formula. `TIERED` is the tiered
formula of GKE's published node sizing, the most conservative of the documented ones on large
nodes, used where a cloud publishes none:
https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations
"""

from __future__ import annotations

import dataclasses
import functools
import math

Tiers = tuple[tuple[float, float], ...]  # (size of the tier, fraction reserved); the last covers the rest

# CPU: 6% of the first core, 1% of the next, 0.5% of the next 2, 0.25% of every core above 4.
CPU_TIERS: Tiers = ((1, 0.06), (1, 0.01), (2, 0.005), (float("inf"), 0.0025))
# Memory: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128.
MEMORY_TIERS: Tiers = ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (float("inf"), 0.02))


@dataclasses.dataclass(frozen=True)
class KubeletReservation:
    """kube-reserved CPU by tiers; kube-reserved memory by tiers of the node's memory, or by its pod
    density (MiB per pod x max pods + a base); plus the hard eviction threshold."""

    cpu_tiers: Tiers
    memory_tiers: Tiers = ()
    memory_mib_per_pod: float = 0.0
    memory_mib_base: float = 0.0
    max_pods: tuple[tuple[str, int], ...] = ()  # instance type -> max pods
    default_max_pods: int = 0  # for an instance type the table does not list
    eviction_gib: float = 100 / 1024
    source: str = ""
    # CPU by a published table instead of tiers: (cores, reserved cores), ascending; a node takes the entry of
    # the smallest listed count at or above its own (the last entry for larger nodes).
    cpu_steps: tuple[tuple[float, float], ...] = ()
    # The per-pod memory reservation is at most this share of the node's memory (0: no cap).
    memory_cap_fraction: float = 0.0
    # Memory the provisioner takes off an instance type's memory before anything else, as a fraction, rounded
    # up to whole MiB (Karpenter's vmMemoryOverheadPercent; 0 for a provisioner that reads the real node).
    vm_memory_overhead: float = 0.0

    @functools.cached_property
    def _pods(self) -> dict[str, int]:
        return dict(self.max_pods)

    def reserved(self, instance_type: str, vcpus: float, memory_gib: float) -> tuple[float, float]:
        """(cores, GiB) the node keeps for itself."""
        if self.cpu_steps:
            cpu = next((reserved for cores, reserved in self.cpu_steps if cores >= vcpus), self.cpu_steps[-1][1])
        else:
            cpu = tiered(vcpus, self.cpu_tiers)
        if self.memory_tiers:
            memory = tiered(memory_gib, self.memory_tiers)
        else:
            pods = self._pods.get(instance_type, self.default_max_pods)
            memory = (self.memory_mib_per_pod * pods + self.memory_mib_base) / 1024
            if self.memory_cap_fraction:
                memory = min(memory, self.memory_cap_fraction * memory_gib)
        return cpu, memory + self.eviction_gib + self.vm_overhead_gib(memory_gib)

    def vm_overhead_gib(self, memory_gib: float) -> float:
        """What the provisioner believes the VM itself keeps of `memory_gib` (0 unless `vm_memory_overhead`)."""
        return math.ceil(memory_gib * 1024 * self.vm_memory_overhead) / 1024 if self.vm_memory_overhead else 0.0


def tiered(total: float, tiers: Tiers) -> float:
    reserved, left = 0.0, total
    for size, fraction in tiers:
        take = min(left, size)
        reserved += take * fraction
        left -= take
        if left <= 0:
            break
    return reserved


TIERED = KubeletReservation(CPU_TIERS, MEMORY_TIERS, source="the tiered node-sizing formula (module docstring)")
