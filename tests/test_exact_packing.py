"""The exact step of packing: pools where CPU and memory bind get the optimum, proved, or say their gap."""

from __future__ import annotations

import json

import pytest

from gpustack.catalog.mig import MIG_MODELS
from gpustack.cli import main
from gpustack.plan import exact, pools
from gpustack.plan.mig_packing import pack_mig
from gpustack.plan.nodes import allocatable
from gpustack.plan.packing import Item, NodeShape, pack_shares
from tests.conftest import spec_text

A100 = MIG_MODELS["A100-80GB"]
P4DE = NodeShape(8, *allocatable(96, 1152))
G5_12XLARGE_TS4 = NodeShape(4, *allocatable(48, 192), shares_per_gpu=4)
# 24 quarter-GPU replicas whose CPU and memory bind on g5.12xlarge: first-fit decreasing needs 6 nodes,
# 5 hold them (CPU 214 of 5 x 47.3 cores; each node 4-5 replicas by memory and CPU together).
TIME_SLICED = [Item("w0", 4, 1, 6.0, 16.0, 730.0), Item("w1", 12, 1, 12.0, 8.0, 730.0),
               Item("w2", 7, 1, 4.0, 48.0, 730.0), Item("w3", 1, 1, 2.0, 48.0, 730.0)]
# 8 x 1g.20gb and 10 x 4g.40gb replicas on p4de whose CPU binds: 176 cores, two nodes of 95.
MIG_CPU_BOUND = [Item("w0", 8, 1, 8.0, 32.0, 730.0, "1g.20gb"), Item("w1", 6, 1, 8.0, 64.0, 730.0, "4g.40gb"),
                 Item("w2", 4, 1, 16.0, 64.0, 730.0, "4g.40gb")]


@pytest.fixture
def heuristic_only(monkeypatch):
    monkeypatch.setattr(exact, "MAX_VARIABLES", 0)
    pools._packed.cache_clear()  # packings of earlier plans, with the exact step
    yield
    pools._packed.cache_clear()


def assign_fits(per_node, items, node: NodeShape) -> None:
    for counts in per_node:
        assert sum(c * i.units for c, i in zip(counts, items)) <= node.gpus * node.shares_per_gpu
        assert sum(c * i.cpu for c, i in zip(counts, items)) <= node.cpu + 1e-6
        assert sum(c * i.memory_gib for c, i in zip(counts, items)) <= node.memory_gib + 1e-6
    assert [sum(col) for col in zip(*per_node)] == [i.count for i in items]


def test_cpu_bound_time_sliced_pool_gets_the_optimum_first_fit_misses(heuristic_only, monkeypatch):
    before = pack_shares(TIME_SLICED, G5_12XLARGE_TS4)
    assert (before.nodes, before.proved_optimal) == (6, False)
    monkeypatch.undo()
    after = pack_shares(TIME_SLICED, G5_12XLARGE_TS4)
    assert (after.nodes, after.method, after.proved_optimal) == (5, "integer program", True)
    assert after.nodes_lower_bound == 5


def test_the_solution_is_a_real_assignment():
    solution = exact.solve_shares(TIME_SLICED, G5_12XLARGE_TS4, 6, gpu_bound=6)
    assert solution is not None and solution.nodes == 5 and solution.proved
    assign_fits(solution.per_node, TIME_SLICED, G5_12XLARGE_TS4)


def test_cpu_bound_mig_pool_gets_fewer_identical_nodes(heuristic_only, monkeypatch):
    # The even split of instances (5 x 4g.40gb and 4 x 1g.20gb a node) leaves no assignment by CPU;
    # layouts with room for more let the heuristic reach the bound by itself (it needed 3 nodes).
    after = pack_mig(MIG_CPU_BOUND, P4DE, A100)
    assert (after.nodes, after.proved_optimal) == (2, True)
    # The integer program, given the heuristic's former 3 nodes, proves 2 as well.
    names = ("4g.40gb", "1g.20gb")
    rows = [tuple(row[sorted(names).index(n)] for n in names) for row in A100.maximal_layouts(names)]
    solution = exact.solve_mig(MIG_CPU_BOUND, names, rows, [1, 4], P4DE, 3)
    assert solution is not None and (solution.nodes, solution.proved) == (2, True)
    # One layout for every node, valid by NVIDIA's rules, holding each node's share of the instances.
    per_node: dict[str, int] = {}
    for layout in after.mig_layouts:
        A100.require_valid(dict(layout))
        for profile, count in layout:
            per_node[profile] = per_node.get(profile, 0) + count
    assert per_node["4g.40gb"] * 2 >= 10 and per_node["1g.20gb"] * 2 >= 8


def test_a_pool_at_its_bound_never_calls_the_solver(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the solver ran for a pool the heuristic settled")
    monkeypatch.setattr(exact, "solve_shares", refuse)
    packing = pack_shares([Item("w", 8, 1, 4.0, 8.0, 730.0)], G5_12XLARGE_TS4)
    assert packing.proved_optimal and packing.nodes == 1


def test_pool_past_the_model_size_keeps_the_heuristic_and_says_so(heuristic_only):
    packing = pack_shares(TIME_SLICED, G5_12XLARGE_TS4)
    assert packing.method == "first-fit decreasing" and not packing.proved_optimal


NOTEBOOKS = [
    {"name": n, "kind": "notebook", "gpu": "A10G", "gpu_fraction": 0.25, "cpu": cpu, "memory": f"{mem}Gi",
     "replicas": count, "instance_types": {"aws": "g5.12xlarge"}}
    for n, count, cpu, mem in (("nb-a", 4, 6, 16), ("nb-b", 12, 12, 8), ("nb-c", 7, 4, 48), ("nb-d", 1, 2, 48))]


def test_plan_says_proved_optimal_and_stdout_carries_only_the_plan(tmp_path, capfd):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text(NOTEBOOKS))
    assert main(["plan", str(spec), "--format", "json"]) == 0
    out = capfd.readouterr().out
    pool = json.loads(out)["targets"][0]["pools"][0]  # the whole stdout is the plan: no solver banner
    assert pool["max_nodes"] == 5
    assert pool["packing"] == {"method": "integer program", "proved_optimal": True, "nodes_lower_bound": 5}


def test_plan_reports_the_node_gap_when_not_proved(tmp_path, capfd, heuristic_only):
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text(NOTEBOOKS))
    assert main(["plan", str(spec), "--format", "json"]) == 0
    pool = json.loads(capfd.readouterr().out)["targets"][0]["pools"][0]
    assert pool["max_nodes"] == 6 and pool["packing"]["proved_optimal"] is False
    assert any("6 nodes, at most 1 more than the lower bound of 5" in note for note in pool["notes"])


def test_the_exact_step_gives_byte_identical_plans_across_processes(tmp_path):
    import os
    import subprocess
    import sys

    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text(NOTEBOOKS + [
        {"name": "cpu-heavy", "kind": "inference", "gpu": "A100-80GB", "mig": "4g.40gb", "cpu": 16,
         "memory": "64Gi", "replicas": 10, "capacity": "on-demand"},
        {"name": "cpu-light", "kind": "inference", "gpu": "A100-80GB", "mig": "1g.20gb", "cpu": 8,
         "memory": "32Gi", "replicas": 8, "capacity": "on-demand"}]))
    outputs = set()
    for seed in ("0", "11"):
        result = subprocess.run([sys.executable, "-m", "gpustack", "plan", str(spec), "--format", "json"],
                                capture_output=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        outputs.add(result.stdout)
    assert len(outputs) == 1
    methods = {p["packing"]["method"] for p in json.loads(outputs.pop())["targets"][0]["pools"]}
    assert "integer program" in methods  # the MIG pool went through the solver, not only the heuristic
