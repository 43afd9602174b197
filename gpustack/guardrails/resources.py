"""Pulumi resources as pool views: one small reader per resource type, keyed by its type token.

Each cloud's readers live in its bundle (`gpustack/clouds/<cloud>/readers.py`, built from
`gpustack.guardrails.reading`) and return the neutral fields of a `PoolView`. Everything specific to
a resource type (where a field lives, how to spell a fix) is data in its `PoolType`; the rules never
see a type token.
Any stack's node pools are read, not only gpustack's: a pool is a GPU pool when the catalog lists
its instance type, or when the resource itself says so (accelerators, a GPU shape, a MIG profile,
the nvidia.com/gpu taint or a gpustack.dev/kind label).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable

from gpustack.clouds import CLOUDS
from gpustack.guardrails.instances import lookup
from gpustack.guardrails.reading import PoolType, Props, Reader
from gpustack.guardrails.view import CHECKPOINTING_LABEL, GPU_TAINT_KEY, KIND_LABEL, POOL_LABEL, PoolView

BoundsReader = Callable[[Props], "dict[str, tuple[int, int]] | None"]



def _readers() -> tuple[dict[str, PoolType], dict[str, BoundsReader]]:
    return _readers_of(CLOUDS.generation)


@functools.cache
def _readers_of(generation: int) -> tuple[dict[str, PoolType], dict[str, BoundsReader]]:
    """Every cloud's node-pool types and autoscaler readers, from the `readers` module of its bundle
    (once per set of registered clouds)."""
    del generation
    pool_types: dict[str, PoolType] = {}
    autoscalers: dict[str, BoundsReader] = {}
    for cloud in CLOUDS:
        readers = cloud.part("readers")
        pool_types.update({t.token: t for t in readers.POOL_TYPES if t.token not in pool_types or not t.selector})
        autoscalers.update(readers.AUTOSCALER_TYPES)
    return pool_types, autoscalers


@functools.cache
def _selected_of(generation: int) -> dict[str, tuple[PoolType, ...]]:
    """Types whose token several clouds share (Karpenter's NodePool), by token, each with its selector."""
    del generation
    found: dict[str, list[PoolType]] = {}
    for cloud in CLOUDS:
        for kind in cloud.part("readers").POOL_TYPES:
            if kind.selector:
                found.setdefault(kind.token, []).append(kind)
    return {token: tuple(kinds) for token, kinds in found.items()}


def _pool_type(resource_type: str, props: Props) -> PoolType | None:
    """The type of a resource: where clouds share its token, the one whose selector the props match."""
    for kind in _selected_of(CLOUDS.generation).get(resource_type, ()):
        assert kind.selector is not None
        path, value = kind.selector
        if Reader(props).get(path, "selector") == value:
            return kind
    return pool_types().get(resource_type)


def pool_types() -> dict[str, PoolType]:
    """Node-pool resource types by type token, over every registered cloud."""
    return _readers()[0]


def autoscaler_bounds(resource_type: str, props: Props) -> dict[str, tuple[int, int]] | None:
    """Node-pool id -> (min, max) from an autoscaler resource; None when it sets none, {} when unknown."""
    read = _readers()[1].get(resource_type)
    return None if read is None else read(props)


def with_bounds(views: list[PoolView], bounds: list[dict[str, tuple[int, int]]]) -> list[PoolView]:
    """Views whose pool an autoscaler of the stack bounds get those bounds; while an autoscaler's
    bounds are unknown, the maximum of the pools it may bound is unknown too."""
    known = {pool_id: pair for found in bounds for pool_id, pair in found.items()}
    pending = any(not found for found in bounds)
    types = pool_types()
    out = []
    for view in views:
        if view.resource_id and view.resource_id in known:
            low, high = known[view.resource_id]
            view = dataclasses.replace(view, min_nodes=low, max_nodes=high)
        elif pending and view.resource_type in types and types[view.resource_type].bounded_by:
            view = dataclasses.replace(view, max_nodes=None, unknown=view.unknown | {"max_nodes"})
        out.append(view)
    return out


@dataclasses.dataclass(frozen=True)
class ResourceSpelling:
    """Fixes said in the words of one resource type."""

    kind: PoolType
    sees_previous: bool = False

    def capacity(self, view: PoolView, capacity: str) -> str:
        return f"{capacity} capacity ({self.kind.capacity_values[capacity]})"

    def checkpointing(self, view: PoolView) -> str | None:
        return f"label it {CHECKPOINTING_LABEL}=true ({self.kind.paths['labels']})"

    def labels(self, view: PoolView, keys: list[str]) -> str:
        return f"add the node label{'s' if len(keys) > 1 else ''} {', '.join(k + '=<value>' for k in keys)} " \
               f"({self.kind.paths['labels']})"

    def gpu_taint(self, view: PoolView) -> str:
        return f"declare the taint: {self.kind.gpu_taint}"

    def scale_to_zero(self, view: PoolView) -> str:
        return f"set {self.kind.paths['min_nodes']} to 0"

    def schedule(self, view: PoolView) -> str:
        return f"add an auto-stop schedule: {self.kind.schedule}"

    def max_nodes(self, view: PoolView) -> str:
        return f"{view.name}: {self.kind.paths['max_nodes']}"

    def field(self, view: PoolView, plan_field: str) -> str:
        return self.kind.paths.get(plan_field, plan_field)

    def availability(self, view: PoolView) -> str:
        return "spread the floor over zones: one reservation and one node group per zone, or a zonal pool"


def stack_of(urn: str) -> str:
    """The stack named in a URN (urn:pulumi:<stack>::<project>::<type>::<name>)."""
    head = urn.split("::", 1)[0]
    return head.rsplit(":", 1)[-1] if head.startswith("urn:pulumi:") else head or "stack"


def pool_view(resource_type: str, props: Props, urn: str = "", name: str = "", provider_props: Props | None = None,
              protected: bool = False, ignored_changes: Iterable[str] = ()) -> PoolView | None:
    """The pool view of a resource, or None when the type is not a node pool gpustack knows."""
    kind = _pool_type(resource_type, props)
    if kind is None:
        return None
    reader = Reader(props)
    fields = kind.read(reader)
    region = fields.region or _provider_region(provider_props)
    facts = lookup(kind.cloud, fields.instance_type, fields.capacities, region) if fields.catalog_applies else None
    labels = fields.labels
    taints = fields.taints or ()
    marker = fields.gpu_marker or any(t.key == GPU_TAINT_KEY for t in taints) or bool(labels and labels.get(KIND_LABEL))
    checkpointing = (labels or {}).get(CHECKPOINTING_LABEL)
    return PoolView(
        target=stack_of(urn), name=name or fields.cloud_name or resource_type, cloud=kind.cloud,
        spelling=ResourceSpelling(kind), instance_type=fields.instance_type,
        is_gpu=bool(facts and facts.gpus) or marker,
        gpus_per_node=fields.gpus_declared or (facts.gpus if facts else None),
        usd_per_node_hour=facts.usd_per_node_hour if facts else None,
        price_note=facts.note if facts else "instance type not in the catalog",
        capacities=fields.capacities, kind=(labels or {}).get(KIND_LABEL), labels=labels, taints=fields.taints,
        min_nodes=fields.min_nodes, max_nodes=fields.max_nodes,
        checkpointing=None if checkpointing is None else checkpointing == "true",
        scheduled=None, cloud_name=fields.cloud_name, pool_label=(labels or {}).get(POOL_LABEL), urn=urn,
        resource_type=resource_type, scaled_names=fields.scaled_names, resource_id=fields.resource_id, protected=protected, ignored_changes=frozenset(ignored_changes),
        unknown=frozenset(reader.unknown), provisioner=kind.provisioner,
    )


def _provider_region(provider_props: Props | None) -> str | None:
    if not provider_props:
        return None
    for key in ("region", "location"):
        value = provider_props.get(key)
        if isinstance(value, str):
            return value
    return None
