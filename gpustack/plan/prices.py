"""Prices per node-hour by capacity type: the catalog, with the spec's `pricing` on top.

Order of precedence for one instance type: `pricing.instances.<type>` in the spec, then (spot only)
`pricing.spot_discount`, then the catalog. Reserved capacity costs on-demand x (1 - commitment
discount), the discount from the spec or the catalog's default for the cloud.
"""

from __future__ import annotations

import dataclasses

from gpustack.catalog import Catalog, InstanceType
from gpustack.plan.model import Price
from gpustack.spec.model import Pricing


@dataclasses.dataclass(frozen=True)
class PriceBook:
    pricing: Pricing
    commitment_discount: float
    commitment_source: str

    @classmethod
    def for_cloud(cls, pricing: Pricing, catalog: Catalog, cloud: str) -> PriceBook:
        if pricing.commitment_discount is not None:
            return cls(pricing, pricing.commitment_discount, "spec pricing.commitment_discount")
        default = catalog.discounts.get(cloud)
        if default is None:
            return cls(pricing, 0.0, "no commitment discount known")
        return cls(pricing, default.fraction, f"catalog default for {cloud} ({default.source})")

    def on_demand(self, row: InstanceType) -> Price:
        override = self.pricing.instance(row.name)
        if override is not None and override.on_demand is not None:
            return Price(override.on_demand, "spec pricing.instances")
        return Price(row.on_demand, f"catalog {row.source}")

    def spot(self, row: InstanceType) -> Price | None:
        """The spot price, or None when neither the spec nor the catalog knows one."""
        override = self.pricing.instance(row.name)
        if override is not None and override.spot is not None:
            return Price(override.spot, "spec pricing.instances")
        if self.pricing.spot_discount is not None:
            base = self.on_demand(row)
            return Price(round(base.usd_per_node_hour * (1 - self.pricing.spot_discount), 6),
                         f"on-demand x (1 - spec spot_discount {self.pricing.spot_discount:g})")
        if row.spot is not None:
            return Price(row.spot, f"catalog {row.source}")
        return None

    def reserved(self, row: InstanceType) -> Price:
        base = self.on_demand(row)
        return Price(round(base.usd_per_node_hour * (1 - self.commitment_discount), 6),
                     f"on-demand x (1 - {self.commitment_discount:g} commitment discount, {self.commitment_source})")

    def for_capacity(self, row: InstanceType, capacity: str) -> Price:
        if capacity == "spot":
            spot = self.spot(row)
            if spot is not None:
                return spot
            base = self.on_demand(row)
            return Price(base.usd_per_node_hour, f"no spot price known: on-demand ({base.source})")
        if capacity == "reserved":
            return self.reserved(row)
        return self.on_demand(row)
