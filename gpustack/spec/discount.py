"""The spec's `pricing.discount`: an enterprise agreement's flat fraction off every price.

`pricing.discount: 0.1` is the short form for every cloud; `pricing.discount: {<cloud>: 0.1, ...}`
gives one per cloud (aliases allowed), the shape of `pricing.commitments`. What it multiplies and in
which order is in `gpustack.plan.prices`.
"""

from __future__ import annotations

from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

WHAT = "a fraction off every price (0.1 = 10%), or one per cloud: {<cloud>: 0.1, ...}"


def read_discount(reader: Reader, path: Path, value: Any) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    """(the discount for every cloud, or None; the per-cloud discounts), problems reported on `reader`."""
    if not isinstance(value, dict):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            reader.problem(path, f"expected {WHAT}")
            return None, ()
        every = _fraction(reader, path, value)
        return (None if every is BAD else every), ()
    per_cloud: list[tuple[str, float]] = []
    for key, raw in value.items():
        item = path + (key,)
        if item in reader.doc.typed_keys:
            reader.typed_key_problem(item)
            continue
        cloud = reader.choice(item, key, CLOUDS.names(), CLOUDS.aliases())
        fraction = _fraction(reader, item, raw)
        if cloud is BAD or fraction is BAD:
            continue
        if cloud in dict(per_cloud):
            reader.problem(item, f"a second discount for {cloud}: give one per cloud", at_key=True)
            continue
        per_cloud.append((cloud, fraction))
    return None, tuple(sorted(per_cloud))


def _fraction(reader: Reader, path: Path, value: Any) -> float | Any:
    return reader.number(path, value, minimum=0, maximum=1, exclusive_maximum=True)
