r"""Solve the fleet program one workload at a time when workloads have their own node pools.

With dedicated node pools (``policy.share_nodes`` false) every row of the program
but stock (C5) and the budget (C7) belongs to one workload, so the program is

.. math:: \min \sum_w c_w(x_w) \quad\text{s.t.}\quad x_w \in X_w \;\forall w,\quad
          \sum_w n\,y_{w,zgks} \le \sigma_{zgk},\quad \sum_w c_w(x_w) \le B,

where :math:`X_w` holds C1–C4, C6 and the stock rows of ``w`` alone. Dropping the coupling rows
leaves one small program per workload (its *sub-program*, which keeps stock per workload).

**The bound.** Any joint fleet restricted to ``w`` lies in :math:`X_w` (stock of ``w`` alone is
at most the sum), so its cost is at least the sub-program's optimum :math:`c_w^*`, which is at
least the bound :math:`L_w` the solver proves. Hence :math:`\sum_w L_w \le` the joint optimum.

**The fleet.** The sub-programs' fleets put together satisfy every row but the coupling ones; if
they also respect stock and the budget they are a joint fleet of cost :math:`\sum_w U_w`, within
:math:`(\sum U_w - \sum L_w) / \sum U_w \le \max_w` gap of optimal — proven. Otherwise the fleet
is repaired (workloads in name order keep their fleet where it fits the stock the earlier ones
left, else are re-solved on that residual stock), handed to the joint program as its first
incumbent, and the joint program is solved in the time left; its bound is reported as the larger
of its own and :math:`\sum_w L_w`.

Sub-programs run one after another (2 cores: HiGHS uses both), in name order: deterministic.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping

from models.plan import SolverReport, SolveStatus
from solver.capacity.node_fit import nodes_needed
from solver.program.build import build_program
from solver.program.data import ProgramData
from solver.program.keys import ReplicaKey, StockKey
from solver.program.values import load_values, objective_of, start_from_replicas
from solver.program.variables import Program
from solver.solve.aggregate import AGGREGATE_ABOVE_SLICES, aggregated_start
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.greedy import greedy_start, keep_better
from solver.solve.neighbourhood import improve_start

#: Each solve gets at least this long, even when the time limit is spent [s].
MIN_SOLVE_S = 0.25
#: Share of the time limit the first pass over the sub-programs gets, split evenly [1].
FIRST_PASS_SHARE = 0.5
#: Share of the time limit kept for solving workloads coupled by stock together [1].
COUPLING_SHARE = 0.15
#: Relative slack when comparing a computed gap with the requested one [1].
GAP_TOLERANCE = 1e-9

#: (zone, gpu, purchase, slice or None for reserved).


@dataclasses.dataclass(frozen=True)
class SubResult:
    """A solved sub-program (one workload, or a few solved together): its fleet and outcome."""

    workloads: tuple[str, ...]
    replicas: dict[ReplicaKey, int]
    outcome: SolveOutcome


def subset_data(data: ProgramData, names: Iterable[str],
                taken: Mapping[StockKey, int] | None = None) -> ProgramData:
    """The program data of some workloads: their candidates and demand, no budget.

    ``taken`` is stock already bought by the other workloads (per offer and slice).
    """
    keep = set(names)
    return dataclasses.replace(
        data,
        workloads=tuple(w for w in data.workloads if w.name in keep),
        candidates=tuple(c for c in data.candidates if c.workload in keep),
        demand_rps={k: d for k, d in data.demand_rps.items() if k[0] in keep},
        volume_requests={k: r for k, r in data.volume_requests.items() if k in keep},
        hours_in_window={k: h for k, h in data.hours_in_window.items() if k[0] in keep},
        monthly_budget=None,
        dropped=tuple(c for c in data.dropped if c.workload in keep),
        stock_taken=dict(taken or {}),
    )


def workload_data(data: ProgramData, workload: str) -> ProgramData:
    """The sub-program data of one workload (its own stock rows, no budget)."""
    return subset_data(data, (workload,))


def solve_subset(
    data: ProgramData, names: Iterable[str], solver: str, time_limit_s: float, gap: float,
    taken: Mapping[StockKey, int] | None = None, start: Mapping[ReplicaKey, int] | None = None,
) -> SubResult:
    """Build and solve the program of some workloads; their fleet as replica counts.

    ``start`` (a fleet of these workloads) is the first incumbent, else (many slices) the fleet
    of time-aggregated programs (:mod:`solver.solve.aggregate`) improved in the two neighbourhoods
    of
    :mod:`solver.solve.neighbourhood`, else the greedy fleet.
    """
    started = time.perf_counter()
    sub = subset_data(data, names, taken)
    program = build_program(sub)
    first = start_from_replicas(program, dict(start)) if start else None
    if first is None and len(sub.slices) > AGGREGATE_ABOVE_SLICES:
        first = aggregated_start(program, solver, time_limit_s, gap)
        if first is not None:
            first = improve_start(program, first, solver, time_limit_s, gap, started)
    first = first or greedy_start(program)
    left_s = max(time_limit_s - (time.perf_counter() - started), MIN_SOLVE_S)
    outcome = keep_better(program, solve(program.prob, solver, left_s, gap, start=first), first,
                          started, gap)
    replicas: dict[ReplicaKey, int] = {}
    if outcome.has_solution:
        for key, x in program.v.replicas.items():
            n = integer_value(x)
            if n:
                replicas[key] = n
    return SubResult(tuple(w.name for w in sub.workloads), replicas, outcome)


def solve_workload(
    data: ProgramData, workload: str, solver: str, time_limit_s: float, gap: float,
    start: Mapping[ReplicaKey, int] | None = None,
) -> SubResult:
    """Build and solve one workload's sub-program."""
    return solve_subset(data, (workload,), solver, time_limit_s, gap, start=start)


def _over_stock(data: ProgramData, subs: Iterable[SubResult]) -> set[StockKey]:
    used: dict[StockKey, int] = {}
    for sub in subs:
        _add(used, stock_used(data, sub.replicas))
    stock = {(o.zone, o.gpu, o.purchase): o.stock_gpus for o in data.offers}
    return {k for k, n in used.items() if n > stock[k.pool]}


def solve_workloads(
    data: ProgramData, solver: str, time_limit_s: float, gap: float, deadline: float
) -> list[SubResult] | SubResult:
    """Every workload's sub-program, in two passes; the first without a fleet if one fails.

    Pass 1 gives each sub-program an equal share of half the time; pass 2 gives the time left
    (less a share kept for stock coupling, when pass 1's fleets meet over some stock) to those
    not yet within the gap, the smallest objective − bound first (time they leave goes to the
    next), each starting from its pass-1 fleet.
    """
    names = [w.name for w in data.workloads]
    first_s = max(FIRST_PASS_SHARE * time_limit_s / max(len(names), 1), MIN_SOLVE_S)
    subs: list[SubResult] = []
    for w in names:
        sub = solve_workload(data, w, solver, first_s, gap)
        if not sub.outcome.has_solution:
            return sub
        subs.append(sub)
    reserve = COUPLING_SHARE * time_limit_s if _over_stock(data, subs) else 0.0
    open_ = sorted((i for i, s in enumerate(subs) if s.outcome.status is SolveStatus.time_limit),
                   key=lambda i: (_slack(subs[i]), names[i]))  # smallest first: they end early
    for n, i in enumerate(open_):
        share = (deadline - reserve - time.perf_counter()) / (len(open_) - n)
        if share < MIN_SOLVE_S or (not reserve and sum_within_gap(subs, gap)):
            break
        again = solve_workload(data, names[i], solver, share, gap, start=subs[i].replicas)
        if again.outcome.has_solution:
            subs[i] = again
    return subs


def stock_used(data: ProgramData, replicas: Mapping[ReplicaKey, int]) -> dict[StockKey, int]:
    """GPUs a fleet buys per offer and slice: whole nodes of each workload's own pools."""
    held: dict[tuple[str, StockKey], dict[int, int]] = {}
    for r, n in replicas.items():
        by_tp = held.setdefault((r.workload, StockKey(r.zone, r.gpu, r.purchase, r.slice)), {})
        by_tp[r.tp] = by_tp.get(r.tp, 0) + n
    per_node = {(o.zone, o.gpu, o.purchase): o.gpus_per_node for o in data.offers}
    out: dict[StockKey, int] = {}
    for (_, k), by_tp in held.items():
        m = per_node[k.pool]
        out[k] = out.get(k, 0) + nodes_needed(by_tp, m) * m
    return out


def _add(total: dict[StockKey, int], more: Mapping[StockKey, int]) -> None:
    for k, n in more.items():
        total[k] = total.get(k, 0) + n


def _cost(sub: SubResult) -> float:
    return sub.outcome.report.objective or 0.0


def sum_within_gap(subs: Iterable[SubResult], gap: float) -> bool:
    """The fleets put together are proven within ``gap`` (their summed bounds, see above)."""
    subs = list(subs)
    if any(s.outcome.report.bound is None for s in subs):
        return False
    return _proven(sum(_cost(s) for s in subs),
                   sum(s.outcome.report.bound or 0.0 for s in subs), gap)


def _proven(cost: float, bound: float | None, gap: float) -> bool:
    """A fleet of this cost is within ``gap`` of ``bound`` (never without a bound)."""
    value = _gap(cost, bound)
    return value is not None and value <= gap + GAP_TOLERANCE


def _slack(sub: SubResult) -> float:
    """What a sub-program's gap may still hide: objective − bound (infinite without a bound)."""
    bound = sub.outcome.report.bound
    return float("inf") if bound is None else max(_cost(sub) - bound, 0.0)


def repair(
    data: ProgramData, subs: list[SubResult], solver: str, deadline: float, gap: float,
    bound: float | None = None,
) -> dict[ReplicaKey, int] | None:
    """A fleet within stock, ``None`` if this fails (or the budget, not stock, couples them).

    The workloads whose fleets meet over an offer's stock are taken dearest first (name order
    among equals): each keeps its fleet where it fits the stock that the others (all of them,
    less the coupled ones not yet taken) leave, else is re-solved alone on that stock. Unless
    that fleet is already within ``gap`` of ``bound`` (the summed sub-program bounds), the
    coupled workloads are then solved together on what the others leave, from that fleet, in
    the time left, and the cheaper of the two is kept.
    """
    over = _over_stock(data, subs)
    coupled = sorted((s for s in subs if over & set(stock_used(data, s.replicas))),
                     key=lambda s: (-_cost(s), s.workloads))
    if not coupled:
        return None
    taken: dict[StockKey, int] = {}
    fleet: dict[ReplicaKey, int] = {}
    for sub in subs:
        if sub not in coupled:
            _add(taken, stock_used(data, sub.replicas))
            fleet.update(sub.replicas)
    others = dict(taken)
    stock = {(o.zone, o.gpu, o.purchase): o.stock_gpus for o in data.offers}
    mine: dict[ReplicaKey, int] = {}
    mine_cost = 0.0  # dedicated pools: a fleet's cost is the sum of its workloads' costs
    for sub in coupled:
        use = stock_used(data, sub.replicas)
        kept = sub
        if any(taken.get(k, 0) + n > stock[k.pool] for k, n in use.items()):
            kept = solve_subset(data, sub.workloads, solver,
                                max(deadline - time.perf_counter(), MIN_SOLVE_S), gap, taken)
            if not kept.outcome.has_solution:
                return None
            use = stock_used(data, kept.replicas)
        _add(taken, use)
        mine.update(kept.replicas)
        mine_cost += _cost(kept)
    left = deadline - time.perf_counter()
    proven = _proven(sum(_cost(s) for s in subs if s not in coupled) + mine_cost, bound, gap)
    if left >= MIN_SOLVE_S and len(coupled) > 1 and not proven:
        names = [w for s in coupled for w in s.workloads]
        together = solve_subset(data, names, solver, left, gap, others, start=mine)
        if together.outcome.has_solution and _cost(together) < mine_cost:
            mine = together.replicas
    fleet.update(mine)
    return fleet


def _status(gap_value: float | None, gap: float, statuses: list[SolveStatus]) -> SolveStatus:
    if gap_value is not None:
        if gap_value <= gap + GAP_TOLERANCE:
            return SolveStatus.optimal
    elif all(s is SolveStatus.optimal for s in statuses):
        return SolveStatus.optimal  # CBC: each sub-program within its gap, bound not read
    if any(s is SolveStatus.time_limit for s in statuses):
        return SolveStatus.time_limit
    return SolveStatus.feasible


def _gap(objective: float, bound: float | None) -> float | None:
    if bound is None:
        return None
    return 0.0 if objective <= 0 else max(objective - bound, 0.0) / objective


def solve_decomposed(
    data: ProgramData, solver: str = "highs", time_limit_s: float = 60.0, gap: float = 0.01
) -> tuple[Program, SolveOutcome]:
    """Solve the dedicated-pool program by workload (see the module docstring).

    Returns the joint program (its variables hold the fleet when the outcome has a solution) and
    the outcome: status, total wall time of every solve, gap and bound of the whole program.
    """
    if data.share_nodes:
        raise ValueError("decomposition needs dedicated node pools (policy.share_nodes false)")
    started = time.perf_counter()
    deadline = started + time_limit_s
    subs = solve_workloads(data, solver, time_limit_s, gap, deadline)
    if isinstance(subs, SubResult):
        # infeasible alone means infeasible together; a sub-program out of time without a
        # fleet leaves nothing to combine: the joint program gets what time is left
        joint = build_program(data)
        if subs.outcome.status is SolveStatus.infeasible:
            return joint, _outcome(SolveStatus.infeasible, solver, started, None, None, False)
        return _solve_joint(joint, solver, deadline, gap, greedy_start(joint), None, started)
    bounds = [s.outcome.report.bound for s in subs]
    bound = None if any(b is None for b in bounds) else float(sum(b or 0.0 for b in bounds))
    joint = build_program(data)
    fleet = {k: n for s in subs for k, n in s.replicas.items()}
    values = start_from_replicas(joint, fleet)
    if values is not None:  # stock and budget hold: the combined fleet is a joint fleet
        load_values(joint, values)
        objective = objective_of(joint, values)
        gap_value = _gap(objective, bound)
        status = _status(gap_value, gap, [s.outcome.status for s in subs])
        return joint, _outcome(status, solver, started, bound, objective, True)
    repaired = repair(data, subs, solver, deadline, gap, bound)
    start = start_from_replicas(joint, repaired) if repaired is not None else None
    if start is not None:
        objective = objective_of(joint, start)
        gap_value = _gap(objective, bound)
        if (gap_value is not None and gap_value <= gap + GAP_TOLERANCE) or (
                deadline - time.perf_counter() < MIN_SOLVE_S):
            load_values(joint, start)
            status = _status(gap_value, gap, [SolveStatus.time_limit])
            return joint, _outcome(status, solver, started, bound, objective, True)
    return _solve_joint(joint, solver, deadline, gap, start or greedy_start(joint), bound,
                        started)


def _solve_joint(
    joint: Program, solver: str, deadline: float, gap: float, start: dict[str, float] | None,
    bound: float | None, started: float,
) -> tuple[Program, SolveOutcome]:
    """The joint program from a start, its bound raised to the decomposition's."""
    outcome = solve(joint.prob, solver, max(deadline - time.perf_counter(), MIN_SOLVE_S), gap,
                    start=start)
    if not outcome.has_solution:
        return joint, _outcome(outcome.status, solver, started, outcome.report.bound, None, False)
    objective = outcome.report.objective
    best = outcome.report.bound
    if bound is not None:
        best = bound if best is None else max(best, bound)
    if objective is None:
        return joint, _outcome(outcome.status, solver, started, best, None, True)
    gap_value = _gap(objective, best)
    status = _status(gap_value, gap, [outcome.status]) if best is not None else outcome.status
    return joint, _outcome(status, solver, started, best, objective, True)


def _outcome(status: SolveStatus, solver: str, started: float, bound: float | None,
             objective: float | None, has_solution: bool) -> SolveOutcome:
    seconds = time.perf_counter() - started
    gap_value = None if objective is None else _gap(objective, bound)
    report = SolverReport(name=solver, seconds=seconds, gap=gap_value, bound=bound,
                          objective=objective)
    return SolveOutcome(status, report, has_solution)
