"""Solve a built program with HiGHS (default) or CBC and say, in one place, how it ended.

PuLP's status word is not enough: PuLP 3.3.2 reports ``Optimal`` when HiGHS stops at its time
limit holding an incumbent. The status here is read from the solver itself — HiGHS's model
status, MIP gap and dual bound from the ``highspy.Highs`` object PuLP leaves on the problem.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import pulp

from models.plan import SolverReport, SolveStatus
from solver.solve import SOLVERS
from solver.solve.clock import native_solve
from solver.solve.pool import highs_pool

#: Threads and seed are fixed so a plan is the same on every run of the same input.
SOLVER_THREADS = 2
SOLVER_SEED = 0
#: Threads HiGHS uses for the solves of this context; a sweep fixes it per variant
#: (:func:`solver_threads`), so a variant's plan never depends on the executor that ran it.
THREADS: ContextVar[int] = ContextVar("solver_threads", default=SOLVER_THREADS)
#: A value within this distance of an integer is that integer.
INTEGRALITY_TOLERANCE = 1e-6


class SolveError(RuntimeError):
    """The solver returned a value that is not what the program allows (a bug, not bad input)."""


@dataclass(frozen=True)
class SolveOutcome:
    """Status, what the solver reported, and whether variable values hold a solution."""

    status: SolveStatus
    report: SolverReport
    has_solution: bool


@contextlib.contextmanager
def solver_threads(threads: int) -> Iterator[None]:
    """HiGHS uses ``threads`` threads for the solves made inside this block."""
    token = THREADS.set(threads)
    try:
        yield
    finally:
        THREADS.reset(token)


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Silence file descriptor 1: HiGHS prints a banner from C++ when its first model is made."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


class _QuietHighs(pulp.HiGHS):
    """PuLP's HiGHS interface without the banner (the core never prints), with a start."""

    start: dict[str, float] | None = None

    def createAndConfigureSolver(self, lp: Any) -> None:
        with quiet_stdout():
            super().createAndConfigureSolver(lp)

    def callSolver(self, lp: Any) -> None:
        if self.start:
            import highspy

            sol = highspy.HighsSolution()
            sol.col_value = [self.start.get(var.name, 0.0) for var in lp.variables()]
            sol.value_valid = True
            lp.solverModel.setSolution(sol)
        super().callSolver(lp)


def solve(
    prob: pulp.LpProblem, solver: str = "highs", time_limit_s: float = 60.0, gap: float = 0.01,
    start: dict[str, float] | None = None,
) -> SolveOutcome:
    """Solve ``prob`` in place and map the outcome to a :class:`SolveStatus`.

    ``start`` (variable name → value) is a feasible fleet HiGHS takes as its first incumbent.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    started = time.perf_counter()
    if solver == "highs":
        with highs_pool(THREADS.get()) as threads, native_solve():
            highs = _QuietHighs(msg=False, timeLimit=time_limit_s, gapRel=gap, threads=threads,
                                random_seed=SOLVER_SEED)
            highs.start = start
            prob.solve(highs)
        outcome = _highs_outcome(prob, time.perf_counter() - started)
        if start and outcome.has_solution and not _objective_agrees(prob, outcome):
            # HiGHS 1.16 can report a start it was given as optimal with an objective (and
            # bound) of another point; solve again without the start rather than trust it
            left = max(time_limit_s - (time.perf_counter() - started), 1.0)
            again = solve(prob, solver, left, gap, start=None)
            report = again.report.model_copy(update={"seconds": time.perf_counter() - started})
            return SolveOutcome(again.status, report, again.has_solution)
        return outcome
    with warnings.catch_warnings():
        # PuLP 3.3 deprecates its bundled CBC for 4.0; it is the CBC every install has.
        warnings.filterwarnings("ignore", message="PULP_CBC_CMD is deprecated",
                                category=DeprecationWarning)
        cbc = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s, gapRel=gap, threads=1,
                                options=[f"randomSeed {SOLVER_SEED + 1}",
                                         f"randomCbcSeed {SOLVER_SEED + 1}"])
        prob.solve(cbc)
    seconds = time.perf_counter() - started
    return _cbc_outcome(prob, seconds)


def _objective_agrees(prob: pulp.LpProblem, outcome: SolveOutcome) -> bool:
    """The objective HiGHS reports is that of the values it left in the variables."""
    reported = outcome.report.objective
    actual = pulp.value(prob.objective)
    if reported is None or actual is None:
        return False
    return abs(float(actual) - reported) <= 1e-6 * max(1.0, abs(reported))


def _highs_outcome(prob: pulp.LpProblem, seconds: float) -> SolveOutcome:
    import highspy

    model = prob.solverModel
    status = model.getModelStatus()
    info = model.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    mip = any(v.cat == pulp.LpInteger for v in prob.variables())
    objective = info.objective_function_value if has_solution else None
    bound = info.mip_dual_bound if mip else objective
    gap = info.mip_gap if mip and has_solution else (0.0 if has_solution else None)
    hs = highspy.HighsModelStatus
    if status == hs.kOptimal:
        result = SolveStatus.optimal
    elif status in (hs.kInfeasible, hs.kUnboundedOrInfeasible):
        result = SolveStatus.infeasible
    elif status == hs.kTimeLimit:
        result = SolveStatus.time_limit
    elif has_solution and status in (hs.kIterationLimit, hs.kInterrupt, hs.kSolutionLimit,
                                     hs.kObjectiveBound, hs.kObjectiveTarget):
        result = SolveStatus.feasible
    else:
        result = SolveStatus.error
    report = SolverReport(name="highs", seconds=seconds, gap=_finite(gap), bound=_finite(bound),
                          objective=_finite(objective))
    return SolveOutcome(result, report, has_solution and result is not SolveStatus.infeasible)


def _cbc_outcome(prob: pulp.LpProblem, seconds: float) -> SolveOutcome:
    sol = prob.sol_status
    if sol == pulp.LpSolutionOptimal:
        result = SolveStatus.optimal
    elif sol == pulp.LpSolutionIntegerFeasible:
        result = SolveStatus.time_limit
    elif prob.status == pulp.LpStatusInfeasible or sol == pulp.LpSolutionInfeasible:
        result = SolveStatus.infeasible
    elif prob.status == pulp.LpStatusNotSolved:
        result = SolveStatus.time_limit
    else:
        result = SolveStatus.error
    # "Not Solved" at the time limit may leave fractional LP values in the variables: only an
    # optimal or integer-feasible solution status means CBC holds a fleet.
    has_solution = sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) and all(
        v.varValue is not None for v in prob.variables()
    )
    objective = pulp.value(prob.objective) if has_solution else None
    report = SolverReport(name="cbc", seconds=seconds, gap=None, bound=None,
                          objective=None if objective is None else float(objective))
    return SolveOutcome(result, report, has_solution)


def _finite(x: float | None) -> float | None:
    if x is None or x != x or abs(x) == float("inf"):
        return None
    return float(x)


def integer_value(var: pulp.LpVariable) -> int:
    """Value of an integer variable: checked integral within tolerance, then rounded."""
    value = var.varValue if var.varValue is not None else 0.0
    nearest = round(value)
    if abs(value - nearest) > INTEGRALITY_TOLERANCE:
        raise SolveError(f"{var.name} = {value} is not integral")
    return nearest


def real_value(var: pulp.LpVariable) -> float:
    """A continuous variable's value (0 where the solver left none)."""
    return float(var.varValue) if var.varValue is not None else 0.0
