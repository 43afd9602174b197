"""A fifth cloud that lives in the test suite alone: FKS, the Fake Kubernetes Service.

It is the worked example of adding a cloud (CONTRIBUTING.md): everything gpustack knows about it is
in this bundle, laid out like `gpustack/clouds/<cloud>/`:

    facts.py       the `Cloud` subclass: settings, name rule, what its node images carry
    managed.py     its provisioner (node pools scaled by the cloud's autoscaler): compile, check, gaps
    backend.py     the Pulumi resources, as a custom resource type of its own (no provider SDK needed)
    readers.py     the guardrail reader of that resource type
    mocks.py       what the Pulumi mocks answer for it
    cases.py       its behaviour as a table of workloads and the pools they get (gpustack/clouds/cases.py)
    instances.csv  its instance types, a catalog file a spec names with `catalog:`

The bundles under gpustack/clouds are discovered; this one is registered by the test that uses it
(`CLOUDS.scoped()` then `CLOUDS.register(FKS)`), so the rest of the suite never sees a fifth cloud.
"""
