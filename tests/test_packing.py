"""The packers against brute force on small inputs, their lower bounds, and random demands."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpustack.catalog.mig import MIG_MODELS
from gpustack.plan.bounds import layout_lp_bound, mig_bounds
from gpustack.plan.mig_packing import nodes_holding, pack_mig
from gpustack.plan.packing import DoesNotFit, Item, NodeShape, pack_shares

A100 = MIG_MODELS["A100-80GB"]
ROOMY = dict(cpu=1000.0, memory_gib=10000.0)


def mig_items(demand: dict[str, int], cpu: float = 0.0, memory: float = 0.0) -> list[Item]:
    return [Item(f"w-{name}", count, 1, cpu, memory, 730.0, name) for name, count in sorted(demand.items()) if count]


def held(packing, nodes: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for layout in packing.mig_layouts:
        for name, count in layout:
            out[name] = out.get(name, 0) + count * nodes
    return out


# -- hand-checked optima on A100-80GB --------------------------------------------------------------

@pytest.mark.parametrize("demand, gpus", [
    ({"3g.40gb": 2}, 1),
    ({"4g.40gb": 1, "3g.40gb": 1}, 1),
    ({"2g.20gb": 3, "1g.10gb": 1}, 1),
    ({"4g.40gb": 2}, 2),
    ({"3g.40gb": 1, "1g.10gb": 4}, 1),
    ({"1g.10gb+me": 3}, 3),  # one +me per GPU, although 3 slices would fit one
    ({"7g.80gb": 1, "1g.10gb": 1}, 2),
])
def test_hand_checked_optimum_on_one_a100_80gb_node(demand, gpus):
    packing = pack_mig(mig_items(demand), NodeShape(8, **ROOMY), A100)
    assert (packing.nodes, packing.gpus_required, packing.lower_bound) == (1, gpus, gpus)
    assert packing.proved_optimal and packing.method == "exact search"


# -- exact MIG search against brute force ----------------------------------------------------------

def brute_fewest_gpus(model, demand: dict[str, int], limit: int) -> int | None:
    """Fewest valid layouts (any mix, each from the full list of valid layouts) that hold `demand`."""
    names = tuple(sorted(demand))
    layouts = [tuple(dict(layout).get(n, 0) for n in names) for layout in model.valid_layouts(names)]
    need = tuple(demand[n] for n in names)
    for k in range(1, limit + 1):
        for combo in itertools.combinations_with_replacement(layouts, k):
            if all(sum(c[i] for c in combo) >= need[i] for i in range(len(names))):
                return k
    return None


def brute_uniform(model, demand: dict[str, int], gpus_per_node: int) -> tuple[int, int]:
    """(fewest nodes, then fewest partitioned GPUs per node x nodes) with one node config for all."""
    names = tuple(sorted(demand))
    layouts = [tuple(dict(layout).get(n, 0) for n in names) for layout in model.valid_layouts(names)]
    need = [demand[n] for n in names]
    best = None
    for k in range(1, gpus_per_node + 1):
        for combo in itertools.combinations_with_replacement(layouts, k):
            per_node = [sum(c[i] for c in combo) for i in range(len(names))]
            if any(per_node[i] == 0 and need[i] for i in range(len(names))):
                continue
            nodes = max(math.ceil(need[i] / per_node[i]) for i in range(len(names)) if need[i])
            if best is None or (nodes, nodes * k) < best:
                best = (nodes, nodes * k)
    assert best is not None
    return best


SMALL = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(SMALL), st.integers(1, 3), min_size=1, max_size=3))
def test_exact_mig_search_matches_brute_force_on_one_node(demand):
    packing = pack_mig(mig_items(demand), NodeShape(8, **ROOMY), A100)
    assert packing.nodes == 1 and packing.proved_optimal
    assert packing.gpus_required == brute_fewest_gpus(A100, demand, 8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(SMALL), st.integers(1, 9), min_size=1, max_size=3))
def test_uniform_nodes_match_brute_force_over_every_node_config(demand):
    packing = pack_mig(mig_items(demand), NodeShape(2, **ROOMY), A100)
    assert (packing.nodes, packing.gpus_required) == brute_uniform(A100, demand, 2)


# -- every layout valid, every instance held (property) -------------------------------------------

ALL_PROFILES = [(model, profile.name) for model in sorted(MIG_MODELS) for profile in MIG_MODELS[model].profiles]


@settings(max_examples=150, deadline=None)
@given(model=st.sampled_from(sorted(MIG_MODELS)), data=st.data(), gpus=st.sampled_from([1, 2, 4, 8]),
       budget=st.sampled_from([0, 5, 20_000]))
def test_every_mig_layout_is_valid_and_holds_every_instance(model, data, gpus, budget):
    mig = MIG_MODELS[model]
    names = [p.name for p in mig.profiles]
    demand = data.draw(st.dictionaries(st.sampled_from(names), st.integers(1, 60), min_size=1, max_size=4))
    try:
        packing = pack_mig(mig_items(demand), NodeShape(gpus, **ROOMY), mig, budget=budget)
    except DoesNotFit:
        # Only when one instance of each profile cannot share a node: check that claim by brute force.
        assert brute_fewest_gpus(mig, dict.fromkeys(demand, 1), gpus) is None
        return
    assert len(packing.mig_layouts) == gpus
    for layout in packing.mig_layouts:
        assert layout == () or mig.is_valid(dict(layout))
    holds = held(packing, packing.nodes)
    assert all(holds.get(name, 0) >= count for name, count in demand.items())
    assert packing.gpus_required >= packing.lower_bound
    assert packing.nodes >= packing.nodes_lower_bound
    assert nodes_holding(packing.mig_layouts, demand) <= packing.nodes


def test_past_the_step_budget_a_heuristic_answers_and_says_so(monkeypatch):
    from gpustack.plan import exact as exact_step

    demand = {"1g.10gb": 13, "1g.20gb": 7, "2g.20gb": 9, "3g.40gb": 5, "4g.40gb": 3}
    exact = pack_mig(mig_items(demand), NodeShape(8, **ROOMY), A100)
    monkeypatch.setattr(exact_step, "MAX_MIG_VARIABLES", 0)  # the integer program would settle it
    rough = pack_mig(mig_items(demand), NodeShape(8, **ROOMY), A100, budget=0)
    assert exact.proved_optimal and not rough.proved_optimal
    assert rough.method == "heuristic (step budget reached)"
    assert (rough.nodes, rough.gpus_required) >= (exact.nodes, exact.gpus_required)


def test_mig_nodes_fit_cpu_and_memory_by_an_assignment_of_replicas_to_nodes():
    # 10 replicas at 30 cores and 10 at 1 core, all 1g.10gb, on 95-core nodes: at most 3 big ones per
    # node, so 4 nodes (3 + 3 + 2 + 2 big, the small ones around them); 3 nodes hold only 9 big ones.
    items = [Item("big", 10, 1, 30.0, 1.0, 730.0, "1g.10gb"), Item("small", 10, 1, 1.0, 1.0, 730.0, "1g.10gb")]
    packing = pack_mig(items, NodeShape(8, cpu=95.0, memory_gib=100.0), A100)
    assert (packing.nodes, packing.nodes_lower_bound, packing.proved_optimal) == (4, 4, True)
    assert held(packing, packing.nodes)["1g.10gb"] >= 20


def test_demand_no_uniform_node_can_hold_is_refused_with_a_reason():
    with pytest.raises(DoesNotFit, match=r"one instance of each MIG profile this pool holds \(1g.10gb, 7g.80gb\) "
                                         r"does not fit the GPUs of one 1-GPU node together"):
        pack_mig(mig_items({"7g.80gb": 1, "1g.10gb": 1}), NodeShape(1, **ROOMY), A100)


# -- lower bounds ------------------------------------------------------------------------------------

def test_layout_bound_sees_maximum_counts_the_slice_bounds_miss():
    assert mig_bounds(A100, {"1g.10gb+me": 3}) == {"compute": 1, "memory": 1, "layout": 3}
    assert mig_bounds(A100, {"4g.40gb": 3, "1g.20gb": 14}) == {"compute": 4, "memory": 5, "layout": 5}


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(SMALL + ["7g.80gb", "1g.10gb+me"]), st.integers(1, 4), min_size=1, max_size=3))
def test_every_bound_is_at_most_the_brute_force_optimum(demand):
    optimum = brute_fewest_gpus(A100, demand, 16)
    assert max(mig_bounds(A100, demand).values()) <= optimum


def test_lp_bound_is_the_fractional_cover():
    # Layouts (2, 0) and (0, 1): demand (4, 3) needs 2 + 3 layouts, fractionally too.
    assert layout_lp_bound([(2, 0), (0, 1)], [4, 3]) == pytest.approx(5)
    assert layout_lp_bound([(1, 1)], [0, 0]) == 0


# -- whole GPUs and shares -------------------------------------------------------------------------

def brute_shares(items: list[Item], node: NodeShape) -> tuple[int, int]:
    replicas = [it for it in items for _ in range(it.count)]
    best = None
    for assignment in itertools.product(range(len(replicas)), repeat=len(replicas)):
        nodes: dict[int, list[Item]] = {}
        for replica, where in zip(replicas, assignment):
            nodes.setdefault(where, []).append(replica)
        ok = all(sum(r.units for r in rs) <= node.gpus * node.shares_per_gpu
                 and sum(r.cpu for r in rs) <= node.cpu + 1e-9
                 and sum(r.memory_gib for r in rs) <= node.memory_gib + 1e-9 for rs in nodes.values())
        if ok:
            score = (len(nodes), sum(math.ceil(sum(r.units for r in rs) / node.shares_per_gpu)
                                     for rs in nodes.values()))
            best = score if best is None or score < best else best
    assert best is not None
    return best


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2), st.integers(1, 3), st.sampled_from([1.0, 3.0, 5.0]),
                          st.sampled_from([2.0, 6.0])), min_size=1, max_size=3),
       st.sampled_from([1, 2, 4]))
def test_share_packing_matches_brute_force_on_small_pools(shapes, shares_per_gpu):
    items = [Item(f"w{i}", count, units if shares_per_gpu == 1 else 1, cpu, memory, 730.0)
             for i, (count, units, cpu, memory) in enumerate(shapes)]
    if sum(it.count for it in items) > 5:
        items = items[:1]
    node = NodeShape(4, cpu=8.0, memory_gib=12.0, shares_per_gpu=shares_per_gpu)
    packing = pack_shares(items, node)
    assert (packing.nodes, packing.gpus_required) == brute_shares(items, node)
    assert packing.proved_optimal
    assert packing.lower_bound <= packing.gpus_required and packing.nodes_lower_bound <= packing.nodes


def test_cpu_bound_shares_use_a_gpu_per_node_and_the_bound_knows_it():
    # Four quarter-GPU replicas at 2 cores each: two per 4-core node, so two nodes with one GPU each.
    packing = pack_shares([Item("nb", 4, 1, 2.0, 1.0, 730.0)], NodeShape(1, cpu=4.0, memory_gib=16.0, shares_per_gpu=4))
    assert (packing.nodes, packing.gpus_required, packing.lower_bound) == (2, 2, 2)
    assert dict(packing.bounds) == {"shares": 1, "one_gpu_per_node": 2} and packing.proved_optimal


def test_large_share_pools_are_packed_in_bulk_and_meet_the_bound():
    items = [Item(f"w{i}", 1000 + i, 1, 0.5, 1.0, 730.0) for i in range(50)]
    packing = pack_shares(items, NodeShape(8, cpu=190.0, memory_gib=740.0, shares_per_gpu=3))
    assert packing.gpus_required == packing.lower_bound == math.ceil(sum(it.count for it in items) / 3)


def test_exact_search_beats_first_fit_decreasing_where_cpu_and_memory_interlock():
    # FFD puts both 2-GPU replicas on one node (memory full), then needs a node per 5-core replica.
    items = [Item("cpu-heavy", 2, 1, 5.0, 6.0, 730.0), Item("gpu-heavy", 2, 2, 1.0, 6.0, 730.0)]
    packing = pack_shares(items, NodeShape(4, cpu=8.0, memory_gib=12.0))
    assert (packing.nodes, packing.gpus_required, packing.method) == (2, 6, "exact search")
