"""What a cloud does with a workload, as data its bundle keeps beside its facts (`<bundle>/cases.py`,
`CASES`): a workload on the cloud's example target, and the pool it compiles to or the located problem it
is refused with. One shared test (tests/test_cloud_cases.py) plans every case of every registered cloud,
so a cloud's behaviour is read in one small table, and a new cloud brings its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class PoolCase:
    about: str  # what the case shows, in words
    workload: Mapping[str, object]  # the workload's keys (its name is `w`)
    capacity: str = ""  # the pool looked at: the first of this capacity ("": the first pool)
    instance_type: str = ""  # the pool's instance type ("": not checked)
    # fields of the pool's `compiled` (as in the plan JSON) and their values
    compiled: Mapping[str, object] = dataclasses.field(default_factory=dict)
    refused_at: str = ""  # a refused workload: the field path of its problem
    refused: str = ""  # ... and how the problem's message begins
