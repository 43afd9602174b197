"""gpustack auto-stop: scale labelled Deployments and StatefulSets to zero, or back.

Run by the auto-stop CronJobs as `python3 autostop.py stop|start NAMESPACE SELECTOR MAX_REPLICAS`
with the pod's service-account token. Standard library only: the image is the Docker Official Image
for Python.

What it may touch (the Role says the same): it lists the workloads, changes only their `/scale`
subresource (never a pod template), and keeps the counts it saved in the namespace's ConfigMap
`gpustack-autostop-state` (key `<plural>.<name>`, value the replica count), the one ConfigMap it may
read and update. Everything it reads is untrusted: a saved count is a whole number from 1 to
MAX_REPLICAS (the plan's largest replica count for the pool's workloads) or it is reported and
dropped; one bad object never stops the others.
"""

from __future__ import annotations

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
PLURALS = ("deployments", "statefulsets")
ATTEMPTS = 3  # rounds while objects change under us (409 Conflict)
# Saved counts: ASCII digits, no sign, no leading zero, at most 9 digits. str.isdigit() takes "²"
# (which int() then refuses) and int() takes "٣", "+3", " 3" and "3_0": int() sees only what matches.
COUNT = re.compile(r"[1-9][0-9]{0,8}")
CAP = re.compile(r"[1-9][0-9]{0,5}")  # MAX_REPLICAS as the CronJob passes it
USAGE = "usage: autostop.py stop|start NAMESPACE LABEL_SELECTOR MAX_REPLICAS"

Json = dict[str, Any]


class Conflict(Exception):
    """The object changed since it was read (HTTP 409): read again and retry."""


def state_key(plural: str, obj: Json) -> str:
    return f"{plural}.{obj['metadata']['name']}"


def replicas_of(obj: Json) -> int | None:
    """The object's replica count, or None when the API returned something that is not one."""
    value = obj.get("spec", {}).get("replicas", 1)
    return value if type(value) is int and value >= 0 else None


def saved_count(text: Any, cap: int) -> tuple[int | None, str | None]:
    """(count to restore, problem): a saved count parsed strictly and bounded by `cap`."""
    if not isinstance(text, str) or not COUNT.fullmatch(text):
        shown = repr(text)[:40]
        return None, f"saved count {shown} is not a whole number from 1 to {cap}: not restored"
    count = int(text)
    if count > cap:
        return cap, f"saved count {count} is above the plan's maximum {cap}: restored {cap}"
    return count, None


def stop_plan(items: list[tuple[str, Json]]) -> tuple[dict[str, str], list[tuple[str, Json]]]:
    """What stopping needs: the state entries to add, and the (plural, object) pairs to scale to 0.

    An object already at zero keeps what was saved for it (a second stop must not save 0)."""
    save: dict[str, str] = {}
    scale: list[tuple[str, Json]] = []
    for plural, obj in items:
        replicas = replicas_of(obj)
        if not replicas:
            continue
        save[state_key(plural, obj)] = str(replicas)
        scale.append((plural, obj))
    return save, scale


def start_plan(items: list[tuple[str, Json]], state: dict[str, str], cap: int
               ) -> tuple[list[tuple[str, Json, int]], list[str], list[str]]:
    """What starting needs: (plural, object, count) to scale up, the state keys to drop, problems.

    An object scaled up by someone while stopped keeps that count; its entry is dropped."""
    scale: list[tuple[str, Json, int]] = []
    drop: list[str] = []
    problems: list[str] = []
    for plural, obj in items:
        key = state_key(plural, obj)
        if key not in state:
            continue
        drop.append(key)
        if replicas_of(obj) != 0:
            continue
        count, problem = saved_count(state[key], cap)
        if problem:
            problems.append(f"{key}: {problem}")
        if count is not None:
            scale.append((plural, obj, count))
    return scale, drop, problems


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

    def list(self, plural: str, selector: str) -> list[Json]:
        path = f"/apis/apps/v1/namespaces/{self.namespace}/{plural}?labelSelector={urllib.parse.quote(selector)}"
        items: list[Json] = call("GET", path)["items"]
        return items

    def scale(self, plural: str, obj: Json, replicas: int) -> None:
        """Set the replicas through the scale subresource, only if the object is as we read it."""
        meta = obj["metadata"]
        path = f"/apis/apps/v1/namespaces/{self.namespace}/{plural}/{meta['name']}/scale"
        call("PATCH", path, {"metadata": {"resourceVersion": meta["resourceVersion"]}, "spec": {"replicas": replicas}},
             "application/merge-patch+json")

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


def listed(api: Namespace, selector: str) -> list[tuple[str, Json]]:
    return [(plural, obj) for plural in PLURALS for obj in api.list(plural, selector)]


def stop(api: Namespace, selector: str) -> int:
    """Save every running object's count, then scale it to zero; the number of objects left running."""
    for _ in range(ATTEMPTS):
        save, scale = stop_plan(listed(api, selector))
        change_state(api, save, [])  # saved before scaling: a job killed halfway loses no count
        conflicts = failed = 0
        for plural, obj in scale:
            try:
                api.scale(plural, obj, 0)
                print(f"stop {plural}/{obj['metadata']['name']}: {replicas_of(obj)} -> 0")
            except Conflict:
                conflicts += 1
            except (urllib.error.URLError, OSError) as error:
                print(f"stop {plural}/{obj['metadata']['name']} failed: {error}", file=sys.stderr)
                failed += 1
        if not conflicts:
            return failed
    return failed + conflicts


def start(api: Namespace, selector: str, cap: int) -> int:
    """Give every stopped object its saved count back; the number of objects with a problem."""
    reported = 0
    for _ in range(ATTEMPTS):
        state = dict(api.read_state().get("data") or {})
        scale, drop, problems = start_plan(listed(api, selector), state, cap)
        for problem in problems:
            print(f"start {problem}", file=sys.stderr)
        reported += len(problems)
        conflicts = failed = 0
        for plural, obj, count in scale:
            key = state_key(plural, obj)
            try:
                api.scale(plural, obj, count)
                print(f"start {plural}/{obj['metadata']['name']}: 0 -> {count}")
            except Conflict:
                conflicts += 1
                drop.remove(key)  # read it again next round
            except (urllib.error.URLError, OSError) as error:
                print(f"start {plural}/{obj['metadata']['name']} failed: {error}", file=sys.stderr)
                failed += 1
                drop.remove(key)  # keep the count for the next run
        change_state(api, {}, drop)  # dropped after scaling: a job killed halfway restores on its next run
        if not conflicts:
            return failed + reported
    return failed + reported + conflicts


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] not in ("stop", "start") or not CAP.fullmatch(argv[3]):
        print(USAGE, file=sys.stderr)
        return 2
    action, namespace, selector, cap = argv
    api = Namespace(namespace)
    try:
        failed = stop(api, selector) if action == "stop" else start(api, selector, int(cap))
    except (urllib.error.URLError, OSError, Conflict, KeyError, ValueError) as error:
        print(f"{action} in {namespace} failed: {error!r}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
