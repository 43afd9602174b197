"""gpustack idle action: scale one workload to zero once Prometheus says its GPUs are idle.

Run every 5 minutes by the workload's idle CronJob as
`python3 idle.py NAMESPACE PLURAL NAME PROMETHEUS_URL QUERY` with the pod's service-account token.
Standard library only (the Docker Official Image for Python runs it).

QUERY is the PromQL gpustack rendered for the workload (gpustack/render/promql.py `idle`): it returns a
sample when the workload is idle and nothing otherwise, also when there is no data. So the program acts
only on a successful, non-empty answer; an error, a timeout or anything else is reported and changes
nothing. Acting: the object's replica count is saved in the namespace's ConfigMap
`gpustack-autostop-state` (key `<plural>.<name>`, the auto-stop jobs' contract, so a window's start
gives it back), then the object is scaled to 0 through its `/scale`, only if it is as it was read. What
it may touch (the Role says the same, by name): get on the one object, patch on its scale, get and
update on the state ConfigMap. It talks to the API server through auto-stop's program (`call`), which
its ConfigMap carries beside it; both import only the standard library.
"""

from __future__ import annotations

import re
import sys
import urllib.error
import urllib.parse
from typing import Any

if __package__:  # imported as gpustack.incluster.idle (tests, renderers)
    from gpustack.incluster.autostop import Conflict, Namespace, change_state, send
else:  # run in the cluster: auto-stop's program is mounted beside this file, from the same ConfigMap
    from autostop import Conflict, Namespace, change_state, send  # type: ignore[import-not-found, no-redef]

PLURALS = ("deployments", "statefulsets")
NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
URL = re.compile(r"https?://[-a-z0-9.]{1,253}(:[0-9]{1,5})?(/[-a-z0-9_.]{1,63}){0,4}")
USAGE = "usage: idle.py NAMESPACE deployments|statefulsets NAME PROMETHEUS_URL QUERY"

Json = dict[str, Any]


def is_idle(answer: Any) -> bool:
    """A Prometheus instant-query answer that holds at least one sample: the workload is idle."""
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise ValueError(f"Prometheus did not answer with success: {str(answer)[:200]}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise ValueError(f"Prometheus answered no instant vector: {str(data)[:200]}")
    return len(data["result"]) > 0


def ask_prometheus(url: str, query: str) -> Any:
    """The instant query's answer: no redirect followed (the URL's scheme and host are the only ones asked),
    bounded in bytes and time (auto-stop's `send`)."""
    origin, base = _split(url)
    return send(origin, f"{base}/api/v1/query?{urllib.parse.urlencode({'query': query})}",
                headers={"Accept": "application/json"})


def _split(url: str) -> tuple[str, str]:
    """(scheme://host[:port], path prefix) of a URL that matched URL."""
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}://{host}", (slash + path).rstrip("/")


def stop(namespace: str, plural: str, name: str) -> str:
    """Save the object's count (auto-stop's state entry, so a window's start gives it back), then scale it
    to zero; what was done, in words."""
    api = Namespace(namespace)
    obj = api.get(plural, name)
    replicas = obj.get("spec", {}).get("replicas", 1)
    if type(replicas) is not int or replicas < 0:
        raise ValueError(f"{plural}/{name} has no replica count: {replicas!r}")
    if replicas == 0:
        return f"{plural}/{name} is already at 0"
    change_state(api, {f"{plural}.{name}": str(replicas)}, [])  # saved before scaling: a kill halfway loses nothing
    api.patch(plural, obj, "/scale", {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                                      "spec": {"replicas": 0}})
    return f"idle {plural}/{name}: {replicas} -> 0"


def main(argv: list[str]) -> int:
    if (len(argv) != 5 or not NAME.fullmatch(argv[0]) or argv[1] not in PLURALS or not NAME.fullmatch(argv[2])
            or not URL.fullmatch(argv[3]) or not argv[4]):
        print(USAGE, file=sys.stderr)
        return 2
    namespace, plural, name, url, query = argv
    try:
        if not is_idle(ask_prometheus(url, query)):
            print(f"{plural}/{name} is not idle")
            return 0
        print(stop(namespace, plural, name))
    except (urllib.error.URLError, OSError, Conflict, KeyError, ValueError) as error:
        print(f"idle {plural}/{name} in {namespace} failed: {error!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
