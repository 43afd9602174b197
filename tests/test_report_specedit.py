"""--write-spec's text edits: only the changed values move; comments, order and quoting stay."""

from __future__ import annotations

import pytest

from gpustack.errors import UsageError
from gpustack.report.specedit import Edit, SpecText, yaml_text
from gpustack.spec.yamlsource import parse

TEXT = """\
# größe: a comment with non-ASCII text before the edits
version: 1
workloads:
  - name: chat   # the chat service
    replicas: {min: 4, max: 6}
    mig: "3g.40gb"
  - {name: lab, gpu_fraction: 0.5}
  - name: tail
    labels:
      team: a"""


def _edit(text: str, *edits: Edit) -> str:
    return SpecText(text, parse(text, "spec.yaml")).apply(edits)


def test_values_are_replaced_in_place_and_comments_stay() -> None:
    out = _edit(TEXT, Edit(("workloads", 0, "replicas", "min"), 2), Edit(("workloads", 0, "mig"), "2g.20gb"),
                Edit(("workloads", 1, "gpu_fraction"), 0.1))
    assert out.splitlines()[0] == TEXT.splitlines()[0]
    assert "  - name: chat   # the chat service\n    replicas: {min: 2, max: 6}\n    mig: 2g.20gb\n" in out
    assert "  - {name: lab, gpu_fraction: 0.1}" in out


def test_keys_are_added_at_the_mappings_indent() -> None:
    out = _edit(TEXT, Edit(("workloads", 0, "idle"), {"below": "10%", "for": "30m"}, add=True),
                Edit(("workloads", 1, "schedule"), {"days": "Mon-Fri", "hours": "08:00-18:00"}, add=True),
                Edit(("workloads", 2, "replicas"), {"min": 1, "max": 2}, add=True))
    assert '    mig: "3g.40gb"\n    idle: {below: 10%, for: 30m}\n' in out
    assert '  - {name: lab, gpu_fraction: 0.5, schedule: {days: Mon-Fri, hours: "08:00-18:00"}}' in out
    assert out.endswith("      team: a\n    replicas: {min: 1, max: 2}\n")  # after a nested block, at the end
    assert parse(out, "out.yaml").data["workloads"][1]["schedule"]["hours"] == "08:00-18:00"


def test_a_value_under_an_anchor_is_not_edited() -> None:
    text = "x-base: &base\n  replicas: 4\nworkloads:\n  - <<: *base\n    name: a\n  - name: b\n    replicas: &r 3\n"
    with pytest.raises(UsageError, match=r"cannot change workloads\[0\]\.replicas in place: it is not written"):
        _edit(text, Edit(("workloads", 0, "replicas"), 2))
    with pytest.raises(UsageError, match=r"workloads\[1\]\.replicas in place: it is written under a YAML anchor"):
        _edit(text, Edit(("workloads", 1, "replicas"), 2))


@pytest.mark.parametrize(("value", "text"), [
    (2, "2"), (0.25, "0.25"), ("2g.20gb", "2g.20gb"), ("08:00-18:00", '"08:00-18:00"'), ("yes", '"yes"'),
    ("10%", "10%"), ("Europe/Berlin", "Europe/Berlin"), ({"min": 1, "max": 2}, "{min: 1, max: 2}"),
])
def test_values_are_written_so_they_read_back(value: object, text: str) -> None:
    assert yaml_text(value) == text
