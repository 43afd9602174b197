"""`--format html` for plan and diff: one self-contained, deterministic page whose figures are the JSON's,
and whose spec-derived text never becomes markup."""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser

import pytest

from conftest import EXAMPLE, assert_golden
from gpustack.cli import main
from gpustack.diff import diff_plans
from gpustack.output.html import render_diff_html, render_plan_html, week_hours
from gpustack.output.htmlpage import RISE, cents
from gpustack.plan import build_plan
from gpustack.spec import load_spec
from test_diff import NEW_LABEL, OLD_LABEL, changed_example, plan

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
# Every tag the renderer writes; anything else in a page came from a value.
OUR_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "strong", "section", "div",
            "table", "caption", "thead", "tbody", "tr", "th", "td", "ul", "li", "code", "figure", "figcaption",
            "footer", "svg", "desc", "rect", "line", "text"}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def parsed(page: str) -> Tags:
    parser = Tags()
    parser.feed(page)
    return parser


@pytest.mark.golden
def test_example_plan_page_matches_golden():
    assert_golden("html/plan.html", render_plan_html(EXAMPLE_PLAN))


@pytest.fixture(scope="module")
def example_diff():
    return diff_plans(plan(EXAMPLE.read_text(), OLD_LABEL), plan(changed_example(), NEW_LABEL), OLD_LABEL, NEW_LABEL)


@pytest.mark.golden
def test_example_diff_page_matches_golden(example_diff):
    assert_golden("html/diff.html", render_diff_html(example_diff))


def test_the_page_loads_nothing_and_runs_nothing():
    page = render_plan_html(EXAMPLE_PLAN)
    tags = parsed(page).tags
    assert {t for t, _ in tags} <= OUR_TAGS
    assert not [a for _, attrs in tags for a, v in attrs if a in ("src", "href")
                or ((v or "").startswith("http") and a != "xmlns")]
    assert "@import" not in page and "url(" not in page
    assert len(page.encode()) < 1_000_000


def test_the_figures_are_the_json_to_the_cent():
    doc = json.loads(EXAMPLE_PLAN.to_json())
    text = " ".join(parsed(render_plan_html(EXAMPLE_PLAN)).text)
    for t in doc["targets"]:
        assert t["name"] in text
        for figure in (t["cost"]["planned_monthly_usd"], t["cost"]["baseline_monthly_usd"], t["cost"]["range"]["low"],
                       *(s["monthly_usd"] for s in t["cost"]["breakdown"] if s["monthly_usd"])):
            assert cents(figure) in text, (t["name"], figure)
        for p in t["pools"]:
            assert cents(p["monthly_cost_usd"]) in text


def test_every_chart_has_a_text_alternative():
    tags = parsed(render_plan_html(EXAMPLE_PLAN)).tags
    charts = [attrs for t, attrs in tags if t == "svg"]
    assert len(charts) > len(EXAMPLE_PLAN.targets) * 3
    assert all(dict(a).get("role") == "img" and dict(a).get("aria-label") for a in charts)
    assert [t for t, _ in tags].count("desc") == len(charts)


def test_a_mig_node_and_a_schedule_are_drawn():
    page = render_plan_html(EXAMPLE_PLAN)
    assert "GPU 0: 3g.40gb" in page  # a MIG slice of the example's inference node
    assert "GPU 7: whole GPU" in page  # its unpartitioned GPUs drawn whole: all 8 of a p4de.24xlarge
    assert "Mon 08:00 running" in page and "Sat 08:00 scaled to zero" in page  # the notebooks' Mon-Fri window


def test_an_overnight_window_covers_the_next_morning():
    [pool] = [p for t in EXAMPLE_PLAN.targets for p in t.pools if p.schedule is not None][:1]
    night = dataclasses.replace(pool.schedule, weekdays=(4,), start_minute=22 * 60, end_minute=2 * 60)
    hours = week_hours(night)
    assert [h for h in range(24) if hours[4][h]] == [22, 23] and [h for h in range(24) if hours[5][h]] == [0, 1]
    assert sum(map(sum, hours)) == 4


def test_the_page_is_byte_identical_across_runs(capsys):
    pages = []
    for _ in range(2):
        assert main(["plan", str(EXAMPLE), "--format", "html"]) == 0
        pages.append(capsys.readouterr().out)
    assert pages[0] == pages[1] == render_plan_html(EXAMPLE_PLAN)


def test_diff_page_lists_the_changes_and_the_delta(example_diff):
    text = " ".join(parsed(render_diff_html(example_diff)).text)
    assert "Removed" in text and "Added" in text and "Resized in place" in text
    for t in example_diff.targets:
        assert t.name in text
    page = render_diff_html(example_diff)
    rising = [t.name for t in example_diff.targets if t.delta_usd > 0]
    assert rising and all(f'fill="{RISE}"><title>{name}: +' in page for name in rising)  # a rise in vermillion
    assert f"From {OLD_LABEL} to {NEW_LABEL}: " in text  # words keep their spaces beside an element
    sign = "+" if example_diff.delta_usd > 0 else "-"
    assert f"{sign}{cents(abs(example_diff.delta_usd))}/month" in text


HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)></svg><svg onload=alert(3)>'


def _hostile_plan():
    """The example plan with the payload in every name, label and free text the page shows (the spec refuses
    them, so the renderer is tested on its own: it must hold even if a check upstream lets one through)."""
    targets = []
    for t in EXAMPLE_PLAN.targets:
        pools = tuple(dataclasses.replace(p, name=p.name + HOSTILE, instance_type=HOSTILE, reason=HOSTILE,
                                          notes=(HOSTILE,), price=dataclasses.replace(p.price, source=HOSTILE),
                                          workloads=tuple(w + HOSTILE for w in p.workloads)) for p in t.pools)
        requests = tuple(dataclasses.replace(r, labels=tuple((k + HOSTILE, v + HOSTILE) for k, v in r.labels))
                         for r in t.pod_requests)
        targets.append(dataclasses.replace(t, name=t.name + HOSTILE, region=HOSTILE, cluster=HOSTILE, pools=pools,
                                           pod_requests=requests, notes=(HOSTILE,)))
    return dataclasses.replace(EXAMPLE_PLAN, name=HOSTILE, targets=tuple(targets))


def _assert_inert(page: str) -> None:
    tags = parsed(page).tags
    assert {t for t, _ in tags} <= OUR_TAGS - {"script"}
    assert not [a for _, attrs in tags for a, _ in attrs if a.startswith("on")]
    assert "alert(1)" in " ".join(parsed(page).text)  # shown as text, not dropped


def test_hostile_text_in_the_plan_never_becomes_markup():
    _assert_inert(render_plan_html(_hostile_plan()))


def test_hostile_text_in_a_diff_never_becomes_markup(example_diff):
    targets = tuple(dataclasses.replace(t, name=t.name + HOSTILE, new_warnings=(HOSTILE,), pools=tuple(
        dataclasses.replace(p, name=p.name + HOSTILE, why=HOSTILE, new_name=HOSTILE, moves_to=(HOSTILE,),
                            fields=tuple(dataclasses.replace(f, old=HOSTILE, new=HOSTILE) for f in p.fields))
        for p in t.pools)) for t in example_diff.targets)
    _assert_inert(render_diff_html(dataclasses.replace(example_diff, old=HOSTILE, new=HOSTILE, targets=targets)))


def test_a_user_catalogs_source_and_note_stay_text(tmp_path, capsys):
    from test_catalog_user import HEADER, calgary_spec

    catalog = tmp_path / "mine.csv"
    catalog.write_text(HEADER + f"aws,ca-west-1,g5.xlarge,A10G,1,4,16,1.25,0.5,\"{HOSTILE}\",\"{HOSTILE}\",2026-11-20\n")
    code = main(["plan", str(calgary_spec(tmp_path)), "--catalog", str(catalog), "--format", "html"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "catalog <script>alert(1)" in " ".join(parsed(out).text)  # the row's source, shown as text
    _assert_inert(out)
