"""The dated catalog: GPU models, instance types per cloud and region, commitment rates, spot rules.

Everything here is data read from `gpustack/catalog/data/` (see its README for sources and dates);
every instance row names its source and date. Loading is lazy and cached: one read per process.
A user catalog (`--catalog FILE`, `catalog:` in a spec) has the same columns and is merged over the
bundled rows: a user row replaces the bundled row of the same cloud, region and instance type; an
empty spot price keeps the replaced row's spot price, credited to that row's source and date.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any

import yaml

from gpustack.catalog.mig import MIG_MODELS, MigModel
from gpustack.catalog.rows import MAX_CATALOG_BYTES, InstanceType, Vocabulary, read_rows
from gpustack.clouds import CLOUDS
from gpustack.errors import Location, Problem, SpecError

__all__ = ["Catalog", "Discount", "GpuModel", "InstanceType", "Source", "SpotRule", "load_catalog", "read_catalog_file"]


@dataclasses.dataclass(frozen=True)
class GpuModel:
    name: str  # canonical name used in specs, e.g. "A100-80GB"
    memory_gib: float  # nominal (the product's "GB"), which MIG profile names follow
    usable_memory_gib: float  # what the driver reports (less than nominal on some models): what shares divide
    mig: MigModel | None
    aliases: tuple[str, ...]
    source: str


@dataclasses.dataclass(frozen=True)
class Source:
    key: str
    title: str
    url: str
    as_of: str
    note: str


@dataclasses.dataclass(frozen=True)
class Discount:
    """The commitment rate gpustack recommends for a cloud (never applied unless the spec declares it)."""

    fraction: float
    source: str
    as_of: str
    note: str
    instrument: str = ""
    instruments: tuple[str, ...] = ()  # what a spec may declare for the cloud
    term: str = "1y"
    attach: str = ""  # how IaC attaches the commitment to the reservation, where the cloud allows it
    negotiated: bool = False  # the rate is negotiated, none published: no saving can be estimated


@dataclasses.dataclass(frozen=True)
class SpotRule:
    """What a cloud's spot figure is, and the fixed fraction of on-demand where the cloud sets one."""

    basis: str
    source: str
    fraction_of_on_demand: float | None = None


class Catalog:
    """GPU models, instance rows and the data around them.

    Rows are grouped per cloud; a cloud's rows may be given as a loader (the bundled per-cloud file),
    run the first time a question about that cloud is asked, so a plan for one cloud and region reads
    one file and indexes it by region."""

    def __init__(self, gpus: dict[str, GpuModel], instances: tuple[InstanceType, ...],
                 sources: dict[str, Source], discounts: dict[str, Discount], files: tuple[str, ...] = (),
                 spot_rules: dict[str, SpotRule] | None = None,
                 loaders: Mapping[str, Callable[[], tuple[InstanceType, ...]]] | None = None):
        self.gpus = gpus
        self.spot_rules = spot_rules or {}
        self.sources = sources
        self.discounts = discounts
        self.files = files  # user catalog files merged over the bundled rows, in order
        self._loaders = dict(loaders or {})
        self._rows: dict[str, tuple[InstanceType, ...]] = {}
        self._by_region: dict[tuple[str, str], tuple[InstanceType, ...]] = {}
        for row in instances:
            self._rows[row.cloud] = self._rows.get(row.cloud, ()) + (row,)
        for cloud, rows in self._rows.items():
            self._index(cloud, rows)
        self._aliases = {alias: model.name for model in gpus.values() for alias in model.aliases}

    def _index(self, cloud: str, rows: tuple[InstanceType, ...]) -> None:
        grouped: dict[str, list[InstanceType]] = {}
        for row in rows:
            grouped.setdefault(row.region, []).append(row)
        for region, in_region in grouped.items():
            self._by_region[(cloud, region)] = tuple(in_region)

    def rows_of(self, cloud: str) -> tuple[InstanceType, ...]:
        """Every row of `cloud` (its bundled file is read on the first call)."""
        loader = self._loaders.pop(cloud, None)
        if loader is not None:
            rows = loader() + self._rows.get(cloud, ())
            self._rows[cloud] = rows
            self._index(cloud, rows)
        return self._rows.get(cloud, ())

    @property
    def clouds(self) -> tuple[str, ...]:
        return tuple(sorted(set(self._rows) | set(self._loaders)))

    @property
    def instances(self) -> tuple[InstanceType, ...]:
        """Every row of every cloud (reads every cloud's file: prefer rows_of / in_region)."""
        return tuple(row for cloud in self.clouds for row in self.rows_of(cloud))

    def gpu(self, name: str) -> GpuModel | None:
        return self.gpus.get(self._aliases.get(name, name))

    @property
    def gpu_names(self) -> tuple[str, ...]:
        return tuple(self.gpus)

    def regions(self, cloud: str) -> tuple[str, ...]:
        self.rows_of(cloud)
        return tuple(sorted({r for c, r in self._by_region if c == cloud}))

    def in_region(self, cloud: str, region: str) -> tuple[InstanceType, ...]:
        self.rows_of(cloud)
        return self._by_region.get((cloud, region), ())

    def offering(self, gpu: str, clouds: Iterable[str] | None = None) -> dict[str, tuple[str, ...]]:
        """cloud -> regions where the catalog has an instance type with this GPU (of `clouds`, default all)."""
        found: dict[str, set[str]] = {}
        for cloud in (self.clouds if clouds is None else clouds):
            for row in self.rows_of(cloud):
                if row.gpu == gpu:
                    found.setdefault(row.cloud, set()).add(row.region)
        return {cloud: tuple(sorted(regions)) for cloud, regions in sorted(found.items())}

    def nearest_regions(self, cloud: str, region: str, gpu: str | None = None, count: int = 3,
                        geography: Callable[[str], tuple[str, str]] | None = None) -> tuple[str, ...]:
        """The catalogued regions of `cloud` (with `gpu`, when given) nearest `region`: those of its area
        first, then of its continent (`geography`: the cloud's (area, continent) of a region name), and
        within each the closest names (eu-west-1 is near eu-west-2), ties by name."""
        regions = {row.region for row in self.rows_of(cloud) if gpu is None or row.gpu == gpu} - {region}
        area, continent = geography(region) if geography else ("", "")

        def nearness(other: str) -> tuple[bool, bool, float, str]:
            their_area, their_continent = geography(other) if geography else ("", "")
            return (not area or their_area != area, not continent or their_continent != continent,
                    -_name_closeness(region, other), other)

        return tuple(sorted(regions, key=nearness)[:count])

    def instance(self, cloud: str, region: str, name: str) -> InstanceType | None:
        for row in self.in_region(cloud, region):
            if row.name == name:
                return row
        return None

    def instance_names(self, cloud: str | None = None) -> tuple[str, ...]:
        rows = self.instances if cloud is None else self.rows_of(cloud)
        return tuple(sorted({row.name for row in rows}))

    def as_of(self, cloud: str, region: str | None = None) -> str:
        """The dates of the prices of `cloud` (in `region`): one date, or "oldest to newest"."""
        rows = self.rows_of(cloud) if region is None else self.in_region(cloud, region)
        return dates_of(rows)

    def vocabulary(self) -> Vocabulary:
        aliases = CLOUDS.aliases()
        names = CLOUDS.names()

        def cloud(value: str) -> str | None:
            value = aliases.get(value, value)
            return value if value in names else None

        def gpu(value: str) -> str | None:
            model = self.gpu(value)
            return model.name if model else None

        return Vocabulary(cloud, names, gpu, self.gpu_names, {k: s.as_of for k, s in self.sources.items()})

    def with_rows(self, rows: tuple[InstanceType, ...], file: str) -> Catalog:
        """This catalog with `rows` merged over it (a row replaces the one of the same cloud, region, type).

        Clouds the rows do not name stay unread until asked for."""
        replaced = {(r.cloud, r.region, r.name) for r in rows}
        touched = {r.cloud for r in rows}
        previous = {(r.cloud, r.region, r.name): r for cloud in sorted(touched | set(self._rows))
                    for r in self.rows_of(cloud)}
        kept = tuple(r for key, r in previous.items() if key not in replaced)
        rows = tuple(_keep_spot(row, previous.get((row.cloud, row.region, row.name))) for row in rows)
        loaders = {cloud: loader for cloud, loader in self._loaders.items() if cloud not in touched}
        return Catalog(self.gpus, kept + rows, self.sources, self.discounts, self.files + (file,), self.spot_rules,
                       loaders)


def _keep_spot(row: InstanceType, replaced: InstanceType | None) -> InstanceType:
    """A row with an empty spot price keeps the spot price of the row it replaces, with that row's source
    and date (an empty field changes nothing; a negotiated on-demand quote says nothing about spot)."""
    if row.spot is not None or replaced is None or replaced.spot is None or replaced.spot > row.on_demand:
        return row
    return dataclasses.replace(row, spot=replaced.spot, spot_source=replaced.spot_source or replaced.source,
                               spot_as_of=replaced.spot_as_of or replaced.as_of)


def _name_closeness(a: str, b: str) -> float:
    """How alike two region names are: the shared leading part counts most, then the whole name."""
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return shared + difflib.SequenceMatcher(None, a, b).ratio()


def dates_of(rows: Iterable[InstanceType]) -> str:
    dates = sorted({date for row in rows for date in (row.as_of, row.spot_as_of) if date})
    if not dates:
        return "unknown"
    return dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"


def read_catalog_file(path: str, catalog: Catalog, shown_as: str | None = None) -> tuple[Catalog, list[Problem]]:
    """`catalog` with the user catalog at `path` merged over it, and the problems found in the file.

    `shown_as` is the name messages use for the file (as the user wrote it)."""
    name = shown_as or path
    from gpustack.files import FileRefused, read_limited

    try:
        raw = read_limited(path, MAX_CATALOG_BYTES, "catalog file (CSV)")
    except FileRefused as exc:
        reason = "no such catalog file" if str(exc) == "no such file" else str(exc)
        return catalog, [Problem(None, "", f"{name}: {reason}")]
    if len(raw) > MAX_CATALOG_BYTES:
        return catalog, [Problem(None, "", f"{name}: {len(raw):,} bytes; a catalog file may hold at most "
                                           f"{MAX_CATALOG_BYTES:,}")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return catalog, [Problem(Location(name, raw[: exc.start].count(b"\n") + 1, 1), "",
                                 "not UTF-8 text (a catalog is a CSV file)")]
    rows, problems = read_rows(text, name, catalog.vocabulary(), origin=name)
    if problems:
        return catalog, problems
    return catalog.with_rows(rows, name), []


def with_catalog_files(paths: Iterable[str], catalog: Catalog | None = None) -> Catalog:
    """The bundled catalog (or `catalog`) with every user catalog of `paths` merged over it, in order."""
    merged = catalog or load_catalog()
    problems: list[Problem] = []
    for path in paths:
        merged, found = read_catalog_file(path, merged)
        problems += found
    if problems:
        raise SpecError(problems)
    return merged


def _data(name: str) -> str:
    return resources.files("gpustack.catalog").joinpath("data", name).read_text(encoding="utf-8")


def _yaml(name: str) -> Any:
    return yaml.load(_data(name), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


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
    sources = {
        key: Source(key, str(v.get("title", "")), str(v.get("url", "")), str(v.get("as_of", "unknown")),
                    str(v.get("note", "")))
        for key, v in _yaml("sources.yaml").items()
    }
    discounts = {
        cloud: Discount(float(v["default"]), str(v.get("source", "")), str(v.get("as_of", "")), str(v.get("note", "")),
                        str(v.get("instrument", "")), tuple(v.get("instruments") or ()), str(v.get("term", "1y")),
                        " ".join(str(v.get("attach", "")).split()), bool(v.get("negotiated", False)))
        for cloud, v in _yaml("commitment_discounts.yaml").items()
    }
    spot_rules = {
        cloud: SpotRule(str(v["basis"]), str(v.get("source", "")),
                        float(v["fraction_of_on_demand"]) if v.get("fraction_of_on_demand") is not None else None)
        for cloud, v in _yaml("spot_rules.yaml").items()
    }
    models = Catalog(gpus, (), sources, discounts)
    words = models.vocabulary()
    loaders = {cloud: functools.partial(_bundled_rows, cloud, words) for cloud in bundled_clouds()}
    return Catalog(gpus, (), sources, discounts, spot_rules=spot_rules, loaders=loaders)


def bundled_clouds() -> tuple[str, ...]:
    """The clouds with a bundled file: data/<cloud>.csv, one file per cloud."""
    folder = resources.files("gpustack.catalog").joinpath("data")
    return tuple(sorted(item.name[: -len(".csv")] for item in folder.iterdir() if item.name.endswith(".csv")))


def bundled_file(cloud: str) -> str:
    return f"gpustack/catalog/data/{cloud}.csv"


def _bundled_rows(cloud: str, words: Vocabulary) -> tuple[InstanceType, ...]:
    rows, problems = read_rows(_data(f"{cloud}.csv"), bundled_file(cloud), words, origin="bundled")
    if problems:  # a defect of the package, caught by the tests
        raise ValueError("the bundled catalog is invalid:\n" + "\n".join(map(str, problems)))
    wrong = sorted({r.cloud for r in rows} - {cloud})
    if wrong:
        raise ValueError(f"{bundled_file(cloud)} holds rows of {', '.join(wrong)}")
    return rows
