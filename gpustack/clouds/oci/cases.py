"""What OKE node pools do with a workload (gpustack/clouds/cases.py; facts and sources in facts.py and
managed.py)."""

from gpustack.clouds.cases import PoolCase

CASES = (
    PoolCase("a spot pool is a preemptible node pool of a VM shape, terminated when preempted",
             {"kind": "training", "gpu": "A10", "checkpointing": True, "capacity": "spot"},
             capacity="spot", instance_type="VM.GPU.A10.1", compiled={"preemption_action": "TERMINATE"}),
    PoolCase("checkpointed training on bare metal stays on demand: bare-metal shapes cannot be preempted",
             {"kind": "training", "gpu": "A100-80GB", "gpus": 8, "checkpointing": True},
             capacity="on-demand", instance_type="BM.GPU.A100-v2.8", compiled={"preemption_action": None}),
    PoolCase("an explicit spot capacity on bare metal is refused where the spec asks for it",
             {"kind": "training", "gpu": "A100-80GB", "gpus": 8, "checkpointing": True, "capacity": "spot"},
             refused_at="workloads[0].capacity", refused="OKE in us-ashburn-1 refuses spot capacity"),
    PoolCase("OCI sells no flex-start capacity: refused where the spec asks for it",
             {"kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True, "capacity": "flex"},
             refused_at="workloads[0].capacity", refused="OKE has no flex-start capacity"),
)
