"""The clouds' behaviour, simulated (tests/cloudsim): for every pool of the example on every cloud, the
autoscaler's template at zero offers what a node offers, every workload's pods fit the templates of their
own pools and of no pool of another kind, one scale-up starts the nodes the plan says, no node is taken
for an unready GPU node, every reserved floor upgrades inside its reservation, and EKS and AKS scaling updates
are valid. The same simulator, run on the resources the first version declared, finds each defect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cloudsim import cluster, upgrades
from cloudsim.checks import (
    PoolView,
    TargetView,
    misfits,
    scale_up_errors,
    simulated,
    template_mismatches,
    unready,
    upgrade_failures,
    view,
)
from cloudsim.kube import estimate_scale_up, next_scale_up, why_not
from conftest import EXAMPLE

from gpustack import testing
from gpustack.clouds.aws import mocks as eks_mocks
from gpustack.clouds.azure import mocks as aks_mocks
from gpustack.plan import build_plan
from gpustack.plan.model import TargetPlan
from gpustack.spec import load_spec

WAVE1 = Path(__file__).resolve().parent / "cloudsim" / "wave1"
TARGETS = ("aws-prod", "azure-prod", "gcp-prod", "oci-prod")
EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))


@pytest.fixture(scope="module", params=TARGETS)
def example(request) -> tuple[TargetPlan, dict[str, cluster.SimPool], list[testing.Declared]]:
    target = EXAMPLE_PLAN.target(request.param)
    resources = testing.run_program(str(EXAMPLE), request.param)
    return target, simulated(EXAMPLE_PLAN, target, resources), resources


# -- today's program ---------------------------------------------------------------------------------

def test_the_template_at_zero_offers_what_a_node_offers(example):
    target, sims, _ = example
    assert set(sims) == {p.name for p in target.pools}
    assert template_mismatches(view(target), sims) == []


def test_every_pod_fits_its_own_pools_and_no_pool_of_another_kind(example):
    target, sims, _ = example
    assert misfits(view(target), sims) == []


def test_one_scale_up_from_zero_starts_the_planned_nodes(example):
    target, sims, _ = example
    assert scale_up_errors(view(target), sims) == []


def test_no_node_is_counted_as_an_unready_gpu(example):
    target, sims, _ = example
    assert unready(view(target), sims) == []


def test_every_reserved_floor_upgrades_inside_its_reservation(example):
    target, sims, resources = example
    assert any(p.reserved_nodes for p in target.pools)
    assert upgrade_failures(view(target), sims, resources) == []
    for pool in target.pools:
        if pool.reserved_nodes:
            assert pool.upgrade is not None and pool.upgrade.headroom_nodes == 0
            assert cluster.reserved_nodes(resources)[pool.name] == pool.reserved_nodes + pool.upgrade.headroom_nodes


def test_oke_says_where_its_autoscaler_cannot_see_shared_gpus_at_zero():
    target = EXAMPLE_PLAN.target("oci-prod")
    warned = [w for w in target.warnings if w.code == "template-gap"]
    shared_at_zero = sorted(p.name for p in target.pools
                            if p.min_nodes == 0 and dict(p.node_offers) != {"nvidia.com/gpu": p.gpus_per_node})
    assert shared_at_zero and sorted(view(target).gaps) == shared_at_zero
    assert all("oci_manager.go" in w.message for w in warned)
    assert not any(view(t).gaps for t in EXAMPLE_PLAN.targets if t.cloud not in ("oci", "azure"))
    # AKS: only the GPU label, where the autoscaler predicts none for the SKU and AKS refuses it in nodeLabels.
    azure = EXAMPLE_PLAN.target("azure-prod")
    assert all("NvidiaEnabledSKUs" in w.message for w in azure.warnings if w.code == "template-gap")


def _live(cloud: str, monkeypatch: pytest.MonkeyPatch, sizes: dict[str, int]) -> None:
    """Node pools that exist already, with these live sizes (by cloud name), as the cloud reports them."""
    if cloud == "aws":
        monkeypatch.setattr(eks_mocks, "LIVE_NODE_GROUPS", {n: {"desiredSize": s} for n, s in sizes.items()})
    else:
        monkeypatch.setattr(aks_mocks, "LIVE_AGENT_POOLS", dict(sizes))


@pytest.mark.parametrize("live", ["below the floor", "above the maximum", "inside"])
@pytest.mark.parametrize("name", ["aws-prod", "azure-prod"])
def test_scaling_updates_stay_valid_whatever_the_live_size(monkeypatch, name, live):
    """A floor raised above the live size or a maximum lowered below it: EKS and AKS take a size with the
    bounds, which the program sends inside them; a size the autoscaler chose inside them is kept."""
    target = EXAMPLE_PLAN.target(name)
    sizes = {p.cloud_name: {"below the floor": 0, "above the maximum": p.max_nodes + 3,
                            "inside": p.max_nodes}[live] for p in target.pools}
    _live(target.cloud, monkeypatch, sizes)
    sims = simulated(EXAMPLE_PLAN, target, testing.run_program(str(EXAMPLE), name))
    assert len(sims) == len(target.pools)
    update = upgrades.SCALING_UPDATES[target.cloud]
    for sim in sims.values():
        live_size = sizes[sim.name]
        sent, refusal = update(sim.resource, sim.resource["ignore_changes"], live_size)
        assert refusal is None, (sim.pool, sent)
        if live == "inside":  # the autoscaler's size is kept: Pulumi never drains what it scaled up
            assert live_size in sent.values()


def test_gke_and_oke_updates_send_bounds_only(example):
    """GKE and OKE take no size with the bounds on an update: the first creation's count is ignored after,
    so raising or lowering a floor or maximum only needs bounds that are valid on their own."""
    target, sims, _ = example
    ignored = {"gcp": "initialNodeCount", "oci": "nodeConfigDetails.size"}.get(target.cloud)
    if ignored is None:
        pytest.skip("EKS and AKS send a size: test_scaling_updates_stay_valid_whatever_the_live_size")
    for sim in sims.values():
        assert ignored in sim.resource["ignore_changes"], sim.name
        assert 0 <= sim.min_nodes <= sim.max_nodes and sim.max_nodes >= 1, sim.name


# -- the first version's resources, recorded: the simulator finds every defect ---------------------------

WAVE1_PLAN = yaml.safe_load((WAVE1 / "plan.yaml").read_text())


def wave1(name: str) -> tuple[TargetView, dict[str, cluster.SimPool], list[dict[str, Any]]]:
    """The first version's plan, pods, resources, in-cluster configs and GPU Operator values for the example."""
    recorded = WAVE1_PLAN[name]
    pools = tuple(PoolView(p["name"], p["kind"], p["role"], p["min_nodes"], p["max_nodes"], p["reserved_nodes"],
                           p["replicas"]) for p in recorded["pools"])
    pods = {w: (cluster.pod(p["resources"], {}, p["tolerations"]), tuple(p["pools"])) for w, p in recorded["pods"].items()}
    resources = [r for r in yaml.safe_load((WAVE1 / f"{name}.yaml").read_text()) if r.get("inputs")]
    objects = [yaml.safe_load((WAVE1 / f"{name}-{kind}.yaml").read_text())
               for kind in ("device-plugin-config", "mig-parted-config") if (WAVE1 / f"{name}-{kind}.yaml").exists()]
    values_file = WAVE1 / f"{name}-gpu-operator-values.yaml"
    values = yaml.safe_load(values_file.read_text()) if values_file.exists() else None
    sims = cluster.pools(recorded["cloud"], recorded["region"], recorded["cluster"], resources, objects, values)
    return TargetView(name, recorded["cloud"], pools, pods), sims, resources


@pytest.mark.parametrize("name", TARGETS)
def test_the_checks_fail_on_the_first_versions_program(name):
    """The checks today's program passes, run on what the first version declared and documented."""
    target, sims, resources = wave1(name)
    found = {f.__name__: f(target, sims) for f in (template_mismatches, misfits, scale_up_errors, unready)}
    found["upgrade_failures"] = upgrade_failures(target, sims, resources)
    expected = {"aws-prod": {"template_mismatches", "misfits", "scale_up_errors", "upgrade_failures"},
                "azure-prod": {"template_mismatches", "misfits", "scale_up_errors", "unready", "upgrade_failures"},
                "gcp-prod": {"misfits", "scale_up_errors", "upgrade_failures"},
                "oci-prod": {"template_mismatches", "misfits", "scale_up_errors", "upgrade_failures"}}[name]
    assert {check for check, problems in found.items() if problems} == expected, found


def test_first_version_mig_pods_could_not_start_a_node_on_eks_and_aks():
    for name, resource in (("aws-prod", "nvidia.com/mig-3g.40gb"), ("azure-prod", "nvidia.com/mig-3g.40gb")):
        target, sims, _ = wave1(name)
        pod, mine = target.pods["chat"]
        at_zero = [p for p in mine if sims[p].min_nodes == 0]
        assert at_zero and all(why_not(pod, sims[p].template) == f"Insufficient {resource}" for p in at_zero), name


@pytest.mark.parametrize("name", ["aws-prod", "azure-prod"])
def test_first_version_time_sliced_notebooks_started_one_node_per_pod_on_eks_and_aks(name):
    target, sims, _ = wave1(name)
    pod, [pool] = target.pods["notebooks"]
    per_node = int(sims[pool].node.allocatable["nvidia.com/gpu"])  # what one node really holds
    started, _ = estimate_scale_up([pod] * per_node, sims[pool].template, sims[pool].max_nodes)
    assert per_node == 4 and started == 3  # one node's worth of pods starts the whole pool


def test_first_version_gke_time_sliced_template_was_already_right():
    """GKE's own autoscaler reads the pool's time-sharing config: the defect was EKS's and AKS's."""
    target, sims, _ = wave1("gcp-prod")
    pod, [pool] = target.pods["notebooks"]
    started, _ = estimate_scale_up([pod] * 4, sims[pool].template, sims[pool].max_nodes)
    assert started == 1


def test_first_version_aks_mig_nodes_were_unready_gpu_nodes():
    target, sims, _ = wave1("azure-prod")
    mig = sorted(p["name"] for p in WAVE1_PLAN["azure-prod"]["pools"] if p["sharing"] == "mig")
    assert sorted(line.split(":")[0] for line in unready(target, sims)) == mig


def test_first_version_eks_templates_lacked_the_gpu_label():
    _, sims, _ = wave1("aws-prod")
    assert all(cluster.GPU_LABELS["aws"] not in sim.template.labels for sim in sims.values())


def _overshoot(target: TargetView, sims: dict[str, cluster.SimPool], workload: str) -> tuple[str, int, int]:
    """One pending pod of `workload` on its first pool at zero: the nodes one scale-up starts for it, and
    the nodes the next loop adds while those boot (the pool has room for more)."""
    pod, mine = target.pods[workload]
    pool = next(p for p in target.pools if p.name in mine and p.min_nodes == 0 and p.role != "fallback")
    sim = sims[pool.name]
    pods = [pod]
    started, _ = estimate_scale_up(pods, sim.template, sim.max_nodes)
    assert sim.max_nodes > started
    more = next_scale_up(pods, started, sim.node, sim.template, cluster.GPU_LABELS[target.cloud], sim.max_nodes)
    return pool.name, started, more


def test_first_version_eks_training_scale_up_overshot_while_nodes_booted():
    """No accelerator label: a booting p4de/p5 node is ready without GPUs, so the next loop starts
    more whole nodes for the same pods."""
    target, sims, _ = wave1("aws-prod")
    pool, started, more = _overshoot(target, sims, "llm-pretrain")
    assert (started, more) == (1, 1), pool  # a second whole node for one pod


def test_eks_training_scale_up_waits_for_its_booting_nodes():
    target = EXAMPLE_PLAN.target("aws-prod")
    sims = simulated(EXAMPLE_PLAN, target, testing.run_program(str(EXAMPLE), "aws-prod"))
    pool, started, more = _overshoot(view(target), sims, "llm-pretrain")
    assert (started, more) == (1, 0), pool


@pytest.mark.parametrize("name", TARGETS)
def test_first_version_reserved_floors_could_not_upgrade(name):
    target, sims, resources = wave1(name)
    failures = upgrade_failures(target, sims, resources)
    assert sorted(f.split(":")[0] for f in failures) == sorted(p.name for p in target.pools if p.reserved_nodes)


def test_first_version_eks_refused_a_raised_floor():
    _, _, resources = wave1("aws-prod")
    [floor] = [cluster.plain(r) for r in resources if r["type"] == cluster.NODE_POOL_TYPES["aws"]
               and "reserved" in r["name"]]
    raised = {**floor, "inputs": {**floor["inputs"], "scalingConfig": {"minSize": 2, "maxSize": 2, "desiredSize": 2}}}
    sent, refusal = upgrades.eks_scaling_update(raised, floor["ignore_changes"], live_desired=1)
    assert sent == {"minSize": 2, "maxSize": 2, "desiredSize": 1} and "desiredSize 1" in (refusal or "")


def test_first_version_aks_refused_a_raised_floor():
    _, _, resources = wave1("azure-prod")
    [floor, *_] = [cluster.plain(r) for r in resources if r["type"] == cluster.NODE_POOL_TYPES["azure"]
                   and "reserved" in r["name"]]
    raised = {**floor, "inputs": {**floor["inputs"], "minCount": 2, "maxCount": 2, "count": 2}}
    sent, refusal = upgrades.aks_scaling_update(raised, floor["ignore_changes"], live_count=1)
    assert sent == {"minCount": 2, "maxCount": 2, "count": 1} and "count 1" in (refusal or "")
