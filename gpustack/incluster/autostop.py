"""gpustack auto-stop: stop a scheduled pool's workloads outside their window, and start them again.

Run by the auto-stop CronJobs as `python3 autostop.py stop|start NAMESPACE MAX_REPLICAS SELECTION...`
with the pod's service-account token; a SELECTION is `<plural>=<label selector>` (every object of
that kind labelled with one of the pool's workloads) or `<plural>/<name>` (one object). Standard
library only: the image is the Docker Official Image for Python.

How each kind is stopped (and what the Role allows for it):
- deployments, statefulsets: replicas to 0 through the `/scale` subresource (never a pod template);
- jobs: `spec.suspend: true`; Kubernetes deletes the Job's running pods and creates them again on
  resume (https://kubernetes.io/docs/concepts/workloads/controllers/job/#suspending-a-job);
- cronjobs: `spec.suspend: true`, which stops new runs only: a run already started keeps going
  (https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#schedule-suspension), so
  the CronJob's active Jobs (`status.active`) are suspended too;
- notebooks (Kubeflow, kubeflow.org/v1): the annotation `kubeflow-resource-stopped`, whose presence
  makes the notebook controller scale the Notebook's StatefulSet to 0; its absence, back to 1
  (kubeflow/kubeflow v1.9.2 components/notebook-controller/controllers/notebook_controller.go,
  generateStatefulSet, and culling_controller.go, STOP_ANNOTATION, an RFC 3339 time as its value).

What was stopped is saved, before stopping, in the namespace's ConfigMap `gpustack-autostop-state`
(key `<plural>.<name>`): a replica count, `suspended`, or the stop annotation's value. Start undoes
only what this program did: an object someone started meanwhile keeps its state and loses its entry.
Everything read is untrusted: a saved value that is not exactly what stop writes (a count is a whole
number from 1, at most MAX_REPLICAS, the plan's largest replica count for the pool's workloads) is
reported and dropped; one bad object never stops the others.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

STATE = "gpustack-autostop-state"
ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
STOP_ANNOTATION = "kubeflow-resource-stopped"
SUSPENDED = "suspended"
# plural -> API group/version path
APIS = {"deployments": "apps/v1", "statefulsets": "apps/v1", "jobs": "batch/v1", "cronjobs": "batch/v1",
        "notebooks": "kubeflow.org/v1"}
SCALED = ("deployments", "statefulsets")
SUSPENDABLE = ("jobs", "cronjobs")
ATTEMPTS = 3  # rounds while objects change under us (409 Conflict)
# Saved counts: ASCII digits, no sign, no leading zero, at most 9 digits. str.isdigit() takes "²"
# (which int() then refuses) and int() takes "٣", "+3", " 3" and "3_0": int() sees only what matches.
COUNT = re.compile(r"[1-9][0-9]{0,8}")
CAP = re.compile(r"[1-9][0-9]{0,5}")  # MAX_REPLICAS as the CronJob passes it
STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")  # what stop writes, in UTC
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*")
SELECTOR = re.compile(rf"gpustack\.dev/workload in \({_LABEL}(,{_LABEL})*\)")
USAGE = ("usage: autostop.py stop|start NAMESPACE MAX_REPLICAS SELECTION...\n"
         f"  SELECTION: <plural>=<label selector> or <plural>/<name>; plurals: {', '.join(APIS)}")

Json = dict[str, Any]
Selection = tuple[str, str | None, str | None]  # plural, label selector, name


class Conflict(Exception):
    """The object changed since it was read (HTTP 409): read again and retry."""


def state_key(plural: str, obj: Json) -> str:
    return f"{plural}.{obj['metadata']['name']}"


def replicas_of(obj: Json) -> int | None:
    """The object's replica count, or None when the API returned something that is not one."""
    value = obj.get("spec", {}).get("replicas", 1)
    return value if type(value) is int and value >= 0 else None


def finished(job: Json) -> bool:
    """A Job with a Complete or Failed condition: nothing runs, and nothing is to suspend."""
    conditions = job.get("status", {}).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


def annotation(obj: Json) -> Any:
    return (obj["metadata"].get("annotations") or {}).get(STOP_ANNOTATION)


def saved_count(text: Any, cap: int) -> tuple[int | None, str | None]:
    """(count to restore, problem): a saved count parsed strictly and bounded by `cap`."""
    if not isinstance(text, str) or not COUNT.fullmatch(text):
        shown = repr(text)[:40]
        return None, f"saved count {shown} is not a whole number from 1 to {cap}: not restored"
    count = int(text)
    if count > cap:
        return cap, f"saved count {count} is above the plan's maximum {cap}: restored {cap}"
    return count, None


def stop_value(plural: str, obj: Json, now: str) -> str | None:
    """What to save before stopping the object, or None when it is not running (nothing to stop: a
    second stop must not overwrite what the first saved)."""
    if plural in SCALED:
        replicas = replicas_of(obj)
        return str(replicas) if replicas else None
    if plural in SUSPENDABLE:
        running = obj.get("spec", {}).get("suspend") is not True and not (plural == "jobs" and finished(obj))
        return SUSPENDED if running else None
    return now if annotation(obj) is None else None


def change(plural: str, obj: Json, stopped: bool, value: str | int) -> tuple[str, Json]:
    """The merge patch (path suffix, body) that stops or starts the object, valid only if the object is
    still as read (its resourceVersion)."""
    version = {"resourceVersion": obj["metadata"]["resourceVersion"]}
    if plural in SCALED:
        return "/scale", {"metadata": version, "spec": {"replicas": 0 if stopped else value}}
    if plural in SUSPENDABLE:
        return "", {"metadata": version, "spec": {"suspend": stopped}}
    return "", {"metadata": {**version, "annotations": {STOP_ANNOTATION: value if stopped else None}}}


def start_value(plural: str, obj: Json, saved: Any, cap: int) -> tuple[int | str | None, str | None]:
    """(what to restore, problem) for an object with a saved entry; (None, None): leave it as it is
    (someone started it meanwhile), and drop the entry."""
    if plural in SCALED:
        return saved_count(saved, cap) if replicas_of(obj) == 0 else (None, None)
    if plural in SUSPENDABLE:
        if saved != SUSPENDED:
            return None, f"saved value {repr(saved)[:40]} is not {SUSPENDED!r}: not resumed"
        return (SUSPENDED, None) if obj.get("spec", {}).get("suspend") is True else (None, None)
    if not isinstance(saved, str) or not STAMP.fullmatch(saved):
        return None, f"saved value {repr(saved)[:40]} is not a stop time (YYYY-MM-DDTHH:MM:SSZ): not started"
    return (saved, None) if annotation(obj) == saved else (None, None)  # another stop is not ours to undo


def parse_selection(text: str) -> Selection | None:
    plural, sep, selector = text.partition("=")
    if sep:
        return (plural, selector, None) if plural in APIS and SELECTOR.fullmatch(selector) else None
    plural, sep, name = text.partition("/")
    if sep and plural in APIS and len(name) <= 253 and NAME.fullmatch(name):
        return plural, None, name
    return None


def call(method: str, path: str, body: Json | None = None, content_type: str = "application/json") -> Json:
    """One request to the API server, authenticated as the pod's service account."""
    url = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}{path}"
    with open(ACCOUNT + "/token", encoding="utf-8") as f:
        token = f.read().strip()
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + token, "Accept": "application/json",
                                              "Content-Type": content_type})
    context = ssl.create_default_context(cafile=ACCOUNT + "/ca.crt")
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            result: Json = json.load(response)
            return result
    except urllib.error.HTTPError as error:
        if error.code == 409:
            raise Conflict(path) from error
        raise


class Namespace:
    """The API paths of one namespace, through `call`."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def path(self, plural: str, name: str = "") -> str:
        return f"/apis/{APIS[plural]}/namespaces/{self.namespace}/{plural}" + (f"/{name}" if name else "")

    def list(self, plural: str, selector: str) -> list[Json]:
        items: list[Json] = call("GET", f"{self.path(plural)}?labelSelector={urllib.parse.quote(selector)}")["items"]
        return items

    def get(self, plural: str, name: str) -> Json:
        return call("GET", self.path(plural, name))

    def patch(self, plural: str, obj: Json, suffix: str, body: Json) -> None:
        call("PATCH", self.path(plural, obj["metadata"]["name"]) + suffix, body, "application/merge-patch+json")

    def state_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps/{STATE}"

    def read_state(self) -> Json:
        return call("GET", self.state_path())

    def write_state(self, configmap: Json) -> None:
        call("PUT", self.state_path(), configmap)


def change_state(api: Namespace, add: dict[str, str], drop: list[str]) -> None:
    """Add and drop entries of the state ConfigMap, retrying when it changed meanwhile."""
    if not add and not drop:
        return
    for attempt in range(ATTEMPTS):
        configmap = api.read_state()
        data = dict(configmap.get("data") or {})
        data.update(add)
        for key in drop:
            data.pop(key, None)
        configmap["data"] = dict(sorted(data.items()))
        try:
            api.write_state(configmap)  # carries the resourceVersion read: a concurrent change is a 409
            return
        except Conflict:
            if attempt == ATTEMPTS - 1:
                raise


def gather(api: Namespace, selections: list[Selection]) -> tuple[dict[str, tuple[str, Json]], list[str]]:
    """Every selected object by state key (a CronJob's active Jobs with it), and the problems met."""
    found: dict[str, tuple[str, Json]] = {}
    problems: list[str] = []
    for plural, selector, name in selections:
        objects = read(api, problems, plural, selector, name)
        for obj in objects:
            found[state_key(plural, obj)] = (plural, obj)
            if plural != "cronjobs":
                continue
            # A run already started is not stopped by the CronJob's suspend: its Jobs are stopped too.
            for ref in obj.get("status", {}).get("active") or []:
                for job in read(api, problems, "jobs", None, ref.get("name") if isinstance(ref, dict) else None):
                    found[state_key("jobs", job)] = ("jobs", job)
    return found, problems


def read(api: Namespace, problems: list[str], plural: str, selector: str | None, name: str | None) -> list[Json]:
    """The objects a selection names; a failure is one more problem, and no objects."""
    what = f"{plural}/{name}" if selector is None else f"{plural} ({selector})"
    try:
        if selector is not None:
            return api.list(plural, selector)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            problems.append(f"{what}: not an object name")
            return []
        return [api.get(plural, name)]
    except urllib.error.HTTPError as error:
        if error.code == 404 and selector is not None:
            print(f"no {plural} in this cluster's API: skipped")  # e.g. Kubeflow is not installed
            return []
        problems.append(f"{what}: {error.code} {error.reason}")
    except (urllib.error.URLError, OSError, KeyError, TypeError) as error:
        problems.append(f"{what}: {error!r}")
    return []


def report(problems: list[str], action: str) -> int:
    for problem in problems:
        print(f"{action} {problem}", file=sys.stderr)
    return len(problems)


def stop(api: Namespace, selections: list[Selection], now: str) -> int:
    """Save what every running object needs to start again, then stop it; the number of problems."""
    failed = 0
    for _ in range(ATTEMPTS):
        found, problems = gather(api, selections)
        save = {key: value for key, (plural, obj) in found.items()
                if (value := stop_value(plural, obj, now)) is not None}
        change_state(api, save, [])  # saved before stopping: a job killed halfway loses nothing
        conflicts, failed = 0, report(problems, "stop")
        for key, value in save.items():
            plural, obj = found[key]
            try:
                api.patch(plural, obj, *change(plural, obj, True, value))
                print(f"stop {plural}/{obj['metadata']['name']}" + (f": {value} -> 0" if plural in SCALED else ""))
            except Conflict:
                conflicts += 1
            except (urllib.error.URLError, OSError) as error:
                failed += report([f"{plural}/{obj['metadata']['name']} failed: {error}"], "stop")
        if not conflicts:
            return failed
    return failed + conflicts


def start(api: Namespace, selections: list[Selection], cap: int) -> int:
    """Undo what stop did to every selected object; the number of problems."""
    reported = failed = 0
    for _ in range(ATTEMPTS):
        state = dict(api.read_state().get("data") or {})
        found, problems = gather(api, selections)
        failed = report(problems, "start")
        conflicts, drop = 0, []
        for key, (plural, obj) in found.items():
            if key not in state:
                continue
            value, problem = start_value(plural, obj, state[key], cap)
            if problem:
                reported += report([f"{key}: {problem}"], "start")
            if value is None:
                drop.append(key)
                continue
            try:
                api.patch(plural, obj, *change(plural, obj, False, value))
                print(f"start {plural}/{obj['metadata']['name']}" + (f": 0 -> {value}" if plural in SCALED else ""))
                drop.append(key)
            except Conflict:
                conflicts += 1  # read it again next round
            except (urllib.error.URLError, OSError) as error:
                failed += report([f"{plural}/{obj['metadata']['name']} failed: {error}"], "start")  # kept
        change_state(api, {}, drop)  # dropped after starting: a job killed halfway starts on its next run
        if not conflicts:
            return failed + reported
    return failed + reported + conflicts


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def main(argv: list[str]) -> int:
    selections = [parse_selection(arg) for arg in argv[3:]]
    if (len(argv) < 4 or argv[0] not in ("stop", "start") or not CAP.fullmatch(argv[2])
            or not NAME.fullmatch(argv[1]) or None in selections):
        print(USAGE, file=sys.stderr)
        return 2
    action, namespace, cap = argv[:3]
    chosen = [s for s in selections if s is not None]
    api = Namespace(namespace)
    try:
        failed = stop(api, chosen, now_utc()) if action == "stop" else start(api, chosen, int(cap))
    except (urllib.error.URLError, OSError, Conflict, KeyError, ValueError) as error:
        print(f"{action} in {namespace} failed: {error!r}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
