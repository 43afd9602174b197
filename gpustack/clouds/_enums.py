"""Checking the enum strings a backend will send, before any resource is declared.

The provider SDKs accept any string for an enum field (Azure's are `Union[str, Enum]`, OCI's plain
`str`), so a wrong value would only fail at the cloud API, halfway through `pulumi up`. Cloud modules
keep the allowed values next to their source and check the values they chose for each pool.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

from gpustack.errors import did_you_mean


@dataclasses.dataclass(frozen=True)
class Allowed:
    """The values an API field accepts, and where that is stated."""

    values: tuple[str, ...]
    source: str


# Kubernetes taint effects (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).
TAINT_EFFECTS = Allowed(("NoSchedule", "PreferNoSchedule", "NoExecute"),
                        "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/")
# Taint keys are label keys (optional DNS-subdomain prefix + '/' + name); values are label values
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
TAINT_KEY = re.compile(rf"([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}")
TAINT_VALUE = re.compile(rf"({_NAME})?")


def check_enums(values: Mapping[str, str | None], allowed: Mapping[str, Allowed], cloud: str) -> list[str]:
    """One message per value that its field does not accept."""
    problems = []
    for field, value in values.items():
        rule = allowed[field]
        if value not in rule.values:
            problems.append(f"{field} {value!r} is not accepted by {cloud}{did_you_mean(value, rule.values)}; "
                            f"allowed: {', '.join(rule.values)} ({rule.source})")
    return problems


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
