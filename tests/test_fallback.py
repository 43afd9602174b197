"""Spot first, on-demand fallback: what makes each cloud's autoscaler grow a fine-tuning spot pool before
its fallback pool, as rendered objects, pool labels and the plan's notes."""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import jsonschema
import pytest
import yaml

from conftest import EXAMPLE, TARGETS, spec_text
from gpustack.clouds import CLOUDS
from gpustack.clouds.base import COMPUTE_CLASS, PRIORITY_EXPANDER
from gpustack.plan import build_plan
from gpustack.plan import fallback
from gpustack.render import in_cluster
from gpustack.render.autoscaling import (FALLBACK_PRIORITY, OTHER_NODE_GROUPS, OTHER_PRIORITY, PRIORITY_CONFIGMAP,
                                         SPOT_PRIORITY, literal, priority_configmap)
from gpustack.spec import load_spec, load_text
from gpustack.testing import run_program
from test_render import validate


def fallback_groups(pools):
    """The plan's fallback groups with their pools (the plan stores them by name)."""
    by_name = {p.name: p for p in pools}
    return [SimpleNamespace(name=g.name, spot=tuple(by_name[n] for n in g.spot),
                            fallback=tuple(by_name[n] for n in g.fallback)) for g in fallback.fallback_groups(pools)]


def test_the_plan_carries_its_fallback_groups():
    for target in EXAMPLE_PLAN.targets:
        assert target.fallback_groups == fallback.fallback_groups(target.pools)
    assert any(t.fallback_groups for t in EXAMPLE_PLAN.targets)

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
# A fine-tuning GPU each cloud sells as spot on a VM shape.
TUNE_GPU = {"aws": "A10G", "azure": "A10", "gcp": "L4", "oci": "A10"}
MARKER = "cloud.google.com/compute-class"


def tune(gpu: str, name: str = "tune", **extra: object) -> dict:
    return {"name": name, "kind": "fine-tuning", "gpu": gpu, "replicas": 2, "checkpointing": True,
            "hours_per_month": 100, **extra}


def plan_for(cloud: str, *workloads: dict):
    return build_plan(load_text(spec_text(list(workloads) or [tune(TUNE_GPU[cloud])], (cloud,)), "spec.yaml"))


def priorities(configmap: dict) -> dict[int, list[str]]:
    return yaml.safe_load(configmap["data"]["priorities"])


def matches(regex: str, node_group: str) -> bool:
    # The expander searches (Go regexp FindStringIndex); Python's re.search has the same meaning.
    return re.search(regex, node_group) is not None


@pytest.mark.parametrize("target", ["aws-prod", "azure-prod"])
def test_priority_configmap_ranks_the_spot_pool_above_its_fallback(target):
    plan_target = EXAMPLE_PLAN.target(target)
    [configmap] = [o for o in in_cluster(EXAMPLE_PLAN, plan_target).objects
                   if o["metadata"]["name"] == PRIORITY_CONFIGMAP]
    assert configmap["metadata"]["namespace"] == "kube-system"
    table = priorities(configmap)
    assert list(table) == [SPOT_PRIORITY, FALLBACK_PRIORITY, OTHER_PRIORITY]
    assert SPOT_PRIORITY > FALLBACK_PRIORITY > OTHER_PRIORITY > 0  # the highest priority wins
    assert table[OTHER_PRIORITY] == [OTHER_NODE_GROUPS]
    [group] = fallback_groups(plan_target.pools)
    mechanism = CLOUDS.get(plan_target.cloud).provisioner(plan_target.provisioner).fallback_mechanism
    for priority, pools in ((SPOT_PRIORITY, group.spot), (FALLBACK_PRIORITY, group.fallback)):
        assert len(table[priority]) == len(pools) == 1
        [regex] = table[priority]
        [pool] = pools
        assert matches(regex, mechanism.node_group_example.replace("{pool}", pool.cloud_name))
    assert {p.capacity for p in group.spot} == {"spot"} and {p.role for p in group.fallback} == {"fallback"}


def expander_choice(table: dict[int, list[str]], node_groups: list[str]) -> list[str]:
    """The node groups the priority expander keeps (kubernetes/autoscaler expander/priority/priority.go):
    per group the highest priority with a matching regex; the groups at the highest such priority."""
    ranked = {g: max((p for p, regexes in table.items() if any(matches(r, g) for r in regexes)), default=None)
              for g in node_groups}
    best = max((p for p in ranked.values() if p is not None), default=None)
    return [g for g, p in ranked.items() if p == best]


@pytest.mark.parametrize("cloud", [c.name for c in CLOUDS if c.provisioner().fallback_mechanism and c.provisioner().fallback_mechanism.node_group])
def test_the_regexes_pick_the_spot_node_group_and_only_its_own(cloud):
    # Two fine-tuning workloads on different GPUs: two groups, four pools, plus a node group of someone else.
    other_gpu = {"aws": "L4", "azure": "A100-80GB"}[cloud]
    plan = plan_for(cloud, tune(TUNE_GPU[cloud]), tune(other_gpu, "tune2"))
    target = plan.targets[0]
    mechanism = CLOUDS.get(cloud).provisioner().fallback_mechanism
    table = priorities(priority_configmap(plan, target))
    groups = fallback_groups(target.pools)
    assert len(groups) == 2
    name = lambda pool: mechanism.node_group_example.replace("{pool}", pool.cloud_name)
    foreign = mechanism.node_group_example.replace("{pool}", "system")
    everything = [name(p) for g in groups for p in g.spot + g.fallback] + [foreign]
    for group in groups:
        [spot], [fallback] = group.spot, group.fallback
        assert expander_choice(table, [name(spot), name(fallback), foreign]) == [name(spot)]
        assert expander_choice(table, [name(fallback), foreign]) == [name(fallback)]  # spot is short
        # Each regex names exactly one node group: anchored, never a neighbour's longer or shorter name.
        for regex in table[SPOT_PRIORITY] + table[FALLBACK_PRIORITY]:
            assert sum(matches(regex, g) for g in everything) == 1
            assert regex.startswith("^") and regex.endswith("$")
            assert not matches(regex, "x" + name(spot)) and not matches(regex, name(spot) + "x")
    # Only constructs Go's RE2 and Python share: no lookaround, no backreference.
    assert not any(re.search(r"\(\?[=!<]|\\[1-9]", r) for regexes in table.values() for r in regexes)


def test_eks_and_aks_regexes_follow_the_documented_node_group_names():
    # EKS: the Auto Scaling group of a managed node group, eks-<node group name>-<uuid>; AKS: the scale set
    # aks-<agent pool name>-<number>-vmss.
    eks = CLOUDS.get("aws").provisioner().fallback_mechanism.node_group.replace("{pool}", literal("tune-a10g-spot-g5-xlarge"))
    assert matches(eks, "eks-tune-a10g-spot-g5-xlarge-40bbb26b-8679-eb64-d33a-4ba475413529")
    assert not matches(eks, "eks-40bbb26b-8679-eb64-d33a-4ba475413529")  # early node groups had no name in it
    assert not matches(eks, "tune-a10g-spot-g5-xlarge")  # the node group's own name is not the id
    aks = CLOUDS.get("azure").provisioner().fallback_mechanism.node_group.replace("{pool}", "fsa10abc123")
    assert matches(aks, "aks-fsa10abc123-27324113-vmss")
    assert not matches(aks, "aks-fsa10abc123-27324113-vmss000000")  # a node, not the scale set
    assert not matches(aks, "fsa10abc123")


def test_literal_escapes_what_a_regex_would_read_otherwise():
    assert literal("ocid1.nodepool.oc1.iad.aaaa") == r"ocid1\.nodepool\.oc1\.iad\.aaaa"
    assert literal("tune-a10_x") == "tune-a10_x"  # '-' and '_' need no escape in Go or Python
    assert re.fullmatch(literal("a.b+c"), "a.b+c") and not re.fullmatch(literal("a.b"), "axb")


def test_gke_compute_class_lists_the_spot_pools_before_the_fallback():
    target = EXAMPLE_PLAN.target("gcp-prod")
    [group] = fallback_groups(target.pools)
    [cls] = [o for o in in_cluster(EXAMPLE_PLAN, target).objects if o["kind"] == "ComputeClass"]
    assert cls["apiVersion"] == "cloud.google.com/v1" and cls["metadata"]["name"] == group.name
    assert "namespace" not in cls["metadata"]  # cluster-scoped
    assert cls["spec"]["priorities"] == [{"nodepools": [p.cloud_name for p in group.spot]},
                                         {"nodepools": [p.cloud_name for p in group.fallback]}]
    assert cls["spec"]["whenUnsatisfiable"] == "DoNotScaleUp"
    assert cls["spec"]["nodePoolAutoCreation"] == {"enabled": False}
    # The CRD's CEL rule (not run by jsonschema): "Nodepool field cannot be set along with other fields".
    assert all(list(p) == ["nodepools"] for p in cls["spec"]["priorities"])
    # The class's pools carry its label and NoSchedule taint; no other pool does.
    for pool in target.pools:
        member = pool in group.spot + group.fallback
        assert (dict(pool.labels).get(MARKER) == group.name) is member
        assert any((t.key, t.value, t.effect) == (MARKER, group.name, "NoSchedule") for t in pool.taints) is member
        assert MARKER not in pool.attribution  # never a cloud label, alert label or tag


def test_compute_class_validates_against_the_published_schema():
    target = EXAMPLE_PLAN.target("gcp-prod")
    [cls] = [o for o in in_cluster(EXAMPLE_PLAN, target).objects if o["kind"] == "ComputeClass"]
    validate(cls)
    wrong = copy.deepcopy(cls)
    wrong["spec"]["whenUnsatisfiable"] = "Wait"
    with pytest.raises(jsonschema.ValidationError):
        validate(wrong)
    wrong = copy.deepcopy(cls)
    wrong["spec"]["priorities"][0]["nodePools"] = wrong["spec"]["priorities"][0].pop("nodepools")
    with pytest.raises(jsonschema.ValidationError):
        validate(wrong)


@pytest.mark.parametrize("cloud", sorted(TARGETS))
def test_every_cloud_validates_and_notes_what_makes_the_fallback_wait(cloud):
    plan = plan_for(cloud)
    target = plan.targets[0]
    mechanism = CLOUDS.get(cloud).provisioner().fallback_mechanism
    [group] = fallback_groups(target.pools)
    [note] = [n for n in target.notes if n.startswith("Fallback pool(s)")]
    assert all(p.cloud_name in note for p in group.spot + group.fallback)
    assert mechanism.user_action.replace("<class>", group.name) in note and mechanism.source in note
    assert not [w for w in target.warnings if w.code == "fallback-unordered"]
    objects = in_cluster(plan, target).objects
    for obj in objects:
        validate(obj)
    kinds = {o["kind"] for o in objects if o["metadata"]["name"] in (PRIORITY_CONFIGMAP, group.name)}
    if mechanism.kind == COMPUTE_CLASS:
        assert kinds == {"ComputeClass"} and f"ComputeClass {group.name}" in note
    elif mechanism.node_group is not None:
        assert kinds == {"ConfigMap"} and "kube-system/cluster-autoscaler-priority-expander" in note
    else:  # ids known only once the pools exist: nothing rendered, and the note says so
        assert mechanism.kind == PRIORITY_EXPANDER and kinds == set()
        assert "`gpustack render` cannot write it" in note


def test_no_fallback_pool_no_objects_and_no_note():
    plan = plan_for("aws", tune("A10G", checkpointing=False))
    target = plan.targets[0]
    assert not fallback_groups(target.pools)
    assert not [o for o in in_cluster(plan, target).objects if o["metadata"]["name"] == PRIORITY_CONFIGMAP]
    assert not [n for n in target.notes if n.startswith("Fallback pool(s)")]


def test_a_cloud_without_a_mechanism_warns_that_the_fallback_may_start_as_often_as_spot(monkeypatch):
    monkeypatch.setattr(CLOUDS.get("aws").provisioner(), "fallback_mechanism", None)
    plan = plan_for("aws")
    target = plan.targets[0]
    [warning] = [w for w in target.warnings if w.code == "fallback-unordered"]
    assert "may start as often as the spot pools" in warning.message
    assert not [o for o in in_cluster(plan, target).objects if o["metadata"]["name"] == PRIORITY_CONFIGMAP]


def test_the_group_name_survives_a_new_workload_and_spec_order():
    first = plan_for("gcp", tune("L4"))
    more = plan_for("gcp", tune("L4", "tune-b", replicas=3), tune("L4"), tune("T4", "tune-c"))
    [before] = fallback_groups(first.targets[0].pools)
    after = {g.name: g for g in fallback_groups(more.targets[0].pools)}
    assert before.name in after and len(after) == 2
    assert {p.name for p in before.spot} <= {p.name for p in after[before.name].spot}


OCI_KUBECONFIG = {"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"}


def oke_spec(tmp_path) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(spec_text([tune("A10")], ("oci",)))
    return str(path)


def test_oke_pulumi_writes_the_configmap_from_node_pool_ids_and_switches_the_expander(tmp_path):
    spec = oke_spec(tmp_path)
    plan = build_plan(load_spec(spec))
    target = plan.targets[0]
    [group] = fallback_groups(target.pools)
    resources = run_program(spec, "oci-t", config=OCI_KUBECONFIG)
    [configmap] = [r for r in resources if r.type == "kubernetes:core/v1:ConfigMap"
                   and r.inputs["metadata"]["name"] == PRIORITY_CONFIGMAP]
    assert configmap.inputs["metadata"]["namespace"] == "kube-system"
    table = yaml.safe_load(configmap.inputs["data"]["priorities"])
    # The mocks give each node pool the id "<pool name>-id".
    assert table == {SPOT_PRIORITY: [f"^{literal(p.name)}-id$" for p in group.spot],
                     FALLBACK_PRIORITY: [f"^{literal(p.name)}-id$" for p in group.fallback],
                     OTHER_PRIORITY: [OTHER_NODE_GROUPS]}
    validate({"apiVersion": "v1", "kind": "ConfigMap", **{k: configmap.inputs[k] for k in ("metadata", "data")}})
    [addon] = [r for r in resources if r.type == "oci:ContainerEngine/addon:Addon"]
    assert {"key": "expander", "value": "priority"} in addon.inputs["configurations"]


def test_oke_without_the_in_cluster_layer_keeps_the_default_expander(tmp_path):
    # The priority expander without its ConfigMap would choose no node group at all (priority.go).
    resources = run_program(oke_spec(tmp_path), "oci-t")
    [addon] = [r for r in resources if r.type == "oci:ContainerEngine/addon:Addon"]
    assert "expander" not in {c["key"] for c in addon.inputs["configurations"]}
    assert not [r for r in resources if r.type.startswith("kubernetes:")]


def test_gke_node_pools_join_their_class_through_label_and_taint():
    resources = run_program(str(EXAMPLE), "gcp-prod")
    [group] = fallback_groups(EXAMPLE_PLAN.target("gcp-prod").pools)
    pools = {r.inputs["name"]: r.inputs for r in resources if r.type == "gcp:container/nodePool:NodePool"}
    for pool in group.spot + group.fallback:
        config = pools[pool.cloud_name]["nodeConfig"]
        assert config["labels"][MARKER] == group.name
        assert {"key": MARKER, "value": group.name, "effect": "NO_SCHEDULE"} in config["taints"]
        assert MARKER not in config.get("resourceLabels", {})
