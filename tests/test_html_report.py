"""`gpustack report --format html`: the report's figures on one page, planned against measured."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpustack.cli import main
from gpustack.output.html_report import render_report_html
from gpustack.output.htmlpage import cents
from test_html import HOSTILE, _assert_inert, parsed
from test_report_cli import UNTIL, spec, url  # noqa: F401 - the fixtures


def _run(capsys: pytest.CaptureFixture[str], spec: Path, url: str, fmt: str) -> str:  # noqa: F811
    code = main(["report", str(spec), "--target", "aws-prod", "--since", "1d", "--until", UNTIL,
                 "--prometheus", url, "--format", fmt])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_the_page_shows_the_jsons_figures(capsys: pytest.CaptureFixture[str], spec: Path,  # noqa: F811
                                          url: str) -> None:  # noqa: F811
    doc = json.loads(_run(capsys, spec, url, "json"))
    page = _run(capsys, spec, url, "html")
    text = " ".join(parsed(page).text)
    for p in doc["pools"]:
        assert p["name"] in text and cents(p["planned_cost_usd"]) in text
        if p["cost_usd"] is not None:
            assert cents(p["cost_usd"]) in text
    for r in doc["recommendations"]:
        assert cents(r["monthly_saving_usd"]) in text
    assert "idle GPU-hours" in text and len(page.encode()) < 1_000_000
    assert _run(capsys, spec, url, "html") == page  # same window, same bytes


def test_hostile_text_in_a_report_never_becomes_markup(spec: Path, url: str) -> None:  # noqa: F811
    from gpustack.plan import build_plan
    from gpustack.report.build import build_report
    from gpustack.report.recommend import spec_planner
    from gpustack.report.window import make_window
    from gpustack.spec import load_spec
    from test_report_cli import SPEC, _answers

    loaded = load_spec(spec)
    plan = build_plan(loaded)
    report, _ = build_report(loaded, SPEC, plan, "aws-prod", _answers(), make_window("1d", UNTIL, "1m"), 0.95,
                             spec_planner(str(spec), (), spec.parent, plan))
    assert report.recommendations and report.pools and report.workloads
    hostile = dataclasses.replace(
        report, target=HOSTILE,
        pools=tuple(dataclasses.replace(p, name=p.name + HOSTILE) for p in report.pools),
        workloads=tuple(dataclasses.replace(w, name=w.name + HOSTILE) for w in report.workloads),
        recommendations=tuple(dataclasses.replace(r, workload=HOSTILE, reason=HOSTILE, from_value=HOSTILE)
                              for r in report.recommendations))
    _assert_inert(render_report_html(hostile))
