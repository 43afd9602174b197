"""The base of every provisioner's compiled pool: in the clouds layer, which the plan imports, so that the
bundles define their compiled pools without importing the plan (`gpustack.plan.model.Pool.compiled`
holds one)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


@dataclasses.dataclass(frozen=True)
class CompiledPool:
    """A pool as its provisioner spells it for the cloud's API: cloud-spelled, enum-checked values the
    provisioner's `compile` chose while planning (a frozen dataclass in the cloud's bundle). Backends
    only map it to SDK arguments; the plan JSON shows it under each pool's `compiled`."""

    def to_dict(self) -> dict[str, Any]:
        as_json: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(self)))  # tuples as lists, as in the JSON
        return as_json
