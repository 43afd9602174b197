"""`gpustack report` as a user runs it: JSON figures, planner-priced recommendations, --write-spec then
`gpustack diff`, --record/--input, and located errors."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
import yaml

from gpustack.cli import main
from gpustack.plan import build_plan
from gpustack.report.build import build_report
from gpustack.report.recommend import spec_planner
from gpustack.report.window import make_window
from gpustack.spec import load_spec, load_text
from report_answers import NamedAnswers, series, serve

SPEC = """\
# The serving platform: comments and key order must survive --write-spec
version: 1
name: smoke
targets:
  - name: aws-prod
    cloud: aws
    region: us-east-1
    cluster: ml
    settings:
      subnet_ids: [subnet-0a1b2c3d4e5f60718]
workloads:
  # chat: the floor is a guess
  - name: chat
    kind: inference
    gpu: T4
    gpus: 1
    replicas: {min: 6, max: 8}   # guessed floor
  - name: embed
    kind: inference
    gpu: T4
    gpu_fraction: 0.5
    replicas: 4
  - name: lab            # data science notebooks
    kind: notebook
    gpu: T4
    gpu_fraction: 0.25
    replicas: 4
"""
UNTIL = "2026-11-30T00:00:00Z"
END = int(datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC).timestamp())
STEP, STEPS = 60, 1440
START = END - STEPS * STEP
WL = "label_gpustack_dev_workload"
POOL = "label_gpustack_dev_pool"


def spans(labels: dict[str, str], first: int = 0, end: int = STEPS) -> list[dict[str, object]]:
    """A series with a value in steps first..end - 1 of the day."""
    return [series(labels, dict.fromkeys(range(first, end), 1), START, STEP)]


def pods(workload: str, count: int, namespace: str = "default") -> dict[str, list[dict[str, object]]]:
    """`count` pods of the workload, labelled and Running all day."""
    out: dict[str, list[dict[str, object]]] = {"pod-labels": [], "pod-running": []}
    for k in range(count):
        pod = {"namespace": namespace, "pod": f"{workload}-{k}", "uid": f"{workload}-uid-{k}"}
        out["pod-labels"] += spans({**pod, WL: workload})
        out["pod-running"] += spans({**pod, "phase": "Running"})
    return out


def merged(*parts: dict[str, list[dict[str, object]]]) -> dict[str, list[dict[str, object]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for part in parts:
        for name, answers in part.items():
            out.setdefault(name, []).extend(answers)
    return out


def _answers() -> NamedAnswers:
    every = range(STEPS)

    def per_workload(counts: dict[str, int]) -> list[dict[str, object]]:
        return [series({"namespace": "default", WL: w}, dict.fromkeys(every, n), START, STEP) for w, n in counts.items()]

    plan = build_plan(load_text(SPEC, "spec.yaml")).target("aws-prod")
    idle = [series({"namespace": "default", "pod": f"lab-{k}", "gpu": "0"}, dict.fromkeys(every, 3), START, STEP)
            for k in range(4)]
    # memory: embed-0's GPU at 1,000 MiB all day, chat-0's two at 9,000 MiB
    memory = [series({"namespace": "default", "pod": "embed-0", "gpu": "0"}, dict.fromkeys(every, 1000), START, STEP),
              *(series({"namespace": "default", "pod": "chat-0", "gpu": gpu}, dict.fromkeys(every, 9000), START, STEP)
                for gpu in "01")]
    nodes = [answer for p in plan.pools for k in range(max(p.min_nodes, 1))
             for answer in spans({"node": f"{p.name}-{k}", POOL: p.name})]
    return NamedAnswers({
        **merged(pods("chat", 2), pods("embed", 1), pods("lab", 4)),
        "utilisation-dcgm": per_workload({"chat": 2, "embed": 1, "lab": 4}),
        "idle-dcgm-10": idle,
        "memory-dcgm-steps": memory,
        "pool-nodes": nodes,
    })


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


@pytest.fixture
def url(spec: Path) -> object:
    answers = _answers()
    loaded = load_spec(spec)
    plan = build_plan(loaded)
    build_report(loaded, SPEC, plan, "aws-prod", answers, make_window("1d", UNTIL, "1m"), 0.95,
                 spec_planner(str(spec), (), spec.parent, plan))  # learns the PromQL of every name
    with serve(answers) as address:
        yield address


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], spec: Path, *more: str) -> dict[str, object]:
    code, out, err = _report(capsys, str(spec), "--target", "aws-prod", "--since", "1d", "--until", UNTIL,
                             "--format", "json", *more)
    assert code == 0, err
    report: dict[str, object] = json.loads(out)
    return report


def test_figures_per_workload_and_pool(capsys: pytest.CaptureFixture[str], spec: Path, url: str) -> None:
    report = _json(capsys, spec, "--prometheus", url)
    assert report["window"] == {"start": "2026-11-29T00:00:00Z", "end": "2026-11-30T00:00:00Z", "step_seconds": 60}
    workloads = {w["name"]: w for w in report["workloads"]}  # type: ignore[attr-defined]
    chat, lab = workloads["chat"], workloads["lab"]
    assert chat["replicas"] == {"min": 2, "p50": 2, "p95": 2, "max": 2, "floor": 2}
    assert chat["planned"] == {"min": 6, "max": 8}
    assert chat["gpu_hours"] == 48.0  # 2 whole GPUs for 24 hours
    assert chat["fb_used_p95_gib"] == round(9000 / 1024, 3)
    assert lab["gpus_per_replica"] == 0.25 and lab["gpu_hours"] == 24.0
    assert lab["idle_gpu_hours"] == 24.0  # 4 sharers below 10% all day, each at its 0.25 share
    assert lab["outside_window_gpu_hours"] is None  # no schedule
    pools = report["pools"]
    assert [p["name"] for p in pools] == sorted(p["name"] for p in pools)  # type: ignore[attr-defined]


def _with(text: str, workload: str, field: str, value: object) -> str:
    doc = yaml.safe_load(text)
    [w] = [w for w in doc["workloads"] if w["name"] == workload]
    if field.startswith("replicas."):
        replicas = w.get("replicas", 1)
        bounds = dict(replicas) if isinstance(replicas, dict) else {"min": replicas, "max": replicas}
        w["replicas"] = {**bounds, field.split(".")[1]: value}
        w["replicas"]["min"] = min(w["replicas"]["min"], w["replicas"]["max"])  # as the report's reason says
    else:
        w[field] = value
    return yaml.safe_dump(doc, sort_keys=False)


def test_each_saving_is_the_planners_for_the_spec_with_that_change(capsys: pytest.CaptureFixture[str], spec: Path,
                                                                   url: str) -> None:
    report = _json(capsys, spec, "--prometheus", url)
    base = build_plan(load_text(SPEC, "spec.yaml"))
    before = base.target("aws-prod").cost.planned_monthly_usd
    found = {(r["workload"], r["field"]): r for r in report["recommendations"]}  # type: ignore[attr-defined]
    assert found[("chat", "replicas.min")]["from"] == 6 and found[("chat", "replicas.min")]["to"] == 2
    assert found[("chat", "replicas.max")]["from"] == 8 and found[("chat", "replicas.max")]["to"] == 2
    assert found[("embed", "gpu_fraction")]["to"] == 0.1  # 1000 MiB + 20% of a T4's memory, in steps of 0.05
    assert found[("lab", "schedule")]["to"]["days"] == "Mon-Fri"
    for (workload, field), rec in found.items():
        changed = build_plan(load_text(_with(SPEC, workload, field, rec["to"]), "x.yaml"), current=base)
        expected = round(before - changed.target("aws-prod").cost.planned_monthly_usd, 2)
        assert rec["monthly_saving_usd"] == expected, (workload, field)
        # A lower floor alone may save nothing as planned (the burst above it is priced at its peak); it is
        # kept for the commitment it shrinks. Every other recommendation saves.
        assert rec["monthly_saving_usd"] >= 0 if field == "replicas.min" else rec["monthly_saving_usd"] > 0


def test_the_commitment_is_resized_on_the_measured_floor(capsys: pytest.CaptureFixture[str], spec: Path,
                                                         url: str) -> None:
    commitment = _json(capsys, spec, "--prometheus", url)["commitment"]
    assert commitment["floors"] == {"chat": 2, "embed": 1}  # type: ignore[index]
    [planned] = commitment["planned"]  # type: ignore[index]
    [measured] = commitment["measured"]  # type: ignore[index]
    assert measured["quantity"] < planned["quantity"]
    assert measured["break_even_utilisation"] == planned["break_even_utilisation"]


def test_write_spec_keeps_comments_and_diff_shows_the_saving(capsys: pytest.CaptureFixture[str], spec: Path,
                                                            url: str, tmp_path: Path) -> None:
    out = tmp_path / "measured.yaml"
    report = _json(capsys, spec, "--prometheus", url, "--write-spec", str(out))
    written = out.read_text()
    assert "# chat: the floor is a guess" in written and "# guessed floor" in written
    assert "replicas: {min: 2, max: 2}   # guessed floor" in written
    assert "    replicas: {min: 1, max: 1}\n" in written  # embed's one count became both measured bounds
    assert "  - name: lab            # data science notebooks" in written
    assert [line.split(":")[0] for line in written.splitlines()][:4] == ["# The serving platform", "version", "name",
                                                                       "targets"]
    after = build_plan(load_spec(out)).target("aws-prod").cost.planned_monthly_usd
    assert round(after, 2) == report["recommended_monthly_usd"]
    assert main(["diff", str(spec), str(out), "--format", "json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert "aws-prod" in json.dumps(diff)


def test_record_then_input_gives_the_same_report(capsys: pytest.CaptureFixture[str], spec: Path, url: str,
                                                 tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    live = _json(capsys, spec, "--prometheus", url, "--record", str(recorded))
    assert sorted({p.name.split("-1795")[0] for p in recorded.iterdir()})[:3] == ["idle-dcgm-10", "idle-dcgm-mig-10",
                                                                                   "memory-dcgm-count"]
    assert _json(capsys, spec, "--input", str(recorded)) == live
    code, _, err = _report(capsys, str(spec), "--target", "aws-prod", "--since", "2d", "--until", UNTIL,
                           "--input", str(recorded))
    assert code == 2 and "record again with the same --since, --until and --step" in err


def test_table_fits_120_columns_and_markdown_renders(capsys: pytest.CaptureFixture[str], spec: Path,
                                                     url: str) -> None:
    common = [str(spec), "--target", "aws-prod", "--since", "1d", "--until", UNTIL, "--prometheus", url]
    code, table, _ = _report(capsys, *common)
    assert code == 0
    assert max(len(line) for line in table.splitlines()) <= 120
    assert "replicas.min 6 -> 2" in table
    code, markdown, _ = _report(capsys, *common, "--format", "markdown")
    assert code == 0 and "### Recommendations" in markdown and "| `chat` |" in markdown


@pytest.mark.parametrize(("args", "message"), [
    (["--since", "7x"], "--since '7x' is not a duration"),
    (["--step", "0m"], "--step '0m' is not a duration"),
    (["--until", "yesterday"], "--until 'yesterday' is not a time"),
    (["--until", "2026-11-30T00:00:00"], "RFC 3339 with a zone"),
    (["--until", "2026-11-30T00:00:30Z"], "is not a whole number of --step 1m since 1970-01-01T00:00:00Z"),
    (["--since", "90s", "--step", "1m"], "--since 90s is not a whole number of --step 1m"),
    (["--target", "aws-prd"], "no target 'aws-prd' in the spec (did you mean 'aws-prod'?)"),
    (["--header", "X: a\nb"], "is not 'Name: value'"),
    (["--prometheus", "file:///etc/passwd"], "is not an http(s) URL"),
])
def test_located_errors(capsys: pytest.CaptureFixture[str], spec: Path, args: list[str], message: str) -> None:
    base = {"--target": "aws-prod", "--prometheus": "http://127.0.0.1:9"}
    for flag in ("--target", "--prometheus"):
        if flag in args:
            base.pop(flag)
    code, out, err = _report(capsys, str(spec), *[x for pair in base.items() for x in pair], *args)
    assert code == 2 and out == ""
    assert message in err
    assert "Traceback" not in err


def test_a_spec_error_is_located(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SPEC.replace("kind: notebook", "kind: notebok"))
    code, _, err = _report(capsys, str(bad), "--target", "aws-prod", "--prometheus", "http://127.0.0.1:9")
    assert code == 2 and f"{bad}:24:11: workloads[2].kind" in err and "did you mean 'notebook'" in err


def test_the_same_window_gives_the_same_bytes(capsys: pytest.CaptureFixture[str], spec: Path, url: str) -> None:
    common = [str(spec), "--target", "aws-prod", "--since", "1d", "--until", UNTIL, "--prometheus", url]
    for fmt in ("json", "table", "markdown"):
        first = _report(capsys, *common, "--format", fmt)
        assert _report(capsys, *common, "--format", fmt) == first


def test_docs_name_every_query_and_finding() -> None:
    import re

    from conftest import ROOT

    docs = (ROOT / "docs" / "report.md").read_text()
    source = (ROOT / "gpustack" / "report" / "observe.py").read_text()
    for kind in sorted(set(re.findall(r'Finding\("([a-z-]+)"', source))):
        assert f"| `{kind}` |" in docs, kind
    queries = (ROOT / "gpustack" / "report" / "queries.py").read_text()
    for name in sorted(set(re.findall(r'Query\(f?"([a-z-]+)', queries))):
        assert f"`{name}" in docs, name


def test_docs_hold_the_queries_as_sent() -> None:
    from conftest import ROOT

    from gpustack.report import queries

    docs = (ROOT / "docs" / "report.md").read_text()
    mine = {"default": ["chat", "notebooks"]}
    for query in (queries.pod_labels("60s", mine), queries.pod_running("60s", mine), queries.pod_placed("60s", mine),
                  queries.pool_nodes("60s", ["infer-l4-reserved-g6-xlarge", "infer-l4-ondemand-g6-xlarge"]),
                  *queries.idle_samples("dcgm", "60s", mine, 10),
                  *queries.memory_tiles("dcgm", "60s", "3570s", mine),
                  queries.memory_samples("dcgm", "60s", mine, ["chat-7d9f8b6c5d-x2k4q"]),
                  queries.steps_present(queries.pod_labels("60s", mine), "60s", "86370s")):
        assert f"# {query.name}\n{query.promql}\n" in docs, query.name


def test_a_change_to_a_workload_other_targets_run_names_them(tmp_path: Path) -> None:
    text = SPEC.replace("workloads:\n  # chat", """  - name: aws-dev
    cloud: aws
    region: us-east-1
    cluster: dev
    settings:
      subnet_ids: [subnet-0a1b2c3d4e5f60718]
    workloads: [chat]
workloads:
  # chat""")
    path = tmp_path / "two.yaml"
    path.write_text(text)
    loaded = load_spec(path)
    plan = build_plan(loaded)
    report, _ = build_report(loaded, text, plan, "aws-prod", _answers(), make_window("1d", UNTIL, "1m"), 0.95,
                             spec_planner(str(path), (), tmp_path, plan))
    reasons = {(r.workload, r.field): r.reason for r in report.recommendations}
    assert reasons[("chat", "replicas.max")].endswith("it also changes the workload on aws-dev (see gpustack diff)")
    assert "aws-dev" not in reasons[("lab", "schedule")]


FRACTIONAL = SPEC.split("workloads:\n  # chat")[0] + """workloads:
  - name: embed
    kind: inference
    gpu: T4
    gpu_fraction: 0.5
    sharing: fractional
    replicas: 2
"""


def _fractional_report(tmp_path: Path, answers: dict[str, list[dict[str, object]]]) -> dict[str, object]:
    path = tmp_path / "fractional.yaml"
    path.write_text(FRACTIONAL)
    loaded = load_spec(path)
    plan = build_plan(loaded)
    report, _ = build_report(loaded, FRACTIONAL, plan, "aws-prod", NamedAnswers(answers),
                             make_window("1d", UNTIL, "1m"), 0.95, spec_planner(str(path), (), tmp_path, plan))
    result: dict[str, object] = report.to_dict()
    return result


def test_fractional_pools_are_read_from_hamis_per_container_series(tmp_path: Path) -> None:
    mine = {"namespace": "default", WL: "embed"}
    every = range(STEPS)
    idle = [series({"namespace": "default", "pod": f"embed-{k}", "vdevice_index": "0"}, dict.fromkeys(range(60), 2), START, STEP)
            for k in range(2)]  # the first hour of each pod's container below 10%
    report = _fractional_report(tmp_path, {
        **pods("embed", 2),
        "utilisation-hami": [series(mine, dict.fromkeys(every, 2), START, STEP)],
        "idle-hami-10": idle,
        "memory-hami-steps": [series({"namespace": "default", "pod": "embed-0", "vdevice_index": str(k)},
                                     dict.fromkeys(every, 2048), START, STEP) for k in range(2)],
    })
    [embed] = report["workloads"]  # type: ignore[misc]
    assert embed["gpus_per_replica"] == 0.5
    assert embed["idle_gpu_hours"] == 1.0  # 2 containers x 1 hour x their 0.5 share
    assert embed["fb_used_p95_gib"] == 2.0


def test_fractional_pools_without_hami_series_are_unknown_with_the_missing_series(tmp_path: Path) -> None:
    mine = {"namespace": "default", WL: "embed"}
    report = _fractional_report(tmp_path, {
        **pods("embed", 2),
        "utilisation-dcgm": [series(mine, dict.fromkeys(range(STEPS), 2), START, STEP)],  # not read for HAMi pools
    })
    [embed] = report["workloads"]  # type: ignore[misc]
    assert embed["gpu_hours"] == 24.0 and embed["idle_gpu_hours"] is None and embed["fb_used_p95_gib"] is None
    messages = [f["message"] for f in report["findings"] if f.get("workload") == "embed"]  # type: ignore[attr-defined]
    assert any("hami_container_device_utilization_ratio" in m for m in messages)
    assert any("hami_vgpu_memory_used_bytes" in m for m in messages)


def test_a_pod_name_from_the_answer_that_is_no_kubernetes_name_never_enters_a_query(spec: Path) -> None:
    """A pod labelled in only part of a chunk has its steps (and memory) asked for again by name: a name that is
    no Kubernetes name is refused before it reaches a query."""
    from gpustack.report.client import ReportError

    answers = _answers()
    bad = {"namespace": "default", "pod": 'x"} or vector(1) or {x="'}
    answers.answers["pod-labels"] += spans({**bad, "uid": "u-bad", WL: "chat"}, 0, STEPS // 3)
    answers.answers["memory-dcgm-steps"].append(series({**bad, "gpu": "0"}, dict.fromkeys(range(10), 100), START, STEP))
    loaded = load_spec(spec)
    plan = build_plan(loaded)
    # Its labels series covers a third of the day, part of a chunk, so its steps are asked for by name: refused
    # there, first.
    with pytest.raises(ReportError, match="query pod-labels-edges: pod not a DNS name"):
        build_report(loaded, SPEC, plan, "aws-prod", answers, make_window("1d", UNTIL, "1m"), 0.95,
                     spec_planner(str(spec), (), spec.parent, plan))
    assert not any("vector(1)" in query for query in answers.promql)


def test_plans_priced_side_by_side_are_the_planners_costs_in_order(spec: Path) -> None:
    """Enough candidate specs are planned in forked processes (Linux, more than one CPU): the same costs, in the
    order asked, as planning them one after another, an invalid spec still None."""
    from gpustack.report import recommend

    loaded = load_spec(spec)
    planner = spec_planner(str(spec), (), spec.parent, build_plan(loaded))
    texts = [SPEC.replace("{min: 6, max: 8}", f"{{min: 6, max: {k}}}") for k in range(6, 14)] + ["version: [1"]
    assert len(texts) >= recommend.PARALLEL_PLANS
    one_by_one = [recommend._planned(planner, text, "aws-prod") for text in texts]
    assert recommend.plan_costs(planner, texts, "aws-prod") == one_by_one
    assert one_by_one[-1] is None and len(set(one_by_one[:-1])) > 1
