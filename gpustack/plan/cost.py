"""The cost model of a target: baseline, planned, the saving of each move, the range, unit costs.

A month is 730 hours.

- Baseline: what an unoptimised estate runs: every replica (every notebook user) on whole on-demand
  GPUs of its model, always on, on the instance type that holds the replica's GPUs, CPU and memory
  for the least money per replica (a replica that needs most of a node's CPU takes the whole node).
- Planned: node-hours x the price of each pool's capacity type. Fallback pools are left out (they
  run only when spot is short; the range's high end counts them).
- The moves: sharing (packing onto shared GPUs and the pools' instance types), spot, commitments
  (a declared commitment on the reserved floors) and schedules (scheduled pools for their active
  hours, jobs for their hours_per_month, bursts for the hours they run). The cost with any subset of
  moves is defined below (`_cost`); each move's saving is its Shapley value (`gpustack.plan.attribution`),
  so none depends on an order, and the savings add up to baseline - planned to the cent.
- The baseline at used hours: the baseline with only the schedules move, i.e. the same work on whole
  on-demand GPUs, each replica only for the hours it really runs.
"""

from __future__ import annotations

import dataclasses
import functools

from gpustack.catalog import Catalog, InstanceType, dates_of
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.attribution import Moves, shapley, to_cents
from gpustack.plan.commitments import recommendations
from gpustack.plan.model import (
    Cost, CostRange, DeclaredCommitment, EnterpriseDiscount, GpuCounts, Pool, Step, TargetPlan, Warning, WorkloadCost, money,
)
from gpustack.plan.nodes import allocatable
from gpustack.plan.prices import PriceBook
from gpustack.spec.model import DEFAULT_BURST_SHARE, HOURS_PER_MONTH, Target, Workload

MOVES = ("sharing", "spot", "commitments", "schedules")


@dataclasses.dataclass(frozen=True)
class ReplicaRate:
    """USD per replica-hour on whole GPUs: on the cheapest instance type that holds the replica."""

    on_demand: float
    spot: float  # on the cheapest spot-capable type (on-demand where none is)
    reserved: float  # under the declared commitment (on-demand where none is)
    instance_type: str


def whole_gpus(workload: Workload) -> int:
    return 1 if workload.fractional else workload.gpus


def baseline_gpus(workload: Workload) -> int:
    return workload.replicas.max * whole_gpus(workload)


def _replicas_per_node(row: InstanceType, workload: Workload, provisioner: Provisioner) -> int:
    cpu, memory = allocatable(row.vcpus, row.memory_gib, provisioner.kubelet_reservation, row.name)
    slots = row.gpus // whole_gpus(workload)
    if workload.cpu:
        slots = min(slots, int((cpu + 1e-9) // workload.cpu))
    if workload.memory_gib:
        slots = min(slots, int((memory + 1e-9) // workload.memory_gib))
    return slots


def replica_rate(workload: Workload, rows: tuple[InstanceType, ...], prices: PriceBook,
                 provisioner: Provisioner) -> ReplicaRate:
    fitting = [(r, k) for r in rows if r.gpu == workload.gpu
               and (k := _replicas_per_node(r, workload, provisioner)) > 0]
    if not fitting:  # no type holds it whole (the planner reports that): price the GPUs alone
        fitting = [(r, max(1, r.gpus // whole_gpus(workload))) for r in rows if r.gpu == workload.gpu]

    def per_replica(price: float, row: InstanceType, k: int) -> tuple[float, int, str]:
        return price / k, row.gpus, row.name

    on_demand = min(per_replica(prices.on_demand(r).usd_per_node_hour, r, k) for r, k in fitting)
    spot_rows = [(r, k, s) for r, k in fitting
                 if provisioner.spot_available(r.name) is None and (s := prices.spot(r)) is not None]
    spot = min((per_replica(s.usd_per_node_hour, r, k) for r, k, s in spot_rows), default=on_demand)
    row, k = next((r, k) for r, k in fitting if r.name == on_demand[2])
    return ReplicaRate(on_demand[0], spot[0], prices.reserved(row).usd_per_node_hour / k, row.name)


def _rates(workloads: list[Workload], rows: tuple[InstanceType, ...], prices: PriceBook,
           provisioner: Provisioner) -> dict[str, ReplicaRate]:
    """`replica_rate` of each workload, computed once per what it depends on (GPU model, whole GPUs,
    CPU, memory): a platform's thousands of workloads have a few dozen such shapes."""
    by_shape: dict[tuple[object, ...], ReplicaRate] = {}
    out = {}
    for workload in workloads:
        shape = (workload.gpu, whole_gpus(workload), workload.cpu, workload.memory_gib)
        if shape not in by_shape:
            by_shape[shape] = replica_rate(workload, rows, prices, provisioner)
        out[workload.name] = by_shape[shape]
    return out


def summarise(target: Target, pools: tuple[Pool, ...], workloads: list[Workload], rows: tuple[InstanceType, ...],
              prices: PriceBook, catalog: Catalog, provisioner: Provisioner, warnings: tuple[Warning, ...],
              notes: tuple[str, ...]) -> TargetPlan:
    active = [w for w in workloads if w.replicas.max]
    rates = _rates(active, rows, prices, provisioner)
    counted = [p for p in pools if p.role != "fallback"]
    row_of = {r.name: r for r in rows}

    @functools.cache
    def cost(moves: Moves) -> float:
        return _cost(moves, counted, rates, prices, row_of)

    baselines = {w.name: w.replicas.max * rates[w.name].on_demand * HOURS_PER_MONTH for w in active}
    baseline = sum(baselines.values())
    planned = sum(p.monthly_cost_usd for p in counted)
    savings = shapley(MOVES, lambda moves: baseline if not moves else planned if len(moves) == len(MOVES)
                      else cost(moves))
    cents = to_cents([savings[m] for m in MOVES], round(money(baseline) * 100) - round(money(planned) * 100))
    steps = tuple(Step(m, c / 100) for m, c in zip(MOVES, cents))
    declared = prices.commitment
    cost_summary = Cost(
        money(baseline), money(planned),
        round(100 * (money(baseline) - money(planned)) / money(baseline), 1) if baseline else 0.0, steps,
        baseline_at_used_hours_monthly_usd=money(cost(frozenset({"schedules"}))) if active else 0.0,
        range=_range(pools, {w.name: w for w in active}, planned),
        commitment_recommendations=recommendations(pools, row_of, prices, catalog, target.cloud),
        commitment=DeclaredCommitment(declared.instrument, declared.term, declared.discount, declared.prices,
                                      declared.scope) if declared else None,
        discount=_enterprise_discount(active, counted, rows, prices, provisioner, planned),
    )
    gpus = _gpu_counts(active, counted)
    notes = notes + _fixed_shares_note(gpus)
    # The dates of the rows the pools are priced from (of the region's rows when there is no pool).
    prices_as_of = (dates_of(row_of[p.instance_type] for p in pools) if pools
                    else catalog.as_of(target.cloud, target.region))
    return TargetPlan(
        name=target.name, cloud=target.cloud, region=target.region, cluster=target.cluster,
        settings=target.settings, pools=pools, gpus=gpus, cost=cost_summary,
        workloads=tuple(_unit_costs(active, counted, baselines)),
        warnings=warnings, notes=notes, prices_as_of=prices_as_of,
        commitment_discount=prices.commitment_discount,
    )


def _gpu_counts(active: list[Workload], counted: list[Pool]) -> GpuCounts:
    return GpuCounts(
        baseline=sum(baseline_gpus(w) for w in active),
        lower_bound=sum(p.gpus.lower_bound for p in counted),
        required=sum(p.gpus.required for p in counted),
        provisioned=sum(p.gpus.provisioned for p in counted),
        requested=sum(pl.replicas * pl.requested_share for p in counted for pl in p.placements),
        requested_lower_bound=sum(p.gpus.requested_lower_bound for p in counted),
    )


def _fixed_shares_note(gpus: GpuCounts) -> tuple[str, ...]:
    """What rounding the replicas to fixed shares costs the target, when it costs a GPU or more."""
    loss = gpus.lower_bound - gpus.requested_lower_bound
    if loss <= 0:
        return ()
    return (f"Fixed shares cost up to {loss} GPU(s): the replicas ask for {gpus.requested:.2f} GPUs in all (at "
            f"least {gpus.requested_lower_bound} GPUs, pool by pool), but time-slicing and MPS give each replica "
            f"1/R of a GPU (a whole GPU above 1/2) and MIG a fixed profile, so any packing of the planned shares "
            f"needs at least {gpus.lower_bound}. The pools' notes say where.",)


def _enterprise_discount(workloads: list[Workload], pools: list[Pool], rows: tuple[InstanceType, ...],
                         prices: PriceBook, provisioner: Provisioner, planned: float) -> EnterpriseDiscount | None:
    """The discount line: the baseline and the pools at list prices, and what the discount takes off."""
    if not prices.discount:
        return None
    at_list = prices.at_list
    baseline = sum(w.replicas.max * replica_rate(w, rows, at_list, provisioner).on_demand * HOURS_PER_MONTH
                   for w in workloads)
    listed = sum((p.price.list_usd_per_node_hour or p.price.usd_per_node_hour) * p.max_nodes * p.hours_per_month
                 for p in pools)
    cents = round(money(listed) * 100) - round(money(planned) * 100)
    return EnterpriseDiscount(prices.discount, baseline, listed, cents / 100)


def _cost(moves: Moves, pools: list[Pool], rates: dict[str, ReplicaRate], prices: PriceBook,
          row_of: dict[str, InstanceType]) -> float:
    """The monthly cost with only `moves` made.

    With sharing, the pools as planned: a spot pool at its spot price only with the spot move, a
    reserved floor at its committed price only with the commitments move (else on-demand), and each
    pool's planned hours only with the schedules move (else always on). Without sharing, every replica
    of the pools on whole GPUs at its `ReplicaRate` for the pool's capacity type, under the same rules.
    """
    always = "schedules" not in moves
    total = 0.0
    for pool in pools:
        # flex-start is interruptible capacity sold below on-demand (the spot move); a block is capacity
        # bought ahead for a term (the commitments move).
        discounted = ((pool.capacity in ("spot", "flex") and "spot" in moves)
                      or (pool.capacity in ("reserved", "block") and "commitments" in moves))
        if "sharing" in moves:
            price = pool.price.usd_per_node_hour if discounted else prices.on_demand(row_of[pool.instance_type]) \
                .usd_per_node_hour
            total += price * pool.max_nodes * (HOURS_PER_MONTH if always else pool.hours_per_month)
            continue
        for placement in pool.placements:
            rate = rates[placement.workload]
            if pool.capacity in ("block", "flex"):  # the replica's on-demand rate at the pool's own discount
                on_demand = prices.on_demand(row_of[pool.instance_type]).usd_per_node_hour
                hourly = rate.on_demand * (pool.price.usd_per_node_hour / on_demand if discounted else 1.0)
            else:
                hourly = (rate.spot if pool.capacity == "spot" else rate.reserved) if discounted else rate.on_demand
            total += placement.replicas * hourly * (HOURS_PER_MONTH if always else placement.hours_per_month)
    return total


def _range(pools: tuple[Pool, ...], workloads: dict[str, Workload], planned: float) -> CostRange:
    """low: bursts as used; high: bursts at peak all month, fallbacks instead of their spot pools."""
    low = high = planned
    backed = {w for p in pools if p.role == "fallback" for w in p.workloads}
    shares = []
    for pool in pools:
        hourly = pool.price.usd_per_node_hour
        if pool.role == "burst":
            share = _burst_share(pool, workloads)
            shares.append(share)
            used = pool.min_nodes + (pool.max_nodes - pool.min_nodes) * share
            low -= pool.monthly_cost_usd - hourly * pool.hours_per_month * used
            high += hourly * pool.max_nodes * (HOURS_PER_MONTH - pool.hours_per_month)
        elif pool.role == "fallback":
            high += hourly * pool.standby_node_hours
        elif pool.capacity in ("spot", "flex") and backed & set(pool.workloads):
            high -= pool.monthly_cost_usd  # not billed while its fallback carries the hours
    assumptions = []
    if shares:
        listed = ", ".join(sorted({f"{s:g}" for s in shares}))
        assumptions.append(f"low: each burst pool runs its nodes above min_nodes for {listed} of its hours "
                           f"(workloads' burst_share, default {DEFAULT_BURST_SHARE:g})")
        assumptions.append("high: each burst pool at its peak all month")
    if backed:
        assumptions.append("high: every fallback pool runs all of its spot pools' hours at on-demand (no spot "
                           "capacity all month)")
    if any(p.block is not None for p in pools):
        assumptions.append("low and high: each capacity block's upfront fee, paid whether its nodes run or not; high: "
                           "its workloads' hours on the fallback as well")
    return CostRange(money(min(low, planned)), money(max(high, planned)), tuple(assumptions))


def _burst_share(pool: Pool, workloads: dict[str, Workload]) -> float:
    """The pool's expected share of its peak: its workloads' burst_share, weighted by GPU share."""
    weights = [(pl.replicas * pl.gpu_share, workloads[pl.workload].burst_share) for pl in pool.placements]
    total = sum(w for w, _ in weights)
    if not total:
        return DEFAULT_BURST_SHARE
    return sum(w * (DEFAULT_BURST_SHARE if s is None else s) for w, s in weights) / total


def served_hours(workload: Workload) -> float:
    """The hours a month an inference workload serves requests: all month while a floor runs, else the
    hours it runs (hours_per_month prices the burst above the floor)."""
    if workload.replicas.min:
        return HOURS_PER_MONTH
    return workload.hours_per_month or HOURS_PER_MONTH


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
        per_1k = monthly / (w.requests_per_hour * served_hours(w) / 1000) if w.requests_per_hour else None
        out.append(WorkloadCost(w.name, w.kind, monthly, baseline.get(w.name, 0.0), per_run, per_1k))
    return out
