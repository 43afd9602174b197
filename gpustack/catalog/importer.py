"""`make catalog SOURCES=DIR` (`python -m gpustack.catalog.importer DIR`): rebuild the bundled per-cloud
files (`data/<cloud>.csv`) from source snapshots, offline and deterministically, and print the moves.

DIR is laid out as `snapshots.py` describes (`DIR/<cloud>/<source key>/...`). A cloud's bundle reads its
snapshots in its `snapshot` module (`rebuild(snapshots, known rows, gpu_of) -> FeedResult`); a cloud
without a folder under DIR keeps its file as it is (and is said to). Where a source lists prices but
not machines, instance facts come from the rows already bundled, as for `gpustack catalog refresh`;
the rows written pass the same checks as any catalog file.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from gpustack.catalog import Catalog, bundled_clouds, load_catalog
from gpustack.catalog.feeds import RefreshError
from gpustack.catalog.refresh import MOVE_THRESHOLD, compare, write_atomically
from gpustack.catalog.rows import InstanceType, read_rows, write_rows
from gpustack.catalog.snapshots import Snapshot
from gpustack.clouds import CLOUDS

DATA = Path(__file__).parent / "data"
SNAPSHOT_PART = "snapshot"


def rebuild(sources: Path, data: Path = DATA, write: bool = True) -> list[str]:
    """Rebuild every cloud with snapshots under `sources`; the report's lines (what moved, what was kept)."""
    if not sources.is_dir():
        raise RefreshError(f"SOURCES={sources}: no such folder")
    if write and not data.is_dir():
        raise RefreshError(f"{data}: no such folder to write the catalog files into")
    catalog = load_catalog()
    lines: list[str] = []
    outputs: list[tuple[Path, str]] = []  # written once every cloud is read: all files or none
    for cloud in CLOUDS:
        folder = sources / cloud.name
        if importlib.util.find_spec(f"{cloud.bundle}.{SNAPSHOT_PART}") is None:
            lines.append(f"{cloud.name}: its bundle reads no snapshots; {cloud.name}.csv is left as it is")
            continue
        if not folder.is_dir():
            lines.append(f"{cloud.name}: no snapshots under {folder}; {cloud.name}.csv is left as it is")
            continue
        snapshots = []
        for path in sorted(p for p in folder.iterdir() if p.is_dir()):
            source = catalog.sources.get(path.name)
            if source is None:
                raise RefreshError(f"{path}: {path.name!r} is not a source key of sources.yaml; add it there "
                                   "(repository, path, commit, as_of) first")
            snapshots.append(Snapshot(path.name, path, source.as_of))
        old = catalog.rows_of(cloud.name)
        result = cloud.part(SNAPSHOT_PART).rebuild(snapshots, old, lambda name: _gpu_name(catalog, name))
        lines += [f"{cloud.name}: {note}" for note in result.notes]
        lines += _moves(cloud.name, old, result.rows)
        text = write_rows(result.rows)
        _, problems = read_rows(text, f"{cloud.name}.csv", catalog.vocabulary(), origin="bundled")
        if problems:  # a snapshot reader produced a row the catalog would refuse: never write it
            raise RefreshError("the rebuilt rows do not pass the catalog's checks:\n  " + "\n  ".join(map(str, problems)))
        outputs.append((data / f"{cloud.name}.csv", text))
        regions = sorted({r.region for r in result.rows})
        dates = sorted({r.as_of for r in result.rows})
        lines.append(f"{cloud.name}: {'wrote' if write else 'would write'} {cloud.name}.csv: {len(result.rows)} rows "
                     f"in {len(regions)} regions, prices of {' to '.join(dict.fromkeys((dates[0], dates[-1])))}"
                     if result.rows else f"{cloud.name}: no rows")
    for path, text in outputs if write else ():
        write_atomically(path, text)
    unknown = sorted(p.name for p in sources.iterdir() if p.is_dir() and p.name not in bundled_clouds())
    if unknown:
        lines.append(f"ignored (not a cloud of the catalog): {', '.join(unknown)}")
    return lines


def _gpu_name(catalog: Catalog, name: str) -> str | None:
    model = catalog.gpu(name)
    return model.name if model else None


def _moves(cloud: str, old: Sequence[InstanceType], new: Sequence[InstanceType]) -> list[str]:
    changes = compare(old, new)
    counts = {k: sum(c.kind == k for c in changes) for k in ("added", "removed", "moved")}
    head = (f"{cloud}: {counts['added']} added, {counts['removed']} removed, {counts['moved']} moved by more than "
            f"{MOVE_THRESHOLD:.0%}")
    return [head] + [c.describe() for c in changes]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpustack.catalog.importer",
                                     description="Rebuild the bundled catalog files from source snapshots.")
    parser.add_argument("sources", type=Path, help="the snapshot folder (DIR/<cloud>/<source key>/...)")
    parser.add_argument("--data", type=Path, default=DATA, help="where the per-cloud files are written")
    parser.add_argument("--check", action="store_true", help="print the moves, write nothing")
    args = parser.parse_args(argv)
    try:
        lines = rebuild(args.sources, args.data, write=not args.check)
    except RefreshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
