"""`gpustack render --workloads`: the patches that land each workload on its pools, and only there."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from conftest import EXAMPLE, GOLDEN, assert_golden
from gpustack.cli import main
from gpustack.plan import build_plan
from gpustack.render import KUBERNETES_VERSION
from gpustack.render.files import MARKER, workload_files
from gpustack.render.workloads import FIRST, THEN, patch, wirings
from gpustack.spec import load_spec
from kubectl_tool import kustomize, write_component
from strategic_merge import merge, plain_object, pod_labels, pod_spec

EXAMPLE_PLAN = build_plan(load_spec(EXAMPLE))
TARGETS = [t.name for t in EXAMPLE_PLAN.targets]


def _wired(target_name: str) -> list[tuple[object, dict]]:
    target = EXAMPLE_PLAN.target(target_name)
    return [(w, merge(plain_object(w.kind, w.workload, w.namespace), patch(w))) for w in wirings(target)]


@pytest.mark.golden
@pytest.mark.parametrize("target", TARGETS)
def test_workload_files_match_golden(target):
    files = workload_files(target, wirings(EXAMPLE_PLAN.target(target)))
    for relative, text in files.items():
        assert_golden(f"workloads/{target}/{relative}", text)
    on_disk = {str(p.relative_to(GOLDEN / "workloads" / target)) for p in (GOLDEN / "workloads" / target).rglob("*")
               if p.is_file()}
    assert on_disk == set(files), "stale golden files: run `make golden`"


@pytest.mark.parametrize("target", TARGETS)
def test_patched_plain_objects_validate_strictly(target):
    for _, obj in _wired(target):
        used = kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        assert used == KUBERNETES_VERSION.rsplit(".", 1)[0]


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "StatefulSet", "Job", "CronJob"])
def test_every_object_kind_can_be_patched(kind):
    target = EXAMPLE_PLAN.target("aws-prod")
    w = next(w for w in wirings(target) if w.workload == "notebooks")
    obj = merge(plain_object(kind, w.workload, w.namespace), patch(w, kind))
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    assert pod_labels(obj)["gpustack.dev/workload"] == "notebooks"
    assert pod_spec(obj)["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert pod_spec(obj)["containers"][0]["image"], "the team's container keeps its image"


@pytest.mark.parametrize("target", TARGETS)
def test_pods_require_their_pools_and_tolerate_exactly_their_taints(target):
    plan_target = EXAMPLE_PLAN.target(target)
    pools = {p.name: p for p in plan_target.pools}
    for w, obj in _wired(target):
        request = next(r for r in plan_target.pod_requests if r.workload == w.workload)
        spec = pod_spec(obj)
        required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        [term] = required["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": "gpustack.dev/pool", "operator": "In",
                                             "values": sorted(request.pools)}]
        taints = {(t.key, t.effect) for name in request.pools for t in pools[name].taints}
        assert {(t["key"], t["effect"]) for t in spec["tolerations"]} == taints
        assert all(t["operator"] == "Exists" for t in spec["tolerations"])
        gpu = {k: v for k, v in dict(request.resources).items() if "/" in k}
        container = spec["containers"][0]
        assert container["resources"]["limits"] == gpu and gpu
        assert container["resources"]["requests"] == dict(request.resources)
        assert obj["metadata"]["labels"]["gpustack.dev/workload"] == w.workload
        for key, value in request.labels:
            assert pod_labels(obj)[key] == value


def _preferred(obj: dict) -> dict[str, int]:
    terms = pod_spec(obj)["affinity"]["nodeAffinity"].get("preferredDuringSchedulingIgnoredDuringExecution", [])
    return {v: t["weight"] for t in terms for v in t["preference"]["matchExpressions"][0]["values"]}


def test_inference_prefers_its_floor_then_its_burst():
    pools = {p.name: p for p in EXAMPLE_PLAN.target("aws-prod").pools}
    obj = next(o for w, o in _wired("aws-prod") if w.workload == "chat")
    weights = _preferred(obj)
    assert {pools[name].role: weight for name, weight in weights.items()} == {"floor": FIRST, "burst": THEN}


def test_fine_tuning_prefers_spot_and_allows_its_fallback():
    pools = {p.name: p for p in EXAMPLE_PLAN.target("aws-prod").pools}
    obj = next(o for w, o in _wired("aws-prod") if w.workload == "llm-finetune")
    weights = _preferred(obj)
    assert {pools[name].capacity: weight for name, weight in weights.items()} == {"spot": FIRST, "on-demand": THEN}
    assert pod_labels(obj)["gpustack.dev/checkpointing"] == "true"


def test_a_workload_on_one_pool_has_no_preference_and_no_spot_toleration_when_on_demand():
    obj = next(o for w, o in _wired("aws-prod") if w.workload == "ranker-train")
    assert _preferred(obj) == {}
    assert [t["key"] for t in pod_spec(obj)["tolerations"]] == ["nvidia.com/gpu"]
    assert "gpustack.dev/checkpointing" not in pod_labels(obj)


def test_kustomization_targets_each_patch_at_its_object():
    files = workload_files("aws-prod", wirings(EXAMPLE_PLAN.target("aws-prod")))
    component = yaml.safe_load(files["kustomization.yaml"])
    assert component["kind"] == "Component"
    assert {p["path"] for p in component["patches"]} == {f for f in files if f.startswith("patches/")}
    for entry in component["patches"]:
        body = yaml.safe_load(files[entry["path"]])
        assert entry["target"] == {"kind": body["kind"], "name": body["metadata"]["name"],
                                   "namespace": body["metadata"]["namespace"]}


def test_cli_writes_the_directory_and_renders_byte_identically(tmp_path, capsys):
    for out in ("a", "b"):
        assert main(["render", str(EXAMPLE), "--target", "oci-prod", "--workloads", "--out", str(tmp_path / out)]) == 0
    assert "workload patches" in capsys.readouterr().out
    first = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert first == second and Path(MARKER) in first and Path("kustomization.yaml") in first


def test_kustomize_builds_the_same_objects_as_the_merge(tmp_path):
    """kubectl's kustomize applies the rendered Component to plain objects as tests/strategic_merge.py does."""
    target = EXAMPLE_PLAN.target("azure-prod")
    wired = wirings(target)
    component = write_component(tmp_path / "gpu", workload_files(target.name, wired))
    plain = [plain_object(w.kind, w.workload, w.namespace) for w in wired]
    built = kustomize(tmp_path / "overlay", plain, [component])
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in built}
    for w, original in zip(wired, plain, strict=True):
        assert by_name[(w.kind, w.workload)] == merge(original, patch(w))
