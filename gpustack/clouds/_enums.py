"""Checking the enum strings a backend will send, before any resource is declared.

The provider SDKs accept any string for an enum field (AWS, GCP and OCI type them as plain `str`,
Azure as `Union[str, Enum]`), so a typo would only fail at the cloud API, halfway through
`pulumi up`. Each cloud module lists the values its API accepts, with their source, and checks the
value it maps every pool to.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable, Mapping

from gpustack.errors import did_you_mean


@dataclasses.dataclass(frozen=True)
class Allowed:
    """The values an API field accepts, and where that is stated."""

    values: tuple[str, ...]
    source: str


@dataclasses.dataclass(frozen=True)
class EnumValue:
    """One provider argument of a pool: what it maps to, and what the cloud accepts."""

    field: str  # provider argument, e.g. "capacity_type"
    plan_value: str  # what the plan says, for messages ("" when the field is self-explanatory)
    value: str | None  # the cloud's spelling; None when the plan's value has no mapping
    allowed: Allowed | Collection[str]
    hint: str = ""  # what would have a mapping, for the message when `value` is None


def enum_problems(cloud: str, values: Iterable[EnumValue]) -> list[str]:
    """One message per value its field does not accept, or that has no mapping at all."""
    problems = []
    for v in values:
        accepted = v.allowed.values if isinstance(v.allowed, Allowed) else tuple(sorted(v.allowed))
        source = f" ({v.allowed.source})" if isinstance(v.allowed, Allowed) else ""
        context = f" (for {v.plan_value})" if v.plan_value else ""
        if v.value is None:
            problems.append(f"{v.field}: {cloud} has no value for {v.plan_value or 'this pool'}"
                            f"{'; ' + v.hint if v.hint else ''}")
        elif v.value not in accepted:
            problems.append(f"{v.field}: {v.value!r}{context} is not accepted by {cloud}"
                            f"{did_you_mean(v.value, accepted)}; allowed: {', '.join(accepted)}{source}")
    return problems


def check_enums(values: Mapping[str, str | None], allowed: Mapping[str, Allowed], cloud: str) -> list[str]:
    """`enum_problems` for a plain mapping of field -> value."""
    return enum_problems(cloud, [EnumValue(field, "", value, allowed[field]) for field, value in values.items()])


# Kubernetes taint effects (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).
TAINT_EFFECTS = Allowed(("NoSchedule", "PreferNoSchedule", "NoExecute"),
                        "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/")
# Taint keys are label keys (optional DNS-subdomain prefix + '/' + name); values are label values
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
TAINT_KEY = re.compile(rf"([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}")
TAINT_VALUE = re.compile(rf"({_NAME})?")


def check_taints(taints: Iterable[object]) -> list[str]:
    """Taints that a node could not register: bad effect, or a key or value outside the label syntax."""
    problems = []
    for taint in taints:
        key, value, effect = taint.key, taint.value, taint.effect  # type: ignore[attr-defined]
        if not TAINT_KEY.fullmatch(key):
            problems.append(f"taint key {key!r} is not a valid Kubernetes taint key ({TAINT_KEY.pattern})")
        if not TAINT_VALUE.fullmatch(value):
            problems.append(f"taint {key!r} has value {value!r}, which is not a valid Kubernetes label value")
        problems.extend(check_enums({"taint effect": effect}, {"taint effect": TAINT_EFFECTS}, "Kubernetes"))
    return problems
