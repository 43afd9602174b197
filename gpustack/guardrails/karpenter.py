"""Guardrail reader of Karpenter NodePools, whichever cloud's provider launches their nodes.

Every provider's NodePool is the same resource type (`kubernetes:karpenter.sh/v1:NodePool`); the
node class its template names (`nodeClassRef.group`) tells whose it is, so each cloud's readers list
`node_pool_type(<its Karpenter provisioner>)`, selected by that group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gpustack.clouds._enums import TAINT_EFFECTS
from gpustack.clouds.karpenter import CAPACITY_TYPE, NODEPOOL_API, KarpenterProvisioner
from gpustack.guardrails.reading import CRONJOB_SCHEDULE, Fields, PoolType, Reader, int_or_none, labels_of, taint_objects
from gpustack.guardrails.view import ON_DEMAND, RESERVED, SPOT

if TYPE_CHECKING:
    from gpustack.clouds.base import Cloud

NODE_POOL = f"kubernetes:{NODEPOOL_API}:NodePool"
NODE_CLASS_GROUP = "spec.template.spec.nodeClassRef.group"
_CAPACITIES = {"spot": SPOT, "on-demand": ON_DEMAND, "reserved": RESERVED}
# A NodePool's taints are in the Kubernetes spelling already.
_SAME_EFFECTS = {effect: effect for effect in TAINT_EFFECTS.values}


def karpenter_provisioner(cloud: Cloud, name: str) -> KarpenterProvisioner:
    """The cloud's Karpenter provisioner called `name`."""
    found = cloud.provisioner(name)
    assert isinstance(found, KarpenterProvisioner), (cloud.name, name)
    return found


def node_pool_type(provisioner: KarpenterProvisioner, reserved_how: str,
                   node_class_paths: Mapping[str, str] | None = None) -> PoolType:
    """The NodePool of `provisioner`'s provider as a pool: its requirements (instance type, capacity types:
    on-demand when unset, as Karpenter defaults), template labels and taints, limits.nodes as the
    maximum; no minimum (nodes exist for pending pods only). `reserved_how` says how a pool asks for
    reserved capacity there; `node_class_paths` where the node class sets a plan field."""
    instance_type = provisioner.instance_type_label

    def read(r: Reader) -> Fields:
        requirements = r.get("spec.template.spec.requirements", "instance_type") or ()
        r.get("spec.template.spec.requirements", "capacities")
        allowed = {str(q.get("key")): [str(v) for v in q.get("values") or ()] for q in requirements
                   if isinstance(q, Mapping) and q.get("operator") == "In"}
        types = allowed.get(instance_type) or []
        capacities = allowed.get(CAPACITY_TYPE) or ["on-demand"]
        nodes = r.get("spec.limits.nodes", "max_nodes")
        return Fields(
            instance_type=types[0] if types else None,
            capacities=frozenset() if "capacities" in r.unknown else
            frozenset(_CAPACITIES.get(c, c) for c in capacities),
            labels=labels_of(r.get("spec.template.metadata.labels", "labels")),
            taints=None if "taints" in r.unknown else taint_objects(r.get("spec.template.spec.taints", "taints"),
                                                                    _SAME_EFFECTS),
            min_nodes=0,
            max_nodes=int(nodes) if isinstance(nodes, str) and nodes.isdigit() else int_or_none(nodes),
            cloud_name=r.get("metadata.name", "cloud_name"),
        )

    requirements = "spec.template.spec.requirements"
    return PoolType(
        NODE_POOL, provisioner.cloud.name, read,
        {"instance_type": requirements, "gpu": requirements, "gpus_per_node": requirements, "capacity": requirements,
         "labels": "spec.template.metadata.labels", "taints": "spec.template.spec.taints",
         "sharing": "spec.template.metadata.labels",
         "min_nodes": "the workloads' minimum replicas (a NodePool keeps no minimum)",
         "max_nodes": "spec.limits.nodes", "cloud_name": "metadata.name", **(node_class_paths or {})},
        {SPOT: f"a requirement {CAPACITY_TYPE} In [spot]", ON_DEMAND: f"a requirement {CAPACITY_TYPE} In [on-demand]",
         RESERVED: reserved_how},
        "spec.template.spec.taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]",
        CRONJOB_SCHEDULE, provisioner=provisioner.name, selector=(NODE_CLASS_GROUP, provisioner.node_class_group))
