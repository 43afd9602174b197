"""End to end per cloud: the rendered workload patches, applied to a plain object per workload, give pods
that the behavioural autoscaler model (tests/cloudsim) places on the plan's pools and on no other."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cloudsim import cluster
from cloudsim.kube import Pod, quantity, why_not
from conftest import EXAMPLE
from gpustack.plan import build_plan
from gpustack.plan.pools import POOL_LABEL
from gpustack.render import in_cluster
from gpustack.render.workloads import patch, wirings
from gpustack.spec import load_spec
from strategic_merge import merge, plain_object, pod_spec

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
PULUMI_GOLDEN = Path(__file__).resolve().parent / "golden" / "pulumi"


def _sim_pools(target_name: str) -> dict[str, cluster.SimPool]:
    target = EXAMPLE_PLAN.target(target_name)
    declared = yaml.safe_load((PULUMI_GOLDEN / f"{target_name}.yaml").read_text())
    rendered = in_cluster(EXAMPLE_PLAN, target)
    values = rendered.operator.values if rendered.operator else None
    return cluster.pools(target.cloud, target.region, target.cluster, declared, rendered.objects, values)


def _pod(obj: dict) -> tuple[Pod, set[str]]:
    spec = pod_spec(obj)
    [container] = spec["containers"]
    pod = Pod({k: quantity(v) for k, v in container["resources"]["requests"].items()},
              dict(spec.get("nodeSelector", {})), tuple(spec.get("tolerations", ())))
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    [expression] = term["matchExpressions"]
    assert expression["key"] == POOL_LABEL and expression["operator"] == "In"
    return pod, set(expression["values"])


def _lands(pod: Pod, allowed: set[str], node) -> bool:
    return why_not(pod, node) is None and node.labels.get(POOL_LABEL) in allowed


@pytest.mark.parametrize("target_name", [t.name for t in EXAMPLE_PLAN.targets])
def test_patched_workloads_land_on_their_pools_and_no_other(target_name):
    target = EXAMPLE_PLAN.target(target_name)
    sims = _sim_pools(target_name)
    assert set(sims) == {p.name for p in target.pools}
    gaps = {w.pool for w in target.warnings if w.code == "template-gap"}
    for w in wirings(target):
        obj = merge(plain_object(w.kind, w.workload, w.namespace), patch(w))
        pod, allowed = _pod(obj)
        planned = set(next(r.pools for r in target.pod_requests if r.workload == w.workload))
        on_nodes = {name for name, sim in sims.items() if _lands(pod, allowed, sim.node)}
        assert on_nodes == planned, (w.workload, on_nodes, planned)
        # What the autoscaler grows from zero (floors always have nodes): the template of each pool at zero.
        at_zero = {name for name, sim in sims.items() if sim.min_nodes == 0}
        from_zero = {name for name in at_zero if _lands(pod, allowed, sims[name].template)}
        assert (planned & at_zero) - gaps <= from_zero <= planned, (w.workload, from_zero)


def test_the_plain_object_lands_nowhere():
    """Before the patch: no toleration for the GPU taint, no GPU request; no GPU pool takes the pod."""
    sims = _sim_pools("aws-prod")
    plain = plain_object("Deployment", "chat", "serving")
    spec = pod_spec(plain)
    pod = Pod({k: quantity(v) for k, v in spec["containers"][0]["resources"]["requests"].items()}, {}, ())
    assert all(why_not(pod, sim.node) is not None for sim in sims.values())
