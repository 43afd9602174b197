"""The cost model of a target: baseline, planned, the saving of each step, unit costs.

A month is 730 hours. Baseline: one whole on-demand GPU of the workload's model per replica (per
notebook user), always on, at the cheapest on-demand price per GPU of that model in the region.
Planned: node-hours x price per capacity type. The steps are applied in this order, each priced
with the ones before it, so they add up to baseline minus planned:

1. sharing: the pools as packed, all on-demand and always on, against the baseline (this also
   carries the instance choice and the rounding to whole nodes);
2. spot: spot pools at spot prices;
3. commitments: reserved pools at the commitment discount;
4. schedules: scheduled pools for their active hours and jobs for their hours_per_month.
"""

from __future__ import annotations

from gpustack.catalog import Catalog, InstanceType, dates_of
from gpustack.plan.model import Cost, GpuCounts, Pool, Step, TargetPlan, Warning, WorkloadCost, money
from gpustack.plan.prices import PriceBook
from gpustack.spec.model import HOURS_PER_MONTH, Target, Workload



def baseline_gpus(workload: Workload) -> int:
    return workload.replicas.max * (1 if workload.fractional else workload.gpus)


def cheapest_gpu_hour(rows: tuple[InstanceType, ...], gpu: str, prices: PriceBook) -> float:
    return min(prices.on_demand(r).usd_per_node_hour / r.gpus for r in rows if r.gpu == gpu)


def summarise(target: Target, pools: tuple[Pool, ...], workloads: list[Workload],
              rows: tuple[InstanceType, ...], prices: PriceBook, catalog: Catalog, warnings: tuple[Warning, ...],
              notes: tuple[str, ...]) -> TargetPlan:
    active = [w for w in workloads if w.replicas.max]
    baseline_by_workload = {w.name: baseline_gpus(w) * cheapest_gpu_hour(rows, w.gpu, prices) * HOURS_PER_MONTH
                            for w in active}
    baseline = sum(baseline_by_workload.values())
    counted = [p for p in pools if p.role != "fallback"]
    row_of = {r.name: r for r in rows}
    all_on_demand = all_spot = all_committed = 0.0
    for pool in counted:
        row = row_of[pool.instance_type]
        on_demand = prices.on_demand(row).usd_per_node_hour
        always = pool.max_nodes * HOURS_PER_MONTH
        all_on_demand += always * on_demand
        all_spot += always * (pool.price.usd_per_node_hour if pool.capacity == "spot" else on_demand)
        all_committed += always * pool.price.usd_per_node_hour
    planned = sum(p.monthly_cost_usd for p in counted)
    steps = _steps(baseline, [all_on_demand, all_spot, all_committed], planned)
    cost = Cost(money(baseline), money(planned),
                round(100 * (money(baseline) - money(planned)) / money(baseline), 1) if baseline else 0.0, steps)
    gpus = GpuCounts(
        baseline=sum(baseline_gpus(w) for w in active),
        lower_bound=sum(p.gpus.lower_bound for p in counted),
        required=sum(p.gpus.required for p in counted),
        provisioned=sum(p.gpus.provisioned for p in counted),
        requested=sum(pl.replicas * pl.requested_share for p in counted for pl in p.placements),
        requested_lower_bound=sum(p.gpus.requested_lower_bound for p in counted),
    )
    loss = gpus.lower_bound - gpus.requested_lower_bound
    if loss > 0:
        notes = notes + (
            f"Fixed shares cost up to {loss} GPU(s): the replicas ask for {gpus.requested:.2f} GPUs in all (at "
            f"least {gpus.requested_lower_bound} GPUs, pool by pool), but time-slicing and MPS give each replica "
            f"1/R of a GPU (a whole GPU above 1/2) and MIG a fixed profile, so any packing of the planned shares "
            f"needs at least {gpus.lower_bound}. The pools' notes say where.",)
    # The dates of the rows the pools are priced from (of the region's rows when there is no pool).
    prices_as_of = (dates_of(row_of[p.instance_type] for p in pools) if pools
                    else catalog.as_of(target.cloud, target.region))
    return TargetPlan(
        name=target.name, cloud=target.cloud, region=target.region, cluster=target.cluster,
        settings=target.settings, pools=pools, gpus=gpus, cost=cost,
        workloads=tuple(_unit_costs(active, counted, baseline_by_workload)),
        warnings=warnings, notes=notes, prices_as_of=prices_as_of,
        commitment_discount=prices.commitment_discount,
    )


def _steps(baseline: float, levels: list[float], planned: float) -> tuple[Step, ...]:
    """Rounded to cents so the steps add up exactly to the rounded baseline minus planned."""
    points = [money(baseline)] + [money(v) for v in levels] + [money(planned)]
    names = ("sharing", "spot", "commitments", "schedules")
    return tuple(Step(name, money(points[i] - points[i + 1])) for i, name in enumerate(names))


def _unit_costs(workloads: list[Workload], pools: list[Pool], baseline: dict[str, float]) -> list[WorkloadCost]:
    # A pool's cost is split over its workloads by GPU share x replicas x hours.
    share: dict[str, float] = {}
    for pool in pools:
        weights = {p.workload: p.gpu_share * p.replicas * p.hours_per_month for p in pool.placements}
        total = sum(weights.values())
        for name, weight in weights.items():
            share[name] = share.get(name, 0.0) + (pool.monthly_cost_usd * weight / total if total else 0.0)
    out = []
    for w in workloads:
        monthly = share.get(w.name, 0.0)
        per_run = monthly / w.runs_per_month if w.runs_per_month else None
        per_1k = None
        if w.requests_per_hour:
            hours = w.hours_per_month or HOURS_PER_MONTH
            per_1k = monthly / (w.requests_per_hour * hours / 1000)
        out.append(WorkloadCost(w.name, w.kind, monthly, baseline.get(w.name, 0.0), per_run, per_1k))
    return out

