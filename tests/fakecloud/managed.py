"""FKS node pools scaled by FKS's autoscaler: the default (and only) provisioner of FKS.

It lacks two things the plan may need, so the test sees each reported as a located gap when the spec
is validated: spot capacity (FKS itself sells it, the node-pool API cannot ask for it) and scheduled
scaling (the in-cluster auto-stop covers it).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from gpustack.clouds._enums import Allowed, check_enums
from gpustack.clouds.base import Feature
from gpustack.clouds.provisioner import Provisioner
from gpustack.clouds.compiled import CompiledPool

from fakecloud.facts import SOURCE

if TYPE_CHECKING:
    from gpustack.plan.model import Pool
    from gpustack.spec.model import Target

ALLOWED = {"billing": Allowed(("ON_DEMAND", "RESERVED"), SOURCE)}
BILLING = {"on-demand": "ON_DEMAND", "reserved": "RESERVED"}


@dataclasses.dataclass(frozen=True)
class FksNodePool(CompiledPool):
    billing: str
    project: str
    taints: tuple[str, ...]  # key=value:Effect

    def enums(self) -> dict[str, str | None]:
        return {"billing": self.billing}


class NodePools(Provisioner):
    name = "managed"
    description = "FKS node pools, scaled by FKS's autoscaler"
    unsupported = {
        Feature.SPOT: "FKS node pools cannot ask for spot capacity",
        Feature.NATIVE_SCHEDULE: "FKS has no scheduled scaling of node pools; the in-cluster auto-stop covers it",
    }
    replacing_changes = {"instance_type": f"an FKS node pool has one machine type ({SOURCE})"}

    def compile(self, pool: Pool, target: Target) -> FksNodePool:
        return FksNodePool(billing=BILLING.get(pool.capacity, pool.capacity.upper()),
                           project=str(target.setting("project")),
                           taints=tuple(f"{t.key}={t.value}:{t.effect}" for t in pool.taints))

    def check_pool(self, pool: Pool) -> list[str]:
        compiled = pool.compiled
        assert isinstance(compiled, FksNodePool)
        return super().check_pool(pool) + check_enums(compiled.enums(), ALLOWED, self.cloud.display_name)


PROVISIONER = NodePools
