"""The workload field table (gpustack/spec/fields.py): the README's reference is generated from it, its
"applies only to kinds K" rules are its data, and every workload key is read by one of its rows."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from gpustack.errors import SpecError
from gpustack.spec import load_text
from gpustack.spec.fields import WORKLOAD_FIELDS, reference_rows
from gpustack.spec.model import KINDS, Workload

README = Path(__file__).resolve().parent.parent / "README.md"
FIRST_ROW = "| `workloads[]` |"

# A value each kind-bound key accepts on its own, so the only problem left is the kind's.
ACCEPTED = {"gpu_memory": "20Gi", "mig": "3g.40gb", "gpu_fraction": 0.5, "checkpointing": True,
            "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "Europe/Berlin"},
            "runs_per_month": 3, "requests_per_hour": 1000, "burst_share": 0.5}


def _readme_rows(text: str) -> tuple[int, int]:
    """(first, end) line numbers of the workload rows: from `workloads[]` to the end of the table."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(FIRST_ROW))
    end = next(i for i in range(first, len(lines)) if not lines[i].startswith("|"))
    return first, end


@pytest.mark.golden
def test_the_readme_reference_for_workloads_is_the_field_table():
    text = README.read_text(encoding="utf-8")
    lines = text.split("\n")
    first, end = _readme_rows(text)
    if os.environ.get("GPUSTACK_UPDATE_GOLDEN"):
        README.write_text("\n".join([*lines[:first], *reference_rows(), *lines[end:]]), encoding="utf-8")
        return
    assert lines[first:end] == reference_rows(), (
        "README.md's workload keys differ from gpustack/spec/fields.py: edit the table, then `make golden`")


def test_every_key_the_table_reads_is_in_the_readme():
    documented = " ".join(reference_rows())
    assert [row.key for row in WORKLOAD_FIELDS if f"`{row.key}" not in documented] == []


def test_every_workload_field_is_filled_by_a_row():
    # `index` is the workload's place; `gpu_alternatives` (the rest of a `gpu:` list) is read by
    # `_SpecReader.workloads` once the whole workload is read, since it checks them against its size.
    filled = {"index", "gpu_alternatives"}
    for row in WORKLOAD_FIELDS:
        filled.update(row.attribute if isinstance(row.attribute, tuple) else [row.attribute or row.key])
    assert filled == {f.name for f in dataclasses.fields(Workload)}


def _problems(workload: dict) -> list[tuple[str, str]]:
    spec = {"version": 1, "name": "fields", "workloads": [{"name": "w", "gpu": "A100-80GB", **workload}],
            "targets": [{"name": "t", "cloud": "aws", "region": "us-east-1", "cluster": "c",
                         "settings": {"subnet_ids": ["subnet-1"]}}]}
    try:
        load_text(yaml.safe_dump(spec), "spec.yaml")
    except SpecError as error:
        return [(p.path, p.message) for p in error.problems]
    return []


KIND_RULES = [(row, kind) for row in WORKLOAD_FIELDS if row.kinds is not None for kind in KINDS
              if kind not in row.kinds]


@pytest.mark.parametrize(("row", "kind"), KIND_RULES, ids=[f"{r.key}-{k}" for r, k in KIND_RULES])
def test_a_key_given_for_a_kind_it_does_not_apply_to_is_refused_where_it_stands(row, kind):
    problems = _problems({"kind": kind, row.key: ACCEPTED[row.key]})
    assert (f"workloads[0].{row.key}", row.not_for.format(key=row.key, kind=kind)) in problems


@pytest.mark.parametrize("row", [r for r in WORKLOAD_FIELDS if r.kinds is not None], ids=lambda r: r.key)
def test_a_kind_bound_key_is_taken_for_its_own_kinds(row):
    kind = sorted(row.kinds)[0]
    assert [p for p in _problems({"kind": kind, row.key: ACCEPTED[row.key]}) if "not" in p[1]
            and p[0] == f"workloads[0].{row.key}" and kind in p[1]] == []


def test_instance_types_that_are_not_a_mapping_are_a_located_error_not_a_traceback():
    assert _problems({"kind": "training", "instance_types": "p4d.24xlarge"}) == [
        ("workloads[0].instance_types", "expected a mapping of cloud to instance type, e.g. "
                                        "{<cloud>: <instance type>}")]
