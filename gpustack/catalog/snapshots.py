"""Source snapshots for `make catalog SOURCES=DIR`: files copied from public repositories, read offline.

DIR holds one folder per cloud and, inside it, one folder per source, named by the source's key in
`data/sources.yaml` (which records the repository, path, commit and date):
`DIR/<cloud>/<source key>/<files as the repository has them>`. A refresh is a new folder (and a new
key with its commit), so the next rebuild is a one-line change plus a review of the printed moves.
The formats read here are the sources' own: Karpenter's generated price tables (Go maps) and
SkyPilot's catalog CSV (`catalogs/v8/<cloud>/vms.csv`).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from gpustack.catalog.feeds import RefreshError
from gpustack.catalog.rows import InstanceType

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024  # SkyPilot's AWS vms.csv is about 4 MB; Karpenter's Azure table 3 MB


@dataclasses.dataclass(frozen=True)
class Snapshot:
    key: str  # the source key (sources.yaml)
    folder: Path
    as_of: str  # the date sources.yaml gives for the source's prices

    def files(self, pattern: str) -> tuple[Path, ...]:
        return tuple(sorted(self.folder.rglob(pattern)))

    def text(self, path: Path) -> str:
        if path.stat().st_size > MAX_SNAPSHOT_BYTES:
            raise RefreshError(f"{path}: more than {MAX_SNAPSHOT_BYTES:,} bytes; not a snapshot this importer reads")
        try:
            return path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            raise RefreshError(f"{path}: not UTF-8 text") from None


# Karpenter's tables: `initialOnDemandPrices["eastus"] = map[string]float64{` (Azure) or
# `"us-east-1": {` inside one map literal (AWS), then `"<type>": <price>,` entries (several per line).
_GO_REGION = re.compile(r'^\s*(?:initialOnDemandPrices\["([a-z0-9-]+)"\]\s*=\s*map\[string\]float64\{|"([a-z0-9-]+)":\s*\{)\s*$')
_GO_ENTRY = re.compile(r'"([A-Za-z0-9._-]+)":\s*([0-9]+(?:\.[0-9]+)?)\s*,')
_GENERATED = re.compile(r"//\s*generated at (\d{4}-\d\d-\d\d)T[0-9:]+Z")


def karpenter_prices(text: str, where: str) -> tuple[str, dict[str, dict[str, float]]]:
    """(the day the table was generated, region -> instance type -> on-demand USD per hour)."""
    generated = _GENERATED.search(text)
    if generated is None:
        raise RefreshError(f"{where}: no '// generated at <time>' line: not a Karpenter price table")
    tables: dict[str, dict[str, float]] = {}
    region: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        start = _GO_REGION.match(line)
        if start:
            region = start.group(1) or start.group(2)
            tables.setdefault(region, {})
            continue
        for name, price in _GO_ENTRY.findall(line):
            if region is None:
                raise RefreshError(f"{where}:{number}: a price before any region")
            tables[region][name] = float(price)
    if not any(tables.values()):
        raise RefreshError(f"{where}: no prices found: not a Karpenter price table")
    return generated.group(1), tables


def karpenter_tables(snap: Snapshot, name: str) -> list[dict[str, dict[str, float]]]:
    """The Karpenter price tables named `name` in `snap`, each checked to be of the day sources.yaml gives."""
    tables = []
    for path in snap.files(name):
        generated, table = karpenter_prices(snap.text(path), str(path))
        if generated != snap.as_of:
            raise RefreshError(f"{path} was generated on {generated}, but sources.yaml gives {snap.key} as_of "
                               f"{snap.as_of}: update sources.yaml (commit and as_of) first")
        tables.append(table)
    return tables


@dataclasses.dataclass(frozen=True)
class VmRow:
    """One row of a SkyPilot vms.csv: an instance type in one zone (GPU rows only are kept)."""

    instance_type: str
    accelerator: str
    count: float
    vcpus: float
    memory_gib: float
    price: float | None
    spot: float | None
    region: str
    zone: str


SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price",
                    "SpotPrice", "Region", "AvailabilityZone")


def skypilot_vms(text: str, where: str) -> tuple[VmRow, ...]:
    """The rows of a SkyPilot `vms.csv` that name an accelerator (GPU rows; host rows of GCP too)."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in SKYPILOT_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise RefreshError(f"{where}: not a SkyPilot vms.csv: no column(s) {', '.join(missing)}")
    rows = []
    for row in reader:
        try:
            rows.append(VmRow(
                instance_type=row["InstanceType"] or "", accelerator=row["AcceleratorName"] or "",
                count=_number(row["AcceleratorCount"]) or 0.0, vcpus=_number(row["vCPUs"]) or 0.0,
                memory_gib=_number(row["MemoryGiB"]) or 0.0, price=_number(row["Price"]),
                spot=_number(row["SpotPrice"]), region=row["Region"] or "", zone=row["AvailabilityZone"] or ""))
        except ValueError as exc:
            raise RefreshError(f"{where}:{reader.line_num}: {exc}") from None
    return tuple(rows)


def _number(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a price or a count")
    return value


# SkyPilot's accelerator names that are not the catalog's: its "A100" is the 40 GB part (AWS p4d, OCI
# BM.GPU4.8; the 80 GB one is "A100-80GB").
SKYPILOT_GPU_NAMES = {"A100": "A100-40GB"}


Priced = tuple[InstanceType, tuple[str, ...]]  # a row and the zones its spot figure is from (the lowest)


def skypilot_priced(rows: Sequence[VmRow], gpu_of: Callable[[str], str | None], spot_zone: Callable[[str], bool],
                    cloud: str, snap: Snapshot) -> tuple[tuple[Priced, ...], tuple[str, ...]]:
    """One entry per (region, instance type) of NVIDIA GPU rows the catalog knows the GPU of, and notes.

    On-demand is the region's price (the lowest, should zones differ); spot is the lowest zone price
    among zones `spot_zone` accepts, a zone price equal to on-demand being a placeholder, not a price."""
    grouped: dict[tuple[str, str], list[VmRow]] = {}
    unknown: set[str] = set()
    partial: set[str] = set()
    for row in rows:
        if not row.accelerator or not row.region:
            continue
        if gpu_of(SKYPILOT_GPU_NAMES.get(row.accelerator, row.accelerator)) is None:
            unknown.add(row.accelerator)
            continue
        if row.count < 1 or row.count != int(row.count):
            partial.add(row.instance_type)
            continue
        grouped.setdefault((row.region, row.instance_type), []).append(row)
    out: list[Priced] = []
    unpriced = set()
    for (region, name), zones in sorted(grouped.items()):
        prices = [z.price for z in zones if z.price]
        if not prices:
            unpriced.add(name)
            continue
        on_demand = min(prices)
        spots = sorted((z.spot, z.zone) for z in zones
                       if z.spot and spot_zone(z.zone) and abs(z.spot - on_demand) > 1e-9 and z.spot < on_demand)
        first = zones[0]
        gpu = gpu_of(SKYPILOT_GPU_NAMES.get(first.accelerator, first.accelerator))
        assert gpu is not None
        priced = InstanceType(cloud=cloud, region=region, name=name, gpu=gpu, gpus=int(first.count),
                              vcpus=first.vcpus, memory_gib=first.memory_gib, on_demand=on_demand,
                              spot=spots[0][0] if spots else None, source=snap.key, note="", as_of=snap.as_of)
        out.append((priced, tuple(zone for _, zone in spots)))
    return tuple(out), left_out(("accelerators the catalog has no GPU model for", unknown),
                                ("fractional-GPU types", partial),
                                ("types with no on-demand price in the source", unpriced))


def left_out(*groups: tuple[str, set[str]]) -> tuple[str, ...]:
    """A reader's notes on what it left out: one line per non-empty group, its names sorted."""
    return tuple(f"{what} (left out): {', '.join(sorted(names))}" for what, names in groups if names)


def skypilot_rows(snapshots: Sequence[Snapshot], cloud: str, gpu_of: Callable[[str], str | None],
                  spot_zone: Callable[[str], bool], note_of: Callable[[tuple[str, ...]], str] = lambda zones: ""
                  ) -> tuple[tuple[InstanceType, ...], tuple[str, ...]]:
    """The catalog rows of every `vms.csv` among `snapshots` (the newest snapshot wins a region and type)."""
    rows: list[InstanceType] = []
    notes: list[str] = []
    seen: set[tuple[str, str]] = set()
    for snap in sorted(snapshots, key=lambda s: s.as_of, reverse=True):
        for path in snap.files("vms.csv"):
            priced, found = skypilot_priced(skypilot_vms(snap.text(path), str(path)), gpu_of, spot_zone, cloud, snap)
            notes += [f"{snap.key}: {note}" for note in found]
            for row, zones in priced:
                if (row.region, row.name) not in seen:
                    seen.add((row.region, row.name))
                    rows.append(dataclasses.replace(row, note=note_of(zones)))
    if not rows:
        raise RefreshError(f"no GPU rows in any vms.csv of the {cloud} snapshots")
    return tuple(rows), tuple(notes)


def facts_of(rows: Iterable[InstanceType]) -> dict[str, InstanceType]:
    """Instance type -> a row with its GPU, vCPUs and memory (the same in every region): the first."""
    facts: dict[str, InstanceType] = {}
    for row in rows:
        facts.setdefault(row.name, row)
    return facts
