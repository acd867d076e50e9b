"""HiGHS's one thread pool per process, resized for the count a solve asks for
(solver/solve/pool.py)."""

from __future__ import annotations

import pytest

from models.plan import SolveStatus
from solver.solve.backends import SOLVER_SEED, SOLVER_THREADS, solve
from solver.solve.clock import Deadline
from solver.solve.highs import model_of, run
from solver.solve.pool import highs_pool
from tests.plan_fixtures import three_blocks


def test_solves_asking_for_one_thread_and_for_two_all_run_in_one_process() -> None:
    # HiGHS refuses a solve whose thread count is not its pool's (model status not set, no
    # fleet): each solve here asks for another count than the one before it. three_blocks'
    # optimum: 1 reserved + on-demand 0, 2, 1 = 1,460 + 3 × 730 = 3,650.
    program = three_blocks()
    model = model_of(program)
    for threads in (1, 2, 1, None):
        result = run(model, Deadline(20.0), 20.0, 1e-9, threads=threads)
        assert result.status is SolveStatus.optimal
        assert result.objective == pytest.approx(3650.0)
    run(model, Deadline(20.0), 20.0, 1e-9, threads=1)
    outcome = solve(program.prob, "highs", 20.0, 1e-9)  # PuLP's HiGHS, the planner's count
    assert outcome.status is SolveStatus.optimal
    assert outcome.report.objective == pytest.approx(3650.0)


def test_after_a_solve_on_one_thread_highs_alone_runs_on_the_planners_count() -> None:
    # a benchmark's or a probe's own HiGHS (not through the pool) after a plan whose last solve
    # asked for one thread: the pool was put down after that solve
    import highspy

    model = model_of(three_blocks())
    run(model, Deadline(20.0), 20.0, 1e-9, threads=2)
    assert run(model, Deadline(20.0), 20.0, 1e-9, threads=1).status is SolveStatus.optimal
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    for option, value in (("threads", SOLVER_THREADS), ("random_seed", SOLVER_SEED)):
        h.setOptionValue(option, value)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(3650.0)


def test_a_solve_beside_a_running_one_keeps_the_pools_count() -> None:
    # resizing the pool under a running solve (one abandoned past the deadline) would abort it
    with highs_pool(2):
        pass
    with highs_pool(1) as first, highs_pool(2) as beside:
        assert (first, beside) == (1, 1)
    with highs_pool(2) as after:
        assert after == 2
