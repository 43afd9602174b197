"""What AKS agent pools do with a workload (gpustack/clouds/cases.py; facts and sources in facts.py and
managed.py)."""

from gpustack.clouds.cases import PoolCase

CASES = (
    PoolCase("a spot pool is a Spot scale set, evicted by deletion, at no more than the on-demand price",
             {"kind": "training", "gpu": "A10", "checkpointing": True, "capacity": "spot"},
             capacity="spot", instance_type="Standard_NV36ads_A10_v5",
             compiled={"scale_set_priority": "Spot", "scale_set_eviction_policy": "Delete", "spot_max_price": -1.0}),
    PoolCase("AKS partitions MIG itself: the agent pool's GPU instance profile",
             {"kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb"},
             capacity="reserved", instance_type="Standard_NC24ads_A100_v4",
             compiled={"gpu_instance_profile": "MIG3g", "scale_set_priority": "Regular"}),
    PoolCase("Azure sells no flex-start capacity: refused where the spec asks for it",
             {"kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True, "capacity": "flex"},
             refused_at="workloads[0].capacity", refused="AKS has no flex-start capacity"),
)
