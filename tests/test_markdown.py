"""`gpustack plan --format markdown`: the report posted as a pull-request comment."""

from __future__ import annotations

import re

import pytest

from conftest import EXAMPLE, assert_golden, spec_text
from gpustack.cli import main
from gpustack.output.markdown import mermaid_steps, nice_ceiling, render_markdown, signed_usd
from gpustack.plan import build_plan
from gpustack.spec import load_spec, load_text


@pytest.fixture(scope="module")
def example_plan():
    return build_plan(load_spec(EXAMPLE))


@pytest.mark.golden
def test_example_report_matches_golden(example_plan):
    assert_golden("markdown/example.md", render_markdown(example_plan))


def test_cli_prints_the_report_for_one_target(capsys, example_plan):
    assert main(["plan", str(EXAMPLE), "--format", "markdown", "--target", "gcp-prod"]) == 0
    out = capsys.readouterr().out
    assert "### gcp-prod: GKE us-central1" in out
    assert "### aws-prod" not in out


def _chart(text: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", text, re.S)


def test_each_target_has_a_chart_from_baseline_to_planned(example_plan):
    report = render_markdown(example_plan)
    charts = _chart(report)
    assert len(charts) == len(example_plan.targets)
    for target, chart in zip(example_plan.targets, charts):
        lines = chart.splitlines()
        assert lines[0] == "xychart-beta"
        bars = [int(v) for v in re.search(r"bar \[(.*)\]", chart).group(1).split(", ")]
        top = int(re.search(r"--> (\d+)", chart).group(1))
        assert bars[0] == round(target.cost.baseline_monthly_usd)
        assert bars[-1] == round(target.cost.planned_monthly_usd)
        assert len(bars) == 1 + len(target.cost.breakdown)
        assert max(bars) <= top < 2.5 * max(bars)


def test_the_steps_table_adds_up_to_the_planned_cost(example_plan):
    target = example_plan.target("aws-prod")
    report = render_markdown(example_plan)
    section = report.split("### aws-prod")[1].split("###")[0]
    changes = re.findall(r"^\| (?:sharing|spot|commitments|schedules)[^|]* \| ([-+]?\$[\d,]+) \|", section, re.M)
    assert len(changes) == 4
    total = sum(int(c.replace("$", "").replace(",", "")) for c in changes)
    saved = target.cost.baseline_monthly_usd - target.cost.planned_monthly_usd
    assert abs(total + saved) <= 2  # each step is rounded to whole dollars


def test_every_table_row_has_as_many_cells_as_its_header(example_plan):
    report = render_markdown(example_plan)
    for block in re.split(r"\n\n", report):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if not rows:
            continue
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, block


def test_warnings_and_price_date_are_in_the_report():
    text = spec_text([{"name": "ranker", "kind": "training", "gpu": "A100-80GB", "replicas": 1,
                       "hours_per_month": 100}], ("aws",))
    plan = build_plan(load_text(text, "spec.yaml"))
    report = render_markdown(plan)
    assert "- ⚠️ training 'ranker' has no checkpointing" in report
    assert f"as of {plan.targets[0].prices_as_of}" in report


def test_a_pipe_in_a_cell_is_escaped_so_the_table_keeps_its_columns():
    from gpustack.output.markdown import table

    assert table(("a", "b"), "ll", [("x|y", "z")]).splitlines()[-1] == "| x\\|y | z |"


@pytest.mark.parametrize("value, expected", [(0, 1), (1, 1), (7, 10), (120, 200), (165_112, 200_000),
                                             (240_964, 250_000), (251_373, 500_000), (1000, 1000)])
def test_chart_axis_ends_on_a_round_number(value, expected):
    assert nice_ceiling(value) == expected


@pytest.mark.parametrize("value, expected", [(1234.4, "+$1,234"), (-1234.6, "-$1,235"), (0.3, "$0"), (-0.4, "$0")])
def test_signed_dollars(value, expected):
    assert signed_usd(value) == expected


def test_chart_of_a_target_without_workloads_is_still_valid():
    text = spec_text([{"name": "x", "kind": "training", "gpu": "T4", "replicas": 0}], ("aws",))
    target = build_plan(load_text(text, "spec.yaml")).targets[0]
    assert "bar [0, 0, 0, 0, 0]" in mermaid_steps(target)
    assert "0 --> 1" in mermaid_steps(target)
