"""`gpustack render SPEC --target NAME [--out DIR]`: the in-cluster objects of a target as YAML files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpustack.plan.model import TargetPlan
    from gpustack.render import InCluster
    from gpustack.render.workload_objects import FoundObject

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
    parser.add_argument("--manifests", metavar="PATH",
                        help="with --workloads: the team's workload manifests (a YAML file, a directory of them, or - "
                             "for stdin), so each patch targets the object and container they have")
    parser.add_argument("--merge-priorities", metavar="FILE",
                        help="the cluster's existing priority-expander ConfigMap (kubectl get configmap "
                             "cluster-autoscaler-priority-expander -n <namespace> -o yaml): write it merged "
                             "with the target's entries instead of a ConfigMap that would replace it")
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
        return _workloads(target, Path(args.out) if args.out else Path("rendered") / f"{target.name}-workloads",
                          args.manifests)
    if args.manifests:
        from gpustack.errors import UsageError

        raise UsageError("--manifests goes with --workloads (the patches that wire the team's objects)")
    rendered = in_cluster(plan, target)
    if args.merge_priorities:
        rendered = _merged(rendered, args.merge_priorities)
    files = render_files(rendered)
    out = Path(args.out) if args.out else Path("rendered") / target.name
    _write(out, files)
    extra = " and the GPU Operator's Helm values" if rendered.operator else ""
    if rendered.dra_driver:
        extra += " and NVIDIA's DRA driver's Helm values"
    print(f"{out}: {len(rendered.objects)} objects{extra} for target {target.name}")
    return 0


def _merged(rendered: InCluster, path: str) -> InCluster:
    """`rendered` with its priority-expander ConfigMap merged into the cluster's one, read from `path`."""
    import dataclasses

    from gpustack.errors import UsageError
    from gpustack.files import FileRefused, read_limited
    from gpustack.render.autoscaling import PRIORITY_CONFIGMAP
    from gpustack.render.priority_merge import PriorityMergeError, merge_priorities
    from gpustack.spec.yamlsource import MAX_FILE_BYTES, parse

    ours = [o for o in rendered.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == PRIORITY_CONFIGMAP]
    if not ours:
        raise UsageError(f"--merge-priorities: target {rendered.target} writes no priority-expander ConfigMap "
                         "(no spot pool with an on-demand fallback, or its autoscaler ranks pools another way)")
    try:
        existing = parse(read_limited(path, MAX_FILE_BYTES, "ConfigMap file"), path, multiline=True).data
        merged = merge_priorities(existing if isinstance(existing, dict) else {}, ours[0], path)
    except (FileRefused, PriorityMergeError) as exc:
        raise UsageError(f"--merge-priorities {path}: {exc}" if isinstance(exc, FileRefused) else str(exc)) from None
    return dataclasses.replace(rendered, objects=tuple(merged if o is ours[0] else o for o in rendered.objects))


def _write(out: Path, files: dict[str, str]) -> None:
    from gpustack.errors import UsageError
    from gpustack.render.files import write_tree

    try:
        write_tree(out, files)
    except OSError as exc:  # a read-only or full disk is the user's to fix, not a bug
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None


def _workloads(target: TargetPlan, out: Path, manifests: str | None) -> int:
    from gpustack.render.files import workload_files
    from gpustack.render.workloads import wirings

    wired = wirings(target, _found(target, manifests) if manifests else None)
    _write(out, workload_files(target.name, wired))
    print(f"{out}: {len(wired)} workload patches and Helm values for target {target.name}")
    return 0


def _found(target: TargetPlan, manifests: str) -> dict[str, FoundObject]:
    """The workloads' objects in the team's manifests; a spec `container` the object lacks is refused (its
    patch would add a container without an image)."""
    from gpustack.commands.check import read_manifests
    from gpustack.errors import UsageError
    from gpustack.guardrails.manifests import found_objects
    from gpustack.render.workload_objects import FoundObject

    found = {workload: FoundObject(*shape) for workload, shape in
             found_objects(target, read_manifests(manifests)).items()}
    requests = {r.workload: r for r in target.pod_requests}
    for workload, obj in sorted(found.items()):
        container = requests[workload].gpu_container(obj.containers)
        if obj.containers and container not in obj.containers:
            raise UsageError(f"--manifests {manifests}: {obj.kind} {obj.name} (workload {workload}) has no container "
                             f"{container!r}, only {', '.join(map(repr, obj.containers))}: its patch would add one "
                             f"without an image; set `container:` of workload {workload} in the spec to one of them")
    return found
