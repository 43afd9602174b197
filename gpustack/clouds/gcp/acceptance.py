"""What Compute Engine accepts for GPU machine types: consumption options per machine type, the
zones of a region and the zones that offer each GPU. Read by `gpustack.clouds.gcp.facts`; the planner never
chooses what is refused here.
"""

from __future__ import annotations

import re

# Consumption options by machine type
# (https://cloud.google.com/compute/docs/accelerator-optimized-machines#consumption_option_availability_by_machine_type,
# as applied by dstackai/gpuhunt@35841515de3792fe6be73b0422ac8901b6b929c8 src/gpuhunt/providers/gcp.py
# lines 212-228): A3 High with fewer than 8 GPUs runs only as Spot or Flex-start (no on-demand, no
# reservation); A3 Ultra, A4 and A4X have no plain on-demand (Spot, Flex-start or reservations).
CONSUMPTION_SOURCE = ("https://cloud.google.com/compute/docs/accelerator-optimized-machines"
                      "#consumption_option_availability_by_machine_type")
SPOT_OR_FLEX_ONLY = re.compile(r"a3-highgpu-[124]g")
NO_PLAIN_ON_DEMAND = re.compile(r"a3-ultragpu-\w+|a4-\w+|a4x-\w+")

# Zones that offer each GPU: https://cloud.google.com/compute/docs/gpus/gpu-regions-zones, as
# derived from the Compute Engine API in skypilot-org/skypilot-catalog@006059e0f18acb1341e22a27751e9f80df6ba92f
# catalogs/v8/gcp/vms.csv (the L4 list is partial there: zones it does not name are refused).


def _zones(text: str) -> frozenset[str]:
    """'us-central1-a/b/c, us-east1-b' -> {us-central1-a, us-central1-b, us-central1-c, us-east1-b}"""
    zones: set[str] = set()
    for item in text.split(","):
        region, letters = item.strip().rsplit("-", 1)
        zones.update(f"{region}-{letter}" for letter in letters.split("/"))
    return frozenset(zones)


GPU_ZONES = {
    "A100-40GB": _zones("asia-northeast1-a/c, asia-northeast3-a/b, asia-southeast1-a/b/c, europe-west4-a/b, "
                        "me-west1-a/c, us-central1-a/b/c/f, us-east1-b, us-west1-b, us-west3-b, us-west4-b"),
    "A100-80GB": _zones("asia-southeast1-c, europe-west4-a, us-central1-a/c, us-east4-c, us-east5-a/b"),
    "H100": _zones("asia-east1-c, asia-northeast1-b, asia-south1-c, asia-south2-b, asia-southeast1-b/c, "
                   "australia-southeast1-c, europe-north1-c, europe-west1-b/c, europe-west3-c, europe-west4-b/c, "
                   "europe-west8-c, europe-west9-c, us-central1-a/b/c, us-east4-a/b/c, us-east5-a, us-west1-a/b, "
                   "us-west4-a, asia-northeast3-a/c, europe-west2-b, europe-west3-a, northamerica-northeast2-c"),
    "H200": _zones("asia-south1-b, asia-south2-c, europe-west1-b, europe-west4-a, us-central1-b, us-east4-b, "
                   "us-east5-a, us-south1-b, us-west1-c"),
    "B200": _zones("asia-northeast1-b, asia-southeast1-b, europe-north1-b, europe-west4-b, us-central1-b, us-east1-b, "
                   "us-east4-b, us-south1-b, us-west2-c, us-west3-b/c"),
    "L4": _zones("asia-east1-a/b/c, asia-northeast1-a/b/c, asia-northeast3-a/b, asia-south1-a/b/c, "
                 "asia-southeast1-a/b/c, europe-west1-b/c, europe-west2-a/b, europe-west3-a/b, europe-west4-a/b/c, "
                 "europe-west6-b/c, me-central2-a/c, northamerica-northeast1-b/c, northamerica-northeast2-a/b, "
                 "us-central1-a/b/c, us-east1-b/c/d, us-east4-a/c, us-west1-a/b/c, us-west4-a/c"),
    "T4": _zones("asia-east1-a/c, asia-east2-a/c, asia-northeast1-a/c, asia-northeast3-b/c, asia-south1-a/b, "
                 "asia-southeast1-a/b/c, asia-southeast2-a/b, australia-southeast1-a/c, europe-central2-b/c, "
                 "europe-west1-b/c/d, europe-west2-a/b, europe-west3-b, europe-west4-a/b/c, me-west1-b/c, "
                 "northamerica-northeast1-c, southamerica-east1-a/b/c, us-central1-a/b/c/f, us-east1-b/c/d, "
                 "us-east4-a/b/c, us-west1-a/b, us-west2-b/c, us-west3-b, us-west4-a/b"),
}

# A zone is named <region>-<letter> (https://cloud.google.com/compute/docs/regions-zones#identifying_a_region_or_zone).
REGIONS_ZONES_SOURCE = "https://cloud.google.com/compute/docs/regions-zones"


def region_of(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


def capacity_refusal(machine_type: str, capacity: str) -> str | None:
    if SPOT_OR_FLEX_ONLY.fullmatch(machine_type) and capacity in ("on-demand", "reserved"):
        return f"{machine_type} runs only as Spot or Flex-start, never {capacity} ({CONSUMPTION_SOURCE})"
    if NO_PLAIN_ON_DEMAND.fullmatch(machine_type) and capacity == "on-demand":
        return f"{machine_type} has no plain on-demand: only Spot, Flex-start or a reservation ({CONSUMPTION_SOURCE})"
    return None


def zones_offering(gpu: str, zones: tuple[str, ...]) -> tuple[str, ...] | None:
    offered = GPU_ZONES.get(gpu)
    return None if offered is None else tuple(z for z in zones if z in offered)


def zones_of_region_offering(gpu: str, region: str) -> tuple[str, ...]:
    return tuple(sorted(z for z in GPU_ZONES.get(gpu, ()) if region_of(z) == region))
