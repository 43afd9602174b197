"""Sharing in whole plans: MIG layouts per pool, time-slicing rounding, bounds and notes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EVERY_CLOUD, spec_text
from gpustack.catalog import load_catalog
from gpustack.errors import SpecError
from gpustack.plan import build_plan
from gpustack.spec import load_text


def plan_of(workloads: list[dict], clouds: tuple[str, ...] = ("aws",)):
    return build_plan(load_text(spec_text(workloads, clouds), "spec.yaml"))


def serve(name: str, **fields: object) -> dict:
    return {"name": name, "kind": "inference", "gpu": "A100-80GB", "replicas": 1, **fields}


def held_by(pool, nodes: int | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for group in pool.sharing.mig:
        for profile, count in group.layout:
            out[profile] = out.get(profile, 0) + count * group.gpus * (pool.max_nodes if nodes is None else nodes)
    return out


def with_sibling(target, pool) -> list:
    """A reserved floor and its on-demand burst share one packing: their nodes hold their replicas together."""
    if pool.role not in ("floor", "burst"):
        return [pool]
    same = [p for p in target.pools if p.role in ("floor", "burst") and (p.kind, p.gpu, p.instance_type) ==
            (pool.kind, pool.gpu, pool.instance_type) and p.sharing.mig == pool.sharing.mig]
    return same


def test_a_4g_and_a_3g_share_one_a100_80gb():
    [pool] = plan_of([serve("big", mig="4g.40gb"), serve("mid", mig="3g.40gb")]).targets[0].pools
    assert [(dict(g.layout), g.gpus) for g in pool.sharing.mig] == [({"3g.40gb": 1, "4g.40gb": 1}, 1)]
    assert (pool.gpus.required, pool.gpus.lower_bound, pool.gpus.proved_optimal) == (1, 1, True)


def test_two_4g_instances_need_two_gpus():
    [pool] = plan_of([serve("big", mig="4g.40gb", replicas=2)]).targets[0].pools
    assert [(dict(g.layout), g.gpus) for g in pool.sharing.mig] == [({"4g.40gb": 1}, 2)]
    assert pool.gpus.required == pool.gpus.lower_bound == 2


MIG_ASKS = st.one_of(
    st.sampled_from(["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]).map(lambda p: {"mig": p}),
    st.sampled_from(["5Gi", "10Gi", "18Gi", "30Gi", "40Gi"]).map(lambda m: {"gpu_memory": m}),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(MIG_ASKS, st.integers(1, 40), st.integers(0, 40), st.sampled_from(["A100-80GB", "H100"])),
                min_size=1, max_size=5),
       st.sampled_from([("aws",), ("oci",), ("gcp",), ("azure",)]))
def test_every_layout_in_every_plan_is_valid_and_holds_every_replica(asks, clouds):
    workloads = [serve(f"w{i}", gpu=gpu, replicas={"min": min(low, high), "max": high}, **ask)
                 for i, (ask, high, low, gpu) in enumerate(asks)]
    try:
        plan = plan_of(workloads, clouds)
    except SpecError as error:  # a profile this cloud cannot create: a located problem, never a bad plan
        assert "cannot create" in str(error) or "no MIG profile" in str(error)
        return
    catalog = load_catalog()
    for pool in plan.targets[0].pools:
        model = catalog.gpu(pool.gpu).mig
        if pool.sharing.mode == "none":  # whole-GPU profiles where the cloud mixes layouts: whole GPUs
            assert clouds in (("aws",), ("oci",))
            assert {pl.gpu_share for pl in pool.placements} == {1.0}
            assert pool.gpus.required <= pool.gpus.provisioned
            continue
        assert pool.sharing.mode == "mig"
        for group in pool.sharing.mig:
            assert model.is_valid(dict(group.layout)), group
        assert sum(g.gpus for g in pool.sharing.mig) <= pool.gpus_per_node
        group = with_sibling(plan.targets[0], pool)
        holds = held_by(pool, sum(p.max_nodes for p in group))
        placements = [pl for p in group for pl in p.placements]
        for placement in placements:
            asked = sum(p.replicas for p in placements if p.profile == placement.profile)
            assert holds.get(placement.profile, 0) >= asked
        assert pool.gpus.lower_bound <= pool.gpus.required <= pool.gpus.provisioned
        assert pool.min_nodes <= pool.max_nodes


def test_a_floor_is_sized_with_the_layouts_its_nodes_actually_carry():
    # 30 x 3g.40gb and 9 x 1g.10gb need 3 nodes of 8 GPUs with one layout each holding 3 x 1g.10gb; the
    # 9 always-on 1g.10gb replicas therefore need all 3 nodes, not the 1 node they would need alone.
    workloads = [serve("small", mig="1g.10gb", replicas={"min": 9, "max": 9}, capacity="on-demand"),
                 serve("mid", mig="3g.40gb", replicas={"min": 0, "max": 30}, capacity="on-demand")]
    [pool] = plan_of(workloads).targets[0].pools
    assert held_by(pool)["1g.10gb"] == 9 and pool.max_nodes == 3
    assert pool.min_nodes == 3


def test_mixed_profiles_share_a_pool_on_eks_and_split_per_profile_on_gke():
    workloads = [serve("a", mig="1g.10gb", replicas=3), serve("b", mig="3g.40gb", replicas=2)]
    assert len(plan_of(workloads, ("aws",)).targets[0].pools) == 1
    target = plan_of(workloads, ("gcp",)).targets[0]
    assert sorted(p.sharing.mig[0].layout for p in target.pools) == [(("1g.10gb", 7),), (("3g.40gb", 2),)]
    assert any("split into one pool per profile (1g.10gb, 3g.40gb)" in note for note in target.notes)


def one_gpu_h100(name: str, profile: str, replicas: int) -> dict:
    return serve(name, gpu="H100", mig=profile, replicas=replicas, capacity="on-demand",
                 instance_types={"aws": "p5.4xlarge"})


def test_mixed_profiles_share_one_gpu_nodes_where_the_cloud_mixes_layouts():
    # 4 x 4g.40gb and 4 x 3g.40gb on one-GPU p5.4xlarge nodes: 4 nodes with {4g + 3g}, not 4 + 2 split by profile.
    [pool] = plan_of([one_gpu_h100("big", "4g.40gb", 4), one_gpu_h100("mid", "3g.40gb", 4)]).targets[0].pools
    assert pool.max_nodes == 4 and "mig-large" in pool.name
    assert [(dict(g.layout), g.gpus) for g in pool.sharing.mig] == [({"3g.40gb": 1, "4g.40gb": 1}, 1)]


def test_small_profiles_on_one_gpu_nodes_get_their_own_pool_and_leave_the_large_one_alone():
    large = [one_gpu_h100("big", "4g.40gb", 4), one_gpu_h100("mid", "3g.40gb", 4)]
    before = {p.name: (p.sharing, p.max_nodes) for p in plan_of(large).targets[0].pools}
    after = plan_of(large + [one_gpu_h100("tiny", "1g.10gb", 5), one_gpu_h100("two", "2g.20gb", 1)]).targets[0]
    assert {n: v for n, v in ((p.name, (p.sharing, p.max_nodes)) for p in after.pools) if n in before} == before
    [small] = [p for p in after.pools if p.name not in before]
    assert "mig-small" in small.name and small.workloads == ("tiny", "two")
    assert any("are in two pools" in note for note in after.notes)


def test_a_whole_gpu_profile_is_a_whole_gpu_where_layouts_mix_and_a_mig_pool_elsewhere():
    workloads = [serve("whole", mig="7g.80gb", replicas=3), serve("small", mig="1g.10gb", replicas=5)]
    eks = plan_of(workloads, ("aws",)).targets[0]
    [whole] = [p for p in eks.pools if "whole" in p.workloads]
    assert whole.sharing.mode == "none" and whole.gpus.required == 3
    [small] = [p for p in eks.pools if "small" in p.workloads]
    assert all("7g.80gb" not in dict(g.layout) for g in small.sharing.mig)
    assert any("7g.80gb is a whole A100-80GB" in w.message for w in eks.warnings)
    gke = plan_of(workloads, ("gcp",)).targets[0]
    assert {p.sharing.mode for p in gke.pools} == {"mig"}


# -- time-slicing and MPS --------------------------------------------------------------------------

def notebook(name: str, fraction: float, replicas: int, **fields: object) -> dict:
    return {"name": name, "kind": "notebook", "gpu": "T4", "gpu_fraction": fraction, "replicas": replicas, **fields}


def test_rounding_to_equal_shares_is_reported_per_pool_and_per_target():
    target = plan_of([notebook("nb", 0.3, 10)]).targets[0]
    [pool] = target.pools
    assert pool.sharing.replicas == 3
    data = json.loads(build_plan(load_text(spec_text([notebook("nb", 0.3, 10)]), "s.yaml")).to_json())
    pool_gpus = data["targets"][0]["pools"][0]["gpus"]
    assert {k: pool_gpus[k] for k in ("requested", "requested_lower_bound", "lower_bound", "rounding_loss")} == {
        "requested": 3.0, "requested_lower_bound": 3, "lower_bound": 4, "rounding_loss": 1}
    assert data["targets"][0]["gpus"]["rounding_loss"] == 1
    assert any("0.3 of a GPU as 1/3" in note for note in pool.notes)
    assert any(note.startswith("Fixed shares cost up to 1 GPU(s)") for note in target.notes)


def test_fractions_of_different_sizes_get_their_own_pools():
    target = plan_of([notebook("quarter", 0.25, 8), notebook("half", 0.5, 4), notebook("big", 0.6, 2)]).targets[0]
    by_workload = {p.workloads[0]: p for p in target.pools}
    assert {w: (p.sharing.mode, p.sharing.replicas) for w, p in by_workload.items()} == {
        "quarter": ("time-slicing", 4), "half": ("time-slicing", 2), "big": ("none", None)}
    assert len({p.name for p in target.pools}) == 3
    assert "share-rounded" in [w.code for w in target.warnings if w.workload == "big"]
    assert target.gpus.lower_bound == 2 + 2 + 2 and target.gpus.requested_lower_bound == 2 + 2 + 2


def test_mps_rounds_like_time_slicing():
    [pool] = plan_of([notebook("nb", 0.3, 10, sharing="mps")]).targets[0].pools
    assert (pool.sharing.mode, pool.sharing.replicas, pool.gpus.lower_bound) == ("mps", 3, 4)


def test_tiny_shares_of_small_workloads_share_one_pool_and_large_ones_keep_their_own():
    target = plan_of([notebook("eighths", 0.125, 3), notebook("tenths", 0.1, 5), notebook("many", 0.1, 100)]).targets[0]
    pools = {p.workloads: p for p in target.pools}
    assert pools[("eighths", "tenths")].sharing.replicas == 6 and pools[("eighths", "tenths")].gpus.required == 2
    assert pools[("many",)].sharing.replicas == 10
    assert any("planned as 1/6 of a GPU" in w.message for w in target.warnings if w.workload == "eighths")


def test_gke_caps_clients_per_gpu_at_48():
    [pool] = plan_of([notebook("nb", 0.01, 96)], ("gcp",)).targets[0].pools
    assert pool.sharing.replicas == 48 and pool.gpus.lower_bound == 2


@pytest.mark.parametrize("cloud", EVERY_CLOUD)
def test_every_pool_reports_how_it_was_packed(cloud):
    gpu = "A10" if cloud == "oci" else "T4"
    target = plan_of([notebook("nb", 0.25, 9, gpu=gpu), {"name": "t", "kind": "training", "gpu": gpu, "gpus": 1,
                                                        "replicas": 3, "checkpointing": True}], (cloud,)).targets[0]
    for pool in target.pools:
        assert pool.gpus.method in ("first-fit decreasing", "exact search")
        assert pool.gpus.lower_bound <= pool.gpus.required and pool.gpus.nodes_lower_bound <= pool.max_nodes


def test_cpu_hungry_replicas_of_different_profiles_get_nodes_of_their_own_rather_than_a_refusal():
    # Each node carries one 1g.10gb and one 3g.40gb instance, but 2 x 60 cores exceed a p4de node's CPU:
    # two nodes, one replica on each, fit.
    workloads = [serve("a", mig="1g.10gb", cpu=60), serve("b", mig="3g.40gb", cpu=60)]
    [pool] = plan_of(workloads).targets[0].pools
    assert (pool.instance_type, pool.max_nodes, pool.gpus.nodes_lower_bound) == ("p4de.24xlarge", 2, 2)


def test_a_cpu_hungry_floor_gets_the_nodes_its_cpu_needs():
    # Always on: 4 x 1g.10gb at 40 cores. Peak: 30 more at 1 core. Two p4de nodes (95 allocatable
    # cores each) carry 17 instances each; the floor fits their layouts on one node, but its 160 cores
    # need both.
    workloads = [serve("hungry", mig="1g.10gb", cpu=40, replicas={"min": 4, "max": 4}, capacity="on-demand"),
                 serve("light", mig="1g.10gb", cpu=1, replicas={"min": 0, "max": 30}, capacity="on-demand")]
    [pool] = plan_of(workloads).targets[0].pools
    assert (pool.min_nodes, pool.max_nodes) == (2, 2)


def test_explicit_mig_profiles_say_which_layout_rule_costs_gpus_not_an_empty_rounding():
    """7 replicas of mig: 4g.40gb ask for 4 GPUs of slices, but a GPU holds one 4g instance: 7 GPUs."""
    workload = {"name": "big", "kind": "inference", "gpu": "A100-80GB", "mig": "4g.40gb", "replicas": 7}
    [pool] = build_plan(load_text(spec_text([workload], ("aws",)), "s.yaml")).targets[0].pools
    [note] = [n for n in pool.notes if "at least 7" in n]
    assert "()" not in note
    assert note == ("MIG layouts: the profiles asked for add up to 4.00 GPUs (at least 4 GPUs), but NVIDIA's valid "
                    "layouts place 4g.40gb at most 1 per GPU, so they need at least 7.")


def test_a_new_profile_in_a_one_gpu_pool_is_a_repartition_that_diff_reports(tmp_path, capsys):
    from gpustack.cli import main

    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(spec_text([one_gpu_h100("big", "4g.40gb", 4)]))
    new.write_text(spec_text([one_gpu_h100("big", "4g.40gb", 4), one_gpu_h100("mid", "3g.40gb", 4)]))
    capsys.readouterr()
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "Repartitioned" in out and "infer-h100-mig-large-ondemand-p5-4xlarge" in out
    assert "pools replaced" in out and "| 0 |" in out  # same node pool: nothing replaced
