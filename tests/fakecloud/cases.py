"""What FKS node pools do with a workload (gpustack/clouds/cases.py), read by tests/test_fake_cloud.py."""

from gpustack.clouds.cases import PoolCase

CASES = (
    PoolCase("checkpointed training stays on demand: FKS node pools cannot ask for spot capacity",
             {"kind": "training", "gpu": "A100-80GB", "gpus": 8, "checkpointing": True},
             capacity="on-demand", instance_type="fk.a100-8", compiled={"billing": "ON_DEMAND",
                                                                        "project": "ml-platform"}),
    PoolCase("an explicit spot capacity is the provisioner's gap, refused where the spec asks for it",
             {"kind": "training", "gpu": "A100-80GB", "gpus": 8, "checkpointing": True, "capacity": "spot"},
             refused_at="workloads[0].capacity", refused="FKS in fk-east-1 refuses spot capacity"),
)
