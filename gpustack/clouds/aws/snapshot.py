"""AWS rows for `make catalog`, from four kinds of snapshot (each in the source's own format):

- SkyPilot's AWS catalog (skypilot-org/skypilot-catalog `catalogs/v8/aws/vms.csv`: one row per instance
  type and availability zone, from the AWS Price List API and the EC2 spot price history). On-demand is
  the region's price; spot is the lowest zone price of the region, leaving out Local and Wavelength
  Zones (zone ids with a location part, `use1-atl2-az1`, `usw2-lax1-az1`) and zone rows whose spot price
  equals the on-demand price (placeholders). Facts (vCPUs, memory, GPUs) are the source's own.
- A vantage-derived GPU table (`all_gpu_instances.js`: per instance type its GPU, count, vCPUs, memory
  and an on-demand price per region; no spot). Only region names proper are read (Local and Wavelength
  Zones such as `eu-west-3-wl1-cmn1` are not), and only whole NVIDIA GPUs the catalog has a model for.
- Karpenter's generated AWS tables (aws/karpenter-provider-aws `pkg/providers/pricing/`:
  `zz_generated.pricing_aws.go`, on-demand for us-east-1 only, and `zz_generated.pricing_aws_us_gov.go`,
  us-gov-east-1 and us-gov-west-1). Their types take their facts from the other snapshots or the
  bundled rows.
- AWS's spot pricing feed (`spot.json`, the document behind aws.amazon.com/ec2/spot/pricing: per region
  and instance type one Linux spot price; no on-demand price, no facts). Its price replaces an older
  spot price of the row the rules below pick, or gives a row without one its spot price, and goes with
  that row's on-demand price; the row is dated by the older of the two and its note names the feed. A
  feed price at or above on-demand (to the feed's 4 decimals) is not a spot price and is left out, as
  are sizes the feed marks unavailable ("N/A*").

Per region and type the newest source's row is taken, with one exception: a row without a spot price
does not replace an older row that has one when the two on-demand prices are the same to the cent. The
newer source confirms the on-demand price, not the spot price (a point-in-time market value), so the row
keeps its spot price and the spot price's older date, and its note names the confirming source; the
price age of a plan on it is the age of that spot price. Bundled rows of a source
with no snapshot here are candidates too, so a rebuild from on-demand tables keeps the spot prices it
cannot replace. Every on-demand disagreement over 5% is reported with the row kept.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence

from gpustack.catalog.feeds import RefreshError
from gpustack.catalog.refresh import MOVE_THRESHOLD, FeedResult
from gpustack.catalog.rows import InstanceType
from gpustack.catalog.snapshots import Snapshot, facts_of, karpenter_tables, left_out, skypilot_rows

VANTAGE_TABLE = "all_gpu_instances.js"
SPOT_FEED = "spot.json"
FEED_DECIMALS = 4  # the spot feed's prices, "0.3196"
FEED_SPOT = "spot from "  # how a row's note names the feed its spot price comes from
ON_DEMAND_OF = "on-demand of "  # ... and the source of its on-demand price
# the commercial partition's table (us-east-1) and the GovCloud one (us-gov-east-1, us-gov-west-1)
KARPENTER_TABLES = ("zz_generated.pricing_aws.go", "zz_generated.pricing_aws_us_gov.go")
REGION_PROPER = re.compile(r"[a-z]{2}(-gov)?-[a-z]+-\d")  # us-east-1, not us-east-1-atl-2a or eu-west-3-wl1-cmn1


def regional_zone(zone: str) -> bool:
    """An availability zone of the region proper (`use1-az4`), not a Local or Wavelength Zone."""
    return zone.count("-") == 1


def _note(spot_zones: tuple[str, ...]) -> str:
    return f"spot from the one zone the source lists ({spot_zones[0]})" if len(spot_zones) == 1 else ""


def rebuild(snapshots: Sequence[Snapshot], known: Sequence[InstanceType],
            gpu_of: Callable[[str], str | None]) -> FeedResult:
    candidates: list[InstanceType] = []
    notes: list[str] = []
    if any(snap.files("vms.csv") for snap in snapshots):
        rows, found = skypilot_rows(snapshots, "aws", gpu_of, regional_zone, _note)
        candidates += rows
        notes += found
    facts = facts_of(candidates)
    for snap in snapshots:
        for path in snap.files(VANTAGE_TABLE):
            listed, said = _vantage_rows(snap, snap.text(path), str(path), gpu_of)
            candidates += listed
            notes += [f"{snap.key}: {note}" for note in said]
            facts = {**facts_of(listed), **facts}
    facts = {**facts_of(known), **facts}
    for snap, table in ((snap, table) for snap in snapshots for table in KARPENTER_TABLES):
        for tables in karpenter_tables(snap, table):
            for region, prices in sorted(tables.items()):
                for name, price in sorted(prices.items()):
                    fact = facts.get(name)
                    if fact is not None and price > 0:
                        candidates.append(InstanceType(
                            cloud="aws", region=region, name=name, gpu=fact.gpu, gpus=fact.gpus, vcpus=fact.vcpus,
                            memory_gib=fact.memory_gib, on_demand=price, spot=None, source=snap.key, note="",
                            as_of=snap.as_of))
    feeds = _spot_feeds(snapshots)
    given = {snap.key for snap in snapshots} - {snap.key for _, snap in feeds.values()}
    carried = [row for row in known if row.source not in given]  # a feed's rows got their on-demand elsewhere
    if not candidates:
        raise RefreshError("no GPU rows in the AWS snapshots")
    picked, kept = _pick(carried + candidates, feeds)
    feed_keys = {snap.key for _, snap in feeds.values()}
    if any(row.source not in feed_keys for row in carried):
        sources = sorted({row.source for row in carried} - feed_keys)
        notes.append(f"bundled rows of {', '.join(sources)} (no snapshot given) are candidates with the rest")
    return FeedResult(picked, tuple(notes + kept))


def _pick(candidates: Sequence[InstanceType], feeds: Mapping[tuple[str, str], tuple[float, Snapshot]] | None = None
          ) -> tuple[tuple[InstanceType, ...], list[str]]:
    """Per region and type, the row to keep (see the module's rule), and what was said about it."""
    grouped: dict[tuple[str, str], list[InstanceType]] = {}
    for row in candidates:
        grouped.setdefault((row.region, row.name), []).append(row)
    rows: list[InstanceType] = []
    notes: list[str] = []
    for (region, name), options in sorted(grouped.items()):
        options.sort(key=lambda r: (r.as_of, r.spot is not None), reverse=True)
        newest = options[0]
        chosen = newest
        if newest.spot is None:
            older = next((r for r in options if r.spot is not None and _same_cent(r.on_demand, newest.on_demand)), None)
            if older is not None and older.as_of != newest.as_of:
                chosen = dataclasses.replace(older, note=_confirmed(older, newest))
        feed = (feeds or {}).get((region, name))
        if feed is not None:
            chosen = _with_feed_spot(chosen, newest, *feed, notes)
        for other in options:
            if not _agree(other.on_demand, chosen.on_demand):
                notes.append(f"{region} {name}: {other.source} {other.on_demand:g} vs {chosen.source} "
                             f"{chosen.on_demand:g} USD/h; kept {chosen.source}")
        rows.append(chosen)
    return tuple(rows), notes


def _with_feed_spot(chosen: InstanceType, newest: InstanceType, spot: float, feed: Snapshot,
                    notes: list[str]) -> InstanceType:
    """`chosen` with the feed's spot price when it has none, came from this feed, or is older than the feed.
    The row takes the newest on-demand price (`newest`, which `chosen` gives to the cent), the older date of
    the two prices and the feed as its source; its note names where the on-demand price comes from."""
    if chosen.spot is not None and feed.as_of <= chosen.as_of and chosen.source != feed.key:
        return chosen  # a newer spot price; a row of this feed itself takes the copy given now
    # The feed writes 4 decimals; a spot price equal to on-demand at that precision is the cap AWS shows
    # where no spot discount is to be had (ap-northeast-1 g5.24xlarge 11.8112 against 11.81123).
    if spot >= round(newest.on_demand, FEED_DECIMALS):
        notes.append(f"{newest.region} {newest.name}: {feed.key} spot {spot:g} is not below on-demand "
                     f"{newest.on_demand:g} USD/h; left out")
        return chosen
    parts = [part for part in newest.note.split("; ") if part]
    on_demand = next((part for part in parts if part.startswith(ON_DEMAND_OF)),
                     f"{ON_DEMAND_OF}{newest.source} ({newest.as_of})")
    kept = [part for part in parts if not part.startswith((ON_DEMAND_OF, FEED_SPOT, CONFIRMED))]
    note = "; ".join([*kept, on_demand, f"{FEED_SPOT}{feed.key} ({feed.as_of})"])
    return dataclasses.replace(newest, source=feed.key, spot=spot, as_of=min(newest.as_of, feed.as_of), note=note)


def _spot_feeds(snapshots: Sequence[Snapshot]) -> dict[tuple[str, str], tuple[float, Snapshot]]:
    """(region, type) -> the Linux spot price of the newest spot feed that lists it, with that feed."""
    prices: dict[tuple[str, str], tuple[float, Snapshot]] = {}
    for snap in sorted(snapshots, key=lambda s: s.as_of):
        for path in snap.files(SPOT_FEED):
            prices.update({key: (price, snap) for key, price in _spot_feed(snap.text(path), str(path)).items()})
    return prices


def _spot_feed(text: str, where: str) -> dict[tuple[str, str], float]:
    """(region, type) -> Linux spot USD per hour of a spot pricing feed document (regions proper only;
    "N/A*" and other non-numbers left out; a type listed twice must have one price)."""
    try:
        regions = json.loads(text)["config"]["regions"]
        listed = [(str(r["region"]), str(size["size"]), column["prices"]["USD"])
                  for r in regions for group in r["instanceTypes"] for size in group["sizes"]
                  for column in size["valueColumns"] if column["name"] == "linux"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RefreshError(f"{where}: not a spot pricing feed (config.regions[].instanceTypes[].sizes[]."
                           f"valueColumns[]): {exc!r}") from None
    prices: dict[tuple[str, str], float] = {}
    for region, name, usd in listed:
        price = _number(usd)
        if price is None or not REGION_PROPER.fullmatch(region):
            continue
        if prices.setdefault((region, name), price) != price:
            raise RefreshError(f"{where}: {region} {name} is listed with two Linux prices "
                               f"({prices[(region, name)]:g} and {price:g})")
    return prices


def _number(text: object) -> float | None:
    try:
        value = float(str(text))
    except ValueError:
        return None
    return value if value > 0 else None


CONFIRMED = "on-demand confirmed by "


def _confirmed(older: InstanceType, newer: InstanceType) -> str:
    """The older row's note, saying once (a rebuild reads its own output) which source confirmed it."""
    kept = [part for part in older.note.split("; ") if part and not part.startswith(CONFIRMED)]
    said = f"{CONFIRMED}{newer.source} ({newer.as_of}), spot price and date of {older.source} ({older.as_of})"
    return "; ".join([*kept, said])


def _same_cent(a: float, b: float) -> bool:
    return round(a, 2) == round(b, 2)


def _agree(a: float, b: float) -> bool:
    return abs(a - b) <= MOVE_THRESHOLD * max(a, b)


def _vantage_rows(snap: Snapshot, text: str, where: str, gpu_of: Callable[[str], str | None]
                  ) -> tuple[list[InstanceType], list[str]]:
    """The rows of a vantage-derived table: a JavaScript array literal of instance objects (JSON)."""
    try:
        items = json.loads(text[text.index("["): text.rindex("]") + 1])
    except (ValueError, json.JSONDecodeError) as exc:
        raise RefreshError(f"{where}: not a JavaScript array of instance objects ({exc})") from None
    rows, unknown, partial = [], set(), set()
    for item in items:
        try:
            name, label, count = str(item["name"]), str(item["gpu"]), float(item["gpuCount"])
            vcpus, memory = float(item["vcpu"]), float(str(item["memory"]).split()[0])
            prices = dict(item["pricing"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RefreshError(f"{where}: instance {item.get('name') if isinstance(item, dict) else item!r}: "
                               f"{exc!r}") from None
        if not label.startswith("NVIDIA "):
            continue
        model = _model(label, count, str(item.get("gpuMemory", "")))
        gpu = gpu_of(model)
        if gpu is None:
            unknown.add(f"{model} ({name})" if model.endswith("?") else model)
            continue
        if count < 1 or count != int(count):
            partial.add(name)
            continue
        for region, price in sorted(prices.items()):
            on_demand = price.get("onDemand") if isinstance(price, dict) else None
            if REGION_PROPER.fullmatch(region) and isinstance(on_demand, int | float) and on_demand > 0:
                rows.append(InstanceType(
                    cloud="aws", region=region, name=name, gpu=gpu, gpus=int(count), vcpus=vcpus, memory_gib=memory,
                    on_demand=float(on_demand), spot=None, source=snap.key, note="", as_of=snap.as_of))
    return rows, list(left_out(("GPUs the catalog has no model for", unknown), ("fractional-GPU types", partial)))


def _model(label: str, count: float, memory: str) -> str:
    """The catalog's name for a table's GPU label ("NVIDIA A10G", "NVIDIA B200 Blackwell"). The table's
    gpuMemory is per GPU or per instance depending on the row, so the A100 and V100 variants are told
    apart by the per-GPU memory it implies."""
    model = label.removeprefix("NVIDIA ").removesuffix(" Grace Blackwell").removesuffix(" Blackwell")
    size = re.match(r"(\d+)", memory)
    per_gpu = int(size.group(1)) if size else 0
    if per_gpu > 80 and count >= 1:
        per_gpu //= int(count)
    if model == "A100":
        return {40: "A100-40GB", 80: "A100-80GB"}.get(per_gpu, "A100-?")
    if model == "V100" and per_gpu != 16:
        return f"V100-{per_gpu}GB?"  # the catalog's V100 is the 16 GB part (p3dn's 32 GB is another)
    return model.replace(" ", "-")  # "RTX PRO 6000" -> "RTX-PRO-6000"
