"""Plan a scenario: capacity table → program data → program → solve → a typed :class:`Plan`.

The strategy: which starts are tried, how the time limit is shared between them, the
neighbourhoods and the joint solve, and when the program is split per workload
(:mod:`solver.solve.decompose`). The solved program becomes a plan in :mod:`solver.solve.assemble`;
an infeasible one is explained by :mod:`solver.solve.diagnose`.
"""

from __future__ import annotations

import dataclasses
import time

from models.capacity import CapacityTable
from models.plan import (
    Cost,
    Plan,
    Slice,
    SolveStatus,
)
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import ProgramData, build_program_data
from solver.program.values import objective_of, start_from_replicas
from solver.program.variables import Program
from solver.solve.aggregate import AGGREGATE_ABOVE_SLICES, STATIC_STAGE, aggregated_start
from solver.solve.assemble import bound_within_cost, complete_plan, scenario_fingerprint
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.decompose import solve_decomposed
from solver.solve.diagnose import diagnose
from solver.solve.greedy import greedy_start, keep_better, unproven_unless_it_holds
from solver.solve.neighbourhood import improve_start

#: Share of the time limit spent finding the dedicated-pool fleet that starts a shared solve [1],
#: at most ``DEDICATED_START_MAX_S``: the start needs to be good, not proven optimal.
DEDICATED_START_SHARE = 0.25
DEDICATED_START_MAX_S = 20.0
#: Gap the dedicated-pool start is solved to (looser than the plan's: sub-programs then stop on
#: their gap, not on the clock, so the start — and the plan — do not depend on machine speed) [1].
DEDICATED_START_GAP = 0.05



def plan_scenario(
    scenario: Scenario,
    capacity_table: CapacityTable | None = None,
    solver: str = "highs",
    time_limit_s: float = 60.0,
    gap: float = 0.01,
) -> Plan:
    """The cheapest fleet for a scenario, or the diagnosis of why there is none."""
    if capacity_table is None:
        from solver.capacity.table import build_capacity_table

        capacity_table = build_capacity_table(scenario)
    data = build_program_data(scenario, capacity_table)
    if data.share_nodes:
        program, outcome = solve_shared(data, solver, time_limit_s, gap)
    else:  # dedicated pools: one sub-program per workload, bound proven by their sum
        program, outcome = solve_decomposed(data, solver, time_limit_s, gap)
        outcome = unproven_unless_it_holds(program, outcome)
    slices = tuple(Slice(name=b.name, hours=b.hours) for b in scenario.policy.time_blocks)
    base = Plan(
        scenario=scenario.name, status=outcome.status, solver=outcome.report,
        cost=Cost(per_month=0.0, per_million_tokens=None, per_million_output_tokens=None,
                  currency=scenario.policy.currency),
        slices=slices, fingerprint=scenario_fingerprint(scenario),
    )
    if not outcome.has_solution:
        if outcome.status is SolveStatus.infeasible:
            shortfalls = diagnose(scenario, data, solver=solver, time_limit_s=time_limit_s)
            return base.model_copy(update={"diagnosis": shortfalls})
        return base
    return bound_within_cost(complete_plan(base, scenario, program, capacity_table))


def solve_shared(
    data: ProgramData, solver: str, time_limit_s: float, gap: float
) -> tuple[Program, SolveOutcome]:
    """Shared node pools: the joint program, started from the best fleet found cheaply.

    With many slices (hourly ones), the start is the fleet of the time-aggregated programs of
    :mod:`solver.solve.aggregate` (slices grouped at their busiest demand: a restriction, so its
    fleet
    is feasible here); with few, the cheaper of the dedicated-pool fleet of the per-workload
    decomposition (dedicated pools restrict shared ones) and the static fleet at the day's peak
    (one group); else the greedy fleet. With more than one slice the start is then improved in
    the two neighbourhoods of :mod:`solver.solve.neighbourhood`. The fleet reported is the joint
    solve's, or the start where the joint solve ends without a better one (CBC takes no start).
    The bound reported is the joint solver's own: no start's bound holds for this program.
    """
    started = time.perf_counter()
    program = build_program(data)
    if len(data.slices) > AGGREGATE_ABOVE_SLICES:
        start = aggregated_start(program, solver, time_limit_s, gap)
    else:
        start = _cheaper(program, _dedicated_start(program, solver, time_limit_s, gap),
                         aggregated_start(program, solver, time_limit_s, gap, STATIC_STAGE))
    if start is None:
        start = greedy_start(program)
    if start is not None and len(data.slices) > 1:
        start = improve_start(program, start, solver, time_limit_s, gap, started)
    left_s = max(time_limit_s - (time.perf_counter() - started), 0.5)
    outcome = solve(program.prob, solver, left_s, gap, start=start)
    return program, keep_better(program, outcome, start, started, gap)


def _dedicated_start(
    program: Program, solver: str, time_limit_s: float, gap: float
) -> dict[str, float] | None:
    """The dedicated-pool fleet of the per-workload decomposition, as values of ``program``."""
    dedicated = dataclasses.replace(program.data, share_nodes=False)
    budget_s = max(min(time_limit_s * DEDICATED_START_SHARE, DEDICATED_START_MAX_S), 0.5)
    ded_program, ded_outcome = solve_decomposed(dedicated, solver, budget_s,
                                                max(gap, DEDICATED_START_GAP))
    if not ded_outcome.has_solution:
        return None
    fleet = {k: integer_value(v) for k, v in ded_program.v.replicas.items()}
    return start_from_replicas(program, {k: n for k, n in fleet.items() if n > 0})


def _cheaper(
    program: Program, *starts: dict[str, float] | None
) -> dict[str, float] | None:
    """The cheapest of the starts found (the first on a tie), ``None`` if none was found."""
    found = [s for s in starts if s is not None]
    return min(found, key=lambda s: objective_of(program, s)) if found else None
