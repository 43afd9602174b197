"""Bad input never crashes gpustack: property-based and adversarial tests of the loader and planner.

Every outcome is either a spec (and a plan, or located problems from planning) or a SpecError whose
problems each name a place and say something short. Anything else is a bug.
"""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE, ROOT
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_text
from gpustack.spec.yamlsource import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES

LOCATED = re.compile(r"^spec\.yaml:\d+:\d+: ")
MAX_MESSAGE = 600
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXAMPLE_DOC = yaml.safe_load(EXAMPLE.read_text())


def outcome(text: str | bytes) -> str:
    """'ok' or 'problems'; any other exception fails the test."""
    try:
        spec = load_text(text, "spec.yaml")
    except SpecError as exc:
        assert exc.problems, "a SpecError with no problem"
        for problem in exc.problems:
            message = str(problem)
            assert LOCATED.match(message), message
            assert len(message) <= MAX_MESSAGE, message
            assert "Traceback" not in message
        return "problems"
    try:
        build_plan(spec)
    except SpecError as exc:
        assert all(LOCATED.match(str(p)) for p in exc.problems), exc.problems
        return "problems"
    return "ok"


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(["", "H100", "A100", "inference", "Mon-Fri", "08:00-18:00", "Europe/Berlin", "3g.40gb",
                     "20Gi", "-1", "1e400", "ünïcödé-名前", "\u202e", "null", "~"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=12)


def paths(doc: object, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += paths(value, prefix + (i,))
    return found


EXAMPLE_PATHS = paths(EXAMPLE_DOC)


def replaced(path: tuple, value: object) -> dict:
    doc = copy.deepcopy(EXAMPLE_DOC)
    if not path:
        return value  # type: ignore[return-value]
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return doc


@FUZZ
@given(st.sampled_from(EXAMPLE_PATHS), values)
def test_any_field_of_the_example_replaced_by_anything(path, value):
    try:
        text = yaml.safe_dump(replaced(path, value), allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        assume(False)
    outcome(text)


@FUZZ
@given(st.sampled_from([p for p in EXAMPLE_PATHS if p and isinstance(p[-1], str)]))
def test_any_key_removed_from_the_example(path):
    doc = copy.deepcopy(EXAMPLE_DOC)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    outcome(yaml.safe_dump(doc))


@FUZZ
@given(values)
def test_any_yaml_document(value):
    try:
        text = yaml.safe_dump(value, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        assume(False)
    assert outcome(text) == "problems"


@FUZZ
@given(st.text(max_size=300))
def test_any_text(text):
    outcome(text)


@FUZZ
@given(st.binary(max_size=300))
def test_binary_junk(data):
    outcome(data)


@pytest.mark.parametrize("text, message", [
    ("", "the file is empty"),
    ("null\n", "this is not a gpustack spec: it holds nothing (null), not a mapping"),
    ("[1, 2]\n", "this is not a gpustack spec: it holds a list, not a mapping"),
    ("version: 1\nversion: 1\n", "duplicate key 'version'"),
    ("a: !!python/object/apply:os.system [true]\n", "the YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' "
                                                    "is not allowed"),
    ("a: &x {b: 1}\nc:\n  <<: *x\n  <<: *x\n", "duplicate merge key '<<'"),
    ("a: &x [1]\nc:\n  <<: *x\n", "a merge key ('<<') takes a mapping or a list of mappings"),
    ("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "nested"),
    ("\x00\x01", "NUL bytes"),
])
def test_adversarial_files_give_one_located_problem(text, message):
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    assert len(info.value.problems) == 1 and message in str(info.value.problems[0])


def test_an_alias_bomb_is_refused_before_it_expands():
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    with pytest.raises(SpecError) as info:
        load_text("\n".join(levels) + "\n", "spec.yaml")
    assert f"at most {MAX_NODES:,}" in str(info.value)


def test_a_file_over_the_size_limit_is_refused_unread():
    big = b"# " + b"x" * MAX_FILE_BYTES + b"\n"
    with pytest.raises(SpecError) as info:
        load_text(big, "spec.yaml")
    assert f"at most {MAX_FILE_BYTES:,} bytes" in str(info.value)


def test_several_megabytes_of_valid_yaml_that_is_not_a_spec():
    text = "items:\n" + "".join(f"  - {{name: item-{i}, value: {i}}}\n" for i in range(100_000))
    assert len(text) > 3_000_000
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    assert len(info.value.problems) <= 8


def test_huge_and_negative_numbers_are_bounded():
    for field, value, expect in [("replicas", 10**12, "too large"), ("gpus", -1, "too small"),
                                 ("hours_per_month", 1e400, "finite"), ("cpu", -4, "more than zero")]:
        doc = copy.deepcopy(EXAMPLE_DOC)
        doc["workloads"][0][field] = value
        with pytest.raises(SpecError) as info:
            load_text(yaml.safe_dump(doc), "spec.yaml")
        assert expect in str(info.value), (field, str(info.value))


def test_unicode_names_are_refused_with_the_rule():
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["workloads"][0]["name"] = "trainiŋ-模型"
    with pytest.raises(SpecError) as info:
        load_text(yaml.safe_dump(doc, allow_unicode=True), "spec.yaml")
    assert "a DNS label" in str(info.value)


def test_the_cli_never_prints_a_traceback(tmp_path):
    cases = {
        "binary.yaml": bytes(range(256)),
        "deep.yaml": b"[" * 5000,
        "tag.yaml": b"x: !!python/name:os.system\n",
        "list.yaml": b"- 1\n",
        "bomb.yaml": b"a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        result = subprocess.run([sys.executable, "-m", "gpustack", "plan", str(path)], capture_output=True,
                                text=True, cwd=ROOT, timeout=60)
        assert result.returncode == 2, (name, result.stderr)
        assert "Traceback" not in result.stderr and result.stdout == "", (name, result.stderr)


def test_nan_is_never_accepted_as_a_number():
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["pricing"] = {"spot_discount": math.nan}
    with pytest.raises(SpecError):
        load_text(yaml.safe_dump(doc), "spec.yaml")


def test_merge_keys_share_defaults_and_the_mapping_s_own_keys_win():
    from gpustack.spec.yamlsource import parse

    doc = parse("base: &base {kind: inference, gpu: L4, replicas: 2}\n"
                "more: &more {replicas: 9, cpu: 4}\n"
                "w:\n  <<: [*base, *more]\n  replicas: 3\n", "spec.yaml")
    assert doc.data["w"] == {"replicas": 3, "kind": "inference", "gpu": "L4", "cpu": 4}
    # A merged value is located where it is written: its errors point at the defaults.
    assert doc.where(("w", "gpu")).line == 1


def test_merge_keys_count_against_the_alias_budget():
    levels = ["a0: &a0 {" + ", ".join(f"k{j}: x" for j in range(10)) + "}"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"{{<<: *a{i - 1}}}"] * 10) + "]" if i == 1 else
               f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    with pytest.raises(SpecError) as info:
        load_text("\n".join(levels) + "\n", "spec.yaml")
    assert f"at most {MAX_NODES:,}" in str(info.value)


def test_an_empty_region_is_refused_at_the_region_not_on_every_workload():
    """Found by the replacement fuzz: `region: ""` passed the target and every workload reported the catalog's
    regions at length (over the message bound)."""
    doc = copy.deepcopy(EXAMPLE_DOC)
    doc["targets"][3]["region"] = ""
    with pytest.raises(SpecError) as info:
        build_plan(load_text(yaml.safe_dump(doc), "spec.yaml"))
    [problem] = info.value.problems
    assert problem.path == "targets[3].region" and "not empty" in problem.message
