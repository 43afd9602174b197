"""Oracle Cloud: the public price list API (no credentials). OCI list prices are the same in every region.

API: `GET https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD` ->
`{items[{partNumber, displayName, metricName, currencyCodeLocalizations[{currencyCode, prices[{model,
value}]}]}], links[{rel: "next", href}]}`; some items carry an older `prices[{currencyCode, prices[...]}]`
block; follow `links.rel == "next"` (oracle/mcp@1f906c31 src/oci-pricing-mcp-server/oci-pricing-mcp-server.py,
Oracle's own client). GPU shapes are priced per GPU-hour (metricName "GPU Per Hour"); a shape's price is
that rate x its GPUs. Items are told apart by display name, e.g. "OCI - Compute - GPU - H100", "Compute -
GPU - A100 - v2" (names vary in their prefix, so only the end is matched); look-alikes (NVIDIA AI
Enterprise licences, Cloud@Customer, metered variants) are left out. The price list has no preemptible
prices, so refreshed rows carry none.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from gpustack.catalog.feeds import Malformed, NetworkPages, Page, Pages, Request, need, number
from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType

SOURCE = "OCI price list API (apexapps.oracle.com cetools)"
STREAMS = ("products",)
ENDPOINT = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/"
GPU_PER_HOUR = "GPU Per Hour"
# Shape prefix -> the end of the display name of its per-GPU price item.
PARTS = (
    ("VM.GPU.A10.", "Compute - GPU - A10"), ("BM.GPU.A10.", "Compute - GPU - A10"),
    ("BM.GPU.A100-v2.", "Compute - GPU - A100 - v2"), ("BM.GPU4.", "Compute - GPU - E4"),
    ("VM.GPU3.", "Compute - GPU - E3"), ("BM.GPU3.", "Compute - GPU - E3"),
    ("BM.GPU.H100.", "Compute - GPU - H100"), ("BM.GPU.H200.", "Compute - GPU - H200"),
    ("BM.GPU.L40S.", "Compute - GPU - L40S"), ("BM.GPU.B200.", "Compute - GPU - B200"),
)
_LOOK_ALIKES = re.compile(r"AI Enterprise|Cloud@Customer|VMware|Metered", re.IGNORECASE)


def network_pages() -> Pages:
    return NetworkPages()


def first_request() -> Request:
    return Request(f"{ENDPOINT}?currencyCode=USD")


def next_request(page: Any, request: Request) -> Request | None:
    links = page.get("links") if isinstance(page, dict) else None
    for link in links if isinstance(links, list) else ():  # any other shape: no next page
        if isinstance(link, dict) and link.get("rel") == "next" and isinstance(link.get("href"), str):
            return Request(urllib.parse.urljoin(request.url, link["href"]))
    return None


def refresh(pages: Pages, region: str, facts: dict[str, InstanceType]) -> FeedResult:
    per_gpu: dict[str, float] = {}
    for page in pages.read("products", first_request(), next_request):
        for index, item in enumerate(need(page.data, "items", list, page, "$")):
            where = f"items[{index}]"
            name = need(item, "displayName", str, page, where)
            if item.get("metricName") != GPU_PER_HOUR or _LOOK_ALIKES.search(name):
                continue
            price = _pay_as_you_go(item, page, where)
            if price is not None:
                per_gpu[name.strip()] = price
    rows, missing = [], []
    for shape, fact in sorted(facts.items()):
        ending = next((end for prefix, end in PARTS if shape.startswith(prefix)), None)
        price = next((p for n, p in sorted(per_gpu.items()) if ending and n.endswith(ending)), None)
        if price is None:
            missing.append(shape)
            continue
        rows.append(InstanceType(
            cloud="oci", region=region, name=shape, gpu=fact.gpu, gpus=fact.gpus, vcpus=fact.vcpus,
            memory_gib=fact.memory_gib, on_demand=round(price * fact.gpus, 6), spot=None, source=SOURCE,
            note=f"{price:g} USD per GPU-hour, global list price"))
    notes = [f"no price list item for {', '.join(missing)}"] if missing and per_gpu else []
    return FeedResult(tuple(rows), tuple(notes))


def _pay_as_you_go(item: dict[str, Any], page: Page, where: str) -> float | None:
    blocks = item.get("currencyCodeLocalizations")
    if blocks is None:
        blocks = item.get("prices")  # the older shape of the same block
    if not isinstance(blocks, list):
        raise Malformed(f"{page.where}: page {page.number}: {where} has neither currencyCodeLocalizations nor prices")
    for block in blocks:
        if not isinstance(block, dict) or block.get("currencyCode") != "USD":
            continue
        for k, price in enumerate(need(block, "prices", list, page, f"{where}.USD")):
            if isinstance(price, dict) and price.get("model") == "PAY_AS_YOU_GO":
                return number(price.get("value"), page, f"{where}.USD.prices[{k}].value")
    return None
