"""`gpustack validate SPEC`: check a spec (and plan it, which finds the capability gaps)."""

from __future__ import annotations

import argparse

NAME = "validate"
HELP = "check a spec; exit 2 with located errors"
ORDER = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument


    parser.add_argument("spec", help="the spec file")
    add_catalog_argument(parser)


def run(args: argparse.Namespace) -> int:
    from gpustack.commands._shared import compile_spec, print_warnings

    spec, plan = compile_spec(args.spec, args.catalog)
    print_warnings(plan)
    pools = sum(len(t.pools) for t in plan.targets)
    targets, workloads = len(spec.targets), len(spec.workloads)
    print(f"{args.spec}: valid ({targets} target{'s' if targets != 1 else ''}, "
          f"{workloads} workload{'s' if workloads != 1 else ''}, {pools} pools)")
    return 0
