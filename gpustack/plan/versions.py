"""What a target's planned pools need of its cluster's version, checked against `targets[].kubernetes_version`.

The spec stage checks what the spec alone decides (gpustack/spec/kubernetes.py); what depends on the pools
the planner made, such as a fallback pool or a flex-start pool, is asked of the provisioner here
(`Provisioner.kubernetes_minimums`, each minimum next to its source in the cloud's bundle). A target that
gives no version is not checked: the provisioner's pool and fallback notes state the minimums.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpustack.clouds.provisioner import Provisioner
from gpustack.plan.fallback import fallback_groups
from gpustack.plan.model import Pool
from gpustack.spec.kubernetes import KEY, older
from gpustack.spec.model import Target

Path = tuple[str | int, ...]


def problems(target: Target, provisioner: Provisioner, pools: Sequence[Pool]) -> list[tuple[Path, str]]:
    """Located at the target's `kubernetes_version`: each feature the pools use that the version lacks."""
    version = target.kubernetes_version
    if version is None:
        return []
    found: list[tuple[Path, str]] = []
    for names, minimum in provisioner.kubernetes_minimums(pools, bool(fallback_groups(pools))):
        if not older(version, minimum.minor):
            continue
        used = f" (pools {', '.join(names)})" if names else ""
        found.append((("targets", target.index, KEY),
                      f"{version} is older than {provisioner.description} needs for {minimum.feature}{used}: "
                      f"{minimum.exact} or later ({minimum.source}); upgrade the cluster and set {KEY}, or plan "
                      "without it"))
    return found
