"""A model of Kueue's admission of Jobs over the flavors of their ClusterQueue, read from the objects
`gpustack render` writes (ResourceFlavors, ClusterQueues) and the pod templates `gpustack render
--workloads` patches in, never from the plan.

It follows kubernetes-sigs/kueue at tag v0.19.2 (commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb),
pkg/scheduler/flavorassigner/flavorassigner.go:
- `findFlavorForPodSets`: the flavors of the resource group that covers the requested resources, in
  their order (a resource no group covers: "resource %s unavailable in ClusterQueue"); each flavor is
  first checked by `checkFlavorForPodSets`, then every requested resource by `fitsResourceQuota`; the
  search stops at the first flavor where `shouldTryNextFlavor` is false, else the best mode seen wins;
- `checkFlavorForPodSets`: the flavor's nodeTaints must be tolerated by the pod's tolerations plus the
  flavor's own, and the pod's nodeSelector and required node affinity, cut to the flavor's nodeLabels
  keys (`flavorSelector`), must match a node carrying exactly those labels;
- `fitsResourceQuota`: a request above what the cohort could ever lend (PotentialAvailable: with no
  borrowing or lending limits, the cohort's nominal quota) is noFit; within what is unused now in the
  cohort (Available) it fits, borrowing when it is more than the queue's own unused nominal quota;
  otherwise only preemption could make room (`SimulatePreemption`), which this model reports as
  "preempt" and never performs;
- `shouldTryNextFlavor`: noFit always tries the next flavor; a preempt mode does when whenCanPreempt is
  TryNextFlavor; borrowing does when whenCanBorrow is TryNextFlavor.
Admitted workloads add their requests to the queue's usage of that flavor (pkg/cache/scheduler), which
is what later admissions see.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from gpustack.guardrails.manifests import selects
from gpustack.guardrails.quantity import parse_quantity

FIT, BORROW, PREEMPT, NO_FIT = "fit", "borrow", "preempt", "no-fit"


@dataclasses.dataclass(frozen=True)
class Job:
    """One Kueue Workload of a batch/v1 Job: `count` pods of one template."""

    name: str
    queue: str  # the ClusterQueue its LocalQueue points to
    pod_spec: Mapping[str, Any]  # nodeSelector, affinity, tolerations
    requests: Mapping[str, Fraction]  # per pod
    count: int = 1


@dataclasses.dataclass(frozen=True)
class Admission:
    job: str
    flavor: str | None  # None: not admitted now
    mode: str  # fit | borrow | preempt | no-fit
    reasons: tuple[str, ...] = ()


def pod_requests(resources: Mapping[str, Any]) -> dict[str, Fraction]:
    out = {}
    for name, value in resources.items():
        amount = parse_quantity(value)
        assert amount is not None, (name, value)
        out[name] = amount
    return out


def flavor_matches(pod_spec: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """`flavorSelector` (the pod's nodeSelector and required node affinity cut to the flavor's label keys),
    then the scheduler's rule on a node with the flavor's labels only."""
    keys = set(node_labels)
    cut: dict[str, Any] = {"nodeSelector": {k: v for k, v in (pod_spec.get("nodeSelector") or {}).items() if k in keys}}
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = []
    for term in required.get("nodeSelectorTerms", []):
        kept = [e for e in term.get("matchExpressions", []) if e["key"] in keys]
        if not kept:  # a term left empty matches any flavor (terms are ORed): only the nodeSelector counts
            terms = []
            break
        terms.append({"matchExpressions": kept})
    if terms:
        cut["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    return selects(cut, node_labels)


def _tolerated(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if (t.get("operator") or "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


class Cohort:
    """ClusterQueues of one cohort with their usage per (flavor, resource)."""

    def __init__(self, cluster_queues: Sequence[Mapping[str, Any]], flavors: Sequence[Mapping[str, Any]]):
        self.queues = {q["metadata"]["name"]: q for q in cluster_queues}
        assert len({q["spec"].get("cohortName") for q in cluster_queues}) == 1, "one cohort"
        self.flavors = {f["metadata"]["name"]: f for f in flavors}
        self.usage: dict[tuple[str, str, str], Fraction] = {}  # (queue, flavor, resource) -> used

    def nominal(self, queue: str, flavor: str, resource: str) -> Fraction:
        for group in self.queues[queue]["spec"]["resourceGroups"]:
            for f in group["flavors"]:
                if f["name"] == flavor:
                    for r in f["resources"]:
                        if r["name"] == resource:
                            amount = parse_quantity(r["nominalQuota"])
                            assert amount is not None
                            return amount
        return Fraction(0)

    def _cohort_total(self, flavor: str, resource: str) -> Fraction:
        return sum((self.nominal(q, flavor, resource) for q in self.queues), Fraction(0))

    def _cohort_used(self, flavor: str, resource: str) -> Fraction:
        return sum((v for (_, f, r), v in self.usage.items() if (f, r) == (flavor, resource)), Fraction(0))

    def fits_resource_quota(self, queue: str, flavor: str, resource: str, value: Fraction) -> str:
        if value > self._cohort_total(flavor, resource):  # PotentialAvailable
            return NO_FIT
        available = self._cohort_total(flavor, resource) - self._cohort_used(flavor, resource)
        own = self.nominal(queue, flavor, resource) - self.usage.get((queue, flavor, resource), Fraction(0))
        if value <= available:
            return FIT if value <= own else BORROW
        return PREEMPT

    def check_flavor(self, job: Job, flavor_name: str) -> str | None:
        flavor = self.flavors.get(flavor_name)
        if flavor is None:
            return f"flavor {flavor_name} not found"
        spec = flavor.get("spec", {})
        tolerations = [*job.pod_spec.get("tolerations", []), *spec.get("tolerations", [])]
        for taint in spec.get("nodeTaints", []):
            if taint["effect"] in ("NoSchedule", "NoExecute") and not _tolerated(taint, tolerations):
                return f"untolerated taint {taint['key']} in flavor {flavor_name}"
        if not flavor_matches(job.pod_spec, spec.get("nodeLabels", {})):
            return f"flavor {flavor_name} doesn't match node affinity"
        return None

    def assign(self, job: Job) -> Admission:
        """`findFlavorForPodSets` for a Job's one pod set; admits it when a flavor fits (usage grows)."""
        spec = self.queues[job.queue]["spec"]
        fungibility = spec.get("flavorFungibility", {})
        [group] = [g for g in spec["resourceGroups"] if set(job.requests) & set(g["coveredResources"])]
        missing = set(job.requests) - set(group["coveredResources"])
        if missing:
            return Admission(job.name, None, NO_FIT, (f"resource {sorted(missing)[0]} unavailable in ClusterQueue",))
        rank = {FIT: 0, BORROW: 1, PREEMPT: 2, NO_FIT: 3}
        best: tuple[str | None, str] = (None, NO_FIT)
        reasons = []
        for flavor in (f["name"] for f in group["flavors"]):
            why = self.check_flavor(job, flavor)
            if why:
                reasons.append(why)
                continue
            modes = [self.fits_resource_quota(job.queue, flavor, r, v * job.count) for r, v in job.requests.items()]
            mode = max(modes, key=rank.__getitem__)  # the worst mode among the requests
            if mode != FIT:
                reasons.append(f"{flavor}: {mode}")
            if rank[mode] < rank[best[1]]:
                best = (flavor, mode)
            if not _should_try_next_flavor(mode, fungibility):
                best = (flavor, mode)
                break
        flavor, mode = best
        if flavor is None or mode not in (FIT, BORROW):
            return Admission(job.name, None, mode, tuple(reasons))
        for resource, value in job.requests.items():
            key = (job.queue, flavor, resource)
            self.usage[key] = self.usage.get(key, Fraction(0)) + value * job.count
        return Admission(job.name, flavor, mode, tuple(reasons))

    def finish(self, job: Job, flavor: str) -> None:
        for resource, value in job.requests.items():
            self.usage[job.queue, flavor, resource] -= value * job.count


def _should_try_next_flavor(mode: str, fungibility: Mapping[str, str]) -> bool:
    if mode == NO_FIT:
        return True
    if mode == PREEMPT and fungibility.get("whenCanPreempt", "TryNextFlavor") == "TryNextFlavor":
        return True
    return mode == BORROW and fungibility.get("whenCanBorrow", "MayStopSearch") == "TryNextFlavor"


def cohort_of(objects: Sequence[Mapping[str, Any]]) -> Cohort:
    return Cohort([o for o in objects if o["kind"] == "ClusterQueue"],
                  [o for o in objects if o["kind"] == "ResourceFlavor"])


def job_of(patch: Mapping[str, Any], cluster_queue: str, name: str | None = None, count: int = 1) -> Job:
    """A Job as `gpustack render --workloads` patches it (its one container's requests)."""
    template = patch["spec"]["template"]["spec"]
    [container] = template["containers"]
    return Job(name or patch["metadata"]["name"], cluster_queue,
               {k: v for k, v in template.items() if k != "containers"},
               pod_requests(container["resources"]["requests"]), count)
