"""AWS: on-demand prices from the Price List (GetProducts with credentials, else the public per-region
offer file) and spot prices from EC2 DescribeSpotPriceHistory (credentials).

- GetProducts: `pricing:GetProducts`, response `{FormatVersion, NextToken, PriceList: [JSON string]}`,
  each string `{product{productFamily, attributes{}}, terms{OnDemand{...priceDimensions{...pricePerUnit
  {USD}}}}, publicationDate}` (botocore examples; aws/karpenter-provider-aws@v1.14.1
  pkg/providers/pricing/pricing.go lines 114-123, 210-296: endpoint us-east-1, or ap-south-1 for ap-*,
  eu-central-1 for eu-*; filters regionCode, operatingSystem=Linux, preInstalledSw=NA, tenancy=Shared,
  capacitystatus=Used; MaxResults 100). infracost adds licenseModel="No License required".
- Offer file (no credentials): `https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/
  <region>/index.json`, `{products{<sku>{productFamily, attributes}}, terms{OnDemand{<sku>{...}}}}`; it has
  no spot prices ("Offer files don't include ... Amazon EC2 Spot Instances", awsdocs
  aws-cost-management-user-guide doc_source/using-ppslong.md). marketoption CapacityBlock rows are skipped.
- DescribeSpotPriceHistory: `{SpotPriceHistory[{AvailabilityZone, InstanceType, ProductDescription,
  SpotPrice, Timestamp}], NextToken}`; Karpenter asks with StartTime=now for the latest price per type and
  zone (pricing.go lines 394-404). Spot here = the lowest latest price over the region's zones, Local
  Zones (`us-east-1-atl-2a`) left out.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import urllib.parse
from typing import Any
from xml.etree import ElementTree

from gpustack.catalog.feeds import Malformed, NetworkPages, Page, Pages, RefreshError, Request, need, number
from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType

SOURCE = "AWS Price List (EC2 on-demand) and EC2 spot price history"
STREAMS = ("products", "spot")
OFFER_FILE = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.json"
LINUX = {"operatingSystem": "Linux", "preInstalledSw": "NA", "tenancy": "Shared", "capacitystatus": "Used"}
SPOT_PRODUCTS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")


def pricing_endpoint(region: str) -> tuple[str, str]:
    """(API region, URL) of the Price List Query API that serves `region`'s prices."""
    api = "ap-south-1" if region.startswith("ap-") else "eu-central-1" if region.startswith("eu-") else "us-east-1"
    return api, f"https://api.pricing.{api}.amazonaws.com/"


class _Credentials:
    def __init__(self) -> None:
        self.key = os.environ.get("AWS_ACCESS_KEY_ID", "")
        self.secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        self.token = os.environ.get("AWS_SESSION_TOKEN", "")

    def __bool__(self) -> bool:
        return bool(self.key and self.secret)


def network_pages() -> Pages:
    credentials = _Credentials()
    return _AwsPages(credentials if credentials else None)


class _AwsPages(NetworkPages):
    """GetProducts and the EC2 API when credentials are in the environment, else the public offer file."""

    def __init__(self, credentials: _Credentials | None):
        super().__init__(signer=lambda r: sign(r, credentials) if credentials and "amazonaws.com/" in r.url
                         and "offers/v1.0" not in r.url else r)
        self.credentials = credentials


def sign(request: Request, credentials: _Credentials, now: datetime.datetime | None = None,
         scope_of: tuple[str, str] | None = None) -> Request:
    """AWS Signature Version 4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html);
    `scope_of` is (service, region), by default read from the pricing or EC2 host name."""
    url = urllib.parse.urlsplit(request.url)
    host = url.netloc
    if scope_of is None:
        scope_of = ("pricing", host.split(".")[2]) if host.startswith("api.pricing.") else ("ec2", host.split(".")[1])
    service, region = scope_of
    moment = now or datetime.datetime.now(datetime.UTC)
    stamp, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    body = request.body or b""
    headers = {k.lower(): v for k, v in request.headers} | {"host": host, "x-amz-date": stamp}
    if credentials.token:
        headers["x-amz-security-token"] = credentials.token
    query = "&".join(sorted(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                            for k, v in urllib.parse.parse_qsl(url.query, keep_blank_values=True)))
    names = ";".join(sorted(headers))
    canonical = "\n".join([request.method, url.path or "/", query,
                           "".join(f"{k}:{headers[k].strip()}\n" for k in sorted(headers)), names,
                           hashlib.sha256(body).hexdigest()])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{credentials.secret}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={credentials.key}/{scope}, SignedHeaders={names}, "
                                f"Signature={signature}")
    return Request(request.url, request.method, body or None, tuple(sorted(headers.items())))


def products_request(region: str, pages: Pages, token: str = "") -> Request:
    if pages.recorded or not getattr(pages, "credentials", None):
        return Request(OFFER_FILE.format(region=region))
    filters = [{"Type": "TERM_MATCH", "Field": k, "Value": v}
               for k, v in {"regionCode": region, **LINUX, "licenseModel": "No License required"}.items()]
    body = {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1", "MaxResults": 100,
            **({"NextToken": token} if token else {})}
    _, url = pricing_endpoint(region)
    return Request(url, "POST", json.dumps(body).encode(),
                   (("content-type", "application/x-amz-json-1.1"),
                    ("x-amz-target", "AWSPriceListService.GetProducts")))


def spot_request(region: str, types: list[str], token: str = "") -> Request:
    params = [("Action", "DescribeSpotPriceHistory"), ("Version", "2016-11-15"),
              ("StartTime", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))]
    params += [(f"ProductDescription.{i}", p) for i, p in enumerate(SPOT_PRODUCTS, start=1)]
    params += [(f"InstanceType.{i}", t) for i, t in enumerate(types, start=1)]
    if token:
        params.append(("NextToken", token))
    return Request(f"https://ec2.{region}.amazonaws.com/?{urllib.parse.urlencode(params)}")


def refresh(pages: Pages, region: str, facts: dict[str, InstanceType]) -> FeedResult:
    notes: list[str] = []
    skipped = {"not Linux": 0, "capacity block": 0}

    def next_products(data: Any, request: Request) -> Request | None:
        token = data.get("NextToken") if isinstance(data, dict) else None
        return products_request(region, pages, token) if token else None

    on_demand: dict[str, float] = {}
    for page in pages.read("products", products_request(region, pages), next_products):
        for product, terms, where in _offers(page):
            attributes = need(product, "attributes", dict, page, f"{where}.product")
            name = attributes.get("instanceType")
            if product.get("productFamily") != "Compute Instance" or name not in facts:
                continue
            if attributes.get("regionCode", region) != region:
                continue
            if any(attributes.get(k, v) != v for k, v in LINUX.items()) or \
                    attributes.get("licenseModel", "No License required") != "No License required":
                skipped["not Linux"] += attributes.get("operatingSystem") != "Linux"
                continue
            if attributes.get("marketoption", "OnDemand") != "OnDemand":
                skipped["capacity block"] += 1
                continue
            price = _hourly(terms, page, where)
            if price is not None:
                on_demand[name] = min(price, on_demand.get(name, price))
    spot = _spot(pages, region, sorted(on_demand), notes)
    rows = []
    for name in sorted(on_demand):
        fact = facts[name]
        zone_note = f"spot: lowest of {spot[name][1]} zones" if name in spot else "no spot price"
        rows.append(InstanceType(
            cloud="aws", region=region, name=name, gpu=fact.gpu, gpus=fact.gpus, vcpus=fact.vcpus,
            memory_gib=fact.memory_gib, on_demand=on_demand[name], spot=spot[name][0] if name in spot else None,
            source=SOURCE, note=zone_note))
    notes += [f"skipped {n} {what} price items" for what, n in skipped.items() if n]
    missing = [r.name for r in rows if r.spot is None]
    if missing and spot:
        notes.append(f"no spot price for {', '.join(missing)}")
    return FeedResult(tuple(rows), tuple(notes))


def _offers(page: Page) -> Any:
    """(product, its OnDemand terms, where) of a GetProducts page or of an offer file."""
    data = page.data
    if isinstance(data, dict) and "PriceList" in data:
        for index, text in enumerate(need(data, "PriceList", list, page, "$")):
            where = f"PriceList[{index}]"
            try:
                item = json.loads(text) if isinstance(text, str) else text
            except json.JSONDecodeError as exc:
                raise Malformed(f"{page.where}: page {page.number}: {where} is not a JSON document ({exc.msg})") \
                    from None
            product = need(item, "product", dict, page, where)
            terms = need(item, "terms", dict, page, where).get("OnDemand", {})
            yield product, terms, where
        return
    products = need(data, "products", dict, page, "$")
    on_demand = need(data, "terms", dict, page, "$").get("OnDemand", {})
    for sku, product in products.items():
        yield product, on_demand.get(sku, {}), f"products.{sku}"


def _hourly(terms: Any, page: Page, where: str) -> float | None:
    if not isinstance(terms, dict):
        raise Malformed(f"{page.where}: page {page.number}: {where}.terms.OnDemand is not an object")
    for term in terms.values():
        for code, dimension in need(term, "priceDimensions", dict, page, f"{where}.terms").items():
            if dimension.get("unit") != "Hrs":
                continue
            usd = need(need(dimension, "pricePerUnit", dict, page, f"{where}.{code}"), "USD", str, page,
                       f"{where}.{code}.pricePerUnit")
            value = number(usd, page, f"{where}.{code}.pricePerUnit.USD")
            if value > 0:
                return value
    return None


def _spot(pages: Pages, region: str, types: list[str], notes: list[str]) -> dict[str, tuple[float, int]]:
    if not types:
        return {}
    if not pages.recorded and not getattr(pages, "credentials", None):
        notes.append("no spot prices: DescribeSpotPriceHistory needs AWS credentials (AWS_ACCESS_KEY_ID, "
                     "AWS_SECRET_ACCESS_KEY)")
        return {}

    def next_spot(data: Any, request: Request) -> Request | None:
        token = data.get("NextToken") if isinstance(data, dict) else None
        return spot_request(region, types, token) if token else None

    latest: dict[tuple[str, str], tuple[str, float]] = {}
    for page in pages.read("spot", spot_request(region, types), next_spot):
        data = _from_xml(page.data) if isinstance(page.data, str) else page.data
        for index, item in enumerate(need(data, "SpotPriceHistory", list, page, "$")):
            where = f"SpotPriceHistory[{index}]"
            zone = need(item, "AvailabilityZone", str, page, where)
            name = need(item, "InstanceType", str, page, where)
            if item.get("ProductDescription") not in SPOT_PRODUCTS or name not in types:
                continue
            if not zone.startswith(region) or "-" in zone[len(region):]:  # another region, or a Local Zone
                continue
            price = number(need(item, "SpotPrice", str, page, where), page, f"{where}.SpotPrice")
            when = str(item.get("Timestamp", ""))
            if (name, zone) not in latest or when > latest[(name, zone)][0]:
                latest[(name, zone)] = (when, price)
    out: dict[str, tuple[float, int]] = {}
    for (name, _), (_, price) in latest.items():
        best, zones = out.get(name, (price, 0))
        out[name] = (min(best, price), zones + 1)
    return out


def _from_xml(text: str) -> dict[str, Any]:
    """The EC2 query API's XML answer in the shape of its JSON (SDK) form."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise RefreshError(f"DescribeSpotPriceHistory answered with XML that does not parse ({exc})") from None

    def strip(tag: str) -> str:  # XML namespaces
        return tag.rsplit("}", 1)[-1]

    names = {"availabilityZone": "AvailabilityZone", "instanceType": "InstanceType",
             "productDescription": "ProductDescription", "spotPrice": "SpotPrice", "timestamp": "Timestamp"}
    history = []
    token = ""
    for element in root:
        if strip(element.tag) == "spotPriceHistorySet":
            for item in element:
                history.append({names[strip(c.tag)]: c.text or "" for c in item if strip(c.tag) in names})
        elif strip(element.tag) == "nextToken":
            token = element.text or ""
    return {"SpotPriceHistory": history, "NextToken": token}
