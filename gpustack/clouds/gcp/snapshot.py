"""GCP rows for `make catalog`, from Cyclenerd/google-cloud-pricing-cost-calculator, which its CI rebuilds
from the Cloud Billing Catalog API and `gcloud compute machine-types list`:

- `pricing.yml`: per machine type its vCPUs, memory, GPUs (`a100: 1`, `h100-80gb: 8`, `l4: 2`, ...) and
  the whole-machine price per region (`hour`, `hour_spot`): host vCPU and memory plus the GPUs plus the
  Local SSD that a2-ultragpu and a3 machines bundle. The generator writes a region's price only when
  every SKU of the machine (CPU, RAM, GPU) is priced there, but a priced SKU does not mean the machine
  is offered there (the catalog prices a3 in 40 regions).
- `tools/machinetyperegion.csv`: the regions where Compute Engine lists each machine type. A row is
  written for a machine type and region only when both files name them.

Machine types the price file does not price (n1 with attached T4/V100, a3-ultragpu, a4: their GPUs are
separate SKUs it does not total) keep their bundled rows of sources with no snapshot given, in the
regions they were in, with their own source and date (never redated). A spot price at or above on-demand is no price.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence

import yaml

from gpustack.catalog.feeds import RefreshError
from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType
from gpustack.catalog.snapshots import Snapshot, left_out

PRICES = "pricing.yml"
AVAILABILITY = "machinetyperegion.csv"
# pricing.yml's GPU keys -> the catalog's model names (h100-80gb-mega is the A3 Mega's H100 80 GB)
GPU_KEYS = {"a100": "A100-40GB", "a100-80gb": "A100-80GB", "h100-80gb": "H100", "h100-80gb-mega": "H100",
            "h200-141gb": "H200", "b200": "B200", "l4": "L4", "t4": "T4", "v100": "V100",
            "rtx6000": "RTX-PRO-6000"}
NOTE = "whole machine from the Cloud Billing catalog (host, GPUs and any bundled Local SSD)"


def rebuild(snapshots: Sequence[Snapshot], known: Sequence[InstanceType],
            gpu_of: Callable[[str], str | None]) -> FeedResult:
    rows: list[InstanceType] = []
    notes: list[str] = []
    for snap in sorted(snapshots, key=lambda s: s.as_of, reverse=True):
        prices, offered = snap.files(PRICES), snap.files(AVAILABILITY)
        if not prices or not offered:
            raise RefreshError(f"{snap.folder}: a GCP snapshot needs both {PRICES} and tools/{AVAILABILITY} "
                               "of the same commit")
        where = _regions_offered(snap.text(offered[0]), str(offered[0]))
        found, said = _priced_rows(snap, snap.text(prices[0]), str(prices[0]), where, gpu_of)
        taken = {(r.region, r.name) for r in rows}
        rows += [r for r in found if (r.region, r.name) not in taken]
        notes += [f"{snap.key}: {note}" for note in said]
    if not rows:
        raise RefreshError("no GPU rows in the GCP snapshots")
    priced_types, given = {r.name for r in rows}, {snap.key for snap in snapshots}
    carried = [r for r in known if r.name not in priced_types and r.source not in given]
    if carried:
        kept = sorted({r.name for r in carried})
        notes.append(f"not priced by the snapshots, bundled rows kept ({len(carried)} rows, "
                     f"{', '.join(sorted({r.source for r in carried}))}): {', '.join(kept)}")
    return FeedResult(tuple(sorted(rows + carried, key=lambda r: (r.region, r.name))), tuple(notes))


def _regions_offered(text: str, where: str) -> dict[str, set[str]]:
    """Machine type -> the regions Compute Engine lists it in (`NAME;...;ZONE`, the last column a region)."""
    reader = csv.DictReader(io.StringIO(text), delimiter=";")
    if not {"NAME", "ZONE"} <= set(reader.fieldnames or ()):
        raise RefreshError(f"{where}: not a machine-type/region list: no NAME and ZONE columns")
    offered: dict[str, set[str]] = {}
    for row in reader:
        if row["NAME"] and row["ZONE"]:
            offered.setdefault(row["NAME"], set()).add(row["ZONE"])
    return offered


def _priced_rows(snap: Snapshot, text: str, where: str, offered: dict[str, set[str]],
                 gpu_of: Callable[[str], str | None]) -> tuple[list[InstanceType], list[str]]:
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader reads the 4 MB file in seconds
        machines = yaml.load(text, Loader=loader)["compute"]["instance"]
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise RefreshError(f"{where}: not Cyclenerd's pricing.yml (compute.instance): {exc}") from None
    rows: list[InstanceType] = []
    partial, unoffered, skipped = set(), set(), set()
    for name in sorted(machines):
        facts = machines[name]
        keys = [k for k in GPU_KEYS if k in facts]
        if not keys:
            continue
        key = keys[0]
        count = float(facts[key])
        gpu = gpu_of(GPU_KEYS[key])
        if gpu is None:
            skipped.add(name)
            continue
        if count < 1 or count != int(count):
            partial.add(name)
            continue
        for region, cost in sorted(dict(facts.get("cost") or {}).items()):
            hour = cost.get("hour") if isinstance(cost, dict) else None
            if not isinstance(hour, int | float) or hour <= 0:
                continue
            if region not in offered.get(name, set()):
                unoffered.add(name)
                continue
            spot = cost.get("hour_spot")
            rows.append(InstanceType(
                cloud="gcp", region=region, name=name, gpu=gpu, gpus=int(count), vcpus=float(facts["cpu"]),
                memory_gib=float(facts["ram"]), on_demand=round(float(hour), 5),
                spot=round(float(spot), 5) if isinstance(spot, int | float) and 0 < spot < hour else None,
                source=snap.key, note=NOTE, as_of=snap.as_of))
    return rows, list(left_out(("GPU machine types of GPUs the catalog has no model for", skipped),
                               ("fractional-GPU machine types", partial),
                               ("prices in regions Compute Engine does not list the type in", unoffered)))
