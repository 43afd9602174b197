"""`workloads[].container` and the patched object: a team's manifests whose GPU container is not named
after the workload, and a fine-tuning run as a CronJob, patched by the real `kubectl kustomize`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from gpustack.cli import main
from gpustack.errors import SpecError
from gpustack.guardrails.manifests import ERROR, WARNING
from gpustack.plan import build_plan
from gpustack.render import KUBERNETES_VERSION
from gpustack.render.workload_objects import patch_target
from kubectl_tool import kustomize
from strategic_merge import pod_spec

SPEC = """\
version: 1
name: newcomer
targets:
  - name: aws-pilot
    cloud: aws
    region: us-east-1
    cluster: team-cluster
    settings: {subnet_ids: [subnet-0a1b, subnet-0c2d]}
workloads:
  - name: chat
    kind: inference
    gpu: H100
    gpus: 4
    replicas: {min: 2, max: 6}
    namespace: serving
  - name: nightly-tune
    kind: fine-tuning
    gpu: A100-80GB
    gpus: 8
    checkpointing: true
    namespace: research
    schedule: {days: Mon-Sun, hours: "01:00-05:00", timezone: Europe/Berlin}
    autostop: {kind: cronjob}
"""

# What the team had before gpustack: vLLM serving `chat` from a container named vllm, and the nightly
# fine-tune as a CronJob whose container is `trainer`.
DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "chat", "namespace": "serving"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "chat"}},
             "template": {"metadata": {"labels": {"app": "chat"}}, "spec": {"containers": [
                 {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3",
                  "args": ["--model", "meta-llama/Meta-Llama-3-70B-Instruct", "--tensor-parallel-size", "4"]}]}}}}
CRONJOB = {
    "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly-tune", "namespace": "research"},
    "spec": {"schedule": "0 1 * * *", "jobTemplate": {"spec": {"template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "trainer", "image": "registry.example.com/ml/tune:2.1"}]}}}}}}
MANIFESTS = [DEPLOYMENT, CRONJOB]
GPUS = {"chat": "4", "nightly-tune": "8"}


def _spec(tmp_path: Path, text: str = SPEC) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def _manifests(tmp_path: Path, objects: list[dict]) -> Path:
    path = tmp_path / "team" / "objects.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


def _render(tmp_path: Path, spec: Path, *extra: str) -> Path:
    out = tmp_path / "gpu"
    assert main(["render", str(spec), "--target", "aws-pilot", "--workloads", "--out", str(out), *extra]) == 0
    return out


def _check(spec: Path, objects: list[dict], capsys: pytest.CaptureFixture[str]) -> dict:
    path = spec.parent / "check.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    capsys.readouterr()  # what earlier commands printed
    main(["check", str(spec), "--manifests", str(path), "--format", "json"])
    return json.loads(capsys.readouterr().out)


def _built_ok(built: list[dict]) -> None:
    """One container per pod, with its image, asking the workload's GPUs; valid to the API's schema."""
    by_name = {o["metadata"]["name"]: o for o in built}
    for name, gpus in GPUS.items():
        obj = by_name[name]
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        [container] = pod_spec(obj)["containers"]
        assert container["image"] == next(
            c["image"] for o in MANIFESTS if o["metadata"]["name"] == name for c in pod_spec(o)["containers"])
        assert container["resources"]["limits"] == {"nvidia.com/gpu": gpus}
        assert pod_spec(obj)["tolerations"], "the patch reached the pod template"
    assert by_name["nightly-tune"]["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"][
        "gpustack.dev/workload"] == "nightly-tune"


def test_rendered_with_the_manifests_kustomize_patches_their_own_containers(tmp_path, capsys):
    spec = _spec(tmp_path)
    component = _render(tmp_path, spec, "--manifests", str(_manifests(tmp_path, MANIFESTS)))
    built = kustomize(tmp_path / "overlay", MANIFESTS, [component])
    _built_ok(built)
    assert _check(spec, built, capsys)["errors"] == 0


def test_the_spec_container_patches_it_without_the_manifests(tmp_path, capsys):
    text = SPEC.replace("    namespace: serving\n", "    namespace: serving\n    container: vllm\n").replace(
        "    autostop: {kind: cronjob}\n", "    autostop: {kind: cronjob}\n    container: trainer\n")
    spec = _spec(tmp_path, text)
    built = kustomize(tmp_path / "overlay", MANIFESTS, [_render(tmp_path, spec)])
    _built_ok(built)
    found = _check(spec, MANIFESTS, capsys)["targets"]["aws-pilot"]
    assert not [f for f in found if any(w in f["message"] for w in ("only container", "would add", "no image"))]
    assert "on the container named vllm" in next(f["fix"] for f in found if f["workload"] == "chat"
                                                 and "no container requests" in f["message"])


def test_check_reports_what_a_patch_by_the_workloads_name_would_do(tmp_path, capsys):
    """Rendered without the manifests and without `container`, the patch adds a container `chat` with no
    image (and the pod asks for twice the GPUs): check warns before, and fails the built objects."""
    spec = _spec(tmp_path)
    before = _check(spec, MANIFESTS, capsys)["targets"]["aws-pilot"]
    warned = {f["workload"]: f for f in before if f["level"] == WARNING and "only container" in f["message"]}
    assert set(warned) == {"chat", "nightly-tune"}
    assert warned["chat"]["fix"] == "set `container: vllm` on workload chat in the spec"
    built = kustomize(tmp_path / "overlay", MANIFESTS, [_render(tmp_path, spec)])
    chat = next(o for o in built if o["metadata"]["name"] == "chat")
    assert sorted(c["name"] for c in pod_spec(chat)["containers"]) == ["chat", "vllm"], "what the check guards against"
    after = _check(spec, built, capsys)["targets"]["aws-pilot"]
    imageless = [f for f in after if "has no image" in f["message"]]
    assert {f["workload"] for f in imageless} == {"chat", "nightly-tune"}
    assert all(f["level"] == ERROR for f in imageless)
    assert "set `container: vllm` on workload chat" in next(f["fix"] for f in imageless if f["workload"] == "chat")


def test_a_spec_container_the_object_lacks_is_an_error_and_render_refuses(tmp_path, capsys):
    spec = _spec(tmp_path, SPEC.replace("    namespace: serving\n", "    namespace: serving\n    container: server\n"))
    found = _check(spec, MANIFESTS, capsys)["targets"]["aws-pilot"]
    [added] = [f for f in found if "would add" in f["message"]]
    assert added["level"] == ERROR and added["path"] == "spec.template.spec.containers"
    assert "'server'" in added["message"] and "vllm" in added["fix"]
    manifests = _manifests(tmp_path, MANIFESTS)
    out = tmp_path / "gpu"
    assert main(["render", str(spec), "--target", "aws-pilot", "--workloads", "--manifests", str(manifests),
                 "--out", str(out)]) == 2
    assert "has no container 'server', only 'vllm'" in capsys.readouterr().err
    assert not out.exists(), "no partial output"


def test_an_object_of_two_containers_needs_the_spec_to_say_which(tmp_path, capsys):
    two = copy.deepcopy(DEPLOYMENT)
    pod_spec(two)["containers"].append({"name": "metrics", "image": "registry.example.com/exporter:1"})
    found = _check(_spec(tmp_path), [two, CRONJOB], capsys)["targets"]["aws-pilot"]
    [added] = [f for f in found if "would add" in f["message"]]
    assert added["workload"] == "chat" and "vllm, metrics" in added["fix"]


def test_the_patch_targets_the_kind_and_name_autostop_says():
    plan = build_plan(load_spec_text(SPEC.replace("{kind: cronjob}", "{kind: cronjob, name: tune-at-night}")))
    request = next(r for r in plan.targets[0].pod_requests if r.workload == "nightly-tune")
    assert patch_target(request) == type(patch_target(request))("CronJob", "tune-at-night", "nightly-tune")
    chat = next(r for r in plan.targets[0].pod_requests if r.workload == "chat")
    assert (patch_target(chat).kind, patch_target(chat).name) == ("Deployment", "chat")


def test_a_bad_container_name_is_located():
    with pytest.raises(SpecError) as info:
        load_spec_text(SPEC.replace("    namespace: serving\n", "    namespace: serving\n    container: vLLM_0\n"))
    [problem] = info.value.problems
    assert problem.path == "workloads[0].container" and "DNS label" in problem.message


def test_the_plan_json_carries_the_container(tmp_path):
    plan = build_plan(load_spec_text(SPEC.replace("    namespace: serving\n", "    namespace: serving\n    container: vllm\n")))
    requests = {r["workload"]: r for r in json.loads(plan.to_json())["targets"][0]["pod_requests"]}
    assert requests["chat"]["container"] == "vllm" and "container" not in requests["nightly-tune"]


def load_spec_text(text: str):  # type: ignore[no-untyped-def]
    from gpustack.spec.load import load_text

    return load_text(text, "spec.yaml")


def test_render_manifests_needs_workloads(tmp_path, capsys):
    assert main(["render", str(_spec(tmp_path)), "--target", "aws-pilot", "--manifests", "x.yaml"]) == 2
    assert "--manifests goes with --workloads" in capsys.readouterr().err

