"""`workloads[].autostop`: which Kubernetes objects the dev auto-stop stops for a scheduled workload.

    autostop:
      kind: cronjob          # deployment | statefulset | job | cronjob | notebook | jupyterhub
      name: nightly-tune     # optional: that one object; default: every object of the kind labelled
                             #   gpustack.dev/workload: <workload name>, in the workload's namespace

Without `autostop`, the objects are detected: every object labelled `gpustack.dev/workload` of the
kinds a workload of its kind runs as (DETECTED). `jupyterhub` is not an object the job touches: the
hub's own idle culler (zero-to-jupyterhub chart values, rendered by `gpustack render`) stops the
servers, so it takes no `name`.
"""

from __future__ import annotations

import re
from typing import Any

from gpustack.spec.model import AutoStop, Idle
from gpustack.spec.reader import BAD, Reader
from gpustack.spec.yamlsource import Path

OBJECT_KINDS = ("deployment", "statefulset", "job", "cronjob", "notebook")
KINDS = (*OBJECT_KINDS, "jupyterhub")
# What a workload of each schedulable kind may run as, and what is detected when the spec says nothing.
ALLOWED = {"notebook": ("deployment", "statefulset", "notebook", "jupyterhub"),
           "fine-tuning": ("deployment", "statefulset", "job", "cronjob")}
DETECTED = {"notebook": ("deployment", "statefulset", "notebook"),
            "fine-tuning": ("deployment", "statefulset", "job", "cronjob")}
# Object names (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/): a DNS
# subdomain of at most 253 characters; a StatefulSet's (and so a Kubeflow Notebook's, which the
# notebook controller runs as a StatefulSet of that name) is a DNS label, its pods' hostnames; a
# CronJob's at most 52, since the controller appends 11 characters to name its Jobs
# (https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#writing-a-cronjob-spec).
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_SUBDOMAIN_RULE = "a DNS subdomain (lowercase letters, digits, '-' and '.')"
_LABEL_RULE = "a DNS label (lowercase letters, digits and '-')"
NAME_RULES = {"deployment": (_SUBDOMAIN, 253, _SUBDOMAIN_RULE), "job": (_SUBDOMAIN, 253, _SUBDOMAIN_RULE),
              "statefulset": (re.compile(_LABEL), 63, _LABEL_RULE), "notebook": (re.compile(_LABEL), 63, _LABEL_RULE),
              "cronjob": (_SUBDOMAIN, 52, _SUBDOMAIN_RULE)}
EXAMPLE = "{kind: cronjob, name: nightly-tune}"


def read_autostop(reader: Reader, path: Path, value: Any, kind: Any, scheduled: bool,
                  idle: Idle | None = None) -> AutoStop | Any:
    """The checked `autostop` of a workload of `kind` (BAD after recording a located problem)."""
    value = reader.mapping(path, value, required=("kind",), optional=("name",), what=EXAMPLE)
    if value is BAD or "kind" not in value:
        return BAD
    chosen = reader.choice(path + ("kind",), value["kind"], KINDS)
    if chosen is BAD:
        return BAD
    if kind and kind not in ALLOWED:
        return reader.problem(path, f"autostop applies to scheduled workloads (notebook, fine-tuning), not {kind}")
    if kind and chosen not in ALLOWED[kind]:
        return reader.problem(path + ("kind",), f"{chosen!r} is not how a {kind} workload runs; allowed for {kind}: "
                                                f"{', '.join(ALLOWED[kind])}")
    if not scheduled:
        return reader.problem(path, "autostop says what to stop outside the schedule: add a schedule, or remove it")
    if idle is not None and idle.action == "scale-to-zero" and chosen != "jupyterhub":
        return reader.problem(path + ("kind",), f"idle scale-to-zero scales the workload's own Deployment or "
                                                f"StatefulSet, not a chosen {chosen}: remove autostop, or use idle "
                                                "action: alert (jupyterhub: the hub's culler takes idle.for)")
    name = None
    if "name" in value:
        if chosen not in NAME_RULES:
            return reader.problem(path + ("name",), "jupyterhub takes no name: the hub's idle culler stops its "
                                                    "servers (gpustack render writes its values)")
        pattern, longest, rule = NAME_RULES[chosen]
        name = reader.string(path + ("name",), value["name"], pattern=pattern, max_len=longest,
                             rule=f"a {chosen} name is {rule}, at most {longest} characters")
        if name is BAD:
            return BAD
    return AutoStop(chosen, name)
