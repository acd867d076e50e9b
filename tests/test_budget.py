"""A monthly budget: the program searched without its budget row, its fleets judged against it
(solver.solve.budget; the trust sweep's budget at a known fleet's cost,
benchmarks/results/trust.md)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from models.capacity import CapacityTable
from models.plan import SolverStage, SolveStatus
from models.scenario import Scenario
from solver.program.data import ProgramData, build_program_data
from solver.program.variables import Program
from solver.solve.backends import SolveOutcome
from solver.solve.budget import BUDGET_STAGE, OVER_BUDGET, OnProgress, Solve, solve_within_budget
from solver.solve.clock import Deadline
from solver.solve.strategy import plan_scenario, solve_shared
from solver.survivability.verify import verify_plan

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import generate_scenario  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402


def _with(sc: Scenario, **policy: object) -> Scenario:
    return sc.model_copy(update={"policy": sc.policy.model_copy(update=policy)})


def _stages(stages: tuple[SolverStage, ...]) -> list[tuple[str, float | None]]:
    return [(s.name, s.cost_after) for s in stages]


def test_a_budget_the_fleet_meets_leaves_the_search_as_it_is_without_one() -> None:
    # small seed 0: the greedy fleet (~209 k) and the one-group fleet (~96.5 k) cost more than
    # the optimum the search ends on (~96.3 k). With the budget row in the program a budget at
    # that optimum made every start break it: no stage held a fleet until the joint solve (the
    # trust sweep: 11 of 14 such plans at 10 s ended with none). The search without the row
    # runs the same stages to the same fleets, and the plan is the same.
    sc = generate_scenario("small", seed=0)
    tb = build_capacity_table(sc)
    free = plan_scenario(sc, tb, time_limit_s=60.0)
    assert free.status is SolveStatus.optimal
    budget = math.ceil(free.cost.per_month * 100) / 100  # cents rounded up, as the sweep did
    capped = plan_scenario(_with(sc, monthly_budget=budget), tb, time_limit_s=60.0)
    assert _stages(capped.solver.stages) == _stages(free.solver.stages)
    assert capped.status is SolveStatus.optimal
    assert capped.cost.per_month == free.cost.per_month
    greedy = next(s for s in capped.solver.stages if s.name == "greedy")
    assert greedy.cost_after is not None and greedy.cost_after > budget  # a start, not the plan
    assert verify_plan(capped, _with(sc, monthly_budget=budget), tb) == []


def test_a_budget_inside_the_gap_of_the_fleet_proven_is_searched_within(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # small seed 2 at --gap 0.2: the search proves a fleet within 20 % that costs more than the
    # optimum its bound reaches. A budget between the two is met by the search of the budgeted
    # program in the time left (stage `budget`), not left as "no fleet". The joint solve is
    # handed the stages' fleet before its root, so it stops on it at once: handed after its
    # root (hourly programs, `_after_root`), the root proves this optimum and no budget lies
    # between the fleet and its bound (small seeds 0-5 alike).
    import solver.solve.strategy as strategy_module

    monkeypatch.setattr(strategy_module, "_after_root", lambda ctx, many: False)
    sc = generate_scenario("small", seed=2)
    tb = build_capacity_table(sc)
    free = plan_scenario(sc, tb, time_limit_s=60.0, gap=0.2)
    assert free.status is SolveStatus.optimal and free.solver.bound is not None
    budget = (free.cost.per_month + free.solver.bound) / 2
    assert free.solver.bound < budget < free.cost.per_month
    capped_sc = _with(sc, monthly_budget=budget)
    capped = plan_scenario(capped_sc, tb, time_limit_s=60.0, gap=0.2)
    assert capped.status is SolveStatus.optimal
    assert capped.cost.per_month <= budget
    assert capped.solver.stages[-1].name == BUDGET_STAGE
    assert capped.solver.bound is not None and capped.solver.bound <= capped.cost.per_month
    assert verify_plan(capped, capped_sc, tb) == []


def _shared(seen: list[Deadline]) -> Solve:
    """The shared-pool solve of a plan, noting the clock it is given."""

    def solve(data: ProgramData, clock: Deadline,
              told: OnProgress | None) -> tuple[Program, SolveOutcome]:
        seen.append(clock)
        return solve_shared(data, "highs", clock.limit_s, 0.01, deadline=clock, on_progress=told)

    return solve


def test_a_budget_below_the_bound_stops_the_search_at_once_as_infeasible() -> None:
    # small x3: its LP bound (~113.6 k) is above a budget of 100 k, and the search without the
    # budget does not prove its fleet within a minute. Once the bound passes the budget no
    # fleet can be within it: the search stops there (its own clock stopped), not at the limit.
    data = build_program_data(*_table(generate_scenario("small", seed=1, scale=3), 100_000.0))
    deadline, clocks = Deadline(60.0), list[Deadline]()
    result = solve_within_budget(data, _shared(clocks), deadline, 0.01, "highs")
    assert result.outcome.status is SolveStatus.infeasible and not result.outcome.has_solution
    assert result.outcome.report.bound is None  # no fleet meets it at any cost
    assert clocks[0].stop_reason == OVER_BUDGET and not deadline.stopped
    assert (clocks[0].started, clocks[0].limit_s) == (deadline.started, deadline.limit_s)
    assert result.outcome.report.seconds < 30.0  # a stop, not the 60-s limit
    # the budget alone is short (the search found fleets meeting every other requirement), by
    # at least the bound's excess over it: the search's own answer, not the elastic program's
    [short] = result.diagnosis
    assert short.requirement == "budget" and short.amount > 13_000  # bound ≥ ~113.6 k
    assert short.message.startswith("no fleet within the budget of 100,000 USD/month meets "
                                    "every requirement: no fleet that meets every other "
                                    f"requirement costs less than {100_000 + short.amount:,.0f}")


def _table(sc: Scenario, budget: float) -> tuple[Scenario, CapacityTable]:
    return _with(sc, monthly_budget=budget), build_capacity_table(sc)


def test_a_user_stop_still_stops_the_budgeted_search() -> None:
    data = build_program_data(*_table(generate_scenario("small", seed=1, scale=3), 137_000.0))
    deadline, clocks = Deadline(60.0), list[Deadline]()
    deadline.stop()
    result = solve_within_budget(data, _shared(clocks), deadline, 0.01, "highs")
    assert clocks[0].stopped  # the budget's clock follows the plan's
    assert result.outcome.status is SolveStatus.interrupted and not result.outcome.has_solution
    assert result.diagnosis == ()  # nothing was searched: no "not found in N s"
