"""Which object and which container of it a workload's patch targets (`gpustack render --workloads`).

A strategic-merge patch matches containers by name: a patch whose container name is not in the object
adds a second container, without an image, asking for the GPUs again. So the patch names exactly one
container, chosen by `PodRequest.gpu_container`: the spec's `workloads[].container`, else the object's
only container when the team's manifests are known (`render --workloads --manifests PATH`), else the
one named after the workload.

The object is, in order: the one found in the team's manifests (its kind and name); the kind and name
the spec's `autostop` says (a fine-tuning run as a CronJob is patched as a CronJob, the pod template
under spec.jobTemplate.spec.template); the kind the workload's kind usually runs as.
"""

from __future__ import annotations

import dataclasses

from gpustack.plan.model import PodRequest

# The object each kind of workload usually runs as; the patch targets it by this kind.
OBJECT_KINDS = {"inference": "Deployment", "notebook": "StatefulSet", "training": "Job", "fine-tuning": "Job"}
# `autostop.kind` values that are a built-in workload object, by their Kubernetes kind. A Kubeflow
# Notebook (kind notebook) is left to the default: kustomize merges a custom resource it has no schema
# for as a JSON merge patch, which would replace the containers list as a whole
# (https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/patchesstrategicmerge/).
AUTOSTOP_OBJECTS = {"deployment": "Deployment", "statefulset": "StatefulSet", "job": "Job", "cronjob": "CronJob"}


@dataclasses.dataclass(frozen=True)
class FoundObject:
    """A workload's object as the team's manifests have it."""

    kind: str
    name: str
    containers: tuple[str, ...]  # names of its pod template's containers, in order


@dataclasses.dataclass(frozen=True)
class PatchTarget:
    kind: str
    name: str
    container: str


def patch_target(request: PodRequest, found: FoundObject | None = None) -> PatchTarget:
    """The object and container the workload's patch merges into."""
    if found is not None:
        return PatchTarget(found.kind, found.name, request.gpu_container(found.containers))
    kind, name = OBJECT_KINDS.get(request.kind, "Deployment"), request.workload
    chosen = request.autostop
    if chosen is not None and not chosen.detected and len(chosen.kinds) == 1 and chosen.kinds[0] in AUTOSTOP_OBJECTS:
        kind, name = AUTOSTOP_OBJECTS[chosen.kinds[0]], chosen.name or name
    return PatchTarget(kind, name, request.gpu_container())
