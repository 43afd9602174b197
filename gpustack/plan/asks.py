"""What one replica of a workload needs from a GPU, once its sharing mode is decided.

Sharing, by what the workload asks and what its GPU and cloud can do:
- whole GPUs (`gpus: N`, or no size form): sharing none;
- `mig: <profile>`, or inference with `gpu_memory` / `gpu_fraction` on a MIG GPU: a MIG instance,
  the smallest profile the cloud can create that holds the request; a whole-GPU profile (7g on
  A100/H100) is a whole GPU where the cloud mixes layouts in a pool, so it never forces a GPU of
  every node of a mixed pool;
- `sharing: fractional` (asked for, never chosen): the share itself, in whole percents of a GPU,
  enforced by HAMi (compute and memory), where the cloud can run HAMi;
- otherwise time-slicing (or MPS when asked): R = floor(1 / share) clients per GPU, where share is
  `gpu_fraction` or `gpu_memory` / GPU memory.

What time-slicing can promise: a pod gets one of the R replicas of a GPU, so when all R clients are
busy each gets 1/R of the GPU's time, with no memory isolation. A share is therefore rounded down
to 1/R: a 0.3 share is planned as 1/3, a 0.45 share as 1/2. NVIDIA's device plugin needs R >= 2, so
a share above 1/2 cannot be time-sliced and gets a whole GPU. MPS gives each of its R clients an
equal share of memory and compute, so it rounds the same way. Replicas with different R never share
a pool (R is part of the pool's identity, as a node has one device-plugin config), so adding a
workload never changes another pool's R; shares of 1/6 and below from small workloads are planned
as 1/6 (TINY_SHARE_CLIENTS below). What rounding costs is reported per pool and per target
(`requested_lower_bound` against `lower_bound`; docs/sharing.md section 5).
"""

from __future__ import annotations

import dataclasses
import math

from gpustack.catalog import GpuModel
from gpustack.catalog.mig import Profile
from gpustack.clouds import Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.spec.model import Workload, shared_by_clients


# Time-sliced shares of 1/TINY_SHARE_CLIENTS and below, from workloads that fill at most
# TINY_SHARE_GPUS GPUs at 1/TINY_SHARE_CLIENTS, are planned as 1/TINY_SHARE_CLIENTS: one pool instead
# of a pool and a mostly empty node per R (on the openb traces, pools of R = 7, 9 and 20 with 1 to 24
# replicas each held a node). A larger workload keeps its own R: rounding it up would cost more GPUs
# than the node it saves. The rule reads the workload alone, so no other workload moves.
TINY_SHARE_CLIENTS = 6
TINY_SHARE_GPUS = 4


@dataclasses.dataclass(frozen=True)
class Ask:
    mode: str  # none | time-slicing | mps | mig | fractional
    gpus: int  # whole GPUs per replica (mode none), else 1
    shares_per_gpu: int  # R for time-slicing / mps, else 1
    profile: Profile | None  # mig
    requested_share: float  # GPUs per replica as asked
    planned_share: float  # GPUs per replica as planned: whole GPUs, 1/R, or the profile's compute slices
    cpu: float
    memory_gib: float
    note: str | None = None  # a rounding the user should know about
    gap: str | None = None  # what the provisioner could not give, and what is planned instead (a warning)
    percent: int = 0  # fractional: the replica's percent of one GPU (nvidia.com/gpucores)

    @property
    def by_clients(self) -> bool:
        """Each GPU is shared among `shares_per_gpu` clients (time-slicing, MPS)."""
        return shared_by_clients(self.mode)


class AskError(Exception):
    """The workload asks for something this cloud cannot give (a capability gap)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def decide(workload: Workload, gpu: GpuModel, provisioner: Provisioner) -> Ask:
    """What one replica asks of a node on the target's provisioner (its capability gaps and its cloud's)."""
    cpu = workload.cpu or 0.0
    memory = workload.memory_gib or 0.0
    if not workload.fractional:
        return Ask("none", workload.gpus, 1, None, float(workload.gpus), float(workload.gpus), cpu, memory)
    mode, share, gap = _mode(workload, gpu, provisioner)
    if mode == "mig":
        return _mig_ask(workload, gpu, provisioner, share, cpu, memory)
    assert share is not None
    if mode == "fractional":
        return _fractional(workload, gpu, provisioner, share, cpu, memory)
    return _shared_ask(workload, provisioner, mode, share, gap, cpu, memory)


def _mode(workload: Workload, gpu: GpuModel, provisioner: Provisioner) -> tuple[str, float | None, str | None]:
    """The sharing mode of a fractional workload, its share of a GPU (None: a MIG profile sets it) and
    the gap that made it time-sliced instead of MIG, if any."""
    share = workload.gpu_fraction if workload.gpu_fraction is not None else (
        (workload.gpu_memory_gib or 0.0) / gpu.usable_memory_gib if workload.gpu_memory_gib is not None else None)
    mode = workload.sharing or ("mig" if workload.mig or (workload.kind == "inference" and gpu.mig) else
                                "time-slicing")
    if mode != "mig" or (why := provisioner.gap(Feature.MIG)) is None:
        return mode, share, None
    # MIG asked for by a profile or a share: the same share of a time-sliced GPU, without isolation.
    mig = gpu.mig
    profile_of = mig.profile(workload.mig) if mig and workload.mig else None
    if mig and profile_of is not None:
        share = max(profile_of.compute / mig.compute_slices, profile_of.memory / mig.memory_slices)
    if share is None:
        raise AskError("sharing", f"{provisioner.description} cannot give MIG partitions: {why}")
    return "time-slicing", share, (f"time-sliced instead of MIG (no isolation between replicas): "
                                   f"{provisioner.description} cannot give MIG partitions: {why}")


def _mig_ask(workload: Workload, gpu: GpuModel, provisioner: Provisioner, share: float | None, cpu: float,
             memory: float) -> Ask:
    """A MIG instance: the profile asked for, else the smallest the cloud offers that holds the share."""
    cloud = provisioner.cloud
    assert gpu.mig is not None  # the spec check guarantees a MIG GPU here
    available = cloud.mig_profiles(gpu.name, gpu.mig.profile_names)
    if workload.mig:
        profile = gpu.mig.profile(workload.mig)
        if workload.mig not in available:
            raise AskError("mig", f"{cloud.display_name} cannot create {workload.mig} partitions on {gpu.name}; "
                                  f"it offers: {', '.join(available) or 'none'}")
    else:
        profile = gpu.mig.smallest_holding(memory_gib=workload.gpu_memory_gib or 0.0,
                                           compute_fraction=workload.gpu_fraction or 0.0, allowed=available)
        if profile is None:
            raise AskError("gpu_memory" if workload.gpu_memory_gib else "gpu_fraction",
                           f"no MIG profile {cloud.display_name} offers on {gpu.name} holds this share; "
                           f"profiles: {', '.join(available)}")
    assert profile is not None
    slices = profile.compute / gpu.mig.compute_slices
    if profile.compute == gpu.mig.compute_slices and provisioner.supports(Feature.MIG_MIXED_LAYOUTS):
        # A whole-GPU instance in a pool of mixed layouts would make every node of the pool carry
        # it; as a whole GPU it shares the whole-GPU pool instead, with the same isolation.
        return Ask("none", 1, 1, None, slices if share is None else share, 1.0, cpu, memory,
                   note=f"{profile.name} is a whole {gpu.name}: planned as one whole GPU, without MIG")
    return Ask("mig", 1, 1, profile, slices if share is None else share, slices, cpu, memory)


def _shared_ask(workload: Workload, provisioner: Provisioner, mode: str, share: float, gap: str | None,
                cpu: float, memory: float) -> Ask:
    """A time-sliced or MPS share: 1/R of a GPU, R the clients per GPU (whole GPU below 2 clients)."""
    cloud = provisioner.cloud
    clients = math.floor(1 / share + 1e-9)
    cap = cloud.max_shared_clients_per_gpu
    note = None
    if cap is not None and clients > cap:
        note = f"{cloud.display_name} shares a GPU among at most {cap} clients: each replica gets 1/{cap}"
        clients = cap
    if clients > TINY_SHARE_CLIENTS and workload.replicas.max <= TINY_SHARE_GPUS * TINY_SHARE_CLIENTS:
        # A handful of tiny shares would get a pool, and a node, of their own: they join the pool of
        # 1/TINY_SHARE_CLIENTS shares instead, each still getting at least what it asked for.
        note = (f"{workload.replicas.max} replicas of {share:.3g} of a GPU are planned as 1/{TINY_SHARE_CLIENTS} "
                f"of a GPU (at most {TINY_SHARE_GPUS} GPUs), in the pool of 1/{TINY_SHARE_CLIENTS} shares, instead "
                f"of a pool of 1/{clients} shares of their own")
        clients = TINY_SHARE_CLIENTS
    if clients < 2:
        return Ask("none", 1, 1, None, share, 1.0, cpu, memory,
                   note=f"a share of {share:.2f} is more than half a GPU: {mode} needs at least 2 clients per "
                        "GPU, so each replica gets a whole GPU", gap=gap)
    if abs(1 / clients - share) > 1e-6 and note is None:
        note = f"a share of {share:.3g} is planned as 1/{clients} of a GPU ({mode} gives equal shares)"
    return Ask(mode, 1, clients, None, share, 1 / clients, cpu, memory, note=note, gap=gap)


def _fractional(workload: Workload, gpu: GpuModel, provisioner: Provisioner, share: float, cpu: float,
                memory: float) -> Ask:
    """An enforced fraction: a whole percent of the GPU's compute and memory, at least what was asked."""
    if (gap := provisioner.gap(Feature.FRACTIONAL_SHARING)) is not None:
        raise AskError("sharing", f"{provisioner.cloud.display_name} cannot enforce GPU fractions: {gap}; "
                                  "use time-slicing or mig")
    percent = min(100, math.ceil(100 * share - 1e-9))
    note = None
    if abs(percent / 100 - share) > 1e-6:
        note = f"a share of {share:.4g} is planned as {percent}% of a GPU (HAMi counts whole percents)"
    return Ask("fractional", 1, 100, None, share, percent / 100, cpu, memory, note=note, percent=percent)
