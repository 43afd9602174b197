"""A spot pool over several instance types (`instance_types: {<cloud>: [a, b, c]}`) or GPU models
(`gpu: [A100-80GB, H100]`).

The pool is packed on its first type (every alternative has the same GPUs per node, checked when the
spec is read) and priced at the worst spot price of the set: the pool may run on any of them, and the
estimate must not assume the cheapest. Its on-demand fallback keeps the one type. Where the provisioner
takes one type per pool, the plan says so and keeps the first.

A GPU model listed after the first adds one instance type of that model to the spot pool: the cheapest
(by spot price, then name) with the pool's GPUs per node and at least its first type's CPUs and memory,
so every node holds the replicas packed on the first type. A model the target does not offer so is left
out, with a warning.
"""

from __future__ import annotations

import dataclasses

from gpustack.catalog import InstanceType
from gpustack.clouds import Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.model import Pool, Price
from gpustack.plan.prices import PriceBook
from gpustack.spec.model import Spec

def listed_types(spec: Spec, pool: Pool, cloud: str) -> tuple[str, ...]:
    """The types every workload of the pool lists for `cloud`, in the first workload's order (the pool's
    own type first); () when a workload lists none."""
    lists = [spec.workload(name).alternatives(cloud) for name in pool.workloads]
    if not lists or not all(lists):
        return ()
    common = tuple(t for t in lists[0] if all(t in other for other in lists[1:]))
    return common if len(common) > 1 and common[0] == pool.instance_type else ()


def gpu_model_types(spec: Spec, pool: Pool, types: tuple[str, ...], rows: tuple[InstanceType, ...],
                    prices: PriceBook) -> tuple[tuple[str, ...], list[str]]:
    """`types` (or the pool's one type) and a type of each other GPU model every workload of the pool
    lists; and the warnings for models left out. `types` unchanged when no workload lists models."""
    lists = [spec.workload(name).gpu_alternatives for name in pool.workloads]
    models = tuple(m for m in lists[0] if all(m in other for other in lists[1:])) if lists else ()
    if not models:
        return types, []
    base = types or (pool.instance_type,)
    first = next(r for r in rows if r.name == pool.instance_type)
    out, warnings = list(base), []
    for model in models:
        fitting = [r for r in rows if r.gpu == model and r.gpus == pool.gpus_per_node and r.vcpus >= first.vcpus
                   and r.memory_gib >= first.memory_gib]
        if not fitting:
            warnings.append(f"pool {pool.name!r} does not launch {model}: no instance type here has "
                            f"{pool.gpus_per_node} of it per node with at least the {first.vcpus:g} vCPUs and "
                            f"{first.memory_gib:g} GiB of {first.name}")
            continue
        cheapest = min(fitting, key=lambda r: (prices.for_capacity(r, "spot").usd_per_node_hour, r.name))
        if cheapest.name not in out:
            out.append(cheapest.name)
    return (tuple(out) if len(out) > 1 else types), warnings


def spread_over_types(pool: Pool, types: tuple[str, ...], rows: dict[str, InstanceType], prices: PriceBook,
                      provisioner: Provisioner) -> tuple[Pool, list[str]]:
    """The spot pool over `types`, priced at their worst spot price; and the warnings to give."""
    if gap := provisioner.gap(Feature.INSTANCE_TYPE_ALTERNATIVES):
        return pool, [f"pool {pool.name!r} runs on {pool.instance_type} only, not on {', '.join(types[1:])}: {gap}"]
    warnings = []
    shapes = {(rows[t].vcpus, rows[t].memory_gib) for t in types}
    if len(shapes) > 1 and provisioner.mixed_sizes_gap:
        warnings.append(f"pool {pool.name!r}: {', '.join(types)} differ in CPU or memory, and "
                        f"{provisioner.mixed_sizes_gap}; list types of one size")
    priced = [(prices.for_capacity(rows[t], "spot"), t) for t in types]
    worst, worst_type = max(priced, key=lambda p: (p[0].usd_per_node_hour, p[1]))
    models = sorted({rows[t].gpu for t in types} - {pool.gpu})
    price = Price(worst.usd_per_node_hour, f"the worst spot price of {', '.join(types)}: {worst_type}, {worst.source}")
    node_hours = pool.monthly_cost_usd / pool.price.usd_per_node_hour if pool.price.usd_per_node_hour else 0.0
    note = (f"Spot over {len(types)} instance types ({', '.join(types)}), priced at the worst of their spot prices "
            f"({worst_type}, ${worst.usd_per_node_hour:,.4f} a node-hour); the fallback keeps {pool.instance_type}.")
    if models:
        note += (f" GPUs: {pool.gpu} or {', '.join(models)}; the replicas are sized and packed for {pool.gpu}, "
                 f"whose name the pool's name and GPU labels carry.")
    return dataclasses.replace(pool, instance_types=types, price=price, monthly_cost_usd=price.usd_per_node_hour
                               * node_hours, notes=pool.notes + (note,),
                               gpu_models=tuple(rows[t].gpu for t in types) if models else ()), warnings
