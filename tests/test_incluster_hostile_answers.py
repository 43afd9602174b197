"""The auto-stop and idle programs against a wrong or hostile API server: an item of the wrong type is a
problem for that item only, a name from a list never shapes a request path, lists are paged under a
bound, and a state ConfigMap of the wrong shape is reported, never rewritten."""

from __future__ import annotations

import copy
import json
import urllib.parse
from pathlib import Path

import pytest

from gpustack.incluster import autostop as program
from gpustack.incluster import idle

ATTACKS = Path(__file__).parent / "fixtures" / "attacks"
STATE = {"metadata": {"name": program.STATE, "resourceVersion": "1"}, "data": {}}


def attack(name: str):
    return json.loads((ATTACKS / name).read_text())


class Server:
    """Answers lists with `pages` (in order, by continue token), the state with `state`; records calls."""

    def __init__(self, pages: list[dict], state=STATE):
        self.pages, self.state, self.calls = pages, copy.deepcopy(state), []

    def __call__(self, method: str, path: str, body=None, content_type: str = "application/json"):
        self.calls.append((method, path))
        split = urllib.parse.urlsplit(path)
        if "/configmaps/" in split.path:
            if method == "PUT":
                self.state = body
            return copy.deepcopy(self.state)
        if method == "PATCH":
            return {}
        query = urllib.parse.parse_qs(split.query)
        assert query["limit"] == [str(program.PAGE)]
        index = int(query.get("continue", ["0"])[0])
        return copy.deepcopy(self.pages[index])


def test_one_bad_item_never_stops_the_others(monkeypatch, capsys):
    server = Server([attack("api-list-hostile-items.json")])
    monkeypatch.setattr(program, "call", server)
    assert program.main(["stop", "research", "10", "deployments=gpustack.dev/workload in (nb)"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("deployments (gpustack.dev/workload in (nb)): deployments item") == 9
    patched = [path for method, path in server.calls if method == "PATCH"]
    assert patched == ["/apis/apps/v1/namespaces/research/deployments/good/scale"]  # the good one stopped
    assert not any(".." in path for _, path in server.calls)
    assert server.state["data"] == {"deployments.good": "2"}


def test_lists_are_paged_and_a_repeated_token_ends_the_list(monkeypatch, capsys):
    def page(name: str, token: str | None) -> dict:
        return {"items": [{"metadata": {"name": name, "resourceVersion": "1"}, "spec": {"replicas": 1}}],
                "metadata": {"continue": token} if token else {}}
    server = Server([page("a", "1"), page("b", "2"), page("c", None)])
    monkeypatch.setattr(program, "call", server)
    assert program.main(["stop", "research", "10", "deployments=gpustack.dev/workload in (nb)"]) == 0
    assert sorted(server.state["data"]) == ["deployments.a", "deployments.b", "deployments.c"]
    looping = Server([page("a", "1"), page("b", "1")])  # a server sending the same token forever
    monkeypatch.setattr(program, "call", looping)
    assert program.main(["stop", "research", "10", "deployments=gpustack.dev/workload in (nb)"]) == 1
    assert "repeated continue token" in capsys.readouterr().err
    assert len([c for c in looping.calls if "/deployments?" in c[1]]) <= 2 * program.ATTEMPTS


@pytest.mark.parametrize("state", ["api-configmap-as-list.json", "api-configmap-data-list.json"])
@pytest.mark.parametrize("action", ["stop", "start"])
def test_a_state_configmap_of_the_wrong_shape_is_reported_not_rewritten(monkeypatch, capsys, state, action):
    good = {"items": [{"metadata": {"name": "good", "resourceVersion": "1"}, "spec": {"replicas": 2 if action == "stop"
                                                                                          else 0}}]}
    server = Server([good], attack(state))
    monkeypatch.setattr(program, "call", server)
    assert program.main([action, "research", "10", "deployments=gpustack.dev/workload in (nb)"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "wrong type" in err
    assert not [c for c in server.calls if c[0] in ("PUT", "PATCH")]


@pytest.mark.parametrize("answer", [[1], "x", {"metadata": {"name": "notebooks", "resourceVersion": "7"}, "spec": "x"},
                                    {"metadata": {"name": "../../api/v1/x", "resourceVersion": "7"}, "spec": {}},
                                    {"metadata": {"name": "notebooks", "resourceVersion": "7"}, "status": []}])
def test_the_idle_job_refuses_an_object_of_the_wrong_shape(monkeypatch, capsys, answer):
    calls = []

    def api(method, path, body=None, content_type=""):
        calls.append((method, path))
        return answer
    monkeypatch.setattr(program, "call", api)
    with pytest.raises(program.Refused):
        idle.stop("research", "statefulsets", "notebooks")
    assert [c[0] for c in calls] == ["GET"]
