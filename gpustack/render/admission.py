"""What the auto-stop account may change on the objects it patches whole: one ValidatingAdmissionPolicy.

Stopping a Job or CronJob sets `spec.suspend` and stopping a Kubeflow Notebook sets an annotation,
so the Role must allow `patch` on those objects, which RBAC cannot narrow to a field: by RBAC alone
the job could rewrite a CronJob's `jobTemplate` (an image, a command, a ServiceAccount) and so run
anything as any account of the namespace. The policy closes that: for requests of a ServiceAccount
named `gpustack-autostop` (any namespace), an update of a Job or CronJob must leave everything but
`spec.suspend` as it was (metadata's labels, annotations, owners and finalizers; every other spec
field the API lets an update change), and an update of a Notebook everything but the annotation
`kubeflow-resource-stopped`. ValidatingAdmissionPolicy is GA in Kubernetes 1.30
(https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/); a patch is
admitted as an UPDATE. The policy fails closed: should it not compile on a cluster, the job's
patches are refused, never let through.
"""

from __future__ import annotations

from typing import Any

from gpustack.incluster.autostop import STOP_ANNOTATION
from gpustack.render.common import metadata

NAME = "gpustack-autostop"
ACCOUNT_SUFFIX = ":gpustack-autostop"  # system:serviceaccount:<namespace>:<name>
# Every field of the spec an update may change, but suspend: CronJobSpec entire, and the mutable
# fields of JobSpec (its pod template is immutable except scheduling directives of a suspended Job).
CRONJOB_FIELDS = ("schedule", "timeZone", "startingDeadlineSeconds", "concurrencyPolicy", "jobTemplate",
                  "successfulJobsHistoryLimit", "failedJobsHistoryLimit")
JOB_FIELDS = ("template", "parallelism", "completions", "activeDeadlineSeconds", "ttlSecondsAfterFinished",
              "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes")
METADATA_FIELDS = ("labels", "ownerReferences", "finalizers")


def same(field: str) -> str:
    """CEL: the field is as it was (both unset, or both set and equal)."""
    new, old = f"object.{field}", f"oldObject.{field}"
    return f"(has({new}) ? has({old}) && {new} == {old} : !has({old}))"


def annotations_but_stop() -> str:
    """CEL: every annotation but the stop annotation is as it was (none added, changed or removed)."""
    new, old, key = "object.metadata.annotations", "oldObject.metadata.annotations", STOP_ANNOTATION
    return (f"(!has({new}) || {new}.all(k, k == '{key}' || (has({old}) && k in {old} && {old}[k] == {new}[k])))"
            f" && (!has({old}) || {old}.all(k, k == '{key}' || (has({new}) && k in {new})))")


def expressions() -> dict[str, str]:
    """Per resource, the CEL condition an update by the auto-stop account must meet."""
    meta = " && ".join(same(f"metadata.{f}") for f in METADATA_FIELDS)
    return {
        "jobs": " && ".join([meta, same("metadata.annotations"), *(same(f"spec.{f}") for f in JOB_FIELDS)]),
        "cronjobs": " && ".join([meta, same("metadata.annotations"), *(same(f"spec.{f}") for f in CRONJOB_FIELDS)]),
        "notebooks": " && ".join([meta, annotations_but_stop(), same("spec")]),
    }


def objects(labels: dict[str, str], resources: set[str]) -> list[dict[str, Any]]:
    """The policy and its binding, for the patched resources (jobs, cronjobs, notebooks) in use."""
    if not resources:
        return []
    groups = {"jobs": "batch", "cronjobs": "batch", "notebooks": "kubeflow.org"}
    rules = [{"apiGroups": [group], "apiVersions": ["*"], "operations": ["UPDATE"],
              "resources": sorted(r for r in resources if groups[r] == group)}
             for group in sorted({groups[r] for r in resources})]
    validations = [{"expression": f"request.resource.resource != '{resource}' || ({expression})",
                    "message": f"the auto-stop account may change only "
                               f"{'the annotation ' + STOP_ANNOTATION if resource == 'notebooks' else 'spec.suspend'}"
                               f" of {resource}",
                    "reason": "Forbidden"}
                   for resource, expression in expressions().items() if resource in resources]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(NAME, labels),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": [{"name": "auto-stop-account",
                                 "expression": "request.userInfo.username.startsWith('system:serviceaccount:') && "
                                               f"request.userInfo.username.endsWith('{ACCOUNT_SUFFIX}')"}],
            "validations": validations,
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(NAME, labels),
        "spec": {"policyName": NAME, "validationActions": ["Deny"]},
    }
    return [policy, binding]
