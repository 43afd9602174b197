"""What the tests of each provisioner whose pools are Kubernetes objects (Karpenter's NodePools, GKE's
ComputeClasses) check the same way: goldens, the Pulumi run of the example, pending pods against the
NodePools (tests/cloudsim/karpenter.py), the guardrails' views of the declared objects."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from cloudsim import karpenter as sim
from cloudsim.kube import Pod
from conftest import assert_golden, assert_golden_folder
from gpustack.catalog import InstanceType
from gpustack.plan.model import TargetPlan
from gpustack.render import InCluster
from gpustack.render.files import render_files
from gpustack.testing import Declared
from pulumi_golden import declared_yaml

KUBECONFIG = {"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"}


def assert_rendered_golden(rendered: InCluster, target: str) -> None:
    """`gpustack render`'s files for `target` are its goldens, no more and no fewer."""
    assert_golden_folder(f"render/{target}", render_files(rendered))


def assert_program_golden(target: str, what: str, declared: list[Declared]) -> None:
    assert_golden(f"pulumi/{target}.yaml", declared_yaml(
        f"Every resource `pulumi up` declares for {what}, with a kubeconfig", declared))


def pod(request: Any) -> Pod:
    """A pending pod of a workload as the plan's pod request says it is made."""
    tolerations = tuple({"key": t.key, "operator": "Exists", "effect": t.effect} for t in request.tolerations)
    return Pod(sim.pod_requests(dict(request.resources)), dict(request.node_selector), tolerations)


def without_requests(p: Pod) -> Pod:
    """The pod without resource requests: what the NodePools' requirements and taints decide alone."""
    return Pod({}, p.node_selector, p.tolerations)


def assert_each_pod_matches_its_pools_and_no_other_kind(planned: TargetPlan, node_pools: Sequence[Mapping[str, Any]],
                                                        rows: Mapping[str, InstanceType]) -> None:
    kind_of = {p.cloud_name: p.kind for p in planned.pools}
    for request in planned.pod_requests:
        mine = {planned.pool(name).cloud_name for name in request.pools}
        shape = without_requests(pod(request))
        matched = {p["metadata"]["name"] for p in node_pools if sim.why_not(shape, p, rows) is None}
        assert mine <= matched, (request.workload, mine - matched)
        assert {kind_of[name] for name in matched} == {kind_of[name] for name in mine}, (request.workload, matched)


def assert_declares_the_rendered_node_objects(declared: list[Declared], rendered: InCluster, component: str) -> None:
    """The program declares exactly the objects `gpustack render` writes, each a child of its pool's component."""
    from test_in_cluster_pulumi import plain

    kinds = {o["kind"] for o in rendered.node_objects}  # the provider's node class among them

    def node_object(r: Declared) -> bool:
        return r.type.startswith("kubernetes:") and r.type.rsplit(":", 1)[-1] in kinds

    objects = [plain(dict(r.inputs)) for r in declared if node_object(r)]
    key = lambda o: (o["kind"], o["metadata"]["name"])
    assert sorted(objects, key=key) == sorted((plain(o) for o in rendered.node_objects), key=key)
    components = {r.urn: r.name for r in declared if r.type == component}
    for r in declared:
        if node_object(r):
            assert components[r.parent] in r.name, "each pool's objects are children of its GpuNodePool"


def views(declared: list[Declared]) -> list[Any]:
    """The guardrails' pool views of the declared resources."""
    from gpustack.guardrails.resources import pool_view
    from test_in_cluster_pulumi import plain

    return [v for r in declared if (v := pool_view(r.type, plain(dict(r.inputs)), r.urn, r.name)) is not None]


def run_example(tmp_path_factory: Any, text: str, target: str) -> list[Declared]:
    """What the Pulumi program declares for `target` of the spec `text`, with a kubeconfig."""
    from gpustack.testing import run_program

    spec = tmp_path_factory.mktemp(target) / "gpustack.yaml"
    spec.write_text(text, encoding="utf-8")
    return run_program(str(spec), target, config=KUBECONFIG)


def assert_views_are_the_pools(declared: list[Declared], planned: TargetPlan, provisioner: str) -> None:
    """The guardrails read each declared NodePool as its planned pool: no minimum, the maximum, capacity,
    labels (kind) and taints."""
    found = {v.cloud_name: v for v in views(declared)}
    assert set(found) == {p.cloud_name for p in planned.pools}
    for pool in planned.pools:
        view = found[pool.cloud_name]
        assert view.is_gpu and view.cloud == planned.cloud and view.provisioner == provisioner and view.kind == pool.kind
        assert (view.instance_type, view.gpus_per_node, view.max_nodes, view.min_nodes) == (
            pool.instance_type, pool.gpus_per_node, pool.max_nodes, 0)
        assert view.capacities == {pool.capacity}
        assert {(t.key, t.effect) for t in view.taints or ()} == {(t.key, t.effect) for t in pool.taints}


def compiled_pools(plan: Any, provisioner: str, instance_type_label: str) -> list[dict[str, Any]]:
    """The plan JSON's pools of its one target, each compiled once by `provisioner` into a NodePool that
    requires its instance type and capacity type."""
    import json

    [target] = json.loads(plan.to_json())["targets"]
    assert target["provisioner"] == provisioner
    for pool in target["pools"]:
        compiled = pool["compiled"]
        assert compiled["provisioner"] == provisioner and compiled["name"] == pool["cloud_name"]
        assert {"key": instance_type_label, "operator": "In", "values": [pool["instance_type"]]} in compiled["requirements"]
        assert {"key": "karpenter.sh/capacity-type", "operator": "In",
                "values": [pool["capacity"]]} in compiled["requirements"]
    return list(target["pools"])


def rules_found(found_views: list[Any], target: str) -> set[str]:
    """The guardrail rules the views break, any level."""
    from gpustack.guardrails import evaluate
    from gpustack.guardrails.config import settings

    return {f.rule for f in evaluate({target: found_views}, settings())}


def assert_guardrails_pass_and_catch_an_untainted_pool(declared: list[Declared], target: str) -> list[Any]:
    """The declared pools break no mandatory rule, and a training pool without its GPU taint is flagged;
    the views, for more checks."""
    import dataclasses

    from gpustack.guardrails import evaluate
    from gpustack.guardrails.config import settings

    found = views(declared)
    assert [v for v in evaluate({target: found}, settings()) if v.level == "mandatory"] == []
    untainted = [dataclasses.replace(v, taints=()) if v.kind == "training" else v for v in found]
    assert "gpu-pool-taint" in rules_found(untainted, target)
    return found


def assert_node_objects_valid(rendered: InCluster, planned: TargetPlan, node_class_kind: str,
                              cel_problems: Any) -> None:
    """One NodePool and one node class per pool, each valid against its CRD's schema (tests/schemas) and
    the CRD's CEL rules as `cel_problems` re-states them."""
    from test_render import validate

    kinds = [o["kind"] for o in rendered.node_objects]
    assert kinds.count("NodePool") == kinds.count(node_class_kind) == len(planned.pools)
    for obj in rendered.node_objects:
        validate(obj)
        assert cel_problems(obj) == [], obj["metadata"]["name"]


def nodepool_cel_problems(node_pool: Mapping[str, Any], restricted: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Karpenter core's CEL rules of the NodePool CRD that gpustack's NodePools touch, re-stated (requirement
    values, the karpenter.sh domain, `restricted` keys), and the template's label and requirement keys,
    for a provider's own rules."""
    template = node_pool["spec"]["template"]
    problems = []
    for req in template["spec"]["requirements"]:
        if req["operator"] == "In" and not req["values"]:
            problems.append("requirements with operator 'In' must have a value defined")
    keys = [r["key"] for r in template["spec"]["requirements"]] + list(template["metadata"]["labels"])
    for key in keys:
        domain = key.split("/")[0]
        if (domain.endswith("karpenter.sh") and key != "karpenter.sh/capacity-type") or \
                key in ("karpenter.sh/nodepool", "kubernetes.io/hostname", *restricted):
            problems.append(f"label {key} is restricted")
    if any(set(b) != {"nodes", "reasons"} and set(b) != {"nodes"} for b in node_pool["spec"]["disruption"].get("budgets", [])):
        problems.append("'schedule' must be set with 'duration'")
    return problems, keys


def assert_stops_without_a_kubeconfig(folder: Any, text: str, target: str) -> None:
    """Without the cluster's kubeconfig the program stops with a message (its pools would not exist)."""
    import pytest

    from gpustack.testing import run_program

    spec = folder / "gpustack.yaml"
    spec.write_text(text, encoding="utf-8")
    with pytest.raises(Exception, match="gpustack:kubeconfig"):
        run_program(str(spec), target)


def guardrail_findings(target: str, pool_views: list[Any]) -> tuple[list[Any], set[str]]:
    """(the mandatory findings, every rule that finds something) of the guardrails on `pool_views`."""
    from gpustack.guardrails import evaluate
    from gpustack.guardrails.config import settings

    found = evaluate({target: pool_views}, settings())
    return [v for v in found if v.level == "mandatory"], {v.rule for v in found}


def _node_pool_of(node_pools: Sequence[Mapping[str, Any]], pool: Any) -> Mapping[str, Any]:
    [found] = [o for o in node_pools if o["metadata"]["name"] == pool.cloud_name]
    return found


def _node_class_of(node_classes: Mapping[str, Mapping[str, Any]], node_pool: Mapping[str, Any]) -> Mapping[str, Any]:
    return node_classes[node_pool["spec"]["template"]["spec"]["nodeClassRef"]["name"]]


def pod_of(planned: TargetPlan, pool: Any) -> Any:
    """The pod request of a workload the pool carries."""
    return next(r for r in planned.pod_requests if pool.name in r.pools)


def assert_every_nodepool_launches_its_maximum(planned: TargetPlan, node_pools: Sequence[Mapping[str, Any]],
                                               rows: Mapping[str, Any], overlays: Sequence[Mapping[str, Any]] = ()) -> None:
    """Under Karpenter's limit rule (with and without the overlays read), each NodePool launches exactly the
    pool's planned maximum, a reserved floor as many nodes as its reservation holds."""
    for pool in planned.pools:
        node_pool = _node_pool_of(node_pools, pool)
        request = pod_of(planned, pool)
        room = pool.reserved_nodes or None
        for read in ({True, False} if overlays else {False}):
            launched = sim.launchable(pod(request), node_pool, rows, overlays if read else (), reservation_room=room)
            if read or not any(n.startswith("nvidia.com/mig-") for n, _ in request.resources):
                assert launched == pool.max_nodes, (pool.name, read, launched, node_pool["spec"]["limits"])


def assert_floors_and_unprotected_training_keep_their_nodes(planned: TargetPlan, node_pools: Sequence[Mapping[str, Any]],
                                                           node_classes: Mapping[str, Mapping[str, Any]],
                                                           rows: Mapping[str, Any]) -> set[str]:
    """Through a new image, a Kubernetes upgrade and an expiry: every node of a floor keeps serving, and no node
    of training that cannot resume is disrupted while its pods run. The pools checked."""
    checked = set()
    for pool in planned.pools:
        request = pod_of(planned, pool)
        unprotected = pool.kind in ("training", "fine-tuning") and not request.checkpointing
        if pool.role != "floor" and not unprotected:
            continue
        node_pool = _node_pool_of(node_pools, pool)
        nodes = max(pool.min_nodes, 1)
        for event in ("ami", "upgrade", "expiry"):
            kept, why = sim.day_two(event, node_pool, _node_class_of(node_classes, node_pool), pod(request), rows,
                                    nodes, 0 if pool.reserved_nodes else None, dict(request.annotations))
            assert kept == nodes, (pool.name, event, why)
            if unprotected:
                assert "not disrupted" in why or "never expires" in why or "pins" in why, (pool.name, event, why)
        checked.add(pool.name)
    return checked


def patched_objects(planned: TargetPlan) -> dict[str, dict[str, Any]]:
    """Each workload's bare object with its `gpustack render --workloads` patch merged, by workload."""
    from gpustack.render.workloads import patch, wirings
    from strategic_merge import merge, plain_object

    return {w.workload: merge(plain_object(w.kind, w.workload, w.namespace), patch(w)) for w in wirings(planned)}


def manifest_findings(planned: TargetPlan, objects: list[dict[str, Any]]) -> list[Any]:
    """What `gpustack check --manifests` finds in `objects`, written as one YAML file."""
    import yaml

    from gpustack.guardrails.manifests import check
    from gpustack.spec.yamlsource import parse_all

    return list(check(planned, parse_all(yaml.safe_dump_all(objects, sort_keys=False), "team.yaml")))


def assert_default_disruption_loses_or_strands_the_floors(planned: TargetPlan, node_pools: Sequence[Mapping[str, Any]],
                                                          node_classes: Mapping[str, Mapping[str, Any]],
                                                          rows: Mapping[str, Any]) -> None:
    """What the floors' NodePools did before (a Drifted budget of 1, expireAfter 720h): an expiry drains every
    floor node before any replacement exists, and a drift's replacement is refused (the node limit counts the
    old node, the reservation is full), so the node stays drifted."""
    floors = [p for p in planned.pools if p.reserved_nodes]
    assert floors
    for floor in floors:
        before = copy.deepcopy(dict(_node_pool_of(node_pools, floor)))
        before["spec"]["template"]["spec"]["expireAfter"] = "720h"
        before["spec"]["disruption"]["budgets"][-1]["nodes"] = "1"
        request = pod(pod_of(planned, floor))
        node_class = _node_class_of(node_classes, before)
        assert sim.day_two("expiry", before, node_class, request, rows, floor.reserved_nodes, 0)[0] == 0
        kept, why = sim.day_two("upgrade", before, node_class, request, rows, floor.reserved_nodes, 0)
        assert kept == floor.reserved_nodes and "refused" in why, (floor.name, why)
