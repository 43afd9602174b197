"""What the catalog says about an instance type seen in any stack: its GPUs and its list price.

The catalog is the only source: an instance type it does not list has unknown GPUs and price, and
the guardrails say so instead of guessing from the name.
"""

from __future__ import annotations

import dataclasses
import functools

from gpustack.catalog import InstanceType, load_catalog
from gpustack.guardrails.view import SPOT


@dataclasses.dataclass(frozen=True)
class InstanceFacts:
    gpus: int
    usd_per_node_hour: float  # for the capacity asked
    note: str  # where the price comes from


@functools.cache
def _rows(cloud: str, name: str) -> tuple[InstanceType, ...]:
    return tuple(row for row in load_catalog().rows_of(cloud) if row.name == name)


def lookup(cloud: str, name: str | None, capacities: frozenset[str], region: str | None) -> InstanceFacts | None:
    """The GPUs and hourly price of `name` on `cloud`; None when the catalog does not list it.

    The price is that of `region` when the catalog has it, else the lowest the catalog lists for
    the type (so a cost computed from it is a floor). Spot pools use the spot price where the
    catalog has one; every other capacity uses the on-demand list price (a commitment discount,
    if any, is not visible in a resource).
    """
    if not name:
        return None
    rows = _rows(cloud, name)
    if not rows:
        return None
    in_region = [r for r in rows if r.region == region]
    spot = capacities == frozenset({SPOT})

    def price(row: InstanceType) -> float:
        return row.spot if spot and row.spot is not None else row.on_demand

    if in_region:
        row = in_region[0]
        note = f"{'spot' if spot and row.spot is not None else 'on-demand'} list price in {row.region}"
    else:
        row = min(rows, key=price)
        note = f"lowest list price in the catalog ({row.region}); region {region or 'not known'}"
    return InstanceFacts(row.gpus, price(row), note)
