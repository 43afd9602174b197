"""AKS node auto-provisioning (`settings.provisioner: nap`): per pool a NodePool and an AKSNodeClass,
valid against the Karpenter provider for Azure v1.14.2's CRDs, rendered for GitOps and declared by the
Pulumi program; what NAP cannot do (reserved floors, MIG, NodeOverlays) is said when the spec is
planned; a pending pod of each workload launches only NodePools of its own pools."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

import provisioner_cases as cases
from cloudsim import karpenter as sim
from conftest import nap_example_text, spec_text
from gpustack.catalog import load_catalog
from gpustack.clouds import CLOUDS
from gpustack.clouds.azure.nap import KUBELET_RESERVATION, SKU_NAME, NapPool
from gpustack.plan import build_plan
from gpustack.plan.nodes import allocatable, kubelet_allocatable
from gpustack.render import in_cluster
from gpustack.spec import load_text
from gpustack.testing import Declared, run_program
from test_render import SCHEMAS, validate

TARGET = "azure-nap"
PLAN = build_plan(load_text(nap_example_text(), "nap.yaml"))
[PLANNED] = PLAN.targets
RENDERED = in_cluster(PLAN, PLANNED)
NODE_POOLS = [o for o in RENDERED.node_objects if o["kind"] == "NodePool"]
NODE_CLASSES = {o["metadata"]["name"]: o for o in RENDERED.node_objects if o["kind"] == "AKSNodeClass"}
ROWS = {row.name: row for row in load_catalog().in_region("azure", PLANNED.region)}


@pytest.fixture(scope="module")
def declared(tmp_path_factory) -> list[Declared]:  # type: ignore[no-untyped-def]
    return cases.run_example(tmp_path_factory, nap_example_text(), TARGET)


# -- the plan --------------------------------------------------------------------------------------
def test_each_pool_is_compiled_into_a_nodepool_on_the_sku_and_an_aks_node_class():
    for pool in cases.compiled_pools(PLAN, "nap", SKU_NAME):
        compiled = pool["compiled"]
        assert compiled["os_disk_size_gb"] == pool["disk"]["size_gib"]
        assert (compiled["image_family"], compiled["gpu_mode"]) == ("Ubuntu", "Driver")
    assert all(isinstance(p.compiled, NapPool) for p in PLANNED.pools)


def test_what_nap_cannot_do_is_said_before_anything_is_rendered():
    codes = {(w.code, w.workload) for w in PLANNED.warnings}
    floors = {"chat", "embeddings", "moderation"}  # the example's inference: reserved floors and MIG
    assert {("reservation-unavailable", w) for w in floors} <= codes
    assert {("capability-gap", w) for w in floors} <= codes
    assert {p.capacity for p in PLANNED.pools} <= {"spot", "on-demand"}
    assert {p.sharing.mode for p in PLANNED.pools} <= {"none", "time-slicing"}
    assert not [o for o in RENDERED.node_objects if o["kind"] == "NodeOverlay"]  # NAP reads none
    gaps = {w.pool for w in PLANNED.warnings if w.code == "template-gap"}
    assert gaps == {p.name for p in PLANNED.pools if p.sharing.mode == "time-slicing"}
    assert all("documents no way to turn on the alpha NodeOverlay" in w.message
               for w in PLANNED.warnings if w.code == "template-gap")


def nap_spec(workload: dict) -> str:
    return spec_text([workload], ("azure",)).replace("    resource_group:", "    provisioner: nap\n    resource_group:")


def test_a_mig_profile_is_time_sliced_with_a_warning_and_the_same_target_on_agent_pools_keeps_mig():
    workload = {"name": "svc", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "replicas": 4}
    nap = build_plan(load_text(nap_spec(workload), "spec.yaml"))
    [pool] = nap.targets[0].pools
    assert pool.sharing.mode == "time-slicing" and pool.sharing.replicas == 2  # 3g.40gb: half the memory
    assert any(w.code == "capability-gap" and "MIG" in w.message for w in nap.targets[0].warnings)
    managed = build_plan(load_text(spec_text([workload], ("azure",)), "spec.yaml"))
    assert {p.sharing.mode for p in managed.targets[0].pools} == {"mig"}


def test_pools_are_planned_with_the_kubelet_reservation_nap_simulates():
    pool = next(p for p in PLANNED.pools if p.instance_type == "Standard_NC24ads_A100_v4")
    row = ROWS[pool.instance_type]
    cpu, memory = kubelet_allocatable(row.vcpus, row.memory_gib, KUBELET_RESERVATION, row.name)
    # 24 vCPUs: 0.06 + 0.04 + 2 x 0.02 + 20 x 0.01 = 0.34 reserved (pkg/providers/instancetype/instancetype.go).
    assert cpu == pytest.approx(row.vcpus - 0.34)
    template = CLOUDS.get("azure").provisioner("nap").template_node(row)  # and the GPU daemons' share
    assert template.vcpus == pytest.approx(allocatable(row.vcpus, row.memory_gib, KUBELET_RESERVATION, row.name)[0])
    assert template.vcpus < cpu
    assert memory < row.memory_gib - 750 / 1024


# -- the objects against the CRDs of v1.14.2 ------------------------------------------------------
AZURE_DOMAINS = {
    # CEL rules of the provider's NodePool CRD, spec.template.metadata.labels (tests/schemas/azure/).
    "karpenter.azure.com": {"karpenter.azure.com/aksnodeclass", "karpenter.azure.com/sku-name",
                            "karpenter.azure.com/sku-family", "karpenter.azure.com/sku-series",
                            "karpenter.azure.com/sku-version", "karpenter.azure.com/sku-cpu",
                            "karpenter.azure.com/sku-memory", "karpenter.azure.com/sku-networking-accelerated",
                            "karpenter.azure.com/sku-storage-premium-capable", "karpenter.azure.com/sku-storage-ultra-ssd",
                            "karpenter.azure.com/sku-storage-ephemeralos-maxsize", "karpenter.azure.com/sku-gpu-name",
                            "karpenter.azure.com/sku-gpu-manufacturer", "karpenter.azure.com/sku-gpu-count",
                            "karpenter.azure.com/placement-scope"},
    "kubernetes.azure.com": {"kubernetes.azure.com/mode", "kubernetes.azure.com/scalesetpriority",
                             "kubernetes.azure.com/priority", "kubernetes.azure.com/fips_enabled",
                             "kubernetes.azure.com/os-sku", "kubernetes.azure.com/cluster", "kubernetes.azure.com/sku-cpu",
                             "kubernetes.azure.com/sku-memory", "kubernetes.azure.com/ebpf-dataplane",
                             "kubernetes.azure.com/ebpf-host-routing", "kubernetes.azure.com/network-policy",
                             "kubernetes.azure.com/hostedvm"},
}


def cel_problems(obj: dict) -> list[str]:
    """The CEL rules of the CRDs (x-kubernetes-validations, which jsonschema does not run) that
    gpustack's objects touch, re-stated."""
    spec = obj["spec"]
    problems = []
    if obj["kind"] == "NodePool":
        found, keys = cases.nodepool_cel_problems(obj, ("agentpool", "storageprofile", "storagetier", "accelerator"))
        problems.extend(found)
        requirements = obj["spec"]["template"]["spec"]["requirements"]
        if any(v not in ("spot", "on-demand") for r in requirements if r["key"] == "karpenter.sh/capacity-type"
               for v in r["values"]):
            problems.append("capacity type not offered by the provider")
        for key in keys:
            domain = key.split("/")[0]
            for restricted, allowed in AZURE_DOMAINS.items():
                if domain.endswith(restricted) and key not in allowed:
                    problems.append(f'label domain "{restricted}" is restricted')
    else:
        for key, value in spec.get("tags", {}).items():
            if len(key) > 512 or any(c in key for c in "<>%&?\\") or len(value) > 256:
                problems.append(f"tag {key} is refused")
        if spec.get("fipsMode") == "FIPS" and spec.get("imageFamily") in ("Ubuntu2204", "Ubuntu2404"):
            problems.append("FIPS is not yet supported for Ubuntu2204 or Ubuntu2404")
    return problems


def test_every_node_object_validates_against_the_crds_of_the_azure_provider():
    cases.assert_node_objects_valid(RENDERED, PLANNED, "AKSNodeClass", cel_problems)


def test_validation_would_catch_a_wrong_field_or_value():
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["osDiskSizeGB"] = 4096
    with pytest.raises(jsonschema.ValidationError):
        validate(node_class)
    node_class = copy.deepcopy(next(iter(NODE_CLASSES.values())))
    node_class["spec"]["gpu"] = {"mode": "Install"}
    with pytest.raises(jsonschema.ValidationError):
        validate(node_class)
    node_class["apiVersion"] = "karpenter.azure.com/v1alpha2"  # served, not stored: gpustack writes v1beta1
    assert ("karpenter.azure.com/v1alpha2", "AKSNodeClass") not in _schema_keys()
    pool = copy.deepcopy(NODE_POOLS[0])
    pool["spec"]["template"]["metadata"]["labels"]["kubernetes.azure.com/agentpool"] = "x"
    assert cel_problems(pool)
    pool = copy.deepcopy(NODE_POOLS[0])
    pool["spec"]["template"]["spec"]["requirements"][1]["values"] = ["reserved"]
    assert cel_problems(pool)


def _schema_keys() -> set[tuple[str, str]]:
    from test_render import CRD_SCHEMAS

    return set(CRD_SCHEMAS)


def _without_cel(schema):  # type: ignore[no-untyped-def]
    if isinstance(schema, dict):
        return {k: _without_cel(v) for k, v in schema.items() if k != "x-kubernetes-validations"}
    if isinstance(schema, list):
        return [_without_cel(v) for v in schema]
    return schema


def test_the_azure_providers_nodepool_crd_differs_from_the_vendored_one_only_in_its_cel_rules():
    """Both are karpenter.sh/v1 NodePool: the objects validate against one schema, and the Azure copy's
    own rules (its label domains) are re-stated in `cel_problems`."""
    azure = yaml.safe_load((SCHEMAS / "azure" / "karpenter.sh_nodepools.yaml").read_text(encoding="utf-8"))
    common = yaml.safe_load((SCHEMAS / "karpenter.sh_nodepools.yaml").read_text(encoding="utf-8"))
    assert _without_cel(azure["openAPIV3Schema"]) == _without_cel(common["openAPIV3Schema"])
    assert azure["openAPIV3Schema"] != common["openAPIV3Schema"]
    rules = json.dumps(azure["openAPIV3Schema"])
    assert all(key in rules for allowed in AZURE_DOMAINS.values() for key in allowed)


def test_the_vendored_crds_name_their_release():
    for path in (Path(SCHEMAS) / "karpenter.azure.com_aksnodeclasses.yaml", Path(SCHEMAS) / "azure" / "karpenter.sh_nodepools.yaml"):
        head = path.read_text(encoding="utf-8").split("group:")[0]
        assert "tag v1.14.2" in head and f"blob/v1.14.2/pkg/apis/crds/{path.name}" in head


# -- a pending pod of each workload (Karpenter's scheduling semantics, tests/cloudsim/karpenter.py) --
def test_a_pending_pod_matches_its_own_pools_nodepools_and_no_other_kinds():
    cases.assert_each_pod_matches_its_pools_and_no_other_kind(PLANNED, NODE_POOLS, ROWS)


def test_pods_launch_their_nodes_spot_first_and_only_on_demand_without_checkpointing():
    launches = {r.workload: sim.launching(cases.pod(r), NODE_POOLS, ROWS) for r in PLANNED.pod_requests}
    cloud = {p.name: p.cloud_name for p in PLANNED.pools}
    by_cloud = {p.cloud_name: p for p in PLANNED.pools}
    [group] = PLANNED.fallback_groups
    [spot], [fallback] = group.spot, group.fallback
    assert launches["llm-finetune"] == [cloud[spot], cloud[fallback]]
    assert launches["ranker-train"] and all(by_cloud[n].capacity == "on-demand" for n in launches["ranker-train"])
    for request in PLANNED.pod_requests:  # every pod launches a node of its own kind, whole GPUs or time-sliced
        assert launches[request.workload], request.workload
        assert set(request.pools) <= {by_cloud[n].name for n in launches[request.workload]}
        assert {by_cloud[n].kind for n in launches[request.workload]} == {PLANNED.pool(request.pools[0]).kind}


# -- the Pulumi program -----------------------------------------------------------------------------
def test_pulumi_declares_the_rendered_node_objects_and_no_agent_pool(declared):
    cases.assert_declares_the_rendered_node_objects(declared, RENDERED, "gpustack:azure:GpuNodePool")
    assert not [r for r in declared if r.type.startswith("azure-native:containerservice:")]
    assert not [r for r in declared if "apacityReservation" in r.type]


def test_without_a_kubeconfig_the_program_stops_with_a_message(tmp_path):
    spec = tmp_path / "gpustack.yaml"
    spec.write_text(nap_example_text(), encoding="utf-8")
    with pytest.raises(Exception, match="gpustack:kubeconfig"):
        run_program(str(spec), TARGET)


# -- golden files ---------------------------------------------------------------------------------
@pytest.mark.golden
def test_rendered_files_match_golden():
    cases.assert_rendered_golden(RENDERED, TARGET)


@pytest.mark.golden
def test_program_resources_match_golden(declared):
    cases.assert_program_golden(TARGET, "the example's azure target provisioned by AKS node auto-provisioning "
                                "(tests/conftest.py nap_example_text)", declared)


# -- guardrails read the NodePools ------------------------------------------------------------------
def test_guardrails_read_each_nodepool_as_an_azure_pool(declared):
    cases.assert_views_are_the_pools(declared, PLANNED, "nap")


def test_guardrails_pass_the_nap_nodepools_and_flag_a_broken_one(declared):
    from gpustack.guardrails.view import SPOT

    views = cases.assert_guardrails_pass_and_catch_an_untainted_pool(declared, TARGET)
    clean = cases.rules_found(views, TARGET)
    spot_inference = [dataclasses.replace(v, capacities=frozenset({SPOT})) if v.kind == "inference" else v for v in views]
    spot_unchecked = [dataclasses.replace(v, capacities=frozenset({SPOT})) if v.checkpointing is False else v
                      for v in views]
    assert cases.rules_found(spot_inference, TARGET) - clean  # no spot-only inference
    assert cases.rules_found(spot_unchecked, TARGET) - clean  # spot only for checkpointed work


def test_asking_for_reserved_capacity_is_a_located_error_and_a_nodepool_change_drifts_nodes():
    from gpustack.clouds.provisioner import DRIFTS_NODES
    from gpustack.errors import SpecError

    workload = {"name": "svc", "kind": "inference", "gpu": "T4", "capacity": "reserved", "replicas": 2}
    with pytest.raises(SpecError) as info:
        build_plan(load_text(nap_spec(workload), "spec.yaml"))
    assert "workloads[0].capacity" in str(info.value) and "NAP launches on-demand and spot only" in str(info.value)
    nap = CLOUDS.get("azure").provisioner("nap")
    for field in ("labels", "taints", "instance_type", "capacity"):
        change = nap.node_change(field)
        assert change is not None and change.kind == DRIFTS_NODES and "node-auto-provisioning-disruption" in change.why


# -- day 2 ---------------------------------------------------------------------------------------
def test_every_nodepool_launches_its_planned_maximum_under_karpenters_limit_rule():
    cases.assert_every_nodepool_launches_its_maximum(PLANNED, NODE_POOLS, ROWS)


def test_nap_sees_the_sku_memory_less_its_vm_overhead_and_the_plan_fits_what_it_sees():
    for pool in PLANNED.pools:
        obj = next(o for o in NODE_POOLS if o["metadata"]["name"] == pool.cloud_name)
        seen = sim.offered(ROWS[pool.instance_type], obj)
        planned_mib = int(dict(pool.node_allocatable)["memory"].removesuffix("Mi"))
        assert planned_mib <= seen["memory"] / sim.MIB < planned_mib + 1, pool.name


def test_floors_and_training_without_checkpoints_keep_their_nodes():
    cases.assert_floors_and_unprotected_training_keep_their_nodes(PLANNED, NODE_POOLS, NODE_CLASSES, ROWS)
