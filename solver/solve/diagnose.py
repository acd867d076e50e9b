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

import dataclasses
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
from solver.program.values import load_values, start_from_replicas
from solver.program.variables import Program, Slack
from solver.solve.backends import real_value, solve
from solver.solve.greedy import greedy_fleet

#: A slack below this is zero.
SLACK_TOLERANCE = 1e-6
#: Objective weights per unit of slack (see the module docstring).
STOCK_WEIGHT_PER_GPU = 1.0
BUDGET_WEIGHT_PER_SHARE = 1000.0
REQUIREMENT_WEIGHT_PER_SHARE = 1e5
SURVIVAL_FAMILIES = ("n_plus_1", "zone_loss")
#: A start relaxes less than a solve's answer when its weighted slack is this share below it [1].
START_BETTER = 1e-6
#: The least an elastic solve is given when the diagnosis's time is spent, as its callers give
#: the diagnosis itself at least this much of a spent clock [s].
ELASTIC_MIN_S = 1.0
#: The progress lines' stage while the diagnosis runs (its elastic solves and the relaxation
#: search): before it, the lines kept the last stage of the solve that found no fleet
#: (``[capacity]``), which is no capacity work.
DIAGNOSIS_STAGE = "diagnosis"


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


def unservable(data: ProgramData) -> tuple[str, ...]:
    """Workloads with demand that no configuration serves (no candidate: an SLO no allowed
    configuration meets, a model no GPU a zone sells holds): each falls short by its whole
    demand whatever the fleet, known from the capacity table before anything is solved."""
    return tuple(w.name for w in data.workloads
                 if data.demand_slices(w.name) and not data.candidates_of(w.name))


def without_workloads(data: ProgramData, names: tuple[str, ...]) -> ProgramData:
    """``data`` with the workloads ``names`` and their demand left out (the slices as they
    were grouped): the program of the rest."""
    gone = set(names)
    return dataclasses.replace(
        data, workloads=tuple(w for w in data.workloads if w.name not in gone),
        candidates=tuple(c for c in data.candidates if c.workload not in gone),
        dropped=tuple(c for c in data.dropped if c.workload not in gone),
        demand_rps={k: d for k, d in data.demand_rps.items() if k[0] not in gone},
        volume_requests={w: n for w, n in data.volume_requests.items() if w not in gone},
        hours_in_window={k: h for k, h in data.hours_in_window.items() if k[0] not in gone})


def unservable_shortfall(data: ProgramData, w: str) -> Shortfall:
    """The one shortfall of a workload no configuration serves: its whole demand (the daily
    volume, or the peak rate), instead of a line per slice and failure that all follow from it."""
    if w in data.volume_requests:
        amount, unit, what = data.volume_requests[w], "requests/day", "its daily volume"
    else:
        amount = max((d for (ww, _), d in data.demand_rps.items() if ww == w), default=0.0)
        unit, what = "req/s", "its peak"
    return Shortfall(
        requirement="demand", workload=w, amount=amount, unit=unit,
        message=f"`{w}` cannot be served at all: no configuration of it fits any GPU that a "
                "zone sells (check allowed_gpus and the capacity table), so the whole of "
                f"{what}, {amount_text(amount, 4)} {unit}, is short")


def elastic_start(program: Program) -> dict[str, float] | None:
    """A fleet for the elastic ``program`` that needs no search: the greedy fleet
    (:func:`~solver.solve.greedy.greedy_fleet`) with every row it breaks taken up by that
    row's slack — of the fleet that ignores stock and the one that keeps to the stock left
    where a workload fits in it, the one of smaller weighted slack; ``None`` where neither
    exists (a workload with no fleet at any stock)."""
    slack_of = {s.var.name: s for s in program.v.slacks}
    best: tuple[float, dict[str, float]] | None = None
    for within in (False, True):
        fleet = greedy_fleet(program, within_stock=within, over_stock=True)
        values = None if fleet is None else start_from_replicas(program, fleet, checked=False)
        if values is None:
            continue
        for row in program.prob.constraints():
            coefs = dict(row.items())
            slack = next((var for var in coefs if var.name in slack_of), None)
            if slack is None:
                continue
            lhs = sum(c * values.get(var.name, 0.0) for var, c in coefs.items()
                      if var is not slack) + row.constant
            broken = -lhs if row.sense == pulp.LpConstraintGE else lhs
            values[slack.name] = max(broken, 0.0) / abs(coefs[slack])
        weighted = weighted_slack(program, values)
        if best is None or weighted < best[0]:
            best = (weighted, values)
    return None if best is None else best[1]


def weighted_slack(program: Program, values: dict[str, float] | None = None) -> float:
    """The elastic objective without its cost term: of ``values`` (by name), else of the
    solution in the variables."""
    return sum(_weight(program.data, s) * (real_value(s.var) if values is None
                                           else values.get(s.var.name, 0.0))
               for s in program.v.slacks)


def solve_elastic(
    data: ProgramData, families: tuple[str, ...], solver: str, time_limit_s: float,
    keep_build: bool = False,
) -> tuple[Program | None, bool, float]:
    """Build and solve the elastic program within ``time_limit_s``, its build included: the
    program (``None`` if even that has no solution), whether its relaxation is proven smallest
    (else the time limit stopped it) and the build's seconds. ``keep_build``: the solve leaves
    as much again as the build took (at most half of what is left), for a second elastic
    program of the same size (:func:`diagnose`): counted from after the build, each solve had
    its whole limit and a new user's 60-s plan of a scenario no fleet could carry ran 76 s
    at load 16. Where :func:`elastic_start` relaxes less than the solve's answer (or the
    solve has none), the start is the answer, in the variables: at a short limit HiGHS may
    leave a workload short of its demand where the greedy fleet needs only GPUs beyond stock;
    given the start as its incumbent, it ended on larger relaxations than from none
    (benchmarks/results/trust.md, "Diagnosis a planner can act on")."""
    began = time.perf_counter()
    program = build_program(data, families=families, elastic=True)
    weighted = pulp.lpSum(_weight(data, s) * s.var for s in program.v.slacks)
    program.prob.setObjective(weighted + 1e-9 * program.v.cost)
    build_s = time.perf_counter() - began
    start = elastic_start(program)  # first, on the same clock
    left_s = time_limit_s - (time.perf_counter() - began)
    if keep_build:
        left_s -= min(build_s, left_s / 2)
    outcome = solve(program.prob, solver, max(left_s, ELASTIC_MIN_S), gap=1e-4)
    if outcome.status is SolveStatus.optimal:
        return program, True, build_s
    if start is not None and (not outcome.has_solution or weighted_slack(program, start)
                              < weighted_slack(program) * (1 - START_BETTER)):
        load_values(program, start)
        return program, False, build_s
    return (program if outcome.has_solution else None), False, build_s


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


def _beyond(need: dict[PoolKey, tuple[float, str | None]]) -> int:
    """GPUs beyond stock in all, each pool at its worst slice [GPUs]."""
    return sum(math.ceil(amount - SLACK_TOLERANCE) for amount, _ in need.values())


def _why(data: ProgramData, w: str, zone: str, surviving: bool, demand_fits: bool) -> str:
    """Why ``w`` needs a pool of ``zone`` beyond its stock, decided per workload from the two
    relaxations' totals — never from which pool a relaxation happened to put the excess in
    (pools interchangeable for it: the same input read "to carry its demand" in one run and
    "to survive losing dc-b" in the next). The zone lost is named only where it is the one
    other zone."""
    surv = data.workload(w).survivability if w != "(any workload)" else None
    if surv is None or surv is Survivability.none or not surviving:
        return "to carry its demand"
    if surv is Survivability.zone_loss:
        others = [z for z in data.zones if z != zone]
        loss = f"losing {others[0]}" if len(others) == 1 else "losing a zone"
    else:
        loss = "losing a node"
    return f"to survive {loss}" if demand_fits else f"to carry its demand and survive {loss}"


def stock_summary(program: Program, need: dict[PoolKey, tuple[float, str | None]],
                  proven: bool) -> list[Shortfall]:
    """The stock shortfall in all, then per GPU type: what the offers hold, what the fleet of
    the relaxation runs, and where it goes beyond — before the line per pool and workload (a
    new user's 24 such lines gave no total); the total only where several GPU types fall
    short. ``proven``: the relaxation is the least, so the total beyond stock is the least any
    fleet meeting every other requirement needs."""
    v = program.v
    running: dict[tuple[PoolKey, str | None], int] = defaultdict(int)
    for key, y in v.nodes.items():
        running[(key.pool, key.slice)] += round(real_value(y)) * v.offer[key.pool].gpus_per_node
    peak: dict[PoolKey, int] = defaultdict(int)
    for (pool, _), count in running.items():
        peak[pool] = max(peak[pool], count)
    out: list[Shortfall] = []
    total = _beyond(need)
    gpus = sorted({pool.gpu for pool in need})
    least = "at least " if proven else ""
    by_gpu = "; ".join(f"{g} {_beyond({p: n for p, n in need.items() if p.gpu == g}):,}"
                       for g in gpus)
    if len(gpus) > 1:  # of one GPU type its own line says it all
        out.append(Shortfall(
            requirement="stock", amount=float(total), unit="GPUs",
            message=f"in all, the fleet needs {least}{total:,} GPUs more than the offers' "
                    f"stock ({by_gpu})"
                    f"{'' if proven else ' (the relaxation found: not proven least)'}"))
    for g in gpus:
        pools = [PoolKey(*p) for p in v.offer if p[1] == g]
        held = sum(v.offer[p].stock_gpus for p in pools)
        runs = sum(peak[p] for p in pools)
        short = {p: n for p, n in need.items() if p.gpu == g}
        where = ", ".join(f"{p.zone} {p.purchase.value} +{math.ceil(a - SLACK_TOLERANCE):,}"
                          for p, (a, _) in sorted(short.items()))
        out.append(Shortfall(
            requirement="stock", gpu=g, amount=float(_beyond(short)), unit="GPUs",
            message=f"{g}: the offers hold {held:,} GPUs in all ({_zones(pools)}; on-demand "
                    f"and spot at a time); the fleet found runs {runs:,} at its peak, "
                    f"{_beyond(short):,} beyond stock ({where})"))
    return out


def _zones(pools: list[PoolKey]) -> str:
    """``3 zones`` or ``zone a``: where the offers of a GPU type are."""
    zones = sorted({p.zone for p in pools})
    return f"zone {zones[0]}" if len(zones) == 1 else f"{len(zones)} zones"


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
    diagnosis then named two workloads short that are not. A workload no configuration serves
    (:func:`unservable`) is one whole-demand line, and the elastic program is the rest's.
    ``shown_limit_s`` is the limit a message names (default ``time_limit_s``): the user's
    ``--time-limit``."""
    ends = time.perf_counter() + time_limit_s
    culprits = unservable(data)
    out: list[Shortfall] = [unservable_shortfall(data, w) for w in culprits]
    if culprits:  # their shortfall is known; the elastic program weighs only the rest's
        data = without_workloads(data, culprits)
        if not data.workloads:
            return tuple(out)
    families = tuple(FAMILIES)
    program, proven, build_s = solve_elastic(data, families, solver, time_limit_s,
                                             keep_build=True)
    if program is None:
        return (*out, Shortfall(requirement="solver", amount=0.0, unit="",
                                message="even the elastic program found no fleet within the "
                                        "time limit; raise --time-limit"))
    need = _stock_need(program)
    plain: dict[PoolKey, tuple[float, str | None]] = {}
    if need:
        # the second only where the time left holds its build (the first's) and a solve: no
        # answer without the survival families says nothing is for survival alone
        relaxed = None
        if ends - time.perf_counter() >= build_s + ELASTIC_MIN_S:
            relaxed, _, _ = solve_elastic(
                data, tuple(f for f in families if f not in SURVIVAL_FAMILIES), solver,
                seconds_left(ends))
        plain = _stock_need(relaxed) if relaxed is not None else dict(need)
        if len(need) > 1:
            out += stock_summary(program, need, proven)
    surviving = _beyond(plain) < _beyond(need)
    for pool, (amount, sl) in sorted(need.items(), key=lambda i: (i[0].zone, i[0].gpu,
                                                                      i[0].purchase.value)):
        z, g, kind = pool.zone, pool.gpu, pool.purchase.value
        gpus = math.ceil(amount - SLACK_TOLERANCE)
        stock = program.v.offer[pool].stock_gpus
        when = "" if sl is None else f" during {sl}"
        users = _users(program, pool, sl)
        for w in users or ["(any workload)"]:
            why = _why(data, w, z, surviving, not plain)
            # the total first: "needs 8 more … stock allows 8" read as met by the stock
            message = (f"`{w}` needs {stock + gpus:,} {g} GPUs ({kind}) in {z}{when} {why}; "
                       f"stock allows {stock:,}: {gpus:,} more than stock")
            if len(users) > 1:  # a pool several workloads share is short for all of them
                message = shared_pool_line(w, users, pool, sl, why, stock, gpus)
            out.append(Shortfall(
                requirement="stock", workload=w, zone=z, gpu=g, slice=sl,
                amount=float(gpus), unit="GPUs", message=message,
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


def shared_pool_line(w: str, users: dict[str, int], pool: PoolKey, sl: str | None, why: str,
                     stock: int, beyond: int) -> str:
    """The stock line of workload ``w`` on a pool several workloads run on (``users``: GPUs
    each runs there): its own GPUs lead, then what the pool needs for all of them, once a
    line. Each line led "`chat` needs 216 H100 GPUs in dc-east", "`code` needs 216 …": the
    pool's total read as each workload's own need (fresh-s22 F7)."""
    total = sum(users.values())
    when = "" if sl is None else f" during {sl}"
    need = stock + beyond
    rounded = "" if need == total else ", in whole nodes,"
    names = ", ".join(f"`{u}`" for u in users)
    return (f"`{w}` runs {users[w]:,} of the {total:,} {pool.gpu} GPUs ({pool.purchase.value}) "
            f"the fleet would run in {pool.zone}{when}, {why}; the pool needs {need:,}"
            f"{rounded} for the {len(users)} workloads on it ({names}); stock allows "
            f"{stock:,}: {beyond:,} more than stock")


def _limit_words(time_limit_s: float, shown_limit_s: float | None) -> str:
    """``60 s``, or ``the 41 s the plan's search left it of the 60-s --time-limit`` where the
    diagnosis had what the plan's search left of the user's limit."""
    if shown_limit_s is None or abs(shown_limit_s - time_limit_s) < 0.5:
        return f"{shown_limit_s or time_limit_s:g} s"
    # "43.9 s left of the 60-s …" read as 43.9 s unused
    return (f"the {round(time_limit_s, 1):g} s the plan's search left it of the "
            f"{shown_limit_s:g}-s --time-limit")


def _requirement_shortfall(
    data: ProgramData, row: RowKey, amount: float, unit: str, budget_alone: bool = True
) -> Shortfall:
    if row.family == "budget":
        budget = data.monthly_budget or 0.0
        # "the cheapest fleet that meets every requirement" only when it is one: a relaxation
        # stopped by the clock (4x the cheapest on a generated scenario at --time-limit 10,
        # benchmarks/results/trust.md "Trust sweep") or one that also leaves other rows short is not
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
