"""Inference availability (`availability: {zones, max_replicas_per_node}`): a must-stay-up floor lands on
nodes in several zones on every cloud, costs what the spread adds, is wired with topology spread
constraints, and `gpustack check` warns on a floor that one node or one zone can take down."""

from __future__ import annotations

import copy
import json

import kubernetes_validate
import pytest
import yaml

from conftest import EVERY_CLOUD, TARGETS
from gpustack.errors import SpecError
from gpustack.guardrails import evaluate
from gpustack.guardrails.config import settings
from gpustack.guardrails.from_plan import plan_views
from gpustack.plan import build_plan
from gpustack.plan.packing import Packing
from gpustack.plan.spread import spread_packing, zone_shares
from gpustack.render import KUBERNETES_VERSION
from gpustack.render.workloads import patch, wirings
from gpustack.spec import load_spec
from gpustack.spec.model import Availability
from gpustack.testing import run_program
from cloudsim.checks import simulated_groups, view
from cloudsim.kube import why_not
from strategic_merge import merge, plain_object, pod_spec

# Two zones per cloud, in the spelling of the setting each cloud spreads over.
ZONES = {
    "aws": {"subnet_ids": ["subnet-0a1b", "subnet-0c2d"]},
    "azure": {"zones": ["1", "2"]},
    "gcp": {"node_locations": ["us-central1-a", "us-central1-b"]},
    "oci": {"availability_domains": ["Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2"]},
}
# A vLLM-style service: 4 x H100 per replica, a floor of 2 that must stay up. Two replicas fit one
# 8-GPU node, so packing alone puts the whole floor on one node.
CHAT = {"name": "chat", "kind": "inference", "gpu": "H100", "gpus": 4, "replicas": {"min": 2, "max": 4},
        "labels": {"team": "ml", "environment": "prod"}}
SPREAD = {"zones": 2, "max_replicas_per_node": 1}
CLOUDS = EVERY_CLOUD  # a cloud ZONES lacks fails with a KeyError until it says how it spreads


def write(tmp_path, cloud: str, workloads: list[dict], zones: bool = True) -> str:
    target = copy.deepcopy(TARGETS[cloud])
    settings_ = {k: v for k, v in target["settings"].items() if k not in ZONES[cloud]}
    target["settings"] = {**settings_, **(ZONES[cloud] if zones else {})}
    path = tmp_path / f"{cloud}.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": workloads},
                                   sort_keys=False))
    return str(path)


def chat(availability: dict | None = SPREAD) -> dict:
    return {**CHAT, **({"availability": availability} if availability else {})}


def floor_of(target) -> list:
    return [p for p in target.pools if "chat" in p.workloads and p.min_nodes]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_two_replica_floor_with_availability_lands_on_two_nodes_in_two_zones(tmp_path, cloud):
    target = build_plan(load_spec(write(tmp_path, cloud, [chat()]))).targets[0]
    (floor,) = floor_of(target)
    assert floor.min_nodes == 2
    assert len(set(floor.spread_zones)) == 2 and set(floor.spread_zones) <= set(next(iter(ZONES[cloud].values())))
    if floor.reserved_nodes:  # one reservation per zone, one node each
        assert sorted(n for _, n in floor.reservations) == [1, 1]
        assert len({z for z, _ in floor.reservations}) == 2
    else:  # AKS reserves no ND H100 (the plan warns): the zonal pool keeps the two nodes
        assert cloud == "azure" and floor.role == "burst"


@pytest.mark.parametrize("cloud", CLOUDS)
def test_check_warns_on_the_single_node_floor_without_availability_and_not_with_it(tmp_path, cloud):
    def findings(spec: str) -> list:
        plan = build_plan(load_spec(spec))
        return [v for v in evaluate(plan_views(plan), settings({}, "config")) if v.rule == "inference-floor-spread"]

    without = findings(write(tmp_path, cloud, [chat(None)]))
    assert [v.level for v in without] == ["advisory"]
    assert "sits on one node" in without[0].message and "availability:" in without[0].fix
    assert findings(write(tmp_path, cloud, [chat()])) == []


def test_check_warns_on_a_floor_of_several_nodes_in_one_zone(tmp_path):
    wide = {**CHAT, "gpus": 8}  # one replica per node: two nodes, but one reservation in one subnet
    plan = build_plan(load_spec(write(tmp_path, "aws", [wide])))
    found = [v for v in evaluate(plan_views(plan), settings({}, "config")) if v.rule == "inference-floor-spread"]
    assert len(found) == 1 and "one zone outage" in found[0].message


@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_spread_is_priced_in_the_plan(tmp_path, cloud):
    packed = build_plan(load_spec(write(tmp_path, cloud, [chat(None)]))).targets[0]
    spread = build_plan(load_spec(write(tmp_path, cloud, [chat()]))).targets[0]
    extra = sum(p.availability.extra_monthly_usd for p in spread.pools if p.availability)
    assert extra > 0
    assert spread.cost.planned_monthly_usd == pytest.approx(packed.cost.planned_monthly_usd + extra, abs=0.05)
    floor = floor_of(spread)[0]
    assert floor.availability.nodes_without < floor.max_nodes  # packing alone: fewer nodes
    assert any("Availability (2 zone(s), at most 1 replica(s) per node)" in n for n in floor.notes)


def test_plan_json_carries_the_availability_of_the_pool(tmp_path):
    plan = build_plan(load_spec(write(tmp_path, "gcp", [chat()])))
    data = json.loads(plan.to_json())
    pools = data["targets"][0]["pools"]
    floor = next(p for p in pools if p["role"] == "floor")
    assert floor["availability"] == {"zones": 2, "max_replicas_per_node": 1, "nodes_without": 1,
                                     "extra_monthly_usd": floor["availability"]["extra_monthly_usd"]}
    assert floor["spread_zones"] == ["us-central1-a", "us-central1-b"]
    (request,) = data["targets"][0]["pod_requests"]
    assert [t["topology_key"] for t in request["topology_spread"]] == ["topology.kubernetes.io/zone",
                                                                      "kubernetes.io/hostname"]


def test_availability_renames_no_pool_of_another_workload(tmp_path):
    other = {"name": "embed", "kind": "inference", "gpu": "H100", "gpus": 2, "replicas": {"min": 1, "max": 2}}
    before = build_plan(load_spec(write(tmp_path, "aws", [chat(None), other]))).targets[0]
    after = build_plan(load_spec(write(tmp_path, "aws", [chat(), other]))).targets[0]
    embed = {(p.name, p.cloud_name) for p in after.pools if p.workloads == ("embed",)}
    assert embed and embed <= {(p.name, p.cloud_name) for p in before.pools}
    # Without availability the two workloads share their pools; with it, chat's pools are its own.
    assert all(p.workloads == ("chat",) for p in after.pools if "chat" in p.workloads)
    assert all(p.name.endswith("-chat-z2n1") for p in after.pools if "chat" in p.workloads)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_rendered_patches_spread_the_pods_and_validate(tmp_path, cloud):
    target = build_plan(load_spec(write(tmp_path, cloud, [chat()]))).targets[0]
    (w,) = wirings(target)
    obj = merge(plain_object(w.kind, w.workload, w.namespace), patch(w))
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    zone, host = pod_spec(obj)["topologySpreadConstraints"]
    assert (zone["topologyKey"], zone["maxSkew"], zone["minDomains"]) == ("topology.kubernetes.io/zone", 1, 2)
    most = sum(p.max_nodes for p in target.pools if "chat" in p.workloads)
    assert (host["topologyKey"], host["maxSkew"], host["minDomains"]) == ("kubernetes.io/hostname", 1, most + 1)
    for constraint in (zone, host):
        assert constraint["whenUnsatisfiable"] == "DoNotSchedule"
        assert constraint["labelSelector"] == {"matchLabels": {"gpustack.dev/workload": "chat"}}


def test_without_availability_no_spread_constraints_are_rendered(tmp_path):
    target = build_plan(load_spec(write(tmp_path, "aws", [chat(None)]))).targets[0]
    (w,) = wirings(target)
    assert "topologySpreadConstraints" not in w.pod_spec


# -- the Pulumi programs, under mocks with the real SDKs --------------------------------------------------
def _declared(tmp_path, cloud: str) -> list:
    path = write(tmp_path, cloud, [chat()])
    return run_program(path, TARGETS[cloud]["name"])


def test_eks_declares_one_node_group_and_reservation_per_subnet(tmp_path):
    declared = _declared(tmp_path, "aws")
    reservations = [r.inputs for r in declared if r.type == "aws:ec2/capacityReservation:CapacityReservation"]
    assert sorted(r["instanceCount"] for r in reservations) == [1, 1]
    groups = [r.inputs for r in declared if r.type == "aws:eks/nodeGroup:NodeGroup"
              and r.inputs["capacityType"] == "ON_DEMAND" and r.inputs["scalingConfig"]["maxSize"] == 1]
    assert sorted(tuple(g["subnetIds"]) for g in groups) == [("subnet-0a1b",), ("subnet-0c2d",)]
    assert len({g["nodeGroupName"] for g in groups}) == 2


def test_the_simulated_cluster_sees_each_node_group_of_the_eks_spread_floor(tmp_path):
    """tests/cloudsim: every node group the program declares for the floor (not only the first), each
    sized to the nodes its reservation holds (min = max), each in its own subnet, and a node of each
    holds one replica."""
    path = write(tmp_path, "aws", [chat()])
    plan = build_plan(load_spec(path))
    [target] = plan.targets
    [floor] = floor_of(target)
    groups = simulated_groups(plan, target, run_program(path, TARGETS["aws"]["name"]))[floor.name]
    assert [(g.min_nodes, g.max_nodes) for g in groups] == [(1, 1), (1, 1)]
    assert sorted(tuple(g.resource["inputs"]["subnetIds"]) for g in groups) == [("subnet-0a1b",), ("subnet-0c2d",)]
    pod = view(target).pods["chat"][0]
    nodes = [g.node for g in groups for _ in range(g.min_nodes)]
    assert sum(why_not(pod, node) is None for node in nodes) == floor.min_nodes == 2  # the two floor replicas


def test_aks_declares_a_zonal_pool(tmp_path):
    declared = _declared(tmp_path, "azure")
    pools = [r.inputs for r in declared if r.type == "azure-native:containerservice:AgentPool"
             and r.inputs.get("minCount") == 2]
    assert [p["availabilityZones"] for p in pools] == [["1", "2"]]


def test_aks_reserves_a_spread_floor_in_a_zonal_group_one_reservation_per_zone(tmp_path):
    a100 = {**CHAT, "gpu": "A100-80GB", "gpus": 1}
    declared = run_program(write(tmp_path, "azure", [{**a100, "availability": SPREAD}]), TARGETS["azure"]["name"])
    groups = [r.inputs for r in declared if r.type == "azure-native:compute:CapacityReservationGroup"]
    reservations = [r.inputs for r in declared if r.type == "azure-native:compute:CapacityReservation"]
    assert [g["zones"] for g in groups] == [["1", "2"]]
    assert sorted((tuple(r["zones"]), r["sku"]["capacity"]) for r in reservations) == [(("1",), 1), (("2",), 1)]


def test_gke_reserves_the_floor_in_each_zone(tmp_path):
    declared = _declared(tmp_path, "gcp")
    reservations = [r.inputs for r in declared if r.type == "gcp:compute/reservation:Reservation"]
    assert sorted(r["zone"] for r in reservations) == ["us-central1-a", "us-central1-b"]
    assert sorted(r["specificReservation"]["count"] for r in reservations) == [1, 1]


def test_oke_places_the_floor_in_each_availability_domain_on_its_reservation(tmp_path):
    declared = _declared(tmp_path, "oci")
    reservations = [r for r in declared if r.type == "oci:Core/computeCapacityReservation:ComputeCapacityReservation"]
    assert sorted(r.inputs["availabilityDomain"] for r in reservations) == ["Uocm:US-ASHBURN-AD-1",
                                                                           "Uocm:US-ASHBURN-AD-2"]
    assert [c["reservedCount"] for r in reservations for c in r.inputs["instanceReservationConfigs"]] == ["1", "1"]
    floor = next(r.inputs for r in declared if r.type == "oci:ContainerEngine/nodePool:NodePool"
                 and r.inputs["nodeConfigDetails"]["size"] == 2)
    placements = floor["nodeConfigDetails"]["placementConfigs"]
    assert sorted(p["availabilityDomain"] for p in placements) == ["Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2"]
    assert all(p.get("capacityReservationId") for p in placements)


# -- the spec ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cloud", CLOUDS)
def test_more_zones_than_the_target_names_is_a_located_error(tmp_path, cloud):
    path = write(tmp_path, cloud, [chat({"zones": 3})])
    with pytest.raises(SpecError) as caught:
        build_plan(load_spec(path))
    (problem,) = {(p.path, p.message) for p in caught.value.problems}
    assert problem[0] == "workloads[0].availability.zones"
    assert "3 zones" in problem[1] and "list at least 3" in problem[1]


@pytest.mark.parametrize("value, path, words", [
    ({"zones": 0}, "workloads[0].availability.zones", "at least 1"),
    ({"zone": 2}, "workloads[0].availability.zone", "did you mean 'zones'"),
    ({}, "workloads[0].availability", "give zones, max_replicas_per_node or both"),
])
def test_bad_availability_is_located(tmp_path, value, path, words):
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, "aws", [chat(value) if value else {**CHAT, "availability": {}}]))
    assert any(p.path == path and words in p.message for p in caught.value.problems), caught.value.problems


def test_availability_is_for_inference(tmp_path):
    train = {"name": "train", "kind": "training", "gpu": "H100", "gpus": 8, "availability": SPREAD}
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, "aws", [train]))
    assert any(p.path == "workloads[0].availability" and "for inference" in p.message
               for p in caught.value.problems)


# -- the packing rule -------------------------------------------------------------------------------------
def test_zone_shares_are_balanced():
    assert zone_shares(5, 2) == [3, 2] and zone_shares(1, 3) == [1, 0, 0]


def test_spread_packing_puts_each_zones_share_on_its_own_nodes():
    def pack(n: int) -> Packing:  # two replicas per node, one GPU each of a 2-GPU node
        return Packing(nodes=-(-n // 2), gpus_required=n, lower_bound=n, node_hours=730.0 * -(-n // 2))

    assert spread_packing(4, Availability(1, None), pack).nodes == 2  # no spread asked: packing alone
    three_zones = spread_packing(4, Availability(3, None), pack)
    assert (three_zones.nodes, three_zones.gpus_required) == (3, 4)  # 2 + 1 + 1 replicas
    one_per_node = spread_packing(4, Availability(2, 1), pack)
    assert (one_per_node.nodes, one_per_node.node_hours) == (4, 4 * 730.0)
    assert dict(one_per_node.bounds)["availability"] == 4
