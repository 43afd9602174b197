"""Guardrails: one set of rules for `gpustack check` (on the plan) and the CrossGuard pack (on resources).

    view.py        PoolView, the small cloud-neutral view of a node pool every rule reads
    rules.py       the rules (RULES), each one function over views, with its config schema
    config.py      the configuration: the JSON file `pulumi preview --policy-pack-config` takes
    from_plan.py   plan pools -> views (fixes said in the spec's words)
    reading.py     the toolkit each cloud's readers (gpustack/clouds/<cloud>/readers.py) are built from
    resources.py   Pulumi resource props -> views, through the readers of every registered cloud
    schedules.py   which stack resources stop a pool out of hours
    policy_pack.py the PolicyPack (only its `main()` constructs one: that starts the policy server)

docs/guardrails.md describes each rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from gpustack.guardrails.config import Settings, settings
from gpustack.guardrails.rules import RULES, Rule
from gpustack.guardrails.view import Finding, PoolView, Violation

__all__ = ["RULES", "Finding", "PoolView", "Rule", "Settings", "Violation", "evaluate", "findings", "settings"]


def findings(rule: Rule, views: Sequence[PoolView], options: Mapping[str, object]) -> Iterable[Finding]:
    """What `rule` finds in the pools of one target or stack."""
    ready = [v for v in views if rule.applies(v)]
    if rule.scope == "stack":
        yield from rule.check(ready, options)
    else:
        for view in ready:
            yield from rule.check(view, options)


def evaluate(targets: Mapping[str, Sequence[PoolView]], config: Settings) -> list[Violation]:
    """Every violation of the active rules, target by target, in rule order."""
    out = []
    for target, views in targets.items():
        for rule in config.active():
            for found in findings(rule, views, config.options[rule.name]):
                out.append(Violation(rule.name, config.levels[rule.name], target, found.pool, found.message,
                                     found.fix, found.urn))
    return out
