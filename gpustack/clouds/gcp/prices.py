"""Google Cloud: the Cloud Billing Catalog API, Compute Engine SKUs (an API key or an OAuth token).

API: https://cloud.google.com/billing/v1/how-tos/catalog-api (`GET /v1/services/6F81-5844-456A/skus`,
`pageSize` up to 5000, follow `nextPageToken`; SKU fields `description`, `category{resourceFamily,
resourceGroup, usageType}`, `serviceRegions[]`, `pricingInfo[].pricingExpression{usageUnit, tieredRates[]
{unitPrice{units, nanos}}}`; price = units + nanos / 1e9).
A machine is billed "for their attached GPUs, predefined vCPU, memory, and bundled Local SSD (if
applicable)" (https://cloud.google.com/compute/docs/accelerator-optimized-machines), so a row's price is
the vCPU SKU x vCPUs + the RAM SKU x GiB + the GPU SKU x GPUs + the Local SSD SKU x its GiB; spot uses
the same SKUs with usageType Preemptible. The description fragments that tell the SKUs of a machine
series and of a GPU apart are those SkyPilot's fetcher uses (skypilot-org/skypilot@21fd5541
sky/catalog/data_fetchers/fetch_gcp.py: SERIES_TO_DESCRIPTION, get_gpu_price).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from gpustack.catalog.feeds import Malformed, NetworkPages, Page, Pages, RefreshError, Request, need
from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType

SOURCE = "Google Cloud Billing Catalog API (cloudbilling.googleapis.com)"
STREAMS = ("skus",)
COMPUTE_ENGINE = "6F81-5844-456A"
ENDPOINT = f"https://cloudbilling.googleapis.com/v1/services/{COMPUTE_ENGINE}/skus"
HOURS_PER_MONTH = 730  # GiBy.mo SKUs (Local SSD) to an hourly price: Google bills a month as 730 hours

SERIES = {"a2": "A2 Instance", "a3": "A3 Instance", "g2": "G2 Instance", "n1": "N1 Predefined Instance"}
# GPU SKU description fragments by machine family, else by GPU model (n1 + T4, n1 + V100).
GPU_BY_FAMILY = {
    "a2-highgpu": ("Nvidia Tesla A100 GPU",), "a2-megagpu": ("Nvidia Tesla A100 GPU",),
    "a2-ultragpu": ("A100 80GB GPU",), "a3-highgpu": ("H100 80GB GPU",),
    "a3-megagpu": ("H100 80GB Mega GPU", "H100 Mega 80GB GPU", "H100 80GB Plus GPU"),
    "a3-ultragpu": ("H200 141GB GPU",), "g2-standard": ("L4 GPU",),
}
GPU_BY_MODEL = {"T4": ("Tesla T4 GPU",), "V100": ("Tesla V100 GPU",), "L4": ("L4 GPU",)}
# GiB of Local SSD bundled with a machine type, where a source gives it: the `local-ssd` field of
# Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml @082120d2 (generated 2024-11-07 from the
# Billing catalog): a2-ultragpu-1g 375, -2g 750 (and 375 per GPU for -4g/-8g, as in corrections.yaml),
# a3-highgpu-1g 750, a3-highgpu-4g 3000, a3-highgpu-8g 6000, a3-megagpu-8g 6000. Other types: size not
# sourced here, so their price leaves it out and the row says so.
LOCAL_SSD_GIB = {"a2-ultragpu-1g": 375, "a2-ultragpu-2g": 750, "a2-ultragpu-4g": 1500, "a2-ultragpu-8g": 3000,
                 "a3-highgpu-1g": 750, "a3-highgpu-4g": 3000, "a3-highgpu-8g": 6000, "a3-megagpu-8g": 6000}
BUNDLES_LOCAL_SSD = ("a2-ultragpu", "a3-")
_NOT_LIST_PRICE = ("custom", "premium", "reserved", "sole tenancy", "commitment", "dws", "flex", "calendar")


def network_pages() -> Pages:
    key = os.environ.get("GOOGLE_API_KEY")
    token = os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN")
    if not key and not token:
        raise RefreshError("the Cloud Billing Catalog API needs an API key (GOOGLE_API_KEY) or an OAuth token "
                           "(GOOGLE_OAUTH_ACCESS_TOKEN, e.g. from `gcloud auth print-access-token`); or give "
                           "recorded responses with --input")
    header = ("X-Goog-Api-Key", key) if key else ("Authorization", f"Bearer {token}")
    return NetworkPages(signer=lambda r: Request(r.url, r.method, r.body, r.headers + (header,)))


def first_request() -> Request:
    return Request(f"{ENDPOINT}?currencyCode=USD&pageSize=5000")


def next_request(page: Any, request: Request) -> Request | None:
    token = page.get("nextPageToken") if isinstance(page, dict) else None
    if token and not isinstance(token, str):
        raise RefreshError(f"nextPageToken is a {type(token).__name__}, not a string")
    return Request(f"{ENDPOINT}?currencyCode=USD&pageSize=5000&pageToken={quote(token, safe='')}") if token else None


class _Sku:
    def __init__(self, sku: dict[str, Any], page: Page, where: str):
        category = need(sku, "category", dict, page, where)
        self.description = need(sku, "description", str, page, where)
        self.family = str(category.get("resourceFamily", ""))
        self.group = str(category.get("resourceGroup", ""))
        self.usage = str(category.get("usageType", ""))
        self.regions = tuple(need(sku, "serviceRegions", list, page, where))
        info = need(sku, "pricingInfo", list, page, where)
        if not info:
            raise Malformed(f"{page.where}: page {page.number}: {where}.pricingInfo is empty")
        expression = need(info[0], "pricingExpression", dict, page, f"{where}.pricingInfo[0]")
        self.unit = str(expression.get("usageUnit", ""))
        rates = need(expression, "tieredRates", list, page, f"{where}.pricingInfo[0].pricingExpression")
        if not rates:
            raise Malformed(f"{page.where}: page {page.number}: {where} has no tieredRates")
        price = need(rates[-1], "unitPrice", dict, page, f"{where}...tieredRates[-1]")
        try:
            self.price = int(price.get("units") or 0) + int(price.get("nanos") or 0) / 1e9
        except (TypeError, ValueError):
            raise Malformed(f"{page.where}: page {page.number}: {where} unitPrice {price} is not units + nanos") \
                from None
        if price.get("currencyCode", "USD") != "USD":
            raise Malformed(f"{page.where}: page {page.number}: {where} is priced in {price.get('currencyCode')}; "
                            "the catalog is in USD (ask with currencyCode=USD)")

    def usable(self) -> bool:
        text = self.description.lower()
        return (self.family == "Compute" and self.usage in ("OnDemand", "Preemptible")
                and not any(word in text for word in _NOT_LIST_PRICE))


def refresh(pages: Pages, region: str, facts: dict[str, InstanceType]) -> FeedResult:
    skus = []
    for page in pages.read("skus", first_request(), next_request):
        for index, raw in enumerate(need(page.data, "skus", list, page, "$")):
            sku = _Sku(raw, page, f"skus[{index}]")
            if sku.usable() and region in sku.regions:
                skus.append(sku)
    rows: list[InstanceType] = []
    unpriced: dict[str, list[str]] = {}
    for name, fact in sorted(facts.items()):
        on_demand, missing = _machine_price(name, fact, skus, "OnDemand")
        if on_demand is None:
            unpriced.setdefault(missing, []).append(name)
            continue
        spot, _ = _machine_price(name, fact, skus, "Preemptible")
        ssd_note = ("" if name in LOCAL_SSD_GIB or not name.startswith(BUNDLES_LOCAL_SSD)
                    else "price leaves out the bundled Local SSD (size not in the feed)")
        rows.append(InstanceType(
            cloud="gcp", region=region, name=name, gpu=fact.gpu, gpus=fact.gpus, vcpus=fact.vcpus,
            memory_gib=fact.memory_gib, on_demand=round(on_demand, 6),
            spot=None if spot is None else round(spot, 6), source=SOURCE,
            note="; ".join(n for n in (ssd_note, "" if spot is not None else "no Spot SKU") if n)))
    notes = [f"no {part} SKU for {', '.join(names)}" for part, names in sorted(unpriced.items()) if skus]
    missing_spot = [r.name for r in rows if r.spot is None]
    if missing_spot:
        notes.append(f"no Spot (Preemptible) SKUs for {', '.join(missing_spot)}")
    return FeedResult(tuple(rows), tuple(notes))


def _machine_price(name: str, fact: InstanceType, skus: list[_Sku], usage: str) -> tuple[float | None, str]:
    """The machine's price per hour for `usage` (host vCPUs and RAM, its GPUs, the Local SSD it bundles),
    or None and the part no SKU prices."""
    series = SERIES.get(name.split("-")[0])
    if series is None:
        return None, "machine series"
    mine = [s for s in skus if s.usage == usage]
    core, ram = _host_skus(mine, series)
    gpu = _gpu_sku(mine, name, fact.gpu)
    for part, sku in (("vCPU", core), ("RAM", ram), ("GPU", gpu)):
        if sku is None:
            return None, part
    assert core and ram and gpu
    price = core.price * fact.vcpus + ram.price * fact.memory_gib + gpu.price * fact.gpus
    if name not in LOCAL_SSD_GIB:
        return price, ""
    ssd = _local_ssd_per_gib_hour(mine)
    if ssd is None:
        return None, "Local SSD"
    return price + ssd * LOCAL_SSD_GIB[name], ""


def _host_skus(skus: list[_Sku], series: str) -> tuple[_Sku | None, _Sku | None]:
    """The series' vCPU and RAM SKUs (N1 lists both in one group, N1Standard, told apart by description)."""
    host = [s for s in skus if series.lower() in s.description.lower() and s.group != "GPU"]
    core = _one(s for s in host if s.group == "CPU" or (s.group == "N1Standard" and "Core" in s.description))
    ram = _one(s for s in host if s.group == "RAM" or (s.group == "N1Standard" and "Ram" in s.description))
    return core, ram


def _gpu_sku(skus: list[_Sku], name: str, gpu_model: str) -> _Sku | None:
    """The GPU SKU its family names (a2-ultragpu's A100 80GB, a3-megagpu's Mega H100), else its GPU model's."""
    family = "-".join(name.split("-")[:2])
    fragments = GPU_BY_FAMILY.get(family) or GPU_BY_MODEL.get(gpu_model) or ()
    return _one(s for s in skus if s.group == "GPU" and any(f in s.description for f in fragments))


def _local_ssd_per_gib_hour(skus: list[_Sku]) -> float | None:
    """The Local SSD price per GiB-hour (the SKU may be per GiB-month)."""
    ssd = _one(s for s in skus if s.group == "LocalSSD" and "SSD backed Local Storage" in s.description)
    if ssd is None:
        return None
    return ssd.price / HOURS_PER_MONTH if ssd.unit.endswith(".mo") else ssd.price


def _one(candidates: Any) -> _Sku | None:
    """The SKU that matches; with several (duplicate listings), the lowest price."""
    found = sorted(candidates, key=lambda s: s.price)
    return found[0] if found else None
