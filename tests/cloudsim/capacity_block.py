"""A capacity block's end, as EC2 and Karpenter handle it, and a checkpointed job moving down its ladder.

What the model follows:
- EC2 terminates the instances of a Capacity Block from 30 minutes before the block's end
  (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html); the plan carries it
  as `BlockPlan.nodes_leave_minutes_before_end`.
- Karpenter v1.14.1 marks a capacity reservation `expiring` from 40 minutes before its end
  (aws/karpenter-provider-aws, pkg/apis/v1/ec2nodeclass_status.go, `CapacityReservationFromEC2`,
  `capacityReservationExpirationPeriod = time.Minute * 40`), and the `capacityreservation.expiration`
  controller (pkg/controllers/capacityreservation/expiration/controller.go, `Reconcile`, requeued every
  minute) deletes the NodeClaims whose reservation is expiring: their nodes drain 10 minutes before
  EC2 reclaims them (the plan's `drain_minutes_before_reclaim`).
- Without a drain (managed node groups), the pods go when EC2 terminates the instance.
- A job restarts from its last checkpoint on the next rung of its ladder (the plan's `Ladder`), after
  `restart_minutes` (a new node, the image, the checkpoint read): a parameter of the test, not a fact.
"""

from __future__ import annotations

import dataclasses
import datetime

from gpustack.plan.model import BlockPlan, Ladder

RECONCILE = datetime.timedelta(minutes=1)  # the expiration controller's requeue


def _at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclasses.dataclass
class Event:
    at: datetime.datetime
    what: str
    pool: str


@dataclasses.dataclass
class JobRun:
    events: list[Event]
    done_at: datetime.datetime | None
    lost_minutes: float  # work redone after the move (since the last checkpoint)
    pools: list[str]  # where the job ran, in order


def node_end(block: BlockPlan) -> tuple[datetime.datetime, str]:
    """When the block's nodes stop carrying pods, and who stops them."""
    reclaim = _at(block.end) - datetime.timedelta(minutes=block.nodes_leave_minutes_before_end)
    if block.drain_minutes_before_reclaim is None:
        return reclaim, "ec2-terminated"
    expiring = reclaim - datetime.timedelta(minutes=block.drain_minutes_before_reclaim)
    # The controller sees the state on its next reconcile (at most a minute later).
    return expiring, "karpenter-nodeclaim-deleted"


def run_job(ladder: Ladder, blocks: dict[str, BlockPlan], work_minutes: float, checkpoint_minutes: float | None,
            restart_minutes: float) -> JobRun:
    """A job of `work_minutes` that starts when its block does, checkpointing every `checkpoint_minutes`
    (None: never), moved down the ladder when its block's nodes go."""
    first = ladder.rungs[0]
    block = blocks[first.pool]
    now = _at(block.start)
    events = [Event(now, "started", first.pool)]
    stop, why = node_end(block)
    done = 0.0
    available = (stop - now).total_seconds() / 60
    if available >= work_minutes:
        return JobRun(events + [Event(now + datetime.timedelta(minutes=work_minutes), "finished", first.pool)],
                      now + datetime.timedelta(minutes=work_minutes), 0.0, [first.pool])
    done = available
    saved = 0.0 if checkpoint_minutes is None else (done // checkpoint_minutes) * checkpoint_minutes
    events.append(Event(stop, why, first.pool))
    nxt = ladder.rungs[1]
    resumed = stop + datetime.timedelta(minutes=restart_minutes)
    events.append(Event(resumed, "resumed from checkpoint" if saved else "restarted from scratch", nxt.pool))
    left = work_minutes - saved
    finished = resumed + datetime.timedelta(minutes=left)
    events.append(Event(finished, "finished", nxt.pool))
    return JobRun(events, finished, done - saved, [first.pool, nxt.pool])
