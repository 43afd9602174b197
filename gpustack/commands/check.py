"""`gpustack check SPEC`: the guardrail policies on the plan, offline (the rules of the policy pack)."""

from __future__ import annotations

import argparse
import json
import sys

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


def run(args: argparse.Namespace) -> int:
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
    import textwrap

    from gpustack.output.table import WIDTH

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
            # Wrapped to the plan table's width; words longer than a line (URLs) stay whole.
            for text in (f"{v.message}.", f"Fix: {v.fix}."):
                lines.append(textwrap.fill(text, WIDTH, initial_indent=" " * 13, subsequent_indent=" " * 13,
                                           break_long_words=False, break_on_hyphens=False))
    return "\n".join(lines) + "\n"
