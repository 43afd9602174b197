"""What several commands do: compile a spec, print warnings, pick a target."""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpustack.plan import Plan
    from gpustack.spec import Spec


def compile_spec(spec_path: str) -> tuple[Spec, Plan]:
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    spec = load_spec(spec_path)
    return spec, build_plan(spec)


def print_warnings(plan: Plan) -> None:
    for warning in plan.warnings:
        where = f"{warning.target}: " if warning.target else ""
        print(f"warning: {where}{warning.message}", file=sys.stderr)


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
