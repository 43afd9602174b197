"""What several commands do: compile a spec, print warnings, pick a target."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpustack.errors import SpecError
    from gpustack.plan import Plan
    from gpustack.spec import Spec


def add_catalog_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", action="append", default=[], metavar="FILE",
                        help="a catalog CSV merged over the bundled one and the spec's `catalog:` (its rows replace "
                             "those of the same cloud, region and instance type; repeat for more, the last wins)")


def add_max_chars_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-chars", type=_positive, metavar="N",
                        help="markdown: cut the report at a line to at most N characters, with a note "
                             "(a pull-request comment holds at most 65,536)")


def _positive(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 < int(text) <= 10_000_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 10,000,000")
    return int(text)


def fit_markdown(text: str, max_chars: int | None) -> str:
    """A Markdown report cut to `--max-chars`, or a usage error saying why it cannot be."""
    from gpustack.errors import UsageError
    from gpustack.output.markdown import fit

    try:
        return fit(text, max_chars)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def compile_spec(spec_path: str, catalogs: Sequence[str] = ()) -> tuple[Spec, Plan]:
    from gpustack.errors import SpecError
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    try:
        spec = load_spec(spec_path, catalogs)
    except SpecError as error:
        raise with_capacity_problems(error) from None
    return spec, build_plan(spec)


def with_capacity_problems(error: SpecError) -> SpecError:
    """`error` with the capacity problems of the spec's clean parts (a replica no type holds), so one
    run reports them with the schema's problems; a field already reported is not reported twice."""
    from gpustack.errors import SpecError
    from gpustack.plan.fit import capacity_problems
    from gpustack.spec import Spec

    if not isinstance(error.partial, Spec):
        return error
    reported = {p.path for p in error.problems}
    more = [p for p in capacity_problems(error.partial) if p.path not in reported]
    if not more:
        return error
    problems = sorted([*error.problems, *more], key=lambda p: (p.location.line if p.location else 0, p.path))
    return SpecError(problems)


def print_warnings(plan: Plan, today: datetime.date | None = None) -> None:
    """The plan's warnings, then one naming the targets whose prices are old on `today` (a fact of the day
    the command runs, so it is not part of the plan, which stays the same from day to day)."""
    for warning in plan.warnings:
        where = f"{warning.target}: " if warning.target else ""
        warn(f"{where}{warning.message}")
    print_price_age(plan, today)


def warn(text: str) -> None:
    """A warning on stderr: wrapped to the table's 120 columns for a person at a terminal; one line each
    in logs and pipes, where tools grep them."""
    line = f"warning: {text}"
    if stderr_is_terminal():
        from gpustack.commands._noise import for_terminal
        from gpustack.output.table import WIDTH

        line = for_terminal(line, WIDTH)
    print(line, file=sys.stderr)


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def print_price_age(plan: Plan, today: datetime.date | None = None) -> None:
    """One warning naming every target whose prices are more than 180 days old on `today` (each with its
    age), once per CI job (`gpustack.commands._noise`)."""
    from gpustack.catalog.freshness import stale_targets_message
    from gpustack.commands._noise import first_in_job

    stale = stale_targets_message([(t.name, t.prices_as_of) for t in plan.targets], today or datetime.date.today())
    if stale and first_in_job(stale):
        warn(stale)


def select_target(plan: Plan, target: str | None) -> Plan:
    """The plan narrowed to one target (all of them when `target` is None)."""
    from gpustack.errors import UsageError, did_you_mean

    if target is None:
        return plan
    names = [t.name for t in plan.targets]
    if target not in names:
        raise UsageError(f"no target {target!r} in the spec{did_you_mean(target, names)}; targets: {', '.join(names)}")
    chosen = plan.target(target)
    return dataclasses.replace(plan, targets=(chosen,), warnings=chosen.warnings)
