"""What every guardrail sees: a small, cloud-neutral view of one node pool, and what a rule reports.

A `PoolView` is built either from a plan pool (`gpustack check`) or from the inputs of a Pulumi
resource (the policy pack); the rules read nothing else. Fields a source cannot know are None
(or empty), and a rule that needs such a field says nothing rather than guessing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

from gpustack.plan.model import Taint  # the view and the plan share one taint type
from gpustack.plan.pools import CHECKPOINTING_LABEL, GPU_TAINT, KIND_LABEL, POOL_LABEL

__all__ = ["CHECKPOINTING_LABEL", "KIND_LABEL", "POOL_LABEL", "Taint"]

SPOT, ON_DEMAND, RESERVED = "spot", "on-demand", "reserved"
GPU_TAINT_KEY = GPU_TAINT.key


class _Unknown:
    """A value the engine does not know yet (during `pulumi preview`, an output of another resource)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class Spelling(Protocol):
    """How to say a fix in the vocabulary of the source a view was built from (spec or resource)."""

    @property
    def sees_previous(self) -> bool: ...  # True when the source compares with the previous version (a baseline plan)

    def capacity(self, view: PoolView, capacity: str) -> str: ...

    def checkpointing(self, view: PoolView) -> str | None: ...

    def labels(self, view: PoolView, keys: list[str]) -> str: ...

    def gpu_taint(self, view: PoolView) -> str: ...

    def scale_to_zero(self, view: PoolView) -> str: ...

    def schedule(self, view: PoolView) -> str: ...

    def max_nodes(self, view: PoolView) -> str: ...

    def field(self, view: PoolView, plan_field: str) -> str: ...

    def availability(self, view: PoolView) -> str: ...


@dataclasses.dataclass(frozen=True)
class PoolView:
    target: str  # the plan target (check) or the Pulumi stack (pack)
    name: str  # what people call the pool: the plan pool name or the resource name
    cloud: str  # registry name of the cloud, for catalog look-ups
    spelling: Spelling
    instance_type: str | None
    is_gpu: bool
    gpus_per_node: int | None  # None: the instance type is not in the catalog
    usd_per_node_hour: float | None  # for the pool's capacity type; None: unknown
    price_note: str  # where the price comes from, for messages
    capacities: frozenset[str]  # spot | on-demand | reserved; empty when unknown
    kind: str | None  # gpustack.dev/kind
    labels: Mapping[str, str] | None  # node labels; None when unknown
    taints: tuple[Taint, ...] | None  # None when unknown
    min_nodes: int | None
    max_nodes: int | None
    checkpointing: bool | None  # gpustack.dev/checkpointing; None when absent
    scheduled: bool | None  # has an auto-stop schedule; None until known
    workloads: tuple[str, ...] = ()  # known for plan pools only
    cloud_name: str | None = None  # the node-pool name on the cloud
    pool_label: str | None = None  # gpustack.dev/pool
    urn: str = ""
    resource_type: str = ""  # the Pulumi type token (pack only)
    resource_id: str | None = None  # the cloud's id of the pool, once it exists (stack policies)
    # The names a cloud schedule scales the pool by (what the cloud's reader finds behind it), when known.
    scaled_names: tuple[str, ...] = ()
    protected: bool = False
    ignored_changes: frozenset[str] = frozenset()
    # check with a baseline: why this pool replaces a node pool of the baseline (`gpustack diff`'s verdicts)
    replacements: tuple[str, ...] = ()
    # check with a baseline: why this pool's nodes drift (replaced one by one within its disruption budgets)
    drifts: tuple[str, ...] = ()
    unknown: frozenset[str] = frozenset()  # fields whose value the engine does not know yet (preview)
    # plan pools: label key -> {workload: value} where the pool's workloads disagree (no node label then)
    label_conflicts: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    provisioner: str = ""  # how the pool is provisioned ("": the cloud's default)
    # plan pools: the zones the nodes kept at min_nodes are spread over (reservations or an availability
    # spread), 1 when they may all sit in one; None when unknown (resources say nothing of the pods' spread)
    floor_zones: int | None = None

    @property
    def spot_only(self) -> bool:
        return self.capacities == frozenset({SPOT})

    @property
    def gpus(self) -> int | None:
        """GPUs at the pool's maximum size; None when unknown."""
        if self.gpus_per_node is None or self.max_nodes is None:
            return None
        return self.gpus_per_node * self.max_nodes


@dataclasses.dataclass(frozen=True)
class Finding:
    """One violation as a rule states it; the caller adds the rule, target and level."""

    pool: str | None  # None: the whole target / stack
    message: str
    fix: str
    urn: str = ""


@dataclasses.dataclass(frozen=True)
class Violation:
    rule: str
    level: str  # mandatory | advisory
    target: str
    pool: str | None
    message: str
    fix: str
    urn: str = ""

    def text(self) -> str:
        where = f"{self.target}, pool {self.pool}" if self.pool else f"{self.target} (whole stack)"
        return f"[{self.rule}] {where}: {self.message}. Fix: {self.fix}"

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "level": self.level, "target": self.target, "pool": self.pool,
                "message": self.message, "fix": self.fix}
