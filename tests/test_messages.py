"""What a user reads: time-zone advice, where a capacity error points, errors of one run, warnings that
fit two lines at a terminal, the price-age warning once per CI job, the packer's notes only with --wide."""

from __future__ import annotations

import dataclasses
import datetime
import zoneinfo

import pytest

from conftest import spec_text
from gpustack.cli import main
from gpustack.errors import SpecError
from gpustack.output.table import render_table
from gpustack.spec import load_text
from test_planner_promises import pinned, plan_of, text

NOTEBOOK = {"name": "lab", "kind": "notebook", "gpu": "T4", "replicas": 2,
            "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"}}
TRAIN = {"name": "train", "kind": "training", "gpu": "A10G", "replicas": 2, "checkpointing": True}


def zone_error(zone: str) -> str:
    with pytest.raises(SpecError) as info:
        load_text(spec_text([{**NOTEBOOK, "schedule": {**NOTEBOOK["schedule"], "timezone": zone}}]), "spec.yaml")
    [problem] = info.value.problems
    assert problem.path == "workloads[0].schedule.timezone"
    return problem.message


def test_a_european_abbreviation_suggests_european_zones_not_a_us_one():
    message = zone_error("CEST")
    assert "'EST'" not in message and "America/" not in message
    assert message.startswith("'CEST' is not an IANA time zone: it is an abbreviation: use 'Europe/Berlin' or ")


def test_an_offset_suggests_the_etc_zone_with_its_sign_explained_or_a_city():
    message = zone_error("UTC+1")
    assert ("use 'Etc/GMT-1' (a fixed UTC+01:00: the tz database's Etc names invert the sign, POSIX-style, so "
            "Etc/GMT-1 is UTC+01:00), or better the team's city zone, e.g. 'Europe/Berlin'") in message
    # The advice is right: Etc/GMT-1 is one hour ahead of UTC, all year.
    for month in (1, 7):
        moment = datetime.datetime(2026, month, 1, 12, tzinfo=zoneinfo.ZoneInfo("Etc/GMT-1"))
        assert moment.utcoffset() == datetime.timedelta(hours=1)
    assert "'Etc/GMT+5'" in zone_error("GMT-5") and "'Asia/Kolkata'" in zone_error("UTC+05:30")


def test_a_misspelt_city_still_gets_its_spelling_match():
    assert "(did you mean 'Europe/Berlin'?)" in zone_error("Europe/Berln")


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_a_cpu_no_type_holds_is_located_at_cpu(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([{**TRAIN, "cpu": 400}]))
    code, err = run(capsys, "validate", str(spec))
    line = spec.read_text().splitlines().index("  cpu: 400") + 1
    assert code == 2
    assert err.startswith(f"error: {spec}:{line}:8: workloads[0].cpu: no EKS instance type in us-east-1 with A10G "
                          "holds one replica (1 GPU(s), 400 CPU)")


def test_capacity_errors_come_in_the_same_run_as_schema_errors(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([{**TRAIN, "cpu": 400}, {**TRAIN, "name": "other", "kind": "traning"}]))
    code, err = run(capsys, "plan", str(spec))
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert [e.split(": ")[2] for e in errors] == ["workloads[0].cpu", "workloads[1].kind"]
    assert "gpustack: 2 problems found" in err


LONG = ("'x': at zero nodes the autoscaler sees only the shape's nvidia.com/gpu: 8, not what a node offers "
        "(nvidia.com/gpu: 3, nvidia.com/mig-1g.20gb: 6); its node-pool template takes its resources from the "
        "shape alone, so a pending pod asking for a MIG device never scales the pool up from zero; keep "
        "min_nodes at 1 or run the pool's GPU Operator with the mixed strategy")


def test_a_long_warning_takes_two_lines_at_a_terminal_and_all_of_them_with_verbose(monkeypatch, capsys):
    from gpustack.commands import _noise, _shared

    monkeypatch.setattr(_shared, "stderr_is_terminal", lambda: True)
    _shared.warn(LONG)
    shown = capsys.readouterr().err.splitlines()
    assert len(shown) == 2 and all(len(line) <= 120 for line in shown)
    assert shown[0].startswith("warning: 'x': at zero nodes the autoscaler sees only")
    assert shown[1].endswith("(--verbose: the detail)")
    monkeypatch.setattr(_noise, "_VERBOSE", [True])
    _shared.warn(LONG)
    assert " ".join(capsys.readouterr().err.split()) == f"warning: {LONG}"
    monkeypatch.setattr(_noise, "_VERBOSE", [False])
    monkeypatch.setattr(_shared, "stderr_is_terminal", lambda: False)
    _shared.warn(LONG)
    assert capsys.readouterr().err == f"warning: {LONG}\n"  # a log: one line, whole


def test_verbose_is_an_option_of_every_command(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([TRAIN]))
    assert main(["validate", str(spec), "--verbose"]) == 0


def test_the_price_age_warning_is_said_once_per_ci_job(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "spec.yaml"
    stale = {**TRAIN, "gpu": "T4"}  # GCP's n1 + T4 rows: older than 180 days
    spec.write_text(spec_text([stale], ("gcp",)))
    job = tmp_path / "runner-temp"
    job.mkdir()
    monkeypatch.setenv("RUNNER_TEMP", str(job))
    first = run(capsys, "plan", str(spec))[1]
    assert "prices more than 180 days old" in first
    for command in (["plan", str(spec), "--format", "json"], ["check", str(spec)], ["validate", str(spec)]):
        _, err = run(capsys, *command)
        assert "prices more than 180 days old" not in err, command
    monkeypatch.setenv("GPUSTACK_WARN_ONCE_DIR", "")  # turned off: every command says it
    assert "prices more than 180 days old" in run(capsys, "plan", str(spec))[1]
    monkeypatch.delenv("RUNNER_TEMP")
    monkeypatch.delenv("GPUSTACK_WARN_ONCE_DIR")
    assert "prices more than 180 days old" in run(capsys, "plan", str(spec))[1]  # outside a job: every run


def test_the_price_age_warning_is_one_line_naming_every_old_target_with_its_age(capsys, monkeypatch):
    from gpustack.commands._shared import print_warnings
    from gpustack.plan import build_plan
    from gpustack.spec import load_spec

    from conftest import EXAMPLE

    monkeypatch.delenv("RUNNER_TEMP", raising=False)
    monkeypatch.delenv("GPUSTACK_WARN_ONCE_DIR", raising=False)
    plan = build_plan(load_spec(EXAMPLE))  # aws-prod 2026-07-20, azure-prod 2026-06-18, gcp-prod from 2025-09, oci 2025-10
    plan = dataclasses.replace(plan, warnings=())
    print_warnings(plan, today=datetime.date(2026, 12, 1))
    assert capsys.readouterr().err == (
        "warning: prices more than 180 days old: gcp-prod 456 days (as of 2025-09 "
        "to 2026-07-30), oci-prod 426 days (as of 2025-10); run gpustack catalog refresh, or give current or "
        "negotiated prices with --catalog FILE\n")
    print_warnings(plan, today=datetime.date(2026, 2, 1))  # the oldest, 2025-09, is 153 days old: quiet
    assert capsys.readouterr().err == ""


def test_the_packer_s_method_is_in_why_only_with_wide():
    plan = plan_of(pinned(text("openb-h100-fractional.yaml"), "aws", "p5.4xlarge", only_fractional=True))
    assert any(n.startswith("Packed by") for p in plan.targets[0].pools for n in p.notes)
    assert "Packed by" not in render_table(plan)
    assert "note: Packed by" in render_table(plan, wide=True)
