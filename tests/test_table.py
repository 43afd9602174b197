"""The plan table people read: it fits a 120-column terminal, shows both names of a pool, and the README
shows what `make demo` prints."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest

from conftest import EXAMPLE, ROOT
from gpustack.cli import main
from gpustack.plan import build_plan
from gpustack.spec import load_spec


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_spec(EXAMPLE))


def plan_output(capsys, *args: str) -> str:
    assert main(["plan", str(EXAMPLE), *args]) == 0
    return capsys.readouterr().out


def test_the_default_table_and_its_notes_fit_120_columns(capsys):
    out = plan_output(capsys)
    too_wide = [line for line in out.splitlines() if len(line) > 120 and " " in line.strip()]
    assert too_wide == []  # only a single unbreakable word (a URL) may be longer


def test_each_pool_shows_its_plan_name_and_its_cloud_name_where_they_differ(capsys, plan):
    out = plan_output(capsys)
    for target in plan.targets:
        for pool in target.pools:
            assert f"\n  {pool.name}" in out  # the name pod affinity selects (gpustack.dev/pool)
            if pool.cloud_name != pool.name:
                assert f"  {pool.name}  ({_display(target.cloud)} name: {pool.cloud_name})" in out


def _display(cloud: str) -> str:
    return {"aws": "EKS", "azure": "AKS", "gcp": "GKE", "oci": "OKE"}[cloud]


def test_wide_has_every_column_on_one_row_per_pool(capsys, plan):
    out = plan_output(capsys, "--wide", "--target", "aws-prod")
    [pool] = [p for p in plan.target("aws-prod").pools if p.role == "floor"]
    [row] = [line for line in out.splitlines() if line.startswith(f"  {pool.name}  ")]
    assert "mig 2x[2x3g.40gb] 1x[2x1g.20gb+2x2g.20gb] 1x[4x1g.20gb] 1x[1x3g.40gb]" in row and "always" in row
    assert "RUNS" in out and "NAME ON EKS" in out


def test_quiet_is_one_line_per_target(capsys, plan):
    out = plan_output(capsys, "--quiet")
    lines = out.splitlines()
    assert len(lines) == len(plan.targets)
    t = plan.target("aws-prod")
    assert lines[0] == (f"aws-prod: EKS us-east-1, {len(t.pools)} pools, {t.gpus.provisioned} GPUs provisioned, "
                        f"${t.cost.planned_monthly_usd:,.0f}/month planned (range ${t.cost.range.low:,.0f} to "
                        f"${t.cost.range.high:,.0f}/month; {t.cost.savings_pct:.1f}% saved against "
                        f"${t.cost.baseline_monthly_usd:,.0f} for one whole on-demand GPU per replica, always on)")


def test_notes_are_wrapped_not_one_long_line(capsys):
    out = plan_output(capsys, "--target", "aws-prod")
    notes = [line for line in out.splitlines() if line.lstrip().startswith(("note:", "Note:"))]
    assert notes and max(len(line) for line in notes) <= 120


def demo_arguments() -> list[str]:
    """What `make demo` runs, read from the Makefile (`make -n`), as gpustack's arguments."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    found = subprocess.run(["make", "-n", "-s", "--no-print-directory", "-C", str(ROOT), "demo"],
                           capture_output=True, text=True, check=True, timeout=60).stdout
    [command] = [line for line in found.splitlines() if re.search(r"\bgpustack plan ", line)]
    return shlex.split(command)[1:]


def demo_output(capsys, monkeypatch) -> str:
    monkeypatch.chdir(ROOT)  # the Makefile names the example relative to the checkout
    assert main(demo_arguments()) == 0
    return capsys.readouterr().out


def test_make_demo_prints_the_example_s_table_and_it_fits_120_columns(capsys, monkeypatch):
    out = demo_output(capsys, monkeypatch)
    assert out == plan_output(capsys)  # the tests above test what make demo prints
    assert out.count("\n") > 100 and max(len(line) for line in out.splitlines()) <= 120


def test_at_a_terminal_make_demo_s_warnings_fit_120_columns_too(capsys, monkeypatch):
    """Warnings go to stderr: one line each in a log (tools grep them), wrapped for a person."""
    monkeypatch.chdir(ROOT)
    assert main(demo_arguments()) == 0
    logged = capsys.readouterr().err
    assert logged and all(line.startswith("warning: ") for line in logged.splitlines())
    assert max(len(line) for line in logged.splitlines()) > 120  # what there is to wrap
    monkeypatch.setattr("gpustack.commands._shared.stderr_is_terminal", lambda: True)
    assert main(demo_arguments()) == 0
    shown = capsys.readouterr().err
    too_wide = [line for line in shown.splitlines() if len(line) > 120 and " " in line.strip()]
    assert too_wide == [] and shown.count("\nwarning: ") == logged.count("\nwarning: ")
    # At most two lines each; what is left out is behind --verbose, which shows the log's words.
    warnings = shown.split("warning: ")[1:]
    assert max(w.count("\n") for w in warnings) == 2 and any(w.endswith("(--verbose: the detail)\n") for w in warnings)
    assert main([*demo_arguments(), "--verbose"]) == 0
    assert capsys.readouterr().err.split() == logged.split()


def test_the_readme_shows_what_make_demo_prints(capsys, monkeypatch):
    """The README's sample is `make demo`'s output, piece by piece: each run of lines between the `...`
    lines is a run of consecutive lines of the output, in the output's order."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"for example:\n\n```\n(.*?)```", readme, re.S)
    assert block, "README: the `make demo` sample after 'for example:'"
    pieces = [piece.strip("\n").splitlines() for piece in re.split(r"^ *\.\.\.$", block.group(1), flags=re.M)]
    out = demo_output(capsys, monkeypatch).splitlines()
    at = 0
    for piece in pieces:
        starts = [i for i in range(at, len(out) - len(piece) + 1) if out[i:i + len(piece)] == piece]
        assert starts, f"README sample: these lines are not lines {at + 1}... of make demo's output:\n" + "\n".join(piece)
        at = starts[0] + len(piece)
    assert sum(map(len, pieces)) > 30 and max(len(line) for piece in pieces for line in piece) <= 120


def test_the_readme_s_headline_saving_is_the_sample_s(capsys):
    """The prose after the sample quotes the first target's two savings figures."""
    readme = (ROOT / "README.md").read_text()
    quoted = re.search(r"stated against its baseline: ([0-9.]+%) against one whole on-demand GPU per\s+replica "
                       r"around the clock .*?, and ([0-9.]+%) against the same work", readme, re.S)
    assert quoted, "README: the headline saving after the sample"
    first = plan_output(capsys).split("\n\n")[0]
    shown = re.findall(r"^    ([0-9.]+%) saved against ", first, re.M)
    assert list(quoted.groups()) == shown
