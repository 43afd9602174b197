"""`gpustack diff OLD NEW`: the pools and monthly cost a spec change adds, removes, resizes and replaces."""

from __future__ import annotations

import argparse
import dataclasses
import sys

NAME = "diff"
HELP = "compare two specs (files or git REF:PATH): pools replaced, added, removed, resized, and the cost"
ORDER = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument, add_max_chars_argument

    parser.add_argument("old", help="the spec before the change: a file or REF:PATH (e.g. main:stacks/gpustack.yaml)")
    parser.add_argument("new", help="the spec after the change: a file or REF:PATH")
    parser.add_argument("--target", help="only this target")
    parser.add_argument("--format", choices=("markdown", "json", "html"), default="markdown")
    add_catalog_argument(parser)
    add_max_chars_argument(parser)


def run(args: argparse.Namespace) -> int:
    from gpustack.commands._shared import fit_markdown, print_price_age, select_target
    from gpustack.diff import diff_plans, load_plan
    from gpustack.errors import UsageError, did_you_mean

    old = load_plan(args.old, args.catalog)
    new = load_plan(args.new, args.catalog, current=old)  # the old pools keep their types unless a move pays
    if args.target is not None:
        names = sorted({t.name for t in (*old.targets, *new.targets)})
        if args.target not in names:
            raise UsageError(f"no target {args.target!r} in either spec{did_you_mean(args.target, names)}; "
                             f"targets: {', '.join(names)}")
        old, new = (select_target(p, args.target) if args.target in {t.name for t in p.targets}
                    else dataclasses.replace(p, targets=(), warnings=()) for p in (old, new))
    print_price_age(new)  # the cost of the change is priced at the new plan's rows
    diff = diff_plans(old, new, args.old, args.new)
    if args.format == "json":
        sys.stdout.write(diff.to_json())
    elif args.format == "html":
        from gpustack.output.html import render_diff_html

        sys.stdout.write(render_diff_html(diff))
    else:
        from gpustack.diff.report import render_diff_markdown

        sys.stdout.write(fit_markdown(render_diff_markdown(diff), args.max_chars))
    return 0  # a diff is a report, not a failure
