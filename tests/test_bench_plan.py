"""The planner harness: its cases, and the cold reference beside each plan as a ratio."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import (  # noqa: E402
    COLD,
    COLD_ARRAYS,
    RunResult,
    against_cold,
    parse_cases,
    run_child,
    run_cold_child,
)


def test_cases_are_every_size_at_every_scale_then_the_extra_ones_once() -> None:
    assert parse_cases("small,large", "1,25", "large:100,small:25") == [
        ("small", 1), ("large", 1), ("small", 25), ("large", 25), ("large", 100)]
    assert parse_cases("medium", "1", "") == [("medium", 1)]


def _run(solver: str, cost: float, scale: int = 25) -> RunResult:
    return RunResult("medium", solver, 6, 5, 4, 24, scale=scale, status="time_limit",
                     gap=0.1, bound=90.0, cost_per_month=cost)


def test_the_plan_is_set_beside_the_cold_solve_of_its_own_case() -> None:
    rows = against_cold([_run("highs", 105.0), _run(COLD, 100.0), _run("highs", 80.0, 1),
                         _run(COLD, 100.0, 1)]).splitlines()[2:]
    assert len(rows) == 2
    assert rows[0].startswith("| medium ×25 |") and "| 1.050 |" in rows[0]
    assert rows[1].startswith("| medium |") and "| 0.800 |" in rows[1]


def test_the_cold_reference_solves_the_program_with_no_start() -> None:
    r = run_cold_child("small", 20.0, 0.01, 0)
    assert r.solver == COLD and r.status == "optimal" and r.error == ""
    assert r.cost_per_month is not None and r.bound is not None
    assert r.bound <= r.cost_per_month <= r.bound / (1 - 0.01) + 1e-6
    assert r.variables > 0 and r.constraints > 0


def test_the_cold_solve_of_the_plans_own_arrays_solves_the_same_program() -> None:
    mps = run_cold_child("small", 20.0, 0.01, 0)
    arrays = run_cold_child("small", 20.0, 0.01, 0, arrays=True)
    assert arrays.solver == COLD_ARRAYS and arrays.status == "optimal" and arrays.error == ""
    assert (arrays.variables, arrays.constraints) == (mps.variables, mps.constraints)
    assert arrays.cost_per_month is not None and mps.bound is not None
    assert mps.bound <= arrays.cost_per_month + 1e-6  # the same program: one bound holds both


def test_a_plan_run_records_where_its_solve_spent_its_time() -> None:
    r = run_child("small", "highs", 20.0, 0.01, 0)
    names = [part.split()[0] for part in r.stages.split("; ")]
    assert names[0] == "build" and "lp" in names and "joint" in names
