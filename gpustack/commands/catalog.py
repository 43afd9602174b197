"""`gpustack catalog refresh`: rebuild catalog rows from the clouds' price APIs (or recorded responses)."""

from __future__ import annotations

import argparse

NAME = "catalog"
HELP = "refresh the price catalog from the clouds' price APIs (gpustack catalog refresh)"
ORDER = 60
DEFAULT_OUT = "gpustack-catalog.csv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    refresh = actions.add_parser(
        "refresh", help="fetch current prices and write them as a catalog file (use it with --catalog FILE)",
        description="Fetch current prices from each cloud's price API (see the README) for the instance types the "
                    "catalog knows, and write them, dated, to a catalog file that --catalog FILE (or `catalog:` "
                    "in a spec) merges over the bundled one. Prints the rows added, removed and moved by more "
                    "than 5%. The file is replaced atomically, and not at all when a page cannot be read.")
    refresh.add_argument("--cloud", action="append", default=[], help="only this cloud (repeat for more)")
    refresh.add_argument("--region", action="append", default=[],
                         help="only this region (repeat for more; default: the regions already catalogued)")
    refresh.add_argument("--gpu", action="append", default=[], help="only instance types with this GPU model")
    refresh.add_argument("--input", metavar="PATH",
                         help="read recorded API responses instead of the network: a file (one page, with one "
                              "--cloud) or a folder with a folder per cloud of <stream>*.json pages in order")
    refresh.add_argument("--as-of", metavar="YYYY-MM-DD",
                         help="the date the prices describe (required with --input; default: today)")
    refresh.add_argument("--out", default=DEFAULT_OUT, help=f"the catalog file to write (default: {DEFAULT_OUT})")
    refresh.add_argument("--catalog", action="append", default=[], metavar="FILE",
                         help="more instance facts (GPUs, vCPUs, memory) for types the bundled catalog lacks")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpustack.catalog import load_catalog, with_catalog_files
    from gpustack.catalog.refresh import refresh

    known = with_catalog_files(args.catalog, load_catalog())
    report = refresh(known, Path(args.out), clouds=args.cloud, regions=args.region, gpus=args.gpu,
                     input_path=Path(args.input) if args.input else None, as_of=args.as_of)
    for line in report.lines():
        print(line)
    return 0
