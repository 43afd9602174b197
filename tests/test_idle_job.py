"""The built-in idle action: a CronJob per workload asking Prometheus (a real HTTP server here) and
scaling the workload to zero through an API server that enforces the rendered Role."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
from pathlib import Path

import pytest
import yaml

from gpustack.incluster import autostop as autostop_program
from gpustack.incluster import idle as program
from gpustack.plan import build_plan
from gpustack.render import in_cluster, promql
from gpustack.spec import load_text
from test_keda import PROMETHEUS, keda_example_text
from test_render import validate

PLAN = build_plan(load_text(keda_example_text("cronjob", idle=True), "cronjob.yaml"))
TARGET = PLAN.targets[0]
OBJECTS = in_cluster(PLAN, TARGET).objects
KEDA_PLAN = build_plan(load_text(keda_example_text("keda"), "keda.yaml"))


def of(kind: str, namespace: str, name: str) -> dict:
    return next(o for o in OBJECTS if o["kind"] == kind and o["metadata"].get("namespace") == namespace
                and o["metadata"]["name"] == name)


def test_each_idle_workload_gets_a_job_without_keda_and_none_with_it():
    jobs = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "CronJob" and "idle" in o["metadata"]["name"]}
    assert set(jobs) == {"gpustack-idle-notebooks", "gpustack-idle-moderation"}
    command = jobs["gpustack-idle-notebooks"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "command"]
    [policy] = [p for p in TARGET.idle if p.workload == "notebooks"]
    assert command[2:] == ["research", "statefulsets", "notebooks", PROMETHEUS, promql.idle(policy, mig=False)]
    assert any("built-in idle job scales research/notebooks" in note for note in TARGET.notes)
    keda_objects = in_cluster(KEDA_PLAN, KEDA_PLAN.targets[0]).objects
    assert not [o for o in keda_objects if o["kind"] == "CronJob" and "idle" in o["metadata"]["name"]]
    for obj in OBJECTS:
        validate(obj)


def test_the_idle_role_grants_exactly_what_the_job_calls_and_nothing_more():
    # Least privilege: read the named workload, patch its scale subresource, keep its state in one
    # ConfigMap. No list, no update of the workload, no other object.
    assert of("Role", "serving", "gpustack-idle")["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["moderation"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["moderation"],
         "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["gpustack-autostop-state"],
         "verbs": ["get", "update"]},
    ]
    assert of("Role", "research", "gpustack-idle")["rules"][:2] == [
        {"apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": ["notebooks"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["statefulsets/scale"], "resourceNames": ["notebooks"],
         "verbs": ["patch"]},
    ]


def test_the_network_policy_opens_the_api_server_dns_and_prometheus_only():
    policy = of("NetworkPolicy", "serving", "gpustack-idle")
    egress = policy["spec"]["egress"]
    assert [sorted((p["protocol"], p["port"]) for p in rule["ports"]) for rule in egress] == [
        [("TCP", 443)], [("TCP", 53), ("UDP", 53)], [("TCP", 9090)]]
    assert egress[2]["to"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert egress[1]["to"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "kube-system"}
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy["spec"]


def test_one_state_configmap_per_namespace_shared_with_auto_stop():
    states = [o for o in OBJECTS if o["kind"] == "ConfigMap" and o["metadata"]["name"] == autostop_program.STATE]
    assert sorted(o["metadata"]["namespace"] for o in states) == ["research", "serving"]
    assert all("data" not in o for o in states)


# -- the program, against a fake Prometheus and an API server enforcing the Role -------------------
class Prometheus(http.server.BaseHTTPRequestHandler):
    answer: bytes = b""
    status = 200
    queries: list[str] = []

    def do_GET(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        assert parsed.path == "/api/v1/query"
        Prometheus.queries.append(urllib.parse.parse_qs(parsed.query)["query"][0])
        self.send_response(Prometheus.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(Prometheus.answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prometheus():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Prometheus)
    # shutdown() waits for the serve loop to poll its flag: the default 0.5 s poll costs half a second each.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    Prometheus.queries = []
    yield f"http://localhost:{server.server_address[1]}"
    server.shutdown()


def answer(samples: int) -> bytes:
    result = [{"metric": {}, "value": [1700000000, "3"]}] * samples
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


class Api:
    """An API server holding the objects and the state ConfigMap, allowing only what the Role grants."""

    def __init__(self, namespace: str, replicas: int, conflicts: int = 0):
        self.rules = of("Role", namespace, "gpustack-idle")["rules"]
        self.namespace = namespace
        self.objects = {("statefulsets", "notebooks"): {"metadata": {"name": "notebooks", "resourceVersion": "7"},
                                                         "spec": {"replicas": replicas}}}
        self.state = {"metadata": {"name": autostop_program.STATE, "resourceVersion": "1"}, "data": {"deployments.other": "2"}}
        self.conflicts = conflicts
        self.calls: list[tuple[str, str]] = []

    def allowed(self, verb: str, resource: str, name: str) -> bool:
        return any(resource in r["resources"] and verb in r["verbs"] and name in r.get("resourceNames", [name])
                   for r in self.rules)

    def __call__(self, method: str, path: str, body=None, content_type: str = "application/json"):
        self.calls.append((method, path))
        parts = path.strip("/").split("/")
        if parts[0] == "api":  # /api/v1/namespaces/NS/configmaps/NAME
            resource, name = parts[4], parts[5]
        else:  # /apis/apps/v1/namespaces/NS/PLURAL/NAME[/scale]
            resource, name = parts[5] + ("/scale" if len(parts) == 8 else ""), parts[6]
        verb = {"GET": "get", "PUT": "update", "PATCH": "patch"}[method]
        assert parts[3 if parts[0] == "api" else 4] == self.namespace
        if not self.allowed(verb, resource, name):
            raise urllib.error.HTTPError(path, 403, "forbidden", {}, None)  # type: ignore[arg-type]
        if resource == "configmaps":
            if method == "GET":
                return json.loads(json.dumps(self.state))
            if self.conflicts:
                self.conflicts -= 1
                raise program.Conflict(path)
            self.state = body
            return body
        obj = self.objects[(resource.split("/")[0], name)]
        if method == "GET":
            return json.loads(json.dumps(obj))
        assert body["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
        obj["spec"]["replicas"] = body["spec"]["replicas"]
        return obj


def run(monkeypatch, api: Api, url: str, plural: str = "statefulsets", name: str = "notebooks") -> int:
    monkeypatch.setattr(autostop_program, "call", api)  # the API calls auto-stop's program makes for both
    return program.main(["research", plural, name, url, "QUERY"])


def test_idle_saves_the_count_where_auto_stop_restores_it_then_scales_to_zero(monkeypatch, prometheus):
    Prometheus.answer = answer(1)
    api = Api("research", replicas=12, conflicts=1)
    assert run(monkeypatch, api, prometheus) == 0
    assert api.objects[("statefulsets", "notebooks")]["spec"]["replicas"] == 0
    key = autostop_program.state_key("statefulsets", api.objects[("statefulsets", "notebooks")])
    assert api.state["data"] == {"deployments.other": "2", key: "12"}  # retried after a conflict, others kept
    assert [c[0] for c in api.calls] == ["GET", "GET", "PUT", "GET", "PUT", "PATCH"]  # saved before scaling
    assert Prometheus.queries == ["QUERY"]


@pytest.mark.parametrize("reply, status", [(answer(0), 200), (b'{"status":"error","error":"bad"}', 400),
                                           (b"not json", 200), (b'{"status":"success","data":{}}', 200)])
def test_anything_but_an_idle_answer_changes_nothing(monkeypatch, prometheus, reply, status):
    Prometheus.answer, Prometheus.status = reply, status
    api = Api("research", replicas=12)
    try:
        code = run(monkeypatch, api, prometheus)
    finally:
        Prometheus.status = 200
    assert code == (0 if reply == answer(0) else 1)
    assert api.objects[("statefulsets", "notebooks")]["spec"]["replicas"] == 12 and not api.calls


def test_an_object_already_at_zero_keeps_its_saved_count(monkeypatch, prometheus):
    Prometheus.answer = answer(1)
    api = Api("research", replicas=0)
    api.state["data"]["statefulsets.notebooks"] = "12"
    assert run(monkeypatch, api, prometheus) == 0
    assert api.state["data"]["statefulsets.notebooks"] == "12" and [c[0] for c in api.calls] == ["GET"]


def test_the_role_allows_only_its_own_workload(monkeypatch, prometheus, capsys):
    Prometheus.answer = answer(1)
    api = Api("research", replicas=12)
    api.objects[("statefulsets", "other")] = api.objects[("statefulsets", "notebooks")]
    assert run(monkeypatch, api, prometheus, name="other") == 1
    assert "403" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["Research", "statefulsets", "nb", "http://prom:9090", "q"],
                                  ["research", "jobs", "nb", "http://prom:9090", "q"],
                                  ["research", "statefulsets", "nb", "http://prom:9090/?q=1", "q"],
                                  ["research", "statefulsets", "nb", "http://prom:9090", ""]])
def test_bad_arguments_are_a_usage_error(argv, capsys):
    assert program.main(argv) == 2
    assert "usage: idle.py" in capsys.readouterr().err


def test_the_program_runs_alone_with_the_standard_library_and_auto_stops_program(tmp_path: Path):
    configmap = of("ConfigMap", "serving", "gpustack-idle-program")["data"]
    assert set(configmap) == {"idle.py", "autostop.py"}
    for name, text in configmap.items():
        (tmp_path / name).write_text(text)
    ran = subprocess.run([sys.executable, "-E", "-s", "-B", str(tmp_path / "idle.py")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert ran.returncode == 2 and "usage" in ran.stderr


# -- the workload alert, judged by Prometheus --------------------------------------------------------
@pytest.mark.skipif(shutil.which("promtool") is None and not os.environ.get("CI"), reason="promtool not installed")
def test_the_workload_idle_alert_fires_at_five_percent_for_twenty_minutes_not_at_fifty(tmp_path):
    from test_alerts_promtool import promtool
    from test_keda import _series

    rule = of("PrometheusRule", "gpustack-system", "gpustack-idle-gpus")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    [fired] = [r for r in rule["spec"]["groups"][0]["rules"] if r["alert"] == "GpuWorkloadIdle"
               and r["labels"]["gpustack_workload"] == "notebooks"]
    expected = {"exp_labels": fired["labels"], "exp_annotations": fired["annotations"]}
    assert fired["labels"]["gpustack_idle_action"] == "scale-to-zero" and fired["labels"]["team"] == "ml-platform"
    assert "below 10% utilisation for 15m: it goes to zero now" in fired["annotations"]["description"]
    tests = [{"input_series": _series("notebooks", "research", "5+0x60"),
              "alert_rule_test": [{"eval_time": "10m", "alertname": "GpuWorkloadIdle", "exp_alerts": []},
                                  {"eval_time": "20m", "alertname": "GpuWorkloadIdle", "exp_alerts": [expected]}]},
             {"input_series": _series("notebooks", "research", "50+0x60"),
              "alert_rule_test": [{"eval_time": "40m", "alertname": "GpuWorkloadIdle", "exp_alerts": []}]}]
    ran = promtool(tmp_path, TARGET.name, tests, rules={"groups": rule["spec"]["groups"]})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    tests[1]["alert_rule_test"][0]["exp_alerts"] = [expected]  # the test can fail: 50% is not idle
    assert promtool(tmp_path, TARGET.name, tests, rules={"groups": rule["spec"]["groups"]}).returncode != 0
