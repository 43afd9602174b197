"""The rules themselves: one implementation, fed by plan pools and by resources alike."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import EXAMPLE, spec_text
from gpustack.guardrails import evaluate, findings
from gpustack.guardrails.config import ConfigError, settings
from gpustack.guardrails.from_plan import plan_views
from gpustack.guardrails.resources import pool_view
from gpustack.guardrails.rules import RULES, rule
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.spec.load import load_text


def example_views():
    return plan_views(build_plan(load_spec(str(EXAMPLE))))


def test_plan_views_carry_what_the_rules_read():
    views = example_views()
    assert sorted(views) == ["aws-prod", "azure-prod", "gcp-prod", "oci-prod"]
    for pools in views.values():
        for view in pools:
            assert view.is_gpu and view.gpus_per_node and view.usd_per_node_hour
            assert any(t.key == "nvidia.com/gpu" and t.effect == "NoSchedule" for t in view.taints)
            assert view.labels["team"] == "ml-platform" and view.labels["environment"] == "prod"
            assert view.checkpointing is (None if view.kind in ("inference", "notebook") else view.checkpointing)
            assert view.scheduled is (view.kind == "notebook")
            assert view.replacements == ()  # no baseline
    ranker = next(v for v in views["aws-prod"] if v.workloads == ("ranker-train",))
    assert ranker.capacities == {"on-demand"} and ranker.checkpointing is False  # fine: not spot


def test_the_taint_rule_catches_a_plan_pool_without_the_taint():
    view = example_views()["aws-prod"][0]
    assert list(findings(rule("gpu-pool-taint"), [view], {})) == []
    (found,) = findings(rule("gpu-pool-taint"), [dataclasses.replace(view, taints=())], {})
    assert found.pool == view.name and "gpustack taints every GPU pool it plans" in found.fix


def test_one_rule_judges_a_plan_pool_and_a_resource_alike():
    spec = load_text(spec_text([{"name": "ranker", "kind": "training", "gpu": "H100", "gpus": 8, "capacity": "spot"}],
                               labels={"team": "a", "environment": "b"}), "spec.yaml")
    (plan_pool,) = plan_views(build_plan(spec))["aws-t"]
    props = {"instanceTypes": [plan_pool.instance_type], "capacityType": "SPOT", "labels": dict(plan_pool.labels),
             "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
             "scalingConfig": {"minSize": 0.0, "maxSize": 1.0, "desiredSize": 0.0}}
    resource = pool_view("aws:eks/nodeGroup:NodeGroup", props, "urn:pulumi:aws-t::p::aws:eks/nodeGroup:NodeGroup::"
                         + plan_pool.name, plan_pool.name, protected=True)  # no replacement advisory
    config = settings()
    from_plan = evaluate({"aws-t": [plan_pool]}, config)
    from_resource = evaluate({"aws-t": [resource]}, config)
    assert [v.rule for v in from_plan] == [v.rule for v in from_resource] == ["spot-gpu-pool-checkpointing"]
    assert from_plan[0].message.replace(" (workload ranker)", "") == from_resource[0].message
    assert "`capacity: spot`" in from_plan[0].fix and "capacityType: ON_DEMAND" in from_resource[0].fix


def test_rules_skip_a_pool_whose_fields_are_unknown():
    view = dataclasses.replace(example_views()["aws-prod"][0], taints=(), unknown=frozenset({"taints"}))
    assert not rule("gpu-pool-taint").applies(view) and rule("gpu-pool-attribution-labels").applies(view)
    assert evaluate({"aws-prod": [view]}, settings()) == []


# -- readers -------------------------------------------------------------------------------------------
def test_gke_per_zone_bounds_count_every_zone():
    props = {"nodeLocations": ["us-central1-a", "us-central1-b"], "location": "us-central1-a",
             "autoscaling": {"minNodeCount": 1.0, "maxNodeCount": 3.0},
             "nodeConfig": {"machineType": "g2-standard-8"}}
    view = pool_view("gcp:container/nodePool:NodePool", props)
    assert (view.min_nodes, view.max_nodes, view.gpus_per_node) == (2, 6, 1)
    assert view.price_note == "on-demand list price in us-central1"  # the zone's region


def test_aks_without_autoscaling_runs_its_count():
    view = pool_view("azure-native:containerservice:AgentPool", {"vmSize": "Standard_NC24ads_A100_v4", "count": 3.0})
    assert (view.min_nodes, view.max_nodes) == (3, 3) and view.capacities == {"on-demand"}
    assert view.price_note.startswith("lowest list price in the catalog")  # an agent pool names no region


def test_an_oke_pool_with_one_preemptible_placement_is_not_spot_only():
    props = {"nodeShape": "VM.GPU.A10.1", "initialNodeLabels": [{"key": "gpustack.dev/kind", "value": "inference"}],
             "nodeConfigDetails": {"size": 2.0, "placementConfigs": [
                 {"availabilityDomain": "AD-1", "preemptibleNodeConfig": {"preemptionAction": {"type": "TERMINATE"}}},
                 {"availabilityDomain": "AD-2", "capacityReservationId": "ocid1.capacityreservation.oc1..a"}]}}
    view = pool_view("oci:ContainerEngine/nodePool:NodePool", props)
    assert view.capacities == {"spot", "reserved"} and not view.spot_only
    assert list(findings(rule("inference-pool-not-spot-only"), [view], {})) == []


def test_oke_taints_come_from_a_plain_or_base64_cloud_init_script():
    script = 'bash /var/run/oke-init.sh --kubelet-extra-args "--register-with-taints=nvidia.com/gpu=present:NoSchedule"'
    view = pool_view("oci:ContainerEngine/nodePool:NodePool", {"nodeShape": "BM.GPU.H100.8",
                                                              "nodeMetadata": {"user_data": script}})
    assert [(t.key, t.value, t.effect) for t in view.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
    assert view.is_gpu and view.gpus_per_node == 8


def test_other_resource_types_are_no_pools():
    assert pool_view("aws:ec2/instance:Instance", {"instanceType": "p5.48xlarge"}) is None


# -- configuration -----------------------------------------------------------------------------------
def test_default_settings():
    config = settings()
    assert config.levels == {r.name: r.level for r in RULES}
    assert config.options["gpu-pool-attribution-labels"] == {"labels": ["team", "environment"]}
    assert config.options["dev-pool-auto-stop"] == {"kinds": ["notebook"], "matchLabels": {}}
    assert config.options["stack-gpu-budget"] == {}  # off unless configured


def test_a_rule_level_beats_all_as_in_pulumi():
    config = settings({"all": "advisory", "stack-gpu-budget": {"enforcementLevel": "mandatory", "maxGpus": 8}})
    assert config.levels["gpu-pool-taint"] == "advisory" and config.levels["stack-gpu-budget"] == "mandatory"
    assert config.options["stack-gpu-budget"] == {"maxGpus": 8}


@pytest.mark.parametrize("config, message", [
    ({"gpu-pool-attribution-labels": {"labels": "team"}}, "labels: expected a list of strings"),
    ({"dev-pool-auto-stop": {"matchLabels": {"environment": 1}}}, "matchLabels: expected an object of strings"),
    ({"stack-gpu-budget": 5}, "expected a level (mandatory, advisory, disabled) or an object"),
    ({"stack-gpu-budget": {"maxMonthlyUsd": True}}, "maxMonthlyUsd: expected a number >= 0"),
])
def test_bad_settings_say_what_is_allowed(config, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        settings(config)


def test_every_registered_cloud_has_a_node_pool_reader_in_the_pack():
    # The pack reads node pools by their Pulumi type; a cloud added to the registry without a reader
    # would silently escape every policy.
    from gpustack.clouds import CLOUDS
    from gpustack.guardrails.resources import pool_types

    assert {t.cloud for t in pool_types().values()} == set(CLOUDS.names())
