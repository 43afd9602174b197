"""The `gpustack` command.

Exit codes: 0 success, 1 a check failed (e.g. `gpustack check` found a mandatory violation),
2 bad input or usage (with located messages), 70 an internal error (a bug: please report it).
Heavy modules are imported inside the commands, so `validate` and `plan` stay fast and never load
Pulumi.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gpustack import __version__

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 70


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # exit 2 with one line, like every bad input
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"gpustack: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpustack", description="Compile a GPU workload spec into node pools and their cost.")
    parser.add_argument("--version", action="version", version=f"gpustack {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    validate = sub.add_parser("validate", help="check a spec; exit 2 with located errors")
    validate.add_argument("spec")

    plan = sub.add_parser("plan", help="show the pools, GPUs and cost of every target")
    plan.add_argument("spec")
    plan.add_argument("--target", help="only this target")
    plan.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("gpustack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        from gpustack.errors import SpecError, UsageError

        if isinstance(exc, SpecError):
            for problem in exc.problems:
                print(f"error: {problem}", file=sys.stderr)
            count = len(exc.problems)
            print(f"gpustack: {count} problem{'s' if count != 1 else ''} found", file=sys.stderr)
            return EXIT_BAD_INPUT
        if isinstance(exc, UsageError):
            print(f"gpustack: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if os.environ.get("GPUSTACK_DEBUG"):
            raise
        print(f"gpustack: internal error: {type(exc).__name__}: {exc}\n"
              "This is a bug in gpustack. Re-run with GPUSTACK_DEBUG=1 for details and please report it.",
              file=sys.stderr)
        return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    command = args.command
    if command == "validate":
        return _validate(args)
    if command == "plan":
        return _plan(args)
    raise AssertionError(command)  # pragma: no cover


def _compile(spec_path: str):  # type: ignore[no-untyped-def]
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    spec = load_spec(spec_path)
    return spec, build_plan(spec)


def _warn(plan) -> None:  # type: ignore[no-untyped-def]
    for warning in plan.warnings:
        where = f"{warning.target}: " if warning.target else ""
        print(f"warning: {where}{warning.message}", file=sys.stderr)


def _validate(args: argparse.Namespace) -> int:
    spec, plan = _compile(args.spec)
    pools = sum(len(t.pools) for t in plan.targets)
    _warn(plan)
    print(f"{args.spec}: valid ({len(spec.targets)} target{'s' if len(spec.targets) != 1 else ''}, "
          f"{len(spec.workloads)} workload{'s' if len(spec.workloads) != 1 else ''}, {pools} pools)")
    return EXIT_OK


def _select(plan, target: str | None):  # type: ignore[no-untyped-def]
    import dataclasses

    from gpustack.errors import UsageError, did_you_mean

    if target is None:
        return plan
    names = [t.name for t in plan.targets]
    if target not in names:
        raise UsageError(f"no target {target!r} in the spec{did_you_mean(target, names)}; targets: {', '.join(names)}")
    chosen = plan.target(target)
    return dataclasses.replace(plan, targets=(chosen,), warnings=chosen.warnings)


def _plan(args: argparse.Namespace) -> int:
    _, plan = _compile(args.spec)
    plan = _select(plan, args.target)
    _warn(plan)
    if args.format == "json":
        sys.stdout.write(plan.to_json())
    elif args.format == "markdown":
        from gpustack.output.markdown import render_markdown

        sys.stdout.write(render_markdown(plan))
    else:
        from gpustack.output.table import render_table

        sys.stdout.write(render_table(plan))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
