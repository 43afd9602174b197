"""Bounded mutation fuzz of what waves 1-2 added: the catalog reader, the price-feed parsers, the
manifests reader and the in-cluster programs' handling of API and Prometheus answers.

Each input is a recorded, valid input (the tests' fixtures) with one field replaced by anything, or a
few bytes changed. The only outcomes allowed are the command's exit codes 0, 1 and 2 (a result, findings,
located problems); any other exception is a bug. At the end the counts are printed per target: inputs
tried, exits seen, the slowest input and the process's peak memory (numbers, not timed asserts).
"""

from __future__ import annotations

import collections
import copy
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE
from gpustack.catalog import load_catalog, read_catalog_file
from gpustack.catalog.feeds import RecordedPages, RefreshError
from gpustack.errors import SpecError, UsageError
from gpustack.guardrails.manifests import check
from gpustack.incluster import autostop, idle
from gpustack.plan import build_plan
from gpustack.render.workloads import patch, wirings
from gpustack.spec import load_spec
from gpustack.spec.yamlsource import parse_all
from strategic_merge import merge, plain_object
from test_loader_fuzz import paths, values

FIXTURES = Path(__file__).parent / "fixtures"
# Per target: the suite's short bounded run (seconds); GPUSTACK_FUZZ_EXAMPLES=2000 for a longer one.
EXAMPLES = int(os.environ.get("GPUSTACK_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,  # same inputs every run
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SEEN: dict[str, dict] = collections.defaultdict(lambda: {"inputs": 0, "exits": collections.Counter(), "slowest": 0.0})
CATALOG = load_catalog()


def record(target: str, started: float, code: int) -> None:
    assert code in (0, 1, 2), code
    seen = SEEN[target]
    seen["inputs"] += 1
    seen["exits"][code] += 1
    seen["slowest"] = max(seen["slowest"], time.perf_counter() - started)


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for target, seen in sorted(SEEN.items()):
        line = (f"fuzz {target}: {seen['inputs']} inputs, exits {dict(sorted(seen['exits'].items()))}, "
                f"slowest {seen['slowest']:.3f} s, peak RSS {peak:.0f} MiB")
        if reporter:
            reporter.write_line(line)


def replaced(doc, path: tuple, value):
    if not path:
        return value
    doc = copy.deepcopy(doc)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return doc


def mutate_bytes(text: bytes, edits: list[tuple[int, bytes]]) -> bytes:
    for where, insert in edits:
        at = where % (len(text) + 1)
        text = text[:at] + insert + text[at + len(insert):]
    return text


edits = st.lists(st.tuples(st.integers(min_value=0), st.binary(min_size=1, max_size=4)), min_size=1, max_size=4)

# -- the catalog reader ------------------------------------------------------------------------------
USER_CATALOG = (b"cloud,region,instance_type,gpu,gpus,vcpus,memory_gib,on_demand_usd,spot_usd,source,note,as_of\n"
                b"aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,0.5,test row,,2026-11-20\n"
                b"azure,eastus,Standard_NC4as_T4_v3,T4,1,4,28,0.526,,test row,\"a, note\",2026-11\n")


def with_cell(line: int, column: int, value: str) -> bytes:
    rows = USER_CATALOG.decode().splitlines()
    cells = rows[line % len(rows)].split(",")
    cells[column % len(cells)] = value
    rows[line % len(rows)] = ",".join(cells)
    return "\n".join(rows).encode("utf-8", "surrogatepass")


catalogs = st.one_of(st.builds(mutate_bytes, st.just(USER_CATALOG), edits),
                     st.builds(with_cell, st.integers(1, 2), st.integers(0, 11),
                               st.one_of(st.text(max_size=30), st.sampled_from(["1e400", "-1", "nan", "inf", "9" * 5000,
                                                                               "H100", "2026-13-01", "\x1b[2J"]))))


@FUZZ
@given(catalogs)
def test_catalog_reader(text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mine.csv"
        path.write_bytes(text)
        started = time.perf_counter()
        _, problems = read_catalog_file(str(path), CATALOG)
        for problem in problems:
            text = str(problem)
            assert len(text) <= 600 and not any(c in text for c in "\x1b\x07\x00"), text
        record("catalog reader", started, 2 if problems else 0)


# -- the price-feed parsers ------------------------------------------------------------------------
FEEDS = {"aws": ("us-east-1", "products-1.json"), "azure": ("eastus", "prices-1.json"),
         "gcp": ("us-central1", "skus-1.json"), "oci": ("us-ashburn-1", "products-1.json")}
PAGES = {cloud: json.loads((FIXTURES / "prices" / cloud / page).read_text()) for cloud, (_, page) in FEEDS.items()}
# A cloud first, then a field of its page: every feed gets its share whatever its page's size.
PAGE_PATHS = st.sampled_from(sorted(FEEDS)).flatmap(lambda c: st.tuples(st.just(c), st.sampled_from(paths(PAGES[c]))))


@FUZZ
@given(PAGE_PATHS, values)
def test_price_feed_parsers(where, value):
    cloud, path = where
    region, name = FEEDS[cloud]
    page = replaced(PAGES[cloud], path, value)
    facts = {r.name: r for r in CATALOG.instances if r.cloud == cloud}
    feed = __import__(f"gpustack.clouds.{cloud}.prices", fromlist=["refresh"])
    with tempfile.TemporaryDirectory() as folder:
        for recorded in (FIXTURES / "prices" / cloud).iterdir():  # the stream's other pages as recorded
            (Path(folder) / recorded.name).write_bytes(recorded.read_bytes())
        (Path(folder) / name).write_text(json.dumps(page))
        started = time.perf_counter()
        try:
            feed.refresh(RecordedPages(Path(folder)), region, facts)
            code = 0
        except RefreshError:
            code = 2
        record(f"price feed {cloud}", started, code)


# -- the manifests reader ----------------------------------------------------------------------------
PLAN = build_plan(load_spec(EXAMPLE))
TARGET = PLAN.target("aws-prod")
OBJECTS = [merge(plain_object(w.kind, w.workload, w.namespace), patch(w)) for w in wirings(TARGET)]
OBJECT_PATHS = [(i, path) for i, obj in enumerate(OBJECTS) for path in paths(obj)]


@FUZZ
@given(st.sampled_from(OBJECT_PATHS), values)
def test_manifests_reader(where, value):
    index, path = where
    objects = list(OBJECTS)
    objects[index] = replaced(objects[index], path, value)
    try:
        text = yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        return
    started = time.perf_counter()
    try:
        findings = check(TARGET, [d for d in parse_all(text, "team.yaml") if d.data is not None])
        code = 1 if findings else 0
    except (SpecError, UsageError):
        code = 2
    record("manifests reader", started, code)


# -- the in-cluster programs' response handling -----------------------------------------------------
DEPLOYMENT = {"metadata": {"name": "chat", "resourceVersion": "7", "annotations": {}},
              "spec": {"replicas": 3}, "status": {"conditions": [], "active": [{"name": "j"}]}}
ANSWERS = {"list": {"items": [DEPLOYMENT, copy.deepcopy(DEPLOYMENT)], "metadata": {"continue": ""}},
           "state": {"metadata": {"name": autostop.STATE, "resourceVersion": "1"}, "data": {"deployments.chat": "3"}},
           "object": DEPLOYMENT}
ANSWER_PATHS = [(kind, path) for kind, answer in ANSWERS.items() for path in paths(answer)]
PROMETHEUS = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "1"]}]}}


@FUZZ
@given(st.sampled_from(ANSWER_PATHS), values, st.sampled_from(["stop", "start"]),
       st.sampled_from(["deployments=gpustack.dev/workload in (chat)", "cronjobs/chat", "notebooks=gpustack.dev/"
                        "workload in (chat)"]))
def test_in_cluster_programs_answers(monkeypatch_module, where, value, action, selection):
    kind, path = where
    answers = {**ANSWERS, kind: replaced(ANSWERS[kind], path, value)}

    def api(method, path, body=None, content_type=""):
        if "/configmaps/" in path:
            return copy.deepcopy(answers["state"])
        if method == "PATCH":
            return {}
        return copy.deepcopy(answers["list" if "?" in path else "object"])
    monkeypatch_module.setattr(autostop, "call", api)
    started = time.perf_counter()
    record("in-cluster auto-stop", started, autostop.main([action, "research", "10", selection]))


@FUZZ
@given(st.sampled_from(paths(PROMETHEUS)), values)
def test_idle_prometheus_answers(where, value):
    answer = replaced(PROMETHEUS, where, value)
    started = time.perf_counter()
    try:
        idle.is_idle(answer)
        code = 0
    except ValueError:
        code = 1
    record("in-cluster idle (Prometheus)", started, code)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patcher:
        yield patcher
