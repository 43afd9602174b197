"""Strings that reach Markdown, Mermaid, YAML, file names and terminals: strict patterns, no controls, escaped.

Findings 3 and 4 of the security review: `.*` patterns let Markdown and HTML through to pull-request
comments; `^...$` checks accepted a trailing newline; raw escape sequences reached the terminal.
"""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TARGETS, spec_text
from gpustack.cli import main
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.output.markdown import code, mermaid_label, text
from gpustack.spec import load_text

TRAIN = {"name": "train", "kind": "training", "gpu": "T4", "gpus": 1}


def refused(doc: dict) -> str:
    with pytest.raises(SpecError) as info:
        load_text(yaml.safe_dump(doc, sort_keys=False), "spec.yaml")
    return "\n".join(str(p) for p in info.value.problems)


def spec(cloud: str = "aws", **target_changes: object) -> dict:
    target = copy.deepcopy(TARGETS[cloud])
    for key, value in target_changes.items():
        if key in ("cluster",):
            target[key] = value
        else:
            target["settings"][key] = value
    gpu = "A10" if cloud == "oci" else "T4"  # a GPU the bundled catalog has in the target's region
    return {"version": 1, "name": "t", "targets": [target], "workloads": [{**TRAIN, "gpu": gpu}]}


PAYLOADS = ["x<img src=https://e.invalid/a.png>", "x<!--", "x @team", "x](https://e.invalid)", "x`y", "x|y"]


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("cloud, key, valid", [
    ("oci", "cluster", "ocid1.cluster.oc1.iad.aaaa"),
    ("oci", "compartment_id", "ocid1.compartment.oc1..aaaa"),
    ("oci", "subnet_id", "ocid1.subnet.oc1.iad.aaaa"),
    ("oci", "image_id", "ocid1.image.oc1.iad.aaaa"),
    ("gcp", "cluster", "projects/my-project/locations/us-central1/clusters/c1"),
    ("aws", "node_role_arn", "arn:aws:iam::123456789012:role/eks-nodes"),
    ("azure", "resource_group", "rg-1"),
])
def test_markdown_and_html_in_references_are_refused(cloud, key, valid, payload):
    load_text(yaml.safe_dump(spec(cloud, **{key: valid})), "spec.yaml")  # the valid form passes
    assert "is not" in refused(spec(cloud, **{key: valid + payload}))


def test_unicode_look_alikes_in_an_azure_resource_group_are_refused():
    assert "is not valid" in refused(spec("azure", resource_group="rg-prоd"))


@pytest.mark.parametrize("field", ["name", "namespace", "label", "subnet", "cluster", "timezone", "key"])
def test_a_trailing_newline_is_refused_everywhere(field):
    doc = spec("aws")
    workload = doc["workloads"][0]
    if field == "name":
        workload["name"] = "train\n"
    elif field == "namespace":
        workload["namespace"] = "research\n"
    elif field == "label":
        doc["labels"] = {"team": "ml\n"}
    elif field == "subnet":
        doc["targets"][0]["settings"]["subnet_ids"] = ["subnet-0a1b\n"]
    elif field == "cluster":
        doc["targets"][0]["cluster"] = "c1\n"
    elif field == "timezone":
        doc["workloads"] = [{"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.5,
                             "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC\n"}}]
    else:
        doc["labels"] = {"team\n": "ml"}
    assert "U+000A" in refused(doc)


@pytest.mark.parametrize("char", ["\x1b", "\x07", "\x9b", "\u202e", "\u200b", "\t", "\r"])
def test_control_characters_are_refused_in_every_string(char, tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    doc = spec("aws")
    doc["targets"][0]["cluster"] = f"c1{char}[31m"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"U+{ord(char):04X}" in err and char not in err  # named, never echoed raw


def _api_rules():
    for cloud in map(CLOUDS.get, CLOUDS.names()):
        for setting in cloud.settings:
            if setting.api_pattern:
                yield pytest.param(setting.pattern, setting.api_pattern, id=f"{cloud.name}-{setting.name}")
        if cloud.cluster_api_rule:
            yield pytest.param(cloud.cluster_rule[0], cloud.cluster_api_rule[0], id=f"{cloud.name}-cluster")


@pytest.mark.parametrize("ours, theirs", list(_api_rules()))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_accepted_reference_is_accepted_by_the_cloud_api(ours, theirs, data):
    value = data.draw(st.from_regex(re.compile(ours, re.ASCII), fullmatch=True))
    assert re.fullmatch(ours, value)
    assert re.fullmatch(theirs, value), (value, theirs)


def test_every_cloud_states_its_api_rule_for_clusters():
    for cloud in map(CLOUDS.get, CLOUDS.names()):
        assert cloud.cluster_api_rule and cloud.cluster_api_rule[1].startswith("https://"), cloud.name


def test_markdown_helpers_escape_what_github_would_read_as_syntax():
    assert code("a`b") == "``a`b``"
    assert text("<!-- @team [x](https://e.invalid) *b*") == \
        "&lt;!-- &#64;team \\[x\\](https://e.invalid) \\*b\\*"
    assert mermaid_label('a"b') == "a#quot;b"
    assert "\x1b" not in text("a\x1b[31m") and "\n" not in code("a\nb")


def test_the_markdown_report_shows_no_raw_value(tmp_path, capsys):
    """A diff whose values hold Markdown syntax: every value arrives escaped."""
    base = {"version": 1, "name": "t", "targets": [TARGETS["aws"]],
            "workloads": [{**TRAIN, "labels": {"model": "a_b"}}]}
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(base))
    base["workloads"][0]["labels"] = {"model": "a__b__c"}
    new.write_text(yaml.safe_dump(base))
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "a\\_\\_b\\_\\_c" in out and "a__b__c" not in out.replace("`", "")


def test_the_terminal_never_gets_an_escape_sequence_from_a_spec(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_bytes(spec_text([TRAIN]).replace("name: t\n", 'name: "t\\e]8;;https://e.invalid\\a"\n').encode())
    assert main(["plan", str(path)]) == 2
    captured = capsys.readouterr()
    assert "\x1b" not in captured.err + captured.out
