"""Workloads wired to their pools: per workload the pod-spec fragment that lands its pods on the pools
the plan gave it, and nowhere else, built from the plan's `pod_requests`.

Each fragment carries
- node affinity: required, `gpustack.dev/pool In (<its pools>)`; preferred, the reserved floor before
  the on-demand burst, or the spot pools before their on-demand fallback (the scheduler's choice among
  running nodes; which pool the autoscaler grows is the priority expander's or the ComputeClass's,
  see autoscaling.py);
- the node selector the plan asks (the pool kind, a MIG profile, a GKE ComputeClass);
- tolerations for exactly the taints of its pools (operator Exists on key and effect);
- requests for cpu, memory and the extended resource its sharing mode needs, and a limit equal to the
  request for the extended resources (Kubernetes refuses extended resources without it); on a DRA target
  no extended resource but the pod's `resourceClaims` entry and the container's `resources.claims`;
- on targets with `settings.queue: kueue`, `kueue.x-k8s.io/queue-name` on the Jobs (a CronJob's jobTemplate)
  of training and fine-tuning, naming their team's LocalQueue (render/kueue.py);
- the attribution labels and `gpustack.dev/workload` on the object (what auto-stop selects) and on its
  pods (what cost reports group by), plus `gpustack.dev/checkpointing` on pods that may run on spot;
- what the provisioner needs to leave the pods be (the plan's pod request: Karpenter's
  `karpenter.sh/do-not-disrupt` annotation on training that cannot resume, and its
  terminationGracePeriodSeconds).

Written two ways: a Kustomize strategic-merge patch per workload targeting its object by kind, name and
namespace (listed in a kustomize Component), and a Helm values snippet with the keys most charts use.
The object and its GPU container are chosen in workload_objects.py (a strategic merge matches
containers by name); the patch replaces the pod's tolerations and node affinity as a whole (those
lists have no merge key).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gpustack.plan import claims
from gpustack.plan.model import PodRequest, Pool, TargetPlan
from gpustack.plan.pools import POOL_LABEL
from gpustack.render.common import WORKLOAD_LABEL
from gpustack.render.workload_objects import OBJECT_KINDS as OBJECT_KINDS  # where keda.py and idle.py read it
from gpustack.render.workload_objects import FoundObject, patch_target
from gpustack.render.kueue import queue_labels

API_VERSIONS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1",
                "Pod": "v1"}
# Preferred-affinity weights (1-100): the pool to fill first, and the one to spill into.
FIRST, THEN = 100, 10
_FIRST_ROLES = {"floor", "main"}
_THEN_ROLES = {"burst", "fallback"}


@dataclasses.dataclass(frozen=True)
class WorkloadWiring:
    workload: str
    namespace: str
    kind: str  # the Kubernetes kind the patch targets
    pod_labels: dict[str, str]
    object_labels: dict[str, str]
    pod_spec: dict[str, Any]  # nodeSelector, affinity, tolerations
    resources: dict[str, Any]  # requests, limits; claims on a DRA target
    pod_annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    name: str = ""  # the object's name ("": the workload's)
    container: str = ""  # the GPU container the patch merges into ("": the one named after the workload)

    @property
    def object_name(self) -> str:
        return self.name or self.workload

    @property
    def gpu_container(self) -> str:
        return self.container or self.workload


def _pool_terms(pools: list[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": sorted(pools)}]}


def affinity(request: PodRequest, pools: dict[str, Pool]) -> dict[str, Any]:
    mine = [pools[name] for name in request.pools]
    node: dict[str, Any] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_pool_terms(list(request.pools))]}}
    first = [p.name for p in mine if p.role in _FIRST_ROLES]
    then = [p.name for p in mine if p.role in _THEN_ROLES]
    if first and then:
        node["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": FIRST, "preference": _pool_terms(first)}, {"weight": THEN, "preference": _pool_terms(then)}]
    return {"nodeAffinity": node}


def resources(request: PodRequest) -> dict[str, Any]:
    requests = dict(request.resources)
    limits = {k: v for k, v in requests.items() if "/" in k}  # extended resources: limit = request
    out: dict[str, Any] = {"requests": requests} if requests else {}
    if limits:
        out["limits"] = limits
    if request.claim is not None:  # DRA: the container uses the pod's claim (no nvidia.com/* resources)
        out["claims"] = [{"name": request.claim.request}]
    return out


def resource_claims(request: PodRequest) -> list[dict[str, str]]:
    """The pod's `resourceClaims` on a DRA target: its claim, from the workload's template (a claim per pod)
    or the one claim all its pods share (time-slicing and MPS)."""
    claim = request.claim
    if claim is None:
        return []
    key = "resourceClaimTemplateName" if claim.kind == claims.TEMPLATE else "resourceClaimName"
    return [{"name": claim.request, key: claim.name}]


def wiring(target: TargetPlan, request: PodRequest, found: FoundObject | None = None) -> WorkloadWiring:
    pools = {p.name: p for p in target.pools}
    labels = {**dict(request.labels), WORKLOAD_LABEL: request.workload}
    pod_spec: dict[str, Any] = {}
    if request.node_selector:
        pod_spec["nodeSelector"] = dict(request.node_selector)
    pod_spec["affinity"] = affinity(request, pools)
    pod_spec["tolerations"] = [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in request.tolerations]
    if request.termination_grace_seconds is not None:
        pod_spec["terminationGracePeriodSeconds"] = request.termination_grace_seconds
    if request.claim is not None:
        pod_spec["resourceClaims"] = resource_claims(request)
    chosen = patch_target(request, found)
    if request.topology_spread:  # the workload's availability (gpustack.plan.spread)
        pod_spec["topologySpreadConstraints"] = spread_constraints(request, chosen.kind)
    # A queued workload's Jobs name their LocalQueue (on a CronJob: on its jobTemplate, which the patch labels).
    object_labels = {**labels, **queue_labels(target, request.workload)}
    return WorkloadWiring(request.workload, request.namespace, chosen.kind,
                          dict(request.pod_labels), dict(sorted(object_labels.items())), pod_spec,
                          resources(request), dict(sorted(request.annotations)), chosen.name, chosen.container)


def spread_constraints(request: PodRequest, kind: str) -> list[dict[str, Any]]:
    """The pods' topology spread constraints, counting the workload's own pods of one revision
    (matchLabelKeys pod-template-hash: a Deployment's rollout does not count the old pods)."""
    revision = {"matchLabelKeys": ["pod-template-hash"]} if kind == "Deployment" else {}
    return [{"topologyKey": t.topology_key, "maxSkew": t.max_skew, "minDomains": t.min_domains,
             "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {WORKLOAD_LABEL: request.workload}}, **revision}
            for t in request.topology_spread]


def wirings(target: TargetPlan, found: Mapping[str, FoundObject] | None = None) -> tuple[WorkloadWiring, ...]:
    """Every workload's wiring; `found` (workload -> its object in the team's manifests) names the objects
    and containers the patches target."""
    found = found or {}
    return tuple(wiring(target, r, found.get(r.workload))
                 for r in sorted(target.pod_requests, key=lambda r: (r.namespace, r.workload)))


def pod_template(w: WorkloadWiring) -> dict[str, Any]:
    spec = dict(w.pod_spec, containers=[{"name": w.gpu_container, "resources": w.resources}])
    metadata: dict[str, Any] = {"labels": w.pod_labels}
    if w.pod_annotations:
        metadata["annotations"] = w.pod_annotations
    return {"metadata": metadata, "spec": spec}


def patch(w: WorkloadWiring, kind: str | None = None) -> dict[str, Any]:
    """The strategic-merge patch of the workload's object (`kind` overrides the kind's usual object)."""
    kind = kind or w.kind
    template = pod_template(w)
    spec: dict[str, Any]
    if kind == "Pod":
        return {"apiVersion": API_VERSIONS[kind], "kind": kind,
                "metadata": {"name": w.object_name, "namespace": w.namespace, **template["metadata"]},
                "spec": template["spec"]}
    if kind == "CronJob":
        spec = {"jobTemplate": {"metadata": {"labels": w.object_labels}, "spec": {"template": template}}}
    else:
        spec = {"template": template}
    return {"apiVersion": API_VERSIONS[kind], "kind": kind,
            "metadata": {"name": w.object_name, "namespace": w.namespace, "labels": w.object_labels}, "spec": spec}


def patch_file(w: WorkloadWiring) -> str:
    return f"patches/{w.namespace}-{w.workload}.yaml"


def kustomization(ws: tuple[WorkloadWiring, ...]) -> dict[str, Any]:
    """A kustomize Component (`components: [<dir>]` in the team's overlay) listing every patch with its
    target, so a patch applies to its workload's object only."""
    return {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
            "patches": [{"path": patch_file(w),
                         "target": {"kind": w.kind, "name": w.object_name, "namespace": w.namespace}} for w in ws]}


def helm_values(w: WorkloadWiring) -> dict[str, Any]:
    """The keys most application charts expose (podLabels, nodeSelector, affinity, tolerations, resources)."""
    values: dict[str, Any] = {"podLabels": w.pod_labels}
    if w.pod_annotations:
        values["podAnnotations"] = w.pod_annotations
    values.update(w.pod_spec)
    values["resources"] = w.resources
    return values
