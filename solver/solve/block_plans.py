"""The blocks of the program over periods, each planned on its own: a first fleet of the joint
program (solver/solve/horizon.py), and a bound where a block's own solve proves none.

A block with shared nodes is planned first with dedicated pools (the per-workload
decomposition: a restriction of shared nodes, so its fleet holds in the shared program, and it
is fast at large demand), then, where its share of the time leaves ``SHARED_AFTER_S`` or more,
with the single-period strategy for shared nodes; the cheaper fleet is kept. Its bound is the
shared strategy's where that ran, else its LP relaxation's (:func:`lp_bound`): a dedicated-pool
bound does not bound shared nodes.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import pulp

from models.common import COMMITTED_KINDS
from models.plan import SolverReport, SolveStatus
from solver.program.build import build_program
from solver.program.data import ProgramData
from solver.program.families import FAMILIES
from solver.program.keys import PoolKey
from solver.program.periods import HorizonData
from solver.program.values import start_from_replicas, violated_rows
from solver.program.variables import Program
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.decompose import solve_decomposed
from solver.solve.strategy import solve_shared

#: Gap each block's own plan is solved to for the start (the joint solve closes the rest) [1].
BLOCK_START_GAP = 0.02
#: Seconds left of a shared block's share, after its dedicated-pool plan, for which the
#: shared-node strategy is also run [s].
SHARED_AFTER_S = 2.0
#: Families of a block in the joint program (the budget is a coupling there: P6).
BLOCK_FAMILIES = tuple(f for f in FAMILIES if f != "budget")


#: The outcome of a block left unplanned for want of time.
NOT_PLANNED = SolveOutcome(SolveStatus.time_limit, SolverReport(name="none", seconds=0.0),
                           False)


@dataclass
class BlockPlans:
    """Every block planned alone: values under the joint program's names, committed nodes run
    per (scenario, period, pool), each block's outcome (its bound ``None`` where it does not
    bound the block's shared program)."""

    values: dict[str, float]
    running: dict[tuple[str, int, PoolKey], int]
    outcomes: list[SolveOutcome]

    @property
    def complete(self) -> bool:
        """Every block has a fleet."""
        return all(o.has_solution for o in self.outcomes)


def _values(program: Program) -> dict[str, float]:
    return {var.name: float(var.varValue or 0.0) for var in program.prob.variables()}


def _cost(program: Program, values: dict[str, float]) -> float:
    return float(sum(c * values.get(v.name, 0.0) for v, c in program.v.cost.items()))


def plan_block(data: ProgramData, solver: str, time_limit_s: float, gap: float
               ) -> tuple[Program, dict[str, float] | None, SolveOutcome]:
    """One block planned alone (module docstring): the block's program as the joint program
    holds it, the values of its fleet (``None``: none found) and the outcome."""
    gap = max(gap, BLOCK_START_GAP)
    if not data.share_nodes:
        program, outcome = solve_decomposed(data, solver, time_limit_s, gap)
        return program, _values(program) if outcome.has_solution else None, outcome
    started = time.perf_counter()
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    dedicated, outcome = solve_decomposed(dataclasses.replace(data, share_nodes=False), solver,
                                          time_limit_s, gap)
    best = None
    if outcome.has_solution:
        best = start_from_replicas(program, {k: n for k, v in dedicated.v.replicas.items()
                                             if (n := integer_value(v)) > 0})
    left_s = time_limit_s - (time.perf_counter() - started)
    bound = None  # the dedicated pools' bound does not bound shared nodes
    if best is None or left_s >= SHARED_AFTER_S:
        shared, outcome = solve_shared(data, solver, max(left_s, 0.5), gap)
        bound = outcome.report.bound
        if outcome.has_solution:
            found = _values(shared)
            if best is None or _cost(program, found) < _cost(program, best):
                best = found
    report = outcome.report.model_copy(update={"bound": bound})
    status = SolveStatus.feasible if best is not None else outcome.status
    return program, best, SolveOutcome(status, report, best is not None)


def plan_blocks(data: HorizonData, programs: list[ProgramData], solver: str,
                budget_s: float, gap: float, within: bool = False) -> BlockPlans:
    """Each block's program planned alone (:func:`plan_block`), in an equal share of what is
    left of ``budget_s``; a block equal to one planned already (the same period under two
    demand scenarios of the same multiplier) takes its plan. ``within``: once ``budget_s`` is
    spent, the blocks left are not planned (the plans are then incomplete)."""
    started = time.perf_counter()
    unique = [i for i, p in enumerate(programs) if all(p != programs[j] for j in range(i))]
    solved: dict[int, tuple[Program, dict[str, float] | None, SolveOutcome]] = {}
    out = BlockPlans({}, {}, [])
    planned: list[tuple[Program, dict[str, float] | None, SolveOutcome]] = []
    for i in range(len(data.blocks)):
        same = next(j for j in unique if programs[j] == programs[i])
        if same not in solved:
            if within and time.perf_counter() - started > budget_s:
                return dataclasses.replace(out, outcomes=[NOT_PLANNED])
            left = len([j for j in unique if j not in solved])
            share = max((budget_s - (time.perf_counter() - started)) / left, 0.5)
            solved[same] = plan_block(programs[i], solver, share, gap)
        planned.append(solved[same])
    for i, block in enumerate(data.blocks):
        program, own, outcome = planned[i]
        values = cheapest_of_period(data, planned, i)
        if own is None and values is not None:  # another block's fleet holds this one
            outcome = SolveOutcome(SolveStatus.feasible, outcome.report, True)
        out.outcomes.append(outcome)
        if values is None:
            continue
        out.values.update({f"b{i}_{name}": v for name, v in values.items()})
        for node, y in program.v.nodes.items():
            if node.purchase in COMMITTED_KINDS:
                k = (block.scenario, block.period, node.pool)
                out.running[k] = out.running.get(k, 0) + round(values.get(y.name, 0.0))
    return out


def holds_in(program: Program, values: dict[str, float]) -> bool:
    """``values`` name only columns of ``program`` and keep its bounds and rows."""
    columns = {v.name: v for v in program.prob.variables()}
    if any(name not in columns for name in values):
        return False
    for name, var in columns.items():
        x = values.get(name, 0.0)
        if (var.lowBound is not None and x < var.lowBound - 1e-6) or (
                var.upBound is not None and x > var.upBound + 1e-6):
            return False
    return not violated_rows(program, values)


def cheapest_of_period(data: HorizonData,
                       planned: list[tuple[Program, dict[str, float] | None, SolveOutcome]],
                       i: int) -> dict[str, float] | None:
    """Block ``i``'s fleet, or a cheaper one another block of the same period found that also
    holds block ``i`` (its program's rows and bounds), the cheapest (the first of equals).

    A block solved alone may stop at its time limit dearer than the fleet of a block of the same
    period with more demand, which holds its demand too: the low demand scenario then ran more
    on demand than base in the same quarter (qa3: 139,351 against 87,963 USD/month), and the
    plan printed "if demand follows `low`, run up to 40 more L40S on-demand"."""
    program, values, _ = planned[i]
    best, cost = values, (None if values is None else _cost(program, values))
    for j, block in enumerate(data.blocks):
        other = planned[j][1]
        if j == i or block.period != data.blocks[i].period or other is None:
            continue
        found = _cost(program, other)
        if (cost is None or found < cost - 1e-6 * max(1.0, abs(cost))) and holds_in(program,
                                                                                    other):
            best, cost = other, found
    return best


def lp_bound(data: ProgramData, solver: str, time_limit_s: float) -> float | None:
    """The optimum of a block's LP relaxation (every variable continuous): a lower bound on
    its integer optimum; ``None`` where it is not solved in time."""
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    for var in program.prob.variables():
        var.cat = pulp.LpContinuous
    outcome = solve(program.prob, solver, time_limit_s, 0.0)
    return outcome.report.objective if outcome.status is SolveStatus.optimal else None
