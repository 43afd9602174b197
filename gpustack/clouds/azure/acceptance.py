"""What Azure accepts for GPU VM sizes: which sizes an on-demand capacity reservation can hold, and
which can run as Spot. Read by `gpustack.clouds.azure.facts`; the planner never chooses what is refused here.
"""

from __future__ import annotations

import re

# On-demand capacity reservations: the GPU series the service supports, as size-name patterns
# (MicrosoftDocs/azure-compute-docs@05a44856413d48d1b2c45c23df447759739695dc
# articles/virtual-machines/capacity-reservation-overview.md, ms.date 02/17/2026). Named there as
# not supported: ND-series, NCads H100 v5-series, Hb- and Hc-series; sizes of no listed series are
# refused too, since the overview lists what is supported.
CAPACITY_RESERVATION_SOURCE = "https://learn.microsoft.com/azure/virtual-machines/capacity-reservation-overview"
RESERVABLE_GPU_SERIES = {
    "NC-series v3": re.compile(r"Standard_NC\d+r?s_v3"),
    "NCasT4_v3": re.compile(r"Standard_NC\d+as_T4_v3"),
    "NCads A10 v4": re.compile(r"Standard_NC\d+ads_A10_v4"),
    "NC A100 v4": re.compile(r"Standard_NC\d+ads_A100_v4"),
    "NV-series v3": re.compile(r"Standard_NV\d+s_v3"),
    "NVv4": re.compile(r"Standard_NV\d+as_v4"),
    "NVadsA10_v5": re.compile(r"Standard_NV\d+adm?s_A10_v5"),
    "NVads V710 v5": re.compile(r"Standard_NV\d+adm?s_V710_v5"),
    "NGads V620": re.compile(r"Standard_NG\d+adm?s_V620_v1"),
}

# Spot: no per-size list is published; B-series and promo sizes never run as Spot
# (MicrosoftDocs/azure-compute-docs@3caaa8125548275578925a0afd10d178fae3b057
# articles/virtual-machines/spot-vms.md). A size runs as Spot in a region when it has a Spot meter
# there: the catalog's Azure rows are built from Azure's retail prices, Spot meters included, so a
# row without a spot price has no known meter and is not planned as Spot. The exception is a row whose
# note says its source lists no Spot meters for the region at all (an on-demand-only price table):
# there Spot is unknown, not refused, and the planner prices it at on-demand with a warning.
SPOT_SOURCE = "https://learn.microsoft.com/azure/virtual-machines/spot-vms"
SPOT_UNKNOWN = "no Spot price in the sources for this region"  # written by snapshot.py, read here
_NEVER_SPOT = re.compile(r"Standard_B\w*|\w*_Promo")


def reservation_refusal(size: str) -> str | None:
    if any(pattern.fullmatch(size) for pattern in RESERVABLE_GPU_SERIES.values()):
        return None
    return (f"Azure capacity reservations do not support {size} (supported GPU series: "
            f"{', '.join(RESERVABLE_GPU_SERIES)}; ND-series and NCads H100 v5 are not; {CAPACITY_RESERVATION_SOURCE})")


def spot_refusal(size: str, region: str, spot_price: float | None, note: str = "") -> str | None:
    if _NEVER_SPOT.fullmatch(size):
        return f"Azure does not sell B-series or promo sizes such as {size} as Spot ({SPOT_SOURCE})"
    if spot_price is None and SPOT_UNKNOWN not in note:
        return (f"no Azure Spot meter is known for {size} in {region} (the catalog, built from Azure's retail "
                f"prices, has no Spot price for it; {SPOT_SOURCE})")
    return None
