"""AWS rows for `make catalog`, from SkyPilot's AWS catalog (skypilot-org/skypilot-catalog
`catalogs/v8/aws/vms.csv`: one row per instance type and availability zone, built by SkyPilot's CI from
the AWS Price List API and the EC2 spot price history).

The rules the bundled rows have always followed: on-demand is the region's price; spot is the lowest
zone price of the region, leaving out AWS Local Zones and Wavelength Zones (zone ids with a location
part, `use1-atl2-az1`, `usw2-lax1-az1`: not where a region's node groups run by default) and zone rows
whose spot price equals the on-demand price (placeholders). The instance facts (vCPUs, memory, GPU
model and count) are the source's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType
from gpustack.catalog.snapshots import Priced, Snapshot, skypilot_rows


def regional_zone(zone: str) -> bool:
    """An availability zone of the region proper (`use1-az4`), not a Local or Wavelength Zone."""
    return zone.count("-") == 1


def _note(priced: Priced) -> str:
    return f"spot from the one zone the source lists ({priced.spot_zones[0]})" if len(priced.spot_zones) == 1 else ""


def rebuild(snapshots: Sequence[Snapshot], facts: Mapping[str, InstanceType],
            gpu_of: Callable[[str], str | None]) -> FeedResult:
    del facts  # the source lists machines as well as prices
    return FeedResult(*skypilot_rows(snapshots, "aws", gpu_of, regional_zone, _note))
