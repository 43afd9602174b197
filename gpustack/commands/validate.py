"""`gpustack validate SPEC [SPEC ...]`: check specs (and plan them, which finds the capability gaps)."""

from __future__ import annotations

import argparse
import sys

NAME = "validate"
HELP = "check one or more specs; exit 2 with located errors"
ORDER = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument

    parser.add_argument("specs", nargs="+", metavar="SPEC", help="spec files; each is checked on its own")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print nothing for a valid spec (problems and warnings still go to stderr)")
    add_catalog_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Every file is checked, so one run reports the problems of all of them."""
    from gpustack.commands._shared import compile_spec, print_warnings
    from gpustack.errors import SpecError

    problems = bad_files = 0
    for path in args.specs:
        try:
            spec, plan = compile_spec(path, args.catalog)
        except SpecError as exc:
            for problem in exc.problems:
                print(f"error: {problem}", file=sys.stderr)
            problems += len(exc.problems)
            bad_files += 1
            continue
        print_warnings(plan)
        if not args.quiet:
            pools = sum(len(t.pools) for t in plan.targets)
            targets, workloads = len(spec.targets), len(spec.workloads)
            print(f"{path}: valid ({targets} target{'s' if targets != 1 else ''}, "
                  f"{workloads} workload{'s' if workloads != 1 else ''}, {pools} pools)")
    if problems:
        files = f" in {bad_files} of {len(args.specs)} files" if len(args.specs) > 1 else ""
        print(f"gpustack: {problems} problem{'s' if problems != 1 else ''} found{files}", file=sys.stderr)
        return 2
    return 0
