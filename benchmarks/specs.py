"""Generated specs of a platform's size: N workloads of mixed kinds and GPU models over four targets."""

from __future__ import annotations

import random

import yaml

TARGETS = [
    {"name": "aws-prod", "cloud": "aws", "region": "us-east-1", "cluster": "ml-prod",
     "settings": {"subnet_ids": ["subnet-0a1b2c3d", "subnet-0e5f6a7b"]}},
    {"name": "azure-prod", "cloud": "azure", "region": "eastus", "cluster": "ml-prod",
     "settings": {"resource_group": "rg-ml-prod"}},
    {"name": "gcp-prod", "cloud": "gcp", "region": "us-central1", "cluster": "ml-prod",
     "settings": {"project": "acme-ml-prod", "node_locations": ["us-central1-a"]}},
    {"name": "oci-prod", "cloud": "oci", "region": "us-ashburn-1", "cluster": "ocid1.cluster.oc1.iad.aaaa",
     "settings": {"compartment_id": "ocid1.compartment.oc1..aaaa", "subnet_id": "ocid1.subnet.oc1.iad.aaaa"}},
]
# GPU models every one of the four targets offers, so every workload lands on every target.
_COMMON_GPUS = ("A100-80GB", "H100", "A100-40GB")
_SCHEDULE = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}


def workload(i: int, rng: random.Random) -> dict:
    kind = ("training", "fine-tuning", "inference", "inference", "notebook")[i % 5]
    gpu = rng.choice(_COMMON_GPUS)
    base = {"name": f"w{i:05d}-{kind}", "kind": kind, "gpu": gpu, "labels": {"team": f"team-{i % 17}"}}
    if kind == "training":
        return {**base, "gpus": rng.choice([1, 2, 4, 8]), "replicas": rng.randint(1, 4),
                "checkpointing": rng.random() < 0.8, "hours_per_month": rng.choice([100, 200, 400])}
    if kind == "fine-tuning":
        return {**base, "gpus": rng.choice([1, 2]), "replicas": rng.randint(1, 3), "checkpointing": True,
                "hours_per_month": 120}
    if kind == "inference":
        low = rng.randint(0, 6)
        size = rng.choice([{"mig": "3g.40gb"}, {"mig": "2g.20gb"}, {"gpu_memory": "10Gi"},
                           {"gpu_fraction": 0.25}, {"gpus": 1}])
        if gpu == "A100-40GB":
            size = rng.choice([{"mig": "3g.20gb"}, {"gpu_memory": "5Gi"}, {"gpu_fraction": 0.5}, {"gpus": 1}])
        return {**base, **size, "cpu": rng.choice([2, 4, 8]), "memory": rng.choice(["8Gi", "16Gi", "32Gi"]),
                "replicas": {"min": low, "max": low + rng.randint(0, 8)}}
    return {**base, "gpu_fraction": rng.choice([0.25, 0.5]), "cpu": 2, "memory": "8Gi",
            "replicas": rng.randint(1, 20), "schedule": _SCHEDULE}


def spec(workloads: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    doc = {"version": 1, "name": "bench", "labels": {"environment": "prod"},
           "targets": TARGETS, "workloads": [workload(i, rng) for i in range(workloads)]}
    return yaml.safe_dump(doc, sort_keys=False)


# A GPU each target's region offers for single-GPU notebook pools.
_NOTEBOOK_GPU = {"aws": "T4", "azure": "T4", "gcp": "T4", "oci": "A10"}


def pools_spec(target: dict, pools: int) -> str:
    """One target with `pools` pools: notebooks whose distinct windows each define a pool."""
    workloads = []
    for i in range(pools):
        start = i % (23 * 60)
        window = f"{start // 60:02d}:{start % 60:02d}-{start // 60 + 1:02d}:{start % 60:02d}"
        workloads.append({"name": f"nb{i:05d}", "kind": "notebook", "gpu": _NOTEBOOK_GPU[target["cloud"]],
                          "gpu_fraction": 0.25, "cpu": 1, "memory": "4Gi", "replicas": 4, "namespace": "research",
                          "schedule": {"days": "Mon-Fri", "hours": window, "timezone": "Europe/Berlin"},
                          "labels": {"team": f"team-{i % 7}"}})
    doc = {"version": 1, "name": "bench", "labels": {"environment": "prod"}, "targets": [target],
           "workloads": workloads}
    return yaml.safe_dump(doc, sort_keys=False)
