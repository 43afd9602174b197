"""`gpustack render SPEC --target NAME [--out DIR]`: the in-cluster objects of a target as YAML files."""

from __future__ import annotations

import argparse

NAME = "render"
HELP = "write a target's Kubernetes objects (GPU Operator values, auto-stop, alerts) as YAML for GitOps"
ORDER = 30
DEFAULT_OUT = "rendered/<target>"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument


    parser.add_argument("spec", help="the spec file")
    add_catalog_argument(parser)
    parser.add_argument("--target", required=True, help="the target to render")
    parser.add_argument("--out", help=f"output directory, replaced as a whole (default: {DEFAULT_OUT})")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpustack.commands._shared import compile_spec, print_warnings, select_target
    from gpustack.errors import UsageError
    from gpustack.render import in_cluster
    from gpustack.render.files import render_files, write_tree

    _, plan = compile_spec(args.spec, args.catalog)
    plan = select_target(plan, args.target)
    print_warnings(plan)
    target = plan.targets[0]
    rendered = in_cluster(plan, target)
    files = render_files(rendered)
    out = Path(args.out) if args.out else Path("rendered") / target.name
    try:
        write_tree(out, files)
    except OSError as exc:  # a read-only or full disk is the user's to fix, not a bug
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    extra = " and the GPU Operator's Helm values" if rendered.operator else ""
    print(f"{out}: {len(rendered.objects)} objects{extra} for target {target.name}")
    return 0
