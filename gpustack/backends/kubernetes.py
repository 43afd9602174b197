"""The in-cluster layer as Pulumi Kubernetes resources: exactly the objects `gpustack render` writes.

Every resource is declared from the dicts of `gpustack.render.in_cluster` (no second definition):
Namespaces, ConfigMaps, ServiceAccounts, Roles, RoleBindings, NetworkPolicies and CronJobs as their typed
resources, the PrometheusRule as an `apiextensions.CustomResource`, and the GPU Operator as a
`helm.v3.Release` (a real Helm release, hooks and CRD upgrades included) with the rendered values.

The cluster is reached through a Kubernetes provider built from the secret Pulumi config
`gpustack:kubeconfig` (the kubeconfig's content):

    pulumi config set --secret gpustack:kubeconfig "$(cat ~/.kube/config)"
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpustack.plan.model import Plan, TargetPlan
from gpustack.render import InCluster, autoscaling, in_cluster
from gpustack.render.operator import HelmRelease
from gpustack.render.priority_merge import PriorityMergeError, merge_priorities

PROVIDER_NAME = "gpustack-kubernetes"
# kind -> resource class; fields of the object other than apiVersion/kind become its arguments.
_CLASSES: dict[str, Any] = {
    "Namespace": k8s.core.v1.Namespace,
    "ConfigMap": k8s.core.v1.ConfigMap,
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "Role": k8s.rbac.v1.Role,
    "RoleBinding": k8s.rbac.v1.RoleBinding,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
    "CronJob": k8s.batch.v1.CronJob,
    "ValidatingAdmissionPolicy": k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    "ValidatingAdmissionPolicyBinding": k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
}
_ARGUMENTS = {"metadata": "metadata", "data": "data", "rules": "rules", "roleRef": "role_ref",
              "subjects": "subjects", "spec": "spec"}


def resource_name(obj: dict[str, Any]) -> str:
    """The Pulumi name of an object: `namespace/name`, or `name` when cluster-scoped (types differ
    per kind, so a ServiceAccount and a Role may share a name)."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]


def provider(kubeconfig: pulumi.Input[str]) -> k8s.Provider:
    """The Kubernetes provider every in-cluster object is declared with.

    An object the cluster already has is refused (AlreadyExists), never adopted and overwritten, and
    a field another manager owns is a conflict, never forced: above all the Cluster Autoscaler's
    priority-expander ConfigMap, one per cluster, whose existing entries gpustack must not replace
    (pulumi-kubernetes 4.29 creates client-side and added `upsertExistingObjects`, default false;
    https://github.com/pulumi/pulumi-kubernetes/releases/tag/v4.29.0). Both are set here so a
    provider default changing back cannot change that."""
    return k8s.Provider(PROVIDER_NAME, kubeconfig=kubeconfig, upsert_existing_objects=False,
                        enable_patch_force=False)


def declare(target: TargetPlan, plan: Plan, provider: pulumi.ProviderResource,
            node_group_ids: Mapping[str, pulumi.Input[str]] | None = None,
            parent: pulumi.Resource | None = None, merge_priorities: bool = False,
            leave_out: frozenset[str] = frozenset()) -> dict[str, pulumi.Resource]:
    """Declare the target's in-cluster objects (under `parent`, when given); returns them by
    `<kind>:<resource name>`.

    `node_group_ids` (plan pool name -> the cloud's id of the created pool) completes what `gpustack
    render` cannot write: the priority-expander ConfigMap where node groups are named by those ids (OKE).
    `merge_priorities`: the cluster has a priority-expander ConfigMap of its own, which is read and
    patched with gpustack's entries merged in (`priority_merge`) instead of one being created.
    `leave_out`: parts the cluster already runs (`gpustack.render.GPU_OPERATOR`, `AUTOSTOP`, `ALERTS`).
    """
    rendered = in_cluster(plan, target, leave_out)
    if merge_priorities:
        return _declare_merging(rendered, target, plan, provider, node_group_ids, parent)
    declared = _declare_rendered(rendered, provider, parent)
    if node_group_ids and autoscaling.needs_node_group_ids(target):
        configmap = _priority_configmap(target, plan, node_group_ids, provider, parent)
        declared[f"ConfigMap:{autoscaling.priority_configmap_key(target)}"] = configmap
    return declared


def _declare_rendered(rendered: InCluster, provider: pulumi.ProviderResource,
                      parent: pulumi.Resource | None) -> dict[str, pulumi.Resource]:
    """The rendered objects and Helm releases, namespaces first."""
    declared: dict[str, pulumi.Resource] = {}
    namespaces: dict[str, pulumi.Resource] = {}
    in_namespace: dict[str, list[pulumi.Resource]] = {}
    admission: list[pulumi.Resource] = []  # the policy and its binding sort before the RBAC they guard
    for obj in rendered.objects:  # namespaces come first in this order
        namespace = obj["metadata"].get("namespace")
        depends = [namespaces[namespace]] if namespace in namespaces else []
        if obj["kind"] in ("Role", "RoleBinding"):
            # `patch` on whole Jobs, CronJobs and Notebooks only once the policy limiting it is in place.
            depends = [*depends, *admission]
        resource = _resource(obj, pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends))
        declared[f"{obj['kind']}:{resource_name(obj)}"] = resource
        if obj["kind"] in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            admission.append(resource)
        if obj["kind"] == "Namespace":
            namespaces[obj["metadata"]["name"]] = resource
            in_namespace.setdefault(obj["metadata"]["name"], []).append(resource)
        elif namespace is not None:
            in_namespace.setdefault(namespace, []).append(resource)
    if rendered.operator is not None:
        # The values name the ConfigMaps of the operator's namespace: install once they exist.
        _release(declared, rendered.operator, provider, in_namespace.get(rendered.operator.namespace, []), parent)
    if rendered.hami is not None:
        # After the operator, whose per-node labels keep its own device plugin off HAMi's nodes.
        operator_release = [declared[k] for k in declared if k.startswith("Release:")]
        _release(declared, rendered.hami, provider, operator_release, parent)
    if rendered.dra_driver is not None:
        # After the operator, which installs the driver and turns its device plugin off on these nodes.
        operator_release = [declared[k] for k in declared if k.startswith("Release:")]
        _release(declared, rendered.dra_driver, provider,
                 operator_release + in_namespace.get(rendered.dra_driver.namespace, []), parent)
    return declared


def _declare_merging(rendered: InCluster, target: TargetPlan, plan: Plan, provider: pulumi.ProviderResource,
                     node_group_ids: Mapping[str, pulumi.Input[str]] | None,
                     parent: pulumi.Resource | None) -> dict[str, pulumi.Resource]:
    """`declare` with the priority ConfigMap merged into the cluster's own (read at every preview/update)."""
    ours = [o for o in rendered.objects if _is_priority_configmap(o)]
    others = dataclasses.replace(rendered, objects=tuple(o for o in rendered.objects if not _is_priority_configmap(o)))
    declared = _declare_rendered(others, provider, parent)
    wanted: pulumi.Output[dict[str, Any] | None]
    if ours:
        wanted = pulumi.Output.from_input(ours[0])
    elif node_group_ids and autoscaling.needs_node_group_ids(target):
        wanted = _priority_dict(target, plan, node_group_ids)
    else:
        raise pulumi.RunError(f"gpustack:priorityExpander is merge, but target {target.name} writes no "
                              "priority-expander ConfigMap (no spot pool with an on-demand fallback, or its "
                              "autoscaler ranks pools another way): unset it")
    key = autoscaling.priority_configmap_key(target)
    opts = pulumi.ResourceOptions(parent=parent, provider=provider)
    live = k8s.core.v1.ConfigMap.get(f"{key}-live", key, opts=opts)
    merged = pulumi.Output.all(live.metadata, live.data, wanted).apply(lambda found: _merged(found, key))
    # The owner's fields stay theirs; `priorities` and gpustack's key are taken over (patchForce),
    # and kept when the stack is destroyed (removing them would leave the autoscaler with no priorities).
    metadata: pulumi.Output[Any] = wanted.apply(
        lambda w: {**w["metadata"], "annotations": {"pulumi.com/patchForce": "true"}} if w is not None else {})
    declared[f"ConfigMapPatch:{key}"] = k8s.core.v1.ConfigMapPatch(
        key, metadata=metadata, data=merged.apply(lambda m: m["data"]),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)))
    return declared


def _is_priority_configmap(obj: dict[str, Any]) -> bool:
    return bool(obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == autoscaling.PRIORITY_CONFIGMAP)


def _release(declared: dict[str, pulumi.Resource], release: HelmRelease, provider: pulumi.ProviderResource,
             needed: list[pulumi.Resource], parent: pulumi.Resource | None = None) -> None:
    declared[f"Release:{release.namespace}/{release.name}"] = k8s.helm.v3.Release(
        release.name,
        name=release.name,
        chart=release.chart,
        version=release.version,
        namespace=release.namespace,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=release.repository),
        values=release.values,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=needed),
    )


def _priority_dict(target: TargetPlan, plan: Plan,
                   node_group_ids: Mapping[str, pulumi.Input[str]]) -> pulumi.Output[dict[str, Any] | None]:
    """The priority-expander ConfigMap built from the created pools' ids (the same dict as rendered)."""
    names = sorted(node_group_ids)
    return pulumi.Output.all(*(node_group_ids[n] for n in names)).apply(
        lambda ids: autoscaling.priority_configmap(plan, target, dict(zip(names, ids))))


def _priority_configmap(target: TargetPlan, plan: Plan, node_group_ids: Mapping[str, pulumi.Input[str]],
                        provider: pulumi.ProviderResource, parent: pulumi.Resource | None = None) -> pulumi.Resource:
    built = _priority_dict(target, plan, node_group_ids)
    return k8s.core.v1.ConfigMap(autoscaling.priority_configmap_key(target),
                                 metadata=built["metadata"], data=built["data"],
                                 opts=pulumi.ResourceOptions(parent=parent, provider=provider))


def _resource(obj: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    name = resource_name(obj)
    fields = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    unknown = set(fields) - set(_ARGUMENTS)
    if unknown:  # never drop a field silently: the declared object must be the rendered one
        raise ValueError(f"{obj['kind']} {name}: no argument for {sorted(unknown)}")
    if obj["kind"] in _CLASSES:
        declared: pulumi.Resource = _CLASSES[obj["kind"]](
            name, opts=opts, **{_ARGUMENTS[k]: v for k, v in fields.items()}
        )
        return declared
    # Custom resources (PrometheusRule): metadata and spec only.
    if set(fields) - {"metadata", "spec"}:
        raise ValueError(f"{obj['kind']} {name}: a custom resource takes metadata and spec only")
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"],
                                            metadata=fields["metadata"], spec=fields.get("spec"), opts=opts)


def _merged(found: list[Any], key: str) -> dict[str, Any]:
    """The live ConfigMap merged with gpustack's; a table that cannot be merged is a RunError (a message)."""
    try:
        return merge_priorities({"kind": "ConfigMap", "metadata": found[0], "data": found[1] or {}}, found[2],
                                f"the cluster's {key}")
    except PriorityMergeError as exc:
        raise pulumi.RunError(f"gpustack: {exc}") from None
