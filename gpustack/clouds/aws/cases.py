"""What EKS managed node groups do with a workload (gpustack/clouds/cases.py; facts and sources in
facts.py and managed.py)."""

from gpustack.clouds.cases import PoolCase

CASES = (
    PoolCase("checkpointed training runs on a spot node group of the NVIDIA AL2023 AMI",
             {"kind": "training", "gpu": "A100-80GB", "gpus": 8, "checkpointing": True},
             capacity="spot", instance_type="p4de.24xlarge",
             compiled={"capacity_type": "SPOT", "ami_type": "AL2023_x86_64_NVIDIA", "root_volume_type": "gp3"}),
    PoolCase("an explicit on-demand capacity is an ON_DEMAND node group",
             {"kind": "inference", "gpu": "L4", "capacity": "on-demand"},
             capacity="on-demand", instance_type="g6.xlarge", compiled={"capacity_type": "ON_DEMAND"}),
    PoolCase("EC2 sells no flex-start capacity: refused where the spec asks for it",
             {"kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True, "capacity": "flex"},
             refused_at="workloads[0].capacity", refused="EKS has no flex-start capacity"),
)
