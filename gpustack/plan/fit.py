"""Whether one replica of each workload fits an instance type of its target: the capacity check.

The planner reports a replica no type holds; this module says so in words and where (the field that
binds: `cpu`, `memory`, else the GPU ask), and `capacity_problems` runs the same check over the parts
of a spec that read cleanly, so a spec with a typo elsewhere gets its capacity errors in the same run.
"""

from __future__ import annotations

from gpustack.catalog import Catalog, GpuModel, InstanceType, load_catalog
from gpustack.clouds import CLOUDS
from gpustack.errors import Problem
from gpustack.plan.asks import Ask, AskError, decide
from gpustack.plan.choices import binding_field, fitting_rows
from gpustack.spec.model import Spec
from gpustack.spec.yamlsource import path_str


def no_fit_message(cloud: str, region: str, rows: tuple[InstanceType, ...], gpu: GpuModel, ask: Ask,
                   pinned: str | None = None) -> str:
    of_gpu = [r for r in rows if r.gpu == gpu.name and (pinned is None or r.name == pinned)]
    biggest = max(of_gpu, key=lambda r: (r.gpus, r.vcpus, r.memory_gib))
    want = [f"{ask.gpus} GPU(s)" if ask.mode == "none" else f"a {ask.mode} share"]
    if ask.cpu:
        want.append(f"{ask.cpu:g} CPU")
    if ask.memory_gib:
        want.append(f"{ask.memory_gib:g}Gi memory")
    size = (f"{biggest.name} ({biggest.gpus} GPUs, {biggest.vcpus:g} vCPU, {biggest.memory_gib:g} GiB, less "
            "what the node keeps for itself)")
    if pinned:
        return f"the pinned instance type {size} does not hold one replica ({', '.join(want)})"
    return (f"no {cloud} instance type in {region} with {gpu.name} holds one replica ({', '.join(want)}); the "
            f"largest is {size}")


def capacity_problems(spec: Spec, catalog: Catalog | None = None) -> list[Problem]:
    """A located problem for each workload of `spec` that no instance type of a target holds.

    Only what the check can decide alone: a workload whose GPU the region lacks, or which the
    provisioner refuses, is left to the full validation."""
    catalog = catalog or spec.catalog or load_catalog()
    by_name = {w.name: w for w in spec.workloads}
    problems = []
    for target in spec.targets:
        cloud = CLOUDS.get(target.cloud)
        provisioner = cloud.provisioner(target.setting("provisioner"))  # type: ignore[arg-type]
        rows = catalog.in_region(target.cloud, target.region)
        for name in target.workloads:
            workload = by_name.get(name)
            gpu = catalog.gpu(workload.gpu) if workload is not None else None
            if workload is None or gpu is None or not workload.replicas.max:
                continue
            pinned = workload.pinned_instance(target.cloud)
            offered = tuple(r for r in rows if r.gpu == gpu.name and (pinned is None or r.name == pinned))
            if not offered:
                continue
            try:
                ask = decide(workload, gpu, provisioner)
            except AskError:
                continue
            if fitting_rows(offered, gpu, ask, provisioner):
                continue
            path = ("workloads", workload.index, binding_field(offered, gpu, ask, provisioner))
            problems.append(Problem(spec.source.where(path), path_str(path),
                                    no_fit_message(cloud.display_name, target.region, offered, gpu, ask, pinned)))
    return problems
