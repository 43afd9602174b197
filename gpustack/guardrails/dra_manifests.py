"""`gpustack check --manifests` on a DRA target (`settings.gpu_allocation: dra`): a workload's pods must name
its ResourceClaim and ask for no extended resource, and a claim the manifests bring must select a device
its pools have.

Under DRA no node offers nvidia.com/* extended resources (the GPU Operator's device plugin is off and
NVIDIA's DRA driver publishes ResourceSlices instead), so a pod still asking for one stays Pending. A claim
(ResourceClaimTemplate or ResourceClaim among the manifests) is read the way NVIDIA's driver publishes its
devices (gpustack/plan/claims.py): its DeviceClass (gpu.nvidia.com for whole and shared GPUs, mig.nvidia.com
for MIG devices), its count against what one node has, and the selectors gpustack can read exactly (the
MIG `profile` compared with ==, the `productName` compared with == or matched with matches()); a selector it
cannot read is a warning, never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpustack.plan import claims
from gpustack.plan.model import PodRequest, Pool
from gpustack.spec.yamlsource import Document, Path

Finding = Callable[..., None]  # (path, message, fix, level="error")
CLAIM_KINDS = {claims.TEMPLATE: ("spec", "spec"), claims.SHARED: ("spec",)}
_ATTRIBUTE = r"device\.attributes\['gpu\.nvidia\.com'\]"
_PROFILE = re.compile(rf"{_ATTRIBUTE}\.profile\s*==\s*'([^']*)'")
_PRODUCT_EQ = re.compile(rf"{_ATTRIBUTE}\.productName\s*==\s*'([^']*)'")
_PRODUCT_RE = re.compile(rf"{_ATTRIBUTE}\.productName(\.lowerAscii\(\))?\.matches\('([^']*)'\)")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def claim_objects(documents: Sequence[Document]) -> dict[tuple[str, str | None, str], tuple[Document, Path]]:
    """(kind, namespace, name) -> (document, path of its ResourceClaimSpec) of the claims in the manifests."""
    out: dict[tuple[str, str | None, str], tuple[Document, Path]] = {}
    for doc in documents:
        data = _mapping(doc.data)
        kind = data.get("kind")
        if isinstance(kind, str) and kind in CLAIM_KINDS and str(data.get("apiVersion", "")).startswith("resource.k8s.io/"):
            meta = _mapping(data.get("metadata"))
            namespace = meta.get("namespace")
            out[kind, str(namespace) if namespace else None, str(meta.get("name", ""))] = (doc, CLAIM_KINDS[kind])
    return out


def check_pod(request: PodRequest, pod_spec: Mapping[str, Any], spec_path: Path,
              asked: Mapping[str, tuple[int | None, Path]], mine: Sequence[Pool],
              found: Mapping[tuple[str, str | None, str], tuple[Document, Path]], finding: Finding,
              claim_finding: Callable[[Document, Path, str, str, str], None]) -> None:
    claim = request.claim
    assert claim is not None
    key = "resourceClaimTemplateName" if claim.kind == claims.TEMPLATE else "resourceClaimName"
    wanted = f"resourceClaims: [{{name: {claim.request}, {key}: {claim.name}}}]"
    for name, (_amount, where) in sorted(asked.items()):
        if name.startswith(claims.NVIDIA_RESOURCE_PREFIX):
            finding(where, f"requests the extended resource {name}, which no node of a DRA target offers (the "
                    "device plugin is off; NVIDIA's DRA driver publishes ResourceSlices): its pods stay Pending",
                    f"remove {name} from requests and limits; set {wanted} on the pod and resources.claims: "
                    f"[{{name: {claim.request}}}] on the container named {request.workload}")
    entries = [_mapping(e) for e in _list(pod_spec.get("resourceClaims"))]
    if not entries:
        finding((*spec_path, "resourceClaims"), "names no ResourceClaim: its pods get no GPU on a DRA target",
                f"set {wanted} (`gpustack render --workloads` writes it)")
        return
    used = {str(_mapping(c).get("name")) for ctr in _list(pod_spec.get("containers"))
            for c in _list(_mapping(_mapping(ctr).get("resources")).get("claims"))}
    for index, entry in enumerate(entries):
        path = (*spec_path, "resourceClaims", index)
        if str(entry.get("name")) not in used:
            finding(path, f"no container uses the claim {entry.get('name')!r} (resources.claims): no container sees "
                    "the GPU", f"add resources.claims: [{{name: {entry.get('name')}}}] to the container named "
                    f"{request.workload}")
        for kind, field in ((claims.TEMPLATE, "resourceClaimTemplateName"), (claims.SHARED, "resourceClaimName")):
            named = entry.get(field)
            if not isinstance(named, str):
                continue
            if (kind, request.namespace, named) in found or (kind, None, named) in found:
                doc, spec = found.get((kind, request.namespace, named)) or found[kind, None, named]
                for where, message in claim_problems(_mapping(_get(doc.data, spec)), mine):
                    claim_finding(doc, (*spec, *where), f"{kind}/{named}", message,
                                  f"select what its pools have: `gpustack render` writes the claim {claim.name}")
            elif named != claim.name:
                finding((*path, field), f"names the claim {named!r}, not the workload's {claim.name!r}, and the "
                        "manifests do not hold it", f"set {wanted}", "warning")


def _get(data: Any, path: Path) -> Any:
    for part in path:
        data = _mapping(data).get(str(part))
    return data


def claim_problems(spec: Mapping[str, Any], pools: Sequence[Pool]) -> list[tuple[Path, str]]:
    """What a claim asks that the pools' nodes do not have, per request: (path in the claim spec, message)."""
    out: list[tuple[Path, str]] = []
    for index, request in enumerate(_list(_mapping(spec.get("devices")).get("requests"))):
        exactly = _mapping(_mapping(request).get("exactly"))
        where: Path = ("devices", "requests", index, "exactly")
        device_class = exactly.get("deviceClassName")
        for pool in pools:
            wanted = claims.MIG_CLASS if pool.sharing.mode == "mig" else claims.GPU_CLASS
            if device_class != wanted:
                out.append(((*where, "deviceClassName"), f"asks for DeviceClass {device_class!r}; the devices of pool "
                            f"{pool.name} are {wanted} ({pool.sharing.mode})"))
                continue
            count = exactly.get("count", 1)
            have = _devices_per_node(pool)
            if isinstance(count, int) and count > have:
                out.append(((*where, "count"), f"asks for {count} devices; a node of pool {pool.name} has {have}"))
            for j, selector in enumerate(_list(exactly.get("selectors"))):
                expression = str(_mapping(_mapping(selector).get("cel")).get("expression", ""))
                problem = _selector_problem(expression, pool)
                if problem:
                    out.append(((*where, "selectors", j, "cel", "expression"), problem))
    return out


def _devices_per_node(pool: Pool) -> int:
    if pool.sharing.mode == "mig":
        return sum(count * group.gpus for group in pool.sharing.mig for _profile, count in group.layout)
    return pool.gpus_per_node


def _selector_problem(expression: str, pool: Pool) -> str | None:
    names = claims.PRODUCT_NAMES.get(pool.gpu, ())
    read = False
    if match := _PROFILE.search(expression):
        read = True
        if match.group(1) not in pool.mig_profiles:
            return (f"selects MIG profile {match.group(1)!r}; pool {pool.name} has "
                    f"{', '.join(pool.mig_profiles) or 'no MIG devices'}")
    if match := _PRODUCT_EQ.search(expression):
        read = True
        if names and match.group(1) not in names:
            return f"selects productName {match.group(1)!r}; pool {pool.name} has {pool.gpu} ({', '.join(names)})"
    if match := _PRODUCT_RE.search(expression):
        read = True
        try:
            pattern = re.compile(match.group(2))
        except re.error:
            return f"its productName pattern {match.group(2)!r} is not a regular expression gpustack can read"
        lower = match.group(1) is not None
        if names and not any(pattern.search(n.lower() if lower else n) for n in names):
            return f"its productName pattern matches no {pool.gpu} of pool {pool.name} ({', '.join(names)})"
    if not read:
        return (f"gpustack cannot read the selector {expression!r}: check by hand that a {pool.gpu} of pool "
                f"{pool.name} meets it")
    return None
