"""Decomposition by workload: same optimum as the joint program, a valid bound, stock coupling."""

from __future__ import annotations

import dataclasses
import time

import pytest

from models.common import PurchaseKind
from models.plan import SolverReport, SolveStatus
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.keys import ReplicaKey
from solver.solve.backends import SolveOutcome, solve
from solver.solve.decompose import (
    SubResult,
    repair,
    solve_decomposed,
    solve_workload,
    sum_within_gap,
    workload_data,
)
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import blocks, offer, row, scenario, table, workload, zone

HOURS = 730.0


def shared(sc: Scenario, share_nodes: bool = True) -> Scenario:
    return sc.model_copy(update={"policy": sc.policy.model_copy(
        update={"share_nodes": share_nodes})})


def dedicated(sc: Scenario) -> Scenario:
    """Dedicated node pools (policy.share_nodes false): the model the decomposition solves."""
    return shared(sc, share_nodes=False)


def two_workloads(reserved_stock: int) -> Scenario:
    # 1-GPU nodes; reserved 1.0 $/GPU-h, on-demand 3.0 $/GPU-h (stock 10); one all-day slice.
    return dedicated(scenario(
        [workload("a", 20.0, utilization=1.0), workload("b", 20.0, utilization=1.0)],
        [zone("z", offer(reserved=(1.0, reserved_stock), on_demand=(3.0, 10), gpus_per_node=1))]))


TB = table(row("a", "H100", 1, 10.0), row("b", "H100", 1, 10.0))


def test_uncoupled_workloads_solve_alone_with_a_proven_bound() -> None:
    # Each workload needs ⌈20 / 10⌉ = 2 replicas = 2 reserved GPUs × 1.0 × 730 = 1,460; stock 8
    # holds both: 2,920, and the bound is the sum of the two sub-programs' bounds.
    data = build_program_data(two_workloads(8), TB)
    program, outcome = solve_decomposed(data, gap=1e-9)
    assert outcome.status is SolveStatus.optimal and outcome.has_solution
    assert outcome.report.objective == pytest.approx(2 * 1460.0)
    assert sum(x.varValue or 0.0 for x in program.v.replicas.values()) == 4  # joint holds fleet
    subs = [solve_workload(data, w, "highs", 10.0, 1e-9) for w in ("a", "b")]
    assert [s.outcome.report.objective for s in subs] == pytest.approx([1460.0, 1460.0])
    assert outcome.report.bound == pytest.approx(
        sum(s.outcome.report.bound or 0.0 for s in subs))
    joint = build_program(data)
    assert solve(joint.prob, gap=1e-9).report.objective == pytest.approx(2920.0)


def test_stock_that_couples_two_workloads_is_still_solved_to_the_joint_optimum() -> None:
    # Reserved stock 2: alone each buys 2 reserved GPUs (1,460), together that is 4 > 2. The
    # joint optimum: one workload reserved 2 × 1.0 × 730 = 1,460, the other on-demand
    # 2 × 3.0 × 730 = 4,380; total 5,840. The sub-programs' bound (2,920) stays a valid bound.
    sc = two_workloads(2)
    tb = TB
    data = build_program_data(sc, tb)
    assert workload_data(data, "a").candidates == data.candidates_of("a")
    _, outcome = solve_decomposed(data, gap=1e-9)
    assert outcome.status is SolveStatus.optimal
    assert outcome.report.objective == pytest.approx(5840.0)
    assert outcome.report.bound is not None and 2920.0 - 1e-6 <= outcome.report.bound <= 5840.0
    plan = plan_scenario(sc, tb, gap=1e-9)
    assert plan.cost.per_month == pytest.approx(5840.0)
    assert verify_plan(plan, sc, tb) == []


def test_repair_re_solves_a_coupled_workload_on_the_stock_the_others_leave() -> None:
    # Reserved stock 2: alone each sub-program buys 2 reserved GPUs (1,460 each); together that
    # is 4 > 2. Equal costs, so `a` (name order) keeps its fleet and `b` is re-solved on the
    # 2 − 2 = 0 reserved GPUs `a` leaves: 2 on-demand GPUs, 2 × 3.0 × 730 = 4,380. Solving the
    # two together from there finds nothing cheaper than 1,460 + 4,380 = 5,840, so the repaired
    # fleet is 2 reserved (a) + 2 on-demand (b), within stock.
    data = build_program_data(two_workloads(2), TB)
    subs = [solve_workload(data, w, "highs", 10.0, 1e-9) for w in ("a", "b")]
    assert [sorted(s.replicas.values()) for s in subs] == [[2], [2]]
    fleet = repair(data, subs, "highs", time.perf_counter() + 10.0, 1e-9, bound=2920.0)
    assert fleet is not None
    assert sorted((k[0], k[4], n) for k, n in fleet.items() if n) == [
        ("a", PurchaseKind.reserved, 2), ("b", PurchaseKind.on_demand, 2)]


def test_infeasible_sub_program_means_infeasible_plan_with_diagnosis() -> None:
    # Stock 1 reserved + 0 on-demand cannot hold 2 replicas of `a` even alone.
    sc = scenario([workload("a", 20.0, utilization=1.0)],
                  [zone("z", offer(reserved=(1.0, 1), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("a", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    assert plan.diagnosis


def test_shared_nodes_can_only_be_cheaper_or_equal() -> None:
    # One 8-GPU node at 1.0 $/GPU-h = 5,840 / month. `big` needs one TP4 replica, `small` one
    # TP2: shared, both fit on one node (5,840); dedicated, each pays its own node (11,680).
    sc = dedicated(scenario([workload("big", 10.0, utilization=1.0),
                             workload("small", 10.0, utilization=1.0)],
                            [zone("a", offer(reserved=(1.0, 16)))]))
    tb = table(row("big", "H100", 4, 10.0), row("small", "H100", 2, 10.0))
    own = plan_scenario(sc, tb, gap=1e-9)
    pooled = plan_scenario(shared(sc), tb, gap=1e-9)
    assert own.cost.per_month == pytest.approx(2 * 5840.0)
    assert pooled.cost.per_month == pytest.approx(5840.0)
    assert verify_plan(own, sc, tb) == [] and verify_plan(pooled, shared(sc), tb) == []


@pytest.mark.parametrize("survivability", ["none", "n_plus_1", "zone_loss"])
def test_decomposition_matches_the_joint_program(survivability: str) -> None:
    # Two workloads over two zones and two half-day slices, stock loose: the decomposition and
    # the joint dedicated-pool program reach the same optimum; shared nodes never cost more.
    halves = blocks(("x", range(0, 12)), ("y", range(12, 24)))
    zones = [zone(z, offer(reserved=(2.0, 16), on_demand=(3.0, 16), gpus_per_node=2))
             for z in ("p", "q")]
    sc = dedicated(scenario([workload("a", 13.0, shape=[1.0] * 12 + [0.5] * 12,
                                      survivability=survivability, utilization=0.8),
                             workload("b", 7.0, survivability=survivability, utilization=1.0)],
                            zones, time_blocks=halves))
    tb = table(row("a", "H100", 1, 4.0), row("a", "H100", 2, 9.0), row("b", "H100", 1, 5.0))
    data = build_program_data(sc, tb)
    _, outcome = solve_decomposed(data, gap=1e-9)
    joint = build_program(data)
    expected = solve(joint.prob, gap=1e-9).report.objective
    assert expected is not None
    assert outcome.report.objective == pytest.approx(expected, rel=1e-9)
    assert outcome.report.bound is not None and outcome.report.bound <= expected * (1 + 1e-9)
    pooled = plan_scenario(shared(sc), tb, gap=1e-9)
    assert pooled.cost.per_month <= expected * (1 + 1e-9)


def test_sub_programs_are_done_when_their_sum_is_within_the_gap() -> None:
    # The bound of the whole is the sum of the sub-programs' bounds, so a small workload left
    # at 5 % does not keep the fleet from 1 %: (1,000 + 105) − (1,000 + 100) = 5 over 1,105 is
    # 0.45 %. With a big workload of 100, the same 5 is 5 / 205 = 2.4 %: not within.
    def sub(name: str, cost: float, bound: float | None) -> SubResult:
        report = SolverReport(name="highs", seconds=1.0, gap=None, bound=bound, objective=cost)
        return SubResult((name,), {}, SolveOutcome(SolveStatus.time_limit, report, True))

    assert sum_within_gap([sub("big", 1000.0, 1000.0), sub("small", 105.0, 100.0)], 0.01)
    assert not sum_within_gap([sub("big", 100.0, 100.0), sub("small", 105.0, 100.0)], 0.01)
    # just outside: 15 / (1,000 + 115) = 1.35 % > 1 %; exactly at it: (100 − 99) / 100 = 1 %
    assert not sum_within_gap([sub("big", 1000.0, 1000.0), sub("small", 115.0, 100.0)], 0.01)
    assert sum_within_gap([sub("only", 100.0, 99.0)], 0.01)
    assert not sum_within_gap([sub("big", 1000.0, None), sub("small", 105.0, 100.0)], 0.01)


def test_a_sub_program_keeps_its_start_where_the_solver_ends_dearer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CBC takes no start and may end with a dearer fleet (here made 10 × dearer by hand): the
    # sub-program's fleet is then its start, at the start's cost, with the solver's bound.
    from solver.solve import decompose

    sc = scenario([workload("w", 20.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=1))])
    data = dataclasses.replace(
        build_program_data(sc, table(row("w", "H100", 1, 10.0))), share_nodes=False)
    # 2 × 2.0 × 730 = 2,920
    start = {ReplicaKey("w", "H100", 1, "a", PurchaseKind.reserved, None): 2}
    real = decompose.solve

    def dearer(prob: object, solver: str, time_limit_s: float, gap: float,
               start: dict[str, float] | None = None) -> SolveOutcome:
        out = real(prob, solver, time_limit_s, gap, start=start)  # type: ignore[arg-type]
        for var in prob.variables():  # type: ignore[attr-defined]
            if var.name.startswith(("x_", "y_")):
                var.varValue = 10 * (var.varValue or 0.0)
        return SolveOutcome(SolveStatus.time_limit, out.report.model_copy(update={
            "objective": 10 * (out.report.objective or 0.0), "bound": 1000.0}), True)

    monkeypatch.setattr(decompose, "solve", dearer)
    sub = decompose.solve_workload(data, "w", "cbc", 5.0, 0.01, start=start)
    assert sub.replicas == start
    assert sub.outcome.report.objective == pytest.approx(2920.0)
    assert sub.outcome.report.bound == pytest.approx(1000.0)
