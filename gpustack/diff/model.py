"""What changed between two plans, per target and per pool, as immutable values (and as JSON)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpustack.plan.model import money

# The order changes are listed in: what disrupts running workloads first.
CHANGE_KINDS = ("replaced", "drifted", "repartitioned", "removed", "added", "resized", "updated")


@dataclasses.dataclass(frozen=True)
class FieldChange:
    field: str  # a plan field: instance_type, capacity, sharing.mig, labels, nodes, settings.<name>, ...
    old: str
    new: str
    replaces: str | None = None  # why the cloud recreates the node pool for this change, with the source
    drifts: str | None = None  # why the provisioner replaces the pool's nodes one by one for it, with the source


@dataclasses.dataclass(frozen=True)
class PoolChange:
    change: str  # one of CHANGE_KINDS
    name: str  # the plan pool name (gpustack.dev/pool); the old pool's for "replaced" and "removed"
    cloud_name: str
    kind: str
    workloads: tuple[str, ...]
    why: str  # one sentence for people
    fields: tuple[FieldChange, ...] = ()
    new_name: str | None = None  # "replaced": the pool that takes over (the same name when replaced in place)
    new_cloud_name: str | None = None
    moves_to: tuple[str, ...] = ()  # "replaced" by another pool: every pool of the new plan holding its workloads
    old_monthly_usd: float | None = None
    new_monthly_usd: float | None = None
    nodes: str = ""  # "added" / "removed": min-max nodes, for the summary
    gpus: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"change": self.change, "name": self.name, "cloud_name": self.cloud_name,
                               "kind": self.kind, "workloads": list(self.workloads), "why": self.why}
        if self.new_name is not None:
            out["new_name"] = self.new_name
            out["new_cloud_name"] = self.new_cloud_name
        if self.moves_to:
            out["moves_to"] = list(self.moves_to)
        out["fields"] = [{"field": f.field, "old": f.old, "new": f.new,
                          **({"replaces": f.replaces} if f.replaces else {}),
                          **({"drifts": f.drifts} if f.drifts else {})} for f in self.fields]
        out["monthly_cost_usd"] = _costs(self.old_monthly_usd, self.new_monthly_usd)
        return out


@dataclasses.dataclass(frozen=True)
class TargetDiff:
    name: str
    cloud: str
    status: str  # added | removed | changed | unchanged
    old_monthly_usd: float | None
    new_monthly_usd: float | None
    old_gpus: int | None  # provisioned at peak
    new_gpus: int | None
    pools: tuple[PoolChange, ...]
    new_warnings: tuple[str, ...] = ()  # warnings of the new plan the old one did not have

    @property
    def delta_usd(self) -> float:
        return money((self.new_monthly_usd or 0.0) - (self.old_monthly_usd or 0.0))

    def count(self, change: str) -> int:
        return sum(1 for p in self.pools if p.change == change)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "cloud": self.cloud, "status": self.status,
                "monthly_cost_usd": _costs(self.old_monthly_usd, self.new_monthly_usd),
                "gpus_provisioned": {"old": self.old_gpus, "new": self.new_gpus},
                "pools": [p.to_dict() for p in self.pools],
                "new_warnings": list(self.new_warnings)}


@dataclasses.dataclass(frozen=True)
class PlanDiff:
    old: str  # where the old spec came from (a path or REF:PATH)
    new: str
    targets: tuple[TargetDiff, ...]

    @property
    def changed(self) -> bool:
        return any(t.status != "unchanged" for t in self.targets)

    @property
    def delta_usd(self) -> float:
        return money(sum(t.delta_usd for t in self.targets))

    def to_json(self) -> str:
        doc = {"version": 1, "old": self.old, "new": self.new, "changed": self.changed,
               "monthly_cost_delta_usd": self.delta_usd, "targets": [t.to_dict() for t in self.targets]}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _costs(old: float | None, new: float | None) -> dict[str, float | None]:
    return {"old": None if old is None else money(old), "new": None if new is None else money(new),
            "delta": money((new or 0.0) - (old or 0.0))}
