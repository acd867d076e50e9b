"""Improve a fleet by solving the program in two small neighbourhoods of it.

A start found on grouped slices (:mod:`solver.solve.aggregate`) holds its elastic capacity flat over
each group; the full program could follow demand hour by hour, but from that start its search
rarely gets there in the time left (it branches over the reserved base and the hourly capacity at
once). Two restrictions of the full program, each a bound change on its variables, do it in
seconds:

1. **Elastic capacity, hour by hour, under the start's reserved base**: every reserved variable
   (replicas, nodes, the "fullest node is full" binaries of reserved pools) fixed at the start's
   value. What is left is the slices' on-demand and spot capacity.
2. **The reserved base may shrink**: every reserved variable bounded above by the start's value,
   elastic capacity free, so the program may trade reserved nodes for hourly capacity.

Each is a restriction (its fleets are fleets of the full program), so the fleet it finds is kept
only where it is cheaper, and no bound of its own is reported: the full program's is. What each
gains on the benchmark sizes is measured in docs/program.md and benchmarks/results/scale.md.
"""

from __future__ import annotations

import time

import pulp

from solver.program.values import objective_of, start_from_replicas
from solver.program.variables import Program
from solver.solve.backends import integer_value, solve

#: Shares of the time limit the two neighbourhoods may use, and the least time worth one [1], [s].
ELASTIC_SHARE = 0.05
SHRINK_SHARE = 0.15
MIN_S = 0.5


def reserved_variables(program: Program) -> list[pulp.LpVariable]:
    """Variables of the reserved fleet: reserved replicas and nodes, and the binaries of
    reserved pools (the same in every slice)."""
    v = program.v
    return ([x for k, x in v.replicas.items() if k.slice is None]
            + [y for k, y in v.nodes.items() if k.slice is None]
            + [b for k, b in v.full.items() if k[4] is None])


def improve_start(
    program: Program, start: dict[str, float], solver: str, time_limit_s: float, gap: float,
    started_s: float | None = None,
) -> dict[str, float]:
    """The cheapest of ``start`` and the fleets of the two neighbourhoods, in turn, each solved
    within its share of ``time_limit_s`` (:data:`ELASTIC_SHARE`, :data:`SHRINK_SHARE`) and at
    most half of what is left of it (counted from ``started_s``, a ``time.perf_counter()``
    reading; default now); a neighbourhood left less than :data:`MIN_S` is skipped, so a short
    time limit is not overrun."""
    started_s = time.perf_counter() if started_s is None else started_s
    for share, neighbourhood in ((ELASTIC_SHARE, replan_elastic), (SHRINK_SHARE, shrink_reserved)):
        left_s = time_limit_s - (time.perf_counter() - started_s)
        budget_s = min(time_limit_s * share, left_s / 2)
        if budget_s >= MIN_S:
            start = neighbourhood(program, start, solver, budget_s, gap)
    return start


def replan_elastic(
    program: Program, start: dict[str, float], solver: str, time_limit_s: float, gap: float,
) -> dict[str, float]:
    """Neighbourhood (1): the reserved fleet fixed at ``start``, elastic capacity re-planned."""
    bounds: dict[str, tuple[float | None, float]] = {
        var.name: (float(round(start[var.name])), float(round(start[var.name])))
        for var in reserved_variables(program)}
    return _best_within(program, start, bounds, solver, time_limit_s, gap)


def shrink_reserved(
    program: Program, start: dict[str, float], solver: str, time_limit_s: float, gap: float,
) -> dict[str, float]:
    """Neighbourhood (2): the reserved fleet at most ``start``'s, elastic capacity free."""
    bounds: dict[str, tuple[float | None, float]] = {
        var.name: (var.lowBound, float(round(start[var.name])))
        for var in reserved_variables(program)}
    return _best_within(program, start, bounds, solver, time_limit_s, gap)


def _best_within(
    program: Program, start: dict[str, float], bounds: dict[str, tuple[float | None, float]],
    solver: str, time_limit_s: float, gap: float,
) -> dict[str, float]:
    """Solve ``program`` with some variables' bounds replaced (restored after); the fleet found,
    rebuilt from its replica counts, if it is cheaper than ``start`` and breaks no row of
    ``program`` (:func:`start_from_replicas` checks every row), else ``start``."""
    changed = [var for var in program.prob.variables() if var.name in bounds]
    saved = [(var, var.lowBound, var.upBound) for var in changed]
    for var in changed:
        var.lowBound, var.upBound = bounds[var.name]
    try:
        outcome = solve(program.prob, solver, time_limit_s, gap, start=start)
        found = None
        if outcome.has_solution:
            found = start_from_replicas(program, {
                k: n for k, x in program.v.replicas.items() if (n := integer_value(x)) > 0})
    finally:
        for var, low, up in saved:
            var.lowBound, var.upBound = low, up
    if found is None or objective_of(program, found) >= objective_of(program, start) * (1 - 1e-9):
        return start
    return found
