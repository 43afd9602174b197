"""`gpustack plan SPEC`: the pools, GPUs and cost of every target."""

from __future__ import annotations

import argparse
import sys

NAME = "plan"
HELP = "show the pools, GPUs and cost of every target"
ORDER = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument, add_max_chars_argument

    parser.add_argument("spec", help="the spec file")
    add_catalog_argument(parser)
    parser.add_argument("--target", help="only this target")
    parser.add_argument("--format", choices=("table", "json", "markdown", "html"), default="table")
    parser.add_argument("--wide", action="store_true",
                        help="table: one row per pool with every column (full MIG layouts, when it runs); "
                             "wider than 120 columns")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="table: one line per target (pools, GPUs, cost), for CI logs; warnings still go to stderr")
    add_max_chars_argument(parser)


def run(args: argparse.Namespace) -> int:
    from gpustack.commands._shared import compile_spec, fit_markdown, print_warnings, select_target

    _, plan = compile_spec(args.spec, args.catalog)
    plan = select_target(plan, args.target)
    print_warnings(plan)
    if args.format == "json":
        sys.stdout.write(plan.to_json())
    elif args.format == "markdown":
        from gpustack.output.markdown import render_markdown

        sys.stdout.write(fit_markdown(render_markdown(plan), args.max_chars))
    elif args.format == "html":
        from gpustack.output.html import render_plan_html

        sys.stdout.write(render_plan_html(plan))
    elif args.quiet:
        from gpustack.output.table import render_quiet

        sys.stdout.write(render_quiet(plan))
    else:
        from gpustack.output.table import render_table

        sys.stdout.write(render_table(plan, wide=args.wide))
    return 0
