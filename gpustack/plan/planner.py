"""spec -> plan: group each target's replicas into pools, pack them, and price them.

A pool holds one workload kind, one GPU model, one capacity type, one sharing mode (with its
clients per GPU, or its MIG profile where the cloud takes one profile per pool), one instance type
and one schedule. These define the pool and its name, and each is decided per workload
(`gpustack.plan.choices`), so a pool's name does not depend on the other workloads, except for its
instance type: workloads that would share a pool take the one type that carries all their replicas for
the least money, every type that holds them priced by packing (`gpustack.plan.pool_types`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from gpustack.nogc import no_cyclic_gc
from gpustack.catalog import Catalog, GpuModel, InstanceType, load_catalog
from gpustack.catalog.mig import Profile
from gpustack.clouds import CLOUDS, Cloud, Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.errors import Problem, SpecError
from gpustack.plan import cost as costing
from gpustack.plan import alternatives, dra, fallback, idle, ladder, offers, pool_types, queues, timebox, versions
from gpustack.plan.asks import Ask, AskError, decide
from gpustack.plan.choices import (
    Choice, Part, accepted_capacities, binding_field, capacity_parts, choose_instance, fitting_rows,
)
from gpustack.plan.disks import default_disk_gib
from gpustack.plan.fit import no_fit_message
from gpustack.plan.model import AutoStopChoice, IdlePolicy, Plan, PodRequest, Pool, TargetPlan, Warning
from gpustack.plan.packing import DoesNotFit
from gpustack.plan.spread import topology_spread
from gpustack.plan.pools import (
    CHECKPOINTING_LABEL, WORKLOAD_LABEL, Demand, PoolKey, build_floor_and_burst, build_pool, floor_and_burst_cost,
    pool_cost, shares_tag,
)
from gpustack.plan.queueing import Queueing
from gpustack.plan.prices import PriceBook
from gpustack.spec import kubernetes
from gpustack.spec.autostop import DETECTED
from gpustack.spec.load import pinned_key
from gpustack.spec.model import HOURS_PER_MONTH, Availability, Spec, Target, Workload
from gpustack.spec.units import timezone_advice
from gpustack.spec.yamlsource import path_str

# Plan pool names double as label values (gpustack.dev/pool) and NVIDIA config names: DNS labels.

# On one-GPU nodes of a cloud that mixes MIG layouts, a pool's nodes carry one layout for their one GPU:
# profiles of about half a GPU or more (3g and 4g of 7 slices) go in one pool, where 4g+3g and 3g+3g fit
# a GPU, and smaller ones in another, where any mix of them fits. The class is the profile's alone, so
# adding a workload never moves another one to a different pool.
MIG_SIZE_CLASSES = ("large", "small")


def mig_size_class(profile: Profile, gpu: GpuModel) -> str:
    assert gpu.mig is not None
    return "large" if 2 * profile.compute >= gpu.mig.compute_slices - 1 else "small"


def build_plan(spec: Spec, catalog: Catalog | None = None, current: Plan | None = None) -> Plan:
    """Plan every target of `spec`; raises SpecError for what only planning can find.

    `current`: the plan deployed now, whose pools keep their instance types unless moving saves more
    than `pools.type_change_saving` (`gpustack.plan.pool_types`)."""
    catalog = catalog or spec.catalog or load_catalog()
    problems: list[Problem] = []
    targets = []
    with no_cyclic_gc():
        for target in sorted(spec.targets, key=lambda t: t.name):
            deployed = frozenset(p.name for t in (current.targets if current else ()) if t.name == target.name
                                 for p in t.pools)
            planned = _TargetPlanner(spec, target, catalog, problems, deployed).plan()
            if planned is not None:
                targets.append(planned)
    if problems:
        raise SpecError(sorted(set(problems), key=lambda p: (p.location.line if p.location else 0, p.path, p.message)))
    warnings = tuple(w for t in targets for w in t.warnings)
    return Plan(1, spec.name, spec.labels, tuple(targets), warnings)


class _TargetPlanner:
    def __init__(self, spec: Spec, target: Target, catalog: Catalog, problems: list[Problem],
                 deployed: frozenset[str] = frozenset()):
        self.spec = spec
        self.deployed = deployed  # the names of the target's pools in the current plan
        self.target = target
        self.catalog = catalog
        self.cloud: Cloud = CLOUDS.get(target.cloud)
        # settings.provisioner was checked against the cloud's provisioners when the spec was read.
        self.provisioner: Provisioner = self.cloud.provisioner(target.setting("provisioner"))  # type: ignore[arg-type]
        self.rows = catalog.in_region(target.cloud, target.region)
        self.prices = PriceBook.for_cloud(spec.pricing, catalog, target.cloud)
        self.problems = problems
        self.warnings: list[Warning] = []
        self.notes: list[str] = []
        self.max_nodes: dict[str, int] = {}  # pool -> max_nodes, once the pools are built
        self._rows_named: dict[str | None, tuple[InstanceType, ...]] = {}
        self._choices: dict[tuple[object, ...], Choice | None] = {}

    def problem(self, workload: Workload | None, field: str, message: str, path: tuple[str | int, ...] = ()) -> None:
        path = path or (("workloads", workload.index, field) if workload else ("targets", self.target.index))
        self.problems.append(Problem(self.spec.source.where(path), path_str(path), message))

    def warn(self, code: str, message: str, workload: str | None = None, pool: str | None = None) -> None:
        self.warnings.append(Warning(code, message, self.target.name, workload, pool))

    def plan(self) -> TargetPlan | None:
        before = len(self.problems)
        for name, why in self.provisioner.required_settings.items():  # a gap of this provisioner, located
            if self.target.setting(name) is None:
                self.problem(None, "", f"settings.{name} is required with provisioner {self.provisioner.name!r}: {why}",
                             path=("targets", self.target.index, "settings"))
        zones = self.target_zones()
        workloads = sorted((self.spec.workload(n) for n in self.target.workloads), key=lambda w: w.name)
        if not workloads:
            self.warn("no-workloads", f"target {self.target.name!r} has no workloads: nothing to plan")
        demands: dict[PoolKey, list[Demand]] = defaultdict(list)
        for workload in workloads:
            for key, demand in self.demands_of(workload):
                demands[key].append(demand)
        if len(self.problems) > before:
            return None
        pools, pod_requests = self.compiled(self.placed_pools(demands, zones))
        if len(self.problems) > before:
            return None
        planned = costing.summarise(self.target, tuple(pools), workloads, self.rows, self.prices,
                                    self.catalog, self.provisioner, tuple(self.warnings), tuple(self.notes))
        return self.completed(planned, pools, pod_requests, workloads, before)

    def placed_pools(self, demands: dict[PoolKey, list[Demand]], zones: tuple[str, ...]) -> list[Pool]:
        """The pools of the demands, each on one instance type, built, timeboxed, spread over types and
        placed in zones, in name order."""
        retyped = self.one_type_per_pool(demands)
        demands = defaultdict(list, retyped.demands)
        self.note_split_mig(demands)
        pools = self.timeboxed(self.build_pools(demands))
        pools = [dataclasses.replace(p, notes=p.notes + (retyped.notes[p.name],)) if p.name in retyped.notes else p
                 for p in pools]
        pools.sort(key=lambda p: p.name)
        self.check_names(pools)
        self.check_reservation_settings(pools)
        pools = [self.over_types(pool) for pool in pools]
        return [self.placed(pool, zones) for pool in pools]

    def compiled(self, pools: list[Pool]) -> tuple[list[Pool], tuple[PodRequest, ...]]:
        """The pools with their fallback marks, offers and compiled form, checked; the pods' requests."""
        pools = list(fallback.mark_pools(pools, self.provisioner))  # a ComputeClass: the pools' label and taint
        annotated, pod_requests, gaps = offers.annotate(pools, self.provisioner)
        pools = list(annotated)
        if dra.chosen(self.target):  # the same pools, asked for through ResourceClaims (gpustack/plan/dra.py)
            pools, pod_requests, gaps = self.through_dra(pools, pod_requests)
        for pool_name, message in gaps:
            self.warn("template-gap", message, pool=pool_name)
        found, unordered = fallback.notes(pools, self.provisioner)
        self.notes.extend(found)
        if pools:
            self.notes.extend(self.cloud.target_notes(dict(self.target.settings)))
            self.notes.extend(self.provisioner.target_notes())
        for message in unordered:
            self.warn("fallback-unordered", message)
        # The compile seam: each pool once, in its provisioner's spelling, checked before anything renders.
        pools = [dataclasses.replace(p, compiled=self.provisioner.compile(p, self.target))
                 for p in pools]
        pools = [dataclasses.replace(p, notes=p.notes + self.provisioner.pool_notes(p)) for p in pools]
        for pool in pools:
            for message in self.provisioner.check_pool(pool):
                self.problem(None, "", f"pool {pool.name!r}: {message}")
            self.check_labels(pool)
            if gap := self.provisioner.floor_gap(pool):
                self.warn("floor-upgrade", gap, pool=pool.name)
        return pools, pod_requests

    def completed(self, planned: TargetPlan, pools: list[Pool], pod_requests: tuple[PodRequest, ...],
                  workloads: list[Workload], before: int) -> TargetPlan | None:
        """The target's plan with its queues, pod requests, idle policies and ladders; None where the
        queues found problems (more than `before`)."""
        policies = idle.policies(self.spec, self.target)
        keda = idle.scaled_by_keda(self.spec, self.target, tuple(pools), policies)
        url = self.target.setting("prometheus_url")
        spot = frozenset(p.name for p in pools if p.capacity == "spot")
        self.max_nodes = {p.name: p.max_nodes for p in pools}
        owned = tuple(self.owned(r, spot) for r in pod_requests)
        queueing = self.queueing(tuple(pools), owned)
        if len(self.problems) > before:
            return None
        planned = dataclasses.replace(planned, queueing=queueing,
                                      notes=planned.notes + (queues.notes(queueing) if queueing else ()),
                                      warnings=planned.warnings + self.queue_warnings(queueing))
        for path, message in versions.problems(self.target, self.provisioner, tuple(pools)):
            self.problem(None, "", message, path=path)
        return dataclasses.replace(planned, pod_requests=owned,
                                   provisioner=self.provisioner.name, fallback_groups=fallback.fallback_groups(pools),
                                   autostop=str(self.target.setting("autostop", "cronjob")),
                                   prometheus_url=None if url is None else str(url), idle=policies,
                                   api_server_cidrs=self.api_server_cidrs(),
                                   scaled_by_keda=keda, ladders=ladder.ladders(pools, workloads),
                                   gpu_allocation=str(self.target.setting("gpu_allocation", "device-plugin")),
                                   kubernetes_version=self.target.kubernetes_version,
                                   notes=planned.notes + tuple(idle.notes(self.target, keda, self.not_culled(policies)))
                                   + kubernetes.not_checked_notes(self.spec.workloads, self.target))

    def queueing(self, pools: tuple[Pool, ...], requests: tuple[PodRequest, ...]) -> Queueing | None:
        """settings.queue: the queues, flavors and quotas of the target's training and fine-tuning."""
        if self.target.setting("queue") != queues.SYSTEM:
            return None
        if self.target.setting("gpu_allocation") == "dra":
            # The quotas gpustack writes count nvidia.com/gpu; a DRA pod asks through a ResourceClaim, which
            # those quotas do not see, so the GPUs would be admitted without a limit.
            self.problem(None, "", "settings.queue: kueue with settings.gpu_allocation: dra is not supported yet: "
                                   "the ClusterQueue quotas gpustack writes count nvidia.com/gpu, and pods on a DRA "
                                   "target ask for GPUs through ResourceClaims, which those quotas do not count; "
                                   "use one of the two on this target",
                         path=("targets", self.target.index, "settings", "queue"))
            return None
        try:
            return queues.plan_queues(self.spec, pools, requests, self.cloud)
        except queues.QueueProblem as exc:
            self.problem(None, "", str(exc), path=("targets", self.target.index, "settings", "queue"))
            return None

    def queue_warnings(self, queueing: Queueing | None) -> tuple[Warning, ...]:
        if queueing is None or queueing.workloads:
            return ()
        return (Warning("queue-empty", f"settings.queue is {queueing.system}, but target {self.target.name!r} runs no "
                                       "training or fine-tuning workload: no Job is queued", self.target.name),)

    def through_dra(self, pools: list[Pool], requests: tuple[PodRequest, ...]
                    ) -> tuple[list[Pool], tuple[PodRequest, ...], list[tuple[str, str]]]:
        """Pools and pod requests of a DRA target; its gaps reported (the device plugin's template gaps do not apply)."""
        outcome = dra.apply(self.spec, self.target, self.provisioner, pools, requests)
        for path, message in outcome.problems:
            self.problem(None, "", message, path=path)
        for code, message, workload, pool in outcome.warnings:
            self.warn(code, message, workload=workload, pool=pool)
        self.notes.extend(outcome.notes)
        return list(outcome.pools), outcome.requests, []

    def api_server_cidrs(self) -> tuple[str, ...]:
        cidrs = self.target.setting("api_server_cidrs", ())
        return tuple(str(c) for c in cidrs) if isinstance(cidrs, tuple) else ()

    def not_culled(self, policies: tuple[IdlePolicy, ...]) -> tuple[IdlePolicy, ...]:
        """The idle policies a gpustack job acts on: a JupyterHub's are its culler's (render/jupyterhub.py)."""
        return tuple(p for p in policies if (a := self.spec.workload(p.workload).autostop) is None
                     or a.kind != "jupyterhub")

    def owned(self, request: PodRequest, spot_pools: frozenset[str]) -> PodRequest:
        """A workload's pod requests with what the spec says of its objects: namespace, kind, labels."""
        workload = self.spec.workload(request.workload)
        labels = {**dict(self.spec.labels), **dict(workload.labels)}
        pod_labels = {**labels, WORKLOAD_LABEL: workload.name}
        if workload.checkpointing and spot_pools.intersection(request.pools):
            pod_labels[CHECKPOINTING_LABEL] = "true"
        annotations, grace = self.provisioner.pod_protection(workload.kind, workload.checkpointing)
        spread = topology_spread(workload.availability, sum(self.max_nodes.get(p, 0) for p in request.pools)) \
            if workload.availability else ()
        return dataclasses.replace(request, namespace=workload.namespace, kind=workload.kind, topology_spread=spread,
                                   labels=tuple(sorted(labels.items())), checkpointing=workload.checkpointing,
                                   pod_labels=tuple(sorted(pod_labels.items())),
                                   autostop=autostop_choice(workload), annotations=annotations,
                                   termination_grace_seconds=grace, container=workload.container)

    # -- per workload -------------------------------------------------------------------------
    def demands_of(self, workload: Workload) -> list[tuple[PoolKey, Demand]]:
        if workload.replicas.max == 0:
            self.warn("zero-replicas", f"{workload.kind} {workload.name!r} has 0 replicas: no capacity planned",
                      workload.name)
            return []
        gpu = self.catalog.gpu(workload.gpu)
        assert gpu is not None
        ask = self.checked_ask(workload, gpu)
        if ask is None:
            return []
        parts, warnings = capacity_parts(workload)
        for code, message in warnings:
            self.warn(code, message, workload.name)
        out = []
        main_on_demand = False
        for part in parts:
            if part.role == "fallback" and main_on_demand:
                continue  # the main part already runs on on-demand: no fallback needed
            placed = self.part_on_type(workload, gpu, ask, part)
            if placed is None:
                return []
            part, row, spot_refused = placed
            main_on_demand = main_on_demand or spot_refused
            out.append((self.key(workload, gpu, ask, part, row.name), Demand(workload, ask, part, row,
                                                                             self.hours(workload, part))))
        return out

    def checked_ask(self, workload: Workload, gpu: GpuModel) -> Ask | None:
        """What a replica asks of a node, with its warnings; None (and a located problem) where the
        workload cannot be planned on this target."""
        smallest, largest, source = self.cloud.disk_gib_range
        if workload.disk_gib is not None and not smallest <= workload.disk_gib <= largest:
            self.problem(workload, "disk", f"{workload.disk_gib}Gi is outside what {self.cloud.display_name} takes for "
                                           f"a node's root volume: {smallest}Gi to {largest}Gi ({source})")
            return None
        try:
            ask = decide(workload, gpu, self.provisioner)
        except AskError as exc:
            self.problem(workload, exc.field, str(exc))
            return None
        if ask.gap:
            self.warn("capability-gap", f"{workload.name!r}: {ask.gap}", workload.name)
        if ask.note:
            self.warn("share-rounded", f"{workload.name!r}: {ask.note}", workload.name)
        if workload.schedule is not None and (advice := timezone_advice(workload.schedule.timezone)):
            self.warn("timezone-legacy", f"{workload.name!r}: workloads[{workload.index}].schedule.timezone: {advice}",
                      workload.name)
        return ask if self.timebox_fits(workload, gpu) else None

    def timebox_fits(self, workload: Workload, gpu: GpuModel) -> bool:
        """Whether the workload's capacity block or flex-start window can be planned here (else located problems)."""
        if why := timebox.gap(workload, self.provisioner):
            self.problem(workload, "capacity", why)
            return False
        if workload.block is not None:
            found = timebox.block_problems(workload.block, self.target, self.rows, gpu.name, self.cloud)
            for field, message in found:
                self.problem(workload, "", message, path=("workloads", workload.index, "block", field))
            if found:
                return False
        if workload.flex is not None and (problem := timebox.flex_problem(workload.flex, self.cloud)):
            self.problem(workload, "", problem, path=("workloads", workload.index, "flex", "max_run_hours"))
            return False
        return True

    def part_on_type(self, workload: Workload, gpu: GpuModel, ask: Ask, part: Part
                     ) -> tuple[Part, InstanceType, bool] | None:
        """The part of the workload as planned (a capacity the cloud refuses falls back, with a
        warning), the instance type that carries it, and whether spot was refused (it then runs on
        on-demand); None and a located problem when nothing carries it."""
        pinned = (workload.block.instance_type if part.capacity == "block" and workload.block
                  else workload.pinned_instance(self.target.cloud))
        # What the spec pins (a capacity, an instance type) is never swapped for something else.
        choice = self.choose(pinned, gpu, ask, part.replicas, part.capacity,
                             may_fall_back=workload.capacity is None and pinned is None)
        rows = self.rows_named(pinned)
        if choice is None:
            self.problem(workload, binding_field(rows, gpu, ask, self.provisioner),
                         no_fit_message(self.cloud.display_name, self.target.region, self.rows, gpu, ask, pinned))
            return None
        if choice.row is None:
            self.refused(workload, gpu, ask, part.capacity, pinned, choice.refusal or "")
            return None
        if choice.fallback_reason and part.capacity == "spot":
            self.warn("spot-unavailable", f"{workload.name!r} asked for spot, but {choice.fallback_reason}: it "
                                          "runs on on-demand", workload.name)
            no_spot = (f"no spot on {self.cloud.display_name}" if self.provisioner.gap(Feature.SPOT)
                       else "no spot for this shape")
            return dataclasses.replace(part, capacity="on-demand", why=f"{part.why}; {no_spot}"), choice.row, True
        if choice.fallback_reason:
            self.warn("reservation-unavailable",
                      f"{workload.name!r} has a reserved floor, but {choice.fallback_reason}: the floor runs on "
                      "on-demand nodes that the pool keeps (min_nodes) but no reservation guarantees",
                      workload.name)
            part = dataclasses.replace(part, capacity="on-demand", role="burst",
                                       why=part.why + "; on on-demand, as the cloud cannot reserve this shape")
        elif part.capacity == "spot" and self.prices.spot(choice.row) is None:
            self.warn("no-spot-price", f"no spot price is known for {choice.row.name} in {self.target.region}: "
                                       f"{workload.name!r} is estimated at the on-demand price (set "
                                       "pricing.spot_discount or pricing.instances to refine it)", workload.name)
        return part, choice.row, False

    def rows_named(self, pinned: str | None) -> tuple[InstanceType, ...]:
        """The region's rows, or only the pinned type's."""
        if pinned not in self._rows_named:
            self._rows_named[pinned] = tuple(r for r in self.rows if r.name == pinned) if pinned else self.rows
        return self._rows_named[pinned]

    def choose(self, pinned: str | None, gpu: GpuModel, ask: Ask, replicas: int, capacity: str,
               may_fall_back: bool) -> Choice | None:
        """`choose_instance` over the rows a pin leaves, once per distinct question: thousands of
        workloads of a platform ask a few hundred (it was a tenth of planning at 20,000 workloads)."""
        question = (pinned, gpu.name, ask, replicas, capacity, may_fall_back)
        if question not in self._choices:
            self._choices[question] = choose_instance(self.rows_named(pinned), gpu, ask, replicas, capacity,
                                                      self.provisioner, self.prices, may_fall_back=may_fall_back)
        return self._choices[question]

    def refused(self, workload: Workload, gpu: GpuModel, ask: Ask, capacity: str, pinned: str | None,
                reason: str) -> None:
        """A located error for a capacity (or a pinned type) the cloud refuses, with what would work."""
        field_path: tuple[str | int, ...]
        offered = tuple(r for r in self.rows if r.name == pinned) if pinned else self.rows
        works = accepted_capacities(offered, gpu, ask, self.provisioner)
        if pinned:
            fitting = fitting_rows(self.rows, gpu, ask, self.provisioner)
            types = sorted(r.name for r, _ in fitting if self.provisioner.capacity_refusal(r, capacity) is None)
            field_path = ("workloads", workload.index, "instance_types",
                          pinned_key(self.spec.source, workload.index, self.target.cloud))
            what = f"the pinned {pinned}"
            instead = (f"pin a type it accepts on {capacity} ({', '.join(types)})" if types
                       else f"no {gpu.name} type here takes {capacity}")
        else:
            field_path = ("workloads", workload.index, "capacity" if workload.capacity else "gpu")
            what = f"every {gpu.name} type that holds a replica"
            instead = ""
        others = [c for c in works if c != capacity]
        options = ([instead] if instead else []) + ([f"capacity: {' or '.join(others)}"] if others else [])
        self.problem(workload, "", f"{self.cloud.display_name} in {self.target.region} refuses {capacity} capacity "
                                   f"for {what}: {reason}; what would work: {'; or '.join(options) or 'nothing here'}",
                     path=field_path)

    def key(self, workload: Workload, gpu: GpuModel, ask: Ask, part: Part, instance: str) -> PoolKey:
        row = self.catalog.instance(self.target.cloud, self.target.region, instance)
        assert row is not None
        if ask.mode == "mig":
            assert ask.profile is not None
            if not self.provisioner.supports(Feature.MIG_MIXED_LAYOUTS):
                sharing = f"mig-{ask.profile.name}"
            elif row.gpus == 1:
                sharing = f"mig-{mig_size_class(ask.profile, gpu)}"
            else:
                sharing = "mig"
        elif ask.by_clients:
            sharing = shares_tag(ask.mode, ask.shares_per_gpu)
        elif ask.mode == "fractional":
            sharing = "frac"
        else:
            sharing = "whole"
        schedule = workload.schedule
        disk = workload.disk_gib if workload.disk_gib != default_disk_gib(gpu) else None
        return PoolKey(workload.kind, gpu.name, sharing, part.capacity, part.role == "fallback", instance,
                       (schedule.canonical_days, schedule.canonical_hours, schedule.timezone) if schedule else None,
                       tuple(self.spec.label_of(workload, key) for key in self.spec.split_by),
                       disk, str(self.target.setting("pool_names") or ""),
                       window=timebox.pool_tag(workload) if part.role != "fallback" else "",
                       spread=f"{workload.name}-{workload.availability.tag}" if workload.availability else "")

    @staticmethod
    def hours(workload: Workload, part: Part) -> float:
        if part.capacity == "reserved":
            return HOURS_PER_MONTH  # a reservation is billed whether or not it is used
        if part.capacity == "block" and workload.block is not None:
            return timebox.block_hours(workload.block)  # so is a block, for as long as it lasts
        if workload.schedule is not None:
            return workload.schedule.active_hours_per_week * HOURS_PER_MONTH / 168
        return workload.hours_per_month or HOURS_PER_MONTH

    # -- per pool -----------------------------------------------------------------------------
    def one_type_per_pool(self, demands: dict[PoolKey, list[Demand]]) -> pool_types.Retyped:
        def fixed(key: PoolKey, found: list[Demand]) -> bool:
            return key.fallback or key.capacity == "block" or any(d.workload.pinned_instance(self.target.cloud)
                                                                  for d in found)

        def cost_of(assignment: dict[PoolKey, list[Demand]]) -> float | None:
            """What the pools of `assignment` cost a month, as `build_pools` would build them."""
            total = 0.0
            try:
                for key, burst in self.pool_units(assignment):
                    if burst is None:
                        total += pool_cost(key, assignment[key], self.provisioner, self.catalog, self.prices)
                    else:
                        total += floor_and_burst_cost(key, burst, assignment[key], assignment.get(burst, []),
                                                      self.provisioner, self.catalog, self.prices)
            except (ValueError, DoesNotFit):
                return None
            return total

        def rekey(demand: Demand, row: InstanceType) -> PoolKey:
            gpu = self.catalog.gpu(demand.workload.gpu)
            assert gpu is not None
            return self.key(demand.workload, gpu, demand.ask, demand.part, row.name)

        return pool_types.one_type_per_pool(demands, self.rows, self.provisioner, self.prices, cost_of, rekey,
                                            self.spec.type_change_saving, self.deployed, fixed)

    def build_pools(self, demands: dict[PoolKey, list[Demand]]) -> list[Pool]:
        """The pools of `demands`: each reserved serving floor packed with its on-demand burst."""
        pools: list[Pool] = []
        for key, burst in self.pool_units(demands):
            if burst is not None:
                pools.extend(self.floor_and_burst(key, demands[key], burst, demands.get(burst, [])))
                continue
            pool = self.pool(key, demands[key])
            if pool is not None:
                pools.append(pool)
        return pools

    def timeboxed(self, pools: list[Pool]) -> list[Pool]:
        """Block and flex pools priced and sized by their window (`gpustack.plan.timebox`)."""
        out = []
        for pool in pools:
            pool, problems = timebox.priced(pool, self.spec, self.cloud, self.provisioner, self.prices)
            for workload, key, message in problems:
                self.problem(workload, "", message, path=("workloads", workload.index, "block", key))
            if pool.block is not None and pool.block.offering_id is not None:
                self.warn("capacity-block-purchase", f"pool {pool.name!r}: `pulumi up` buys the capacity block offering "
                                                     f"{pool.block.offering_id} (${pool.block.upfront_usd:,.2f} up front); "
                                                     "`pulumi destroy` does not refund it (the reservation cannot be "
                                                     "deleted, only dropped from the state), so gpustack declares it "
                                                     "protected", pool=pool.name)
            if pool.flex is not None and self.prices.pricing.flex_discount is None:
                self.warn("flex-discount-assumed", f"pool {pool.name!r} is estimated at flex-start's published upper "
                                                   f"bound ({pool.flex.discount_basis}; {pool.flex.source}): declare "
                                                   "your price with pricing.flex_discount", pool=pool.name)
            out.append(pool)
        return out

    def pool_units(self, demands: dict[PoolKey, list[Demand]]) -> list[tuple[PoolKey, PoolKey | None]]:
        """What is packed as one: each pool's key, with the burst key for a reserved serving floor."""
        paired = {dataclasses.replace(k, capacity="on-demand") for k in demands if self.has_burst(k)}
        return [(key, dataclasses.replace(key, capacity="on-demand") if self.has_burst(key) else None)
                for key in sorted(demands, key=lambda k: k.readable()) if key not in paired]

    def pool(self, key: PoolKey, demands: list[Demand]) -> Pool | None:
        name = key.name()
        try:
            return build_pool(key, name, demands, spec=self.spec, provisioner=self.provisioner, catalog=self.catalog,
                              prices=self.prices)
        except ValueError as exc:
            first = demands[0].workload
            self.problem(first, "gpu", f"pool {name!r}: {exc}")
            return None

    @staticmethod
    def has_burst(key: PoolKey) -> bool:
        """A reserved inference pool: packed together with the on-demand pool of the same shape."""
        return key.kind == "inference" and key.capacity == "reserved" and not key.fallback

    def floor_and_burst(self, floor: PoolKey, demands: list[Demand], burst: PoolKey,
                        burst_demands: list[Demand]) -> list[Pool]:
        names = [floor.name(), burst.name()]
        try:
            return build_floor_and_burst(floor, names[0], burst, names[1], demands, burst_demands, self.spec,
                                         self.provisioner, self.catalog, self.prices)
        except ValueError as exc:
            self.problem(demands[0].workload, "gpu", f"pool {names[0]!r}: {exc}")
            return []

    def note_split_mig(self, demands: dict[PoolKey, list[Demand]]) -> None:
        groups: dict[tuple[object, ...], set[str]] = defaultdict(set)
        for key in demands:
            if key.sharing.startswith("mig-") and key.sharing[4:] in MIG_SIZE_CLASSES:
                groups[(key.kind, key.gpu, key.capacity, key.instance)].add(key.sharing[4:])
        for (kind, gpu, capacity, instance), classes in sorted(groups.items()):
            if len(classes) > 1:
                self.notes.append(f"{kind} MIG replicas on {gpu} ({capacity}, {instance}, one GPU per node) are in "
                                  "two pools: profiles of about half a GPU or more in one, smaller profiles in the "
                                  "other, so that each pool's one layout holds its profiles together.")
        groups = defaultdict(set)
        for key in demands:
            if key.sharing.startswith("mig-") and key.sharing[4:] not in MIG_SIZE_CLASSES:
                groups[(key.kind, key.gpu, key.capacity, key.instance)].add(key.sharing[4:])
        for (kind, gpu, capacity, instance), profiles in sorted(groups.items()):
            if len(profiles) < 2:
                continue
            why = (self.provisioner.gap(Feature.MIG_MIXED_LAYOUTS)
                   or f"{instance} has one GPU per node, and every node of a pool has the same MIG layout")
            self.notes.append(f"{kind} MIG replicas on {gpu} ({capacity}, {instance}) are split into one pool per "
                              f"profile ({', '.join(sorted(profiles))}): {why}.")

    def check_labels(self, pool: Pool) -> None:
        """Each attribution label as the cloud's tag, located where the spec writes it (the top-level
        `labels`, or the first workload of the pool that gives it); identical problems of several pools
        or targets are one problem."""
        for key, value in sorted(pool.attribution.items()):
            messages = self.cloud.check_label(key, value)
            if not messages:
                continue
            if (key, value) in self.spec.labels:
                path: tuple[str | int, ...] = ("labels", key)
            else:
                giver = next(self.spec.workload(n) for n in pool.workloads
                             if (key, value) in self.spec.workload(n).labels)
                path = ("workloads", giver.index, "labels", key)
            for message in messages:
                self.problems.append(Problem(self.spec.source.where_key(path), path_str(path), message))

    # -- zones --------------------------------------------------------------------------------
    def target_zones(self) -> tuple[str, ...]:
        """The zones the target's settings name (none: the cloud's default placement), each checked
        against the target's region."""
        setting = self.cloud.zone_setting
        zones = tuple(str(z) for z in (self.target.setting(setting) or ())) if setting else ()  # type: ignore[attr-defined]
        for j, zone in enumerate(zones):
            for message in self.cloud.zone_problems(self.target.region, (zone,)):
                self.problem(None, "", message, path=("targets", self.target.index, "settings", str(setting), j))
        return zones

    def placed(self, pool: Pool, zones: tuple[str, ...]) -> Pool:
        """The pool with the zones that offer its GPU, and its reserved floor spread over them."""
        if pool.block is not None:
            return pool  # a block lives in its one zone
        setting = self.cloud.zone_setting
        here = zones
        if zones:
            offering = self.cloud.zones_offering(pool.gpu, pool.instance_type, zones)
            if offering is not None and not offering:
                where = self.cloud.zones_in_region(pool.gpu, self.target.region)
                self.problem(None, "", f"pool {pool.name!r}: no zone of settings.{setting} ({', '.join(zones)}) offers "
                                       f"{pool.gpu}; zones of {self.target.region} that do: "
                                       f"{', '.join(where) or 'none known'}",
                             path=("targets", self.target.index, "settings", str(setting)))
                return pool
            if offering is not None and offering != zones:
                here = offering
                pool = dataclasses.replace(pool, notes=pool.notes + (
                    f"Placed in {', '.join(offering)}: the other zones of settings.{setting} do not offer "
                    f"{pool.gpu}.",))
        elif setting and (offered := self.cloud.zones_in_region(pool.gpu, self.target.region)):
            self.warn("zones-unchecked", f"settings.{setting} is not set, so pool {pool.name!r} takes the cluster's "
                                         f"zones, and only {', '.join(offered)} of {self.target.region} offer "
                                         f"{pool.gpu}: list those zones in settings.{setting}", pool=pool.name)
        spread = self.cloud.floor_spread(here, pool.reserved_nodes) if pool.reserved_nodes else ()
        availability = self.availability_of(pool)
        if availability is not None:
            return self.spread(pool, here, availability)
        if pool.reserved_nodes >= 2 and not spread and self.cloud.single_zone_floor:
            self.warn("floor-single-zone", f"the reserved floor of pool {pool.name!r} ({pool.reserved_nodes} nodes) "
                                           f"is not spread over zones, so one zone outage can take all of it: "
                                           f"{self.cloud.single_zone_floor}", pool=pool.name)
        return dataclasses.replace(pool, zones=here, reservations=spread)

    def over_types(self, pool: Pool) -> Pool:
        """A spot pool over the instance types its workloads list (`gpustack.plan.alternatives`)."""
        if pool.capacity != "spot":
            return pool
        types, missing = alternatives.gpu_model_types(self.spec, pool, alternatives.listed_types(
            self.spec, pool, self.target.cloud), self.rows, self.prices)
        for message in missing:
            self.warn("gpu-model-left-out", message, pool=pool.name)
        if not types:
            return pool
        rows = {r.name: r for r in self.rows}
        spread, warnings = alternatives.spread_over_types(pool, types, rows, self.prices, self.provisioner)
        for message in warnings:
            self.warn("capability-gap" if spread is pool else "mixed-instance-types", message, pool=pool.name)
        return spread

    def availability_of(self, pool: Pool) -> Availability | None:
        """The `availability` of the one workload of a spread pool (its key gave it a pool of its own)."""
        if len(pool.workloads) != 1:
            return None
        return self.spec.workload(pool.workloads[0]).availability

    def spread(self, pool: Pool, here: tuple[str, ...], availability: Availability) -> Pool:
        """A spread pool placed over the workload's zones: its floor one reservation per zone."""
        workload = self.spec.workload(pool.workloads[0])
        setting, units = self.cloud.spread_units(dict(self.target.settings))
        if setting == self.cloud.zone_setting and here:
            units = here  # only the zones that offer the pool's GPU
        if availability.zones > 1 and len(units) < availability.zones:
            named = f"settings.{setting} gives {len(units)}: {', '.join(units) or 'none'}" if setting \
                else f"{self.cloud.display_name} targets name no zones"
            self.problem(workload, "", f"{availability.zones} zones asked, but target {self.target.name!r} has fewer "
                                       f"where {pool.gpu} can go ({named}); list at least {availability.zones}"
                                       + (f" in settings.{setting}" if setting else ""),
                         path=("workloads", workload.index, "availability", "zones"))
            return pool
        used = units[:availability.zones] if availability.zones > 1 else ()
        reservations = self.cloud.availability_spread(used, pool.reserved_nodes) if used and pool.reserved_nodes \
            else ()
        if reservations and (gap := self.provisioner.spread_reservations_gap):
            reservations = ()
            self.warn("floor-single-zone", f"the reserved floor of pool {pool.name!r} is spread by its pods, not by "
                                           f"its reservation: {gap}", pool=pool.name)
        return dataclasses.replace(pool, zones=here, reservations=reservations, spread_zones=used)

    def check_names(self, pools: list[Pool]) -> None:
        seen: dict[str, str] = {}
        for pool in pools:
            if pool.cloud_name in seen:  # a hash collision: never expected, never silent
                self.problem(None, "", f"pools {seen[pool.cloud_name]!r} and {pool.name!r} would share the "
                                       f"{self.cloud.display_name} name {pool.cloud_name!r}")
            seen[pool.cloud_name] = pool.name

    def check_reservation_settings(self, pools: list[Pool]) -> None:
        needs = self.cloud.reservation_needs
        if needs is None or not any(p.reserved_nodes for p in pools):
            return
        setting, why = needs
        if self.target.setting(setting) is None:
            self.problem(None, "", f"this target plans a reserved pool; set settings.{setting}: {why}",
                         path=("targets", self.target.index, "settings"))



def autostop_choice(workload: Workload) -> AutoStopChoice | None:
    """What auto-stop stops for a scheduled workload: the spec's choice, else every labelled object of
    the kinds a workload of its kind runs as."""
    if workload.schedule is None:
        return None
    if workload.autostop is not None:
        return AutoStopChoice((workload.autostop.kind,), workload.autostop.name)
    return AutoStopChoice(DETECTED[workload.kind], None, True)
