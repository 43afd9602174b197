"""`gpustack check --manifests`: the team's own workload manifests checked against the plan's pod requests.

A manifest object is matched to a workload by its `gpustack.dev/workload` label (on the object or its pod
template), else by name and namespace (an object without a namespace takes the one it is applied to, so it
matches by name). Its pod template must then land on the workload's pools and on no other: tolerate every
taint of its pools, select only its pools (nodeSelector / required node affinity, the scheduler's rules:
https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/), request the extended resource
its sharing mode needs and no more than one node of its pools offers, carry the checkpointing label
where a pool is spot, and the annotations and grace period the provisioner needs (the plan's pod request:
Karpenter's karpenter.sh/do-not-disrupt on training that cannot resume), and on a queued target the Jobs
name their team's LocalQueue (queue_labels.py). GPU-requesting objects that match no workload are reported
as warnings.

Containers: every container needs an image (the API server refuses a pod without one; a strategic-merge
patch whose container name is in no container adds one like that), and the container the patch of
`gpustack render --workloads` merges into (`PodRequest.gpu_container`: the spec's `container`, else the
object's only container, else the workload's name) must be one of the object's, or the patch adds it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.clouds.base import CLASS_PRIORITIES
from gpustack.errors import Location, show
from gpustack.guardrails import dra_manifests
from gpustack.guardrails.quantity import PRECISION, PRECISION_SOURCE, effective_request, imprecise, parse_quantity
from gpustack.guardrails.queue_labels import queue_problems
from gpustack.plan.model import PodRequest, Pool, Taint, TargetPlan
from gpustack.plan.pools import CHECKPOINTING_LABEL, POOL_LABEL, WORKLOAD_LABEL
from gpustack.spec.yamlsource import Document, Path, path_str

ERROR, WARNING = "error", "warning"
# Where each workload kind keeps its pod template.
TEMPLATE_PATHS: dict[str, Path] = {
    "Pod": (), "Deployment": ("spec", "template"), "StatefulSet": ("spec", "template"),
    "Job": ("spec", "template"), "CronJob": ("spec", "jobTemplate", "spec", "template")}
_GPU_VENDORS = ("nvidia.com/", "amd.com/", "gpu.intel.com/")


@dataclasses.dataclass(frozen=True)
class ManifestFinding:
    level: str  # error | warning
    location: Location | None
    path: str  # field path inside the document
    obj: str  # Kind/namespace/name
    workload: str  # "" when it matches no workload
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "location": str(self.location) if self.location else None, "path": self.path,
                "object": self.obj, "workload": self.workload, "message": self.message, "fix": self.fix}


def _get(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, dict) else None
    return data


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items()}


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """The scheduler's rule (k8s.io/api core/v1 Toleration.ToleratesTaint)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return bool(key) and operator == "Equal" and str(toleration.get("value") or "") == taint.value


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = str(expression.get("key", "")), expression.get("operator")
    values = [str(v) for v in _list(expression.get("values"))]
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def selects(pod_spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a node with `labels` passes the pod's nodeSelector and required node affinity."""
    if any(labels.get(k) != v for k, v in _str_map(pod_spec.get("nodeSelector")).items()):
        return False
    required = _mapping(_get(pod_spec, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")))
    terms = [_mapping(t) for t in _list(required.get("nodeSelectorTerms"))]
    if not required:
        return True
    # Terms are ORed, a term's expressions ANDed; a term without expressions selects nothing.
    return any(t.get("matchExpressions") and all(_expression_matches(_mapping(e), labels)
                                                 for e in _list(t.get("matchExpressions"))) for t in terms)


def _lands(pod_spec: Mapping[str, Any], pool: Pool) -> bool:
    tolerations = [_mapping(t) for t in _list(pod_spec.get("tolerations"))]
    return selects(pod_spec, dict(pool.labels)) and all(any(_tolerates(t, taint) for t in tolerations)
                                                         for taint in pool.taints if taint.effect != "PreferNoSchedule")


def _quantity(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def extended_requests(pod_spec: Mapping[str, Any], template_path: Path) -> dict[str, tuple[int | None, Path]]:
    """Extended resources the pod's containers ask (the limit, else the request), summed over containers,
    with the path of the first one (a quantity that is no whole number sums to None)."""
    out: dict[str, tuple[int | None, Path]] = {}
    for index, container in enumerate(_list(pod_spec.get("containers"))):
        res = _mapping(_mapping(container).get("resources"))
        asked: dict[str, tuple[Any, str]] = {}
        for field in ("requests", "limits"):  # a limit overrides the request (Kubernetes defaults one to the other)
            asked.update({str(k): (v, field) for k, v in _mapping(res.get(field)).items() if "/" in str(k)})
        for name, (value, field) in asked.items():
            where = (*template_path, "spec", "containers", index, "resources", field, name)
            before, first = out.get(name, (0, where))
            amount = _quantity(value)
            out[name] = (None if before is None or amount is None else before + amount, first)
    return out


@dataclasses.dataclass(frozen=True)
class _Object:
    doc: Document
    kind: str
    name: str
    namespace: str | None
    template: Path  # path of the pod template (metadata + spec) in the document

    @property
    def title(self) -> str:
        return f"{self.kind}/{self.namespace or '-'}/{self.name}"

    def at(self, *path: str | int) -> Any:
        return _get(self.doc.data, (*self.template, *path))


def objects(documents: Sequence[Document]) -> list[_Object]:
    out = []
    for doc in documents:
        data = _mapping(doc.data)
        kind = data.get("kind")
        if kind == "List":  # `kubectl get -o yaml` wraps objects in a List
            for i, item in enumerate(_list(data.get("items"))):
                sub = Document(doc.file, item, {p[2:]: m for p, m in doc.marks.items() if p[:2] == ("items", i)},
                               {p[2:]: m for p, m in doc.key_marks.items() if p[:2] == ("items", i)})
                out.extend(objects([sub]))
            continue
        if not isinstance(kind, str) or kind not in TEMPLATE_PATHS:
            continue
        meta = _mapping(data.get("metadata"))
        namespace = meta.get("namespace")
        out.append(_Object(doc, kind, str(meta.get("name", "")), str(namespace) if namespace else None,
                           TEMPLATE_PATHS[kind]))
    return out


def container_names(obj: _Object) -> tuple[str, ...]:
    return tuple(str(_mapping(c).get("name", "")) for c in _list(obj.at("spec", "containers")))


def found_objects(target: TargetPlan, documents: Sequence[Document]) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """Workload -> (kind, name, container names) of its object in the manifests, where exactly one matches."""
    requests = sorted(target.pod_requests, key=lambda r: (r.namespace, r.workload))
    matched: dict[str, list[_Object]] = {}
    for obj in objects(documents):
        request = _match(obj, requests)
        if request is not None:
            matched.setdefault(request.workload, []).append(obj)
    return {name: (objs[0].kind, objs[0].name, container_names(objs[0])) for name, objs in matched.items()
            if len(objs) == 1}


def _match(obj: _Object, requests: Sequence[PodRequest]) -> PodRequest | None:
    labelled = (_str_map(_get(obj.doc.data, ("metadata", "labels"))).get(WORKLOAD_LABEL)
                or _str_map(obj.at("metadata", "labels")).get(WORKLOAD_LABEL))
    if labelled:
        named = [r for r in requests if r.workload == labelled and obj.namespace in (None, r.namespace)]
    else:
        named = [r for r in requests if r.workload == obj.name and obj.namespace in (None, r.namespace)]
    return named[0] if len(named) == 1 else None


def check(target: TargetPlan, documents: Sequence[Document]) -> list[ManifestFinding]:
    requests = sorted(target.pod_requests, key=lambda r: (r.namespace, r.workload))
    gpu_resources = {name for p in target.pools for name, _ in p.node_offers}
    findings: list[ManifestFinding] = []
    found = dra_manifests.claim_objects(documents)
    for obj in objects(documents):
        request = _match(obj, requests)
        pod_spec = _mapping(obj.at("spec"))
        asked = extended_requests(pod_spec, obj.template)
        findings.extend(_imageless(obj, pod_spec, request))
        if request is None:
            gpus = sorted(n for n in asked if n in gpu_resources or n.startswith(_GPU_VENDORS))
            if gpus:
                findings.append(ManifestFinding(
                    WARNING, obj.doc.where(asked[gpus[0]][1]), path_str(asked[gpus[0]][1]), obj.title, "",
                    f"requests {gpus[0]} but matches no workload of the spec (by the {WORKLOAD_LABEL} label, "
                    "or by name and namespace)",
                    f"label it {WORKLOAD_LABEL}: <workload> and wire it with `gpustack render --workloads`, or add "
                    "the workload to the spec"))
            continue
        findings.extend(_check_object(target, obj, request, pod_spec, asked, found))
    return findings


def _imageless(obj: _Object, pod_spec: Mapping[str, Any], request: PodRequest | None) -> list[ManifestFinding]:
    out = []
    for field in ("initContainers", "containers"):
        for index, container in enumerate(_list(pod_spec.get(field))):
            container = _mapping(container)
            if isinstance(container.get("image"), str) and container["image"].strip():
                continue
            name = str(container.get("name", ""))
            path = (*obj.template, "spec", field, index)
            others = [n for n, c in zip(container_names(obj), _list(pod_spec.get("containers")), strict=True)
                      if n != name and _mapping(c).get("image")]
            fix = "give it an image"
            if request is not None and others:
                fix += (f"; if a patch added it, set `container: {others[0]}` on workload {request.workload} in the "
                        "spec and render the patches again")
            out.append(ManifestFinding(ERROR, obj.doc.where(path), path_str(path), obj.title,
                                       request.workload if request else "",
                                       f"container {name!r} has no image: the API server refuses its pods (a "
                                       "strategic-merge patch whose container name matches none of the object's "
                                       "adds a container like it)", fix))
    return out


def _patched_container(obj: _Object, request: PodRequest) -> list[ManifestFinding]:
    """The container the workload's patch merges into is one of the object's (else the patch adds it)."""
    names = container_names(obj)
    path = (*obj.template, "spec", "containers")
    patched = request.gpu_container(names)
    if not names:
        return []
    if patched not in names:
        return [ManifestFinding(
            ERROR, obj.doc.where(path), path_str(path), obj.title, request.workload,
            f"`gpustack render --workloads` patches the container named {patched!r}, which the object does not have "
            f"({', '.join(names)}): the patch would add a second container, without an image, asking for the GPUs "
            "again", f"set `container: <one of {', '.join(names)}>` on workload {request.workload} in the spec")]
    if request.container is None and patched != request.workload:
        return [ManifestFinding(
            WARNING, obj.doc.where(path), path_str(path), obj.title, request.workload,
            f"its only container is {patched!r}, not {request.workload!r}: `gpustack render --workloads` patches it "
            f"when given these manifests (--manifests), and without them adds a container {request.workload!r}",
            f"set `container: {patched}` on workload {request.workload} in the spec")]
    return []


def _class_marker(target: TargetPlan) -> str | None:
    """The class label pods must select by nodeSelector where the pools are a class's priorities: nodes
    are created only for pods that select the class."""
    mechanism = CLOUDS.get(target.cloud).provisioner(target.provisioner).fallback_mechanism
    return mechanism.pool_marker if mechanism is not None and mechanism.kind == CLASS_PRIORITIES else None


@dataclasses.dataclass
class _ObjectCheck:
    """One object against its workload's pod request: what every check reads, and the findings so far."""
    target: TargetPlan
    obj: _Object
    request: PodRequest
    pod_spec: Mapping[str, Any]
    mine: list[Pool]  # the workload's pools
    out: list[ManifestFinding] = dataclasses.field(default_factory=list)

    @property
    def spec_path(self) -> Path:
        return (*self.obj.template, "spec")

    @property
    def wanted(self) -> str:
        return f"{POOL_LABEL} In ({', '.join(sorted(self.request.pools))})"

    def finding(self, path: Path, message: str, fix: str, level: str = ERROR) -> None:
        self.out.append(ManifestFinding(level, self.obj.doc.where(path), path_str(path), self.obj.title,
                                        self.request.workload, message, fix))


def _check_object(target: TargetPlan, obj: _Object, request: PodRequest, pod_spec: Mapping[str, Any],
                  asked: Mapping[str, tuple[int | None, Path]],
                  claims_found: Mapping[tuple[str, str | None, str], tuple[Document, Path]]) -> list[ManifestFinding]:
    pools = {p.name: p for p in target.pools}
    check = _ObjectCheck(target, obj, request, pod_spec, [pools[n] for n in request.pools if n in pools])
    _check_tolerations(check)
    _check_placement(check)
    _check_resources(check, asked, claims_found)
    _check_protection(check)
    check.out.extend(_node_fit(obj, request, pod_spec, check.mine))
    check.out.extend(_patched_container(obj, request))
    for path, message, fix in queue_problems(target, request.workload, obj.kind, _mapping(obj.doc.data)):
        check.finding(path, message, fix)
    _check_checkpoint_label(check)
    return check.out


def _check_tolerations(check: _ObjectCheck) -> None:
    tolerations = [_mapping(t) for t in _list(check.pod_spec.get("tolerations"))]
    for taint in check.request.tolerations:
        if not any(_tolerates(t, taint) for t in tolerations):
            check.finding((*check.spec_path, "tolerations"),
                          f"no toleration for the taint {taint.key}:{taint.effect} of its pools, so its pods stay "
                          "Pending", f"add {{key: {taint.key}, operator: Exists, effect: {taint.effect}}} to tolerations")


def _check_placement(check: _ObjectCheck) -> None:
    """Its pods select its pools (and the class of them, where pools are a class's priorities) and no other."""
    request, pod_spec, wanted = check.request, check.pod_spec, check.wanted
    affinity_path = (*check.spec_path, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    marker = _class_marker(check.target)
    if marker is not None and marker in dict(request.node_selector):
        selector = f"nodeSelector {{{marker}: {dict(request.node_selector)[marker]}}}"
        if _str_map(pod_spec.get("nodeSelector")).get(marker) != dict(request.node_selector)[marker]:
            check.finding((*check.spec_path, "nodeSelector"), "its pods do not select the class of its pools by "
                          f"nodeSelector {marker}, so no node of its pools is created for them", f"set {selector}")
    if selects(pod_spec, {}):
        check.finding(affinity_path, "no nodeSelector or required node affinity selects its pools: its pods may run "
                      "on any node that offers the resource", f"require node affinity {wanted}")
    for pool in check.target.pools:
        if pool.name not in request.pools and _lands(pod_spec, pool):
            owners = ", ".join(pool.workloads) or "no workload"
            check.finding(affinity_path, f"its pods can land on pool {pool.name} (of {owners})",
                          f"require node affinity {wanted}")
    missed = [p.name for p in check.mine if not selects(pod_spec, dict(p.labels))]
    if missed and len(missed) == len(check.mine):
        check.finding(affinity_path, f"its nodeSelector / node affinity selects none of its pools ({', '.join(missed)})",
                      f"require node affinity {wanted} and nodeSelector {dict(request.node_selector)}")
    elif missed:
        check.finding(affinity_path, f"its node affinity leaves out its pool(s) {', '.join(missed)}: replicas that "
                      "need them stay Pending", f"require node affinity {wanted}", WARNING)


def _check_resources(check: _ObjectCheck, asked: Mapping[str, tuple[int | None, Path]],
                     claims_found: Mapping[tuple[str, str | None, str], tuple[Document, Path]]) -> None:
    """The GPU resources its containers ask for: those of its sharing mode (or its DRA claim), no more than
    a node of its pools offers."""
    request, expected = check.request, {k: v for k, v in check.request.resources if "/" in k}
    if request.claim is not None:  # a DRA target: the claim instead of extended resources (dra_manifests.py)
        def claim_finding(doc: Document, path: Path, title: str, message: str, fix: str) -> None:
            check.out.append(ManifestFinding(ERROR, doc.where(path), path_str(path), title, request.workload, message,
                                             fix))
        dra_manifests.check_pod(request, check.pod_spec, check.spec_path, asked, check.mine, claims_found,
                                check.finding, claim_finding)
        return
    wrong = False
    for name, (_amount, where) in sorted(asked.items()):
        if name not in expected and (name.startswith(_GPU_VENDORS)
                                     or any(name == n for p in check.target.pools for n, _ in p.node_offers)):
            wrong = True
            check.finding(where, f"requests {name}; its sharing mode needs {', '.join(sorted(expected))}",
                          f"request and limit {', '.join(f'{k}: {v}' for k, v in sorted(expected.items()))} instead")
    for name, quantity in sorted(expected.items()):
        if name in asked:
            _check_amount(check, name, quantity, asked[name])
        elif not wrong:  # else already reported with the resource to ask instead
            check.finding((*check.spec_path, "containers"),
                          f"no container requests {name}: its pods get no GPU from its pools",
                          f"set resources.limits and requests {name}: {quantity} on the container named "
                          f"{request.gpu_container(container_names(check.obj))}")


def _check_amount(check: _ObjectCheck, name: str, quantity: Any, asked: tuple[int | None, Path]) -> None:
    amount, where = asked
    most = max((dict(p.node_offers).get(name, 0) for p in check.mine), default=0)
    if amount is None:
        check.finding(where, f"{name} is not a whole number", f"request {name}: {quantity}")
    elif check.mine and amount > most:
        check.finding(where, f"requests {amount} {name}; no node of its pools offers more than {most}, so its pods "
                      "never schedule", f"request at most {most} (the plan sizes it {quantity})")


def _check_protection(check: _ObjectCheck) -> None:
    """The annotations and the grace period its provisioner needs to leave the work alone or let it save."""
    annotations = _str_map(check.obj.at("metadata", "annotations"))
    for key, value in check.request.annotations:
        if annotations.get(key) != value:
            check.finding((*check.obj.template, "metadata", "annotations"),
                          f"its pods lack the annotation {key}: \"{value}\", so {check.target.provisioner} may "
                          "disrupt their node voluntarily (a drift, a consolidation) and the work restarts from the "
                          "beginning", f'annotate its pod template {key}: "{value}"')
    grace = check.pod_spec.get("terminationGracePeriodSeconds")
    wanted_grace = check.request.termination_grace_seconds
    if wanted_grace is not None and not (isinstance(grace, int) and grace >= wanted_grace):
        check.finding((*check.spec_path, "terminationGracePeriodSeconds"),
                      f"terminationGracePeriodSeconds is {grace if grace is not None else 'unset (30)'}: a drain it "
                      f"cannot refuse leaves the job less than the {wanted_grace} s the plan gives it to write what "
                      "it can", f"set terminationGracePeriodSeconds: {wanted_grace}", WARNING)


def _check_checkpoint_label(check: _ObjectCheck) -> None:
    if dict(check.request.pod_labels).get(CHECKPOINTING_LABEL) == "true":
        labels = _str_map(check.obj.at("metadata", "labels"))
        if labels.get(CHECKPOINTING_LABEL) != "true":
            check.finding((*check.obj.template, "metadata", "labels"),
                          f"runs on spot pool(s) {', '.join(p.name for p in check.mine if p.capacity == 'spot')} "
                          f"without the {CHECKPOINTING_LABEL} label on its pods",
                          f'label its pod template {CHECKPOINTING_LABEL}: "true" (it resumes from checkpoints)')


def _node_fit(obj: _Object, request: PodRequest, pod_spec: Mapping[str, Any],
              mine: Sequence[Pool]) -> list[ManifestFinding]:
    """CPU and memory asked above what a node of the pools leaves for pods (the kubelet's allocatable):
    the scheduler never places such a pod, and the autoscaler adds no node for it (its template node is
    too small as well)."""
    out: list[ManifestFinding] = []
    for resource in ("cpu", "memory"):
        offered = {p.name: parse_quantity(dict(p.node_allocatable).get(resource)) for p in mine}
        try:
            found = effective_request(pod_spec, resource)
        except ValueError as exc:
            path = (*obj.template, "spec", "containers")
            out.append(ManifestFinding(ERROR, obj.doc.where(path), path_str(path), obj.title, request.workload,
                                       f"{resource}: {exc}; the API server refuses the object",
                                       f"write it as Kubernetes does, e.g. {dict(request.resources).get(resource)}"))
            continue
        out.extend(_imprecise(obj, request, pod_spec, resource))
        if found is None or not offered or None in offered.values():
            continue
        amount, index, field = found
        short = sorted(name for name, most in offered.items() if most is not None and amount > most)
        if not short:
            continue
        containers = "containers" if index >= 0 else "initContainers"
        path = (*obj.template, "spec", containers, index if index >= 0 else -1 - index, "resources", field, resource)
        largest = max(m for m in offered.values() if m is not None)
        planned = dict(request.resources).get(resource, "?")
        if len(short) == len(offered):
            message = (f"asks {_shown(amount, resource)} {resource} per pod; a node of its pools leaves at most "
                       f"{_shown(largest, resource)} to pods, so its pods never schedule and no node is added for them")
            level = ERROR
        else:
            message = (f"asks {_shown(amount, resource)} {resource} per pod, more than a node of {', '.join(short)} "
                       "leaves to pods: replicas that need those pools stay Pending")
            level = WARNING
        out.append(ManifestFinding(level, obj.doc.where(path), path_str(path), obj.title, request.workload, message,
                                   f"ask at most {_shown(largest, resource)} (the plan sizes it {planned})"))
    return out


def _imprecise(obj: _Object, request: PodRequest, pod_spec: Mapping[str, Any], resource: str
               ) -> list[ManifestFinding]:
    """A request or limit finer than the API server keeps: it is stored rounded up, so the object reads back
    other than it was written (and `kubectl apply` or a GitOps sync sees a change every time)."""
    out = []
    for index, field, written, stored in imprecise(pod_spec, resource):
        containers = "containers" if index >= 0 else "initContainers"
        path = (*obj.template, "spec", containers, index if index >= 0 else -1 - index, "resources", field, resource)
        out.append(ManifestFinding(WARNING, obj.doc.where(path), path_str(path), obj.title, request.workload,
                                   f"{resource} {show(written)} is finer than the API server keeps (whole "
                                   f"nanounits, {PRECISION_SOURCE}): it stores {_nanos(stored)}",
                                   f"write {_nanos(stored)}, what the API server keeps"))
    return out


def _nanos(value: Fraction) -> str:
    """A quantity the API server keeps, in its exact n-suffixed form."""
    return f"{int(value / PRECISION)}n"


def _shown(value: Fraction, resource: str) -> str:
    """A quantity for people: cores with up to three decimals, memory in GiB."""
    if resource == "memory":  # exact: rounded as a Fraction, never through float (which overflows)
        tenths = round(value * 10 / 2**30)
        return f"{tenths // 10}.{tenths % 10}Gi"
    thousandths = round(value * 1000)
    return f"{thousandths // 1000}.{thousandths % 1000:03d}".rstrip("0").rstrip(".")
