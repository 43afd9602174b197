"""A behavioural model of KEDA scaling one ScaledObject, for tests: each poll reads the triggers, decides
activity, scales to and from zero; above zero the HPA KEDA made sets the replica count.

Inputs are the rendered ScaledObject (its triggers, formula, cooldown, bounds) and, for a prometheus
trigger, a function giving the query's value at a time (what Prometheus would answer; the query itself is
judged by promtool in tests/test_keda.py). Every rule names the source it follows: kedacore/keda at tag
v2.20.2 (commit 68a5b5028f35b22d50597c69819ab32c4e92f21a), and kubernetes/kubernetes for the HPA.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from test_autostop_schedules import _days  # a cron day-of-week field as a set of days (0 = Sunday)

Query = Callable[[datetime.datetime], float]


def next_fire(cron: str, after: datetime.datetime, zone: str) -> datetime.datetime:
    """robfig/cron's Schedule.Next for 'M H * * DOW' in the zone: the first matching minute after `after`."""
    minute, hour, dom, month, dow = cron.split()
    assert dom == month == "*" and re.fullmatch(r"[0-9]+", minute) and re.fullmatch(r"[0-9]+", hour)
    local = after.astimezone(ZoneInfo(zone))
    for day in range(9):
        date = local.date() + datetime.timedelta(days=day)
        candidate = datetime.datetime(date.year, date.month, date.day, int(hour), int(minute), tzinfo=ZoneInfo(zone))
        if candidate > local and (candidate.isoweekday() % 7) in _days(dow):
            return candidate
    raise AssertionError(f"{cron} never fires")


def cron_trigger(metadata: dict[str, str], now: datetime.datetime) -> tuple[float, bool]:
    """pkg/scalers/cron_scaler.go GetMetricsAndActivity: inside while the next end comes before the next start."""
    zone = metadata["timezone"]
    next_start, next_end = next_fire(metadata["start"], now, zone), next_fire(metadata["end"], now, zone)
    # KEDA's two branches, as written (the first is never true: next_start is after now).
    inside = (now > next_start and now < next_end) if next_start < next_end else (now > next_start or now < next_end)
    return (float(metadata["desiredReplicas"]) if inside else 0.0), inside


def evaluate_formula(formula: str, values: dict[str, float]) -> float:
    """The formulas gpustack writes, `COND ? A : B` with && || > and max(), in Python (expr-lang's meaning)."""
    condition, _, rest = formula.partition(" ? ")
    then, _, otherwise = rest.partition(" : ")
    python = lambda text: text.replace("&&", " and ").replace("||", " or ")
    env = {"max": max, **values}
    chosen = then if eval(python(condition), {}, env) else otherwise
    return float(eval(python(chosen), {}, env))


@dataclasses.dataclass
class KedaModel:
    scaled_object: dict[str, Any]
    queries: dict[str, Query]  # prometheus trigger name -> its value over time
    replicas: int = 0
    last_active: datetime.datetime | None = None
    recommendations: list[tuple[datetime.datetime, int]] = dataclasses.field(default_factory=list)

    @property
    def spec(self) -> dict[str, Any]:
        return self.scaled_object["spec"]

    def metrics(self, now: datetime.datetime) -> tuple[dict[str, float], bool]:
        """Each trigger's value and whether the ScaledObject is active (scale_handler.go getScaledObjectState)."""
        values: dict[str, float] = {}
        active = False
        for trigger in self.spec["triggers"]:
            if trigger["type"] == "cron":
                value, on = cron_trigger(trigger["metadata"], now)
            else:  # prometheus: empty result is 0 (ignoreNullValues), active above activationThreshold
                value = self.queries[trigger["name"]](now)
                on = value > float(trigger["metadata"].get("activationThreshold", "0"))
            values[trigger["name"]] = value
            active = active or on
        modifiers = self.spec.get("advanced", {}).get("scalingModifiers")
        if modifiers:  # one composite metric; activity re-evaluated from it (IsUsingModifiers branch)
            composite = evaluate_formula(modifiers["formula"], values)
            return {"composite": composite}, composite > float(modifiers.get("activationTarget", "0"))
        return values, active

    def step(self, now: datetime.datetime) -> int:
        """One poll: executor/scale_scaledobjects.go RequestScale, then the HPA above zero."""
        values, active = self.metrics(now)
        minimum = self.spec.get("minReplicaCount", 0)
        if active:
            if self.replicas == 0:  # scaleFromZeroOrIdle: minReplicaCount if above 0, else 1
                self.replicas = minimum or 1
            self.last_active = now
        elif self.replicas > 0 and minimum == 0:  # scaleToZeroOrIdle, after cooldownPeriod since last active
            cooldown = datetime.timedelta(seconds=self.spec.get("cooldownPeriod", 300))
            if self.last_active is None or self.last_active + cooldown < now:
                self.replicas = 0
                self.recommendations.clear()
        if self.replicas > 0:
            self.hpa(now, values)
        return self.replicas

    def hpa(self, now: datetime.datetime, values: dict[str, float]) -> None:
        """The HPA KEDA made: the largest count any metric asks (horizontal.go computeReplicasForMetrics),
        ceil(value / target) for an AverageValue external metric (replica_calculator.go
        GetExternalPerPodMetricReplicas), within [max(minReplicaCount, 1), maxReplicaCount] (KEDA hpa.go),
        scaling down to the highest recommendation of the stabilization window (horizontal.go
        stabilizeRecommendationWithBehaviors)."""
        targets = {t["name"]: float(t["metadata"].get("threshold", "1")) for t in self.spec["triggers"]}
        targets["composite"] = float(self.spec.get("advanced", {}).get("scalingModifiers", {}).get("target", "1"))
        asked = max(math.ceil(value / targets[name] - 1e-9) for name, value in values.items())
        wanted = min(max(asked, self.spec.get("minReplicaCount", 0), 1), self.spec["maxReplicaCount"])
        window = datetime.timedelta(seconds=self.spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
                                    ["scaleDown"]["stabilizationWindowSeconds"])
        self.recommendations = [(t, r) for t, r in self.recommendations if now - t < window] + [(now, wanted)]
        stabilized = max(r for _, r in self.recommendations)
        self.replicas = wanted if wanted > self.replicas else min(self.replicas, stabilized)


def run(model: KedaModel, start: datetime.datetime, end: datetime.datetime) -> list[tuple[datetime.datetime, int]]:
    """Replicas after each poll from `start` to `end` (pollingInterval apart)."""
    step = datetime.timedelta(seconds=model.spec.get("pollingInterval", 30))
    out = []
    now = start
    while now <= end:
        out.append((now, model.step(now)))
        now += step
    return out
