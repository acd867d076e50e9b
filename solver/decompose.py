r"""Solve the fleet program one workload at a time when workloads have their own node pools.

With dedicated node pools (``policy.share_nodes`` false, the default) every row of the program
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

from models.plan import SolverReport, SolveStatus
from solver.program import Program, ReplicaKey, build_program
from solver.program_data import OfferTerm, ProgramData
from solver.solve import SolveOutcome, integer_value, solve
from solver.warm_start import greedy_start, objective_of, start_from_replicas

#: Each solve gets at least this long, even when the time limit is spent [s].
MIN_SOLVE_S = 1.0
#: Relative slack when comparing a computed gap with the requested one [1].
GAP_TOLERANCE = 1e-9

Stock = dict[tuple[str, str, str, str | None], int]
"""GPUs per (zone, gpu, purchase value, slice or None for reserved)."""


@dataclasses.dataclass(frozen=True)
class SubResult:
    """A solved sub-program: its fleet (replica counts), cost, bound and how it ended."""

    workload: str
    replicas: dict[ReplicaKey, int]
    outcome: SolveOutcome


def workload_data(data: ProgramData, workload: str,
                  stock: dict[tuple[str, str, str], int] | None = None) -> ProgramData:
    """The sub-program data of one workload: its candidates and demand, no budget.

    ``stock`` (GPUs per (zone, gpu, purchase value)) replaces the offers' stock (residual stock
    when repairing a fleet).
    """
    offers = data.offers
    if stock is not None:
        offers = tuple(dataclasses.replace(o, stock_gpus=stock.get(_offer_key(o), o.stock_gpus))
                       for o in offers)
    return dataclasses.replace(
        data,
        workloads=tuple(w for w in data.workloads if w.name == workload),
        candidates=data.candidates_of(workload),
        offers=offers,
        demand_rps={k: d for k, d in data.demand_rps.items() if k[0] == workload},
        volume_requests={k: r for k, r in data.volume_requests.items() if k == workload},
        window_hours={k: h for k, h in data.window_hours.items() if k[0] == workload},
        monthly_budget=None,
        dropped=tuple(c for c in data.dropped if c.workload == workload),
    )


def _offer_key(o: OfferTerm) -> tuple[str, str, str]:
    return (o.zone, o.gpu, o.purchase.value)


def solve_workload(
    data: ProgramData, workload: str, solver: str, time_limit_s: float, gap: float,
    stock: dict[tuple[str, str, str], int] | None = None,
) -> SubResult:
    """Build and solve one workload's sub-program; its fleet as replica counts."""
    program = build_program(workload_data(data, workload, stock))
    outcome = solve(program.prob, solver, time_limit_s, gap, start=greedy_start(program))
    replicas: dict[ReplicaKey, int] = {}
    if outcome.has_solution:
        for key, x in program.v.replicas.items():
            n = integer_value(x)
            if n:
                replicas[key] = n
    return SubResult(workload, replicas, outcome)


def stock_used(data: ProgramData, replicas: dict[ReplicaKey, int]) -> Stock:
    """GPUs a workload's fleet buys per offer and slice: whole nodes of its own pools."""
    gpus: dict[tuple[str, str, str, str | None], int] = {}
    for (_, g, tp, z, kind, s), n in replicas.items():
        key = (z, g, kind.value, s)
        gpus[key] = gpus.get(key, 0) + tp * n
    per_node = {_offer_key(o): o.gpus_per_node for o in data.offers}
    return {k: -(-n // per_node[k[:3]]) * per_node[k[:3]] for k, n in gpus.items()}


def _residual(data: ProgramData, used: Stock) -> dict[tuple[str, str, str], int]:
    """Stock left per offer: the least left in any slice (reserved GPUs count in every slice)."""
    left = {_offer_key(o): o.stock_gpus for o in data.offers}
    slices = {s.name for s in data.slices}
    for key in left:
        taken = used.get((*key, None), 0)
        peak = max((used.get((*key, s), 0) for s in slices), default=0)
        left[key] -= taken + peak
    return left


def _fits(data: ProgramData, used: Stock, more: Stock) -> bool:
    limit = {_offer_key(o): o.stock_gpus for o in data.offers}
    return all(used.get(k, 0) + n <= limit[k[:3]] for k, n in more.items())


def repair(
    data: ProgramData, subs: list[SubResult], solver: str, deadline: float, gap: float
) -> dict[ReplicaKey, int] | None:
    """A fleet within stock: each workload keeps its fleet if it fits what is left, else is
    re-solved on the residual stock. ``None`` if some workload then has no fleet."""
    used: Stock = {}
    fleet: dict[ReplicaKey, int] = {}
    for sub in subs:
        mine = stock_used(data, sub.replicas)
        replicas = sub.replicas
        if not _fits(data, used, mine):
            left = _residual(data, used)
            again = solve_workload(data, sub.workload, solver,
                                   max(deadline - time.perf_counter(), MIN_SOLVE_S), gap, left)
            if not again.outcome.has_solution:
                return None
            replicas, mine = again.replicas, stock_used(data, again.replicas)
        for k, n in mine.items():
            used[k] = used.get(k, 0) + n
        fleet.update(replicas)
    return fleet


def load_values(program: Program, values: dict[str, float]) -> None:
    """Set every variable of ``program`` to its value in ``values`` (a solved program)."""
    for var in program.prob.variables():
        var.varValue = values.get(var.name, 0.0)


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
    subs: list[SubResult] = []
    for w in data.workloads:
        sub = solve_workload(data, w.name, solver,
                             max(deadline - time.perf_counter(), MIN_SOLVE_S), gap)
        if not sub.outcome.has_solution:
            # infeasible alone means infeasible together; a sub-program out of time without a
            # fleet leaves nothing to combine: the joint program gets what time is left
            joint = build_program(data)
            if sub.outcome.status is SolveStatus.infeasible:
                return joint, _outcome(SolveStatus.infeasible, solver, started, None, None, False)
            return _solve_joint(joint, solver, deadline, gap, greedy_start(joint), None, started)
        subs.append(sub)
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
    repaired = repair(data, subs, solver, deadline, gap)
    start = start_from_replicas(joint, repaired) if repaired is not None else None
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
