"""A greedy fleet that satisfies every family of the program, handed to HiGHS as a first incumbent.

Each workload on its own picks, per candidate, the cheapest of: one zone (no survivability), or
two zones each carrying the whole demand at the failure utilization (zone loss and N+1 both hold
then, whatever the packing). Within a zone it buys a reserved base and tops up per slice with
on-demand, trying each base size where the cost can turn (0 and the slices' counts). Batch
volumes are spread evenly over their window. The fleets are then added up: nodes are the fewest
whole nodes per pool, and auxiliary variables are set to the values their rows imply. If the sum
breaks stock (or the budget) there is no warm start.
"""

from __future__ import annotations

import dataclasses
import math
import time

from models.common import COMMITTED_KINDS, PurchaseKind, Survivability
from models.plan import SolveStatus
from models.workload import SECONDS_PER_HOUR
from solver.program.data import Candidate, OfferTerm
from solver.program.keys import ReplicaKey
from solver.program.values import load_values, objective_of, start_from_replicas
from solver.program.variables import Program
from solver.solve.backends import SolveOutcome, integer_value

R, D = PurchaseKind.reserved, PurchaseKind.on_demand
EPS = 1e-9
#: GPUs an offer has left per (zone, GPU, kind, slice; ``None`` for committed kinds), in a
#: greedy fleet that keeps to stock (:func:`greedy_start`'s ``within_stock``).
Stock = dict[tuple[str, str, PurchaseKind, str | None], int]
#: A solve's fleet within this relative distance of the start's cost is as good as it [1].
REL_TOL = 1e-6


def _need(program: Program, w: str) -> dict[str, float]:
    """Demand per slice [1/s]; a volume spread evenly over its window hours."""
    data = program.data
    if w in data.volume_requests:
        hours = sum(h for (ww, _), h in data.hours_in_window.items() if ww == w)
        rate = data.volume_requests[w] / (SECONDS_PER_HOUR * hours)
        return {s: rate for s in data.demand_slices(w)}
    return {s: data.demand_rps[(w, s)] for s in data.demand_slices(w)}


def _zone_plan(
    program: Program, c: Candidate, z: str, need: dict[str, float], per_replica: float,
    left: Stock | None = None, kind: PurchaseKind = R,
) -> tuple[float, dict[ReplicaKey, int]] | None:
    """Cheapest committed base (``kind``: reserved, or owned) + on-demand top-up of one
    candidate in one zone (GPU cost only); with ``left``, no more of either than the stock
    left holds."""
    v, data = program.v, program.data
    res: OfferTerm | None = v.offer.get((z, c.gpu, kind))
    od: OfferTerm | None = v.offer.get((z, c.gpu, D))
    counts = {s: math.ceil(n / per_replica - EPS) for s, n in need.items()}
    peak = max(counts.values(), default=0)
    best: tuple[float, dict[ReplicaKey, int]] | None = None
    most = None if left is None else _replicas_left(left, res, c, None)
    # Cost is convex and piecewise linear in the reserved base, with kinks at the slices'
    # counts, so the cheapest base is 0 or one of them (the smallest cheapest one: a flat
    # stretch starts at a kink). Scanning every base instead took minutes at 10^12 req/s.
    # With stock, the most the stock holds is a kink too.
    for base in sorted({0, *counts.values(), *(() if most is None else (most,))}):
        if base and (res is None or c.tp > res.gpus_per_node):
            break
        if most is not None and base > most:
            break
        if base < peak and (od is None or c.tp > od.gpus_per_node):
            continue
        if left is not None and any(n - base > _replicas_left(left, od, c, s)
                                    for s, n in counts.items() if n > base):
            continue
        cost = 0.0
        alloc: dict[ReplicaKey, int] = {}
        if base:
            assert res is not None
            cost += base * c.tp * res.price_per_gpu_hour * data.hours_per_month
            alloc[ReplicaKey(c.workload, c.gpu, c.tp, z, kind, None)] = base
        for s, n in counts.items():
            top = n - base
            if top > 0:
                assert od is not None
                cost += top * c.tp * od.price_per_gpu_hour * data.paid_hours_per_month(s)
                alloc[ReplicaKey(c.workload, c.gpu, c.tp, z, D, s)] = top
        if best is None or cost < best[0]:
            best = (cost, alloc)
    return best


def _replicas_left(left: Stock, o: OfferTerm | None, c: Candidate, s: str | None) -> int:
    """Replicas of ``c`` the whole nodes of an offer's stock left hold (none: 0)."""
    if o is None or c.tp > o.gpus_per_node:
        return 0
    nodes = left[(o.zone, o.gpu, o.purchase, s)] // o.gpus_per_node
    return nodes * (o.gpus_per_node // c.tp)


def _stock(program: Program) -> Stock:
    """GPUs each offer may still be bought (per slice for elastic kinds)."""
    data = program.data
    out: Stock = {}
    for o in program.v.offer.values():
        for s in [None] if o.purchase in COMMITTED_KINDS else [g.name for g in data.slices]:
            out[(o.zone, o.gpu, o.purchase, s)] = data.stock_left(o, s)
    return out


def _take(program: Program, left: Stock, plan: dict[ReplicaKey, int]) -> None:
    """Take a workload's whole nodes out of the stock left."""
    for k, n in plan.items():
        o = program.v.offer[(k.zone, k.gpu, k.purchase)]
        nodes = math.ceil(n / (o.gpus_per_node // k.tp))
        left[(k.zone, k.gpu, k.purchase, k.slice)] -= nodes * o.gpus_per_node


def _workload_plan(program: Program, w: str, left: Stock | None = None
                   ) -> dict[ReplicaKey, int] | None:
    data = program.data
    info = data.workload(w)
    need = _need(program, w)
    phi = data.failure_utilization
    best: tuple[float, dict[ReplicaKey, int]] | None = None
    for c in data.candidates_of(w):
        plans: list[tuple[float, str, dict[ReplicaKey, int]]] = []
        per_replica = c.slo_rps * (info.utilization if info.survivability is Survivability.none
                                   else min(info.utilization, phi))
        for z in data.zones:
            # survivability: each of two zones carries the whole demand after any failure
            if left is None:
                p = _zone_plan(program, c, z, need, per_replica)
            else:  # owned nodes too, the stock kept to
                found = [q for kind in COMMITTED_KINDS if (q := _zone_plan(
                    program, c, z, need, per_replica, left, kind)) is not None]
                p = min(found, key=lambda q: q[0], default=None)
            if p is not None:
                plans.append((p[0], z, p[1]))  # (cost, zone, replicas)
        plans.sort(key=lambda t: (t[0], t[1]))
        k = 1 if info.survivability is Survivability.none else 2
        if len(plans) < k:
            continue
        cost = sum(t[0] for t in plans[:k])
        if best is None or cost < best[0]:
            alloc: dict[ReplicaKey, int] = {}
            for t in plans[:k]:
                alloc.update(t[2])
            best = (cost, alloc)
    return None if best is None else best[1]


def greedy_fleet(program: Program, within_stock: bool = False, over_stock: bool = False
                 ) -> dict[ReplicaKey, int] | None:
    """Replicas of the greedy fleet (:func:`greedy_start`), or ``None`` where a workload finds
    no fleet. With ``within_stock`` and ``over_stock``, a workload the stock left cannot hold
    takes the fleet it would take with no stock at all (a diagnosis's start, whose excess
    over stock is the elastic program's slack)."""
    x: dict[ReplicaKey, int] = {}
    left = _stock(program) if within_stock else None
    for w in program.data.workloads:
        plan = _workload_plan(program, w.name, left)
        if plan is None and over_stock:
            plan = _workload_plan(program, w.name)
        if plan is None:
            return None
        x.update(plan)
        if left is not None:
            _take(program, left, plan)
    return x


def greedy_start(program: Program, within_stock: bool = False) -> dict[str, float] | None:
    """Values for every variable of ``program`` (by name), or ``None`` if the greedy fleet fails.

    ``within_stock``: workload by workload, each takes only what the stock left by those
    before holds, and an owned pool may be the committed base (a plan over periods' fallback,
    whose blocks hold their inventory as pools of little stock at no price)."""
    x = greedy_fleet(program, within_stock)
    return None if x is None else start_from_replicas(program, x)


def _solution_holds(program: Program) -> bool:
    """The solver's fleet, as whole replicas on the fewest nodes, breaks no row of ``program``
    (not checked for a program without replica slots: the horizon program seen whole)."""
    if not program.v.replicas:
        return True
    fleet = {k: n for k, x in program.v.replicas.items() if (n := integer_value(x)) > 0}
    return start_from_replicas(program, fleet) is not None


def unproven_unless_it_holds(program: Program, outcome: SolveOutcome) -> SolveOutcome:
    """``outcome``, no longer ``optimal`` (and without a gap) where the fleet in the variables
    breaks a row of ``program``."""
    if not outcome.has_solution or _solution_holds(program):
        return outcome
    status = SolveStatus.feasible if outcome.status is SolveStatus.optimal else outcome.status
    return dataclasses.replace(outcome, status=status, report=outcome.report.model_copy(
        update={"gap": None}))


def keep_better(
    program: Program, outcome: SolveOutcome, start: dict[str, float] | None, started: float,
    target_gap: float,
) -> SolveOutcome:
    """The solve's outcome, or the start's fleet (with the solve's bound) where it is cheaper
    (CBC takes no start and may end dearer) or the solve's fleet breaks a row of the program;
    ``seconds`` counted from ``started``, a ``time.perf_counter()`` reading. The values of the
    fleet returned are in the variables.

    ``start`` must have been checked against every row (:func:`start_from_replicas` does). The
    solve's fleet is checked the same way, rebuilt from its whole replica counts: one that
    breaks a row is never kept over a start, nor reported ``optimal``. A bound above the cost
    of the start kept (solver tolerances) is lowered to it.
    """
    seconds = time.perf_counter() - started
    timed = dataclasses.replace(outcome, report=outcome.report.model_copy(
        update={"seconds": seconds}))
    if outcome.status is SolveStatus.infeasible:
        return timed
    found = outcome.report.objective if outcome.has_solution else None
    holds = found is not None and _solution_holds(program)
    if found is not None and not holds:
        found = None
        if start is None:  # nothing better to keep: the fleet stays, never as proven
            return unproven_unless_it_holds(program, timed)
    if start is None:
        return timed
    cost = objective_of(program, start)
    if found is not None and found <= cost * (1 + REL_TOL):
        return timed
    load_values(program, start)
    bound = outcome.report.bound
    bound = None if bound is None else min(bound, cost)
    gap = None if bound is None else (cost - bound) / cost if cost > 0 else 0.0
    report = outcome.report.model_copy(update={
        "seconds": seconds, "objective": cost, "gap": gap, "bound": bound})
    if (gap is not None and gap <= target_gap + REL_TOL) or (
            holds and outcome.status is SolveStatus.optimal):
        # a solver that proved its own fleet within the gap proved any cheaper one within it
        status = SolveStatus.optimal
    elif outcome.status is SolveStatus.time_limit:
        status = SolveStatus.time_limit
    else:
        status = SolveStatus.feasible
    return SolveOutcome(status, report, True)
