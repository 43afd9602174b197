"""One instance type for all of a pool's replicas, kept while moving would save too little."""

from __future__ import annotations

import pytest

from gpustack.plan import build_plan
from gpustack.spec import load_text
from tests.conftest import spec_text


def serving(replicas_a: int, **top: object) -> str:
    # 20 CPU per replica: a g5.8xlarge (32 vCPU, 1 GPU) holds one, a g5.24xlarge (96 vCPU, 4 GPUs) four.
    return spec_text([
        {"name": "a", "kind": "inference", "gpu": "A10G", "gpus": 1, "cpu": 20, "memory": "32Gi",
         "replicas": replicas_a, "capacity": "on-demand"},
        {"name": "b", "kind": "inference", "gpu": "A10G", "gpus": 1, "cpu": 20, "memory": "32Gi", "replicas": 1,
         "capacity": "on-demand"}], **top)


def pools_of(text: str, current=None):  # type: ignore[no-untyped-def]
    return build_plan(load_text(text, "spec.yaml"), current=current).targets[0].pools


def test_the_pool_takes_the_type_that_is_cheapest_for_all_its_replicas():
    # Each workload alone is cheapest on g5.8xlarge (4 nodes together); all four replicas fit one g5.24xlarge.
    [pool] = pools_of(serving(3))
    assert (pool.instance_type, pool.max_nodes, pool.workloads) == ("g5.24xlarge", 1, ("a", "b"))
    assert any("less than on g5.8xlarge, its workloads' own type (every type that holds them priced)" in note
               for note in pool.notes)


def test_without_a_deployed_plan_the_threshold_does_not_keep_a_dearer_type():
    # Nothing is deployed, so nothing would be replaced: the cheapest type, whatever the threshold.
    [pool] = pools_of(serving(3, pools={"type_change_saving": 0.5}))
    assert (pool.instance_type, pool.max_nodes) == ("g5.24xlarge", 1)


def test_a_higher_threshold_keeps_the_deployed_type():
    deployed = build_plan(load_text(serving(2), "spec.yaml"))
    assert deployed.targets[0].pools[0].instance_type == "g5.8xlarge"
    [pool] = pools_of(serving(3, pools={"type_change_saving": 0.5}), current=deployed)
    assert (pool.instance_type, pool.max_nodes) == ("g5.8xlarge", 4)
    assert any("under pools.type_change_saving (50%)" in note for note in pool.notes)


def test_a_move_above_the_threshold_replaces_the_deployed_type():
    deployed = build_plan(load_text(serving(2), "spec.yaml"))
    [pool] = pools_of(serving(3), current=deployed)
    assert (pool.instance_type, pool.max_nodes) == ("g5.24xlarge", 1)
    assert any("more than pools.type_change_saving (10%)" in note for note in pool.notes)


def test_scaling_down_keeps_the_deployed_type_while_the_saving_is_under_the_threshold():
    deployed = build_plan(load_text(serving(3), "spec.yaml"))
    # 3 replicas: three g5.8xlarge would cost less than one g5.24xlarge, by less than 10%.
    [fresh] = pools_of(serving(2))
    [kept] = pools_of(serving(2), current=deployed)
    assert fresh.instance_type == "g5.8xlarge"
    assert (kept.instance_type, kept.name) == ("g5.24xlarge", deployed.targets[0].pools[0].name)
    assert any("kept on g5.24xlarge, as deployed" in note for note in kept.notes)


def test_a_pinned_type_is_never_moved():
    import yaml

    doc = yaml.safe_load(serving(3))
    doc["workloads"][0]["instance_types"] = {"aws": "g5.8xlarge"}
    assert {p.instance_type for p in pools_of(yaml.safe_dump(doc))} == {"g5.8xlarge"}


@pytest.mark.parametrize("bad", [1, -0.1, "10%"])
def test_the_threshold_is_a_share_below_one(bad):
    from gpustack.errors import SpecError

    with pytest.raises(SpecError, match="type_change_saving"):
        pools_of(serving(3, pools={"type_change_saving": bad}))


def test_diff_of_a_scale_down_keeps_the_deployed_pool_instead_of_replacing_it(tmp_path, capfd):
    from gpustack.cli import main

    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(serving(3))
    new.write_text(serving(2))
    main(["diff", str(old), str(new), "--format", "json"])
    out = capfd.readouterr().out
    # Planned alone, the new spec would put its three replicas on three g5.8xlarge: a replacement.
    assert '"replaced"' not in out and '"changed": false' in out
