"""Azure rows for `make catalog`, from two readings of the Azure Retail Prices API kept by others.

- Karpenter-for-Azure's generated table (Azure/karpenter-provider-azure
  `pkg/providers/pricing/zz_generated.pricing.go`): Linux pay-as-you-go in USD for every region, keyed by
  ARM SKU name (the same meter rules as `prices.py`: no Windows, no Low Priority). No Spot prices.
- Raw API snapshots of some regions (andy-diericks/azure-pricing-radar `data/latest/vm-*.json`, a map of
  items with armRegionName, productName, skuName, meterName, unitPrice, unitOfMeasure): the Spot item of a
  size is the skuName ending in " Spot" of the same productName. Older items carry the API's skuName
  ("NC4as T4 v3") rather than the ARM name, so such a size is matched to its ARM name by its
  pay-as-you-go price against the Karpenter table of the region, and only when one size has that price.

Where a region has both, the row takes the newer snapshot's prices (on-demand and Spot, one source per
row) and the importer reports where the two disagree by more than 5%. Instance facts (GPU, vCPUs,
memory) are those of the catalog's known rows: the price tables list prices, not machines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from gpustack.catalog.feeds import RefreshError
from gpustack.catalog.refresh import MOVE_THRESHOLD, FeedResult
from gpustack.catalog.rows import InstanceType
from gpustack.catalog.snapshots import Snapshot, facts_of, karpenter_tables
from gpustack.clouds.azure.acceptance import SPOT_UNKNOWN

KARPENTER_TABLE = "zz_generated.pricing.go"
# Sizes the bundled rows do not have yet: (GPU model, GPUs, vCPUs, GiB). Counts from microsoft/aspire
# src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.Generated.cs @ 6e81adea (2026-06-23, generated from
# Azure Resource SKUs): "Standard_ND96isr_H200_v5 — 96 vCPUs — 1850 GB RAM — 8 GPU(s)"; the GPU model is
# the series' (ND H200 v5). Azure's "GB" of VM memory are GiB.
NEW_SIZES = {"Standard_ND96isr_H200_v5": ("H200", 8, 96.0, 1850.0)}
NEW_SIZES_SOURCE = "microsoft/aspire AksNodeVmSizes.Generated.cs @ 6e81adea"
PLACEHOLDER = "the source's Spot meter equals on-demand (a placeholder)"
RADAR_FILES = "vm-*.json"


def rebuild(snapshots: Sequence[Snapshot], known: Sequence[InstanceType],
            gpu_of: Callable[[str], str | None]) -> FeedResult:
    del gpu_of  # the price tables name sizes, not GPUs: facts come from the known rows
    facts = _facts(known)
    tables = [(snap, table) for snap in snapshots for table in karpenter_tables(snap, KARPENTER_TABLE)]
    if not tables:
        raise RefreshError(f"no {KARPENTER_TABLE} among the Azure snapshots: it lists every region's prices")
    on_demand = max(tables, key=lambda t: t[0].as_of)
    notes: list[str] = []
    radar = _radar_snapshots(snapshots, on_demand[1], facts, notes)
    rows: list[InstanceType] = []
    unknown: set[str] = set()
    for region in sorted(set(on_demand[1]) | {region for _, regions in radar for region in regions}):
        newer = [(s, r[region]) for s, r in radar if region in r]
        spot = max(newer, key=lambda t: t[0].as_of) if newer else None
        rows += _region_rows(region, on_demand, spot, facts, notes, unknown)
    if unknown:
        notes.append(f"GPU sizes priced but without instance facts in the catalog (left out): {', '.join(sorted(unknown))}")
    return FeedResult(tuple(rows), tuple(notes))


_Table = dict[str, dict[str, float]]  # region -> ARM size -> pay-as-you-go USD/h
_Radar = dict[str, dict[str, tuple[float, float | None]]]  # region -> ARM size -> (pay-as-you-go, Spot)


def _facts(known: Sequence[InstanceType]) -> dict[str, InstanceType]:
    """ARM size -> a row with its facts: the known rows', and the sizes they do not have yet (NEW_SIZES)."""
    facts = facts_of(known)
    facts.update({name: InstanceType(cloud="azure", region="", name=name, gpu=gpu, gpus=gpus, vcpus=vcpus,
                                     memory_gib=memory, on_demand=0.0, spot=None, source=NEW_SIZES_SOURCE,
                                     note=f"facts: {NEW_SIZES_SOURCE}")
                  for name, (gpu, gpus, vcpus, memory) in NEW_SIZES.items()})
    return facts


def _radar_snapshots(snapshots: Sequence[Snapshot], on_demand: _Table, facts: dict[str, InstanceType],
                     notes: list[str]) -> list[tuple[Snapshot, _Radar]]:
    """Each snapshot's radar files read by region, with a note per region on the sizes left without Spot."""
    radar: list[tuple[Snapshot, _Radar]] = []
    for snap in snapshots:
        regions: _Radar = {}
        for path in snap.files(RADAR_FILES):
            region, sizes, unmatched = _radar_region(snap.text(path), str(path), on_demand, facts)
            regions.setdefault(region, {}).update(sizes)
            if unmatched:
                notes.append(f"{snap.key} {region}: no Spot meter found (or none matched to one ARM name) for "
                             f"{', '.join(unmatched)}")
        if regions:
            radar.append((snap, regions))
    return radar


def _region_rows(region: str, on_demand: tuple[Snapshot, _Table],
                 spot: tuple[Snapshot, dict[str, tuple[float, float | None]]] | None,
                 facts: dict[str, InstanceType], notes: list[str], unknown: set[str]) -> list[InstanceType]:
    """The region's rows: a size the newer radar snapshot prices takes its prices (on-demand and Spot),
    any other the Karpenter table's on-demand; a GPU size without facts goes into `unknown`."""
    on_demand_source, listed = on_demand[0], on_demand[1].get(region, {})
    spot_source, spot_sizes = spot if spot is not None else (None, {})
    rows: list[InstanceType] = []
    for name in sorted(set(listed) | set(spot_sizes)):
        fact = facts.get(name)
        if fact is None:
            if _gpu_size(name):
                unknown.add(name)
            continue
        placeholder = False
        if spot_source is not None and name in spot_sizes:
            price, spot_price = spot_sizes[name]
            if spot_price is not None and spot_price >= price:  # not a Spot price: what the meter shows without one
                spot_price, placeholder = None, True
            if name in listed and abs(price - listed[name]) > MOVE_THRESHOLD * listed[name]:
                notes.append(f"{region} {name}: {spot_source.key} {price:g} vs {on_demand_source.key} "
                             f"{listed[name]:g} USD/h; kept {spot_source.key} (the newer)")
            source = spot_source
        else:
            price, spot_price, source = listed[name], None, on_demand_source
        rows.append(InstanceType(
            cloud="azure", region=region, name=name, gpu=fact.gpu, gpus=fact.gpus, vcpus=fact.vcpus,
            memory_gib=fact.memory_gib, on_demand=price, spot=spot_price, source=source.key,
            note=_note(fact, spot_price, spot_listed=source is spot_source and not placeholder,
                       placeholder=placeholder),
            as_of=source.as_of))
    return rows


def _note(fact: InstanceType, spot: float | None, spot_listed: bool, placeholder: bool = False) -> str:
    """The row's note: where its facts come from, and why it has no Spot price (none sold, or none known)."""
    parts = ["facts corrected: see corrections.yaml"] if "corrections.yaml" in fact.note else []
    parts += [fact.note] if fact.note.startswith("facts: ") else []
    if spot is None:
        parts += [PLACEHOLDER] if placeholder else []
        parts.append("no Spot meter in the source" if spot_listed else SPOT_UNKNOWN)
    return "; ".join(parts)


def _gpu_size(name: str) -> bool:
    """An N-series (GPU) size, by Azure's naming: Standard_NC/ND/NV/NG..."""
    return name.startswith(("Standard_NC", "Standard_ND", "Standard_NV", "Standard_NG"))


def _radar_region(text: str, where: str, on_demand: Mapping[str, Mapping[str, float]], known: Iterable[str]
                  ) -> tuple[str, dict[str, tuple[float, float | None]], list[str]]:
    """(region, ARM size -> (pay-as-you-go, Spot), the known sizes of the region left without a Spot price)."""
    region, linux, spots = _radar_items(text, where)
    table = on_demand.get(region, {})
    names = list(known)
    by_key = {_key(name): name for name in names}
    sizes: dict[str, tuple[float, float | None]] = {}
    for (product, sku), price in sorted(linux.items()):
        if not _gpu_like(sku):
            continue
        spot = spots.get((product, sku))
        name = by_key.get(_key(sku))
        if name is None and spot is not None:
            name = _by_price(sku, price, table, names)
        if name is not None and (name not in sizes or sku.startswith("Standard_")):
            sizes[name] = (price, spot)
    unmatched = sorted(n for n in names if n in table and sizes.get(n, (0.0, None))[1] is None)
    return region, sizes, unmatched


_Items = dict[tuple[str, str], float]  # (productName, skuName) -> USD/h


def _radar_items(text: str, where: str) -> tuple[str, _Items, _Items]:
    """(the file's one region, its Linux pay-as-you-go items, its Spot items keyed by the skuName
    without " Spot"); Windows, Low Priority and items not priced per hour are left out."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RefreshError(f"{where}: not JSON ({exc})") from None
    if not isinstance(items, dict):
        raise RefreshError(f"{where}: expected a map of price items")
    regions = set()
    linux: _Items = {}
    spots: _Items = {}
    for key, raw in sorted(items.items()):
        item, product, sku, price = _radar_item(raw, where, key)
        regions.add(str(item.get("armRegionName", "")))
        if _not_list_price(item, product, sku):
            continue
        if sku.endswith(" Spot"):
            spots[(product, sku[: -len(" Spot")])] = price
        else:
            linux[(product, sku)] = price
    if len(regions) != 1:
        raise RefreshError(f"{where}: items of {len(regions)} regions; one file per region")
    return regions.pop(), linux, spots


def _radar_item(item: object, where: str, key: str) -> tuple[dict[str, object], str, str, float]:
    """The item as a map, with its productName, skuName and unitPrice (a number, or the file is refused)."""
    if not isinstance(item, dict):
        raise RefreshError(f"{where}: item {key!r} is not an object")
    price = item.get("unitPrice")
    if not isinstance(price, int | float) or isinstance(price, bool):
        raise RefreshError(f"{where}: item {key!r}: unitPrice is not a number")
    return item, str(item.get("productName", "")), str(item.get("skuName", "")), float(price)


def _not_list_price(item: dict[str, object], product: str, sku: str) -> bool:
    """A Windows, Low Priority or not-per-hour item: not the Linux list price of an hour."""
    meter = str(item.get("meterName", ""))
    return (product.endswith(" Windows") or sku.endswith(" Low Priority") or meter.endswith(" Low Priority")
            or item.get("unitOfMeasure") != "1 Hour")


def _by_price(sku: str, price: float, table: Mapping[str, float], known: Sequence[str]) -> str | None:
    """An older skuName ("ND96amsA100v4") matched to the one known ARM size of the same size prefix that
    the Karpenter table prices the same in the region; None when none or several do."""
    prefix = re.match(r"[a-z]+\d+", _key(sku))
    named = [n for n in known if prefix and _key(n).startswith(prefix.group())
             and abs(table.get(n, -1.0) - price) < 5e-7]
    return named[0] if len(named) == 1 else None


def _key(name: str) -> str:
    """A size name without the Standard_ prefix, separators and case: the API's skuName and the ARM name
    ("NC16asT4 v3", "Standard_NC16as_T4_v3") agree on it."""
    return re.sub(r"[^a-z0-9]", "", name.lower().removeprefix("standard_"))


def _gpu_like(sku: str) -> bool:
    return sku.removeprefix("Standard_").startswith(("NC", "ND", "NV", "NG"))
