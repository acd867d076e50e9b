"""No plan leaves unverified: starts and solver fleets checked against every row, a bound never
above the cost, and ``fleetplan plan`` signing off its fleet with the independent verifier."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from models.capacity import CapacityTable
from models.common import PurchaseKind
from models.plan import Cost, Plan, SolverReport, SolveStatus
from models.scenario import Scenario
from solver.cli import main
from solver.program import values as program_values
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.keys import ReplicaKey
from solver.program.values import load_values, objective_of, start_from_replicas
from solver.program.variables import Program
from solver.solve import stages
from solver.solve.assemble import bound_within_cost
from solver.solve.backends import SolveOutcome
from solver.solve.greedy import keep_better
from solver.solve.strategy import plan_scenario
from solver.survivability import signoff
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import offer, row, scenario, table, workload, zone

TINY = Path(__file__).resolve().parents[1] / "inputs" / "scenarios" / "tiny.yaml"
R = PurchaseKind.reserved


def _odd_nodes() -> tuple[Scenario, CapacityTable]:
    # u: 15 req/s, v: 5 req/s, TP2 replicas of 10 req/s sharing 3-GPU nodes: 3 replicas need
    # 3 nodes (9 GPUs × 2.0 × 730 = 13,140); counted by GPUs, 2 nodes (8,760) would seem enough.
    sc = scenario([workload("u", 15.0, utilization=1.0), workload("v", 5.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=3))])
    return sc, table(row("u", "H100", 2, 10.0), row("v", "H100", 2, 10.0))


def test_a_start_that_breaks_a_row_is_no_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # The dedicated-pool start built with a node count that forgets whole replicas (GPUs ÷ GPUs
    # per node, as before) costs 8,760, less than any fleet that fits: checked against every
    # row, it is no start, and it is not kept over the solver's fleet.
    real = program_values.start_from_replicas

    def miscounted(program: Program, x: dict[ReplicaKey, int]) -> dict[str, float] | None:
        with monkeypatch.context() as m:
            m.setattr(program_values, "nodes_needed",
                      lambda held, g: -(-sum(t * n for t, n in held.items()) // g))
            return real(program, x)

    monkeypatch.setattr(stages, "start_from_replicas", miscounted)  # where starts are built
    sc, tb = _odd_nodes()
    plan = plan_scenario(sc, tb, gap=1e-9)
    assert plan.status is SolveStatus.optimal
    assert plan.cost.per_month == pytest.approx(13140.0)
    assert verify_plan(plan, sc, tb) == []


def _one_pool() -> tuple[Program, dict[str, float], dict[str, float]]:
    """A pool of 20 req/s, 1-GPU replicas of 10 at reserved 2.0 (1,460 a replica-month): a valid
    start of 3 replicas (4,380) and values of 1 replica (1,460) that break the demand row."""
    sc = scenario([workload("w", 20.0, utilization=1.0)],
                  [zone("z", offer(reserved=(2.0, 64), gpus_per_node=1))])
    program = build_program(build_program_data(sc, table(row("w", "H100", 1, 10.0))))
    key = ReplicaKey("w", "H100", 1, "z", R, None)
    start = start_from_replicas(program, {key: 3})
    assert start is not None
    assert start_from_replicas(program, {key: 1}) is None  # breaks the demand row
    broken = dict(start)
    broken[program.v.replicas[key].name] = 1.0
    broken[next(iter(program.v.nodes.values())).name] = 1.0
    return program, start, broken


def _claimed_optimal(program: Program, values: dict[str, float]) -> SolveOutcome:
    load_values(program, values)
    cost = objective_of(program, values)
    return SolveOutcome(SolveStatus.optimal, SolverReport(name="highs", seconds=0.0, gap=0.0,
                                                          bound=cost, objective=cost), True)


def test_a_solver_fleet_that_breaks_a_row_is_not_kept_over_the_start() -> None:
    program, start, broken = _one_pool()
    outcome = keep_better(program, _claimed_optimal(program, broken), start,
                          time.perf_counter(), 1e-9)
    assert outcome.report.objective == pytest.approx(4380.0)  # the start's fleet
    assert objective_of(program, {v.name: v.varValue or 0.0 for v in program.prob.variables()}
                        ) == pytest.approx(4380.0)
    assert outcome.status is SolveStatus.feasible  # its proof was of a fleet that breaks a row
    assert outcome.report.bound is not None and outcome.report.bound <= 4380.0


def test_a_solver_fleet_that_breaks_a_row_is_never_optimal() -> None:
    program, _, broken = _one_pool()
    outcome = keep_better(program, _claimed_optimal(program, broken), None,
                          time.perf_counter(), 1e-9)
    assert outcome.status is SolveStatus.feasible and outcome.report.gap is None


def _plan(bound: float, cost: float) -> Plan:
    return Plan(scenario="s", status=SolveStatus.optimal,
                solver=SolverReport(name="highs", seconds=1.0, gap=0.0, bound=bound,
                                    objective=cost),
                cost=Cost(per_month=cost, per_million_tokens=None,
                          per_million_output_tokens=None, currency="USD"), slices=())


def test_a_bound_is_never_above_the_cost() -> None:
    rounding = bound_within_cost(_plan(1000.0001, 1000.0))
    assert (rounding.status, rounding.solver.bound, rounding.solver.gap) == (
        SolveStatus.optimal, 1000.0, 0.0)
    # a fleet cheaper than a proven bound breaks a row: not optimal, no bound claimed
    contradiction = bound_within_cost(_plan(1200.0, 1000.0))
    assert (contradiction.status, contradiction.solver.bound, contradiction.solver.gap) == (
        SolveStatus.feasible, None, None)
    below = _plan(900.0, 1000.0)
    assert bound_within_cost(below) is below


@pytest.mark.skipif(not TINY.exists(), reason="tiny scenario not shipped")
def test_plan_writes_a_verified_plan(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(TINY), "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "plan.json").read_text())
    assert data["verified"] is True
    assert data["solver"]["bound"] <= data["cost"]["per_month"]


@pytest.mark.skipif(not TINY.exists(), reason="tiny scenario not shipped")
def test_a_fleet_the_verifier_rejects_exits_3_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = "demand: chat in day has 3 rps usable, needs 4"
    monkeypatch.setattr(signoff, "verify_plan", lambda plan, scenario, table: [broken])
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(TINY), "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert broken in result.stderr and "no plan was written" in result.stderr
    assert not (out / "plan.json").exists()
