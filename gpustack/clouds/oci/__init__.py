"""Oracle OKE: managed node pools: the bundle of everything gpustack knows about this cloud.

    facts.py    the registered `OKE` cloud: settings, limits, enum values, each with its source
    backend.py  the Pulumi resources (imported only by the Pulumi program)
    readers.py  guardrail readers of its node-pool resources and native schedules
    mocks.py    Pulumi mock answers for its data sources and computed outputs
    managed.py  the default provisioner: node pools compiled for the OKE API, gaps, replacements
    karpenter.py  Oracle's Karpenter provider (KPO): a NodePool and an OCINodeClass per pool
    karpenter_backend.py  their Pulumi declaration, and the floors' capacity reservations
    prices.py   the price feed of `gpustack catalog refresh`
    snapshot.py  the reader of its source snapshots for `make catalog SOURCES=DIR` (data/oci.csv)
    cases.py    its behaviour as a table of workloads and the pools they get (tests/test_cloud_cases.py)
"""

from gpustack.clouds.oci.facts import OKE

__all__ = ["OKE"]
