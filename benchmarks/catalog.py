"""What the bundled catalog costs a command: `gpustack validate` on the example, in fresh processes.

    make bench-catalog                  # or: .venv/bin/python -m benchmarks.catalog [--runs N]

Per run, a fresh Python process runs `gpustack validate SPEC` with the catalog's loaders timed: the
models and sources (`load_catalog`), and each cloud's file as the spec first asks about that cloud
(read, checked, indexed by region). Printed: the median over the runs of the catalog's milliseconds,
the whole command's, and which files were read with how many rows. A spec of one cloud and region
shows what a plan that touches no other cloud pays. Prints numbers, asserts nothing (target: the
example's catalog work under 150 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "stacks" / "gpustack.yaml"

_CHILD = r"""
import contextlib, io, json, sys, time
t0 = time.perf_counter()
import gpustack.catalog as catalog
from gpustack.cli import main
files, spent = {}, []
read = catalog._bundled_rows

def timed_read(cloud, words):  # each cloud's file, read when the command first asks about that cloud
    start = time.perf_counter()
    rows = read(cloud, words)
    spent.append(time.perf_counter() - start)
    files[cloud] = len(rows)
    return rows

catalog._bundled_rows = timed_read  # load_catalog binds the per-cloud loaders when it first runs
start = time.perf_counter()
catalog.load_catalog()  # GPU models, sources, rates (cached: the command's own call is free)
spent.append(time.perf_counter() - start)
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(["validate", sys.argv[1]])
print(json.dumps({"code": code, "total_ms": (time.perf_counter() - t0) * 1000,
                  "catalog_ms": sum(spent) * 1000, "files": files}))
"""


def run(spec: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(spec)], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"gpustack validate {spec} exited {result['code']}")
    return result


def one_region_spec(folder: Path) -> Path:
    """The example with only its Azure target: a plan that touches one cloud and one region."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["targets"] = [t for t in doc["targets"] if t["cloud"] == "azure"]
    path = folder / "one-region.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def report(name: str, spec: Path, runs: int) -> None:
    results = [run(spec) for _ in range(runs)]
    catalog = statistics.median(r["catalog_ms"] for r in results)
    total = statistics.median(r["total_ms"] for r in results)
    files = ", ".join(f"{cloud}.csv {rows} rows" for cloud, rows in sorted(results[0]["files"].items()))
    print(f"{name:<28} catalog {catalog:7.1f} ms   validate {total:7.1f} ms   read: {files or 'no file'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"median of {args.runs} fresh processes each (Python {sys.version.split()[0]})")
    report("example (4 clouds)", EXAMPLE, args.runs)
    with tempfile.TemporaryDirectory() as folder:
        report("one target (azure eastus)", one_region_spec(Path(folder)), args.runs)


if __name__ == "__main__":
    main()
