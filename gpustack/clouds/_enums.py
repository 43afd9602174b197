"""Checking the enum strings a backend will send, before anything is declared.

The AWS, GCP and OCI provider SDKs type these fields as plain strings and send any value to the
cloud unchecked, so a typo would surface only as a failed `pulumi up`. Each cloud module lists the
values its API accepts, with their source, and checks what every pool maps to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gpustack.errors import did_you_mean


@dataclasses.dataclass(frozen=True)
class EnumValue:
    """One provider argument of a pool: the plan's value, what it maps to, what the cloud accepts."""

    field: str  # provider argument, e.g. "capacity_type"
    plan_value: str  # what the plan says, for messages
    value: str | None  # the cloud's spelling; None when the plan value has no mapping
    allowed: frozenset[str]
    hint: str = ""  # what would have a mapping, for the message when `value` is None


def enum_problems(cloud: str, values: Iterable[EnumValue]) -> list[str]:
    problems = []
    for v in values:
        if v.value is None:
            problems.append(f"{v.field}: {cloud} has no value for {v.plan_value}{'; ' + v.hint if v.hint else ''}")
        elif v.value not in v.allowed:
            problems.append(f"{v.field}: {v.value!r} (for {v.plan_value}) is not accepted by {cloud}; allowed: "
                            f"{', '.join(sorted(v.allowed))}{did_you_mean(v.value, v.allowed)}")
    return problems
