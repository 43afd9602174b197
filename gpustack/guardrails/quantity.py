"""Kubernetes resource quantities and what a pod asks of a node, as the API server and scheduler read them.

Quantities follow apimachinery's grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go,
`ParseQuantity`): a signed decimal number and one suffix, binary (Ki Mi Gi Ti Pi Ei), decimal (n u m
k M G T P E) or an exponent (e3, E-2). Values are exact fractions, never floats, so "100m" is 1/10; a
value finer than the API server keeps (1n) is rounded up as it rounds it (`kept`), and `imprecise` says where.

A pod's effective request of a resource (what the scheduler fits, KEP-753 sidecars included:
https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#resource-sharing-within-containers)
is the larger of the sum over its containers plus its sidecar init containers (`restartPolicy:
Always`) and, for each regular init container, its request plus the sidecars started before it; a
container without a request takes its limit (the API server defaults one to the other).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

_QUANTITY = re.compile(r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?[0-9]{1,3}))?")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


# "No matter which of the three exponent forms is used, no quantity may represent a number greater than
# 2^63-1 in magnitude" (k8s.io/apimachinery/pkg/api/resource/quantity.go, the Quantity doc comment).
MAX_QUANTITY = Fraction(2**63 - 1)
# What the API server keeps of a finer quantity: ParseQuantity "rounds non-zero values up to the minimum
# representable value" (`amount.Round(amount, Nano.infScale(), inf.RoundUp)`, away from zero, in
# k8s.io/apimachinery/pkg/api/resource/quantity.go). The doc comment above it still says "nor may it have more
# than 3 decimal places ... 0.1m will rounded up to 1m"; the code keeps nine, 1n, and gpustack follows the code.
PRECISION = Fraction(1, 10**9)
PRECISION_SOURCE = "k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity"


def kept(value: Fraction) -> Fraction:
    """`value` as the API server stores it: rounded away from zero to a whole number of nanounits."""
    units = math.ceil(abs(value) / PRECISION)
    return units * PRECISION if value >= 0 else -units * PRECISION


def parse_written(value: object) -> Fraction | None:
    """The quantity's exact value as written, or None when the API server would refuse it."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value) if isinstance(value, str) or abs(value) <= MAX_QUANTITY else ""
    match = _QUANTITY.fullmatch(text) if len(text) <= 64 else None
    if match is None:
        return None
    number = Fraction(match["number"])
    if (suffix := match["suffix"]) in _BINARY:
        number *= Fraction(1024) ** _BINARY[suffix]
    elif suffix is not None:
        number *= Fraction(10) ** _DECIMAL[suffix]
    elif match["exponent"] is not None:
        number *= Fraction(10) ** int(match["exponent"])
    return number if abs(number) <= MAX_QUANTITY else None


def parse_quantity(value: object) -> Fraction | None:
    """The quantity's value as the API server keeps it (`kept`), or None when it would refuse it."""
    written = parse_written(value)
    return None if written is None else kept(written)


def imprecise(pod_spec: Mapping[str, Any], resource: str) -> list[tuple[int, str, Any, Fraction]]:
    """Requests and limits of `resource` finer than the API server keeps: (container index, as in
    `effective_request`, field, the value as written, what the API server keeps)."""
    found = []
    containers, inits = (_list(pod_spec.get(field)) for field in ("containers", "initContainers"))
    indexed = [*enumerate(containers), *((-1 - i, c) for i, c in enumerate(inits))]
    for index, container in indexed:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        for field in ("requests", "limits"):
            values = resources.get(field) if isinstance(resources, Mapping) else None
            if not isinstance(values, Mapping) or resource not in values:
                continue
            written = parse_written(values[resource])
            if written is not None and kept(written) != written:
                found.append((index, field, values[resource], kept(written)))
    return found


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _asked(container: Mapping[str, Any], resource: str) -> tuple[Any, str] | None:
    """The container's request of `resource` (or its limit, which the request defaults to) and its field."""
    resources = container.get("resources")
    resources = resources if isinstance(resources, Mapping) else {}
    for field in ("requests", "limits"):
        values = resources.get(field)
        if isinstance(values, Mapping) and resource in values:
            return values[resource], field
    return None


def effective_request(pod_spec: Mapping[str, Any], resource: str) -> tuple[Fraction, int, str] | None:
    """What the pod asks of a node for `resource`, with the container index and field of its first request
    (index into `containers`, or -1 - i for init container i); None when nothing asks for it.
    A quantity the API server would refuse raises ValueError with its text."""

    def amount(container: Any) -> Fraction:
        found = _asked(container, resource) if isinstance(container, Mapping) else None
        if found is None:
            return Fraction(0)
        parsed = parse_quantity(found[0])
        if parsed is None or parsed < 0:
            raise ValueError(f"{found[0]!r} is not a Kubernetes quantity")
        return parsed

    containers, inits = (_list(pod_spec.get(field)) for field in ("containers", "initContainers"))
    first = next(((i, f[1]) for i, c in enumerate(containers) if isinstance(c, Mapping) and (f := _asked(c, resource))),
                 None) or next(((-1 - i, f[1]) for i, c in enumerate(inits)
                                if isinstance(c, Mapping) and (f := _asked(c, resource))), None)
    if first is None:
        return None
    sidecars = Fraction(0)
    peak_of_inits = Fraction(0)
    for init in inits:
        if isinstance(init, Mapping) and init.get("restartPolicy") == "Always":
            sidecars += amount(init)
        else:
            peak_of_inits = max(peak_of_inits, sidecars + amount(init))
    running = sum((amount(c) for c in containers), Fraction(0)) + sidecars
    return max(running, peak_of_inits), first[0], first[1]
