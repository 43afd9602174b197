"""What to buy to cover the reserved floors: one recommendation per instance type of a target's floors.

A capacity reservation is billed at the on-demand rate; the discount needs a commitment bought
separately (a savings plan, reserved instances, a committed-use discount, an Azure reservation).
The rate recommended is the catalog's per-cloud figure (`commitment_discounts.yaml`, with its source),
never applied to the plan's cost unless the spec declares a commitment.

Break-even utilisation: a commitment at discount d costs (1 - d) x on-demand for every hour of the
term, used or not, so it pays off when the capacity would otherwise run on on-demand for more than
(1 - d) of the hours. A floor that stays reserved all month is past that point by construction.
"""

from __future__ import annotations

from gpustack.catalog import Catalog, InstanceType
from gpustack.plan.model import CommitmentRecommendation, Pool
from gpustack.plan.prices import PriceBook
from gpustack.spec.model import HOURS_PER_MONTH


def recommendations(pools: tuple[Pool, ...], rows: dict[str, InstanceType], prices: PriceBook, catalog: Catalog,
                    cloud: str) -> tuple[CommitmentRecommendation, ...]:
    rate = catalog.discounts.get(cloud)
    if rate is None:
        return ()
    floors: dict[str, int] = {}
    for pool in pools:
        if pool.reserved_nodes:
            floors[pool.instance_type] = floors.get(pool.instance_type, 0) + pool.reserved_nodes
    source = catalog.sources.get(rate.source)
    cited = f"{rate.source}, {rate.as_of}" + (f" ({source.url})" if source and source.url else "")
    out = []
    for name, nodes in sorted(floors.items()):
        row = rows[name]
        hourly = prices.on_demand(row).usd_per_node_hour * nodes
        monthly = hourly * HOURS_PER_MONTH
        known = not rate.negotiated
        out.append(CommitmentRecommendation(
            instrument=rate.instrument, term=rate.term, instance_type=name, quantity=nodes, gpus=nodes * row.gpus,
            on_demand_monthly_usd=monthly,
            discount=rate.fraction if known else None,
            monthly_saving_usd=monthly * rate.fraction if known else None,
            break_even_utilisation=1 - rate.fraction if known else None,
            commitment_usd_per_hour=hourly * (1 - rate.fraction) if known else None,
            source=cited if known else f"negotiated with the provider, no published rate ({cited})",
            declared=prices.committed(row) is not None,
            how=rate.attach,
        ))
    return tuple(out)
