"""A DRA target (`settings.gpu_allocation: dra`): the same pools and packing, asked for another way.

DRA changes how a pod asks for its GPU, not what the plan packs: every pool, price and placement stays as
the device plugin would have it. What changes, from the pools and pod requests `offers.annotate` made:
- each workload's pods name a ResourceClaim (`gpustack.plan.claims`) and ask for no nvidia.com/* resource;
  nodes offer no extended resources (NVIDIA's DRA driver publishes ResourceSlices instead);
- a DRA pool's nodes carry the labels the provisioner needs (`DraSupport.node_labels`);
- what the provisioner cannot do is a located error at `settings.gpu_allocation` (`DraSupport.refusal`,
  `refused_modes`, and sharing the driver cannot give), and what it does at a cost a warning naming the
  pools and what they need (`scale_from_zero_gap`: a floor of one node; `switch`; `mode_notes`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from gpustack.clouds.dra import DRA, MIN_KUBERNETES, MIN_KUBERNETES_SOURCE
from gpustack.clouds.provisioner import Provisioner
from gpustack.plan import claims
from gpustack.plan.model import Placement, PodRequest, Pool
from gpustack.spec.kubernetes import older
from gpustack.spec.model import HOURS_PER_MONTH, Spec, Target

Path = tuple[str | int, ...]


@dataclasses.dataclass(frozen=True)
class Outcome:
    pools: tuple[Pool, ...]
    requests: tuple[PodRequest, ...]
    problems: tuple[tuple[Path, str], ...]
    warnings: tuple[tuple[str, str, str | None, str | None], ...]  # (code, message, workload, pool)
    notes: tuple[str, ...]


def chosen(target: Target) -> bool:
    return target.setting("gpu_allocation") == DRA


def apply(spec: Spec, target: Target, provisioner: Provisioner, pools: Sequence[Pool],
          requests: Sequence[PodRequest]) -> Outcome:
    """The pools and pod requests of a DRA target, with its errors, warnings and notes."""
    support = provisioner.dra
    where: Path = ("targets", target.index, "settings", "gpu_allocation")
    if support.refusal is not None:
        return Outcome(tuple(pools), tuple(requests),
                       ((where, f"gpu_allocation 'dra' is not available with {provisioner.description}: "
                                f"{support.refusal}; use gpu_allocation: device-plugin or another provisioner"),),
                       (), ())
    problems: list[tuple[Path, str]] = list(_version_problems(target, provisioner, pools))
    warnings: list[tuple[str, str, str | None, str | None]] = []
    gpu_pools = [p for p in pools if p.gpus_per_node]
    for mode, why in sorted(support.refused_modes.items()):
        if names := [p.name for p in gpu_pools if p.sharing.mode == mode]:
            problems.append((where, f"pools {', '.join(names)} share GPUs by {mode}, which {provisioner.description} "
                                    f"cannot give under DRA: {why}; use gpu_allocation: device-plugin"))
    placed = {(pl.workload, p.name): pl for p in pools for pl in p.placements}
    by_pool = {p.name: p for p in pools}
    out_requests = []
    for request in requests:
        mine = [by_pool[name] for name in request.pools]
        pool = mine[0]
        placement = placed[request.workload, pool.name]
        claim, problem = _claim(spec, request, pool, placement)
        if problem:
            problems.append((where, problem))
        if claim is not None and pool.gpu not in claims.PRODUCT_PATTERNS:
            warnings.append(("dra-product-unknown",
                             f"no NVIDIA product name is known for {pool.gpu}: the claim of {request.workload!r} selects "
                             "any GPU of its class, and its node affinity alone keeps it on its pools",
                             request.workload, None))
        out_requests.append(dataclasses.replace(
            request, claim=claim, resources=tuple((k, v) for k, v in request.resources if not k.startswith("nvidia.com/"))))
    labels = dict(support.node_labels)
    out_pools = tuple(dataclasses.replace(p, node_offers=(), labels=tuple(sorted({**dict(p.labels), **labels}.items())))
                      if p.gpus_per_node else p for p in pools)
    warnings.extend(_costs(support_pools(out_pools), provisioner, target.kubernetes_version))
    unchecked = "" if target.kubernetes_version else "; the version is not checked: the target gives no kubernetes_version"
    notes = (f"gpu_allocation dra: the cluster must run Kubernetes {MIN_KUBERNETES} or later (resource.k8s.io/v1, "
             f"{MIN_KUBERNETES_SOURCE}) and NVIDIA's DRA driver {claims.DRIVER_RELEASE} ({claims.DRIVER_SOURCE}) on "
             f"the GPU nodes instead of the device plugin{unchecked}",) + support.notes
    return Outcome(out_pools, tuple(out_requests), tuple(problems), tuple(warnings), notes)


def _version_problems(target: Target, provisioner: Provisioner, pools: Sequence[Pool]) -> list[tuple[Path, str]]:
    """DRA, and the sharing modes the provisioner plans under DRA, below the target's Kubernetes version."""
    where: Path = ("targets", target.index, "settings", "gpu_allocation")
    version = target.kubernetes_version
    if older(version, MIN_KUBERNETES):
        return [(where, f"gpu_allocation 'dra' needs Kubernetes {MIN_KUBERNETES} or later, where resource.k8s.io/v1 "
                        f"(the API of the claims gpustack writes) is served ({MIN_KUBERNETES_SOURCE}); target "
                        f"{target.name!r} gives kubernetes_version {version}: upgrade the cluster and set "
                        f"kubernetes_version, or use gpu_allocation: device-plugin")]
    found = []
    for mode, minimum in sorted(provisioner.dra.mode_minimums.items()):
        names = [p.name for p in pools if p.gpus_per_node and p.sharing.mode == mode]
        if names and older(version, minimum):
            found.append((where, f"pools {', '.join(names)} share GPUs by {mode} under DRA, which "
                                 f"{provisioner.description} plans on Kubernetes {minimum} or later only "
                                 f"({provisioner.dra.source}); target {target.name!r} gives kubernetes_version "
                                 f"{version}: upgrade the cluster and set kubernetes_version, or use "
                                 "gpu_allocation: device-plugin"))
    return found


def support_pools(pools: Sequence[Pool]) -> tuple[Pool, ...]:
    return tuple(p for p in pools if p.gpus_per_node)


def _claim(spec: Spec, request: PodRequest, pool: Pool, placement: Placement
           ) -> tuple[claims.DeviceClaim | None, str | None]:
    mode = pool.sharing.mode
    product = claims.product_selector(pool.gpu)
    selectors = (product,) if product else ()
    name = claims.claim_name(request.workload)
    if mode == "none":
        return claims.DeviceClaim(name, claims.TEMPLATE, claims.GPU_CLASS, max(1, round(placement.gpu_share)),
                                  selectors, pool.gpu), None
    if mode == "mig":
        assert placement.profile is not None
        return claims.DeviceClaim(name, claims.TEMPLATE, claims.MIG_CLASS, 1,
                                  (claims.profile_selector(placement.profile), *selectors), pool.gpu,
                                  profile=placement.profile), None
    if mode in claims.STRATEGIES:
        replicas = spec.workload(request.workload).replicas.max
        clients = pool.sharing.replicas or 1
        if replicas > clients:
            return None, (f"workload {request.workload!r}: {replicas} replicas time-share GPUs {clients} to a GPU; "
                          f"NVIDIA's DRA driver {claims.DRIVER_RELEASE} shares a GPU only among the pods of one "
                          "ResourceClaim, on one GPU, so at most "
                          f"{clients} replicas can share it ({claims.DRIVER_SOURCE}); lower its replicas to "
                          f"{clients}, use MIG, or gpu_allocation: device-plugin")
        percent = math.floor(100 / clients) if mode == "mps" else None
        return claims.DeviceClaim(name, claims.SHARED, claims.GPU_CLASS, 1, selectors, pool.gpu,
                                  strategy=claims.STRATEGIES[mode], mps_active_thread_percentage=percent,
                                  feature_gate=claims.FEATURE_GATES[mode]), None
    return None, (f"workload {request.workload!r} has enforced fractions (HAMi), which gpustack gives through "
                  "HAMi's device plugin only; no HAMi DRA driver is verified: use time-slicing, mps or mig, or "
                  "gpu_allocation: device-plugin")


def _costs(pools: Sequence[Pool], provisioner: Provisioner, version: str | None
           ) -> list[tuple[str, str, str | None, str | None]]:
    """Warnings for what works at a cost: pools at zero the autoscaler cannot wake, alpha switches, shared
    GPUs across workloads, alpha sharing gates."""
    support = provisioner.dra
    out: list[tuple[str, str, str | None, str | None]] = []
    if not support.scale_from_zero:
        for pool in pools:
            if pool.min_nodes == 0:
                floor = pool.price.usd_per_node_hour * HOURS_PER_MONTH
                out.append(("dra-scale-from-zero",
                            f"pool {pool.name!r} scales to zero nodes, and {provisioner.description} cannot start its "
                            f"first node for a pod with a ResourceClaim: {support.scale_from_zero_gap}; it needs a "
                            f"floor of one node (about {floor:,.0f} USD a month more at {pool.price.usd_per_node_hour:g} "
                            "USD/node-hour, always on) or a provisioner that models ResourceSlices",
                            None, pool.name))
    if support.switch:
        names = ", ".join(p.name for p in pools)
        out.append(("dra-switch", f"pools {names}: {support.switch}", None, None))
    for mode, note in sorted(support.mode_notes.items()):
        if mode in support.mode_minimums and version is not None:
            continue  # checked against the target's version instead (_version_problems)
        for pool in pools:
            if pool.sharing.mode == mode:
                out.append(("dra-sharing", f"pool {pool.name!r}: {note}", None, pool.name))
    for pool in pools:
        if pool.sharing.mode in claims.STRATEGIES:
            gate = claims.FEATURE_GATES[pool.sharing.mode]
            sharing = [pl.workload for pl in pool.placements if pl.replicas]
            extra = (f"; its workloads {', '.join(sharing)} each get a GPU of their own (one ResourceClaim each), "
                     f"which may need more GPUs than the plan packs") if len(sharing) > 1 else ""
            out.append(("dra-sharing-gate",
                        f"pool {pool.name!r} shares GPUs by {pool.sharing.mode} through NVIDIA's DRA driver: its alpha "
                        f"feature gate {gate} must be on (featureGates.{gate}: true in the driver's values){extra}",
                        None, pool.name))
    return out
