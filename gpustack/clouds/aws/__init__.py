"""Amazon EKS: managed node groups: the bundle of everything gpustack knows about this cloud.

    facts.py    the registered `EKS` cloud: settings, limits, enum values, each with its source
    backend.py  the Pulumi resources of managed node groups (imported only by the Pulumi program)
    readers.py  guardrail readers of its node-pool resources and native schedules
    mocks.py    Pulumi mock answers for its data sources and computed outputs
    managed.py  the default provisioner: managed node groups compiled for the EKS API, gaps, replacements
    karpenter.py  the `karpenter` provisioner: NodePools and EC2NodeClasses compiled into the plan
    karpenter_backend.py  their Pulumi resources (imported only by the Pulumi program)
    prices.py   the price feed of `gpustack catalog refresh`
    snapshot.py  the reader of its source snapshots for `make catalog SOURCES=DIR` (data/aws.csv)
    cases.py    its behaviour as a table of workloads and the pools they get (tests/test_cloud_cases.py)
"""

from gpustack.clouds.aws.facts import EKS

__all__ = ["EKS"]
