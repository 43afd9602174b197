"""One test per validation rule, with the exact message a user sees."""

from __future__ import annotations

import re

import pytest

from gpustack.catalog import load_catalog
import yaml

from conftest import TARGETS, dedent, spec_text
from gpustack.errors import SpecError
from gpustack.spec import load_text

TRAIN = {"name": "train", "kind": "training", "gpu": "H100", "gpus": 8, "replicas": 1}
SERVE = {"name": "serve", "kind": "inference", "gpu": "A100-80GB", "mig": "3g.40gb", "replicas": {"min": 1, "max": 2}}


def errors(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_text(text, "spec.yaml")
    return [str(p) for p in info.value.problems]


def error(text: str) -> str:
    found = errors(text)
    assert len(found) == 1, found
    return found[0]


def at(text: str, needle: str, nth: int = 1) -> str:
    """'spec.yaml:LINE:COL' of the nth occurrence of `needle`: where a message must point."""
    start = -1
    for _ in range(nth):
        start = text.index(needle, start + 1)
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return f"spec.yaml:{line}:{column}"


def with_workload(**changes: object) -> str:
    return spec_text([{**TRAIN, **changes}])


def test_unknown_key_names_place_and_suggests():
    text = with_workload(chekpointing=True)
    assert error(text) == (
        f"{at(text, 'chekpointing')}: workloads[0].chekpointing: unknown key 'chekpointing' (did you mean "
        "'checkpointing'?); allowed here: name, kind, gpu, gpus, gpu_memory, mig, gpu_fraction, cpu, memory, "
        "replicas, checkpointing, schedule, hours_per_month, runs_per_month, requests_per_hour, labels, capacity, "
        "sharing, namespace, instance_types, burst_share, disk, idle, autostop, availability, container, block, flex")


def test_bad_enum_value_suggests():
    text = with_workload(kind="trainig")
    assert error(text) == (f"{at(text, 'trainig')}: workloads[0].kind: 'trainig' is not allowed (did you mean "
                           "'training'?); allowed: training, fine-tuning, inference, notebook")


def test_missing_required_key():
    text = spec_text([{"name": "nogpu", "kind": "training"}])
    assert error(text) == f"{at(text, 'name: nogpu')}: workloads[0]: missing required key 'gpu'"


def test_version_must_be_1():
    text = spec_text([TRAIN]).replace("version: 1", "version: 2")
    assert error(text) == f"{at(text, '2')}: version: 2 is not supported; this gpustack reads version 1"


def test_spec_name_is_a_short_dns_label():
    text = spec_text([TRAIN]).replace("name: t\n", "name: ML_Platform\n", 1)
    assert error(text) == (
        f"{at(text, 'ML_Platform')}: name: 'ML_Platform' is not valid: use lowercase letters, digits and '-', "
        "starting and ending with a letter or digit (a DNS label, at most 20 characters)")


def test_unique_workload_names():
    text = spec_text([dict(TRAIN), dict(TRAIN)])
    assert error(text) == (f"{at(text, 'train', 3)}: workloads[1].name: 'train' is used by workloads[0] too; "
                           "workload names must be unique")


def test_unique_target_names():
    text = spec_text([TRAIN], ("aws", "gcp")).replace("name: gcp-t", "name: aws-t")
    assert error(text) == (f"{at(text, 'aws-t', 2)}: targets[1].name: 'aws-t' is used by targets[0] too; target "
                           "names must be unique (one Pulumi stack each)")


def test_one_size_form_per_replica():
    text = spec_text([{**SERVE, "gpu_memory": "20Gi"}])
    assert error(text) == (f"{at(text, '3g.40gb')}: workloads[0].mig: give exactly one of gpus, gpu_memory, mig, "
                           "gpu_fraction per replica; this workload gives gpu_memory and mig")


def test_fractions_are_for_inference_and_notebooks():
    text = spec_text([{"name": "train", "kind": "training", "gpu": "H100", "gpu_fraction": 0.5}])
    assert error(text) == (
        f"{at(text, '0.5')}: workloads[0].gpu_fraction: gpu_fraction is for inference and notebook workloads; "
        "training uses whole GPUs: give gpus: N")


def test_min_max_replicas_only_for_inference():
    text = with_workload(replicas={"min": 1, "max": 2})
    assert error(text) == (
        f"{at(text, 'min')}: workloads[0].replicas: replicas: {{min, max}} is for inference (a steady floor and a "
        "peak); training takes a whole number")


def test_min_not_above_max():
    text = spec_text([{**SERVE, "replicas": {"min": 5, "max": 2}}])
    where = at(text, "min: 5")  # the location of the 5 after "min: "
    line, column = where.rsplit(":", 2)[1:]
    assert error(text) == f"spec.yaml:{line}:{int(column) + 5}: workloads[0].replicas.min: min (5) is more than max (2)"


def test_mig_profile_must_exist_for_the_gpu():
    text = spec_text([{**SERVE, "mig": "2g.25gb"}])
    assert error(text) == (
        f"{at(text, '2g.25gb')}: workloads[0].mig: '2g.25gb' is not a MIG profile of A100-80GB (did you mean "
        "'2g.20gb'?); valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb. "
        "See https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html")


def test_mig_needs_a_mig_gpu():
    text = spec_text([{**SERVE, "gpu": "T4", "mig": "1g.5gb"}])
    assert error(text) == (f"{at(text, '1g.5gb')}: workloads[0].mig: T4 does not support MIG; MIG GPUs: "
                           "A100-40GB, A100-80GB, H100, H100-NVL, H200, B200")


def test_gpu_memory_must_fit_the_gpu():
    text = spec_text([{"name": "s", "kind": "inference", "gpu": "T4", "gpu_memory": "20Gi"}])
    assert error(text) == (f"{at(text, '20Gi')}: workloads[0].gpu_memory: 20Gi is more than a whole T4 holds "
                           "(16Gi); use a larger GPU model or gpus: N")


def test_fraction_above_one_is_refused():
    text = spec_text([{"name": "s", "kind": "inference", "gpu": "T4", "gpu_fraction": 1.5}])
    assert error(text) == (f"{at(text, '1.5')}: workloads[0].gpu_fraction: 1.5 is more than one GPU; a fraction "
                           "is at most 1 (use gpus: N for whole GPUs)")


def test_unknown_gpu_model_lists_the_catalog():
    text = with_workload(gpu="H1000")
    assert error(text).startswith(f"{at(text, 'H1000')}: workloads[0].gpu: 'H1000' is not a GPU model of the "
                                  "catalog (did you mean 'H100'?); known: T4")


def test_ambiguous_gpu_model_asks_which():
    assert "A100 comes as A100-40GB or A100-80GB: say which" in error(with_workload(gpu="A100"))


def test_gpu_not_offered_in_region_names_where_it_is():
    text = spec_text([{"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25}], ("oci",))
    offered = load_catalog().offering("T4")
    aws_t4, azure_t4 = (", ".join(offered[c][:5]) + f" and {len(offered[c]) - 5} more" for c in ("aws", "azure"))
    assert error(text) == (
        f"{at(text, 'T4')}: workloads[0].gpu: the bundled catalog has no T4 rows for OKE us-ashburn-1 (target "
        f"'oci-t'); it has T4 in: EKS {aws_t4}; AKS {azure_t4}; GKE us-central1, us-east4; if OKE "
        "offers T4 there, add rows with --catalog FILE (or `catalog: FILE` in the spec), or run gpustack catalog "
        "refresh --cloud oci --region us-ashburn-1")


def test_gpu_missing_in_a_region_names_the_nearest_regions_that_have_it():
    text = spec_text([{"name": "nb", "kind": "notebook", "gpu": "L4", "gpu_fraction": 0.25}], ("aws",))
    text = text.replace("us-east-1", "eu-west-1")  # the source lists no g6 (L4) there
    message = error(text)
    assert message.startswith(f"{at(text, 'L4')}: workloads[0].gpu: the bundled catalog has no L4 rows for EKS "
                              "eu-west-1 (target 'aws-t'); nearest EKS regions with it: eu-west-2, eu-west-3, "
                              "eu-central-1; ")


@pytest.mark.parametrize(("cloud", "catalogued", "region", "nearest"), [
    ("aws", "us-east-1", "ca-west-1", "ca-central-1, us-west-1, us-west-2"),  # Calgary: Canada, then North America
    ("gcp", "us-central1", "northamerica-south1", "northamerica-northeast1, northamerica-northeast2, us-south1"),
    ("azure", "eastus", "canadawest", "canadaeast, canadacentral, centralus"),
    ("oci", "us-ashburn-1", "us-phoenix-1", "us-ashburn-1, ca-toronto-1, ca-montreal-1"),
])
def test_a_region_without_gpus_suggests_regions_of_its_own_geography_first(cloud, catalogued, region, nearest):
    text = spec_text([TRAIN], (cloud,)).replace(catalogued, region)
    message = error(text)
    assert f"nearest regions with GPUs: {nearest} (of " in message
    assert "(did you mean 'us-west-1'?)" not in message  # a spelling of another geography is no suggestion


def test_settings_each_cloud_requires():
    text = re.sub(r"    subnet_ids:\n(    - .*\n)+", "    {}\n", spec_text([TRAIN], ("aws",)))
    assert error(text) == f"{at(text, '{}')}: targets[0].settings: missing required key 'subnet_ids'"


def test_settings_values_are_checked():
    subnet = TARGETS["aws"]["settings"]["subnet_ids"][0]
    text = spec_text([TRAIN], ("aws",)).replace(subnet, subnet.replace("subnet-", "sub-"))
    bad = subnet.replace("subnet-", "sub-")
    assert error(text) == (f"{at(text, bad)}: targets[0].settings.subnet_ids[0]: '{bad}' is not valid: "
                           "an EC2 subnet id such as 'subnet-0a1b2c3d'")


def test_cloud_aliases_are_accepted_and_unknown_clouds_suggested():
    assert load_text(spec_text([TRAIN]).replace("cloud: aws", "cloud: eks")).targets[0].cloud == "aws"
    text = spec_text([TRAIN]).replace("cloud: aws", "cloud: ekss")
    assert error(text) == (f"{at(text, 'ekss')}: targets[0].cloud: 'ekss' is not allowed (did you mean 'eks'?); "
                           "allowed: aws, azure, gcp, oci (aliases: aks=azure, eks=aws, gke=gcp, google=gcp, "
                           "oke=oci, oracle=oci)")


def test_region_must_be_in_the_catalog():
    text = spec_text([TRAIN]).replace("us-east-1", "us-east-7")
    known = load_catalog().regions("aws")
    nearest = ", ".join(load_catalog().nearest_regions("aws", "us-east-7"))
    assert nearest.startswith("us-east-1, us-east-2")
    assert error(text) == (f"{at(text, 'us-east-7')}: targets[0].region: the bundled catalog has no EKS GPU instance "
                           "types in 'us-east-7' (did you mean 'us-east-2'?): its price sources list none there; "
                           f"nearest regions with GPUs: {nearest} (of {len(known)} catalogued); if EKS sells GPUs "
                           "there, add rows with --catalog FILE (or `catalog: FILE` in the spec), or run gpustack "
                           "catalog refresh --cloud aws --region us-east-7")


def test_target_workloads_must_exist():
    text = spec_text([TRAIN]).replace("  settings:", "  workloads: [trian]\n  settings:")
    assert error(text) == (f"{at(text, 'trian')}: targets[0].workloads[0]: 'trian' is not a workload of this spec "
                           "(did you mean 'train'?)")


@pytest.mark.parametrize("field, value, message", [
    ("days", "Mon-Fry", "workloads[0].schedule.days: 'Fry' in 'Mon-Fry' is not a day (did you mean 'Fri'?)"),
    ("hours", "8-18", "workloads[0].schedule.hours: '8-18' is not a window; use \"HH:MM-HH:MM\" in 24-hour time, "
                      "e.g. \"08:00-18:00\""),
    ("hours", "08:00-08:00", "workloads[0].schedule.hours: '08:00-08:00' is an empty window; to run all day use "
                             "\"00:00-24:00\""),
    ("timezone", "Europe/Berln", "workloads[0].schedule.timezone: 'Europe/Berln' is not an IANA time zone (did "
                                 "you mean 'Europe/Berlin'?)"),
])
def test_schedule_days_hours_and_zone(field, value, message):
    schedule = {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC", field: value}
    text = spec_text([{"name": "nb", "kind": "notebook", "gpu": "T4", "gpu_fraction": 0.25, "schedule": schedule}])
    assert error(text).startswith(f"{at(text, value)}: {message}")


def test_schedule_only_for_notebooks_and_fine_tuning():
    text = with_workload(schedule={"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"})
    assert error(text) == (f"{at(text, 'days')}: workloads[0].schedule: a schedule applies to fine-tuning and "
                           "notebook workloads, not training")


def test_memory_needs_a_unit():
    text = with_workload(memory=256)
    assert error(text) == (f"{at(text, '256')}: workloads[0].memory: 256 has no unit; write it with one, e.g. "
                           "'256Gi' or '256Mi'")


def test_label_values_must_be_strings():
    text = spec_text([TRAIN], labels={"cost-center": 4711})
    assert (
        error(text)
        == f'{at(text, "4711")}: labels.cost-center: label values are strings; quote it: cost-center: "4711"'
    )


def test_pricing_override_must_name_a_catalogued_type():
    text = spec_text([TRAIN], pricing={"instances": {"p5.48xlarg": {"on_demand": 50}}})
    assert error(text) == (f"{at(text, 'p5.48xlarg')}: pricing.instances.p5.48xlarg: 'p5.48xlarg' is not an "
                           "instance type of the bundled catalog (did you mean 'p5.48xlarge'?); prices can be "
                           "overridden only for catalogued types: add rows with --catalog FILE (or `catalog: FILE` in "
                           "the spec), or run gpustack catalog refresh")


def test_every_problem_is_reported_at_once():
    text = spec_text([{**TRAIN, "kind": "trainig", "gpus": 0}, {**SERVE, "mig": "9g.1gb"}])
    assert len(errors(text)) == 3


def test_yaml_problems_are_located():
    assert error("version: 1\nname: [\n").startswith("spec.yaml:3:1: not valid YAML:")
    assert error("version: 1\nversion: 1\n") == (
        "spec.yaml:2:1: duplicate key 'version' (first at line 1); each key may appear once")
    assert error("") == "spec.yaml:1:1: the file is empty; a spec starts with 'version: 1'"
    # Not a spec at all: said without echoing the file's contents.
    assert error("- a\n- b\n") == ("spec.yaml:1:1: this is not a gpustack spec: it holds a list, not a mapping "
                                   "(a spec starts with 'version: 1')")


def test_capability_gap_reported_before_render():
    # GKE's device plugin takes no 4g partitions on A100: caught when the spec is checked.
    from gpustack.plan import build_plan

    text = spec_text([{**SERVE, "mig": "4g.40gb"}], ("gcp",))
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml"))
    assert str(info.value) == (f"{at(text, '4g.40gb')}: workloads[0].mig: GKE cannot create 4g.40gb partitions on "
                               "A100-80GB; it offers: 1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb")


def test_reserved_pool_on_gke_needs_a_zone():
    from gpustack.plan import build_plan

    text = re.sub(r"    node_locations:\n(    - .*\n)+", "", spec_text([SERVE], ("gcp",)))
    first_setting = next(iter(set(TARGETS["gcp"]["settings"]) - {"node_locations"}))
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml"))
    assert str(info.value) == (f"{at(text, first_setting + ':')}: targets[0].settings: this target plans a reserved pool; set "
                               "settings.node_locations: GKE capacity reservations are zonal: each zone of "
                               "settings.node_locations holds its part of a reserved floor")


def test_a_reserved_pool_cannot_follow_a_schedule():
    text = spec_text([{"name": "tune", "kind": "fine-tuning", "gpu": "A100-80GB", "capacity": "reserved",
                       "schedule": {"days": "Mon-Fri", "hours": "08:00-18:00", "timezone": "UTC"}}])
    assert error(text) == (f"{at(text, 'reserved')}: workloads[0].capacity: a reserved pool runs, and is billed, "
                           "around the clock: it cannot follow a schedule; remove the schedule or the capacity")


def test_keys_yaml_reads_as_booleans_or_numbers_must_be_quoted():
    text = spec_text([TRAIN], labels={"team": "ml"}).replace("  team: ml\n", "  team: ml\n  on: call\n")
    assert error(text) == (f"{at(text, 'on: call')}: labels.on: YAML reads the key 'on' as true/false, not text; "
                           "quote it: \"on\"")


def test_a_price_override_no_target_can_use_is_refused():
    text = spec_text([TRAIN], pricing={"instances": {"Standard_NC24ads_A100_v4": {"on_demand": 3.0}}})
    assert error(text) == (f"{at(text, 'Standard_NC24ads_A100_v4')}: pricing.instances.Standard_NC24ads_A100_v4: no "
                           "target offers 'Standard_NC24ads_A100_v4' (the targets are in EKS us-east-1): this price "
                           "would never be used")


def test_a_spot_override_above_on_demand_is_refused():
    text = spec_text([TRAIN], pricing={"instances": {"p5.48xlarge": {"on_demand": 50, "spot": 60}}})
    assert "spot 60 is more than on_demand 50" in error(text)


def test_a_vanishing_fraction_is_refused():
    text = spec_text([{"name": "s", "kind": "inference", "gpu": "T4", "gpu_fraction": 0.0001}])
    assert "0.0001 is less than 0.01 of a GPU" in error(text)


def test_a_pinned_instance_type_must_exist_with_the_workloads_gpu():
    text = spec_text([{**TRAIN, "instance_types": {"eks": "p4de.24xlarge"}}])
    assert error(text) == (f"{at(text, 'p4de.24xlarge')}: workloads[0].instance_types.eks: 'p4de.24xlarge' has "
                           "A100-80GB GPUs, not H100 (target 'aws-t') (did you mean 'p5.4xlarge'?); H100 types there: "
                           "p5.48xlarge, p5.4xlarge")
    text = spec_text([{**TRAIN, "instance_types": {"awz": "p5.48xlarge"}}])
    assert "workloads[0].instance_types.awz: 'awz' is not allowed (did you mean 'aws'?)" in error(text)


def test_a_pinned_instance_type_that_cannot_hold_a_replica_is_located():
    from gpustack.plan import build_plan

    text = spec_text([{**TRAIN, "instance_types": {"aws": "p5.4xlarge"}}])
    with pytest.raises(SpecError) as info:
        build_plan(load_text(text, "spec.yaml"))
    assert "the pinned instance type p5.4xlarge (1 GPUs" in str(info.value)
    assert "does not hold one replica (8 GPU(s))" in str(info.value)


@pytest.mark.parametrize("field, value, message", [
    ("labels", {"cost-center": 1042}, 'label values are strings; quote it: cost-center: "1042"'),
    ("namespace", "Vision_Team", "'Vision_Team' is not"),
])
def test_one_bad_field_is_one_problem_not_one_more_per_target_listing_the_workload(field, value, message):
    doc = yaml.safe_load(spec_text([{**TRAIN, "name": "fraud-train", field: value}], ("aws", "gcp")))
    for target in doc["targets"]:
        target["workloads"] = ["fraud-train"]
    found = errors(yaml.safe_dump(doc, sort_keys=False))
    assert len(found) == 1 and message in found[0], found
    assert "is not a workload of this spec" not in found[0]


@pytest.mark.parametrize("pools, message", [
    ({"split_by": "team"}, "pools.split_by: expected a list of label keys"),
    ({"split_by": ["team", "team"]}, "pools.split_by[1]: 'team' is listed twice"),
    ({"split_by": ["Team!"]}, "pools.split_by[0]:"),
    ({"spilt_by": ["team"]}, "did you mean 'split_by'?"),
])
def test_pools_split_by_is_checked(pools, message):
    assert message in error(spec_text([TRAIN], pools=pools))


def test_workloads_share_defaults_with_yaml_merge_keys():
    text = dedent("""
        version: 1
        name: t
        x-serving: &serving {kind: inference, gpu: L4, gpu_fraction: 0.5, labels: {team: search}}
        targets:
          - {name: aws-t, cloud: aws, region: us-east-1, cluster: c1, settings: {subnet_ids: [subnet-0a1b]}}
        workloads:
          - <<: *serving
            name: chat
            replicas: 4
          - <<: *serving
            name: rerank
            gpu_fraction: 0.25
        """)
    spec = load_text(text, "spec.yaml")
    chat, rerank = spec.workloads
    assert (chat.kind, chat.gpu, chat.gpu_fraction, chat.replicas.max, dict(chat.labels)) == (
        "inference", "L4", 0.5, 4, {"team": "search"})
    assert (rerank.name, rerank.gpu_fraction) == ("rerank", 0.25)


def test_an_error_in_merged_defaults_points_at_the_defaults():
    text = dedent("""
        version: 1
        name: t
        x-serving: &serving {kind: inference, gpu: L44}
        targets:
          - {name: aws-t, cloud: aws, region: us-east-1, cluster: c1, settings: {subnet_ids: [subnet-0a1b]}}
        workloads:
          - <<: *serving
            name: chat
        """)
    assert error(text).startswith(f"{at(text, 'L44')}: workloads[0].gpu: 'L44' is not a GPU model")


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "kube-flannel",
                                       "gpu-operator", "gpustack-system"])
def test_a_system_namespace_is_refused_where_it_is_written(namespace):
    text = spec_text([{**TRAIN, "namespace": namespace}])
    assert error(text) == (f"{at(text, namespace)}: workloads[0].namespace: {namespace} is a system namespace "
                           "(kube-* or one gpustack installs: gpu-operator, gpustack-system); put the workload in a "
                           "namespace of its own, e.g. 'default' or the team's")


def test_the_refused_namespaces_are_those_gpustack_installs_into():
    from gpustack.render import GPUSTACK_NAMESPACE, hami, operator
    from gpustack.spec.fields import INSTALLED_NAMESPACES, SYSTEM_NAMESPACE_PREFIX

    for name in (operator.NAMESPACE, GPUSTACK_NAMESPACE, hami.NAMESPACE):
        assert name in INSTALLED_NAMESPACES or name.startswith(SYSTEM_NAMESPACE_PREFIX), name
