"""Prices per node-hour by capacity type: the catalog, with the spec's `pricing` on top.

Order of precedence for one instance type: `pricing.instances.<type>` in the spec, then (spot only)
`pricing.spot_discount`, then the catalog, then (spot only) the cloud's fixed spot fraction where it
sells spot at one (`spot_rules.yaml`). Reserved capacity is billed at the on-demand rate: a capacity
reservation is, and the discount needs a commitment bought separately. Only a commitment the spec
declares (`pricing.commitments.<cloud>`, or the short form `pricing.commitment_discount`) prices a
reserved floor below on-demand.
"""

from __future__ import annotations

import dataclasses

from gpustack.catalog import Catalog, InstanceType, SpotRule
from gpustack.plan.model import Price
from gpustack.spec.model import Commitment, Pricing


@dataclasses.dataclass(frozen=True)
class PriceBook:
    pricing: Pricing
    commitment: Commitment | None  # declared for this cloud; None: reserved floors at on-demand
    spot_rule: SpotRule | None = None

    @classmethod
    def for_cloud(cls, pricing: Pricing, catalog: Catalog, cloud: str) -> PriceBook:
        return cls(pricing, pricing.commitment(cloud), catalog.spot_rules.get(cloud))

    @property
    def commitment_discount(self) -> float:
        """The declared fraction off on-demand (0 when none is declared, or when it is a price list)."""
        return self.commitment.discount or 0.0 if self.commitment is not None else 0.0

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
            basis = f"; {self.spot_rule.basis}, as of {row.as_of or 'unknown'}" if self.spot_rule else ""
            return Price(row.spot, f"catalog {row.source}{basis}")
        if self.spot_rule is not None and self.spot_rule.fraction_of_on_demand is not None:
            base = self.on_demand(row)
            return Price(round(base.usd_per_node_hour * self.spot_rule.fraction_of_on_demand, 6),
                         f"on-demand ({base.source}) x {self.spot_rule.fraction_of_on_demand:g}: "
                         f"{self.spot_rule.basis} ({self.spot_rule.source})")
        return None

    def reserved(self, row: InstanceType) -> Price:
        base = self.on_demand(row)
        committed = self.committed(row)
        if committed is not None:
            return committed
        return Price(base.usd_per_node_hour, f"on-demand ({base.source}): a capacity reservation is billed at the "
                                             "on-demand rate, and no commitment is declared")

    def committed(self, row: InstanceType) -> Price | None:
        """The reserved price under the declared commitment, or None when it does not cover this type."""
        if self.commitment is None:
            return None
        base = self.on_demand(row)
        price = self.commitment.price(row.name, base.usd_per_node_hour)
        if price is None:
            return None
        c = self.commitment
        what = c.instrument + (f" {c.term}" if c.term else "") + (f", scope {c.scope}" if c.scope else "")
        if c.discount is not None:
            return Price(round(price, 6), f"on-demand x (1 - {c.discount:g}): declared commitment ({what})")
        return Price(price, f"declared commitment price ({what})")

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
