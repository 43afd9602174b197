"""sharing: fractional (enforced fractions through HAMi): asked for only, packed per GPU, rendered with HAMi."""

from __future__ import annotations

import itertools

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import spec_text
from gpustack.errors import SpecError
from gpustack.plan import build_plan, exact
from gpustack.plan.fractions import l2_bound, pack_fractions
from gpustack.plan.packing import Item, NodeShape
from gpustack.plan.pools import FRACTIONAL_NODE_LABELS
from gpustack.render import hami, in_cluster
from gpustack.render.files import HAMI_VALUES_FILE, render_files
from gpustack.spec import load_text


def serve(name: str, fraction: float, replicas: int, **fields: object) -> dict:
    return {"name": name, "kind": "inference", "gpu": "A10G", "gpu_fraction": fraction, "replicas": replicas,
            "capacity": "on-demand", **fields}


def plan_of(workloads: list[dict], clouds: tuple[str, ...] = ("aws",)):
    return build_plan(load_text(spec_text(workloads, clouds), "spec.yaml"))


MIXED = [serve("chat", 0.65, 4, sharing="fractional"), serve("embed", 0.3, 4, sharing="fractional")]


def test_enforced_fractions_pack_what_time_slicing_rounds_to_whole_gpus():
    [pool] = plan_of(MIXED).targets[0].pools
    assert pool.sharing.mode == "fractional" and "-frac-" in pool.name
    assert pool.gpus.required == 4  # each GPU: 65% + 30%
    sliced = plan_of([{k: v for k, v in w.items() if k != "sharing"} for w in MIXED]).targets[0]
    assert sum(p.gpus.required for p in sliced.pools) == 6  # 0.65 gets a whole GPU, 0.3 a third


def test_fractional_is_never_chosen_unless_asked():
    target = plan_of([serve("chat", 0.3, 4)]).targets[0]
    assert {p.sharing.mode for p in target.pools} == {"time-slicing"}


def test_fractional_pools_carry_hamis_node_label_and_keep_the_operators_plugin_off():
    [pool] = plan_of(MIXED).targets[0].pools
    labels = dict(pool.labels)
    assert {k: labels[k] for k in FRACTIONAL_NODE_LABELS} == FRACTIONAL_NODE_LABELS
    assert dict(hami.NODE_SELECTOR).items() <= labels.items()
    assert "gpu" not in pool.attribution  # HAMi's selector never becomes a cloud tag


def test_a_share_is_rounded_up_to_whole_percents_and_said_so():
    target = plan_of([serve("odd", 0.333, 3, sharing="fractional")]).targets[0]
    [pool] = target.pools
    assert pool.placements[0].gpu_share == 0.34
    assert any("planned as 34% of a GPU" in w.message for w in target.warnings)


def test_gke_cannot_enforce_fractions_and_says_where():
    with pytest.raises(SpecError) as error:
        plan_of([serve("chat", 0.3, 2, sharing="fractional", gpu="L4")], ("gcp",))
    assert "cannot enforce GPU fractions" in str(error.value) and "sharing" in str(error.value)


def test_fractional_needs_a_share_and_is_not_mig():
    with pytest.raises(SpecError, match="sharing: fractional needs a share per replica"):
        load_text(spec_text([{"name": "w", "kind": "inference", "gpu": "A10G", "sharing": "fractional"}]), "s.yaml")
    with pytest.raises(SpecError, match="asks for a MIG partition"):
        load_text(spec_text([{"name": "w", "kind": "inference", "gpu": "A100-80GB", "mig": "1g.10gb",
                              "sharing": "fractional"}]), "s.yaml")


def test_hami_is_rendered_only_for_targets_with_fractional_pools():
    plan = plan_of(MIXED)
    rendered = in_cluster(plan, plan.targets[0])
    assert rendered.hami is not None and rendered.hami.version == hami.CHART_VERSION
    values = yaml.safe_load(render_files(rendered)[HAMI_VALUES_FILE])
    assert values["devicePlugin"]["nvidiaNodeSelector"] == hami.NODE_SELECTOR
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["devicePlugin"]["tolerations"]
    plain = plan_of([serve("chat", 0.3, 4)])
    assert in_cluster(plain, plain.targets[0]).hami is None


def test_hami_lets_a_gpu_hold_as_many_pods_as_the_plan_puts_there():
    plan = plan_of([serve("tiny", 0.04, 50, sharing="fractional")])
    [pool] = plan.targets[0].pools
    assert pool.gpus.required == 2  # 25 replicas of 4% per GPU
    assert hami.values(plan.targets[0])["devicePlugin"]["deviceSplitCount"] == 25


def test_pods_ask_hami_for_the_planned_percent_of_compute_and_memory():
    target = plan_of([serve("odd", 0.333, 3, sharing="fractional")]).targets[0]
    [request] = target.pod_requests
    assert {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "34", "nvidia.com/gpumem-percentage": "34"}.items() <= \
        dict(request.resources).items()


# -- the packer and its bound -----------------------------------------------------------------------

def brute_force_gpus(sizes: list[int]) -> int:
    """Fewest GPUs of 100 holding `sizes`, by trying every assignment to k GPUs."""
    for k in range(1, len(sizes) + 1):
        for assignment in itertools.product(range(k), repeat=len(sizes)):
            loads = [0] * k
            for size, gpu in zip(sizes, assignment):
                loads[gpu] += size
            if max(loads) <= 100:
                return k
    return len(sizes)


ROOMY = NodeShape(8, 1000.0, 10_000.0, 100)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 100), min_size=1, max_size=7))
def test_bound_and_packing_bracket_the_optimum(sizes):
    best = brute_force_gpus(sizes)
    counts: dict[int, int] = {}
    for s in sizes:
        counts[s] = counts.get(s, 0) + 1
    assert l2_bound(counts) <= best
    packing = pack_fractions([Item(f"w{s}", n, s, 0.0, 0.0, 730.0) for s, n in counts.items()], ROOMY)
    assert packing.lower_bound <= best <= packing.gpus_required
    patterns, proved = exact.solve_fractions(counts, 100)
    assert proved and len(patterns) == best
    assert sorted(x for p in patterns for x in p) == sorted(sizes) and all(sum(p) <= 100 for p in patterns)


def test_cpu_decides_the_nodes_when_it_binds():
    # 16 replicas of 10% with 30 cores each: 2 GPUs would do, but a 96-core node holds only 3 of them.
    packing = pack_fractions([Item("w", 16, 10, 30.0, 1.0, 730.0)], NodeShape(8, 96.0, 1000.0, 100))
    assert (packing.nodes, packing.nodes_lower_bound, packing.proved_optimal) == (6, 5, False)
