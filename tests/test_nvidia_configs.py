"""The NVIDIA device-plugin and mig-parted ConfigMaps parse to NVIDIA's formats and match the plan."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE, spec_text
from gpustack.catalog import load_catalog
from gpustack.plan import build_plan
from gpustack.plan.pools import DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL
from gpustack.render import in_cluster, nvidia
from gpustack.spec import load_spec, load_text

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))


def configmaps(plan, target) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in in_cluster(plan, target).objects if o["kind"] == "ConfigMap"}


def check_device_plugin(target, configmap: dict, strategy: str) -> None:
    """Every config is a k8s-device-plugin `version: v1` file, one per labelled pool, plus `default`."""
    wanted = {dict(p.labels)[DEVICE_PLUGIN_CONFIG_LABEL]: p for p in target.pools
              if DEVICE_PLUGIN_CONFIG_LABEL in dict(p.labels)}
    data = configmap["data"]
    assert set(data) == {nvidia.DEFAULT_CONFIG} | set(wanted)
    for name, text in data.items():
        config = yaml.safe_load(text)
        assert config["version"] == "v1"
        assert set(config) <= {"version", "flags", "sharing"}
        assert config["flags"] == {"migStrategy": strategy}
        if name == nvidia.DEFAULT_CONFIG:
            assert "sharing" not in config
            continue
        pool = wanted[name]
        if pool.sharing.mode in ("time-slicing", "mps"):
            key = "timeSlicing" if pool.sharing.mode == "time-slicing" else "mps"
            assert list(config["sharing"]) == [key]
            [resource] = config["sharing"][key]["resources"]
            assert resource == {"name": "nvidia.com/gpu", "replicas": pool.sharing.replicas}
            assert isinstance(resource["replicas"], int) and resource["replicas"] >= 2
        else:
            assert pool.sharing.mode == "mig" and "sharing" not in config


def check_mig_parted(target, configmap: dict) -> None:
    """`version: v1` mig-configs: one per labelled pool, layouts valid and holding what the plan packed."""
    [key] = configmap["data"]
    assert key == "config.yaml"
    config = yaml.safe_load(configmap["data"][key])
    assert config["version"] == "v1" and set(config) == {"version", "mig-configs"}
    wanted = {dict(p.labels)[MIG_CONFIG_LABEL]: p for p in target.pools if MIG_CONFIG_LABEL in dict(p.labels)}
    assert set(config["mig-configs"]) == {nvidia.ALL_DISABLED} | set(wanted)
    assert config["mig-configs"][nvidia.ALL_DISABLED] == [{"devices": "all", "mig-enabled": False}]
    for name, pool in wanted.items():
        mig = load_catalog().gpu(pool.gpu).mig
        covered: list[int] = []
        instances: dict[str, int] = {}
        for entry in config["mig-configs"][name]:
            devices = list(range(pool.gpus_per_node)) if entry["devices"] == "all" else entry["devices"]
            assert all(isinstance(d, int) and 0 <= d < pool.gpus_per_node for d in devices)
            covered += devices
            if entry["mig-enabled"]:
                layout = entry["mig-devices"]
                assert mig.place(layout) is not None, (name, layout)  # NVIDIA's placement rules
                for profile, count in layout.items():
                    instances[profile] = instances.get(profile, 0) + count * len(devices)
            else:
                assert set(entry) == {"devices", "mig-enabled"}
        assert sorted(covered) == list(range(pool.gpus_per_node)), "each GPU of the node exactly once"
        planned: dict[str, int] = {}
        for group in pool.sharing.mig:
            for profile, count in group.layout:
                planned[profile] = planned.get(profile, 0) + count * group.gpus
        assert instances == planned
        # ... and the layouts hold every replica the pool places, with its floor or burst sibling, whose
        # nodes carry the same layouts (the burst rides on the floor's spare room first).
        group = [p for p in target.pools if p.sharing.mig == pool.sharing.mig and p.instance_type == pool.instance_type]
        per_node = sum(pl.replicas for p in group for pl in p.placements) / max(sum(p.max_nodes for p in group), 1)
        assert sum(instances.values()) >= per_node


@pytest.mark.parametrize("target", [t.name for t in EXAMPLE_PLAN.targets])
def test_example_configmaps_follow_nvidia_formats(target):
    plan_target = EXAMPLE_PLAN.target(target)
    maps = configmaps(EXAMPLE_PLAN, plan_target)
    if nvidia.DEVICE_PLUGIN_CONFIGMAP not in maps:
        # GKE shares natively: no device-plugin config, no label asking for one.
        assert not any(DEVICE_PLUGIN_CONFIG_LABEL in dict(p.labels) for p in plan_target.pools)
        return
    check_device_plugin(plan_target, maps[nvidia.DEVICE_PLUGIN_CONFIGMAP], nvidia.mig_strategy(plan_target))
    if nvidia.MIG_PARTED_CONFIGMAP in maps:
        check_mig_parted(plan_target, maps[nvidia.MIG_PARTED_CONFIGMAP])
    else:
        assert not any(MIG_CONFIG_LABEL in dict(p.labels) for p in plan_target.pools)


def test_example_aws_has_mixed_mig_layouts_with_whole_gpus_left_unpartitioned():
    target = EXAMPLE_PLAN.target("aws-prod")
    config = yaml.safe_load(configmaps(EXAMPLE_PLAN, target)[nvidia.MIG_PARTED_CONFIGMAP]["data"]["config.yaml"])
    entries = [e for name, es in config["mig-configs"].items() if name != nvidia.ALL_DISABLED for e in es]
    assert any(not e["mig-enabled"] for e in entries)
    assert len({tuple(sorted(e["mig-devices"].items())) for e in entries if e["mig-enabled"]}) > 1
    assert nvidia.mig_strategy(target) == "mixed"


def test_aks_mig_pools_get_a_device_plugin_config_but_no_mig_parted_config():
    target = EXAMPLE_PLAN.target("azure-prod")
    maps = configmaps(EXAMPLE_PLAN, target)
    assert nvidia.MIG_PARTED_CONFIGMAP not in maps  # gpuInstanceProfile partitions these nodes
    mig_pools = [p for p in target.pools if p.sharing.mode == "mig"]
    assert mig_pools and all(dict(p.labels)[DEVICE_PLUGIN_CONFIG_LABEL] in maps[nvidia.DEVICE_PLUGIN_CONFIGMAP]["data"]
                             for p in mig_pools)


def plan_one(workloads: list[dict], cloud: str = "aws"):
    plan = build_plan(load_text(spec_text(workloads, (cloud,)), "spec.yaml"))
    return plan, plan.targets[0]


def test_mps_pool_gets_an_mps_config():
    plan, target = plan_one([{"name": "svc", "kind": "inference", "gpu": "L4", "gpu_fraction": 0.25,
                              "sharing": "mps", "replicas": 8}])
    [pool] = target.pools
    check_device_plugin(target, configmaps(plan, target)[nvidia.DEVICE_PLUGIN_CONFIGMAP], "single")
    config = yaml.safe_load(configmaps(plan, target)[nvidia.DEVICE_PLUGIN_CONFIGMAP]["data"][pool.name])
    assert config["sharing"] == {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}


def test_whole_gpu_targets_get_only_the_default_config():
    plan, target = plan_one([{"name": "train", "kind": "training", "gpu": "H100", "gpus": 8, "checkpointing": True}])
    maps = configmaps(plan, target)
    assert set(maps) == {nvidia.DEVICE_PLUGIN_CONFIGMAP}
    assert set(maps[nvidia.DEVICE_PLUGIN_CONFIGMAP]["data"]) == {nvidia.DEFAULT_CONFIG}
    assert nvidia.mig_strategy(target) == "single"


A100_PROFILES = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(A100_PROFILES), st.integers(1, 12)), min_size=1, max_size=4,
                unique_by=lambda t: t[0]))
def test_random_mig_demands_render_valid_configs(demands):
    workloads = [{"name": f"svc-{i}", "kind": "inference", "gpu": "A100-80GB", "mig": profile, "replicas": count}
                 for i, (profile, count) in enumerate(demands)]
    plan, target = plan_one(workloads, "oci")
    maps = configmaps(plan, target)
    # 7g.80gb alone is a whole GPU where layouts mix (OKE): such a plan has no MIG pool.
    partitioned = any(p.sharing.mode == "mig" for p in target.pools)
    assert partitioned == any(profile != "7g.80gb" for profile, _ in demands)
    uniform = True
    if partitioned:
        # `single` only where every MIG pool cuts every GPU of its nodes into one profile (the device plugin
        # then exposes them as nvidia.com/gpu); else `mixed`.
        parted = yaml.safe_load(maps[nvidia.MIG_PARTED_CONFIGMAP]["data"]["config.yaml"])["mig-configs"]
        uniform = all(all(e["mig-enabled"] for e in entries) and len({p for e in entries for p in e["mig-devices"]}) == 1
                      for name, entries in parted.items() if name != nvidia.ALL_DISABLED)
    check_device_plugin(target, maps[nvidia.DEVICE_PLUGIN_CONFIGMAP], "single" if uniform else "mixed")
    if partitioned:
        check_mig_parted(target, maps[nvidia.MIG_PARTED_CONFIGMAP])
