"""The joint program's root solved beside the blocks, in a process of its own
(solver/solve/root_beside.py): its bound is the plan's where the blocks' relaxations and the
joint solve after them prove less."""

from __future__ import annotations

import pytest

from models.plan import SolverReport, SolveStatus
from solver.solve.backends import SolveOutcome
from tests.test_horizon_start import GROWTH
from tests.test_periods import QUARTER, TABLE, quarterly

# The optimum (tests/test_horizon_start.py): one 12-month reservation from quarter 0, 8,760 ×
# 0.45 = 3,942, and quarter 3's second node on demand, 2,190. The blocks' LP relaxations, priced
# at 985.5 a quarter, bound it by 5 node-quarters × 985.5 = 4,927.5.
OPTIMUM = 8760 * 0.45 + QUARTER
BLOCKS_LP = 5 * 8760 * 0.45 / 4


def _plan_without_a_joint_root(monkeypatch: pytest.MonkeyPatch, beside: bool) -> object:
    """The plan over periods with its blocks planned in shares of the time (the size limit of
    a block solved whole set to 0) and a joint solve that ends with neither fleet nor bound (as
    under load, where the blocks leave it no time for its root)."""
    from solver.solve import block_plans, horizon, root_beside
    from solver.solve.horizon import plan_horizon

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    monkeypatch.setattr(root_beside, "BESIDE_CORES", 1)  # a one-core runner too
    monkeypatch.setattr(horizon, "ROOT_BESIDE", beside)

    def no_root(*args: object, **kwargs: object) -> SolveOutcome:
        return SolveOutcome(SolveStatus.time_limit, SolverReport(name="highs", seconds=0.0),
                            False)

    monkeypatch.setattr(horizon, "joint_solve", no_root)
    return plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=30,
                        gap=1e-6)


def test_the_root_beside_the_blocks_proves_what_their_relaxations_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the joint solve proving nothing, the plan's bound is the root's beside the blocks:
    HiGHS proves the optimum, 6,132, where the blocks' relaxations prove 4,927.5 (below)."""
    from models.plan import Plan

    plan = _plan_without_a_joint_root(monkeypatch, beside=True)
    assert isinstance(plan, Plan) and plan.horizon is not None
    assert plan.horizon.expected_cost == pytest.approx(OPTIMUM)
    assert plan.solver.bound == pytest.approx(OPTIMUM)
    stage = next(s for s in plan.solver.stages if s.name == "joint-beside")
    assert stage.bound_after == pytest.approx(OPTIMUM)
    # the process's CPU time is recorded with its stage (the plan process's clock does not
    # see it), and only there: other stages dump as before
    assert stage.cpu_s is not None and stage.cpu_s > 0.0
    assert "cpu_s" in stage.model_dump()
    assert all("cpu_s" not in s.model_dump() for s in plan.solver.stages if s is not stage)
    # the LP before the search is left to the root beside (one model of the joint program)
    assert all(s.name != "lp" for s in plan.solver.stages)


def test_without_it_the_bound_is_the_lp_before_the_search_or_the_blocks_relaxations(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same plan with no root beside the blocks: the joint program's LP relaxation is
    solved before the search instead (stage ``lp``; here it reaches 6,132 itself), and with
    that off too the bound is the blocks' relaxations', 4,927.5; no ``joint-beside`` stage."""
    from models.plan import Plan
    from solver.solve import horizon

    plan = _plan_without_a_joint_root(monkeypatch, beside=False)
    assert isinstance(plan, Plan) and plan.horizon is not None
    assert plan.horizon.expected_cost == pytest.approx(OPTIMUM)
    lp = next(s for s in plan.solver.stages if s.name == "lp")
    assert lp.bound_after == pytest.approx(OPTIMUM)
    assert all(s.name != "joint-beside" for s in plan.solver.stages)
    monkeypatch.setattr(horizon, "early_lp_bound", lambda *args, **kwargs: None)
    plan = _plan_without_a_joint_root(monkeypatch, beside=False)
    assert isinstance(plan, Plan) and plan.horizon is not None
    assert plan.solver.bound == pytest.approx(BLOCKS_LP)
    assert all(s.name not in ("joint-beside", "lp") for s in plan.solver.stages)


def test_a_plan_that_proves_its_gap_does_not_wait_for_the_root(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the joint solve proves the optimum itself, the root beside the blocks is ended at
    once: the plan takes seconds, not the 30 of its limit."""
    import time

    from solver.solve import block_plans, root_beside
    from solver.solve.horizon import plan_horizon

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    monkeypatch.setattr(root_beside, "BESIDE_CORES", 1)
    began = time.perf_counter()
    plan = plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=30,
                        gap=1e-6)
    assert plan.status is SolveStatus.optimal
    assert any(s.name == "joint-beside" for s in plan.solver.stages)
    assert time.perf_counter() - began < 15.0


def test_without_a_process_to_run_it_in_the_plan_goes_on_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no process can be started beside the plan (no fork server, as on Windows), the
    plan is made as without it: the optimum, its bound the joint solve's."""
    import multiprocessing

    from solver.solve import block_plans, root_beside
    from solver.solve.horizon import plan_horizon

    def no_forkserver(method: str | None = None) -> object:
        raise ValueError(f"cannot find context for {method!r}")

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    monkeypatch.setattr(root_beside, "BESIDE_CORES", 1)
    monkeypatch.setattr(multiprocessing, "get_context", no_forkserver)
    plan = plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=30,
                        gap=1e-6)
    assert plan.status is SolveStatus.optimal
    assert plan.horizon is not None and plan.horizon.expected_cost == pytest.approx(OPTIMUM)
    assert all(s.name != "joint-beside" for s in plan.solver.stages)
