"""`capacity: block` and `capacity: flex`: capacity bought for a fixed window (docs/capacity.md).

`block:` describes a capacity block the user holds (its reservation id) or asks the Pulumi program to
buy (an offering id); `flex:` tunes flex-start VMs. Which clouds sell which, and in what sizes, is the
clouds' business (their capability gaps and `Cloud.block_terms`, checked when planning); this module
checks the shape.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from gpustack.spec.model import JOB_KINDS, CapacityBlock, FlexStart
from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

BLOCK_KEYS = ("zone", "instance_type", "instances", "start", "days")
BLOCK_OPTIONAL = ("reservation_id", "offering_id", "upfront_usd", "usd_per_instance_hour")
FLEX_OPTIONAL = ("max_run_hours", "queued")

# The shape only: what a cloud sells (durations, instances per block, id formats, the longest flex-start
# run) is its own fact (`Cloud.block_terms`, `Cloud.flex_max_run_hours`), checked per target when planning.
MAX_DAYS = 366
MAX_INSTANCES = 10_000
MAX_RUN_HOURS = 8760
DEFAULT_RUN_HOURS = 7 * 24  # the longest flex-start run any cloud sells today; a cloud may allow less
_ID = re.compile(r"[a-z]{2,4}-[0-9a-z]{1,32}")
_ZONE = re.compile(r"[a-z0-9]([-a-z0-9]{0,62}[a-z0-9])?")
_INSTANCE_TYPE = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_.]{0,62}")
_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?Z")


def read_block(reader: Reader, path: Path, value: Any, kind: Any, checkpointing: bool) -> CapacityBlock | Any:
    """The checked `block:` mapping of a workload with `capacity: block`."""
    value = reader.mapping(path, value, required=BLOCK_KEYS, optional=BLOCK_OPTIONAL,
                           what="a capacity block: {zone, instance_type, instances, start, days, reservation_id "
                                "or offering_id, upfront_usd or usd_per_instance_hour}")
    if value is BAD or any(k not in value for k in BLOCK_KEYS):
        return BAD
    before = len(reader.problems)
    zone = reader.string(path + ("zone",), value["zone"], pattern=_ZONE, rule="a zone name, e.g. <region>a")
    instance_type = reader.string(path + ("instance_type",), value["instance_type"], pattern=_INSTANCE_TYPE,
                                  rule="an instance type of the catalog")
    instances = reader.integer(path + ("instances",), value["instances"], minimum=1, maximum=MAX_INSTANCES)
    days = reader.integer(path + ("days",), value["days"], minimum=1, maximum=MAX_DAYS)
    start = _start(reader, path + ("start",), value["start"])
    reservation = _optional_id(reader, path, value, "reservation_id")
    offering = _optional_id(reader, path, value, "offering_id")
    if ("reservation_id" in value) == ("offering_id" in value):
        reader.problem(path, "give exactly one of reservation_id (the block you hold) or offering_id (an offering "
                             "the Pulumi program buys: paid up front, never refunded, and `pulumi destroy` does not "
                             "cancel it)")
    if ("upfront_usd" in value) == ("usd_per_instance_hour" in value):
        reader.problem(path, "give exactly one of upfront_usd (the offering's upfront fee, as the cloud quotes it) "
                             "or usd_per_instance_hour (a declared price)")
    upfront = (reader.number(path + ("upfront_usd",), value["upfront_usd"], minimum=0, exclusive_minimum=True,
                             maximum=1e9) if "upfront_usd" in value else None)
    hourly = (reader.number(path + ("usd_per_instance_hour",), value["usd_per_instance_hour"], minimum=0,
                            exclusive_minimum=True, maximum=10_000) if "usd_per_instance_hour" in value else None)
    if kind in JOB_KINDS and not checkpointing:
        reader.problem(path, f"a capacity block ends on a fixed date and its nodes go away shortly before the end "
                             f"(30 minutes before the end, where blocks are sold today): {kind} there must resume "
                             "from a checkpoint; set checkpointing: true")
    if len(reader.problems) > before:
        return BAD
    return CapacityBlock(zone, instance_type, instances, start, days, reservation, offering, upfront, hourly)


def _start(reader: Reader, path: Path, value: Any) -> str | Any:
    text = reader.string(path, value, pattern=_START, rule="an ISO 8601 UTC time, e.g. 2026-12-07T11:30:00Z")
    if text is BAD:
        return BAD
    try:
        datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return reader.problem(path, f"{text!r} is not a date and time that exists")
    return text


def block_end(block: CapacityBlock) -> datetime.datetime:
    start = datetime.datetime.fromisoformat(block.start.replace("Z", "+00:00"))
    return start + datetime.timedelta(days=block.days)


def _optional_id(reader: Reader, path: Path, value: dict[str, Any], key: str) -> str | Any | None:
    if key not in value:
        return None
    return reader.string(path + (key,), value[key], pattern=_ID, rule="a cloud id: a short prefix, '-', letters "
                                                                      "and digits, e.g. cr-0123456789abcdef0")


def read_flex(reader: Reader, path: Path, value: Any) -> FlexStart | Any:
    """The checked `flex:` mapping (all keys optional) of a workload with `capacity: flex`."""
    value = reader.mapping(path, value, optional=FLEX_OPTIONAL, what="{max_run_hours: 168, queued: false}")
    if value is BAD:
        return BAD
    hours = (reader.integer(path + ("max_run_hours",), value["max_run_hours"], minimum=1, maximum=MAX_RUN_HOURS)
             if "max_run_hours" in value else DEFAULT_RUN_HOURS)
    queued = reader.boolean(path + ("queued",), value["queued"]) if "queued" in value else False
    if hours is BAD or queued is BAD:
        return BAD
    return FlexStart(hours, queued)


def check_timebox(reader: Reader, field: dict[str, Path], value: dict[str, Any], kind: Any, capacity: Any,
                  checkpointing: bool) -> tuple[CapacityBlock | None, FlexStart | None]:
    """`block:` and `flex:` against the workload's kind and capacity; (block, flex) as read."""
    if capacity in ("block", "flex") and kind and kind not in JOB_KINDS:
        reader.problem(field["capacity"], f"capacity: {capacity} is for training and fine-tuning, whose jobs resume "
                                          f"from a checkpoint when the window ends, not {kind}")
    block = flex = None
    if capacity == "block" and "block" not in value:
        reader.problem(field["capacity"], "capacity: block needs block: {zone, instance_type, instances, start, days, "
                                          "reservation_id or offering_id, upfront_usd or usd_per_instance_hour}")
    if "block" in value:
        if capacity != "block":
            reader.problem(field["block"], "block: describes a capacity block; it needs capacity: block")
        else:
            block = read_block(reader, field["block"], value["block"], kind, checkpointing)
    if "flex" in value:
        if capacity != "flex":
            reader.problem(field["flex"], "flex: tunes flex-start capacity; it needs capacity: flex")
        else:
            flex = read_flex(reader, field["flex"], value["flex"])
    elif capacity == "flex":
        flex = FlexStart(DEFAULT_RUN_HOURS, False)
    if capacity == "flex" and kind in JOB_KINDS and not checkpointing:
        reader.problem(field["capacity"], f"flex-start nodes stop after their run duration: {kind} there must "
                                          "resume from a checkpoint; set checkpointing: true")
    return (None if block is BAD else block), (None if flex is BAD else flex)
