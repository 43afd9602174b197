"""The dated catalog: GPU models, instance types per cloud and region, default discounts.

Everything here is data read from `gpustack/catalog/data/` (see its README for sources and dates);
every instance row names its source. Loading is lazy and cached: one read per process.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
from importlib import resources
from typing import Any

import yaml

from gpustack.catalog.mig import MIG_MODELS, MigModel


@dataclasses.dataclass(frozen=True)
class GpuModel:
    name: str  # canonical name used in specs, e.g. "A100-80GB"
    memory_gib: float  # nominal (the product's "GB"), which MIG profile names follow
    usable_memory_gib: float  # what the driver reports (less than nominal on some models): what shares divide
    mig: MigModel | None
    aliases: tuple[str, ...]
    source: str


@dataclasses.dataclass(frozen=True)
class InstanceType:
    cloud: str
    region: str
    name: str
    gpu: str
    gpus: int
    vcpus: float
    memory_gib: float
    on_demand: float
    spot: float | None
    source: str
    note: str


@dataclasses.dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str
    as_of: str
    note: str


@dataclasses.dataclass(frozen=True)
class Discount:
    fraction: float
    source: str
    as_of: str
    note: str


class Catalog:
    def __init__(self, gpus: dict[str, GpuModel], instances: tuple[InstanceType, ...],
                 sources: dict[str, Source], discounts: dict[str, Discount]):
        self.gpus = gpus
        self.instances = instances
        self.sources = sources
        self.discounts = discounts
        self._by_region: dict[tuple[str, str], tuple[InstanceType, ...]] = {}
        for row in instances:
            key = (row.cloud, row.region)
            self._by_region[key] = self._by_region.get(key, ()) + (row,)
        self._aliases = {alias: model.name for model in gpus.values() for alias in model.aliases}

    def gpu(self, name: str) -> GpuModel | None:
        return self.gpus.get(self._aliases.get(name, name))

    @property
    def gpu_names(self) -> tuple[str, ...]:
        return tuple(self.gpus)

    def regions(self, cloud: str) -> tuple[str, ...]:
        return tuple(sorted({r for c, r in self._by_region if c == cloud}))

    def in_region(self, cloud: str, region: str) -> tuple[InstanceType, ...]:
        return self._by_region.get((cloud, region), ())

    def offering(self, gpu: str) -> dict[str, tuple[str, ...]]:
        """cloud -> regions where the catalog has an instance type with this GPU."""
        found: dict[str, set[str]] = {}
        for row in self.instances:
            if row.gpu == gpu:
                found.setdefault(row.cloud, set()).add(row.region)
        return {cloud: tuple(sorted(regions)) for cloud, regions in sorted(found.items())}

    def instance(self, cloud: str, region: str, name: str) -> InstanceType | None:
        for row in self.in_region(cloud, region):
            if row.name == name:
                return row
        return None

    def instance_names(self) -> tuple[str, ...]:
        return tuple(sorted({row.name for row in self.instances}))

    def as_of(self, cloud: str) -> str:
        dates = sorted({self.sources[row.source].as_of for row in self.instances
                        if row.cloud == cloud and row.source in self.sources})
        if not dates:
            return "unknown"
        return dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"


def _data(name: str) -> str:
    return resources.files("gpustack.catalog").joinpath("data", name).read_text(encoding="utf-8")


def _yaml(name: str) -> Any:
    return yaml.load(_data(name), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _optional_float(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None


@functools.cache
def load_catalog() -> Catalog:
    gpus = {}
    for name, row in _yaml("gpus.yaml").items():
        mig_name = row.get("mig_model")
        gpus[name] = GpuModel(
            name=name,
            memory_gib=float(row["memory_gib"]),
            usable_memory_gib=(float(row["memory_mib_reported"]) / 1024 if row.get("memory_mib_reported")
                               else float(row["memory_gib"])),
            mig=MIG_MODELS[mig_name] if mig_name else None,
            aliases=tuple(row.get("aliases") or ()),
            source=str(row.get("source") or row.get("sources") or ""),
        )
    instances = tuple(
        InstanceType(
            cloud=row["cloud"], region=row["region"], name=row["instance_type"], gpu=row["gpu"],
            gpus=int(row["gpus"]), vcpus=float(row["vcpus"]), memory_gib=float(row["memory_gib"]),
            on_demand=float(row["on_demand_usd"]), spot=_optional_float(row["spot_usd"]),
            source=row["source"], note=row.get("note") or "",
        )
        for row in csv.DictReader(_data("instances.csv").splitlines())
    )
    sources = {
        key: Source(key, str(v.get("title", "")), str(v.get("url", "")), str(v.get("as_of", "unknown")),
                    str(v.get("note", "")))
        for key, v in _yaml("sources.yaml").items()
    }
    discounts = {
        cloud: Discount(float(v["default"]), str(v.get("source", "")), str(v.get("as_of", "")), str(v.get("note", "")))
        for cloud, v in _yaml("commitment_discounts.yaml").items()
    }
    return Catalog(gpus, instances, sources, discounts)
