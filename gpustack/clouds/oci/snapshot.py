"""OCI rows for `make catalog`, from SkyPilot's OCI catalog (skypilot-org/skypilot-catalog
`catalogs/v8/oci/vms.csv`, from Oracle's public price list).

OCI list prices are global: the source repeats every shape in every region it lists, with the same
price, so a row says what a shape costs, not that the region has capacity for it (see the data
README). A SpotPrice below the price is the shape's preemptible price; VM shapes without one are priced
by the 50% rule of `spot_rules.yaml`, and bare metal cannot be preemptible (the cloud's rules).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpustack.catalog.refresh import FeedResult
from gpustack.catalog.rows import InstanceType
from gpustack.catalog.snapshots import Snapshot, skypilot_rows

GLOBAL_PRICE = ("global OCI list price; source lists every shape in every region, so presence here does not prove "
                "regional availability")


def rebuild(snapshots: Sequence[Snapshot], known: Sequence[InstanceType],
            gpu_of: Callable[[str], str | None]) -> FeedResult:
    del known  # the source lists machines as well as prices
    return FeedResult(*skypilot_rows(snapshots, "oci", gpu_of, lambda zone: True, lambda priced: GLOBAL_PRICE))
