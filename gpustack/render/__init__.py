"""The in-cluster layer of a target as plain data: what both `gpustack render` and the Pulumi
program declare, built from the plan only (no Pulumi import here).

- GPU Operator (operator.py): a Helm release with pinned chart and values, where the cloud does not
  share GPUs natively; its namespace and the NVIDIA configs it reads (nvidia.py);
- HAMi (hami.py): a Helm release with pinned chart and values, where pools enforce fractions;
- dev auto-stop (autostop.py): CronJobs, their RBAC, state ConfigMap and NetworkPolicy, on every cloud;
- or, on targets with `settings.autostop: keda`, KEDA ScaledObjects (keda.py) for the Deployments and
  StatefulSets with a window or an idle action;
- the built-in idle action (idle.py): a CronJob per workload that scales to zero when idle, where KEDA
  does not, with its RBAC and NetworkPolicy;
- idle-GPU alerts (alerts.py): a PrometheusRule, on every cloud;
- team quotas (kueue.py), on targets with `settings.queue: kueue`: Kueue's ResourceFlavors, ClusterQueues,
  LocalQueues and, for queued provisioning, its provisioning AdmissionCheck;
- spot first, on-demand fallback (autoscaling.py): the Cluster Autoscaler's priority-expander
  ConfigMap, or GKE ComputeClasses, for targets with fallback pools;
- the pools themselves where the provisioner makes them from Kubernetes objects (Karpenter's NodePools
  and node classes, `Provisioner.objects`): in `node_objects`, which the Pulumi program declares as
  each pool's children rather than with the in-cluster layer.

`in_cluster(plan, target)` returns every object in a stable order (apply order: namespaces first),
so two runs give the same objects, and the same bytes once dumped.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpustack.clouds import CLOUDS
from gpustack.plan.model import Plan, TargetPlan
from gpustack.render import (
    alerts, autoscaling, autostop, claims, dra_driver, hami, idle, jupyterhub, keda, kueue, nvidia, operator,
)
from gpustack.render.common import metadata, object_labels
from gpustack.render.operator import HelmRelease

# The Kubernetes API the objects are written for and validated against (CronJob spec.timeZone is
# GA since 1.27).
KUBERNETES_VERSION = "1.31.0"
GPUSTACK_NAMESPACE = "gpustack-system"  # holds the PrometheusRule on every cloud
# Apply order of the kinds gpustack emits.
# The admission policy (and its binding) before the Role it limits: applied in order, `patch` on whole
# Jobs, CronJobs and Notebooks is never granted while nothing limits it.
KIND_ORDER = {"Namespace": 10, "ConfigMap": 20, "ServiceAccount": 30,
              "ValidatingAdmissionPolicy": 31, "ValidatingAdmissionPolicyBinding": 32, "Role": 33,
              "RoleBinding": 34, "NetworkPolicy": 35,
              # DRA targets: the claims the workloads' pods name (in the workloads' namespaces).
              "ResourceClaimTemplate": 36, "ResourceClaim": 37, "CronJob": 40, "ScaledObject": 45,
              "PrometheusRule": 50,
              # Kueue: the flavors and admission checks a ClusterQueue names, then the LocalQueues naming it.
              "ResourceFlavor": 70, "ProvisioningRequestConfig": 71, "AdmissionCheck": 72, "ClusterQueue": 73,
              "LocalQueue": 74}
_provisioner_kinds: dict[int, dict[str, int]] = {}  # by registry generation


def kind_order(kind: str) -> int:
    """Where objects of `kind` come in apply order (and in the rendered file names): the in-cluster
    layer's kinds above, then the kinds each registered provisioner writes (`Provisioner.object_kinds`)."""
    if kind in KIND_ORDER:
        return KIND_ORDER[kind]
    known = _provisioner_kinds.get(CLOUDS.generation)
    if known is None:
        known = {k: order for cloud in CLOUDS for name in cloud.provisioners
                 for k, order in cloud.provisioner(name).object_kinds().items()}
        _provisioner_kinds.clear()
        _provisioner_kinds[CLOUDS.generation] = known
    return known[kind]


@dataclasses.dataclass(frozen=True)
class InCluster:
    target: str
    objects: tuple[dict[str, Any], ...]
    operator: HelmRelease | None  # None: the cloud runs its own device plugin (no operator)
    hami: HelmRelease | None = None  # HAMi, for the pools with enforced fractions
    node_objects: tuple[dict[str, Any], ...] = ()  # the objects that provision the pools (Karpenter)
    hubs: tuple[jupyterhub.HubValues, ...] = ()  # JupyterHub idle-culler values (render only: the team owns the hub)
    dra_driver: HelmRelease | None = None  # NVIDIA's DRA driver, on targets with gpu_allocation: dra


def object_key(obj: dict[str, Any]) -> tuple[int, str, str]:
    meta = obj["metadata"]
    return kind_order(obj["kind"]), meta.get("namespace", ""), meta["name"]


def namespace(plan: Plan, target: TargetPlan, name: str, privileged: bool = False) -> dict[str, Any]:
    labels = object_labels(plan, target)
    if privileged:  # the operator's pods run privileged (Pod Security Admission)
        labels = dict(sorted({**labels, "pod-security.kubernetes.io/enforce": "privileged"}.items()))
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(name, labels)}


# Parts a team may already run, which `leave_out` drops: the GPU Operator's release and namespace (the
# NVIDIA sharing ConfigMaps stay, in the namespace the operator runs in), the auto-stop CronJobs and
# their RBAC, the idle-GPU alerts' PrometheusRule.
GPU_OPERATOR, AUTOSTOP, ALERTS = "gpu-operator", "autostop", "alerts"


def in_cluster(plan: Plan, target: TargetPlan, leave_out: frozenset[str] = frozenset()) -> InCluster:
    cloud = CLOUDS.get(target.cloud)
    release = operator.release(target, cloud)
    objects: list[dict[str, Any]] = []
    if release is not None:
        if GPU_OPERATOR not in leave_out:
            objects.append(namespace(plan, target, release.namespace, privileged=True))
        objects.extend(m for m in nvidia.configmaps(plan, target, release.namespace)  # DRA: no device plugin
                       if target.gpu_allocation != "dra" or m["metadata"]["name"] != nvidia.DEVICE_PLUGIN_CONFIGMAP)
    driver = dra_driver.release(target, cloud)
    if driver is not None:
        objects.append(namespace(plan, target, driver.namespace, privileged=True))
    objects.extend(claims.objects(plan, target))
    if AUTOSTOP not in leave_out:
        objects.extend(autostop.objects(plan, target))
    objects.extend(keda.objects(plan, target))
    objects.extend(idle.objects(plan, target, objects))
    objects.extend(autoscaling.objects(plan, target))
    objects.extend(kueue.objects(plan, target))
    rule = alerts.prometheus_rule(plan, target, GPUSTACK_NAMESPACE) if ALERTS not in leave_out else None
    if rule is not None:
        objects.append(namespace(plan, target, GPUSTACK_NAMESPACE))
        objects.append(rule)
    provisioner = cloud.provisioner(target.provisioner)
    node_objects = [obj for pool in target.pools
                    for obj in provisioner.objects(pool, object_labels(plan, target, pool))]
    node_objects.extend(provisioner.class_objects(target.pools, object_labels(plan, target)))
    return InCluster(target.name, tuple(sorted(objects, key=object_key)),
                     None if GPU_OPERATOR in leave_out else release, hami.release(target),
                     tuple(sorted(node_objects, key=object_key)), jupyterhub.hub_values(target), driver)


__all__ = ["ALERTS", "AUTOSTOP", "GPUSTACK_NAMESPACE", "GPU_OPERATOR", "KUBERNETES_VERSION", "InCluster", "in_cluster",
           "kind_order", "object_key"]
