"""The plan's JSON text is byte for byte what json.dumps(indent=2, ensure_ascii=False) writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpustack.plan import build_plan
from gpustack.plan.jsontext import indented_json
from gpustack.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent


def _stdlib(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
            | st.text())
_KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                       | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=30)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_VALUES)
def test_any_json_value_is_written_as_json_dumps_writes_it(value: object) -> None:
    assert indented_json(value) == _stdlib(value)


@pytest.mark.parametrize("value", [
    {}, [], (), {"a": {}}, {"a": []}, [[], {}], "ünïcödé — “quotes” \n\t\\ \u2028 \x00", -0.0, 1e300, 1e-300,
    math.nan, math.inf, -math.inf, {1: "int key", 2.5: "float key", False: "bool", None: "none"},
    2**70, [True, False, None],
])
def test_edge_values_are_written_as_json_dumps_writes_them(value: object) -> None:
    assert indented_json(value) == _stdlib(value)


def test_the_example_plan_is_written_as_json_dumps_writes_it() -> None:
    plan = build_plan(load_spec(ROOT / "stacks" / "gpustack.yaml"))
    assert plan.to_json() == _stdlib(plan.to_dict()) + "\n"


def test_a_large_value_is_written_as_json_dumps_writes_it() -> None:
    """Large enough that written containers are joined into one piece at several depths."""
    value = {"targets": [{"pools": [{"name": f"p{i}", "workloads": [f"w{j}" for j in range(i % 700)],
                                     "sizes": {str(j): j / 3 for j in range(i % 300)}} for i in range(60)]}
                         for _ in range(3)]}
    assert indented_json(value) == _stdlib(value)


class _Label(str):
    pass


def test_subclasses_of_str_int_float_and_containers_are_written_as_their_values() -> None:
    value = {"s": _Label("x"), "l": type("L", (list,), {})([1, 2]), "d": type("D", (dict,), {})(k=1.5)}
    assert indented_json(value) == _stdlib(value)


def test_a_value_json_cannot_write_is_refused_as_json_dumps_refuses_it() -> None:
    with pytest.raises(TypeError):
        indented_json({"when": object()})
    with pytest.raises(TypeError):
        indented_json({(1, 2): "tuple key"})
