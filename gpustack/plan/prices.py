"""Prices per node-hour by capacity type: the catalog, with the spec's `pricing` on top.

Order of precedence for one instance type: `pricing.instances.<type>` in the spec, then (spot only)
`pricing.spot_discount`, then the catalog, then (spot only) the cloud's fixed spot fraction where it
sells spot at one (`spot_rules.yaml`). Reserved capacity is billed at the on-demand rate: a capacity
reservation is, and the discount needs a commitment bought separately. Only a commitment the spec
declares (`pricing.commitments.<cloud>`, or the short form `pricing.commitment_discount`) prices a
reserved floor below on-demand.

An enterprise agreement's flat discount (`pricing.discount`: AWS EDP / private pricing, an Azure
negotiated rate under an MACC or EA, a GCP or OCI agreement) comes off every price last: a price is
first the list price of its capacity type (on-demand, spot, or the commitment's rate), then less the
discount. Billing applies it to the spend left after Savings Plans and Reserved Instances, so
net = list x (1 - commitment) x (1 - discount); for a price list commitment, its rate x (1 - discount)
("AWS Discount Order of Operations", https://help.prosperops.com/how-are-ri-and-sp-savings-calculations-impacted-by-an-edp,
which follows the AWS billing system). Spot is discounted too (the agreement covers the spend, not a
purchase option); a spot price derived from on-demand (`spot_discount`, a cloud's fixed fraction) is
derived from the list price, so the discount is applied once.
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
    discount: float = 0.0  # the cloud's enterprise discount (`pricing.discount`), off every price below

    @classmethod
    def for_cloud(cls, pricing: Pricing, catalog: Catalog, cloud: str) -> PriceBook:
        return cls(pricing, pricing.commitment(cloud), catalog.spot_rules.get(cloud), pricing.discount_of(cloud))

    @property
    def at_list(self) -> PriceBook:
        """The same prices before the enterprise discount (what the discount line is measured from)."""
        return dataclasses.replace(self, discount=0.0)

    @property
    def commitment_discount(self) -> float:
        """The declared fraction off on-demand (0 when none is declared, or when it is a price list)."""
        return self.commitment.discount or 0.0 if self.commitment is not None else 0.0

    def _net(self, price: Price) -> Price:
        """`price` less the enterprise discount: it applies to the bill after every other rate, so it
        multiplies a committed or spot rate as it does on-demand (module docstring)."""
        if not self.discount:
            return price
        return Price(round(price.usd_per_node_hour * (1 - self.discount), 6),
                     f"{price.source}; less the enterprise discount {self.discount:g} (spec pricing.discount)",
                     list_usd_per_node_hour=price.usd_per_node_hour)

    def on_demand(self, row: InstanceType) -> Price:
        return self._net(self._list_on_demand(row))

    def _list_on_demand(self, row: InstanceType) -> Price:
        override = self.pricing.instance(row.name)
        if override is not None and override.on_demand is not None:
            return Price(override.on_demand, "spec pricing.instances")
        return Price(row.on_demand, f"catalog {row.source}")

    def spot(self, row: InstanceType) -> Price | None:
        """The spot price, or None when neither the spec nor the catalog knows one."""
        price = self._list_spot(row)
        return self._net(price) if price is not None else None

    def _list_spot(self, row: InstanceType) -> Price | None:
        override = self.pricing.instance(row.name)
        if override is not None and override.spot is not None:
            return Price(override.spot, "spec pricing.instances")
        if self.pricing.spot_discount is not None:
            base = self._list_on_demand(row)
            return Price(round(base.usd_per_node_hour * (1 - self.pricing.spot_discount), 6),
                         f"on-demand x (1 - spec spot_discount {self.pricing.spot_discount:g})")
        if row.spot is not None:
            dated = row.spot_as_of or row.as_of or "unknown"
            basis = f"; {self.spot_rule.basis}, as of {dated}" if self.spot_rule else ""
            return Price(row.spot, f"catalog {row.spot_cited}{basis}")
        if self.spot_rule is not None and self.spot_rule.fraction_of_on_demand is not None:
            base = self._list_on_demand(row)
            return Price(round(base.usd_per_node_hour * self.spot_rule.fraction_of_on_demand, 6),
                         f"on-demand ({base.source}) x {self.spot_rule.fraction_of_on_demand:g}: "
                         f"{self.spot_rule.basis} ({self.spot_rule.source})")
        return None

    def reserved(self, row: InstanceType) -> Price:
        committed = self.committed(row)
        if committed is not None:
            return committed
        base = self._list_on_demand(row)
        return self._net(Price(base.usd_per_node_hour, f"on-demand ({base.source}): a capacity reservation is "
                                                       "billed at the on-demand rate, and no commitment is declared"))

    def committed(self, row: InstanceType) -> Price | None:
        """The reserved price under the declared commitment, or None when it does not cover this type."""
        if self.commitment is None:
            return None
        base = self._list_on_demand(row)
        price = self.commitment.price(row.name, base.usd_per_node_hour)
        if price is None:
            return None
        c = self.commitment
        what = c.instrument + (f" {c.term}" if c.term else "") + (f", scope {c.scope}" if c.scope else "")
        if c.discount is not None:
            return self._net(Price(round(price, 6), f"on-demand x (1 - {c.discount:g}): declared commitment ({what})"))
        return self._net(Price(price, f"declared commitment price ({what})"))

    def for_capacity(self, row: InstanceType, capacity: str) -> Price:
        if capacity == "spot":
            spot = self.spot(row)
            if spot is not None:
                return spot
            base = self._list_on_demand(row)
            return self._net(Price(base.usd_per_node_hour, f"no spot price known: on-demand ({base.source})"))
        if capacity == "reserved":
            return self.reserved(row)
        return self.on_demand(row)
