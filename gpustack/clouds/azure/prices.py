"""Azure: the Retail Prices API (no credentials), Linux pay-as-you-go, Spot and Reservation meters.

API: https://learn.microsoft.com/en-us/rest/api/cost-management/retail-prices/azure-retail-prices
(envelope `{BillingCurrency, Items[], NextPageLink, Count}`; loop until NextPageLink is empty; filter
values are case-sensitive). Which meters count follows Microsoft's own Karpenter provider
(Azure/karpenter-provider-azure@v1.14.2 pkg/providers/pricing/pricing.go lines 224-289): items whose
productName ends in " Windows" and whose meterName ends in " Low Priority" (Batch low-priority) are
dropped, a skuName ending in " Spot" is the Spot price, the rest is pay-as-you-go, keyed by armSkuName.
Reservation items price the whole term (the doc's example: E64 v4, "1 Year", retailPrice 25007.0, i.e.
2.85 USD/h against about 4 USD/h pay-as-you-go), so they are spread over the term's hours.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from gpustack.catalog.feeds import Malformed, NetworkPages, Page, Pages, Request, need, number
from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType

SOURCE = "Azure Retail Prices API (prices.azure.com)"
STREAMS = ("prices",)
ENDPOINT = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
HOURS_PER_TERM = {"1 Year": 8760, "3 Years": 3 * 8760}


def network_pages() -> Pages:
    return NetworkPages()


def first_request(region: str) -> Request:
    query = (f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and "
             "(priceType eq 'Consumption' or priceType eq 'Reservation')")
    params = urllib.parse.urlencode({"api-version": API_VERSION, "currencyCode": "USD", "$filter": query},
                                    quote_via=urllib.parse.quote)
    return Request(f"{ENDPOINT}?{params}")


def next_request(page: Any, request: Request) -> Request | None:
    link = page.get("NextPageLink") if isinstance(page, dict) else None
    return Request(link) if isinstance(link, str) and link else None


def refresh(pages: Pages, region: str, facts: dict[str, InstanceType]) -> FeedResult:
    on_demand: dict[str, float] = {}
    spot: dict[str, float] = {}
    reserved: dict[tuple[str, str], float] = {}
    skipped = {"Windows": 0, "Low Priority": 0, "Dev/Test": 0}
    for page in pages.read("prices", first_request(region), next_request):
        items = need(page.data, "Items", list, page, "$")
        for index, item in enumerate(items):
            where = f"Items[{index}]"
            if not isinstance(item, dict):
                raise Malformed(f"{page.where}: page {page.number}: {where} is not an object")
            if item.get("armRegionName") != region or item.get("serviceName") != "Virtual Machines":
                continue
            _read_item(item, page, where, on_demand, spot, reserved, skipped)
    rows = []
    unknown = sorted(set(on_demand) - set(facts))
    for name in sorted(set(on_demand) & set(facts)):
        fact = facts[name]
        rows.append(InstanceType(
            cloud="azure", region=region, name=name, gpu=fact.gpu, gpus=fact.gpus, vcpus=fact.vcpus,
            memory_gib=fact.memory_gib, on_demand=on_demand[name], spot=spot.get(name), source=SOURCE,
            note="" if name in spot else "no Spot meter",
            reserved_1y=reserved.get((name, "1 Year")), reserved_3y=reserved.get((name, "3 Years"))))
    notes = [f"skipped {count} {what} meters" for what, count in skipped.items() if count]
    missing_spot = [r.name for r in rows if r.spot is None]
    if missing_spot:
        notes.append(f"no Spot meter for {', '.join(missing_spot)}")
    if unknown:
        notes.append(f"{len(unknown)} priced sizes are not GPU sizes of the catalog (left out)")
    return FeedResult(tuple(rows), tuple(notes))


def _read_item(item: dict[str, Any], page: Page, where: str, on_demand: dict[str, float], spot: dict[str, float],
               reserved: dict[tuple[str, str], float], skipped: dict[str, int]) -> None:
    name = need(item, "armSkuName", str, page, where)
    kind = need(item, "type", str, page, where)
    product = str(item.get("productName", ""))
    meter = str(item.get("meterName", ""))
    sku = str(item.get("skuName", ""))
    if product.endswith(" Windows"):
        skipped["Windows"] += 1
        return
    if meter.endswith(" Low Priority") or sku.endswith(" Low Priority"):
        skipped["Low Priority"] += 1
        return
    if kind == "DevTestConsumption":
        skipped["Dev/Test"] += 1
        return
    tier = item.get("tierMinimumUnits") or 0
    if item.get("isPrimaryMeterRegion") is False or number(tier, page, f"{where}.tierMinimumUnits") > 0:
        return
    currency = need(item, "currencyCode", str, page, where)
    if currency != "USD":
        raise Malformed(f"{page.where}: page {page.number}: {where}.currencyCode is {currency!r}; the catalog is in "
                        "USD (ask the API with currencyCode='USD')")
    price = number(need(item, "retailPrice", (int, float), page, where), page, f"{where}.retailPrice")
    if kind == "Reservation":
        term = need(item, "reservationTerm", str, page, where)
        if term not in HOURS_PER_TERM:
            raise Malformed(f"{page.where}: page {page.number}: {where}.reservationTerm is {term!r}; known: "
                            f"{', '.join(HOURS_PER_TERM)}")
        hourly = round(price / HOURS_PER_TERM[term], 6)
        reserved[(name, term)] = min(hourly, reserved.get((name, term), hourly))
        return
    if kind != "Consumption":
        return
    if need(item, "unitOfMeasure", str, page, where) != "1 Hour":
        return
    bucket = spot if sku.endswith(" Spot") or meter.endswith(" Spot") else on_demand
    bucket[name] = min(price, bucket.get(name, price))
