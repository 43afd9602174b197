"""The Pulumi program: `gpustack.program.main()` declares every resource of one target.

It reads two Pulumi config keys, compiles the spec to a plan exactly as `gpustack plan` does, and
hands the target to its cloud's backend (the module named by the cloud's registry entry). The
provider SDKs are imported only here and below.

    gpustack:spec    path of the spec, relative to the Pulumi project (e.g. stacks/gpustack.yaml)
    gpustack:target  the target name in that spec (one stack per target)
"""

from __future__ import annotations

import importlib

import pulumi

from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.plan import Plan, build_plan
from gpustack.plan.model import TargetPlan
from gpustack.spec import load_spec


def compile_target(spec_path: str, target_name: str) -> tuple[Plan, TargetPlan]:
    """The plan and the target to deploy; bad input becomes a RunError (a message, no traceback)."""
    try:
        plan = build_plan(load_spec(spec_path))
    except SpecError as exc:
        raise pulumi.RunError(f"gpustack: the spec has problems:\n{exc}") from None
    names = [t.name for t in plan.targets]
    if target_name not in names:
        raise pulumi.RunError(f"gpustack: no target {target_name!r} in {spec_path}; targets: {', '.join(names)}")
    return plan, plan.target(target_name)


def main() -> None:
    config = pulumi.Config("gpustack")
    plan, target = compile_target(config.require("spec"), config.require("target"))
    backend = importlib.import_module(CLOUDS.get(target.cloud).backend)
    pools = backend.declare(target, plan)
    pulumi.export("target", target.name)
    pulumi.export("cloud", target.cloud)
    pulumi.export("pools", {name: component.outputs for name, component in sorted(pools.items())})
    pulumi.export("gpus", {"baseline": target.gpus.baseline, "required": target.gpus.required,
                           "provisioned": target.gpus.provisioned})
    pulumi.export("estimated_monthly_cost_usd", round(target.cost.planned_monthly_usd, 2))
