"""Kueue for team quotas (`targets[].settings.queue: kueue`, docs/kueue.md): what the plan decides.

- A flavor per training and fine-tuning pool: the pool's own label (`gpustack.dev/pool`) and the labels its
  pods select, so Kueue offers a Job only the flavors its pods' node affinity allows (flavorassigner.go,
  checkFlavorForPodSets, matches a flavor's nodeLabels against the pod's selector and required affinity),
  and the tolerations of the pool's taints, which Kueue adds to the pods it admits there.
- A ClusterQueue per team (the values of `pools.split_by`, else of the `team` label; a workload with
  neither is the spec's own team, named after the spec), all in one cohort named after the spec. Its
  nominal quota on a flavor is what the plan sized the pool for that team's replicas: their GPUs, and
  their cpu and memory (a replica that asks none gets its GPUs' share of a node's allocatable). The
  cohort's quota on a flavor is thus never more than the pool holds at its maximum, and what it admits
  is what the plan's packing placed: a Job admitted can schedule. A team borrows another's idle quota on
  a flavor they share (a pool both teams' workloads run in), never beyond the pool.
- Flavor order: reserved (paid whether used or not), spot, on-demand, the on-demand fallback, then
  any other capacity; `flavorFungibility` makes a Job take a spot flavor it can borrow in before it
  starts an on-demand fallback node, and try the next flavor before preempting.
- Jobs only: Kueue admits suspend-first kinds (batch/v1 Job, JobSet, the training operators' jobs);
  inference and notebooks run as Deployments and StatefulSets and stay out of the queues.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence

from gpustack.clouds import Cloud
from gpustack.clouds.base import NameRule
from gpustack.plan.model import Placement, PodRequest, Pool
from gpustack.plan.pools import POOL_LABEL
from gpustack.plan.queueing import FlavorQuota, ProvisioningCheck, QueuedWorkload, QueueFlavor, Queueing, TeamQueue
from gpustack.spec.model import Spec

SYSTEM = "kueue"
QUEUED_KINDS = ("training", "fine-tuning")
TEAM_LABEL = "team"
# Kueue v0.19.2 CRDs (config/components/crd/bases/, v1beta2): ResourceFlavor nodeLabels maxProperties 8;
# a ClusterQueue resource group holds at most 64 flavors
# (https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml).
MAX_FLAVOR_LABELS = 8
MAX_FLAVORS = 64
# Queue names are label values of the Jobs (kueue.x-k8s.io/queue-name) and object names: DNS labels.
QUEUE_NAMES = NameRule(63, r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", "-",
                       "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names")
# Flavor order: what is paid anyway first, then the cheapest that can go away, then on-demand.
_CAPACITY_ORDER = {"reserved": 0, "spot": 1, "on-demand": 2}
_CPU = re.compile(r"(\d+)(m?)")
_MEMORY = re.compile(r"(\d+)(Gi|Mi)")


class QueueProblem(ValueError):
    """The queues cannot be built for this target (a located error at settings.queue)."""


def team_keys(spec: Spec) -> tuple[str, ...]:
    return spec.split_by or (TEAM_LABEL,)


def team_of(spec: Spec, workload: str) -> str:
    """The team a workload's Jobs are queued for: its values of the team keys, else the spec's name."""
    values = [spec.label_of(spec.workload(workload), key) for key in team_keys(spec)]
    return "-".join(v for v in values if v) or spec.name


def queue_name(team: str) -> str:
    return QUEUE_NAMES.make(team, team)


def plan_queues(spec: Spec, pools: Sequence[Pool], requests: Sequence[PodRequest], cloud: Cloud) -> Queueing:
    by_workload = {r.workload: r for r in requests}
    queued = sorted((r for r in requests if r.kind in QUEUED_KINDS), key=lambda r: r.workload)
    mine = [p for p in pools if p.kind in QUEUED_KINDS]
    flavors = tuple(_flavor(p, requests, cloud) for p in sorted(mine, key=_flavor_rank))
    teams: dict[str, list[PodRequest]] = defaultdict(list)
    for request in queued:
        teams[team_of(spec, request.workload)].append(request)
    names = {team: queue_name(team) for team in teams}
    if len(set(names.values())) != len(names):  # a digest collision: never expected, never silent
        raise QueueProblem(f"two teams would share a queue name: {sorted(names.items())}")
    checks = _checks(flavors, mine)
    queues = [_team_queue(names[team], team, teams[team], flavors, mine, checks)
              for team in sorted(teams, key=lambda t: names[t])]
    workloads = tuple(QueuedWorkload(r.workload, r.namespace, names[team_of(spec, r.workload)],
                                     team_of(spec, r.workload)) for r in queued)
    unqueued = tuple(sorted(w for w, r in by_workload.items() if r.kind not in QUEUED_KINDS))
    return Queueing(SYSTEM, queue_name(spec.name), team_keys(spec), flavors, tuple(queues), workloads, checks,
                    unqueued)


def _team_queue(name: str, team: str, members: list[PodRequest], flavors: Sequence[QueueFlavor],
                pools: Sequence[Pool], checks: Sequence[ProvisioningCheck]) -> TeamQueue:
    """A team's ClusterQueue: a quota in each flavor its Jobs run in, for every resource they ask."""
    covered = tuple(sorted({"cpu", "memory", *(k for r in members for k, _ in r.resources)}))
    used = [f for f in flavors if any(f.pool in r.pools for r in members)]
    if len(used) > MAX_FLAVORS:
        raise QueueProblem(f"team {team!r} runs in {len(used)} pools, and a Kueue ClusterQueue offers at most "
                           f"{MAX_FLAVORS} flavors in a resource group")
    quotas = tuple(FlavorQuota(f.name, _quota(next(p for p in pools if p.name == f.pool), members, covered))
                   for f in used)
    team_checks = tuple((c.name, tuple(f.name for f in used if f.name in c.flavors)) for c in checks)
    return TeamQueue(name, team, tuple(sorted({r.namespace for r in members})), covered, quotas,
                     tuple(r.workload for r in members), tuple(c for c in team_checks if c[1]))


def _flavor_rank(pool: Pool) -> tuple[int, bool, str]:
    return _CAPACITY_ORDER.get(pool.capacity, len(_CAPACITY_ORDER)), pool.role == "fallback", pool.name


def _flavor(pool: Pool, requests: Sequence[PodRequest], cloud: Cloud) -> QueueFlavor:
    selected = {POOL_LABEL} | {k for r in requests if pool.name in r.pools for k, _ in r.node_selector}
    labels = tuple((k, v) for k, v in pool.labels if k in selected)
    assert len(labels) <= MAX_FLAVOR_LABELS, labels
    provisioning = cloud.provisioning_request_class(pool)
    return QueueFlavor(pool.name, pool.name, pool.capacity, pool.role, labels, pool.taints,
                       provisioning[0] if provisioning else None, provisioning[1] if provisioning else "")


def _checks(flavors: Sequence[QueueFlavor], pools: Sequence[Pool]) -> tuple[ProvisioningCheck, ...]:
    """One provisioning admission check per provisioning class the flavors need."""
    classes: dict[str, list[QueueFlavor]] = defaultdict(list)
    for flavor in flavors:
        if flavor.provisioning_class:
            classes[flavor.provisioning_class].append(flavor)
    out = []
    for name, members in sorted(classes.items()):
        resources = sorted({r for f in members for p in pools if p.name == f.pool for r, _ in p.node_offers})
        out.append(ProvisioningCheck(QUEUE_NAMES.make(name, name.replace(".", "-")), name, tuple(resources),
                                     tuple(f.name for f in members), members[0].provisioning_source))
    return tuple(out)


def _quota(pool: Pool, members: Sequence[PodRequest], covered: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """What the team's replicas in `pool` take at the plan's peak, per covered resource."""
    totals: dict[str, int] = dict.fromkeys(covered, 0)  # cpu in millicores, memory in MiB, the rest as counts
    team = {r.workload: r for r in members}
    for placement in pool.placements:
        request = team.get(placement.workload)
        if request is None or not placement.replicas:
            continue
        for name, amount in _per_replica(pool, placement, request).items():
            totals[name] += amount * placement.replicas
    return tuple((name, _quantity(name, totals[name])) for name in covered)


def _per_replica(pool: Pool, placement: Placement, request: PodRequest) -> dict[str, int]:
    asked = dict(request.resources)
    share = placement.gpu_share / pool.gpus_per_node  # of a node, for what the replica does not ask
    allocatable = dict(pool.node_allocatable)
    out = {name: int(value) for name, value in asked.items() if name not in ("cpu", "memory")}
    out["cpu"] = _millicores(asked.get("cpu") or allocatable["cpu"], 1.0 if "cpu" in asked else share)
    out["memory"] = _mebibytes(asked.get("memory") or allocatable["memory"], 1.0 if "memory" in asked else share)
    return out


def _millicores(quantity: str, share: float) -> int:
    found = _CPU.fullmatch(quantity)
    assert found, quantity  # the plan's own spelling (offers.quantity_cpu, offers.node_allocatable)
    millis = int(found[1]) * (1 if found[2] else 1000)
    return millis if share == 1.0 else math.floor(millis * share)


def _mebibytes(quantity: str, share: float) -> int:
    found = _MEMORY.fullmatch(quantity)
    assert found, quantity
    mib = int(found[1]) * (1024 if found[2] == "Gi" else 1)
    return mib if share == 1.0 else math.floor(mib * share)


def _quantity(name: str, amount: int) -> str:
    if name == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if name == "memory":
        return f"{amount // 1024}Gi" if amount % 1024 == 0 else f"{amount}Mi"
    return str(amount)


def notes(queueing: Queueing) -> tuple[str, ...]:
    """What a person deploying the target must know about its queues (shown with the plan)."""
    out = []
    if queueing.queues:
        teams = ", ".join(f"{q.name} ({', '.join(q.workloads)})" for q in queueing.queues)
        out.append(f"Kueue admits the training and fine-tuning Jobs: a ClusterQueue per team in cohort "
                   f"{queueing.cohort} ({teams}), each Job labelled kueue.x-k8s.io/queue-name with its team's "
                   "LocalQueue (`gpustack render --workloads`); the cluster must run Kueue v0.19 or later "
                   "(kueue.x-k8s.io/v1beta2).")
    if queueing.unqueued:
        out.append(f"Not queued: {', '.join(queueing.unqueued)} (inference and notebooks run as Deployments or "
                   "StatefulSets, which Kueue does not suspend and admit: it manages Jobs).")
    for check in queueing.checks:
        out.append(f"Kueue asks for the nodes of {', '.join(check.flavors)} with a ProvisioningRequest of class "
                   f"{check.provisioning_class} before it admits a Job there (AdmissionCheck {check.name}; "
                   f"{check.source}).")
    return tuple(out)
