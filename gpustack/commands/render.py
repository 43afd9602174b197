"""`gpustack render SPEC --target NAME [--out DIR]`: the in-cluster objects of a target as YAML files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpustack.plan.model import TargetPlan

NAME = "render"
HELP = "write a target's Kubernetes objects (GPU Operator values, auto-stop, alerts) as YAML for GitOps"
ORDER = 30
DEFAULT_OUT = "rendered/<target>"
DEFAULT_WORKLOADS_OUT = "rendered/<target>-workloads"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument


    parser.add_argument("spec", help="the spec file")
    add_catalog_argument(parser)
    parser.add_argument("--target", required=True, help="the target to render")
    parser.add_argument("--workloads", action="store_true",
                        help="write instead what lands each workload on its pools: kustomize patches and Helm values "
                             f"(default --out: {DEFAULT_WORKLOADS_OUT})")
    parser.add_argument("--out", help=f"output directory, replaced as a whole (default: {DEFAULT_OUT})")


def run(args: argparse.Namespace) -> int:
    from gpustack.commands._shared import compile_spec, print_warnings, select_target
    from gpustack.render import in_cluster
    from gpustack.render.files import render_files

    _, plan = compile_spec(args.spec, args.catalog)
    plan = select_target(plan, args.target)
    print_warnings(plan)
    target = plan.targets[0]
    if args.workloads:
        return _workloads(target, Path(args.out) if args.out else Path("rendered") / f"{target.name}-workloads")
    rendered = in_cluster(plan, target)
    files = render_files(rendered)
    out = Path(args.out) if args.out else Path("rendered") / target.name
    _write(out, files)
    extra = " and the GPU Operator's Helm values" if rendered.operator else ""
    print(f"{out}: {len(rendered.objects)} objects{extra} for target {target.name}")
    return 0


def _write(out: Path, files: dict[str, str]) -> None:
    from gpustack.errors import UsageError
    from gpustack.render.files import write_tree

    try:
        write_tree(out, files)
    except OSError as exc:  # a read-only or full disk is the user's to fix, not a bug
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None


def _workloads(target: TargetPlan, out: Path) -> int:
    from gpustack.render.files import workload_files
    from gpustack.render.workloads import wirings

    wired = wirings(target)
    _write(out, workload_files(target.name, wired))
    print(f"{out}: {len(wired)} workload patches and Helm values for target {target.name}")
    return 0
