"""The openb trace (Alibaba, USENIX ATC 2023) planned onto one instance type, four ways.

Each distinct pod shape (CPU, memory, GPUs, GPU milli) becomes one inference workload with its pod
count as replicas: `gpu_milli / 1000` is the GPU fraction of a single-GPU sharing pod (num_gpu == 1,
gpu_milli < 1000); other pods ask for `num_gpu` whole GPUs; CPU and memory as requested. Pods
without GPUs are left out and counted.

Instance: AWS g5.48xlarge (8 x A10G 24 GB, 192 vCPU, 768 GiB) in us-east-1, on demand. A10G is a
24 GB inference card like the V100/T4-class GPUs of the trace; 8 GPUs per node let fractions and the
trace's 8-GPU pods share nodes; 24 vCPU and 96 GiB per GPU (the trace averages 11 cores and 40 GiB
per GPU) leave the GPUs, not the CPU, as the binding dimension.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import time
from collections import Counter
from pathlib import Path

import yaml

from gpustack.catalog import Catalog, load_catalog
from gpustack.plan import build_plan
from gpustack.plan.nodes import allocatable
from gpustack.plan.packing import Item, NodeShape, pack_shares
from gpustack.spec import load_text

CLOUD, REGION, INSTANCE, GPU = "aws", "us-east-1", "g5.48xlarge", "A10G"
HOURS = 730.0


@dataclasses.dataclass(frozen=True)
class Shape:
    cpu: float  # cores
    memory_mib: int
    gpus: int
    milli: int  # share of one GPU in thousandths (single-GPU pods)

    @property
    def fraction(self) -> float | None:
        return self.milli / 1000 if self.gpus == 1 and self.milli < 1000 else None

    @property
    def requested(self) -> float:
        return self.fraction if self.fraction is not None else float(self.gpus)


def read_trace(path: Path) -> tuple[Counter[Shape], int]:
    shapes: Counter[Shape] = Counter()
    without_gpu = 0
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            gpus = int(row["num_gpu"])
            if gpus == 0:
                without_gpu += 1
                continue
            shapes[Shape(int(row["cpu_milli"]) / 1000, int(row["memory_mib"]), gpus, int(row["gpu_milli"]))] += 1
    return shapes, without_gpu


def spec_text(shapes: Counter[Shape], fractional: bool = False) -> str:
    """The trace as a spec; `fractional`: every fractional pod asks for `sharing: fractional`."""
    workloads = []
    for i, (shape, count) in enumerate(sorted(shapes.items(), key=lambda kv: dataclasses.astuple(kv[0]))):
        size: dict[str, object] = {"gpu_fraction": shape.fraction} if shape.fraction is not None else {"gpus": shape.gpus}
        if fractional and shape.fraction is not None:
            size["sharing"] = "fractional"
        asks = {"cpu": shape.cpu} if shape.cpu else {}
        if shape.memory_mib:
            asks["memory"] = f"{shape.memory_mib}Mi"
        workloads.append({"name": f"shape-{i:03d}", "kind": "inference", "gpu": GPU, **size, **asks,
                          "replicas": count, "capacity": "on-demand"})
    doc = {
        "version": 1,
        "name": "openb",
        "targets": [
            {
                "name": "bench",
                "cloud": CLOUD,
                "region": REGION,
                "cluster": "bench",
                "settings": {"subnet_ids": ["subnet-0"]},
            }
        ],
        "workloads": workloads,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def one_instance_catalog() -> Catalog:
    full = load_catalog()
    rows = tuple(r for r in full.instances if (r.cloud, r.region, r.name) == (CLOUD, REGION, INSTANCE))
    return Catalog(full.gpus, rows, full.sources, full.discounts)


@dataclasses.dataclass
class Result:
    method: str
    gpus: int
    nodes: int
    seconds: float
    note: str = ""


def _node() -> tuple[NodeShape, float]:
    row = next(iter(one_instance_catalog().instances))
    cpu, memory = allocatable(row.vcpus, row.memory_gib)
    return NodeShape(row.gpus, cpu, memory), row.on_demand


def one_gpu_per_pod(shapes: Counter[Shape]) -> Result:
    start = time.perf_counter()
    node, _ = _node()
    items = [Item(str(s), n, s.gpus, s.cpu, s.memory_mib / 1024, HOURS) for s, n in shapes.items()]
    packing = pack_shares(items, node)
    return Result("one GPU per pod", packing.gpus_required, packing.nodes, time.perf_counter() - start)


def guaranteed_share(shape: Shape) -> tuple[int, int]:
    """(whole GPUs, R) as gpustack plans it: 1/R of a GPU for shares up to 1/2, else whole GPUs."""
    if shape.fraction is None:
        return shape.gpus, 1
    clients = math.floor(1 / shape.fraction + 1e-9)
    return (1, 1) if clients < 2 else (0, clients)


@dataclasses.dataclass
class _OpenNode:
    free: list[float]  # per GPU: the part still free
    cpu: float
    memory: float
    mode: int | None = None  # guaranteed shares: this node's R (1 = whole GPUs), set by its first pod

    def take(self, pod: Shape, whole: int, share: float, mode: int | None) -> bool:
        if self.cpu + 1e-9 < pod.cpu or self.memory + 1e-9 < pod.memory_mib / 1024:
            return False
        if mode is not None and self.mode not in (None, mode):
            return False
        if whole:
            empty = [i for i, f in enumerate(self.free) if f > 1 - 1e-9]
            if len(empty) < whole:
                return False
            for i in empty[:whole]:
                self.free[i] = 0.0
        else:
            slot = next((i for i, f in enumerate(self.free) if f + 1e-9 >= share), None)
            if slot is None:
                return False
            self.free[slot] -= share
        self.cpu -= pod.cpu
        self.memory -= pod.memory_mib / 1024
        self.mode = mode
        return True


def plain_ffd(shapes: Counter[Shape], guaranteed: bool) -> Result:
    """Pod by pod, largest first, onto the first node (and GPU) with room in GPU, CPU and memory.

    guaranteed=False: a GPU holds any pods whose requested fractions add up to at most 1 (the trace's
    own scheduler model; time-slicing cannot enforce it). guaranteed=True: the shares gpustack plans
    (1/R, or a whole GPU above 1/2), one R per node, as the device plugin configures a node.
    """
    start = time.perf_counter()
    node, _ = _node()
    pods = sorted((s for s, n in shapes.items() for _ in range(n)),
                  key=lambda s: (-s.requested, -s.cpu, -s.memory_mib))
    smallest = min(1 / guaranteed_share(s)[1] if guaranteed else s.requested for s in shapes)
    nodes: list[_OpenNode] = []
    open_nodes: list[_OpenNode] = []
    for pod in pods:
        if guaranteed:
            whole, clients = guaranteed_share(pod)
            share, mode = (0.0, 1) if whole else (1 / clients, clients)
        else:
            whole = pod.gpus if pod.fraction is None else 0
            share, mode = pod.fraction or 0.0, None
        if not any(n.take(pod, whole, share, mode) for n in open_nodes):
            fresh = _OpenNode([1.0] * node.gpus, node.cpu, node.memory_gib)
            assert fresh.take(pod, whole, share, mode), pod
            nodes.append(fresh)
            open_nodes.append(fresh)
        if len(open_nodes) > 32:  # nodes no pod can use any more are not searched again
            open_nodes = [n for n in open_nodes if max(n.free) + 1e-9 >= smallest]
    gpus = sum(1 for n in nodes for f in n.free if f < 1 - 1e-9)
    label = "first-fit decreasing, guaranteed shares" if guaranteed else "first-fit decreasing, requested fractions"
    note = "" if guaranteed else "not enforceable by time-slicing"
    return Result(label, gpus, len(nodes), time.perf_counter() - start, note)


def plan_with_gpustack(shapes: Counter[Shape], fractional: bool = False):
    start = time.perf_counter()
    spec = load_text(spec_text(shapes, fractional), "openb.yaml")
    plan = build_plan(spec, one_instance_catalog())
    seconds = time.perf_counter() - start
    return plan.targets[0], seconds


def rounding_analysis(shapes: Counter[Shape]) -> dict[str, float]:
    """Where the guaranteed-share bound departs from the summed requested fractions."""
    above_half = [(s, n) for s, n in shapes.items() if s.fraction is not None and s.fraction > 0.5]
    shared = [(s, n) for s, n in shapes.items() if s.fraction is not None and s.fraction <= 0.5]
    return {
        "whole_gpus": sum(s.gpus * n for s, n in shapes.items() if s.fraction is None),
        "above_half_pods": sum(n for _, n in above_half),
        "above_half_requested": sum(s.fraction * n for s, n in above_half),
        "shared_pods": sum(n for _, n in shared),
        "shared_requested": sum(s.fraction * n for s, n in shared),
        "shared_planned": sum(n / guaranteed_share(s)[1] for s, n in shared),
    }
