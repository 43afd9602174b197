"""The root / boot volume of a pool's nodes: what the spec asks (`disk:`), else a default per GPU class.

The clouds' defaults (20 GiB on EKS, about 47 GB on OKE) fill up with one CUDA, PyTorch or vLLM
image (10-20 GiB unpacked, and pulled while the old one still sits on disk): the kubelet then
reports DiskPressure and evicts pods, and new images fail to pull. Larger GPUs serve larger models,
whose weights are usually cached on the node, so the default grows with GPU memory. These are
gpustack's own figures, not a cloud's, and a workload's `disk:` overrides them.
"""

from __future__ import annotations

from gpustack.catalog import GpuModel

# (GPUs with less than this much memory, GiB) -> root volume, GiB
DEFAULT_DISK_GIB = ((32, 150), (64, 300), (float("inf"), 500))


def default_disk_gib(gpu: GpuModel) -> int:
    return next(disk for below, disk in DEFAULT_DISK_GIB if gpu.memory_gib < below)


def disk_reason(gpu: GpuModel, asked: int | None) -> str:
    if asked is not None:
        return "disk: in the spec"
    return (f"the default for {gpu.memory_gib:g} GB GPUs: room for CUDA / PyTorch / vLLM images and cached model "
            "weights (set disk: on the workload to change it)")
