"""The component every backend declares per pool, and small helpers shared by backends."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from gpustack.plan.model import Pool

Build = Callable[[Pool, pulumi.ResourceOptions], Mapping[str, Any]]


class GpuNodePool(pulumi.ComponentResource):
    """One planned pool: a `gpustack:<cloud>:GpuNodePool` with the cloud's resources as children.

    `build(pool, child_opts)` declares the children (each with `child_opts`, which parents them to
    this component) and returns outputs such as the node pool's id; the component adds the pool's
    cloud name, GPUs and estimated monthly cost and registers them.
    """

    def __init__(self, cloud: str, pool: Pool, build: Build, opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"gpustack:{cloud}:GpuNodePool", pool.name, None, opts)
        outputs: dict[str, Any] = dict(build(pool, pulumi.ResourceOptions(parent=self)))
        outputs.update(
            name=pool.cloud_name,
            kind=pool.kind,
            capacity=pool.capacity,
            instance_type=pool.instance_type,
            gpus=pool.gpus.provisioned,
            min_nodes=pool.min_nodes,
            max_nodes=pool.max_nodes,
            estimated_monthly_cost_usd=round(pool.monthly_cost_usd, 2),
        )
        self.outputs = outputs
        self.register_outputs(outputs)
