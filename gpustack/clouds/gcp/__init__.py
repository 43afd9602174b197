"""Google GKE: node pools: the bundle of everything gpustack knows about this cloud.

    acceptance.py  what the cloud refuses (reservations, Spot, consumption options, zones), with sources
    facts.py    the registered `GKE` cloud: settings, limits, enum values, each with its source
    backend.py  the Pulumi resources (imported only by the Pulumi program)
    readers.py  guardrail readers of its node-pool resources and native schedules
    mocks.py    Pulumi mock answers for its data sources and computed outputs
    managed.py  the default provisioner: node pools compiled for the GKE API, gaps, replacements
    compute_class.py  the `compute-class` provisioner: ComputeClasses whose priorities are the pools
    compute_class_backend.py  their Pulumi resources (imported only by the Pulumi program)
    prices.py   the price feed of `gpustack catalog refresh`
    snapshot.py  the reader of its source snapshots for `make catalog SOURCES=DIR` (data/gcp.csv)
    cases.py    its behaviour as a table of workloads and the pools they get (tests/test_cloud_cases.py)
"""

from gpustack.clouds.gcp.facts import GKE

__all__ = ["GKE"]
