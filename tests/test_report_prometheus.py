"""`gpustack report` against a real Prometheus server holding the test week (tests/report_week.py).

The server is Debian's `prometheus` with the week backfilled by promtool (tests/prometheus_server.py),
started once for this module on 127.0.0.1 and stopped by its PID. The expected figures come from the
series the test wrote, by report_week.expected_report, not from the code under test.

The 5-minute lookback: each sample sits at the middle of its one-minute step and the report reads a step
with range functions over exactly that step, so a series that stopped is not carried forward by
Prometheus's lookback (backfilled blocks have no staleness markers). test_one_step_ranges_do_not_smear
shows the difference on the pod deleted on Wednesday at 14:37.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import report_week as week
from prometheus_server import PrometheusServer, prometheus_from_openmetrics, require_binaries


@pytest.fixture(scope="module")
def facts() -> week.PlanFacts:
    return week.plan_facts()


@pytest.fixture(scope="module")
def written(facts: week.PlanFacts) -> list[week.Series]:
    return week.week_series(facts)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, written: list[week.Series]) -> Iterator[PrometheusServer]:
    require_binaries()
    workdir = tmp_path_factory.mktemp("prometheus-week")
    openmetrics = workdir / "week.om"
    week.write_openmetrics(written, openmetrics)
    with prometheus_from_openmetrics(openmetrics, workdir) as running:
        openmetrics.unlink()  # a few hundred MB; the blocks hold it now
        yield running


def query(server: PrometheusServer, path: str, **params: str | float) -> list[dict]:
    url = f"{server.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=60) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def _key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def test_server_holds_every_sample_written(server, written):
    """Per series, the server counts exactly the samples written in the window."""
    end = week.START_S + week.STEPS * week.STEP_S
    for family in sorted({s.name for s in written}):
        answers = query(server, "query", query=f"count_over_time({family}[7d])", time=end)
        served = {_key(a["metric"]): int(a["value"][1]) for a in answers}
        expected = {tuple((k, v) for k, v in s.labels if v != ""): sum(1 for _ in s.samples())
                    for s in written if s.name == family}
        assert served == expected, family


def _running_chat(server: PrometheusServer, expr: str, first: int, last: int) -> dict[int, int]:
    """Steps first..last (inclusive) -> value of `expr`, evaluated at each step's end."""
    answers = query(server, "query_range", query=expr, start=week.START_S + (first + 1) * week.STEP_S,
                    end=week.START_S + (last + 1) * week.STEP_S, step=week.STEP_S)
    [answer] = answers
    return {(int(t) - week.START_S) // week.STEP_S - 1: int(float(v)) for t, v in answer["values"]}


def test_one_step_ranges_do_not_smear(server, written):
    """The chat pod deleted on Wednesday at 14:37 stops counting at 14:37 when each step is read with a
    one-step range; an instant selector would carry it for the 5-minute lookback."""
    selector = 'kube_pod_status_phase{namespace="serving",phase="Running",pod=~"chat-.*"}'
    first, last = week.at(2, 14, 30), week.at(2, 14, 50)
    by_step = _running_chat(server, f"sum(max_over_time({selector}[1m]))", first, last)
    running = [s for s in written if s.name == "kube_pod_status_phase" and s.label("phase") == "Running"
               and s.label("pod").startswith("chat-")]
    expected = {i: int(sum(s.values[i] or 0 for s in running)) for i in range(first, last + 1)}
    assert by_step == expected
    assert by_step[week.at(2, 14, 36)] - by_step[week.at(2, 14, 37)] == 1  # the deleted pod
    assert by_step[week.at(2, 14, 41)] == by_step[week.at(2, 14, 36)]  # its replacement runs from 14:41
    # The lookback an instant selector applies keeps the deleted pod (its last sample at 14:36:30).
    instant = _running_chat(server, f"sum({selector} == 1)", first, last)
    assert instant[week.at(2, 14, 37)] == by_step[week.at(2, 14, 37)] + 1


def test_the_week_shows_what_the_report_must_find(written, facts, expected):
    """The week holds each case the report must show: a floor below replicas.min, a burst, idle spans
    long and short, outside-window hours and a pool without DCGM series."""
    figures = {w["name"]: w for w in expected["workloads"]}
    assert figures["chat"]["replicas"]["floor"] == 2 < figures["chat"]["planned"]["min"] == 4
    assert figures["chat"]["replicas"]["max"] == 6 > figures["chat"]["planned"]["min"]
    # chat's counted idle spans: 40 minutes on Tuesday and an hour on Monday; not the 10 minutes, the
    # 20 minutes split by a missed scrape, or the 30 minutes at exactly 10%.
    assert figures["chat"]["idle_gpu_hours"] == pytest.approx(100 / 60)
    assert figures["embed"]["idle_gpu_hours"] == pytest.approx(2 * 6 * facts.gpus_per_replica["embed"])
    # notebooks: four lunch hours (Mon-Thu) for 4 sharers, Friday's lunch for 4, and the weekend's 55 hours
    # for the 2 left running, at a quarter GPU each; the 20 minutes in the afternoon do not count.
    assert figures["notebooks"]["idle_gpu_hours"] == pytest.approx((5 * 4 * 1 + 2 * 55) * 0.25)
    # Outside the window (08:00-18:00 Berlin = 07:00-17:00 UTC): Monday's late 30 minutes for 4, and
    # the weekend (Friday 17:00 to Monday 00:00 UTC) for 2.
    assert figures["notebooks"]["outside_window_gpu_hours"] == pytest.approx((4 * 0.5 + 2 * 55) * 0.25)
    assert figures["trainer"]["idle_gpu_hours"] is None and figures["trainer"]["fb_used_p95_gib"] is None
    pools = {p["name"]: p for p in expected["pools"]}
    assert pools[facts.chat_burst]["node_hours"] == pytest.approx(5 * 2 * (3 + 28 / 60))
    assert pools[facts.chat_reserved]["reserved_node_hours_used"] < pools[facts.chat_reserved]["node_hours"]
    counts = Counter(s.name for s in written)
    assert counts["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == 3 and counts["kube_node_labels"] == 24
    assert figures["ranker"]["idle_gpu_hours"] == pytest.approx(2 * facts.gpus_per_replica["ranker"])
    assert figures["sandbox"]["idle_gpu_hours"] > 0.9 * figures["sandbox"]["gpu_hours"]


# --- `gpustack report` against the server ------------------------------------------------------

TOLERANCE = 0.01


def gpustack_report(*source: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`gpustack report` on the week in its own process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "gpustack", "report", str(week.SPEC), "--target", week.TARGET,
                           *source, "--since", week.SINCE, "--until", week.UNTIL, "--step", "1m",
                           "--format", "json", *extra], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report-recorded") / "answers"


@pytest.fixture(scope="module")
def report_run(server, recorded) -> subprocess.CompletedProcess[str]:
    return gpustack_report("--prometheus", server.url, extra=("--record", str(recorded)))


@pytest.fixture(scope="module")
def report(report_run) -> dict:
    assert report_run.returncode == 0, report_run.stderr
    return json.loads(report_run.stdout)


@pytest.fixture(scope="module")
def expected(written, facts) -> dict:
    return week.expected_report(written, facts)


def _close(got: object, want: object) -> bool:
    if want is None or got is None:
        return got is want
    if isinstance(want, float) or isinstance(got, float):
        return abs(float(got) - float(want)) <= TOLERANCE  # type: ignore[arg-type]
    return got == want


def _differences(got: dict, want: dict, path: str = "") -> list[str]:
    out = []
    for key, value in want.items():
        here = f"{path}.{key}"
        if isinstance(value, dict):
            out += _differences(got.get(key) or {}, value, here)
        elif not _close(got.get(key), value):
            out.append(f"{here}: report {got.get(key)!r}, from the series {value!r}")
    return out


def test_window_and_names(report, expected):
    assert report["target"] == expected["target"] and report["window"] == expected["window"]
    assert [w["name"] for w in report["workloads"]] == [w["name"] for w in expected["workloads"]]
    assert [p["name"] for p in report["pools"]] == [p["name"] for p in expected["pools"]]


def test_workload_figures_are_the_series(report, expected):
    """Replicas (min, p50, p95, max, floor), planned, GPUs per replica, GPU-hours, idle and outside-window
    GPU-hours and the GPU memory p95, to 0.01, for every workload."""
    got = {w["name"]: w for w in report["workloads"]}
    problems = [d for w in expected["workloads"] for d in _differences(got[w["name"]], w, w["name"])]
    assert problems == []


POOL_FIGURES = ("node_hours", "cost_usd", "planned_cost_usd")


def test_pool_figures_are_the_series(report, expected):
    """Node-hours, their cost at the plan's price and the plan's cost for the window, per pool."""
    got = {p["name"]: p for p in report["pools"]}
    problems = [d for p in expected["pools"]
                for d in _differences(got[p["name"]], {k: p[k] for k in POOL_FIGURES}, p["name"])]
    assert problems == []


def test_reserved_node_hours_used_are_the_series(report, expected, facts):
    """How much of each reservation carried pods of the spec's workloads (the DaemonSet pod on every node
    does not count); null for pools that are not reserved."""
    got = {p["name"]: p["reserved_node_hours_used"] for p in report["pools"]}
    want = {p["name"]: p["reserved_node_hours_used"] for p in expected["pools"]}
    assert want[facts.chat_reserved] < 4 * 168  # chat's nights at 2 replicas leave two nodes empty
    assert {k: v is None for k, v in got.items()} == {k: v is None for k, v in want.items()}
    assert [k for k in want if not _close(got[k], want[k])] == [], (got, want)


def _findings(report: dict, kind: str, subject: str) -> list[str]:
    return [f["message"] for f in report["findings"]
            if f["kind"] == kind and subject in (f.get("workload"), f.get("pool"))]


def test_findings_name_what_the_cluster_did_not_do(report, expected):
    figures = {w["name"]: w for w in expected["workloads"]}
    # chat's floor of 4 against the 2 measured.
    [floor] = _findings(report, "floor-unused", "chat")
    assert "4" in floor and "2" in floor
    # The notebooks that ran all weekend: auto-stop did not stop them.
    [outside] = _findings(report, "outside-window", "notebooks")
    assert f"{figures['notebooks']['outside_window_gpu_hours']:.2f}" in outside
    assert not _findings(report, "outside-window", "sandbox")  # no schedule, nothing outside it
    # trainer's pool runs no DCGM exporter: its unknowns are named with the series missing.
    missing = " ".join(_findings(report, "missing-series", "trainer"))
    assert "DCGM_FI_DEV_GPU_UTIL" in missing and "DCGM_FI_DEV_FB_USED" in missing
    assert not [f for f in report["findings"] if f["kind"] == "missing-series" and f.get("workload") != "trainer"]


def test_missing_dcgm_finding_names_the_exporter_flag(report):
    """The exporter flag that maps DCGM series to pods: dcgm-exporter `--kubernetes` (-k, env
    DCGM_EXPORTER_KUBERNETES; NVIDIA/dcgm-exporter d5e5f510 pkg/cmd/app.go, CLIKubernetes)."""
    missing = " ".join(_findings(report, "missing-series", "trainer"))
    assert "--kubernetes" in missing, missing


def _planned_monthly(doc: dict, tmp_path: Path, name: str) -> float:
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return float(build_plan(load_spec(path)).target(week.TARGET).cost.planned_monthly_usd)


def _with(doc: dict, workload: str, field: str, value: object) -> dict:
    changed = copy.deepcopy(doc)
    [w] = [w for w in changed["workloads"] if w["name"] == workload]
    *parents, key = field.split(".")  # replicas.min, replicas.max, schedule, mig, ...
    for parent in parents:
        w = w[parent]
    w[key] = value
    return changed


def test_recommendation_savings_are_the_planners(report, tmp_path):
    """Each saving is the planner's: the spec planned with that one change, subtracted from the spec's plan.
    sandbox, idle most of the week without a schedule, gets one."""
    doc = yaml.safe_load(week.SPEC.read_text(encoding="utf-8"))
    before = _planned_monthly(doc, tmp_path, "spec.yaml")
    assert [r["field"] for r in report["recommendations"] if r["workload"] == "sandbox"] == ["schedule"]
    for k, r in enumerate(report["recommendations"]):
        after = _planned_monthly(_with(doc, r["workload"], r["field"], r["to"]), tmp_path, f"changed-{k}.yaml")
        assert r["monthly_saving_usd"] == pytest.approx(before - after, abs=TOLERANCE), r


def test_commitment_is_resized_on_the_measured_floor(report, tmp_path, expected):
    """commitment.measured is the planner's commitment for the spec with the measured floors of its inference
    workloads (chat: 2)."""
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    doc = yaml.safe_load(week.SPEC.read_text(encoding="utf-8"))
    inference = {w["name"] for w in doc["workloads"] if w["kind"] == "inference"}
    floors = {w["name"]: w["replicas"]["floor"] for w in expected["workloads"] if w["name"] in inference}
    assert report["commitment"]["floors"] == floors
    planned_min = {w["name"]: w["planned"]["min"] for w in expected["workloads"]}
    for name, floor in floors.items():
        if floor < planned_min[name]:  # only floors measured below replicas.min change the commitment
            doc = _with(doc, name, "replicas.min", floor)
    (tmp_path / "floors.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    lines = build_plan(load_spec(tmp_path / "floors.yaml")).target(week.TARGET).cost.commitment_recommendations
    assert [(c["instance_type"], c["quantity"]) for c in report["commitment"]["measured"]] == [
        (c.instance_type, c.quantity) for c in lines]
    assert [c["monthly_saving_usd"] for c in report["commitment"]["measured"]] == pytest.approx(
        [c.monthly_saving_usd for c in lines], abs=TOLERANCE)


def test_the_json_is_the_same_on_a_second_run(server, report_run):
    again = gpustack_report("--prometheus", server.url)
    assert again.returncode == 0, again.stderr
    assert again.stdout == report_run.stdout


def test_recorded_answers_replay_the_same_json(report_run, recorded):
    """--record DIR then --input DIR: the same report without the server."""
    replayed = gpustack_report("--input", str(recorded))
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == report_run.stdout


def test_replicas_min_follows_the_measured_floor(report, expected):
    [floor] = [r for r in report["recommendations"] if r["workload"] == "chat" and r["field"] == "replicas.min"]
    chat = next(w for w in expected["workloads"] if w["name"] == "chat")
    assert (floor["from"], floor["to"]) == (chat["planned"]["min"], chat["replicas"]["floor"])


def test_floor_quantile_is_the_share_of_steps(server, written, facts):
    """--floor-quantile 0.5: chat ran at least 3 replicas in half the week (its days), so its floor is 3."""
    run = gpustack_report("--prometheus", server.url, extra=("--floor-quantile", "0.5"))
    assert run.returncode == 0, run.stderr
    floors = {w["name"]: w["replicas"]["floor"] for w in json.loads(run.stdout)["workloads"]}
    want = {w["name"]: w["replicas"]["floor"] for w in week.expected_report(written, facts, floor_quantile=0.5)["workloads"]}
    assert floors == want and want["chat"] == 3
