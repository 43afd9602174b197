"""A spot pool over several instance types (`instance_types: {<cloud>: [a, b, c]}`).

The pool is packed on its first type (every alternative has the same GPUs per node, checked when the
spec is read) and priced at the worst spot price of the set: the pool may run on any of them, and the
estimate must not assume the cheapest. Its on-demand fallback keeps the one type. Where the provisioner
takes one type per pool, the plan says so and keeps the first.
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
    price = Price(worst.usd_per_node_hour, f"the worst spot price of {', '.join(types)}: {worst_type}, {worst.source}")
    node_hours = pool.monthly_cost_usd / pool.price.usd_per_node_hour if pool.price.usd_per_node_hour else 0.0
    note = (f"Spot over {len(types)} instance types ({', '.join(types)}), priced at the worst of their spot prices "
            f"({worst_type}, ${worst.usd_per_node_hour:,.4f} a node-hour); the fallback keeps {pool.instance_type}.")
    return dataclasses.replace(pool, instance_types=types, price=price, monthly_cost_usd=price.usd_per_node_hour
                               * node_hours, notes=pool.notes + (note,)), warnings
