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
import time
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
MAX_ANSWER_BYTES = 2 << 20  # one answer (a list page of PAGE objects, the state ConfigMap: at most 1 MiB)
CALL_SECONDS = 30  # one request, connecting to the last byte
PAGE, MAX_PAGES = 100, 200  # objects per list page, pages per list
# The API server's address as the kubelet sets it: an IPv4/IPv6 address or a DNS name, and a port.
HOST = re.compile(r"[0-9a-fA-F:.]{2,45}|[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
PORT = re.compile(r"[1-9][0-9]{0,4}")
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


def checked(item: Any) -> Json:
    """The fields this program reads of one object from the API, each of the type it expects, or Refused:
    a hostile or broken answer is a problem for that object only. Only these fields are kept, which
    also bounds what a long list holds in memory."""
    if not isinstance(item, dict):
        raise Refused(f"not an object but a JSON {type(item).__name__}")
    meta, spec, status = item.get("metadata"), _unset_empty(item.get("spec")), _unset_empty(item.get("status"))
    if not isinstance(meta, dict) or not isinstance(spec, dict) or not isinstance(status, dict):
        raise Refused("metadata, spec or status is not an object")
    name, version, annotations = meta.get("name"), meta.get("resourceVersion"), _unset_empty(meta.get("annotations"))
    if not isinstance(name, str) or len(name) > 253 or not NAME.fullmatch(name):
        raise Refused(f"name {repr(name)[:60]} is not an object name")
    if not isinstance(version, str) or not 0 < len(version) <= 128 or not isinstance(annotations, dict):
        raise Refused(f"{name}: resourceVersion or annotations of the wrong type")
    conditions, active = status.get("conditions") or [], status.get("active") or []
    if not isinstance(conditions, list) or not isinstance(active, list):
        raise Refused(f"{name}: status.conditions or status.active is not a list")
    kept_meta: Json = {"name": name, "resourceVersion": version}
    if STOP_ANNOTATION in annotations:
        kept_meta["annotations"] = {STOP_ANNOTATION: annotations[STOP_ANNOTATION]}
    return {"metadata": kept_meta, "spec": {k: spec[k] for k in ("replicas", "suspend") if k in spec},
            "status": {"conditions": [{"type": c.get("type"), "status": c.get("status")} for c in conditions
                                      if isinstance(c, dict)],
                       "active": [{"name": r.get("name")} for r in active if isinstance(r, dict)]}}


def _unset_empty(value: Any) -> Any:
    """An absent or null field as an empty object; anything else as it is (to be type-checked)."""
    return {} if value is None else value


def state_data(configmap: Json) -> dict[str, Any]:
    """The state ConfigMap's entries; a ConfigMap whose data is not a mapping is refused (never rewritten)."""
    data = configmap.get("data") or {} if isinstance(configmap, dict) else None
    if not isinstance(data, dict):
        raise Refused(f"{STATE} has data of the wrong type ({type(data).__name__}): not changed")
    return dict(data)


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


class Refused(ValueError):
    """An answer the program does not act on (a redirect, too large, too slow, not a JSON object)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """urllib's default handler follows a redirect with the Authorization header, to any scheme and host:
    a redirect is refused instead, so the token goes only to the origin the program was given."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        raise Refused(f"{req.full_url.split('?')[0]} answered a redirect ({code}): not followed")


def send(origin: str, path: str, method: str = "GET", body: Json | None = None, headers: dict[str, str] | None = None,
         context: ssl.SSLContext | None = None) -> Json:
    """One request to `origin` (scheme://host:port, fixed by the caller) for `path`: no redirect followed,
    at most MAX_ANSWER_BYTES read, within CALL_SECONDS in all, and the answer a JSON object."""
    if not path.startswith("/") or any(c in path for c in "#\r\n\t "):
        raise Refused(f"not a request path: {path[:80]!r}")
    opener = urllib.request.build_opener(_NoRedirect(), urllib.request.HTTPSHandler(context=context))
    request = urllib.request.Request(origin + path, method=method, headers=headers or {},
                                     data=None if body is None else json.dumps(body).encode())
    deadline = time.monotonic() + CALL_SECONDS
    with opener.open(request, timeout=CALL_SECONDS) as response:
        chunks, size = [], 0
        while chunk := response.read(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise Refused(f"{path.split('?')[0]}: answer over {MAX_ANSWER_BYTES:,} bytes: not read")
            if time.monotonic() > deadline:
                raise Refused(f"{path.split('?')[0]}: answer not read within {CALL_SECONDS} s")
    try:
        answer = json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        raise Refused(f"{path.split('?')[0]}: answer is not JSON") from None
    if not isinstance(answer, dict):
        raise Refused(f"{path.split('?')[0]}: answer is a JSON {type(answer).__name__}, not an object")
    return answer


def call(method: str, path: str, body: Json | None = None, content_type: str = "application/json") -> Json:
    """One request to the API server, authenticated as the pod's service account."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not HOST.fullmatch(host) or not PORT.fullmatch(port):
        raise Refused(f"KUBERNETES_SERVICE_HOST/PORT {host[:60]!r}:{port[:8]!r} is not a host and port")
    with open(ACCOUNT + "/token", encoding="utf-8") as f:
        token = f.read().strip()
    context = ssl.create_default_context(cafile=ACCOUNT + "/ca.crt")
    origin = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    try:
        return send(origin, path, method, body, {"Authorization": "Bearer " + token, "Accept": "application/json",
                                                 "Content-Type": content_type}, context)
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

    def list(self, plural: str, selector: str) -> tuple[list[Json], list[str]]:
        """The checked objects of every page (PAGE at a time, MAX_PAGES at most, no token twice) and a
        problem per object of the wrong shape: one bad item never hides the others."""
        items: list[Json] = []
        problems: list[str] = []
        seen: set[str] = set()
        token = ""
        for _ in range(MAX_PAGES):
            query = {"labelSelector": selector, "limit": str(PAGE)} | ({"continue": token} if token else {})
            page = call("GET", f"{self.path(plural)}?{urllib.parse.urlencode(query, quote_via=urllib.parse.quote)}")
            found = page.get("items") if isinstance(page, dict) else None
            if not isinstance(found, list):
                raise Refused(f"the list of {plural} has no items list")
            for index, item in enumerate(found):
                try:
                    items.append(checked(item))
                except Refused as error:
                    problems.append(f"{plural} item {len(seen) * PAGE + index}: {error}")
            meta = page.get("metadata")
            following = meta.get("continue") if isinstance(meta, dict) else None
            if not following:
                return items, problems
            if not isinstance(following, str) or len(following) > 8192 or following in seen:
                raise Refused(f"the list of {plural} has a bad or repeated continue token")
            seen.add(following)
            token = following
        raise Refused(f"the list of {plural} has more than {MAX_PAGES} pages of {PAGE}")

    def get(self, plural: str, name: str) -> Json:
        return checked(call("GET", self.path(plural, name)))

    def patch(self, plural: str, obj: Json, suffix: str, body: Json) -> None:
        name = obj["metadata"]["name"]
        if not isinstance(name, str) or len(name) > 253 or not NAME.fullmatch(name):  # never a path of our making
            raise Refused(f"{str(name)[:60]!r} is not an object name")
        call("PATCH", self.path(plural, name) + suffix, body, "application/merge-patch+json")

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
        data = state_data(configmap)
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
            objects, bad = api.list(plural, selector)
            problems.extend(f"{what}: {problem}" for problem in bad)
            return objects
        if not isinstance(name, str) or not NAME.fullmatch(name):
            problems.append(f"{what}: not an object name")
            return []
        return [api.get(plural, name)]
    except urllib.error.HTTPError as error:
        if error.code == 404 and selector is not None:
            print(f"no {plural} in this cluster's API: skipped")  # e.g. Kubeflow is not installed
            return []
        problems.append(f"{what}: {error.code} {error.reason}")
    except (urllib.error.URLError, OSError, KeyError, TypeError, ValueError) as error:  # Refused is a ValueError
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
            except (urllib.error.URLError, OSError, ValueError) as error:  # Refused: this object only
                failed += report([f"{plural}/{obj['metadata']['name']} failed: {error}"], "stop")
        if not conflicts:
            return failed
    return failed + conflicts


def start(api: Namespace, selections: list[Selection], cap: int) -> int:
    """Undo what stop did to every selected object; the number of problems."""
    reported = failed = 0
    for _ in range(ATTEMPTS):
        state = state_data(api.read_state())
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
            except (urllib.error.URLError, OSError, ValueError) as error:  # Refused: this object only
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
    except (urllib.error.URLError, OSError, Conflict, KeyError, ValueError) as error:  # Refused is a ValueError
        print(f"{action} in {namespace} failed: {error!r}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
