"""settings.gpu_allocation: dra: the capability per provisioner, the claim each workload gets, the claims and
pods as Kubernetes validates them, their CEL against the devices NVIDIA's DRA driver publishes, which
autoscalers can wake a DRA pool at zero, and `check --manifests` on a DRA target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from cloudsim import dra as sim
from conftest import TARGETS, assert_golden_folder
from strategic_merge import merge, plain_object, pod_spec
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.guardrails.manifests import check as check_manifests
from gpustack.plan import build_plan, claims
from gpustack.plan.model import Plan, TargetPlan
from gpustack.render import in_cluster
from gpustack.render import claims as claim_render
from gpustack.render.files import render_files, workload_files
from gpustack.render.workloads import patch, wirings
from gpustack.spec import load_text
from gpustack.spec.yamlsource import parse_all

SCHEMAS = Path(__file__).parent / "schemas"
CHARTS = Path(__file__).parent / "charts"
TRAIN = {"name": "train", "kind": "training", "gpu": "A100-80GB", "gpus": 1, "replicas": 2, "checkpointing": True}
CHAT = {"name": "chat", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "replicas": {"min": 1, "max": 3}}
NOTEBOOKS = {"name": "notebooks", "kind": "notebook", "gpu": "A100-80GB", "gpu_fraction": 0.25, "replicas": 2}
# (cloud, provisioner, extra settings) that run DRA, and the workloads they can run.
RUNS = [("aws", "managed", {}, [TRAIN, CHAT, NOTEBOOKS]), ("aws", "karpenter", {}, [TRAIN, CHAT, NOTEBOOKS]),
        ("azure", "managed", {}, [TRAIN, CHAT, NOTEBOOKS]), ("gcp", "managed", {}, [TRAIN, NOTEBOOKS]),
        ("oci", "managed", {}, [TRAIN, CHAT, NOTEBOOKS])]
REFUSED = [("azure", "nap", {}), ("gcp", "compute-class", {}),
           ("oci", "karpenter", {"image_id": "ocid1.image.oc1.iad.aaaa"})]


def dra_text(cloud: str, workloads: list[dict[str, Any]], provisioner: str = "managed", **settings: str) -> str:
    target = TARGETS[cloud]
    target = {**target, "settings": {**target["settings"], "provisioner": provisioner, "gpu_allocation": "dra",
                                     **settings}}
    return yaml.safe_dump({"version": 1, "name": "t", "targets": [target], "workloads": workloads}, sort_keys=False)


def dra_plan(cloud: str, workloads: list[dict[str, Any]], provisioner: str = "managed", **settings: str) -> Plan:
    return build_plan(load_text(dra_text(cloud, workloads, provisioner, **settings)))


def warnings_of(target: TargetPlan, code: str) -> list[str]:
    return [w.message for w in target.warnings if w.code == code]


@pytest.mark.golden
def test_a_dra_targets_rendered_files_and_workload_patches_match_golden():
    # Whole GPUs, a MIG profile and a time-shared GPU on EKS managed node groups: the claim templates, the
    # shared claim, the DRA driver's release and the patches that make pods name their claims.
    plan = dra_plan("aws", [TRAIN, CHAT, NOTEBOOKS])
    [target] = plan.targets
    assert_golden_folder("render/aws-dra", render_files(in_cluster(plan, target)))
    assert_golden_folder("workloads/aws-dra", workload_files(target.name, wirings(target)))


def test_device_plugin_is_the_default_and_the_plan_says_so():
    plan = build_plan(load_text(yaml.safe_dump({"version": 1, "name": "t", "targets": [TARGETS["aws"]],
                                                "workloads": [TRAIN]})))
    target = json.loads(plan.to_json())["targets"][0]
    assert target["gpu_allocation"] == "device-plugin"
    assert all("claim" not in r for r in target["pod_requests"])
    assert target["pod_requests"][0]["resources"]["nvidia.com/gpu"] == "1"


def test_an_unknown_allocation_is_a_located_error():
    text = dra_text("aws", [TRAIN]).replace("gpu_allocation: dra", "gpu_allocation: dynamic")
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    [problem] = [str(p) for p in info.value.problems]
    assert "targets[0].settings.gpu_allocation" in problem and "device-plugin (default) or dra" in problem


@pytest.mark.parametrize(("cloud", "provisioner", "settings"), REFUSED)
def test_a_provisioner_that_cannot_run_dra_is_a_located_error(cloud, provisioner, settings):
    text = dra_text(cloud, [TRAIN], provisioner, **settings)
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml"))
    [problem] = [p for p in info.value.problems if "gpu_allocation" in p.path]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "gpu_allocation" in row)
    assert problem.path == "targets[0].settings.gpu_allocation" and problem.location.line == line
    assert "is not available with" in problem.message and "device-plugin" in problem.message


@pytest.mark.parametrize(("cloud", "provisioner", "settings", "workloads"), RUNS)
def test_dra_changes_how_pods_ask_not_what_the_plan_packs(cloud, provisioner, settings, workloads):
    dra = dra_plan(cloud, workloads, provisioner, **settings).targets[0]
    doc = yaml.safe_load(dra_text(cloud, workloads, provisioner, **settings))
    del doc["targets"][0]["settings"]["gpu_allocation"]
    plugin = build_plan(load_text(yaml.safe_dump(doc))).targets[0]
    assert [(p.name, p.instance_type, p.min_nodes, p.max_nodes) for p in dra.pools] == \
           [(p.name, p.instance_type, p.min_nodes, p.max_nodes) for p in plugin.pools]
    assert dra.cost.planned_monthly_usd == plugin.cost.planned_monthly_usd
    assert dra.gpu_allocation == "dra"
    for request in dra.pod_requests:
        assert request.claim is not None
        assert not any(name.startswith("nvidia.com/") for name, _ in request.resources)
    assert all(p.node_offers == () for p in dra.pools)
    assert any("Kubernetes 1.34 or later" in n for n in dra.notes)


@pytest.mark.parametrize("cloud", ["aws", "azure", "oci"])
def test_managed_pools_at_zero_under_the_cluster_autoscaler_are_named_with_the_floor_they_need(cloud):
    target = dra_plan(cloud, [TRAIN, CHAT]).targets[0]
    messages = warnings_of(target, "dra-scale-from-zero")
    at_zero = sorted(p.name for p in target.pools if p.min_nodes == 0)
    assert at_zero and len(messages) == len(at_zero)
    for name, message in zip(at_zero, sorted(messages)):
        assert f"pool {name!r}" in message and "floor of one node" in message and "7799" in message
    floors = [p.name for p in target.pools if p.min_nodes > 0]
    assert not any(f"pool {name!r}" in m for name in floors for m in messages)


def test_karpenter_wakes_dra_pools_itself_but_needs_its_alpha_switch():
    target = dra_plan("aws", [TRAIN, NOTEBOOKS], "karpenter").targets[0]
    assert not warnings_of(target, "dra-scale-from-zero")
    [switch] = warnings_of(target, "dra-switch")
    assert "settings.enableDRA" in switch and "karpenter.sh/docs/tasks/dra" in switch
    assert any("1.36" in m for m in warnings_of(target, "dra-sharing"))


def test_gke_dra_pools_drop_gkes_own_driver_and_sharing_and_carry_the_dra_label():
    target = dra_plan("gcp", [TRAIN, NOTEBOOKS]).targets[0]
    assert not warnings_of(target, "dra-scale-from-zero")
    for pool in target.pools:
        assert dict(pool.labels)["cloud.google.com/gke-nvidia-gpu-dra-driver"] == "true"
        assert pool.compiled.gpu_driver_version == "INSTALLATION_DISABLED"
        assert pool.compiled.gpu_sharing_strategy is None and pool.compiled.gpu_partition_size is None


def test_gke_refuses_mig_under_dra_at_the_setting():
    with pytest.raises(SpecError) as info:
        dra_plan("gcp", [CHAT])
    [problem] = [p for p in info.value.problems if "mig" in p.message]
    assert problem.path == "targets[0].settings.gpu_allocation" and "GKE" in problem.message


def test_time_slicing_more_replicas_than_a_gpu_holds_is_an_error_and_fractions_are_a_gap():
    many = {**NOTEBOOKS, "replicas": 9}
    with pytest.raises(SpecError) as info:
        dra_plan("aws", [many])
    assert any("shares a GPU only among the pods of one ResourceClaim" in p.message for p in info.value.problems)
    fractional = {**NOTEBOOKS, "sharing": "fractional"}
    with pytest.raises(SpecError) as info:
        dra_plan("aws", [fractional])
    assert any("no HAMi DRA driver is verified" in p.message for p in info.value.problems)


def test_the_claims_in_the_plan_json():
    target = json.loads(dra_plan("aws", [TRAIN, CHAT, NOTEBOOKS]).to_json())["targets"][0]
    by_workload = {r["workload"]: r["claim"] for r in target["pod_requests"]}
    assert by_workload["train"]["device_class"] == "gpu.nvidia.com" and by_workload["train"]["count"] == 1
    assert by_workload["chat"]["device_class"] == "mig.nvidia.com" and by_workload["chat"]["profile"] == "3g.40gb"
    assert by_workload["notebooks"]["kind"] == "ResourceClaim"
    assert by_workload["notebooks"]["sharing"] == {"strategy": "TimeSlicing", "feature_gate": "TimeSlicingSettings"}


def _claim_objects(plan: Plan) -> list[dict[str, Any]]:
    return claim_render.objects(plan, plan.targets[0])


ALL_PLANS = [dra_plan(c, w, p, **s) for c, p, s, w in RUNS] + [dra_plan("aws", [{**NOTEBOOKS, "sharing": "mps"}])]


@pytest.mark.parametrize("plan", ALL_PLANS, ids=lambda p: f"{p.targets[0].cloud}-{p.targets[0].provisioner}")
def test_every_claim_validates_against_kubernetes_1_34_strict_and_its_config_against_the_drivers_types(plan):
    schema = json.loads((SCHEMAS / "resource.nvidia.com_v1beta1_gpuconfig.json").read_text())
    objects = _claim_objects(plan)
    assert objects
    for obj in objects:
        assert kubernetes_validate.validate(obj, claim_render.KUBERNETES_VERSION, strict=True) == "1.34"
        spec = obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
        for config in spec["devices"].get("config", []):
            jsonschema.validate(config["opaque"]["parameters"], schema)


def test_the_gpuconfig_schema_refuses_what_the_driver_refuses():
    schema = json.loads((SCHEMAS / "resource.nvidia.com_v1beta1_gpuconfig.json").read_text())
    base = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}
    for bad in ({"strategy": "Spatial"}, {"strategy": "TimeSlicing", "mpsConfig": {}},
                {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 101}},
                {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Forever"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**base, "sharing": bad}, schema)


@pytest.mark.parametrize("gpu", sorted(claims.PRODUCT_PATTERNS))
def test_every_product_selector_compiles_and_picks_its_gpu_model_only(gpu):
    expression = claims.product_selector(gpu)
    assert expression is not None
    for other, name in sim.NVML_NAMES.items():
        device = sim.resource_slice("n", other, 1)["spec"]["devices"][0]
        assert sim.matches(expression, device) == (other == gpu), (gpu, name)
    for name in claims.PRODUCT_NAMES[gpu]:  # every name check --manifests reads matches too
        device = {"attributes": {"type": {"string": "gpu"}, "productName": {"string": name}}}
        assert sim.matches(expression, device)


def test_every_catalog_gpu_has_a_product_name():
    from gpustack.catalog import load_catalog

    catalog = load_catalog()
    models = {row.gpu for cloud in CLOUDS.names() for row in catalog.rows_of(cloud)}
    assert models and models <= set(claims.PRODUCT_PATTERNS) == set(claims.PRODUCT_NAMES)


def _node_slices(pool_gpu: str, pool: Any) -> list[dict[str, Any]]:
    mig = [(dict(g.layout), g.gpus) for g in pool.sharing.mig]
    return [sim.resource_slice(f"{pool.name}-node", pool_gpu, pool.gpus_per_node, mig)]


@pytest.mark.parametrize("plan", ALL_PLANS, ids=lambda p: f"{p.targets[0].cloud}-{p.targets[0].provisioner}")
def test_each_workloads_pods_and_claim_are_schedulable_on_its_own_pools_nodes_and_on_no_other_pool(plan):
    """The scheduler's view: the rendered pod (node affinity, tolerations) and its claim against a node of every
    pool, with the ResourceSlice the driver publishes there (its MIG layout cut by the MIG manager)."""
    target = plan.targets[0]
    pools = {p.name: p for p in target.pools}
    for wiring in wirings(target):
        [request] = [r for r in target.pod_requests if r.workload == wiring.workload]
        spec = _claim_spec(plan, request)
        pod_spec = patch(wiring)["spec"]["template"]["spec"]
        for name, pool in pools.items():
            labels = {**dict(pool.labels), "gpustack.dev/pool": pool.name}
            taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
            fits = sim.schedulable(pod_spec, labels, taints, spec, _node_slices(pool.gpu, pool))
            assert fits == (name in request.pools), (request.workload, name)


def _claim_spec(plan: Plan, request: Any) -> dict[str, Any]:
    obj = claim_render.claim_object(plan, plan.targets[0], request)
    assert obj is not None
    return obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]


def test_a_claim_alone_selects_its_gpu_model_and_mig_profile_and_nothing_else():
    """Without node affinity the claim's selectors still keep it off other GPU models and other profiles."""
    plan = dra_plan("aws", [TRAIN, CHAT])
    target = plan.targets[0]
    by = {r.workload: _claim_spec(plan, r) for r in target.pod_requests}
    a100, a100_mig = sim.resource_slice("a", "A100-80GB", 8), sim.resource_slice("m", "A100-80GB", 1, [({"3g.40gb": 2}, 1)])
    other_profile = sim.resource_slice("o", "A100-80GB", 1, [({"1g.10gb": 7}, 1)])
    h100 = sim.resource_slice("h", "H100", 8)
    assert sim.allocatable(by["train"], [a100]) and not sim.allocatable(by["train"], [h100])
    assert not sim.allocatable(by["train"], [a100_mig])  # a MIG-enabled GPU is not a whole GPU
    assert sim.allocatable(by["chat"], [a100_mig])
    assert not sim.allocatable(by["chat"], [other_profile]) and not sim.allocatable(by["chat"], [a100, h100])


@pytest.mark.parametrize(("cloud", "provisioner", "autoscaler"),
                         [("aws", "managed", "cluster-autoscaler"), ("aws", "karpenter", "karpenter-aws"),
                          ("azure", "managed", "cluster-autoscaler"), ("gcp", "managed", "gke-cluster-autoscaler"),
                          ("oci", "managed", "cluster-autoscaler")])
def test_which_autoscalers_wake_a_dra_pool_at_zero_is_what_the_plan_warns_about(cloud, provisioner, autoscaler):
    plan = dra_plan(cloud, [TRAIN], provisioner)
    target = plan.targets[0]
    [request] = target.pod_requests
    obj = claim_render.claim_object(plan, target, request)
    assert obj is not None
    for pool in target.pools:
        if pool.min_nodes:
            continue
        woken = sim.scales_from_zero(autoscaler, obj["spec"]["spec"], pool.gpu, pool.gpus_per_node, dict(pool.labels),
                                     enable_dra=provisioner == "karpenter")
        assert woken == CLOUDS.get(cloud).provisioner(provisioner).dra.scale_from_zero
        warned = any(f"pool {pool.name!r}" in m for m in warnings_of(target, "dra-scale-from-zero"))
        assert warned == (not woken)


def test_gke_without_its_dra_label_would_not_wake_either():
    plan = dra_plan("gcp", [TRAIN])
    target = plan.targets[0]
    [request] = target.pod_requests
    obj = claim_render.claim_object(plan, target, request)
    pool = target.pools[0]
    labels = {k: v for k, v in pool.labels if k != sim.GKE_DRA_LABEL}
    assert not sim.scales_from_zero("gke-cluster-autoscaler", obj["spec"]["spec"], pool.gpu, pool.gpus_per_node, labels)


def test_resource_slice_fixtures_are_valid_kubernetes_objects():
    for gpu in sim.NVML_NAMES:
        kubernetes_validate.validate(sim.resource_slice("n", gpu, 2), "1.34.0", strict=True)
    kubernetes_validate.validate(sim.resource_slice("n", "A100-80GB", 2, [({"3g.40gb": 2}, 1)]), "1.34.0", strict=True)


def test_render_writes_claims_the_dra_driver_values_and_turns_the_device_plugin_off():
    plan = dra_plan("aws", [TRAIN, CHAT, NOTEBOOKS])
    files = render_files(in_cluster(plan, plan.targets[0]))
    assert {"36-resourceclaimtemplate-default-train-gpu.yaml", "36-resourceclaimtemplate-default-chat-gpu.yaml",
            "37-resourceclaim-default-notebooks-gpu.yaml"} <= set(files)
    operator_values = yaml.safe_load(files["helm/gpu-operator-values.yaml"])
    assert operator_values["devicePlugin"] == {"enabled": False}
    assert operator_values["migManager"]["enabled"] is True  # MIG layouts are still cut by the MIG manager
    assert not any("device-plugin-config" in name for name in files)
    driver = yaml.safe_load(files["helm/nvidia-dra-driver-gpu-values.yaml"])
    assert driver["gpuResourcesEnabledOverride"] is True and driver["featureGates"] == {"TimeSlicingSettings": True}


def test_every_dra_driver_value_is_a_key_of_the_pinned_chart():
    from gpustack.render.dra_driver import CHART_VALUE_KEYS, values

    chart = yaml.safe_load((CHARTS / "nvidia-dra-driver-gpu-values-v25.12.0.yaml").read_text())
    for path in CHART_VALUE_KEYS:
        node: Any = chart
        for part in path.split("."):
            assert isinstance(node, dict) and part in node, path
            node = node[part]
    for plan in ALL_PLANS:
        target = plan.targets[0]
        rendered = values(target, CLOUDS.get(target.cloud))
        for path in CHART_VALUE_KEYS:
            ours: Any = rendered
            theirs: Any = chart
            for part in path.split("."):
                ours, theirs = ours[part], theirs[part]
            assert type(ours) is type(theirs), path


def test_gke_driver_root_is_gkes():
    from gpustack.render.dra_driver import values

    plan = dra_plan("gcp", [TRAIN])
    assert values(plan.targets[0], CLOUDS.get("gcp"))["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"


def test_workload_patches_name_the_claim_and_ask_for_no_extended_resource():
    plan = dra_plan("aws", [TRAIN, CHAT, NOTEBOOKS])
    for wiring in wirings(plan.targets[0]):
        obj = merge(plain_object(wiring.kind, wiring.workload, wiring.namespace), patch(wiring))
        kubernetes_validate.validate(obj, claim_render.KUBERNETES_VERSION, strict=True)
        spec = pod_spec(obj)
        [entry] = spec["resourceClaims"]
        [container] = spec["containers"]
        assert container["resources"]["claims"] == [{"name": entry["name"]}]
        assert not any(k.startswith("nvidia.com/") for k in container["resources"].get("limits", {}))
        key = "resourceClaimName" if wiring.workload == "notebooks" else "resourceClaimTemplateName"
        assert entry[key] == f"{wiring.workload}-gpu"


def test_kubectl_kustomize_applies_the_dra_patches_as_the_merge_does_and_the_result_validates(tmp_path):
    from kubectl_tool import kustomize, write_component

    plan = dra_plan("aws", [TRAIN, CHAT, NOTEBOOKS])
    [target] = plan.targets
    wired = wirings(target)
    component = write_component(tmp_path / "gpu", workload_files(target.name, wired))
    plain = [plain_object(w.kind, w.workload, w.namespace) for w in wired]
    built = {(o["kind"], o["metadata"]["name"]): o for o in kustomize(tmp_path / "overlay", plain, [component])}
    for w, original in zip(wired, plain, strict=True):
        obj = built[(w.kind, w.workload)]
        assert obj == merge(original, patch(w))
        kubernetes_validate.validate(obj, claim_render.KUBERNETES_VERSION, strict=True)
        [entry] = pod_spec(obj)["resourceClaims"]
        assert pod_spec(obj)["containers"][0]["resources"]["claims"] == [{"name": entry["name"]}]


def _documents(tmp_path: Path, text: str) -> list[Any]:
    del tmp_path
    return parse_all(text, "app.yaml")


def test_check_manifests_on_dra_passes_the_rendered_wiring_and_its_claims(tmp_path):
    plan = dra_plan("aws", [TRAIN, CHAT])
    target = plan.targets[0]
    patched = [merge(plain_object(w.kind, w.workload, w.namespace), patch(w)) for w in wirings(target)]
    texts = [yaml.safe_dump(o) for o in patched] + [yaml.safe_dump(o) for o in _claim_objects(plan)]
    findings = check_manifests(target, _documents(tmp_path, "---\n".join(texts)))
    assert [f for f in findings if f.level == "error"] == []


def test_check_manifests_reports_extended_resources_and_a_claim_for_a_device_the_pool_lacks(tmp_path):
    plan = dra_plan("aws", [TRAIN, CHAT])
    target = plan.targets[0]
    [chat] = [w for w in wirings(target) if w.workload == "chat"]
    obj = patch(chat)
    pod = obj["spec"]["template"]["spec"]
    pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "chat-mine"}]
    pod["containers"][0]["resources"]["limits"] = {"nvidia.com/mig-3g.40gb": "1"}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": "chat-mine", "namespace": "default"},
             "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "mig.nvidia.com",
                 "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]}}]}}}}
    findings = check_manifests(target, _documents(tmp_path, yaml.safe_dump(obj) + "---\n" + yaml.safe_dump(claim)))
    errors = [f for f in findings if f.level == "error"]
    assert any("nvidia.com/mig-3g.40gb" in f.message and "DRA" in f.message for f in errors)
    assert any("1g.10gb" in f.message and f.obj == "ResourceClaimTemplate/chat-mine" for f in errors)
    pod.pop("resourceClaims")
    findings = check_manifests(target, _documents(tmp_path, yaml.safe_dump(obj)))
    assert any("names no ResourceClaim" in f.message for f in findings)


def test_the_pulumi_program_declares_the_claims_and_the_dra_driver_after_the_operator(tmp_path):
    from gpustack.testing import run_program

    spec = tmp_path / "spec.yaml"
    spec.write_text(dra_text("aws", [TRAIN, CHAT, NOTEBOOKS]))
    resources = run_program(str(spec), "aws-t", config={"gpustack:kubeconfig": "apiVersion: v1\nkind: Config\n"})
    kinds = {(r.inputs.get("kind"), r.inputs.get("metadata", {}).get("name")) for r in resources}
    assert {("ResourceClaimTemplate", "train-gpu"), ("ResourceClaimTemplate", "chat-gpu"),
            ("ResourceClaim", "notebooks-gpu")} <= kinds
    releases = {r.name: r for r in resources if r.type == "kubernetes:helm.sh/v3:Release"}
    assert set(releases) == {"gpu-operator", "nvidia-dra-driver-gpu"}
    assert releases["nvidia-dra-driver-gpu"].inputs["values"]["gpuResourcesEnabledOverride"] is True
    assert releases["gpu-operator"].inputs["values"]["devicePlugin"] == {"enabled": False}
