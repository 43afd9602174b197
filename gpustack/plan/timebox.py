"""Pools on capacity bought for a fixed window (`capacity: block`, `capacity: flex`; docs/capacity.md).

A block pool is the block: as many nodes as the block has instances, billed once, up front, whether
they run or not, and gone from shortly before the block ends. A flex pool is priced at on-demand less
flex-start's discount (the spec's, else the cloud's published figure, which the plan names). Both are
backed by an on-demand fallback pool, the ladder's next rung (`gpustack.plan.ladder`), so a job that
loses its nodes restarts from its checkpoint there.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import re

from gpustack.catalog import InstanceType
from gpustack.clouds.base import TIMEBOXED_FEATURES, Cloud
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.model import BlockPlan, FlexPlan, Pool, Price
from gpustack.plan.prices import PriceBook
from gpustack.spec.model import HOURS_PER_MONTH, CapacityBlock, FlexStart, Spec, Target, Workload
from gpustack.spec.timebox import block_end


def gap(workload: Workload, provisioner: Provisioner) -> str | None:
    """Why the target cannot give the workload its time-boxed capacity (None: it can, or none is asked)."""
    feature = TIMEBOXED_FEATURES.get(workload.capacity or "")
    if feature is None:
        return None
    found = provisioner.gap(feature)
    return None if found is None else f"{provisioner.cloud.display_name} has no {feature.value}: {found}"


def block_problems(block: CapacityBlock, target: Target, rows: tuple[InstanceType, ...], gpu: str,
                   cloud: Cloud) -> list[tuple[str, str]]:
    """(key under `block`, message) for a block that cannot be the target's: what the cloud sells (its
    durations, instances per block, ids), its zone, its instance type."""
    found = []
    terms = cloud.block_terms
    assert terms is not None  # a cloud that sells blocks states their terms
    if block.days not in terms.days:
        below = max((d for d in terms.days if d < block.days), default=terms.days[0])
        above = min((d for d in terms.days if d > block.days), default=terms.days[-1])
        found.append(("days", f"{block.days} days is not a duration {terms.seller} sells: {terms.days_rule} "
                              f"({terms.source}); the nearest are {below} and {above}"))
    if block.instances > terms.max_instances:
        found.append(("instances", f"{block.instances} instances; a block holds at most {terms.max_instances} "
                                   f"({terms.source})"))
    for key, value, pattern in (("reservation_id", block.reservation_id, terms.reservation_id),
                                ("offering_id", block.offering_id, terms.offering_id)):
        if value is not None and not re.fullmatch(pattern, value):
            found.append((key, f"{value!r} is not in the format {terms.seller} gives a {key.replace('_', ' ')}: "
                              f"{pattern}"))
    if not block.zone.startswith(target.region):
        found.append(("zone", f"{block.zone} is not a zone of {target.region} (target {target.name!r}): a block "
                              "lives in one zone of the target's region"))
    row = next((r for r in rows if r.name == block.instance_type), None)
    if row is None or row.gpu != gpu:
        offered = sorted(r.name for r in rows if r.gpu == gpu)
        what = f"has {row.gpu} GPUs, not {gpu}" if row else f"is not in the catalog for {target.region}"
        found.append(("instance_type", f"{block.instance_type} {what}; {gpu} types there: {', '.join(offered) or 'none'}"))
    return found


def flex_problem(flex: FlexStart, cloud: Cloud) -> str | None:
    """Why the cloud cannot run flex-start nodes this long (None: it can)."""
    longest = cloud.flex_max_run_hours
    if longest is None or flex.max_run_hours <= longest[0]:
        return None
    return f"{flex.max_run_hours} hours; a flex-start node runs at most {longest[0]} hours ({longest[1]})"


def pool_tag(workload: Workload) -> str:
    """What tells one block's (or flex setting's) pool from another's: part of the pool's name."""
    if workload.capacity == "block" and workload.block is not None:
        return "b" + hashlib.sha256(workload.block.identity.encode()).hexdigest()[:6]
    if workload.capacity == "flex" and workload.flex is not None:
        return f"x{workload.flex.max_run_hours}" + ("q" if workload.flex.queued else "")
    return ""


def block_hours(block: CapacityBlock) -> float:
    """The block's hours counted in a month: all of them, up to a month (a longer block spreads its fee)."""
    return min(HOURS_PER_MONTH, float(block.hours))


def priced(pool: Pool, spec: Spec, cloud: Cloud, provisioner: Provisioner,
           prices: PriceBook) -> tuple[Pool, list[tuple[Workload, str, str]]]:
    """The pool with its window's price, size and notes; (workload, key under its block, message) problems."""
    workloads = [spec.workload(name) for name in pool.workloads]
    if pool.capacity == "block" and pool.role != "fallback":
        return _block_pool(pool, workloads, cloud, provisioner)
    if pool.capacity == "flex" and pool.role != "fallback":
        return _flex_pool(pool, workloads, cloud, prices), []
    return pool, []


def _block_pool(pool: Pool, workloads: list[Workload], cloud: Cloud,
                provisioner: Provisioner) -> tuple[Pool, list[tuple[Workload, str, str]]]:
    owner = workloads[0]
    block = owner.block
    assert block is not None
    problems = []
    if pool.max_nodes > block.instances:
        problems.append((owner, "instances", f"the block has {block.instances} {block.instance_type} instance(s); "
                                             f"the pool's replicas need {pool.max_nodes} at peak: buy a larger block "
                                             "or plan fewer replicas"))
    assert cloud.block_terms is not None
    reclaim, reclaim_source = cloud.block_terms.reclaim_minutes, cloud.block_terms.reclaim_source
    drain, drain_source = provisioner.block_drain or (None, "")
    end = block_end(block)
    hours = block_hours(block)
    hourly = block.upfront / (block.instances * block.hours)
    basis = ("the offering's upfront fee, as given in the spec" if block.upfront_usd is not None
             else "declared price per instance-hour (block.usd_per_instance_hour)")
    plan = BlockPlan(
        zone=block.zone, reservation_id=block.reservation_id, offering_id=block.offering_id, start=block.start,
        end=end.strftime("%Y-%m-%dT%H:%M:%SZ"), days=block.days, instances=block.instances,
        upfront_usd=block.upfront, price_basis=basis, refundable=False, nodes_leave_minutes_before_end=reclaim,
        drain_minutes_before_reclaim=drain, source="; ".join(s for s in (reclaim_source, drain_source) if s))
    leave = end - datetime.timedelta(minutes=reclaim + (drain or 0))
    spread = (f" spread over the {block.days} days it lasts" if block.hours > HOURS_PER_MONTH else "")
    drained = (f"; the provisioner drains them {drain} minutes before that ({drain_source})" if drain else "")
    notes = (
        f"Capacity block {block.identity} in {block.zone}: {block.instances} x {block.instance_type} from "
        f"{block.start} to {plan.end}, ${block.upfront:,.2f} paid up front and never refunded ({basis}){spread}; "
        f"it is billed whether or not its nodes run.",
        f"Nodes go away {reclaim} minutes before the block ends ({reclaim_source}){drained}: from {leave:%Y-%m-%d %H:%M} "
        "UTC the job's pods are evicted and restart from their last checkpoint on the ladder's next rung (the "
        "on-demand fallback pool).",
    )
    why = (f"a capacity block held {block.start} to {plan.end}, paid up front; its nodes go away {reclaim} minutes "
           "before the end, so the job checkpoints")
    nodes = block.instances
    return dataclasses.replace(
        pool, max_nodes=nodes, min_nodes=0, price=Price(round(hourly, 6), f"block of {block.identity}: {basis}"),
        hours_per_month=hours, monthly_cost_usd=hourly * nodes * hours,
        gpus=dataclasses.replace(pool.gpus, provisioned=nodes * pool.gpus_per_node),
        reason=f"{pool.reason}; {why}", notes=pool.notes + notes, zones=(block.zone,), block=plan), problems


def flex_discount(prices: PriceBook, cloud: Cloud) -> tuple[float, str, str]:
    """(fraction off on-demand, basis in words, source) of flex-start capacity on `cloud`."""
    declared = prices.pricing.flex_discount
    if declared is not None:
        return declared, f"declared in the spec (pricing.flex_discount {declared:g})", "spec pricing.flex_discount"
    assert cloud.flex_discount is not None  # a cloud that sells flex-start states its discount
    fraction, words, source, as_of = cloud.flex_discount
    return fraction, f"{words}, as of {as_of}: set pricing.flex_discount to your machine type's price", source


def _flex_pool(pool: Pool, workloads: list[Workload], cloud: Cloud, prices: PriceBook) -> Pool:
    flex = workloads[0].flex
    assert flex is not None
    discount, basis, source = flex_discount(prices, cloud)
    on_demand = pool.price.usd_per_node_hour
    hourly = round(on_demand * (1 - discount), 6)
    node_hours = pool.max_nodes * pool.hours_per_month
    plan = FlexPlan(flex.max_run_hours * 3600, flex.queued, discount, basis, source)
    queued = (" through queued provisioning: a request gets all of its nodes at once or waits"
              if flex.queued else "")
    notes = (f"Flex-start nodes{queued}, each removed after {flex.max_run_hours} hours: a job longer than that "
             "restarts from its checkpoint; estimated at on-demand less "
             f"{discount:.0%} ({basis}; {source}); the range's high end counts the fallback at on-demand.",)
    return dataclasses.replace(
        pool, price=Price(hourly, f"on-demand ({pool.price.source}) x (1 - {discount:g}): flex-start, {basis}"),
        monthly_cost_usd=hourly * node_hours, notes=pool.notes + notes, flex=plan)
