"""`targets[].kubernetes_version: "1.31"`: the Kubernetes minor version a target's cluster runs.

gpustack never reads a cluster, so the spec says which version it runs, and the features that need a
newer one are refused where they are chosen (capability gaps as data, at validation time):

- the auto-stop CronJobs keep a window's time zone with `spec.timeZone`, GA in Kubernetes 1.27;
- the auto-stop's `patch` on Jobs, CronJobs and Kubeflow Notebooks is limited to the stop change by a
  ValidatingAdmissionPolicy (gpustack/render/admission.py), GA in Kubernetes 1.30 (below);
- `settings.gpu_allocation: dra` and what a provisioner's DRA support needs (gpustack/clouds/dra.py,
  checked in gpustack/plan/dra.py).

Absent means "not checked": nothing is assumed, and each affected feature says once, in a plan note, that
the minimum was not checked. The value is a quoted MAJOR.MINOR string: YAML reads an unquoted 1.30 as the
number 1.3, so numbers are refused rather than guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gpustack.errors import show
from gpustack.spec.autostop import DETECTED, OBJECT_KINDS
from gpustack.spec.model import IDLE_KINDS, Target, Workload
from gpustack.spec.reader import Reader
from gpustack.spec.yamlsource import Path

KEY = "kubernetes_version"
# Kubernetes has had major version 1 since its 1.0 release; minors are plain decimals without leading zeros.
_VERSION = re.compile(r"1\.(0|[1-9][0-9]{0,2})")
_RULE = 'a Kubernetes minor version as a quoted string MAJOR.MINOR, e.g. "1.31"'
# What people write instead: a leading v (kubectl's gitVersion), a patch release, a managed cloud's build
# suffix (1.33.3-<vendor>.<build>).
_NEAR = re.compile(r"[vV]?(1\.(?:0|[1-9][0-9]{0,2}))(?:\.[0-9]+)?(?:[-+][0-9A-Za-z.+-]*)?")

# ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) is GA and served by default from 1.30
# (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/).
ADMISSION_POLICY_MINIMUM = "1.30"
ADMISSION_POLICY_SOURCE = "https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/"
# The auto-stop kinds it stops by patching the whole object (the others it scales through `scale`).
PATCHED_KINDS = ("job", "cronjob", "notebook")
# The auto-stop CronJobs run in the window's time zone (spec.timeZone), GA in Kubernetes 1.27.
CRONJOB_TIMEZONE_MINIMUM = "1.27"
CRONJOB_TIMEZONE_SOURCE = "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"


def read_kubernetes_version(reader: Reader, path: Path, value: dict[str, Any]) -> str | Any | None:
    """The target's checked `kubernetes_version` (None when absent, BAD after a located problem)."""
    if KEY not in value:
        return None
    raw = value[KEY]
    where = path + (KEY,)
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return reader.string(where, raw)
    if not isinstance(raw, str):
        return reader.problem(where, f"{show(raw)} is a number to YAML (an unquoted 1.30 reads as 1.3): write "
                                     f"{_RULE}{_quoted_hint(raw)}")
    if _VERSION.fullmatch(raw):
        return raw
    near = _NEAR.fullmatch(raw)
    hint = f" (did you mean {near.group(1)!r}?)" if near else ""
    return reader.problem(where, f"{show(raw)} is not {_RULE}{hint}")


def _quoted_hint(number: float) -> str:
    """' (did you mean ...?)' with the quoted versions a YAML number could have been written as."""
    text = repr(number)
    if not _VERSION.fullmatch(text):
        return ""
    # A trailing zero is lost to YAML: 1.30 reads as 1.3, so both are possible.
    choices = [text, f"{text}0"] if len(text.partition(".")[2]) == 1 and text != "1.0" else [text]
    return f" (did you mean {' or '.join(repr(c) for c in choices)}?)"


def minor(version: str) -> tuple[int, int]:
    """A checked version as a comparable (major, minor)."""
    major, _, rest = version.partition(".")
    return int(major), int(rest)


def older(version: str | None, minimum: str) -> bool:
    """Whether a given version is below `minimum` (False when not given: not checked)."""
    return version is not None and minor(version) < minor(minimum)


def stopped_kinds(workload: Workload, target: Target) -> tuple[str, ...]:
    """The kinds the built-in auto-stop CronJobs stop for `workload` on `target` (gpustack/render/autostop.py):
    its `autostop` kind, or the detected kinds, when its window closes; none where KEDA scales it instead
    (gpustack/plan/idle.py: a Deployment or StatefulSet workload that leaves detection to gpustack), and none
    for `jupyterhub` (the hub's culler stops its servers)."""
    schedule = workload.schedule
    if schedule is None or schedule.active_hours_per_week >= 7 * 24:
        return ()  # no window, or one open all week: no auto-stop jobs
    if workload.autostop is not None:
        kinds: tuple[str, ...] = (workload.autostop.kind,)
    elif target.setting("autostop", "cronjob") == "keda" and workload.kind in IDLE_KINDS:
        return ()
    else:
        kinds = DETECTED[workload.kind]
    return tuple(k for k in kinds if k in OBJECT_KINDS)


def patched_kinds(workload: Workload, target: Target) -> tuple[str, ...]:
    """The kinds of `stopped_kinds` that are patched whole, so need the admission policy."""
    return tuple(k for k in stopped_kinds(workload, target) if k in PATCHED_KINDS)


def check_kubernetes_versions(reader: Reader, targets: Sequence[Target], workloads: Sequence[Workload]) -> None:
    """Refuse, where each is chosen, what the target's Kubernetes version cannot run or keep safe."""
    by_name = {w.name: w for w in workloads}
    for target in targets:
        version = target.kubernetes_version
        for name in target.workloads:
            workload = by_name[name]
            if older(version, CRONJOB_TIMEZONE_MINIMUM) and stopped_kinds(workload, target):
                reader.problem(("workloads", workload.index, "schedule"),
                               f"target {target.name!r} runs Kubernetes {version}, and the auto-stop CronJobs of "
                               f"this window keep its time zone with spec.timeZone, GA from Kubernetes "
                               f"{CRONJOB_TIMEZONE_MINIMUM} ({CRONJOB_TIMEZONE_SOURCE}); upgrade the cluster and set "
                               "kubernetes_version, or remove the schedule")
            elif older(version, ADMISSION_POLICY_MINIMUM) and (kinds := patched_kinds(workload, target)):
                _refuse_patched(reader, target, workload, kinds)


def _refuse_patched(reader: Reader, target: Target, workload: Workload, kinds: tuple[str, ...]) -> None:
    index = workload.index
    chosen = workload.autostop is not None
    where: Path = ("workloads", index, "autostop", "kind") if chosen else ("workloads", index, "schedule")
    what = (f"autostop kind {kinds[0]!r}" if chosen
            else f"the auto-stop's detected kinds {', '.join(kinds)}")
    instead = ("choose deployment or statefulset (scaled, not patched)" if chosen
               else "add autostop: {kind: deployment} (or statefulset)")
    reader.problem(where, f"{what} on target {target.name!r} (Kubernetes {target.kubernetes_version}): the job stops "
                          "these by patching the whole object, which only a ValidatingAdmissionPolicy (GA in "
                          f"{ADMISSION_POLICY_MINIMUM}, {ADMISSION_POLICY_SOURCE}) limits to the stop; "
                          "without it the RBAC lets the job rewrite them (any image, any ServiceAccount). Upgrade to "
                          f"{ADMISSION_POLICY_MINIMUM} or later and set kubernetes_version, or {instead}")


def not_checked_notes(workloads: Sequence[Workload], target: Target) -> tuple[str, ...]:
    """What a target without `kubernetes_version` was not checked for (a plan note, once per target)."""
    if target.kubernetes_version is not None:
        return ()
    mine = [w for w in workloads if w.name in target.workloads]
    if not any(stopped_kinds(w, target) for w in mine):
        return ()
    needs = (f"the auto-stop CronJobs keep their window's time zone with spec.timeZone, so the cluster must run "
             f"Kubernetes {CRONJOB_TIMEZONE_MINIMUM} or later ({CRONJOB_TIMEZONE_SOURCE})")
    if any(patched_kinds(w, target) for w in mine):
        needs += (f"; they patch Jobs, CronJobs or Notebooks whole, which is safe only with their "
                  f"ValidatingAdmissionPolicy, so {ADMISSION_POLICY_MINIMUM} or later ({ADMISSION_POLICY_SOURCE})")
    return (f"{needs[0].upper()}{needs[1:]}; not checked: the target gives no kubernetes_version",)
