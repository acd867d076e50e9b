"""The two neighbourhoods of a fleet: elastic capacity re-planned under a fixed reserved base,
and a reserved base that may shrink. Each keeps the cheaper fleet, breaks no row and leaves the
program's bounds as they were."""

from __future__ import annotations

import time

import pulp
import pytest

from models.common import PurchaseKind
from solver.program.values import objective_of, violated_rows
from solver.program.variables import Program
from solver.solve import neighbourhood
from solver.solve.backends import SolveOutcome
from solver.solve.neighbourhood import improve_start, replan_elastic, shrink_reserved
from tests.plan_fixtures import (
    fleet,
    three_blocks,
)

R, D = PurchaseKind.reserved, PurchaseKind.on_demand


def bounds(program: Program) -> list[tuple[str, float | None, float | None]]:
    return [(v.name, v.lowBound, v.upBound) for v in program.prob.variables()]


def test_elastic_capacity_follows_each_block_under_the_fixed_reserved_base() -> None:
    program = three_blocks()
    before = bounds(program)
    # Held flat at the peak (a grouped start): 1 reserved + 2 on-demand in every block,
    # 1,460 + 3 × 2 × 730 = 5,840. Hour by hour: 0, 2, 1 on-demand: 1,460 + 3 × 730 = 3,650.
    start = fleet(program, 1, {"a": 2, "b": 2, "c": 2})
    assert objective_of(program, start) == pytest.approx(5840.0)
    found = replan_elastic(program, start, "highs", 10.0, 1e-9)
    assert objective_of(program, found) == pytest.approx(3650.0)
    assert found["x_w_H100_tp1_z_reserved_all"] == 1  # the base stays
    assert not violated_rows(program, found)
    assert bounds(program) == before


def test_the_reserved_base_may_shrink_where_hourly_capacity_is_cheaper() -> None:
    program = three_blocks()
    before = bounds(program)
    # Three reserved replicas (the static fleet at the peak): 3 × 1,460 = 4,380. With the base
    # fixed there is nothing elastic to save; letting it shrink, a replica needed in one block
    # only is cheaper on demand (730 < 1,460): 3,650 (a base of 1 or 2, both 3,650).
    start = fleet(program, 3, {})
    assert objective_of(program, start) == pytest.approx(4380.0)
    assert replan_elastic(program, start, "highs", 10.0, 1e-9) is start
    found = shrink_reserved(program, start, "highs", 10.0, 1e-9)
    assert objective_of(program, found) == pytest.approx(3650.0)
    assert found["x_w_H100_tp1_z_reserved_all"] in (1, 2)
    assert not violated_rows(program, found)
    assert bounds(program) == before


def test_a_neighbourhood_that_finds_nothing_cheaper_keeps_the_start() -> None:
    program = three_blocks()
    best = fleet(program, 1, {"b": 2, "c": 1})
    assert improve_start(program, best, "highs", 10.0, 1e-9) is best


def test_neither_neighbourhood_grows_the_reserved_base() -> None:
    program = three_blocks()
    # No reserved base, on-demand 1, 3, 2: 6 × 730 = 4,380. The full program's optimum buys a
    # base of 1 (1,460 + 3 × 730 = 3,650); both neighbourhoods cap the base at the start's 0.
    start = fleet(program, 0, {"a": 1, "b": 3, "c": 2})
    assert objective_of(program, start) == pytest.approx(4380.0)
    assert replan_elastic(program, start, "highs", 10.0, 1e-9) is start
    assert shrink_reserved(program, start, "highs", 10.0, 1e-9) is start


def test_bounds_are_restored_when_the_solve_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> SolveOutcome:
        raise RuntimeError("solver crashed")

    program = three_blocks()
    before = bounds(program)
    start = fleet(program, 3, {})
    monkeypatch.setattr(neighbourhood, "solve", fail)
    for restricted in (neighbourhood.replan_elastic, neighbourhood.shrink_reserved):
        with pytest.raises(RuntimeError, match="solver crashed"):
            restricted(program, start, "highs", 10.0, 1e-9)
        assert bounds(program) == before


def test_a_neighbourhood_gets_at_most_half_the_time_left_and_none_below_the_least(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 60-s limit with 59.5 s gone: half of the 0.5 s left is below MIN_S, so neither
    # neighbourhood runs (a short --time-limit is not overrun). With the whole minute left,
    # each gets its share: 0.05 × 60 = 3 s and 0.15 × 60 = 9 s.
    program = three_blocks()
    start = fleet(program, 3, {})
    limits: list[float] = []
    real = neighbourhood.solve

    def spy(prob: pulp.LpProblem, solver: str, time_limit_s: float, gap: float,
            start: dict[str, float] | None = None) -> SolveOutcome:
        limits.append(time_limit_s)
        return real(prob, solver, time_limit_s, gap, start=start)

    monkeypatch.setattr(neighbourhood, "solve", spy)
    late = neighbourhood.improve_start(program, start, "highs", 60.0, 1e-9,
                                       started_s=time.perf_counter() - 59.5)
    assert late is start and limits == []
    found = neighbourhood.improve_start(program, start, "highs", 60.0, 1e-9)
    assert limits == [pytest.approx(3.0), pytest.approx(9.0)]
    assert objective_of(program, found) == pytest.approx(3650.0)


def test_a_fleet_that_breaks_a_row_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # Were a neighbourhood's fleet ever to break a row of the program (it is rebuilt from its
    # replica counts, and a fleet that breaks a row rebuilds to no values), the start is kept.
    program = three_blocks()
    start = fleet(program, 3, {})
    monkeypatch.setattr(neighbourhood, "start_from_replicas", lambda program, x: None)
    assert neighbourhood.shrink_reserved(program, start, "highs", 10.0, 1e-9) is start
