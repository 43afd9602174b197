"""The CrossGuard policy pack: the guardrail rules as Pulumi policies, for any stack's node pools.

    pulumi preview --policy-pack policies [--policy-pack-config policy-config.json]

`policies/__main__.py` calls `main()`, which builds the `PolicyPack`; building one starts the policy
server and never returns, so tests call `policies()` and each policy's `validate` instead.
Rules that look at one pool become resource policies; rules that need the whole stack (the budget
cap, and the auto-stop rule, which looks for the schedules of a pool among the other resources)
become stack policies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (EnforcementLevel, Policy, PolicyConfigSchema, PolicyPack, ReportViolation,
                           ResourceValidationArgs, ResourceValidationPolicy, StackValidationArgs,
                           StackValidationPolicy)
from pulumi_policy.proxy import UnknownValueError, _is_unknown

from gpustack.clouds import CLOUDS
from gpustack.guardrails import findings
from gpustack.guardrails.resources import autoscaler_bounds, pool_view, stack_of, with_bounds
from gpustack.guardrails.rules import RULES, Rule
from gpustack.guardrails.schedules import schedule_ref, with_schedules
from gpustack.guardrails.view import UNKNOWN, Finding, PoolView, Violation

PACK_NAME = "gpustack-guardrails"


def plain(value: Any) -> Any:
    """Props as plain dicts and lists, with values unknown during preview as UNKNOWN.

    The engine hands policies proxies that raise on unknown values; reading through them here lets
    a rule skip just the fields it cannot see yet.
    """
    if isinstance(value, Mapping):
        out = {}
        for key in value:
            try:
                out[key] = plain(value[key])
            except UnknownValueError:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = []
        for index in range(len(value)):
            try:
                items.append(plain(value[index]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    if isinstance(value, str) and _is_unknown(value):
        return UNKNOWN
    return value


def _view(resource_type: str, props: Any, urn: str, name: str, opts: Any, provider: Any) -> PoolView | None:
    return pool_view(resource_type, plain(props), urn, name,
                     plain(provider.props) if provider is not None else None,
                     protected=bool(getattr(opts, "protect", False)),
                     ignored_changes=tuple(getattr(opts, "ignore_changes", None) or ()))


def _message(rule: Rule, target: str, found: Finding) -> str:
    return Violation(rule.name, "", target, found.pool, found.message, found.fix).text()


def _resource_validation(rule: Rule):  # type: ignore[no-untyped-def]
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        view = _view(args.resource_type, args.props, args.urn, args.name, args.opts, args.provider)
        if view is None:
            return
        for found in findings(rule, [view], rule.options(args.get_config())):
            report_violation(_message(rule, view.target, found), None)

    return validate


def _stack_validation(rule: Rule):  # type: ignore[no-untyped-def]
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        views, schedules, bounds = [], [], []
        for resource in args.resources:
            view = _view(resource.resource_type, resource.props, resource.urn, resource.name, resource.opts,
                         resource.provider)
            if view is not None:
                views.append(view)
            props = plain(resource.props)
            feeds = resource.property_dependencies.get("autoscalingGroupName") or resource.dependencies
            ref = schedule_ref(resource.resource_type, props, resource.urn, (d.urn for d in feeds))
            if ref is not None:
                schedules.append(ref)
            found_bounds = autoscaler_bounds(resource.resource_type, props)
            if found_bounds is not None:
                bounds.append(found_bounds)
        if not views:
            return
        target = stack_of(views[0].urn)
        views = with_schedules(with_bounds(views, bounds), schedules)
        for found in findings(rule, views, rule.options(args.get_config())):
            report_violation(_message(rule, target, found), found.urn or None)

    return validate


def policies() -> list[Policy]:
    """One policy per rule, each with the rule's name, default level and config schema."""
    out: list[Policy] = []
    for rule in RULES:
        common: dict[str, Any] = {
            "name": rule.name, "description": rule.description,
            "enforcement_level": EnforcementLevel(rule.level),
            "config_schema": PolicyConfigSchema(properties={k: dict(v) for k, v in rule.schema.items()})
            if rule.schema else None,
        }
        if rule.scope == "pool" and not rule.reads_schedules:
            out.append(ResourceValidationPolicy(validate=_resource_validation(rule), **common))
        else:
            out.append(StackValidationPolicy(validate=_stack_validation(rule), **common))
    return out


def main() -> None:
    """Serve the pack to the Pulumi engine (the entry point of policies/__main__.py)."""
    clouds = [cloud.display_name for cloud in CLOUDS]
    where = ", ".join(clouds[:-1]) + f" and {clouds[-1]}" if len(clouds) > 1 else "".join(clouds)
    PolicyPack(PACK_NAME, policies(), description=f"gpustack guardrails for GPU node pools on {where}")
