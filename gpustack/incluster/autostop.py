"""gpustack auto-stop: scale labelled Deployments and StatefulSets to zero, or back.

Run by the auto-stop CronJobs as `python3 autostop.py stop|start NAMESPACE SELECTOR` with the pod's
service-account token. Standard library only: the image is the Docker Official Image for Python.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

ANNOTATION = "gpustack.dev/replicas-before-stop"
ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
PLURALS = ("deployments", "statefulsets")
ATTEMPTS = 3  # list-and-patch rounds while objects change under us (409 Conflict)
USAGE = "usage: autostop.py stop|start NAMESPACE LABEL_SELECTOR"

Json = dict[str, Any]


def patch_for(action: str, obj: Json) -> Json | None:
    """The merge patch that stops or starts `obj`, or None when there is nothing to do."""
    meta, spec = obj["metadata"], obj.get("spec", {})
    replicas = spec.get("replicas", 1)
    saved = (meta.get("annotations") or {}).get(ANNOTATION)
    guard = {"resourceVersion": meta["resourceVersion"]}  # a concurrent change fails with 409
    if action == "stop":
        if replicas == 0:
            return None  # already stopped (or scaled to zero by its owner): keep what was saved
        return {"metadata": dict(guard, annotations={ANNOTATION: str(replicas)}), "spec": {"replicas": 0}}
    if saved is None:
        return None
    patch: Json = {"metadata": dict(guard, annotations={ANNOTATION: None})}
    if replicas == 0 and saved.isdigit():
        patch["spec"] = {"replicas": int(saved)}
    return patch  # scaled up meanwhile, or a bad annotation: only drop the annotation


def call(method: str, path: str, body: Json | None = None) -> Json:
    """One request to the API server, authenticated as the pod's service account."""
    url = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}{path}"
    with open(ACCOUNT + "/token", encoding="utf-8") as f:
        token = f.read().strip()
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + token, "Accept": "application/json",
                                              "Content-Type": "application/merge-patch+json"})
    context = ssl.create_default_context(cafile=ACCOUNT + "/ca.crt")
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        result: Json = json.load(response)
        return result


def scale_kind(action: str, namespace: str, selector: str, plural: str) -> int:
    """Stop or start every object of one kind; the number of objects that could not be changed."""
    base = f"/apis/apps/v1/namespaces/{namespace}/{plural}"
    failed = 0
    for _ in range(ATTEMPTS):
        items = call("GET", base + "?labelSelector=" + urllib.parse.quote(selector))["items"]
        conflicts = 0
        for obj in items:
            patch = patch_for(action, obj)
            if patch is None:
                continue
            name = obj["metadata"]["name"]
            try:
                call("PATCH", f"{base}/{name}", patch)
                print(f"{action} {plural}/{name}: {json.dumps(patch.get('spec', {}))}")
            except urllib.error.HTTPError as error:
                if error.code == 409:
                    conflicts += 1
                else:
                    print(f"{action} {plural}/{name} failed: {error}", file=sys.stderr)
                    failed += 1
        if not conflicts:
            return failed
    return failed + 1


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("stop", "start"):
        print(USAGE, file=sys.stderr)
        return 2
    action, namespace, selector = argv
    failed = sum(scale_kind(action, namespace, selector, plural) for plural in PLURALS)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
