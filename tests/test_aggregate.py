"""Time aggregation: grouped slices restrict the program, and their fleets start the full one."""

from __future__ import annotations

import sys
from pathlib import Path

import pulp
import pytest

from models.common import PurchaseKind
from solver.capacity.table import build_capacity_table
from solver.program.build import build_program
from solver.program.data import ProgramData, build_program_data
from solver.program.keys import ReplicaKey
from solver.program.values import objective_of, start_from_replicas, violated_rows
from solver.program.variables import Program
from solver.solve import aggregate
from solver.solve.aggregate import demand_groups, expand_fleet, restrict_to_groups
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.greedy import keep_better
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import (
    blocks,
    offer,
    row,
    scenario,
    table,
    workload,
    zone,
)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import generate_scenario  # noqa: E402
from models.plan import SolverReport, SolveStatus  # noqa: E402

OD = PurchaseKind.on_demand


@pytest.fixture(scope="module")
def small() -> ProgramData:
    """The benchmark's small size: 3 workloads, 3 GPU types, 2 zones, 24 hourly slices."""
    sc = generate_scenario("small", seed=0)
    return build_program_data(sc, build_capacity_table(sc))


@pytest.mark.parametrize("count", [1, 2, 4, 24, 30])
def test_groups_cover_every_slice_once_and_keep_busy_hours_apart_from_quiet_ones(
    small: ProgramData, count: int
) -> None:
    groups = demand_groups(small, count)
    names = [s.name for s in small.slices]
    assert sorted(s for g in groups for s in g) == sorted(names)
    assert len(groups) == min(count, len(names))
    assert demand_groups(small, count) == groups  # deterministic
    if 1 < count < len(names):
        # the chat pool's busiest and quietest hours land in different groups
        chat = {s: rps for (w, s), rps in small.demand_rps.items() if w == "chat"}
        busiest, quietest = max(chat, key=chat.__getitem__), min(chat, key=chat.__getitem__)
        assert next(g for g in groups if busiest in g) != next(g for g in groups if quietest in g)


def test_a_group_plans_at_its_members_busiest_demand_for_all_their_hours(
    small: ProgramData,
) -> None:
    groups = demand_groups(small, 2)
    grouped = restrict_to_groups(small, groups)
    assert [s.name for s in grouped.slices] == sorted((g[0] for g in groups),
                                                      key=[s.name for s in small.slices].index)
    assert sum(s.hours_per_day for s in grouped.slices) == 24
    for g in groups:
        for w in small.workloads:
            peak = max(small.demand_rps.get((w.name, s), 0.0) for s in g)
            assert grouped.demand_rps.get((w.name, g[0]), 0.0) == peak
            hours = sum(small.hours_in_window.get((w.name, s), 0) for s in g)
            assert grouped.hours_in_window.get((w.name, g[0]), 0) == hours


def test_a_grouped_fleet_is_a_fleet_of_the_full_program_at_the_same_cost(
    small: ProgramData,
) -> None:
    full = build_program(small)
    full_out = solve(full.prob, time_limit_s=30, gap=0.001)
    groups = demand_groups(small, 2)
    grouped = build_program(restrict_to_groups(small, groups))
    out = solve(grouped.prob, time_limit_s=30, gap=0.001)
    assert out.has_solution and out.report.objective is not None
    assert full_out.report.bound is not None
    replicas = {k: integer_value(x) for k, x in grouped.v.replicas.items()}
    values = start_from_replicas(full, expand_fleet(
        full, tuple((s.name,) for s in small.slices), groups, replicas))
    assert values is not None
    # a restriction: every row of the full program holds, at no more than the grouped cost,
    # and the grouped optimum is no better than what the full program can prove
    assert violated_rows(full, values) == []
    assert objective_of(full, values) <= out.report.objective + 1e-6
    assert out.report.objective >= full_out.report.bound - 1e-6


def test_a_busy_hours_fleet_copied_into_a_quiet_hour_keeps_every_row() -> None:
    # n: N+1, 60 req/s in block x, 12 in y; H100 TP1 carries 6 req/s, 8 per node (M = 48).
    # Busy hour: ≥ 60/0.7 = 85.7 at target and X − 48 ≥ 60 after losing a node → 18 replicas
    # (108). Copied into y, the pool is above y's X̄ = max(12/0.7, 12 + 48) + 6 = 66, where the
    # node-loss row over-states the loss (ℓ = 108 − 66 + 48 = 90) but still holds: 108 − 90 =
    # 18 ≥ 12.
    sc = scenario([workload("n", 60.0, shape=[1.0] * 12 + [0.2] * 12, survivability="n_plus_1")],
                  [zone("a", offer(on_demand=(3.0, 64)))],
                  time_blocks=blocks(("x", range(0, 12)), ("y", range(12, 24))))
    data = build_program_data(sc, table(row("n", "H100", 1, 6.0)))
    full = build_program(data)
    key = ReplicaKey("n", "H100", 1, "a", OD, "x")
    x = expand_fleet(full, (("x",), ("y",)), (("x", "y"),), {key: 18})
    assert x == {key: 18, key._replace(slice="y"): 18}
    values = start_from_replicas(full, x)
    assert values is not None and violated_rows(full, values) == []
    assert values["l_n_a_H100_on_demand_y"] == pytest.approx(90.0)
    # one replica fewer in the busy hour breaks its node-loss row (102 − 48 = 54 < 60)
    # (a start that breaks a row is no start)
    assert start_from_replicas(full, {ReplicaKey("n", "H100", 1, "a", OD, "x"): 17}) is None


def test_the_start_is_kept_where_the_solve_ends_without_a_better_fleet(
    small: ProgramData,
) -> None:
    program = build_program(small)
    start = aggregate.aggregated_start(program, "highs", 20.0, 0.01)
    assert start is not None
    cost = objective_of(program, start)
    nothing = SolveOutcome(SolveStatus.time_limit,
                           SolverReport(name="highs", seconds=1.0, bound=cost * 0.5), False)
    kept = keep_better(program, nothing, start, 0.0, 0.01)
    assert kept.has_solution and kept.status is SolveStatus.time_limit
    assert kept.report.objective == pytest.approx(cost)
    assert kept.report.gap == pytest.approx(0.5)
    assert all(integer_value(x) == start[x.name] for x in program.v.replicas.values())
    within = SolveOutcome(SolveStatus.time_limit,
                          SolverReport(name="cbc", seconds=1.0, bound=cost * 0.995), False)
    assert keep_better(program, within, start, 0.0, 0.01).status is SolveStatus.optimal
    # CBC proved a dearer fleet within the gap (no bound read): the cheaper start is within it
    dearer = SolveOutcome(SolveStatus.optimal, SolverReport(name="cbc", seconds=1.0,
                                                           objective=cost * 1.005), True)
    assert keep_better(program, dearer, start, 0.0, 0.01).status is SolveStatus.optimal


def test_hourly_scenarios_plan_from_the_aggregated_start_and_verify() -> None:
    sc = generate_scenario("small", seed=1)
    tb = build_capacity_table(sc)
    # a limit far above its quiet-machine time (a few seconds): "optimal" must not hang on load
    plan = plan_scenario(sc, tb, time_limit_s=300)
    assert plan.status is SolveStatus.optimal
    assert verify_plan(plan, sc, tb) == []
    data = build_program_data(sc, tb)
    program = build_program(data)
    start = aggregate.aggregated_start(program, "highs", 30.0, 0.01)
    assert start is not None
    assert plan.cost.per_month <= objective_of(program, start) + 1e-6


def test_dedicated_sub_programs_on_hourly_slices_start_from_aggregated_fleets(
    small: ProgramData, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    from solver.solve import decompose

    calls: list[tuple[str, ...]] = []
    real = decompose.aggregated_start

    def spy(program: Program, solver: str, time_limit_s: float,
            gap: float) -> dict[str, float] | None:
        calls.append(tuple(w.name for w in program.data.workloads))
        return real(program, solver, time_limit_s, gap)

    improved: list[tuple[str, ...]] = []
    real_improve = decompose.improve_start

    def improve_spy(program: Program, start: dict[str, float], solver: str,
                    time_limit_s: float, gap: float,
                    started_s: float | None = None) -> dict[str, float]:
        improved.append(tuple(w.name for w in program.data.workloads))
        return real_improve(program, start, solver, time_limit_s, gap, started_s)

    monkeypatch.setattr(decompose, "aggregated_start", spy)
    monkeypatch.setattr(decompose, "improve_start", improve_spy)
    dedicated = dataclasses.replace(small, share_nodes=False)
    first = decompose.solve_workload(dedicated, "chat", "highs", 10.0, 0.01)
    assert calls == [("chat",)] and first.outcome.has_solution
    assert improved == [("chat",)]  # the aggregated fleet, improved in the neighbourhoods
    # a sub-program given a fleet (the second pass) starts from it instead
    again = decompose.solve_workload(dedicated, "chat", "highs", 10.0, 0.01, start=first.replicas)
    assert calls == [("chat",)] and improved == [("chat",)]
    assert again.outcome.report.objective is not None
    assert first.outcome.report.objective is not None
    assert again.outcome.report.objective <= first.outcome.report.objective + 1e-6


def test_a_stage_that_ends_dearer_than_its_start_keeps_the_fleet_before_it(
    small: ProgramData, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stage 2 ends holding a dearer fleet (as CBC may: it takes no start), stage 4 finds
    # nothing: the start is stage 1's fleet, at stage 1's cost or less (a batch pool's elastic
    # replicas, copied into the hourly slices, run and are paid only in its window).
    real = aggregate.solve
    outcomes: list[SolveOutcome] = []

    def staged(prob: pulp.LpProblem, solver: str, time_limit_s: float, gap: float,
               start: dict[str, float] | None = None) -> SolveOutcome:
        out = real(prob, solver, time_limit_s, gap, start=start)
        outcomes.append(out)
        if len(outcomes) == 2:
            for var in prob.variables():
                if var.name.startswith(("x_", "y_")):
                    var.varValue = (var.varValue or 0.0) + 1.0
            return SolveOutcome(SolveStatus.time_limit, out.report.model_copy(
                update={"objective": 10 * (out.report.objective or 0.0)}), True)
        if len(outcomes) == 3:
            return SolveOutcome(SolveStatus.time_limit, out.report.model_copy(
                update={"objective": None}), False)
        return out

    monkeypatch.setattr(aggregate, "solve", staged)
    program = build_program(small)
    values = aggregate.aggregated_start(program, "highs", 20.0, 0.01)
    assert values is not None and len(outcomes) == 3
    first = outcomes[0].report.objective
    assert first is not None
    assert objective_of(program, values) <= first + 1e-6
