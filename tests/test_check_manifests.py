"""`gpustack check --manifests`: the team's manifests checked against the plan, agreeing with the patches
`gpustack render --workloads` writes (patched objects pass; each way of getting a workload wrong is found)."""

from __future__ import annotations

import copy
from fractions import Fraction
import io
import json
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLE
from gpustack.cli import main
from gpustack.guardrails.manifests import ERROR, WARNING, check
from gpustack.guardrails.quantity import parse_quantity
from gpustack.plan import build_plan
from gpustack.render.workloads import patch, wirings
from gpustack.spec import load_spec
from gpustack.spec.yamlsource import parse_all
from strategic_merge import merge, plain_object, pod_labels, pod_spec

ATTACKS = Path(__file__).parent / "fixtures" / "attacks"

PLAN = build_plan(load_spec(EXAMPLE))
TARGETS = [t.name for t in PLAN.targets]


def _patched(target: str) -> dict[str, dict]:
    return {w.workload: merge(plain_object(w.kind, w.workload, w.namespace), patch(w))
            for w in wirings(PLAN.target(target))}


def _findings(target: str, objects: list[dict]):
    return check(PLAN.target(target), parse_all(yaml.safe_dump_all(objects, sort_keys=False), "team.yaml"))


def _with(target: str, workload: str, change) -> list:  # type: ignore[no-untyped-def]
    objects = _patched(target)
    obj = copy.deepcopy(objects[workload])
    change(obj)
    objects[workload] = obj
    return _findings(target, list(objects.values()))


@pytest.mark.parametrize("target", TARGETS)
def test_rendered_patches_applied_pass_with_zero_findings(target):
    assert _findings(target, list(_patched(target).values())) == []


@pytest.mark.parametrize("target", TARGETS)
def test_plain_objects_fail_on_every_target(target):
    objects = [plain_object(w.kind, w.workload, w.namespace) for w in wirings(PLAN.target(target))]
    found = _findings(target, objects)
    assert {f.workload for f in found if f.level == ERROR} == {w.workload for w in wirings(PLAN.target(target))}


def test_missing_spot_toleration():
    def drop(obj):
        spec = pod_spec(obj)
        spec["tolerations"] = [t for t in spec["tolerations"] if t["key"] != "gpustack.dev/spot"]
    found = _with("aws-prod", "llm-pretrain", drop)
    assert [(f.workload, f.path) for f in found] == [("llm-pretrain", "spec.template.spec.tolerations")]
    assert "gpustack.dev/spot" in found[0].message and "operator: Exists" in found[0].fix


def test_no_affinity_could_land_anywhere():
    def drop(obj):
        del pod_spec(obj)["affinity"]
        del pod_spec(obj)["nodeSelector"]
    found = _with("aws-prod", "notebooks", drop)
    assert found and all(f.workload == "notebooks" and f.level == ERROR for f in found)
    assert any("may run on any node" in f.message for f in found)
    # without the pool affinity, the notebook tolerates and fits the training pools as well
    assert any("train-a100-80gb-ondemand-p4de-24xlarge" in f.message for f in found)


def test_selecting_another_workloads_pool():
    other = next(w for w in wirings(PLAN.target("aws-prod")) if w.workload == "ranker-train")
    def steal(obj):
        pod_spec(obj)["affinity"] = other.pod_spec["affinity"]
        pod_spec(obj)["nodeSelector"] = other.pod_spec["nodeSelector"]
    found = _with("aws-prod", "llm-pretrain", steal)
    messages = " ".join(f.message for f in found)
    assert "can land on pool train-a100-80gb-ondemand-p4de-24xlarge (of ranker-train)" in messages
    assert "selects none of its pools" in messages


def test_wrong_extended_resource_for_mig():
    def full_gpu(obj):
        res = pod_spec(obj)["containers"][0]["resources"]
        for field in ("requests", "limits"):
            res[field].pop("nvidia.com/mig-3g.40gb")
            res[field]["nvidia.com/gpu"] = "1"
    found = _with("aws-prod", "chat", full_gpu)
    assert len(found) == 1
    assert found[0].path == "spec.template.spec.containers[0].resources.limits.nvidia.com/gpu"
    assert "nvidia.com/mig-3g.40gb: 1" in found[0].fix


def test_more_than_one_node_offers():
    def greedy(obj):
        pod_spec(obj)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "16"
    found = _with("aws-prod", "llm-pretrain", greedy)
    assert len(found) == 1 and "no node of its pools offers more than 8" in found[0].message


def test_spot_pool_without_checkpointing_label():
    def unlabel(obj):
        del pod_labels(obj)["gpustack.dev/checkpointing"]
    found = _with("azure-prod", "detector-train", unlabel)
    assert len(found) == 1 and found[0].path == "spec.template.metadata.labels"
    assert "gpustack.dev/checkpointing" in found[0].fix


def test_matched_by_label_when_named_otherwise():
    def rename(obj):
        obj["metadata"]["name"] = "chat-v2"
        del pod_spec(obj)["tolerations"]
    found = _with("aws-prod", "chat", rename)
    assert [f.workload for f in found] == ["chat"] and "toleration" in found[0].message


def test_unknown_gpu_object_is_a_warning():
    stray = plain_object("Deployment", "stray", "default")
    pod_spec(stray)["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    found = _findings("aws-prod", [*_patched("aws-prod").values(), stray])
    assert [(f.level, f.obj) for f in found] == [(WARNING, "Deployment/default/stray")]


def test_findings_are_located_on_the_offending_line(tmp_path):
    objects = _patched("aws-prod")
    pod_spec(objects["llm-pretrain"])["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "9"
    text = yaml.safe_dump_all(list(objects.values()), sort_keys=False)
    (found,) = check(PLAN.target("aws-prod"), parse_all(text, "team.yaml"))
    assert found.location is not None
    assert text.splitlines()[found.location.line - 1].strip() == "nvidia.com/gpu: '9'"


def _cli(tmp_path, capsys, monkeypatch, text: str, *extra: str, stdin: bool = False):
    if stdin:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        path = "-"
    else:
        (tmp_path / "k8s").mkdir(exist_ok=True)
        (tmp_path / "k8s" / "all.yaml").write_text(text)
        path = str(tmp_path / "k8s")
    code = main(["check", str(EXAMPLE), "--target", "aws-prod", "--manifests", path, *extra])
    return code, capsys.readouterr()


def test_cli_exit_codes_directory_and_stdin(tmp_path, capsys, monkeypatch):
    good = yaml.safe_dump_all(list(_patched("aws-prod").values()))
    code, out = _cli(tmp_path, capsys, monkeypatch, good)
    assert code == 0 and out.out == "aws-prod: manifests land on their pools\n"
    bad = yaml.safe_dump_all([plain_object("Job", "llm-pretrain", "training")])
    code, out = _cli(tmp_path, capsys, monkeypatch, bad, "--format", "json", stdin=True)
    result = json.loads(out.out)
    assert code == 1 and result["errors"] >= 3
    assert all(f["location"].startswith("<stdin>:") for f in result["targets"]["aws-prod"])


def test_cli_bad_yaml_is_a_located_error(tmp_path, capsys, monkeypatch):
    code, out = _cli(tmp_path, capsys, monkeypatch, "kind: Deployment\n---\nspec: [\n")
    assert code == 2 and "all.yaml:4:1: not valid YAML" in out.err and "Traceback" not in out.err


def test_scripts_of_several_lines_are_read_but_terminal_escapes_are_refused(tmp_path, capsys, monkeypatch):
    # Real manifests carry multi-line text (a container's shell script, embedded config).
    objects = _patched("aws-prod")
    pod_spec(objects["llm-pretrain"])["containers"][0]["args"] = ["set -e\ntorchrun\ttrain.py\n"]
    code, out = _cli(tmp_path, capsys, monkeypatch, yaml.safe_dump_all(list(objects.values())))
    assert code == 0 and out.out == "aws-prod: manifests land on their pools\n"
    pod_spec(objects["llm-pretrain"])["containers"][0]["args"] = ["\x1b[2J"]
    code, out = _cli(tmp_path, capsys, monkeypatch, yaml.safe_dump_all(list(objects.values())))
    assert code == 2 and "control character U+001B" in out.err and "\x1b" not in out.err


@pytest.mark.parametrize("text, value", [
    ("100m", Fraction(1, 10)), ("2", 2), ("1.5Gi", Fraction(3, 2) * 2**30), ("1e3", 1000), ("1E", 10**18),
    ("512Mi", 512 * 2**20), ("16G", 16 * 10**9), (".5", Fraction(1, 2)), (4, 4),
    ("1Gib", None), ("0x10", None), ("1 Gi", None), ("", None), (True, None), (1.5, None),
])
def test_quantities_are_read_as_the_api_server_reads_them(text, value):
    assert parse_quantity(text) == value


def _resources(obj: dict, cpu=None, memory=None, field="requests") -> None:
    container = pod_spec(obj)["containers"][0]
    for name, value in (("cpu", cpu), ("memory", memory)):
        if value is not None:
            container["resources"].setdefault(field, {})[name] = value
            other = "limits" if field == "requests" else "requests"
            container["resources"].get(other, {}).pop(name, None)


def test_cpu_or_memory_above_what_a_node_leaves_to_pods_never_schedules():
    pool = next(p for p in PLAN.target("aws-prod").pools if "llm-pretrain" in p.workloads)
    cores = parse_quantity(dict(pool.node_allocatable)["cpu"])
    too_many = f"{int(cores) + 1}"
    findings = _with("aws-prod", "llm-pretrain", lambda o: _resources(o, cpu=too_many))
    [found] = findings
    assert found.level == ERROR and found.path.endswith("resources.requests.cpu")
    assert f"asks {too_many} cpu per pod" in found.message and "never schedule" in found.message
    # A limit without a request is the request (the API server copies it).
    [found] = _with("aws-prod", "llm-pretrain", lambda o: _resources(o, memory="4Ti", field="limits"))
    assert found.path.endswith("resources.limits.memory") and "4096.0Gi memory" in found.message
    # What fits one node passes.
    assert _with("aws-prod", "llm-pretrain", lambda o: _resources(o, cpu=f"{int(cores) - 1}")) == []


def test_init_containers_and_sidecars_count_as_the_scheduler_counts_them():
    pool = next(p for p in PLAN.target("aws-prod").pools if "llm-pretrain" in p.workloads)
    cores = int(parse_quantity(dict(pool.node_allocatable)["cpu"]))
    half = f"{cores // 2 + 1}"

    def with_init(restart_policy):
        def change(obj):
            _resources(obj, cpu=half)
            init = {"name": "prepare", "image": "busybox", "resources": {"requests": {"cpu": half}}}
            if restart_policy:
                init["restartPolicy"] = restart_policy
            pod_spec(obj)["initContainers"] = [init]
        return change

    # A regular init container runs before the containers: the larger of the two counts.
    assert _with("aws-prod", "llm-pretrain", with_init(None)) == []
    # A sidecar keeps running next to them: the sum counts, more than a node.
    [found] = _with("aws-prod", "llm-pretrain", with_init("Always"))
    assert "never schedule" in found.message


def test_a_quantity_the_api_server_refuses_is_an_error():
    [found] = _with("aws-prod", "llm-pretrain", lambda o: _resources(o, cpu="two"))
    assert found.level == ERROR and "'two' is not a Kubernetes quantity" in found.message


@pytest.mark.parametrize("attack", ["manifests-cpu-1e400.yaml", "manifests-memory-9.9e999.yaml",
                                    "manifests-cpu-9.9E18.yaml", "manifests-memory-99999999999Ei.yaml"])
def test_a_quantity_the_api_server_refuses_is_a_located_error_not_a_crash(tmp_path, capsys, monkeypatch, attack):
    """The example's patched objects with one request beyond 2^63-1 (apimachinery's bound): refused where it
    is written; no quantity reaches float()."""
    code, out = _cli(tmp_path, capsys, monkeypatch, (ATTACKS / attack).read_text())
    assert code in (1, 2) and "Traceback" not in out.err
    shown = out.out + out.err
    assert "all.yaml:" in shown and ("not a Kubernetes quantity" in shown or "too large" in shown)


def test_large_exact_quantities_are_shown_without_float():
    from gpustack.guardrails.manifests import _shown
    assert _shown(Fraction(2**63 - 1), "cpu") == "9223372036854775807"
    assert _shown(Fraction(3, 2) * 2**30, "memory") == "1.5Gi"
    assert _shown(Fraction(1, 10), "cpu") == "0.1"


def test_a_manifests_folder_of_too_many_documents_is_refused_before_parsing(tmp_path, capsys, monkeypatch):
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"
    code, out = _cli(tmp_path, capsys, monkeypatch, "---\n".join([pod] * 40_000))
    assert code == 2 and "more than 5,000 YAML documents" in out.err and "Traceback" not in out.err


@pytest.mark.parametrize("text, stored", [("0.0000000001", Fraction(1, 10**9)), ("1.5n", Fraction(2, 10**9)),
                                          ("1e-10", Fraction(1, 10**9)), ("100m", Fraction(1, 10))])
def test_a_quantity_is_read_as_the_api_server_keeps_it_rounded_up_to_whole_nanounits(text, stored):
    assert parse_quantity(text) == stored


def test_a_request_finer_than_the_api_server_keeps_is_reported_with_what_it_stores():
    [found] = _with("aws-prod", "llm-pretrain", lambda o: _resources(o, cpu="2.0000000001"))
    assert found.level == WARNING and found.path.endswith("resources.requests.cpu")
    assert "'2.0000000001' is finer than the API server keeps" in found.message and "2000000001n" in found.message
    # A limit of an init container is found where it is written.
    def init_limit(obj):
        pod_spec(obj)["initContainers"] = [{"name": "prep", "image": "busybox",
                                            "resources": {"limits": {"memory": "64.0000000001Mi"}}}]
    [found] = _with("aws-prod", "llm-pretrain", init_limit)
    assert found.path.endswith("initContainers[0].resources.limits.memory") and "'64.0000000001Mi'" in found.message
    assert _with("aws-prod", "llm-pretrain", lambda o: _resources(o, cpu="1500m")) == []
