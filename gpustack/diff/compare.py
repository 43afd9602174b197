"""Compare two plans: pools added, removed, resized, updated, and above all replaced.

A pool's identity is its plan name (the node label gpustack.dev/pool). The name follows the pool's
kind, GPU, sharing mode, capacity type, instance type and schedule, so changing any of them gives a
new pool: the old one is removed and a new one created for the same workloads. That is reported as
the replacement it is (the workloads move, the old pool drains). A pool that keeps its name is
replaced when a field changes that its provisioner cannot update in place
(`Provisioner.replacing_changes`, per-cloud data with sources), and drifted when the provisioner updates
the pool but replaces its nodes one by one within the pool's disruption budgets
(`Provisioner.drifting_changes`: Karpenter-like provisioners). Where pools are priorities of a class
(`Provisioner.changes_apply_to_new_nodes`), a change updates the class and only new nodes follow it; a new MIG layout on a cloud without native MIG partitioning is a
repartition by the NVIDIA MIG manager, not a new node pool.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpustack.clouds import CLOUDS
from gpustack.clouds.provisioner import DRIFTS_NODES, REPLACES_POOL, NodeChange, Provisioner
from gpustack.diff.model import CHANGE_KINDS, FieldChange, PlanDiff, PoolChange, TargetDiff
from gpustack.output.table import nodes, schedule
from gpustack.plan.model import Plan, Pool, TargetPlan

# The fields that make a pool's identity (and name); compared between a removed and an added pool.
IDENTITY_FIELDS = ("gpu", "instance_type", "gpus_per_node", "capacity", "sharing.mode", "sharing.replicas",
                   "sharing.mig", "schedule")
# Compared for pools that keep their name, in this order; "nodes" and "GPUs" make a resize.
SAME_NAME_FIELDS = (*IDENTITY_FIELDS, "cloud_name", "nodes", "GPUs", "runs", "price", "workloads", "labels", "taints",
                    "cluster", "region")
SIZE_FIELDS = ("nodes", "GPUs")
MIG_MANAGER = ("the NVIDIA MIG manager applies the new layout (nvidia.com/mig.config) node by node: GPU "
               "workloads on a node are stopped while its GPUs are repartitioned, and on cloud VMs the node "
               "may reboot (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html)")
RENAMED = ("its kind, GPU, sharing, capacity type, instance type or schedule changes, and with it the pool's "
           "identity: a new node pool is created, the workloads move to it and the old pool drains")
JOINS = ("its kind, GPU, sharing, capacity type, instance type or schedule changes, and with it the pool's "
         "identity: the workloads move to a pool that already exists and the old pool drains")
IN_PLACE_REPLACED = "the cloud cannot change this in place: it creates the node pool anew and drains the old nodes"
REGION = "a node pool lives in its cluster's region"
CLOUD_NAME = ("the name is the node pool's identity on the cloud: a new name is a new node pool, and the old "
              "one is deleted")
PROVISIONER = "another provisioner declares other resources for the pool"
DRIFTED = ("the pool is updated in place and its nodes drift: the provisioner replaces them one by one, each "
           "replacement started before the old node drains, as fast as the pool's disruption budgets allow "
           "(a reserved floor's Drifted budget is 0: its nodes keep serving, drifted, until replaced by hand, "
           "as its floor-upgrade warning says)")


def diff_plans(old: Plan, new: Plan, old_label: str, new_label: str) -> PlanDiff:
    olds = {t.name: t for t in old.targets}
    news = {t.name: t for t in new.targets}
    targets = [_target(olds.get(name), news.get(name)) for name in sorted(olds.keys() | news.keys())]
    return PlanDiff(old_label, new_label, tuple(targets))


def pool_fields(target: TargetPlan, pool: Pool) -> dict[str, str]:
    """The comparable fields of a pool, as text people read ('' when a field does not apply)."""
    s = pool.sharing
    window = pool.schedule
    fields = {
        "gpu": pool.gpu,
        "cloud_name": pool.cloud_name,
        "instance_type": pool.instance_type,
        "gpus_per_node": str(pool.gpus_per_node),
        "capacity": pool.capacity + (" (fallback)" if pool.role == "fallback" else ""),
        "sharing.mode": s.mode,
        "sharing.replicas": str(s.replicas) if s.by_clients else "",
        "sharing.mig": " ".join(f"{g.gpus}x[" + "+".join(f"{c}x{p}" for p, c in g.layout) + "]" for g in s.mig),
        "schedule": f"{window.days} {window.hours} {window.timezone}" if window else "",
        "nodes": nodes(pool),
        "GPUs": str(pool.gpus.provisioned),
        "runs": schedule(pool),
        "price": f"${pool.price.usd_per_node_hour:,.4f}/node-hour",
        "workloads": ", ".join(pool.workloads),
        "labels": ", ".join(f"{k}={v}" for k, v in pool.labels),
        "taints": ", ".join(f"{t.key}={t.value}:{t.effect}" for t in pool.taints),
        "cluster": target.cluster,
        "region": target.region,
    }
    for key, value in target.settings:
        fields[f"settings.{key}"] = ", ".join(value) if isinstance(value, (list, tuple)) else str(value)
    fields["settings.provisioner"] = target.provisioner  # the default, when the spec names none
    fields["settings.gpu_allocation"] = target.gpu_allocation  # likewise
    return fields


def node_change(provisioner: Provisioner, field: str, old: str, new: str) -> NodeChange | None:
    """What `provisioner` does to a pool's nodes when `field` changes from `old` to `new` (None: in place)."""
    if field == "region":
        return NodeChange(REPLACES_POOL, REGION)
    if field == "cloud_name":
        return NodeChange(REPLACES_POOL, CLOUD_NAME)
    if field == "settings.provisioner":
        return NodeChange(REPLACES_POOL, PROVISIONER)
    return provisioner.node_change(field, old, new)


def _target(old: TargetPlan | None, new: TargetPlan | None) -> TargetDiff:
    some = new or old
    assert some is not None
    cloud = CLOUDS.get(some.cloud).provisioner(some.provisioner)
    if old is None or new is None:
        status = "added" if old is None else "removed"
        pools = tuple(_whole(p, "added" if old is None else "removed") for p in some.pools)
        return TargetDiff(some.name, some.cloud, status, old.cost.planned_monthly_usd if old else None,
                          new.cost.planned_monthly_usd if new else None, old.gpus.provisioned if old else None,
                          new.gpus.provisioned if new else None, _ordered(pools),
                          tuple(w.message for w in new.warnings) if new else ())
    changes = _pool_changes(old, new, cloud)
    status = "changed" if changes or _cost_differs(old, new) else "unchanged"
    known = {w.message for w in old.warnings}
    return TargetDiff(new.name, new.cloud, status, old.cost.planned_monthly_usd, new.cost.planned_monthly_usd,
                      old.gpus.provisioned, new.gpus.provisioned, _ordered(changes),
                      tuple(w.message for w in new.warnings if w.message not in known))


def _cost_differs(old: TargetPlan, new: TargetPlan) -> bool:
    return round(old.cost.planned_monthly_usd, 2) != round(new.cost.planned_monthly_usd, 2)


def _pool_changes(old: TargetPlan, new: TargetPlan, cloud: Provisioner) -> list[PoolChange]:
    olds = {p.name: p for p in old.pools}
    news = {p.name: p for p in new.pools}
    changes = [c for name in sorted(olds.keys() & news.keys())
               if (c := _same_name(old, new, olds[name], news[name], cloud)) is not None]
    added = [news[n] for n in sorted(news.keys() - olds.keys())]
    taken_over: set[str] = set()
    for pool in (olds[n] for n in sorted(olds.keys() - news.keys())):
        holders = [p for p in new.pools if set(p.workloads) & set(pool.workloads)]
        successor = _successor(pool, added) or _successor(pool, holders)
        if successor is None:  # its workloads left the target
            changes.append(_whole(pool, "removed"))
            continue
        taken_over.add(successor.name)
        moves_to = tuple(sorted(p.name for p in holders))
        changes.append(_renamed(old, new, pool, successor, moves_to, cloud))
    changes.extend(_whole(p, "added") for p in added if p.name not in taken_over)
    return changes


def _successor(pool: Pool, added: Iterable[Pool]) -> Pool | None:
    """The new pool that takes over `pool`'s workloads: same kind and role first, then most shared workloads."""
    mine = set(pool.workloads)
    candidates = [p for p in added if mine & set(p.workloads)]
    if not candidates:
        return None
    return min(candidates, key=lambda p: (p.kind != pool.kind, p.role != pool.role,
                                         -len(mine & set(p.workloads)), p.name))


def _same_name(old_t: TargetPlan, new_t: TargetPlan, old: Pool, new: Pool, cloud: Provisioner) -> PoolChange | None:
    before, after = pool_fields(old_t, old), pool_fields(new_t, new)
    keys = [*SAME_NAME_FIELDS, *sorted(k for k in before.keys() | after.keys() if k.startswith("settings."))]
    fields = tuple(_field(cloud, key, before.get(key, ""), after.get(key, "")) for key in keys
                   if before.get(key, "") != after.get(key, ""))
    costs_differ = round(old.monthly_cost_usd, 2) != round(new.monthly_cost_usd, 2)
    if not fields and not costs_differ:
        return None
    names = {f.field for f in fields}
    if any(f.replaces for f in fields):
        change, why, successor = "replaced", IN_PLACE_REPLACED, new
    elif any(f.drifts for f in fields):
        change, why, successor = "drifted", DRIFTED, None
    elif "sharing.mig" in names:
        change, why, successor = "repartitioned", MIG_MANAGER, None
    elif names & set(SIZE_FIELDS):
        change, why, successor = "resized", "the cloud updates the node pool's size in place", None
    else:
        change, why, successor = "updated", "the cloud updates the node pool in place", None
    if cloud.changes_apply_to_new_nodes and change in ("updated", "resized"):
        why = cloud.changes_apply_to_new_nodes
    return PoolChange(change, old.name, old.cloud_name, new.kind, new.workloads, why, fields,
                      successor.name if successor else None, successor.cloud_name if successor else None,
                      old_monthly_usd=old.monthly_cost_usd, new_monthly_usd=new.monthly_cost_usd)


def _renamed(old_t: TargetPlan, new_t: TargetPlan, old: Pool, new: Pool, moves_to: tuple[str, ...],
             cloud: Provisioner) -> PoolChange:
    before, after = pool_fields(old_t, old), pool_fields(new_t, new)
    fields = tuple(_field(cloud, key, before[key], after[key]) for key in IDENTITY_FIELDS if before[key] != after[key])
    existing = new.name in {p.name for p in old_t.pools}
    why = JOINS if existing else RENAMED
    if cloud.changes_apply_to_new_nodes:
        why = f"the pool's priority is replaced by another: {cloud.changes_apply_to_new_nodes}"
    return PoolChange("replaced", old.name, old.cloud_name, old.kind, old.workloads, why,
                      fields, new.name, new.cloud_name, moves_to, old_monthly_usd=old.monthly_cost_usd,
                      new_monthly_usd=None if existing else new.monthly_cost_usd, nodes=nodes(old),
                      gpus=old.gpus.provisioned)


def _field(cloud: Provisioner, key: str, old: str, new: str) -> FieldChange:
    if key == "labels":
        old, new = _changed_pairs(old, new)
    found = node_change(cloud, key, old, new)
    if found is None:
        return FieldChange(key, old, new)
    if found.kind == DRIFTS_NODES:
        return FieldChange(key, old, new, drifts=found.why)
    return FieldChange(key, old, new, found.why)


def _changed_pairs(old: str, new: str) -> tuple[str, str]:
    """Only the labels that differ, so a long label list stays readable."""
    before = dict(item.split("=", 1) for item in old.split(", ") if item)
    after = dict(item.split("=", 1) for item in new.split(", ") if item)
    keys = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return (", ".join(f"{k}={before[k]}" for k in keys if k in before),
            ", ".join(f"{k}={after[k]}" for k in keys if k in after))


def _whole(pool: Pool, change: str) -> PoolChange:
    added = change == "added"
    why = "a new node pool" if added else "its workloads left the target: the node pool is deleted and its nodes drain"
    return PoolChange(change, pool.name, pool.cloud_name, pool.kind, pool.workloads, why,
                      old_monthly_usd=None if added else pool.monthly_cost_usd,
                      new_monthly_usd=pool.monthly_cost_usd if added else None,
                      nodes=nodes(pool), gpus=pool.gpus.provisioned)


def _ordered(changes: Iterable[PoolChange]) -> tuple[PoolChange, ...]:
    return tuple(sorted(changes, key=lambda c: (CHANGE_KINDS.index(c.change), c.name)))
