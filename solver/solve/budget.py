"""A plan with a monthly budget: the program searched without its budget row, the budget
judged on what the search found.

The budget row (C7, docs/program.md) bounds the objective itself: cost ≤ B. So the budgeted
program's fleets are exactly the unbudgeted program's fleets of cost at most B, and

- a fleet the unbudgeted search finds that costs at most B is a fleet of the budgeted program,
  and the cheapest fleet of the one search is the cheapest of the other wherever it is within
  the budget;
- a lower bound of the unbudgeted program bounds the budgeted one; above B it proves that no
  fleet meets every requirement within the budget (the plan is then ``infeasible``).

With the row in the program, every start the stages make (the greedy fleet, the grouped slices
at their busiest demand, the dedicated pools) costs more than a budget set near the optimum, so
none is kept, the neighbourhoods have no incumbent to search around, and the joint solve starts
from nothing: a budget set at the cost the same scenario reached without one in 10 s ended with
no fleet and an empty diagnosis in 11 of 14 scenarios (benchmarks/results/trust.md, "Trust sweep").
Searched without it, a fleet above the budget is a start for the next stage, never the plan.

The search runs on a twin of the plan's clock (:meth:`~solver.solve.clock.Deadline.twin`: the
same limit and start, so its stages get the plan's shares and take the unbudgeted plan's path;
a user's Ctrl-C still stops it) and stops as soon as its bound exceeds the budget. Where it ends
before its time limit on a fleet above the budget proven within the plan's gap (the budget
inside that gap), HiGHS searches the budgeted program itself for the time left (stage
``budget``). Where no fleet within the budget is found, the plan's diagnosis says so: the
cheapest fleet found, the bound, and whether a fleet within the budget may exist.

Where the budget is out of reach (the bound above it, or the budgeted program proven to have
no fleet) and the search found a fleet that meets every other requirement, the budget is the
one requirement not met, and the search itself says by how much: between its bound and its
fleet's cost. After its bound passes the budget it keeps searching up to
:data:`NARROW_SHARE` of the limit to narrow that range, then stops. The elastic program
(:mod:`solver.solve.diagnose`) is left to plans where no fleet was found at any cost: given
the time left, it took the whole limit of the demo with its budget at half the plan's cost,
and stopped on a relaxation dearer than the plan without a budget that also left demand
unmet (benchmarks/results/trust.md, "A budget out of reach").
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from models.plan import Shortfall, SolveStatus
from solver.program.data import ProgramData
from solver.program.variables import Program
from solver.solve.backends import SolveOutcome
from solver.solve.clock import Deadline
from solver.solve.highs import ROW_TOL, Progress, Vector, model_of, run
from solver.solve.incumbent import Incumbent

#: What a progress report says: where the solve stands, and the stages running.
OnProgress = Callable[[Progress, str], None]
#: A path of the plan's solve (shared or dedicated pools, HiGHS or CBC): its program and
#: outcome for the program data given, on the clock given, telling progress.
Solve = Callable[[ProgramData, Deadline, OnProgress], tuple[Program, SolveOutcome]]
#: Why the budget's own clock was stopped: the bound rose above the budget.
OVER_BUDGET = "bound above the budget"
#: Name of the search of the budgeted program itself in the plan's stages.
BUDGET_STAGE = "budget"
#: Least time worth that search [s].
BUDGET_LEAST_S = 0.2
#: Share of the plan's limit the search may run to once its bound has passed the budget,
#: narrowing how far above the budget the cheapest fleet is (the diagnosis's range): a "no"
#: should not take as long as a plan [1].
NARROW_SHARE = 0.25


@dataclass(frozen=True)
class BudgetedSolve:
    """The plan's program and outcome under a budget, and (no fleet within the budget found,
    none proven impossible) the diagnosis that says so."""

    program: Program
    outcome: SolveOutcome
    diagnosis: tuple[Shortfall, ...] = ()


def budget_limit(budget: float) -> float:
    """The most a fleet within ``budget`` may cost: the budget row's own tolerance
    (:data:`~solver.solve.highs.ROW_TOL`, as every row is checked) [currency/month]."""
    return budget + ROW_TOL * max(1.0, abs(budget))


def solve_within_budget(data: ProgramData, solve: Solve, deadline: Deadline, gap: float,
                        solver: str, on_progress: OnProgress | None = None) -> BudgetedSolve:
    """``solve`` the program without its budget row, then keep its fleet only within the
    budget (see the module docstring). ``deadline`` is the plan's clock."""
    budget = data.monthly_budget
    if budget is None:
        raise ValueError("solve_within_budget needs a program with a monthly budget")
    limit = budget_limit(budget)
    clock = deadline.twin()  # the plan's shares: the search is the unbudgeted plan's
    narrow_s = NARROW_SHARE * deadline.limit_s
    timers: list[threading.Timer] = []

    def progress(seen: Progress, stages: str) -> None:
        if seen.bound is not None and seen.bound > limit and not clock.stopped and not timers:
            # no fleet within the budget: searched on to narrow by how much, then stopped
            timers.append(threading.Timer(max(narrow_s - clock.elapsed(), 0.0), clock.stop,
                                          (OVER_BUDGET,)))
            timers[0].daemon = True
            timers[0].start()
        if on_progress is not None:  # a fleet above the budget is no plan: not shown as one
            cost = seen.cost if seen.cost is not None and seen.cost <= limit else None
            on_progress(Progress(seen.seconds, cost, seen.bound), stages)

    try:
        program, outcome = solve(dataclasses.replace(data, monthly_budget=None), clock,
                                 progress)
    finally:
        for timer in timers:
            timer.cancel()
    report = outcome.report
    cost = report.objective if outcome.has_solution else None
    searched_bound = report.bound  # the program's without the budget: it bounds the cheapest
    if cost is not None and cost <= limit:
        return BudgetedSolve(program, outcome)
    if outcome.status is SolveStatus.optimal and solver == "highs" and cost is not None:
        # proven within the gap above the budget, with time left: search within the budget
        found = _search_within(program, outcome, limit, deadline, gap, on_progress)
        if found is not None and found.has_solution:
            return BudgetedSolve(program, found)
        if found is not None:  # none: proven (infeasible) or stopped by the clock
            outcome = found
        report = outcome.report.model_copy(update={"seconds": deadline.elapsed()})
    bound = report.bound
    if outcome.status is SolveStatus.infeasible or (bound is not None and bound > limit):
        # no fleet within the budget exists: with a fleet that meets every other requirement,
        # the budget alone falls short, by how much the search says; else the plan's
        # diagnosis is the elastic program's
        none = SolveOutcome(SolveStatus.infeasible, report.model_copy(
            update={"gap": None, "bound": None, "objective": None}), False)
        if cost is None:
            return BudgetedSolve(program, none)
        least = max((b for b in (bound, searched_bound) if b is not None), default=None)
        return BudgetedSolve(program, none, (_over_budget(budget, cost, least, gap,
                                                          deadline.elapsed(), data.currency),))
    status = (SolveStatus.interrupted if deadline.stopped
              else outcome.status if outcome.status is SolveStatus.error
              else SolveStatus.time_limit)
    none = SolveOutcome(status, report.model_copy(update={"gap": None, "objective": None}),
                        False)
    if status is not SolveStatus.time_limit:  # stopped by the user, or the solver failed
        return BudgetedSolve(program, none)
    return BudgetedSolve(program, none,
                         (_not_found(budget, cost, bound, deadline.given_s, data.currency),))


def _search_within(program: Program, outcome: SolveOutcome, limit: float, deadline: Deadline,
                   gap: float, on_progress: OnProgress | None) -> SolveOutcome | None:
    """HiGHS on the program with its cost at most ``limit`` for the time left, from no start
    (the fleet held is above it): the outcome with its fleet loaded; without one, status
    ``infeasible`` where it proved that none exists, else ``time_limit`` (its stage recorded
    either way); ``None`` where too little time was left to start. Its bound is the larger of
    its own and the unbudgeted search's."""
    if deadline.left() < BUDGET_LEAST_S:
        return None
    model = model_of(program)
    incumbent = Incumbent(model, deadline, gap, on_progress)
    incumbent.raise_bound(outcome.report.bound, BUDGET_STAGE)
    started = deadline.elapsed()

    def offer(x: Vector) -> bool:  # HiGHS holds the cutoff row to its own tolerance
        within = model.cost_of(np.where(model.integer, np.round(x), x)) <= limit
        return within and incumbent.offer(x, BUDGET_STAGE)

    result = run(model, deadline, deadline.left(), gap, cutoff=limit, on_solution=offer)
    if result.x is not None:
        offer(result.x)
    incumbent.raise_bound(result.bound, BUDGET_STAGE)
    incumbent.record(BUDGET_STAGE, deadline.elapsed() - started)
    x, _ = incumbent.fleet()
    status = incumbent.outcome(infeasible=result.status is SolveStatus.infeasible,
                               timed_out=result.status is not SolveStatus.optimal)
    ours = incumbent.report(outcome.report.name, status)
    report = ours.model_copy(update={"stages": (*outcome.report.stages, *ours.stages)})
    if x is None:
        return SolveOutcome(status.status, report, False)
    model.load(x)
    return SolveOutcome(status.status, report, True)


def _over_budget(budget: float, cost: float, bound: float | None, gap: float,
                 seconds: float, currency: str) -> Shortfall:
    """The diagnosis of a budget out of reach, from a fleet that meets every other
    requirement (``cost``) and the search's ``bound`` (below the budget where the budgeted
    program was proven to have no fleet): the cheapest such fleet's cost where the two are
    within the plan's ``gap``, else the range it lies in. ``amount``: the least shortfall
    proven [currency/month]."""
    least = max(bound if bound is not None else budget, budget)
    head = f"no fleet within the budget of {budget:,.0f} {currency}/month meets every " \
           "requirement"
    if cost - least <= gap * cost:
        return Shortfall(
            requirement="budget", amount=cost - budget, unit="currency/month",
            message=f"{head}: the cheapest fleet that meets every other requirement costs about "
                    f"{cost:,.0f} {currency}/month; the budget allows {budget:,.0f} (short by "
                    f"{cost - budget:,.0f})")
    return Shortfall(
        requirement="budget", amount=least - budget, unit="currency/month",
        message=f"{head}: no fleet that meets every other requirement costs less than "
                f"{least:,.0f} {currency}/month (the bound its search proved in {seconds:.0f} "
                f"s), and the cheapest it found costs {cost:,.0f}; the budget allows "
                f"{budget:,.0f} (short by {least - budget:,.0f} to {cost - budget:,.0f}; a "
                "longer --time-limit narrows the range)")


def _not_found(budget: float, cost: float | None, bound: float | None, limit_s: float,
               currency: str) -> Shortfall:
    """The diagnosis of a plan that found no fleet within the budget in its time and did not
    prove that none exists."""
    found = (f"the cheapest fleet found that meets every other requirement costs {cost:,.0f} "
             f"{currency}/month, {cost - budget:,.0f} over it" if cost is not None else
             "no fleet was found at any cost")
    if bound is None:
        may = "so a fleet within the budget may exist"
    else:
        may = (f"no fleet costs less than {bound:,.0f} (the bound), so a fleet within the "
               "budget may exist")
    return Shortfall(
        requirement="budget", amount=0.0 if cost is None else max(cost - budget, 0.0),
        unit="currency/month",
        message=f"no fleet within the budget of {budget:,.0f} {currency}/month was found in "
                f"{limit_s:g} s: {found}; {may} — raise --time-limit, or the budget")
