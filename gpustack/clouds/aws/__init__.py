"""Amazon EKS: managed node groups: the bundle of everything gpustack knows about this cloud.

    facts.py    the registered `EKS` cloud: settings, limits, enum values, each with its source
    backend.py  the Pulumi resources (imported only by the Pulumi program)
    readers.py  guardrail readers of its node-pool resources and native schedules
    mocks.py    Pulumi mock answers for its data sources and computed outputs
"""

from gpustack.clouds.aws.facts import EKS

__all__ = ["EKS"]
