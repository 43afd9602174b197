"""What GKE node pools do with a workload (gpustack/clouds/cases.py; facts and sources in facts.py and
managed.py)."""

from gpustack.clouds.cases import PoolCase

CASES = (
    PoolCase("a spot node pool takes its GPUs from any zone of the pool that has them",
             {"kind": "training", "gpu": "A100-80GB", "gpus": 8, "checkpointing": True},
             capacity="spot", instance_type="a2-ultragpu-8g",
             compiled={"spot": True, "accelerator_type": "nvidia-a100-80gb", "location_policy": "ANY"}),
    PoolCase("GKE shares a GPU by time itself: the node pool's sharing strategy and clients per GPU",
             {"kind": "inference", "gpu": "L4", "gpu_fraction": 0.25, "sharing": "time-slicing"},
             capacity="reserved", instance_type="g2-standard-4",
             compiled={"gpu_sharing_strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}),
    PoolCase("GKE partitions MIG itself: the node pool's GPU partition size",
             {"kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb"},
             capacity="reserved", instance_type="a2-ultragpu-1g", compiled={"gpu_partition_size": "3g.40gb"}),
    PoolCase("flex-start capacity is a flex-start node pool",
             {"kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True, "capacity": "flex"},
             capacity="flex", instance_type="a3-highgpu-8g", compiled={"flex_start": True}),
    PoolCase("GKE's own device plugin leaves no room for HAMi's: fractional sharing refused where it is asked",
             {"kind": "inference", "gpu": "L4", "gpu_fraction": 0.25, "sharing": "fractional"},
             refused_at="workloads[0].sharing", refused="GKE cannot enforce GPU fractions"),
)
