"""Kueue for team quotas (`targets[].settings.queue: kueue`): the setting, the plan's queues and quotas, the
rendered objects against Kueue's vendored CRDs, the queue label on Jobs, `check --manifests`, the Pulumi
program under mocks, and Kueue's admission over the flavors (tests/cloudsim/kueue.py)."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
import yaml
from cloudsim import kueue as sim
from conftest import TARGETS, spec_text
from test_in_cluster_pulumi import KUBECONFIG, plain
from test_render import validate

from gpustack.cli import main
from gpustack.clouds import CLOUDS
from gpustack.errors import SpecError
from gpustack.guardrails.manifests import check
from gpustack.guardrails.quantity import parse_quantity
from gpustack.plan import build_plan
from gpustack.plan import queues as planned_queues
from gpustack.plan.model import FlexPlan
from gpustack.plan.queueing import QUEUE_LABEL
from gpustack.render import in_cluster
from gpustack.render.kueue import KINDS
from gpustack.render.workloads import patch, wirings
from gpustack.spec import load_text
from gpustack.spec.yamlsource import parse_all
from gpustack.testing import run_program

SCHEMAS = Path(__file__).resolve().parent / "schemas"
QUEUED = {"queue": "kueue"}
# Two teams (the `team` label): vision trains and fine-tunes, nlp fine-tunes on the same GPU model, so
# both teams' fine-tuning shares the on-demand fallback pool; an inference workload stays out of the queues.
WORKLOADS = [
    {"name": "pretrain", "kind": "training", "gpu": "A100-80GB", "gpus": 1, "cpu": 8, "memory": "64Gi",
     "replicas": 4, "checkpointing": True, "namespace": "research", "labels": {"team": "vision"}},
    {"name": "tune", "kind": "fine-tuning", "gpu": "A100-80GB", "gpus": 1, "replicas": 3, "checkpointing": True,
     "namespace": "nlp", "labels": {"team": "nlp"}},
    {"name": "tune2", "kind": "fine-tuning", "gpu": "A100-80GB", "gpus": 1, "replicas": 2, "checkpointing": True,
     "namespace": "research", "labels": {"team": "vision"}},
    {"name": "chat", "kind": "inference", "gpu": "A100-80GB", "gpus": 1, "replicas": 2, "labels": {"team": "nlp"}},
]


def queued_text(workloads: list[dict] = WORKLOADS, cloud: str = "gcp", **top: object) -> str:
    doc = yaml.safe_load(spec_text(workloads, (cloud,), **top))
    doc["targets"][0]["settings"] = {**doc["targets"][0]["settings"], **QUEUED}
    return yaml.safe_dump(doc, sort_keys=False)


def queued_plan(workloads: list[dict] = WORKLOADS, cloud: str = "gcp", **top: object):
    plan = build_plan(load_text(queued_text(workloads, cloud, **top), "spec.yaml"))
    return plan, plan.targets[0]


PLAN, TARGET = queued_plan()
OBJECTS = [o for o in in_cluster(PLAN, TARGET).objects if o["kind"] in KINDS]


def kind(objects, name):
    return [o for o in objects if o["kind"] == name]


def cluster_queue(name):
    return next(o for o in kind(OBJECTS, "ClusterQueue") if o["metadata"]["name"] == name)


# -- the setting ------------------------------------------------------------------------------------
def test_a_bad_queue_value_is_a_located_error_naming_what_is_allowed():
    text = queued_text().replace("queue: kueue", "queue: keue")
    with pytest.raises(SpecError) as caught:
        load_text(text, "spec.yaml")
    [problem] = caught.value.problems
    assert problem.path == "targets[0].settings.queue"
    assert problem.location is not None and problem.location.line == text.splitlines().index(
        next(line for line in text.splitlines() if "queue: keue" in line)) + 1
    assert "'keue'" in problem.message and "kueue" in problem.message


def test_without_the_setting_nothing_is_queued():
    plan = build_plan(load_text(spec_text(WORKLOADS, ("gcp",)), "spec.yaml"))
    [target] = plan.targets
    assert target.queueing is None and json.loads(plan.to_json())["targets"][0]["queue"] is None
    assert not [o for o in in_cluster(plan, target).objects if o["kind"] in KINDS]
    assert all(QUEUE_LABEL not in patch(w)["metadata"]["labels"] for w in wirings(target))


def test_a_target_without_jobs_warns_that_nothing_is_queued():
    _, target = queued_plan([WORKLOADS[3]])
    assert [w.code for w in target.warnings if w.code == "queue-empty"] == ["queue-empty"]
    assert not kind(in_cluster(PLAN, target).objects, "ClusterQueue")


# -- the plan's decisions ---------------------------------------------------------------------------
def test_the_plan_json_carries_each_jobs_queue_and_each_teams_quota():
    queue = json.loads(PLAN.to_json())["targets"][0]["queue"]
    assert queue["cohort"] == "t" and queue["team_keys"] == ["team"]
    assert {w["workload"]: w["queue"] for w in queue["workloads"]} == {"pretrain": "vision", "tune": "nlp",
                                                                      "tune2": "vision"}
    assert queue["unqueued"] == ["chat"]  # a Deployment: Kueue does not suspend it
    nlp = next(q for q in queue["queues"] if q["name"] == "nlp")
    assert [q["nominal"]["nvidia.com/gpu"] for q in nlp["quotas"]] == ["3", "3"]  # spot, then the fallback
    assert any("Not queued: chat" in n for n in TARGET.notes)


def test_each_teams_quota_is_what_the_plan_sized_its_replicas_for_and_the_pools_hold_it():
    for flavor in TARGET.queueing.flavors:
        pool = TARGET.pool(flavor.pool)
        quotas = [dict(q.resources) for queue in TARGET.queueing.queues for q in queue.quotas if q.flavor == flavor.name]
        gpus = sum(int(q["nvidia.com/gpu"]) for q in quotas)
        assert gpus == sum(pl.replicas * round(pl.gpu_share) for pl in pool.placements)
        assert gpus <= pool.max_nodes * pool.gpus_per_node
        for resource in ("cpu", "memory"):
            total = sum(parse_quantity(q[resource]) for q in quotas)
            assert total <= parse_quantity(dict(pool.node_allocatable)[resource]) * pool.max_nodes, (pool.name, resource)


def test_teams_come_from_split_by_when_the_spec_splits_pools():
    workloads = [{**w, "labels": {"team": w["labels"]["team"], "org": "research" if w["name"] != "tune" else "lang"}}
                 for w in WORKLOADS]
    _, target = queued_plan(workloads, pools={"split_by": ["org"]})
    assert {w.workload: w.queue for w in target.queueing.workloads} == {"pretrain": "research", "tune": "lang",
                                                                        "tune2": "research"}
    # Split pools belong to one team each: no flavor is in two teams' queues.
    owners = [q.flavor for queue in target.queueing.queues for q in queue.quotas]
    assert len(owners) == len(set(owners))


def test_a_workload_without_a_team_label_is_queued_under_the_specs_name():
    workloads = [{k: v for k, v in WORKLOADS[0].items() if k != "labels"}]
    _, target = queued_plan(workloads)
    assert [(q.name, q.team) for q in target.queueing.queues] == [("t", "t")]


def test_team_values_that_are_no_dns_label_get_stable_valid_queue_names():
    name = planned_queues.queue_name("Vision_Team.EU")
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63
    assert name == planned_queues.queue_name("Vision_Team.EU") != planned_queues.queue_name("vision-team-eu")


def test_flavors_run_spot_before_the_on_demand_fallback_in_every_queue():
    for queue in TARGET.queueing.queues:
        capacities = [TARGET.pool(q.flavor).role == "fallback" for q in queue.quotas]
        assert capacities == sorted(capacities), queue.name
    nlp = cluster_queue("nlp")["spec"]["resourceGroups"][0]["flavors"]
    assert [TARGET.pool(f["name"]).capacity for f in nlp] == ["spot", "on-demand"]


def test_reordering_the_spec_changes_no_kueue_object():
    again, target = queued_plan(list(reversed(WORKLOADS)))
    assert [o for o in in_cluster(again, target).objects if o["kind"] in KINDS] == OBJECTS


# -- the rendered objects -----------------------------------------------------------------------------
def test_the_vendored_crds_name_their_kueue_release():
    for plural in ("resourceflavors", "clusterqueues", "localqueues", "admissionchecks", "provisioningrequestconfigs"):
        name = f"kueue.x-k8s.io_{plural}.yaml"
        head = (SCHEMAS / name).read_text(encoding="utf-8").split("group:")[0]
        assert "tag v0.19.2" in head and f"blob/v0.19.2/config/components/crd/bases/{name}" in head


@pytest.mark.parametrize("cloud", sorted(TARGETS))
def test_every_kueue_object_validates_against_the_vendored_crds(cloud):
    plan, target = queued_plan(cloud=cloud)
    objects = [o for o in in_cluster(plan, target).objects if o["kind"] in KINDS]
    assert {o["kind"] for o in objects} == {"ResourceFlavor", "ClusterQueue", "LocalQueue"}
    for obj in objects:
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        validate(obj)
        _check_cel_rules(obj)


def _check_cel_rules(obj):
    """The CEL rules (and the webhook's order rule) of the CRDs that gpustack's objects touch."""
    spec = obj["spec"]
    if obj["kind"] == "ClusterQueue":
        for group in spec["resourceGroups"]:
            for flavor in group["flavors"]:  # "flavors must have the same number of resources as the coveredResources"
                assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
        assert "preference" not in spec["flavorFungibility"]
        assert not (spec["preemption"]["reclaimWithinCohort"] == "Never" and "borrowWithinCohort" in spec["preemption"])
        flavors = {f["name"] for g in spec["resourceGroups"] for f in g["flavors"]}
        for check_ in spec.get("admissionChecksStrategy", {}).get("admissionChecks", []):
            assert set(check_["onFlavors"]) <= flavors
    if obj["kind"] == "ResourceFlavor":
        for toleration in spec.get("tolerations", []):
            assert toleration["operator"] == "Exists" and "value" not in toleration
            assert toleration["effect"] in ("NoSchedule", "PreferNoSchedule", "NoExecute")


def test_validation_would_catch_a_v1beta1_field():
    queue = copy.deepcopy(cluster_queue("nlp"))
    queue["spec"]["cohort"] = queue["spec"].pop("cohortName")  # the v1beta1 spelling
    with pytest.raises(Exception, match="cohort"):
        validate(queue)
    flavor = copy.deepcopy(kind(OBJECTS, "ResourceFlavor")[0])
    flavor["spec"]["nodeLabels"].update({f"k{i}": "v" for i in range(8)})  # maxProperties 8
    with pytest.raises(Exception, match="too many properties"):
        validate(flavor)


def test_local_queues_live_in_the_workloads_namespaces_and_name_their_teams_cluster_queue():
    local = {(o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]["clusterQueue"]
             for o in kind(OBJECTS, "LocalQueue")}
    assert local == {("nlp", "nlp"): "nlp", ("research", "vision"): "vision"}
    selector = cluster_queue("vision")["spec"]["namespaceSelector"]["matchExpressions"]
    assert selector == [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["research"]}]


def test_queued_provisioning_gets_its_admission_check_on_gke_only():
    """A pool whose nodes come through a ProvisioningRequest (GKE flex-start with queued provisioning)."""
    requests = TARGET.pod_requests
    tune_spot = next(p for p in TARGET.pools if p.kind == "fine-tuning" and p.capacity == "spot"
                     and "tune" in p.workloads)
    queued = FlexPlan(max_run_seconds=48 * 3600, queued=True, discount=0.0, discount_basis="declared", source="")
    pools = tuple(dataclasses.replace(p, capacity="flex", flex=queued) if p is tune_spot else p for p in TARGET.pools)
    spec = load_text(queued_text(), "spec.yaml")
    for cloud, expected in (("gcp", True), ("aws", False)):
        queueing = planned_queues.plan_queues(spec, pools, requests, CLOUDS.get(cloud))
        objects = [o for o in in_cluster(PLAN, dataclasses.replace(TARGET, queueing=queueing)).objects
                   if o["kind"] in KINDS]
        [config] = kind(objects, "ProvisioningRequestConfig") or [None]
        assert (config is not None) == expected, cloud
        if not expected:
            assert not kind(objects, "AdmissionCheck")
            continue
        [admission] = kind(objects, "AdmissionCheck")
        assert config["spec"] == {"provisioningClassName": "queued-provisioning.gke.io",
                                  "managedResources": ["nvidia.com/gpu"]}
        assert admission["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request",
                                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                                    "name": config["metadata"]["name"]}}
        nlp = next(o for o in kind(objects, "ClusterQueue") if o["metadata"]["name"] == "nlp")
        assert nlp["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": admission["metadata"]["name"], "onFlavors": [tune_spot.name]}]}
        vision = next(o for o in kind(objects, "ClusterQueue") if o["metadata"]["name"] == "vision")
        assert "admissionChecksStrategy" not in vision["spec"]  # none of its flavors is provisioned so
        for obj in objects:
            validate(obj)
            _check_cel_rules(obj)


# -- render --workloads and check --manifests -------------------------------------------------------
def test_render_workloads_labels_queued_jobs_and_cronjob_templates_but_not_deployments():
    by_name = {w.workload: w for w in wirings(TARGET)}
    assert patch(by_name["pretrain"])["metadata"]["labels"][QUEUE_LABEL] == "vision"
    assert patch(by_name["tune"])["metadata"]["labels"][QUEUE_LABEL] == "nlp"
    cron = patch(by_name["tune2"], "CronJob")
    assert cron["spec"]["jobTemplate"]["metadata"]["labels"][QUEUE_LABEL] == "vision"
    chat = patch(by_name["chat"])
    assert chat["kind"] == "Deployment" and QUEUE_LABEL not in chat["metadata"]["labels"]


def _manifest_findings(document: dict) -> list:
    documents = parse_all(yaml.safe_dump(document, sort_keys=False), "job.yaml")
    return [f for f in check(TARGET, documents) if QUEUE_LABEL in f.message + f.fix]


def _job(workload: str) -> dict:
    w = next(x for x in wirings(TARGET) if x.workload == workload)
    job = patch(w)
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "trainer:1"
    return job


def test_check_manifests_reports_a_job_without_its_queue_on_a_queued_target():
    job = _job("pretrain")
    assert _manifest_findings(job) == []
    del job["metadata"]["labels"][QUEUE_LABEL]
    [finding] = _manifest_findings(job)
    assert finding.level == "error" and finding.path == "metadata.labels" and finding.location.line > 0
    assert "names no queue" in finding.message and "kueue.x-k8s.io/queue-name: vision" in finding.fix


def test_check_manifests_reports_a_job_in_another_teams_queue_and_a_cronjob_without_one():
    job = _job("pretrain")
    job["metadata"]["labels"][QUEUE_LABEL] = "nlp"
    [finding] = _manifest_findings(job)
    assert "queue 'nlp'" in finding.message and "'vision'" in finding.message
    cron = patch(next(w for w in wirings(TARGET) if w.workload == "tune2"), "CronJob")
    del cron["spec"]["jobTemplate"]["metadata"]["labels"][QUEUE_LABEL]
    [finding] = _manifest_findings(cron)
    assert finding.path == "spec.jobTemplate.metadata.labels" and "its Jobs name no queue" in finding.message


def test_the_check_command_fails_on_an_unqueued_job(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(queued_text(), encoding="utf-8")
    job = _job("pretrain")
    del job["metadata"]["labels"][QUEUE_LABEL]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "job.yaml").write_text(yaml.safe_dump(job), encoding="utf-8")
    assert main(["check", str(spec), "--manifests", str(tmp_path / "m")]) == 1
    assert "names no queue" in capsys.readouterr().out


# -- the Pulumi program ---------------------------------------------------------------------------------
def test_pulumi_declares_the_rendered_kueue_objects_as_custom_resources(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(queued_text(), encoding="utf-8")
    resources = run_program(str(spec), TARGET.name, config=KUBECONFIG)
    declared = [r for r in resources if r.type.startswith("kubernetes:kueue.x-k8s.io/v1beta2:")]
    key = lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
    as_objects = [plain(dict(r.inputs)) for r in declared]
    assert sorted(as_objects, key=key) == sorted((plain(o) for o in OBJECTS), key=key)


# -- Kueue's admission over the flavors (tests/cloudsim/kueue.py) -----------------------------------------
def _jobs(workload: str, count: int) -> list[sim.Job]:
    w = next(x for x in wirings(TARGET) if x.workload == workload)
    queue = TARGET.queueing.queue_of(workload).queue
    return [sim.job_of(patch(w), queue, f"{workload}-{i}") for i in range(count)]


def test_spot_full_then_the_fallback_then_the_idle_quota_of_the_other_team_and_no_further():
    cohort = sim.cohort_of(OBJECTS)
    spot = next(p.name for p in TARGET.pools if p.capacity == "spot" and "tune" in p.workloads)
    fallback = next(p.name for p in TARGET.pools if p.role == "fallback")
    admitted = [cohort.assign(job) for job in _jobs("tune", 9)]
    # 3 on spot (nlp's quota there), 3 on its own fallback quota, then 2 borrowed from vision's idle fallback
    # quota: the fallback pool holds 5 GPUs (3 + 2) and nothing more is admitted.
    assert [a.flavor for a in admitted[:3]] == [spot] * 3 and {a.mode for a in admitted[:3]} == {"fit"}
    assert [a.flavor for a in admitted[3:6]] == [fallback] * 3 and {a.mode for a in admitted[3:6]} == {"fit"}
    pool = TARGET.pool(fallback)
    assert [(a.flavor, a.mode) for a in admitted[6:8]] == [(fallback, "borrow")] * 2
    assert admitted[8].flavor is None and admitted[8].mode == "preempt"  # only reclaim could make room: not admitted
    used = cohort.usage
    assert sum(v for (_, f, r), v in used.items() if (f, r) == (fallback, "nvidia.com/gpu")) <= (
        pool.max_nodes * pool.gpus_per_node)


def test_a_team_borrows_in_the_cohort_only_up_to_what_the_pools_hold():
    cohort = sim.cohort_of(OBJECTS)
    fallback = next(p.name for p in TARGET.pools if p.role == "fallback")
    pool = TARGET.pool(fallback)
    results = [cohort.assign(job) for job in _jobs("tune", 20) + _jobs("tune2", 20)]
    on_fallback = [a for a in results if a.flavor == fallback]
    assert len(on_fallback) == pool.max_nodes * pool.gpus_per_node  # every GPU of the pool, none beyond
    assert any(a.mode == "borrow" for a in on_fallback)
    # When the borrower's Jobs finish, the lender's quota is free again for its own Job.
    for admission, job in zip(results, _jobs("tune", 20) + _jobs("tune2", 20)):
        if admission.flavor == fallback and job.queue == "nlp":
            cohort.finish(job, fallback)
    assert cohort.assign(_jobs("tune2", 1)[0]).flavor == fallback


def test_kueue_offers_a_job_only_the_flavors_its_pods_can_land_on():
    cohort = sim.cohort_of(OBJECTS)
    pretrain = _jobs("pretrain", 1)[0]
    train_pool = next(p.name for p in TARGET.pools if "pretrain" in p.workloads)
    for flavor in cohort.flavors:
        assert (cohort.check_flavor(pretrain, flavor) is None) == (flavor == train_pool), flavor
    admitted = [cohort.assign(job) for job in _jobs("pretrain", 6)]
    assert [a.flavor for a in admitted] == [train_pool] * 4 + [None] * 2  # its 4 planned replicas


def test_a_job_with_a_resource_no_queue_covers_is_not_admitted():
    cohort = sim.cohort_of(OBJECTS)
    job = _jobs("pretrain", 1)[0]
    odd = dataclasses.replace(job, requests={**job.requests, "example.com/fpga": Fraction(1)})
    assert cohort.assign(odd).reasons == ("resource example.com/fpga unavailable in ClusterQueue",)


# -- over random specs ----------------------------------------------------------------------------------
@st.composite
def _job_specs(draw: st.DrawFn) -> list[dict]:
    out = []
    for i in range(draw(st.integers(1, 4))):
        out.append({"name": f"w{i}", "kind": draw(st.sampled_from(["training", "fine-tuning"])),
                    "gpu": draw(st.sampled_from(["A100-80GB", "H100"])), "gpus": draw(st.sampled_from([1, 2, 8])),
                    "cpu": draw(st.sampled_from([4, 8])), "memory": "32Gi", "checkpointing": draw(st.booleans()),
                    "replicas": draw(st.integers(1, 4)), "namespace": draw(st.sampled_from(["a", "b"])),
                    "labels": {"team": draw(st.sampled_from(["red", "blue"]))}})
    return out


@pytest.mark.parametrize("cloud", sorted(TARGETS))
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(workloads=_job_specs())
def test_random_specs_admit_nothing_beyond_what_the_pools_hold(cloud, workloads):
    """Kueue admitting every Job it can (each replica one Job, every team at once, borrowing allowed) never
    places more on a pool than its nodes hold, and each Job lands on a pool its pods can run on."""
    try:
        plan, target = queued_plan(workloads, cloud)
    except SpecError:
        assume(False)
    objects = [o for o in in_cluster(plan, target).objects if o["kind"] in KINDS]
    cohort = sim.cohort_of(objects)
    requests = {r.workload: r for r in target.pod_requests}
    planned = {w: max(pl.replicas for p in target.pools for pl in p.placements if pl.workload == w) for w in requests}

    def jobs(w, first: int, count: int) -> list[sim.Job]:
        wiring = next(x for x in wirings(target) if x.workload == w)
        queue = target.queueing.queue_of(w).queue
        return [sim.job_of(patch(wiring), queue, f"{w}-{i}") for i in range(first, first + count)]

    # The planned replicas, every team at once: each is admitted (the quotas are not smaller than the plan),
    # on a pool its pods can run on.
    for w in sorted(requests):
        for job in jobs(w, 0, planned[w]):
            admitted = cohort.assign(job)
            assert admitted.flavor in requests[w].pools, (job.name, admitted)
    # Then as many more as anyone submits, borrowing allowed: no pool gets more than its nodes hold.
    for w in sorted(requests):
        for job in jobs(w, planned[w], 12):
            admitted = cohort.assign(job)
            assert admitted.flavor is None or admitted.flavor in requests[w].pools
    for pool in target.pools:
        used = {r: sum((v for (_, f, name), v in cohort.usage.items() if f == pool.name and name == r), Fraction(0))
                for r in ("nvidia.com/gpu", "cpu", "memory")}
        assert used["nvidia.com/gpu"] <= pool.max_nodes * pool.gpus_per_node, pool.name
        for resource in ("cpu", "memory"):
            assert used[resource] <= parse_quantity(dict(pool.node_allocatable)[resource]) * pool.max_nodes


def test_kueue_on_a_dra_target_is_refused_at_the_queue_setting():
    """Kueue's quotas as written count nvidia.com/gpu; DRA pods ask through claims, so the two together would
    admit GPUs without a limit: a located error, not quotas that count nothing."""
    doc = yaml.safe_load(queued_text())
    for target in doc["targets"]:
        target["settings"]["gpu_allocation"] = "dra"
    text = yaml.safe_dump(doc, sort_keys=False)
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml"))
    message = str(info.value)
    assert "settings.queue" in message and "gpu_allocation: dra" in message
    assert "spec.yaml:" in message
