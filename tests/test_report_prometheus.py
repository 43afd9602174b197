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

import json
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator

import pytest

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


def test_the_week_shows_what_the_report_must_find(written, facts):
    """The week holds each case the report must show: a floor below replicas.min, a burst, idle spans
    long and short, outside-window hours and a pool without DCGM series."""
    expected = week.expected_report(written, facts)
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
    assert counts["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == 3 and counts["kube_node_labels"] == 22
