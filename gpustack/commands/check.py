"""`gpustack check SPEC`: the guardrail policies on the plan, offline (the rules of the policy pack);
`gpustack check SPEC --manifests PATH`: the team's workload manifests against the plan's pools."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpustack.spec.yamlsource import Document

NAME = "check"
HELP = "apply the guardrail policies to the plan, offline; exit 1 on a mandatory violation"
ORDER = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gpustack.commands._shared import add_catalog_argument


    parser.add_argument("spec", help="the spec file")
    add_catalog_argument(parser)
    parser.add_argument("--target", help="only this target")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--config", metavar="FILE",
                        help="policy config (JSON), the file `pulumi preview --policy-pack-config` takes")
    parser.add_argument("--require-label", action="append", metavar="KEY", dest="require_labels",
                        help="an attribution label every GPU pool must carry (repeat for more; replaces the "
                             "configured list, default: team and environment)")
    parser.add_argument("--baseline", metavar="SPEC",
                        help="the spec as deployed now, a file or git REF:PATH (e.g. main:stacks/gpustack.yaml): "
                             "flags pool changes that force a node-pool replacement")
    parser.add_argument("--manifests", metavar="PATH",
                        help="instead of the policies, check these workload manifests (a YAML file, a directory "
                             "of them, or - for stdin, e.g. `kustomize build . |`) land on their pools; "
                             "exit 1 on an error")


def run(args: argparse.Namespace) -> int:
    if args.manifests:
        return _run_manifests(args)
    from gpustack.commands._shared import compile_spec, print_price_age, select_target
    from gpustack.diff import load_plan
    from gpustack.errors import UsageError
    from gpustack.guardrails import evaluate
    from gpustack.guardrails.config import ConfigError, load, settings
    from gpustack.guardrails.from_plan import plan_views

    try:
        config = dict(load(args.config)) if args.config else {}
        if args.require_labels:
            entry = config.get("gpu-pool-attribution-labels")
            entry = dict(entry) if isinstance(entry, dict) else ({"enforcementLevel": entry} if entry else {})
            config["gpu-pool-attribution-labels"] = {**entry, "labels": args.require_labels}
        chosen = settings(config, args.config or "policy config")
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    _, plan = compile_spec(args.spec, args.catalog)
    plan = select_target(plan, args.target)
    baseline = load_plan(args.baseline, args.catalog) if args.baseline else None
    violations = evaluate(plan_views(plan, baseline), chosen)
    print_price_age(plan)
    if args.format == "json":
        out = {"targets": [t.name for t in plan.targets], "violations": [v.to_dict() for v in violations],
               "mandatory": sum(v.level == "mandatory" for v in violations),
               "advisory": sum(v.level == "advisory" for v in violations)}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        sys.stdout.write(_table([t.name for t in plan.targets], violations))
    return 1 if any(v.level == "mandatory" for v in violations) else 0


def _table(targets: list[str], violations: list) -> str:  # type: ignore[type-arg]
    lines = []
    for target in targets:
        mine = [v for v in violations if v.target == target]
        mandatory = sum(v.level == "mandatory" for v in mine)
        verdict = (
            "passes" if not mandatory else f"fails: {mandatory} mandatory violation{'s' if mandatory != 1 else ''}"
        )
        advisory = len(mine) - mandatory
        lines.append(f"{target}: {verdict}" + (f", {advisory} advisory" if advisory else ""))
        for v in mine:
            lines.append(f"  {v.level.upper():9}  {v.rule}  {v.pool or '(whole target)'}")
            lines.extend(_wrapped((f"{v.message}.", f"Fix: {v.fix}."), 13))
    return "\n".join(lines) + "\n"


def _wrapped(texts: tuple[str, ...], indent: int) -> list[str]:
    """Each text indented and wrapped to the plan table's width; words longer than a line (URLs) stay whole."""
    import textwrap

    from gpustack.output.table import WIDTH

    return [textwrap.fill(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * indent,
                          break_long_words=False, break_on_hyphens=False) for text in texts]


def read_manifests(path: str) -> list[Document]:
    from pathlib import Path

    from gpustack.errors import UsageError
    from gpustack.files import FileRefused, read_limited
    from gpustack.spec.yamlsource import MAX_FILE_BYTES, parse_all

    if path == "-":
        text = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        _within_bounds(text, 0, 0, "<stdin>")
        return [d for d in parse_all(text, "<stdin>") if d.data is not None]
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()) \
        if root.is_dir() else [root]
    if not files:
        raise UsageError(f"--manifests {path}: the directory holds no .yaml or .yml file")
    documents: list[Document] = []
    read = separators = 0
    for file in files:
        try:
            text = read_limited(file, MAX_FILE_BYTES, "manifest file")
        except FileRefused as exc:
            raise UsageError(f"--manifests {file}: {exc}") from None
        read, separators = _within_bounds(text, read, separators, str(file))
        documents.extend(d for d in parse_all(text, str(file)) if d.data is not None)
    return documents


MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # every file of a --manifests folder together
MAX_MANIFEST_DOCUMENTS = 5000  # YAML documents in all: a team's manifests are hundreds


def _within_bounds(text: bytes, read: int, separators: int, where: str) -> tuple[int, int]:
    """The bytes and document separators read so far with `text`'s, or a UsageError past the bounds, counted
    before parsing (40,000 small documents take seconds and hundreds of MB to parse)."""
    from gpustack.errors import UsageError

    read += len(text)
    separators += text.count(b"\n---") + text.startswith(b"---")
    if read > MAX_MANIFEST_BYTES:
        raise UsageError(f"--manifests {where}: the manifests hold more than {MAX_MANIFEST_BYTES:,} bytes in all")
    if separators > MAX_MANIFEST_DOCUMENTS:
        raise UsageError(f"--manifests {where}: more than {MAX_MANIFEST_DOCUMENTS:,} YAML documents in all; check a "
                         "team's manifests a folder at a time")
    return read, separators


def _run_manifests(args: argparse.Namespace) -> int:
    from gpustack.commands._shared import compile_spec, select_target
    from gpustack.guardrails.manifests import ERROR, check

    _, plan = compile_spec(args.spec, args.catalog)
    plan = select_target(plan, args.target)
    documents = read_manifests(args.manifests)
    results = {t.name: check(t, documents) for t in plan.targets}
    errors = sum(f.level == ERROR for found in results.values() for f in found)
    if args.format == "json":
        out = {"targets": {name: [f.to_dict() for f in found] for name, found in results.items()},
               "errors": errors, "warnings": sum(len(found) for found in results.values()) - errors}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 1 if errors else 0
    lines = []
    for name, found in results.items():
        mine = sum(f.level == ERROR for f in found)
        verdict = "manifests land on their pools" if not mine else f"fails: {mine} error{'s' if mine != 1 else ''}"
        warnings = len(found) - mine
        lines.append(f"{name}: {verdict}" + (f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""))
        for f in found:
            lines.append(f"  {f.level.upper():8} {f.location or f.path}  {f.obj}")
            lines.extend(_wrapped((f"{f.path}: {f.message}.", f"Fix: {f.fix}."), 11))
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if errors else 0
