"""`gpustack catalog refresh`: rebuild catalog rows from the clouds' price APIs.

Each cloud's bundle may hold a price feed, its `prices` module (`SOURCE`, `STREAMS`, `network_pages()`
and `refresh(pages, region, facts)`); this module picks the clouds and regions,
runs the feeds, compares the result with the old catalog and writes the new one atomically. Instance
facts (GPU model and count, vCPUs, memory) come from the catalog already known (the bundled rows and
the user's), since price APIs list prices, not machines; a priced type the catalog does not know is
reported, not guessed. Nothing is written when any page cannot be read or understood.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import importlib.util
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from gpustack.catalog import Catalog, InstanceType, read_catalog_file
from gpustack.catalog.feeds import Pages, RefreshError, recorded_pages
from gpustack.catalog.rows import AS_OF, REGION, read_rows, write_rows
from gpustack import files
from gpustack.catalog.snapshots import facts_of
from gpustack.clouds import CLOUDS
from gpustack.errors import did_you_mean, one_of

MOVE_THRESHOLD = 0.05  # a price that moved by more than this fraction is reported


@dataclasses.dataclass(frozen=True)
class FeedResult:
    rows: tuple[InstanceType, ...]
    notes: tuple[str, ...] = ()  # what was skipped, and why


@dataclasses.dataclass(frozen=True)
class Change:
    kind: str  # "added" | "removed" | "moved"
    row: InstanceType
    old: InstanceType | None = None

    def describe(self) -> str:
        r = self.row
        if self.kind == "added":
            return f"  + {r.cloud} {r.region} {r.name}: {_prices(r)}"
        if self.kind == "removed":
            return f"  - {r.cloud} {r.region} {r.name} (was {_prices(r)})"
        if self.kind == "unlisted":
            return f"  ? {r.cloud} {r.region} {r.name}: not in the price source's answer (the bundled row stays in use)"
        assert self.old is not None
        return f"  ~ {r.cloud} {r.region} {r.name}: {_moves(self.old, r)}"


@dataclasses.dataclass(frozen=True)
class Report:
    out: Path
    rows: tuple[InstanceType, ...]
    changes: tuple[Change, ...]
    notes: tuple[str, ...]
    compared_with: str

    def lines(self) -> list[str]:
        counts = {k: sum(c.kind == k for c in self.changes) for k in ("added", "removed", "moved", "unlisted")}
        out = [f"{note}" for note in self.notes]
        unlisted = f", {counts['unlisted']} bundled rows not listed" if counts["unlisted"] else ""
        out.append(f"compared with {self.compared_with}: {counts['added']} added, {counts['removed']} removed, "
                   f"{counts['moved']} moved by more than {MOVE_THRESHOLD:.0%}{unlisted}")
        out += [c.describe() for c in self.changes]
        regions = sorted({(r.cloud, r.region) for r in self.rows})
        out.append(f"wrote {self.out}: {len(self.rows)} rows in {len(regions)} regions")
        return out


FEED_PART = "prices"


def feed_of(cloud: Any) -> ModuleType | None:
    """The cloud's price feed, None when its bundle has none."""
    if importlib.util.find_spec(f"{cloud.bundle}.{FEED_PART}") is None:
        return None
    feed: ModuleType = cloud.part(FEED_PART)
    return feed


def refresh(bundled: Catalog, out: Path, clouds: Sequence[str] = (), regions: Sequence[str] = (),
            gpus: Sequence[str] = (), input_path: Path | None = None, as_of: str | None = None,
            today: datetime.date | None = None, network: dict[str, Pages] | None = None) -> Report:
    """Refresh the rows of `clouds` x `regions` (default: every cloud with a feed, the regions already
    catalogued) for `gpus` (default all), write them into `out` and say what changed."""
    known, old_rows = _previous(bundled, out)
    chosen = _clouds(CLOUDS, clouds)
    models = _gpus(bundled, gpus)
    _check_options(regions, input_path, as_of)
    stamp = as_of or (today or datetime.datetime.now(datetime.UTC).date()).isoformat()
    fed = _Fed()
    for cloud in chosen:
        pages = _pages(cloud, input_path, network, only_cloud=len(chosen) == 1, notes=fed.notes)
        if pages is not None:
            fed.run(feed_of(cloud), pages, cloud.name, regions or _regions(known, cloud.name),
                    _facts(known, cloud.name), models, stamp, out)

    def in_scope(row: InstanceType) -> bool:
        return (row.cloud, row.region) in fed.scope and (not models or row.gpu in models)

    kept = [r for r in old_rows if not in_scope(r)]
    new_rows = tuple(sorted(kept + fed.rows, key=lambda r: (r.cloud, r.region, r.name)))
    baseline = old_rows if old_rows else bundled.instances
    changes = compare([r for r in baseline if in_scope(r)], fed.rows, removed="removed" if old_rows else "unlisted")
    text = write_rows(new_rows)
    _, problems = read_rows(text, str(out), bundled.vocabulary(), origin=str(out))
    if problems:  # a feed produced a row the catalog would refuse: a bug, but never write it
        raise RefreshError("the refreshed rows do not pass the catalog's checks:\n  " + "\n  ".join(map(str, problems)))
    write_atomically(out, text)
    compared = f"the previous {out}" if old_rows else "the bundled catalog"
    return Report(out, new_rows, tuple(changes), tuple(fed.notes), compared)


def _previous(bundled: Catalog, out: Path) -> tuple[Catalog, tuple[InstanceType, ...]]:
    """The catalog known before the refresh (the bundled one with `out`'s rows, when `out` exists) and
    `out`'s own rows; an invalid `out` is refused rather than overwritten."""
    if not out.exists():
        return bundled, ()
    known, problems = read_catalog_file(str(out), bundled)
    if problems:
        raise RefreshError(f"{out}: the catalog to refresh is invalid, fix or move it first:\n  "
                           + "\n  ".join(map(str, problems)))
    return known, tuple(r for r in known.instances if r.origin == str(out))


def _check_options(regions: Sequence[str], input_path: Path | None, as_of: str | None) -> None:
    for region in regions:
        if not REGION.fullmatch(region):
            raise RefreshError(f"--region {region!r} is not a region name: lowercase letters, digits and '-'")
    if input_path is not None:
        if not input_path.exists():
            raise RefreshError(f"--input {input_path}: no such file or folder")
        if as_of is None:
            raise RefreshError("--input reads recorded responses, whose date gpustack cannot know: give --as-of "
                               "YYYY-MM-DD, the day they were recorded")
    if as_of is not None and not AS_OF.fullmatch(as_of):
        raise RefreshError(f"--as-of {as_of!r} is not a date: YYYY-MM-DD")


def _pages(cloud: Any, input_path: Path | None, network: dict[str, Pages] | None, only_cloud: bool,
           notes: list[str]) -> Pages | None:
    """The cloud's price pages: recorded under `input_path` (None, with a note, when nothing is), or
    the given or live network."""
    feed = feed_of(cloud)
    assert feed is not None
    if input_path is None:
        pages: Pages = (network or {}).get(cloud.name) or feed.network_pages()
        return pages
    recorded = recorded_pages(input_path, cloud.name, only_cloud=only_cloud, first_stream=feed.STREAMS[0])
    if recorded is None:
        notes.append(f"{cloud.name}: nothing recorded under {input_path} (expected {input_path / cloud.name}/)")
    return recorded


@dataclasses.dataclass
class _Fed:
    """What the feeds gave: the fresh rows, the notes, and the (cloud, region)s they replace."""

    rows: list[InstanceType] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    scope: set[tuple[str, str]] = dataclasses.field(default_factory=set)

    def run(self, feed: Any, pages: Pages, cloud: str, regions: Iterable[str], facts: dict[str, InstanceType],
            models: set[str], stamp: str, out: Path) -> None:
        for region in regions:
            result: FeedResult = feed.refresh(pages, region, facts)
            rows = [dataclasses.replace(r, as_of=stamp, origin=str(out)) for r in result.rows
                    if not models or r.gpu in models]
            self.notes.extend(f"{cloud} {region}: {n}" for n in result.notes)
            if not rows:
                self.notes.append(f"{cloud} {region}: no GPU instance prices found; its rows are left as they were")
                continue
            self.scope.add((cloud, region))
            self.rows.extend(rows)


def compare(old: Iterable[InstanceType], new: Iterable[InstanceType], removed: str = "removed") -> list[Change]:
    """Rows added, gone (`removed`: "removed" from a file, or "unlisted" against the bundled rows, which
    stay in use) and moved by more than MOVE_THRESHOLD."""
    before = {(r.cloud, r.region, r.name): r for r in old}
    after = {(r.cloud, r.region, r.name): r for r in new}
    changes = [Change("added", after[k]) for k in sorted(after.keys() - before.keys())]
    changes += [Change(removed, before[k]) for k in sorted(before.keys() - after.keys())]
    for key in sorted(after.keys() & before.keys()):
        if _moved(before[key].on_demand, after[key].on_demand) or _moved(before[key].spot, after[key].spot):
            changes.append(Change("moved", after[key], before[key]))
    return changes


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never a part."""
    try:
        files.write_atomically(path, text)
    except files.FileRefused as exc:
        raise RefreshError(str(exc)) from None


def _clouds(registry: object, names: Sequence[str]) -> list:  # type: ignore[type-arg]
    with_feed = [c for c in registry if feed_of(c) is not None]  # type: ignore[attr-defined]
    if not names:
        return with_feed
    known = {c.name: c for c in with_feed}
    aliases = registry.aliases()  # type: ignore[attr-defined]
    chosen = []
    for name in names:
        canonical = aliases.get(name, name)
        if canonical not in known:
            raise RefreshError(f"--cloud {name!r} has no price feed{did_you_mean(name, known)}; clouds: "
                               f"{one_of(known)}")
        if known[canonical] not in chosen:
            chosen.append(known[canonical])
    return chosen


def _gpus(catalog: Catalog, names: Sequence[str]) -> set[str]:
    models = set()
    for name in names:
        model = catalog.gpu(name)
        if model is None:
            raise RefreshError(f"--gpu {name!r} is not a GPU model of the catalog{did_you_mean(name, catalog.gpu_names)};"
                               f" known: {one_of(catalog.gpu_names)}")
        models.add(model.name)
    return models


def _facts(catalog: Catalog, cloud: str) -> dict[str, InstanceType]:
    """Instance type -> a row with its GPU, vCPUs and memory (the same in every region)."""
    return facts_of(catalog.rows_of(cloud))


def _regions(catalog: Catalog, cloud: str) -> tuple[str, ...]:
    return catalog.regions(cloud)


def _moved(old: float | None, new: float | None) -> bool:
    if old is None or new is None:
        return (old is None) != (new is None)
    if old == 0:
        return new != 0
    return abs(new - old) / old > MOVE_THRESHOLD


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _prices(row: InstanceType) -> str:
    return f"on-demand {_money(row.on_demand)}, spot {_money(row.spot)} USD/h"


def _moves(old: InstanceType, new: InstanceType) -> str:
    parts = []
    for label, a, b in (("on-demand", old.on_demand, new.on_demand), ("spot", old.spot, new.spot)):
        if a == b:
            continue
        change = f" ({(b - a) / a:+.1%})" if a and b is not None else ""
        parts.append(f"{label} {_money(a)} -> {_money(b)}{change}")
    return ", ".join(parts)
