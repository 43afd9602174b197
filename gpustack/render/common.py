"""What every in-cluster object shares: gpustack's labels, names that fit, metadata."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.plan.pools import POOL_LABEL, WORKLOAD_LABEL

PART_OF = ("app.kubernetes.io/part-of", "gpustack")
TARGET_LABEL = "gpustack.dev/target"
__all__ = ["WORKLOAD_LABEL"]


def object_labels(plan: Plan, target: TargetPlan, pool: Pool | None = None) -> dict[str, str]:
    """gpustack's labels plus the attribution labels (the pool's when the object belongs to one)."""
    labels = dict(plan.labels) if pool is None else pool.attribution
    labels[PART_OF[0]] = PART_OF[1]
    labels[TARGET_LABEL] = target.name
    if pool is not None:
        labels[POOL_LABEL] = pool.name
    return dict(sorted(labels.items()))


def metadata(name: str, labels: dict[str, str], namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels
    return meta


def fitted_name(prefix: str, name: str, max_len: int) -> str:
    """`<prefix>-<name>` when it fits in `max_len`, else shortened with a hash of the full name.

    The hash is of `name` itself, so the result never changes while the name does not, and two
    long names sharing a prefix still differ.
    """
    full = f"{prefix}-{name}"
    if len(full) <= max_len:
        return full
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    head = full[: max_len - len(digest) - 1].rstrip("-.")
    return f"{head}-{digest}"


def prometheus_label(key: str) -> str:
    """A Kubernetes label key as a Prometheus label name (what kube-state-metrics does too)."""
    name = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return name if re.match(r"[a-zA-Z_]", name) else f"_{name}"
