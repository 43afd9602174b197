"""AKS: what `pulumi up` declares, run under mocks with the real azure-native SDK."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLE, TARGETS, assert_golden
from gpustack.cli import main
from gpustack.clouds.azure import facts as aks
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from gpustack.testing import Declared, run_program
from pulumi_golden import declared_yaml

AGENT_POOL = "azure-native:containerservice:AgentPool"
COMPONENT = "gpustack:azure:GpuNodePool"


@pytest.fixture(scope="module")
def example() -> list[Declared]:
    return run_program(str(EXAMPLE), "azure-prod")


@pytest.fixture(scope="module")
def example_plan():
    return build_plan(load_spec(EXAMPLE)).target("azure-prod")


def agent_pools(resources: list[Declared]) -> dict[str, dict]:
    return {r.name: r.inputs for r in resources if r.type == AGENT_POOL}


def write_spec(tmp_path, workloads: list[dict], settings: dict | None = None) -> str:
    target = dict(TARGETS["azure"], settings=settings or TARGETS["azure"]["settings"])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": workloads},
                                   sort_keys=False))
    return str(path)


@pytest.mark.golden
def test_example_resources_match_golden(example):
    assert_golden(
        "pulumi/azure-prod.yaml",
        declared_yaml("Every resource `pulumi up` declares for azure-prod of stacks/gpustack.yaml", example),
    )


def test_one_agent_pool_per_planned_pool_with_the_planned_name_and_size(example, example_plan):
    pools = agent_pools(example)
    assert sorted(pools) == sorted(p.name for p in example_plan.pools)
    for pool in example_plan.pools:
        inputs = pools[pool.name]
        assert inputs["agentPoolName"] == pool.cloud_name
        assert (inputs["resourceGroupName"], inputs["resourceName"]) == ("rg-ml-prod", "ml-prod-aks")
        assert (inputs["mode"], inputs["osType"], inputs["osSKU"], inputs["type"]) == (
            "User", "Linux", "Ubuntu", "VirtualMachineScaleSets")
        assert inputs["enableAutoScaling"] is True
        assert (inputs["minCount"], inputs["maxCount"], inputs["count"]) == (pool.min_nodes, pool.max_nodes,
                                                                            pool.min_nodes)
        assert inputs["vmSize"] == pool.instance_type
        assert inputs["nodeLabels"] == dict(pool.labels)
        assert inputs["nodeTaints"][0] == "nvidia.com/gpu=present:NoSchedule"
        assert inputs["gpuProfile"] == {"driver": "Install"}
        # Cloud tags are the attribution labels, without gpustack's own keys.
        assert inputs["tags"]["team"] == "ml-platform" and not any(
            k.startswith("gpustack.dev/") for k in inputs["tags"]
        )


def test_spot_training_pool_is_spot_delete_at_up_to_on_demand_price(example, example_plan):
    [pool] = [p for p in example_plan.pools if "detector-train" in p.workloads]
    inputs = agent_pools(example)[pool.name]
    assert (inputs["scaleSetPriority"], inputs["scaleSetEvictionPolicy"], inputs["spotMaxPrice"]) == (
        "Spot",
        "Delete",
        -1,
    )
    # The taint AKS puts on spot nodes is declared too, so the declared state matches the nodes.
    assert "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in inputs["nodeTaints"]
    # And the label AKS adds, which the agent pool reports back: undeclared, every refresh shows drift.
    assert inputs["nodeLabels"]["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert "kubernetes.azure.com/scalesetpriority" not in inputs["tags"]  # AKS's label, not an attribution tag
    assert inputs["minCount"] == 0


def test_on_demand_pools_do_not_carry_the_spot_label(example, example_plan):
    for pool in example_plan.pools:
        inputs = agent_pools(example)[pool.name]
        assert ("kubernetes.azure.com/scalesetpriority" in inputs["nodeLabels"]) == (pool.capacity == "spot")


def test_os_disk_is_sized_by_the_plan(example, example_plan):
    for pool in example_plan.pools:
        assert agent_pools(example)[pool.name]["osDiskSizeGB"] == pool.disk_gib >= 150


def test_one_driver_story_aks_owns_the_driver_and_the_operator_follows(example, example_plan):
    from gpustack.clouds import CLOUDS
    from gpustack.render.operator import values

    assert all(agent_pools(example)[p.name]["gpuProfile"] == {"driver": "Install"} for p in example_plan.pools)
    operator = values(example_plan, CLOUDS.get("azure"))
    assert operator["driver"] == {"enabled": False} and operator["toolkit"] == {"enabled": False}
    assert any(note.startswith("GPU driver: AKS installs the NVIDIA driver") for note in example_plan.notes)


def test_on_demand_pools_are_regular_with_no_eviction_policy(example, example_plan):
    for pool in example_plan.pools:
        if pool.capacity != "spot":
            inputs = agent_pools(example)[pool.name]
            assert inputs["scaleSetPriority"] == "Regular"
            assert "scaleSetEvictionPolicy" not in inputs and "spotMaxPrice" not in inputs


def test_mig_pools_carry_the_gpu_instance_profile_of_their_replicas(example, example_plan):
    pools = agent_pools(example)
    chat = [p for p in example_plan.pools if "chat" in p.workloads]
    assert chat and all(pools[p.name]["gpuInstanceProfile"] == "MIG3g" for p in chat)  # chat asks for 3g.40gb
    expected = {"1g.10gb": "MIG1g", "2g.20gb": "MIG2g", "3g.40gb": "MIG3g"}
    for pool in example_plan.pools:
        profiles = {pl.profile for pl in pool.placements}
        if pool.sharing.mode == "mig":
            assert pools[pool.name]["gpuInstanceProfile"] == expected[profiles.pop()]
        else:
            assert "gpuInstanceProfile" not in pools[pool.name]


def test_reserved_floor_gets_a_capacity_reservation_group_with_the_floor(example, example_plan):
    floors = [p for p in example_plan.pools if p.capacity == "reserved"]
    assert floors
    by_name = {r.name: r for r in example if r.custom}
    for pool in floors:
        group, reservation = by_name[f"{pool.name}-crg"], by_name[f"{pool.name}-cr"]
        assert group.type == "azure-native:compute:CapacityReservationGroup"
        assert reservation.type == "azure-native:compute:CapacityReservation"
        assert group.inputs["location"] == reservation.inputs["location"] == "eastus"
        assert reservation.inputs["sku"] == {"name": pool.instance_type, "capacity": pool.reserved_nodes}
        assert reservation.inputs["capacityReservationGroupName"] == group.name
        assert by_name[pool.name].inputs["capacityReservationGroupID"] == f"{group.name}-id"  # the group's id
        assert group.parent == reservation.parent == by_name[pool.name].parent  # inside the pool's component
    others = [r for r in example if r.type == AGENT_POOL and r.name not in {p.name for p in floors}]
    assert others and all("capacityReservationGroupID" not in r.inputs for r in others)


def test_every_child_is_parented_to_its_pool_component(example):
    components = {r.urn: r for r in example if r.type == COMPONENT}
    assert components and all(
        c.parent.endswith("$gpustack:index:GpuPools::azure-prod") for c in components.values()
    )
    for r in example:
        if r.custom:
            parent = components[r.parent]
            assert r.name == parent.name or r.name.startswith(parent.name + "-")


def test_workloads_with_a_long_shared_prefix_get_valid_distinct_aks_names(tmp_path):
    prefix = "customer-support-summarizer-"
    workloads = [
        {"name": prefix + "english", "kind": "inference", "gpu": "A100-80GB", "mig": "1g.10gb", "replicas": 2},
        {"name": prefix + "german", "kind": "inference", "gpu": "A100-80GB", "mig": "2g.20gb", "replicas": 2},
        {"name": prefix + "retrain", "kind": "training", "gpu": "A100-80GB", "replicas": 1, "checkpointing": True},
        {"name": prefix + "retrain-h100", "kind": "training", "gpu": "H100", "gpus": 8, "replicas": 1,
         "checkpointing": True},
    ]
    names = [
        inputs["agentPoolName"]
        for inputs in agent_pools(run_program(write_spec(tmp_path, workloads), "azure-t")).values()
    ]
    assert len(names) >= 4 and len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z][a-z0-9]{0,11}", n) for n in names), names


def test_reordering_the_spec_declares_the_same_resources(tmp_path):
    workloads = [
        {"name": "chat", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "replicas": {"min": 2, "max": 4}},
        {"name": "train", "kind": "training", "gpu": "A10", "replicas": 2, "checkpointing": True},
    ]
    first = run_program(write_spec(tmp_path, workloads), "azure-t")
    (tmp_path / "b").mkdir()
    second = run_program(write_spec(tmp_path / "b", workloads[::-1]), "azure-t")
    assert declared_yaml("", first) == declared_yaml("", second)


def test_a_bad_enum_value_is_a_located_problem_of_validate(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(aks, "SPOT_EVICTION_POLICY", "Destroy")
    spec = write_spec(tmp_path, [{"name": "train", "kind": "training", "gpu": "A10", "replicas": 2,
                                  "checkpointing": True}])
    assert main(["validate", spec]) == 2
    err = capsys.readouterr().err
    assert re.search(
        rf"{re.escape(spec)}:\d+:\d+: targets\[0\]: pool 'train-a10-spot-[a-z0-9-]+': "
        r"scale_set_eviction_policy: 'Destroy' is not accepted by AKS; allowed: Delete, Deallocate",
        err,
    ), err
    assert "Traceback" not in err


def test_a_pool_name_aks_rejects_is_a_problem_of_validate(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(aks, "MODE", "user")  # wrong case: the API is case-sensitive here
    spec = write_spec(tmp_path, [{"name": "train", "kind": "training", "gpu": "A10", "replicas": 1}])
    assert main(["validate", spec]) == 2
    assert "mode: 'user' is not accepted by AKS (did you mean 'User'?)" in capsys.readouterr().err


def test_only_one_memory_slice_1g_profiles_map_to_mig1g():
    # MIG1g creates 1g.10gb on an H100; a 1g.20gb ask must not land on a MIG1g pool.
    cloud = aks.AKS()
    assert cloud.mig_profiles(
        "H100", ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
    ) == ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")


def test_a_label_that_cannot_be_an_azure_tag_is_a_located_problem(tmp_path, capsys):
    spec = write_spec(tmp_path, [{"name": "train", "kind": "training", "gpu": "A10", "replicas": 1,
                                  "labels": {"example.com/owner": "alice"}}])
    assert main(["validate", spec]) == 2
    err = capsys.readouterr().err
    assert "label 'example.com/owner' becomes an Azure tag, and tag names cannot contain" in err and spec in err


def test_a_bad_top_level_label_is_one_problem_at_the_label_not_one_per_pool(tmp_path, capsys):
    workloads = [{"name": "a", "kind": "training", "gpu": "A10", "replicas": 1},
                 {"name": "b", "kind": "training", "gpu": "A100-80GB", "replicas": 1},
                 {"name": "c", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4}]
    spec = write_spec(tmp_path, workloads)
    text = Path(spec).read_text().replace("version: 1\n", "version: 1\nlabels:\n  example.com/owner: alice\n")
    Path(spec).write_text(text)
    assert main(["validate", spec]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: {spec}:3:3: labels.example.com/owner: label 'example.com/owner' becomes an Azure tag")
    assert err[1:] == ["gpustack: 1 problem found"]


def test_an_invalid_or_shared_aks_pool_name_is_a_problem_of_validate(tmp_path, monkeypatch, capsys):
    workloads = [{"name": "a", "kind": "training", "gpu": "A10", "replicas": 1},
                 {"name": "b", "kind": "training", "gpu": "A100-80GB", "replicas": 1}]
    spec = write_spec(tmp_path, workloads)
    monkeypatch.setattr(aks.AKS, "pool_name", lambda self, name, compact="", terse=(): "gpu-pool")
    assert main(["validate", spec]) == 2
    err = capsys.readouterr().err
    assert "AKS pool name 'gpu-pool' does not match ^[a-z][a-z0-9]{0,11}$" in err
    assert "would share the AKS name 'gpu-pool'" in err


def test_version_aliases_of_azure_native_are_dropped_but_others_kept():
    # Resolving ~90 type aliases per resource made 100 pools take ~10 s; gpustack never used the
    # versioned types, so only those aliases go.
    import pulumi

    from gpustack.clouds.azure.backend import _without_version_aliases

    aliases = [pulumi.Alias(type_="azure-native:containerservice/v20190201:AgentPool"),
               pulumi.Alias(type_="azure-native:containerservice/v20240302preview:AgentPool"),
               pulumi.Alias(name="old-name"), "urn:pulumi:s::p::t::n"]
    args = pulumi.ResourceTransformationArgs(resource=None, type_="azure-native:containerservice:AgentPool",
                                             name="p", props={}, opts=pulumi.ResourceOptions(aliases=aliases))
    result = _without_version_aliases(args)
    assert result is not None and result.opts.aliases == aliases[2:]
    assert args.opts.aliases == aliases  # the caller's options are not modified


AKS_WORKLOADS = [
    {"name": "chat", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "replicas": {"min": 2, "max": 4}},
    {"name": "embed", "kind": "inference", "gpu": "A100-80GB", "mig": "2g.20gb", "replicas": 2},
    {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "replicas": 4},
    {"name": "pretrain", "kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True},
    {"name": "tune", "kind": "fine-tuning", "gpu": "A100-80GB", "checkpointing": True},
]


def aks_names(tmp_path, workloads=AKS_WORKLOADS, **settings) -> dict[str, str]:
    spec = write_spec(tmp_path, workloads, {"resource_group": "rg-1", **settings})
    return {p.name: p.cloud_name for p in build_plan(load_spec(spec)).targets[0].pools}


def test_descriptive_aks_names_spend_the_12_characters_on_meaning(tmp_path):
    # kind (in, tr, ft, nb), capacity (s, o, r, f), GPU, MIG size or clients per GPU, then a letter digest
    assert aks_names(tmp_path, pool_names="descriptive") == {
        "infer-a100-80gb-mig-2g-20gb-reserved-standard-nc24ads-a100-v4": "inra1002gnqt",
        "infer-a100-80gb-mig-3g-40gb-ondemand-standard-nc24ads-a100-v4": "inoa1003gybg",
        "infer-a100-80gb-mig-3g-40gb-reserved-standard-nc24ads-a100-v4": "inra1003gozm",
        "notebook-t4-ts4-ondemand-standard-nc4as-t4-v3": "nbot4x4tgge",
        # on-demand: no Azure Spot meter is known for ND96isr_H100_v5 (acceptance.py)
        "train-h100-spot-standard-nd96isr-h100-v5": "trsh100hgpn",
        "tune-a100-80gb-fallback-standard-nc24ads-a100-v4": "ftfa100dugs",
        "tune-a100-80gb-spot-standard-nc24ads-a100-v4": "ftsa100eovm",
    }


def test_descriptive_names_depend_on_the_pool_alone(tmp_path):
    before = aks_names(tmp_path, pool_names="descriptive")
    more = [{"name": "aa-first", "kind": "inference", "gpu": "A100-80GB", "mig": "1g.10gb", "replicas": 3},
            *reversed(AKS_WORKLOADS)]
    after = aks_names(tmp_path, more, pool_names="descriptive")
    assert before.items() <= after.items()


def test_the_default_keeps_the_names_earlier_versions_gave(tmp_path):
    """Existing agent pools keep their names: a new name would be a new pool (drained production)."""
    assert aks_names(tmp_path) == aks_names(tmp_path, pool_names="hashed") == {
        "infer-a100-80gb-mig-2g-20gb-reserved-standard-nc24ads-a100-v4": "ira100848ef7",
        "infer-a100-80gb-mig-3g-40gb-ondemand-standard-nc24ads-a100-v4": "ioa100b63bc9",
        "infer-a100-80gb-mig-3g-40gb-reserved-standard-nc24ads-a100-v4": "ira100fee9d5",
        "notebook-t4-ts4-ondemand-standard-nc4as-t4-v3": "not4042e53",
        "train-h100-spot-standard-nd96isr-h100-v5": "tsh100b10852",
        "tune-a100-80gb-fallback-standard-nc24ads-a100-v4": "ffa100dfa0cf",
        "tune-a100-80gb-spot-standard-nc24ads-a100-v4": "fsa100dbd86b",
    }


def test_switching_to_descriptive_names_is_a_replacement_gpustack_diff_shows(tmp_path, capsys):
    old = write_spec(tmp_path, AKS_WORKLOADS)
    new = tmp_path / "new.yaml"
    group = f"resource_group: {TARGETS['azure']['settings']['resource_group']}"
    new.write_text(Path(old).read_text().replace(group, f"{group}\n    pool_names: descriptive"))
    assert main(["diff", old, str(new), "--format", "json"]) == 0
    [target] = json.loads(capsys.readouterr().out)["targets"]
    replaced = {p["name"]: p for p in target["pools"] if p["change"] == "replaced"}
    assert len(replaced) == 7
    pool = replaced["train-h100-spot-standard-nd96isr-h100-v5"]
    [field] = [f for f in pool["fields"] if f["field"] == "cloud_name"]
    assert (field["old"], field["new"]) == ("tsh100b10852", "trsh100hgpn") and "a new node pool" in field["replaces"]


def test_a_pool_at_zero_whose_sku_the_autoscaler_does_not_label_as_gpu_is_warned(tmp_path):
    """The autoscaler predicts the GPU label for its NvidiaEnabledSKUs only, and AKS refuses the label in nodeLabels."""
    from cloudsim.templates import AZURE_GPU_LABEL, aks_template
    from gpustack.catalog import load_catalog

    workloads = [{"name": "h100", "kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True},
                 {"name": "a100", "kind": "training", "gpu": "A100-80GB", "checkpointing": True}]
    spec = write_spec(tmp_path, workloads)
    plan = build_plan(load_spec(spec))
    [target] = plan.targets
    warned = {w.pool for w in target.warnings if w.code == "template-gap" and "NvidiaEnabledSKUs" in w.message}
    for pool in target.pools:
        assert (pool.name in warned) == (not aks.gpu_label_predicted(pool.instance_type)), pool.instance_type
        assert aks.GPU_LABEL not in dict(pool.labels)  # AKS refuses it in nodeLabels
    assert any(p.instance_type == "Standard_ND96isr_H100_v5" for p in target.pools if p.name in warned)
    # The upstream VMSS template reads the tag gpustack declares: the label is there either way.
    rows = {r.name: r for r in load_catalog().in_region("azure", target.region)}
    resources = run_program(spec, target.name)
    for inputs in agent_pools(resources).values():
        node = aks_template({"inputs": inputs}, rows[inputs["vmSize"]])
        assert node.labels[AZURE_GPU_LABEL] == "nvidia"
