"""Why no fleet fits: solve the elastic program and say which requirement falls short, by how much.

The elastic program (:func:`solver.program.build.build_program` with ``elastic=True``) gives every
requirement row a non-negative slack; minimising the weighted slack finds the smallest relaxation
that admits a fleet. Weights prefer, in order, buying beyond stock (per GPU), exceeding the
budget (per 0.1 % of it), and only then leaving demand or survival unmet (per share of the
demand), so the answer reads "`chat` needs 22 H100 GPUs in use1-az1 …; stock allows 8: 14 more
than stock" whenever more hardware would do. A stock shortfall is attributed to survival when the
same program without the survival families needs less beyond stock.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict

import pulp

from models.common import Survivability
from models.plan import Shortfall, SolveStatus
from models.scenario import Scenario
from models.units import amount_text
from solver.program.build import build_program
from solver.program.data import ProgramData
from solver.program.families import FAMILIES
from solver.program.keys import PoolKey, RowKey
from solver.program.variables import Program, Slack
from solver.solve.backends import real_value, solve

#: A slack below this is zero.
SLACK_TOLERANCE = 1e-6
#: Objective weights per unit of slack (see the module docstring).
STOCK_WEIGHT_PER_GPU = 1.0
BUDGET_WEIGHT_PER_SHARE = 1000.0
REQUIREMENT_WEIGHT_PER_SHARE = 1e5
SURVIVAL_FAMILIES = ("n_plus_1", "zone_loss")
#: The least an elastic solve is given when the diagnosis's time is spent, as its callers give
#: the diagnosis itself at least this much of a spent clock [s].
ELASTIC_MIN_S = 1.0


def seconds_left(ends: float) -> float:
    """Seconds to ``ends`` (a ``time.perf_counter()`` reading), at least
    :data:`ELASTIC_MIN_S` [s]: the diagnosis's elastic solves share one time limit."""
    return max(ends - time.perf_counter(), ELASTIC_MIN_S)


def _weight(data: ProgramData, slack: Slack) -> float:
    if slack.family == "stock":
        return STOCK_WEIGHT_PER_GPU
    if slack.family == "budget":
        return BUDGET_WEIGHT_PER_SHARE / (data.monthly_budget or 1.0)
    w = slack.row.workload
    assert w is not None  # every requirement but stock and budget is a workload's
    if w in data.volume_requests:
        scale = data.volume_requests[w]
    else:
        scale = max((d for (ww, _), d in data.demand_rps.items() if ww == w), default=1.0)
    return REQUIREMENT_WEIGHT_PER_SHARE / scale


def solve_elastic(
    data: ProgramData, families: tuple[str, ...], solver: str, time_limit_s: float
) -> tuple[Program | None, bool]:
    """Build and solve the elastic program: the program (``None`` if even that has no
    solution) and whether its relaxation is proven smallest (else the time limit stopped it)."""
    program = build_program(data, families=families, elastic=True)
    weighted = pulp.lpSum(_weight(data, s) * s.var for s in program.v.slacks)
    program.prob.setObjective(weighted + 1e-9 * program.v.cost)
    outcome = solve(program.prob, solver, time_limit_s, gap=1e-4)
    proven = outcome.status is SolveStatus.optimal
    return (program if outcome.has_solution else None), proven


def _stock_need(program: Program) -> dict[PoolKey, tuple[float, str | None]]:
    """GPUs needed beyond stock per pool: the worst slice (``None``: reserved) and the amount."""
    out: dict[PoolKey, tuple[float, str | None]] = {}
    for s in program.v.slacks:
        if s.family != "stock":
            continue
        amount = real_value(s.var)
        row = s.row
        assert row.zone is not None and row.gpu is not None and row.purchase is not None
        pool = PoolKey(row.zone, row.gpu, row.purchase)
        if amount > SLACK_TOLERANCE and amount > out.get(pool, (0.0, None))[0]:
            out[pool] = (amount, row.slice)
    return out


def _users(program: Program, pool: PoolKey, sl: str | None) -> dict[str, int]:
    """GPUs each workload runs on a pool in the solution, in slice ``sl`` (``None`` for
    reserved pools), most first, then by name."""
    gpus: dict[str, int] = defaultdict(int)
    for k, x in program.v.replicas.items():
        if k.pool == pool and k.slice in (None, sl) and real_value(x) > 0.5:
            gpus[k.workload] += k.tp * round(real_value(x))
    return dict(sorted(gpus.items(), key=lambda item: (-item[1], item[0])))


def _tightest_zone(program: Program, w: str, lost_zone_of_pool: str) -> str | None:
    """The zone whose loss leaves ``w`` the least capacity (other than the pool's own)."""
    data, v = program.data, program.v
    best: tuple[float, str] | None = None
    for z in data.zones:
        if z == lost_zone_of_pool:
            continue
        left = sum(v.rate[k] * real_value(v.replicas[k]) for k in v.replicas
                   if k.workload == w and k.zone != z and not k.spot)
        if best is None or left < best[0]:
            best = (left, z)
    return None if best is None else best[1]


def diagnose(
    scenario: Scenario, data: ProgramData, solver: str = "highs", time_limit_s: float = 60.0,
    shown_limit_s: float | None = None,
) -> tuple[Shortfall, ...]:
    """What an infeasible scenario cannot meet, and by how much, searched within
    ``time_limit_s`` (what is left of the plan's clock) in all: the first elastic solve
    (every family) may take it, the second (without the survival families, where stock falls
    short) gets what the first left, at least :data:`ELASTIC_MIN_S` — each was given the
    whole of it, and a new user's plan short of stock ran 124 s on a 60-s limit. Splitting it
    in halves instead left the first too little where no second follows: an unmeetable SLO's
    diagnosis then named two workloads short that are not. ``shown_limit_s`` is the limit a
    message names (default ``time_limit_s``): the user's ``--time-limit``."""
    ends = time.perf_counter() + time_limit_s
    families = tuple(FAMILIES)
    program, proven = solve_elastic(data, families, solver, time_limit_s)
    if program is None:
        return (Shortfall(requirement="solver", amount=0.0, unit="",
                          message="even the elastic program found no fleet within the time "
                                  "limit; raise --time-limit"),)
    out: list[Shortfall] = []
    need = _stock_need(program)
    plain: dict[PoolKey, tuple[float, str | None]] = {}
    if need:
        relaxed, _ = solve_elastic(
            data, tuple(f for f in families if f not in SURVIVAL_FAMILIES), solver,
            seconds_left(ends))
        plain = _stock_need(relaxed) if relaxed is not None else {}
    for pool, (amount, sl) in sorted(need.items(), key=lambda i: (i[0].zone, i[0].gpu,
                                                                      i[0].purchase.value)):
        z, g, kind = pool.zone, pool.gpu, pool.purchase.value
        gpus = math.ceil(amount - SLACK_TOLERANCE)
        stock = program.v.offer[pool].stock_gpus
        when = "" if sl is None else f" during {sl}"
        users = _users(program, pool, sl)
        total = sum(users.values())
        for w in users or ["(any workload)"]:
            why = "to carry its demand"
            if plain.get(pool, (0.0, None))[0] < amount - SLACK_TOLERANCE:
                surv = data.workload(w).survivability if w != "(any workload)" else None
                if surv is Survivability.zone_loss:
                    lost = _tightest_zone(program, w, z)
                    why = f"to survive losing {lost}" if lost else "to survive losing a zone"
                elif surv is Survivability.n_plus_1:
                    why = "to survive losing a node"
            # a pool several workloads share is short for all of them: say how much is whose
            share = (f" (it runs {users[w]} of the {total} GPUs the fleet would run there)"
                     if len(users) > 1 else "")
            out.append(Shortfall(
                requirement="stock", workload=w, zone=z, gpu=g, slice=sl,
                amount=float(gpus), unit="GPUs",
                # the total first: "needs 8 more … stock allows 8" read as met by the stock
                message=f"`{w}` needs {stock + gpus:,} {g} GPUs ({kind}) in {z}{when} {why}; "
                        f"stock allows {stock:,}: {gpus:,} more than stock{share}",
            ))
    req: dict[RowKey, float] = defaultdict(float)
    units: dict[RowKey, str] = {}
    for s in program.v.slacks:
        amount = real_value(s.var)
        if s.family == "stock" or amount <= SLACK_TOLERANCE:
            continue
        req[s.row] = max(req[s.row], amount)
        units[s.row] = s.unit
    # the budget's cost is the cheapest fleet only where nothing else was relaxed and the
    # relaxation is proven smallest; else it is the cost of the fleet this relaxation found
    budget_alone = proven and not need and all(r.family == "budget" for r in req)
    for row, amount in sorted(req.items(), key=lambda i: i[0].labels_sort_key()):
        out.append(_requirement_shortfall(data, row, amount, units[row], budget_alone))
    if not proven:
        out.append(Shortfall(
            requirement="solver", amount=0.0, unit="",
            message=f"the search for the smallest relaxation stopped at its time limit "
                    f"({_limit_words(time_limit_s, shown_limit_s)}): the shortfalls above admit "
                    "a fleet but may not be the least, or name every workload that is short; "
                    "raise --time-limit"))
    return tuple(out)


def _limit_words(time_limit_s: float, shown_limit_s: float | None) -> str:
    """``60 s``, or ``41 s left of the 60-s --time-limit`` where the diagnosis had what the
    plan's search left of the user's limit."""
    if shown_limit_s is None or abs(shown_limit_s - time_limit_s) < 0.5:
        return f"{shown_limit_s or time_limit_s:g} s"
    return f"{round(time_limit_s, 1):g} s left of the {shown_limit_s:g}-s --time-limit"


def _requirement_shortfall(
    data: ProgramData, row: RowKey, amount: float, unit: str, budget_alone: bool = True
) -> Shortfall:
    if row.family == "budget":
        budget = data.monthly_budget or 0.0
        # "the cheapest fleet that meets every requirement" only when it is one: a relaxation
        # stopped by the clock (4x the cheapest on a generated scenario at --time-limit 10,
        # benchmarks/README.md "Trust sweep") or one that also leaves other rows short is not
        what = ("the cheapest fleet that meets every requirement costs about"
                if budget_alone else
                "the fleet of the smallest relaxation found (with the other shortfalls listed; "
                "not proven the cheapest) costs about")
        return Shortfall(
            requirement="budget", amount=amount, unit=unit,
            message=f"{what} {budget + amount:,.0f} {data.currency}/month; the budget allows "
                    f"{budget:,.0f} (short by {amount:,.0f})",
        )
    w, sl = row.workload, row.slice
    assert w is not None
    short = amount_text(amount, 4)  # 2.98e+05 requests/day read as 297,600
    has_candidates = bool(data.candidates_of(w))
    if row.family == "demand":
        where = f" in {sl}" if sl else " over its window"
        cause = ("" if has_candidates else
                 " — no configuration of it fits any GPU that a zone sells (check allowed_gpus "
                 "and the capacity table)")
        return Shortfall(requirement="demand", workload=w, slice=sl, amount=amount, unit=unit,
                         message=f"`{w}` is {short} {unit} short of its demand{where}{cause}")
    if row.family == "zone_loss":
        z = row.zone
        return Shortfall(
            requirement="zone_loss", workload=w, zone=z, slice=sl, amount=amount, unit=unit,
            message=f"`{w}` is {short} {unit} short after losing {z}"
                    f"{'' if sl is None else ' in ' + sl}: no other zone sells enough non-spot "
                    "capacity of its configurations",
        )
    z, g = row.zone, row.gpu
    during = "" if sl is None else f" in {sl}"
    if row.spot_node:  # the row "losing a spot node": only non-spot capacity counts
        return Shortfall(
            requirement="n_plus_1", workload=w, slice=sl, amount=amount, unit=unit,
            message=f"`{w}` is {short} {unit} short{during} counting only its non-spot "
                    "capacity (spot never counts after a failure)",
        )
    return Shortfall(
        requirement="n_plus_1", workload=w, zone=z, gpu=g, slice=sl, amount=amount, unit=unit,
        message=f"`{w}` is {short} {unit} short{during} after losing a {g} node in {z}",
    )
