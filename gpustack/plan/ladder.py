"""The capacity ladder of each training and fine-tuning workload: the capacities its pods may land on,
in the order the target's autoscaler tries them (`gpustack.plan.fallback.priority_order`: a block
paid for first, then flex-start, then spot, then on-demand, a fallback after what it backs), each
priced as if it carried all of the workload's hours. The worst case is what is paid up front anyway
plus the dearest hourly rung carrying everything: the target's cost range covers it.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpustack.plan.fallback import priority_order
from gpustack.plan.model import Ladder, Pool, Rung
from gpustack.spec.model import JOB_KINDS, Workload

UPFRONT = "upfront, non-refundable"
HOURLY = "hourly"


def _shares(pool: Pool) -> dict[str, float]:
    """Each workload's share of the pool's GPUs at peak (computed once per pool: a pool carries
    thousands of workloads on a large platform, and a scan per workload was quadratic)."""
    weights = {p.workload: p.replicas * p.gpu_share for p in pool.placements}
    total = sum(weights.values())
    return {w: weight / total if total else 0.0 for w, weight in weights.items()}


def _when(pool: Pool) -> str:
    if pool.block is not None:
        return (f"from {pool.block.start} until {pool.block.nodes_leave_minutes_before_end} minutes before "
                f"{pool.block.end}")
    if pool.flex is not None:
        return f"when flex-start capacity is granted, up to {pool.flex.max_run_seconds // 3600} hours a node"
    if pool.role == "fallback":
        return "when the rungs above cannot give it nodes"
    if pool.capacity == "spot":
        return "while spot capacity lasts"
    return "always"


def _rung(pool: Pool, share: float) -> Rung:
    if pool.block is not None:
        monthly, billing = pool.monthly_cost_usd * share, UPFRONT
    else:
        node_hours = pool.standby_node_hours if pool.role == "fallback" else pool.max_nodes * pool.hours_per_month
        monthly, billing = pool.price.usd_per_node_hour * node_hours * share, HOURLY
    return Rung(pool.capacity, pool.name, pool.role, pool.price.usd_per_node_hour, monthly, billing,
                pool.price.source, _when(pool))


def ladders(pools: Sequence[Pool], workloads: Sequence[Workload]) -> tuple[Ladder, ...]:
    carriers: dict[str, list[Pool]] = {}  # workload -> the pools that carry it, in the pools' order
    for pool in pools:
        for name in dict.fromkeys(pool.workloads):
            carriers.setdefault(name, []).append(pool)
    shares: dict[str, dict[str, float]] = {}  # pool name -> workload -> share, for the pools asked about
    out = []
    for workload in sorted(workloads, key=lambda w: w.name):
        if workload.kind not in JOB_KINDS:
            continue
        carrying = sorted(carriers.get(workload.name, ()), key=priority_order)
        if not carrying:
            continue
        for pool in carrying:
            if pool.name not in shares:
                shares[pool.name] = _shares(pool)
        rungs = tuple(_rung(p, shares[p.name].get(workload.name, 0.0)) for p in carrying)
        upfront = sum(r.monthly_usd for r in rungs if r.billing == UPFRONT)
        hourly = max((r.monthly_usd for r in rungs if r.billing == HOURLY), default=0.0)
        out.append(Ladder(workload.name, workload.kind, rungs, upfront + hourly))
    return tuple(out)
