"""Bad input of every kind exits 2 with a located message, in bounded time and memory, never 70.

Findings 7, 8 and 10 of the security review: unbounded reads (/dev/zero, FIFOs), floods of keys,
constructor errors that escaped as internal errors, values YAML reads loosely, echoed file contents.
"""

from __future__ import annotations

import os
import threading

import pytest

from conftest import spec_text
from gpustack.cli import main
from gpustack.plan.mig_packing import _node_hours
from gpustack.spec.yamlsource import MAX_NODES

NOTEBOOK = {"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.5,
            "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"}}


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_dev_zero_is_refused_before_it_is_read(capsys):
    code, err = run(capsys, "validate", "/dev/zero")
    assert code == 2 and "is not a regular file" in err


@pytest.mark.parametrize("command", [["validate"], ["check"], ["diff", "OTHER"], ["check", "SPEC", "--config"]])
def test_a_fifo_is_refused_without_blocking(tmp_path, capsys, command):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([NOTEBOOK]))
    args = [a.replace("OTHER", str(spec)).replace("SPEC", str(spec)) for a in command] + [str(fifo)]
    result: list[tuple[int, str]] = []
    worker = threading.Thread(target=lambda: result.append(run(capsys, *args)), daemon=True)
    worker.start()
    worker.join(timeout=20)
    if worker.is_alive():  # unblock the reader so the test run can end, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("gpustack blocked on a FIFO")
    code, err = result[0]
    assert code == 2 and "is not a regular file" in err


def test_a_flood_of_keys_is_refused_from_the_parser_events(tmp_path, capsys):
    keys = ", ".join(f"k{i}: 0" for i in range(MAX_NODES // 2 + 10))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"version: 1\nname: t\ntargets: []\nworkloads: [{{{keys}}}]\n")
    code, err = run(capsys, "validate", str(spec))
    assert code == 2 and f"at most {MAX_NODES:,} values" in err


def test_many_unknown_keys_make_a_bounded_report(tmp_path, capsys):
    keys = ", ".join(f"k{i}: 0" for i in range(5000))
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([{**NOTEBOOK}]).replace("- name: nb\n", f"- {{{keys}}}\n- name: nb\n", 1))
    code, err = run(capsys, "validate", str(spec))
    assert code == 2 and "4,980 more unknown keys" in err and len(err.splitlines()) < 40


def test_an_alias_expansion_is_bounded_by_bytes_too(tmp_path, capsys):
    """Few values, each a long string repeated by aliases: the text budget refuses it."""
    spec = tmp_path / "spec.yaml"
    big = "a" * 1_000_000
    spec.write_text(f"version: 1\nname: t\nx: &big {big}\nlist: [{', '.join(['*big'] * 100)}]\n")
    code, err = run(capsys, "validate", str(spec))
    assert code == 2 and "bytes of text" in err


@pytest.mark.parametrize("replicas, timezone, message", [
    ("1", "Europe", "is not an IANA time zone"),  # a tzdata folder
    ("1", "A" * 1_000_000, "is not an IANA time zone"),
    ('!!int ""', "UTC", "expected a whole number, got a string ''"),
    ("1" * 400, "UTC", "is too large to be a spec value"),
    ("0x" + "f" * 5000, "UTC", "is too large to be a spec value"),
])
def test_values_that_crashed_exit_2(tmp_path, capsys, replicas, timezone, message):
    text = spec_text([{**NOTEBOOK, "replicas": 1}]).replace("replicas: 1", f"replicas: {replicas}")
    text = text.replace("timezone: UTC", f"timezone: {timezone}")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    code, err = run(capsys, "validate", str(spec))
    assert code == 2 and message in err and len(err) < 2000  # located, and never the whole value


@pytest.mark.parametrize("key", ["!!binary aGk=", "!!python/name:os.system x", "!!int 5"])
def test_a_tagged_mapping_key_exits_2(tmp_path, capsys, key):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"version: 1\n{key}: 1\n")
    code, err = run(capsys, "validate", str(spec))
    assert code == 2 and "internal error" not in err


@pytest.mark.parametrize("version", ["true", "1.0"])
def test_version_is_exactly_the_number_1(tmp_path, capsys, version):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text([NOTEBOOK]).replace("version: 1", f"version: {version}"))
    code, err = run(capsys, "validate", str(spec))
    assert code == 2 and "this gpustack reads version 1" in err


def test_a_wrong_file_is_not_echoed(tmp_path, capsys):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\n")
    code, err = run(capsys, "validate", str(secret))
    assert code == 2 and "not a gpustack spec" in err and "hash" not in err


@pytest.mark.parametrize("text, message", [
    ('{"dev-pool-auto-stop": "advisory", "dev-pool-auto-stop": "disabled"}', "appears twice"),
    ('{"stack-gpu-budget": {"maxMonthlyUsd": NaN}}', "NaN is not a number JSON allows"),
    ('{"stack-gpu-budget": {"maxMonthlyUsd": 1e400}}', "expected a number"),
])
def test_the_policy_config_is_parsed_strictly(tmp_path, capsys, text, message):
    spec, config = tmp_path / "spec.yaml", tmp_path / "config.json"
    spec.write_text(spec_text([NOTEBOOK]))
    config.write_text(text)
    code, err = run(capsys, "check", str(spec), "--config", str(config))
    assert code == 2 and message in err


def test_mig_node_hours_are_arithmetic_in_the_replica_count():
    """100,000 replicas on 2 slots per node: the same hours as slot by slot, without a loop per replica."""
    class Item:
        def __init__(self, profile, count, hours):
            self.profile, self.count, self.hours = profile, count, hours

    items = [Item("1g", 100_000, 730.0), Item("1g", 3, 100.0), Item("2g", 5, 50.0)]
    nodes = 50_002 + 3
    hours = _node_hours(items, ("1g", "2g"), (2, 2), nodes)
    # 1g: 50,000 nodes at 730 h, the 3 short replicas on nodes 50,000 and 50,001 at 100 h;
    # 2g: 5 replicas on nodes 0..2 (already at 730 h).
    assert hours == 50_000 * 730.0 + 2 * 100.0


