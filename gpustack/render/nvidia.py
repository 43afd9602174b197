"""The NVIDIA configs a cluster needs to share GPUs the way the plan says, as data.

Two ConfigMaps in the GPU Operator's namespace, one named config per pool in each, picked on every
node by the labels the planner puts on the pool's nodes; which pool selects which config, and the MIG
strategy, are in the plan (`Pool.nvidia`):

- the device plugin's (`nvidia.com/device-plugin.config=<pool>`), NVIDIA k8s-device-plugin config
  file `version: v1`: `sharing.timeSlicing` or `sharing.mps` with the pool's clients per GPU
  (always >= 2: the plugin rejects fewer), `flags.migStrategy`; plus a plain `default` for nodes
  without the label (whole-GPU pools);
- mig-parted's (`nvidia.com/mig.config=<pool>`), `version: v1` `mig-configs`: the per-GPU layouts of
  one node of the pool, by GPU index; GPUs the plan leaves whole get `mig-enabled: false`.

Formats: NVIDIA/k8s-device-plugin README and api/config/v1 (replicas.go: "number of replicas must
be >= 2"); NVIDIA/gpu-operator assets/state-mig-manager/0400_configmap.yaml (the mig-parted form).
The GPU Operator (v26.3+) requires the custom mig-parted ConfigMap to hold a key `config.yaml`.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpustack.catalog import load_catalog
from gpustack.plan.model import Plan, Pool, TargetPlan
from gpustack.render.common import metadata, object_labels

DEVICE_PLUGIN_CONFIGMAP = "gpustack-device-plugin-config"
MIG_PARTED_CONFIGMAP = "gpustack-mig-parted-config"
DEFAULT_CONFIG = "default"  # devicePlugin.config.default: nodes without the label
ALL_DISABLED = "all-disabled"  # migManager.config.default: the operator labels MIG-capable nodes with it
MIG_PARTED_KEY = "config.yaml"
GPU_RESOURCE = "nvidia.com/gpu"


def mig_strategy(target: TargetPlan) -> str:
    """The one MIG strategy of the cluster, as the plan decided it (`gpustack.plan.offers`): the
    operator passes it to the device plugin as MIG_STRATEGY, which beats the config file, so every
    config says the same. Without MIG pools, the chart's default `single`."""
    strategies = {p.mig_strategy for p in target.pools if p.mig_strategy}
    if len(strategies) > 1:
        raise ValueError(f"target {target.name}: MIG pools disagree on the MIG strategy: {sorted(strategies)}")
    return strategies.pop() if strategies else "single"


def device_plugin_pools(target: TargetPlan) -> list[tuple[str, Pool]]:
    """(config name, pool) for every pool whose nodes select a device-plugin config."""
    found = [(p.nvidia.device_plugin_config, p) for p in target.pools if p.nvidia and p.nvidia.device_plugin_config]
    return sorted(found, key=lambda item: item[0])


def mig_parted_pools(target: TargetPlan) -> list[tuple[str, Pool]]:
    """(config name, pool) for every pool whose nodes select a mig-parted config."""
    found = [(p.nvidia.mig_parted_config, p) for p in target.pools if p.nvidia and p.nvidia.mig_parted_config]
    return sorted(found, key=lambda item: item[0])


def device_plugin_config(pool: Pool, strategy: str) -> dict[str, Any]:
    """The k8s-device-plugin config file (version v1) for the nodes of `pool`."""
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy}}
    sharing = pool.sharing
    if sharing.by_clients:
        if sharing.replicas is None or sharing.replicas < 2:
            raise ValueError(f"pool {pool.name}: {sharing.mode} needs at least 2 clients per GPU, "
                             f"the plan says {sharing.replicas}")
        resources = [{"name": GPU_RESOURCE, "replicas": sharing.replicas}]
        if sharing.mode == "time-slicing":
            # A container asking for two slices of one card gains nothing; fail it visibly.
            config["sharing"] = {"timeSlicing": {"failRequestsGreaterThanOne": True, "resources": resources}}
        else:
            config["sharing"] = {"mps": {"resources": resources}}
    return config


def mig_parted_entries(pool: Pool) -> list[dict[str, Any]]:
    """The mig-parted entries of one node of `pool`: each MigGroup on the next GPU indices, the
    rest of the node's GPUs without MIG. Every layout is re-checked against NVIDIA's placement rules."""
    gpu = load_catalog().gpu(pool.gpu)
    if gpu is None or gpu.mig is None:
        raise ValueError(f"pool {pool.name}: {pool.gpu} has no MIG geometry")
    entries: list[dict[str, Any]] = []
    index = 0
    for group in pool.sharing.mig:
        layout = dict(group.layout)
        if gpu.mig.place(layout) is None:
            raise ValueError(f"pool {pool.name}: {layout} is not a valid MIG layout on {pool.gpu}")
        devices = list(range(index, index + group.gpus))
        index += group.gpus
        entries.append({"devices": devices, "mig-enabled": True, "mig-devices": layout})
    if index > pool.gpus_per_node:
        raise ValueError(f"pool {pool.name}: layouts for {index} GPUs on a {pool.gpus_per_node}-GPU node")
    if index < pool.gpus_per_node:
        entries.append({"devices": list(range(index, pool.gpus_per_node)), "mig-enabled": False})
    if len(entries) == 1:
        entries[0]["devices"] = "all"
    return entries


def mig_parted_config(target: TargetPlan) -> dict[str, Any]:
    configs: dict[str, Any] = {ALL_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for name, pool in mig_parted_pools(target):
        configs[name] = mig_parted_entries(pool)
    return {"version": "v1", "mig-configs": configs}


def dump(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def configmaps(plan: Plan, target: TargetPlan, namespace: str) -> list[dict[str, Any]]:
    """The device-plugin ConfigMap, and the mig-parted one when a pool partitions GPUs in-cluster."""
    strategy = mig_strategy(target)
    labels = object_labels(plan, target)
    data = {DEFAULT_CONFIG: dump({"version": "v1", "flags": {"migStrategy": strategy}})}
    for name, pool in device_plugin_pools(target):
        if name == DEFAULT_CONFIG:
            raise ValueError(f"pool {pool.name}: the config name {DEFAULT_CONFIG!r} is reserved")
        data[name] = dump(device_plugin_config(pool, strategy))
    objects = [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": metadata(DEVICE_PLUGIN_CONFIGMAP, labels, namespace), "data": data}]
    if mig_parted_pools(target):
        objects.append({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": metadata(MIG_PARTED_CONFIGMAP, labels, namespace),
                        "data": {MIG_PARTED_KEY: dump(mig_parted_config(target))}})
    return objects
