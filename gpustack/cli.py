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
from typing import NoReturn

from gpustack import __version__

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 2, 70
MAX_SHOWN_PROBLEMS = 200  # a spec with thousands of problems shows the first ones and a count


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # exit 2 with one line, like every bad input
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"gpustack: {message}\n")


def _parser() -> argparse.ArgumentParser:
    from gpustack.commands import commands

    parser = _Parser(prog="gpustack", description="Compile a GPU workload spec into node pools and their cost.")
    parser.add_argument("--version", action="version", version=f"gpustack {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in commands():
        command.add_arguments(sub.add_parser(command.NAME, help=command.HELP, description=command.HELP))
        sub.choices[command.NAME].add_argument(
            "--verbose", action="store_true",
            help="warnings whole at a terminal (else at most two lines each, the detail left out)")
        sub.choices[command.NAME].set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from gpustack.commands._noise import set_verbose

    set_verbose(args.verbose)
    try:
        code: int = args.run(args)
        return code
    except KeyboardInterrupt:
        print("gpustack: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        from gpustack.errors import SpecError, UsageError

        if isinstance(exc, SpecError):
            for problem in exc.problems[:MAX_SHOWN_PROBLEMS]:
                print(f"error: {problem}", file=sys.stderr)
            count = len(exc.problems)
            if count > MAX_SHOWN_PROBLEMS:
                print(f"error: ... and {count - MAX_SHOWN_PROBLEMS:,} more", file=sys.stderr)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
