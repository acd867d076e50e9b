"""Orders for a first fleet over periods: what to order so that the nodes each block ran when
planned alone are held, or are run on demand instead where holding them costs more.

The blocks of the program over periods, planned alone with committed capacity at its cheapest
charge per period, run ``R[ξ, q, pool]`` committed nodes. Covering all of them with orders
(:func:`solver.solve.horizon._greedy_orders`) can be dear: a node a block needs only from the
last period costs a whole term. This small integer program chooses orders ``u`` (the joint
program's P3–P5: lead time, order stock, orders due before the re-plan shared) and a shortfall
``z ≥ 0`` per block and pool run on demand all day instead:

    min Σ_ξ p_ξ c_ξ,   c_ξ = Σ order cost · u + Σ_q months · on-demand node-month · z
    s.t. inventory + Σ orders held in q + z ≥ R[ξ, q, pool]

With ``--robust`` the joint program minimises the worst c_ξ, and so does the choice
(min θ, θ ≥ c_ξ), then among the choices of that worst cost the expected one (the worst
scenario's cost alone leaves the others' later orders free: any at most θ would do). Chosen
by expected cost, the start of a robust plan whose blocks are too large to be solved whole
held the expected choice's orders (tests/test_horizon_start.py: a worst of 18,396 where the
least is 14,016), and the joint solve of a large program may not move far from its start.

The blocks are then planned again with each committed pool at the nodes these orders hold,
free (:func:`held_block`): a fleet the joint program accepts as it stands. Without that second
solve, each block's first fleet with the committed nodes beyond what the orders hold run on
demand instead (:func:`on_demand_beyond`) is a fleet the joint program accepts too, as far as
on-demand stock allows (the rest stays committed, and orders are bought to hold it).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import pulp

from models.common import COMMITTED_KINDS, PurchaseKind
from models.plan import Shortfall, SolveStatus
from solver.capacity.node_fit import nodes_needed
from solver.program.data import OfferTerm, ProgramData
from solver.program.keys import PoolKey, ReplicaKey
from solver.program.periods import Block, HorizonData, OrderKey
from solver.program.values import replicas_by_group, start_from_replicas
from solver.program.variables import Program
from solver.solve.backends import integer_value, solve
from solver.solve.diagnose import ELASTIC_MIN_S, diagnose, seconds_left

#: Seconds the order choice may take (it has a few hundred variables) [s].
ORDER_CHOICE_S = 5.0
#: Seconds the order choice is given where the plan's time limit leaves it less (or none): the
#: start from its orders needs no other solve, and the choice on quarterly.yaml's first fleets
#: took 0.13 s at load 12 (2026-12-04), where a plan whose first pass ended at its limit took
#: the greedy orders' start: quarterly.yaml at --time-limit 60, load 14–19, 2.12–2.14 M on main
#: against 1.36 M (benchmarks/results/over-periods.md, "Over periods", "The first pass's cliff")
#: [s].
ORDER_CHOICE_LATE_S = 1.0


def _on_demand_node_month(data: HorizonData, pool: PoolKey) -> float | None:
    """What a node of a pool costs a month on demand all day in its zone [currency/month];
    ``None`` where the zone sells that GPU on no demand."""
    for block in data.blocks:
        for o in block.data.offers:
            if (o.zone, o.gpu, o.purchase) == (pool.zone, pool.gpu, PurchaseKind.on_demand):
                node = next(c.gpus_per_node for c in block.data.offers
                            if (c.zone, c.gpu, c.purchase) == (pool.zone, pool.gpu, pool.purchase))
                return o.price_per_gpu_hour * node * data.hours_per_month
    return None


def _placeable(data: HorizonData, key: OrderKey) -> bool:
    return not data.lead_times or data.order_by(key) >= data.plan_date


def choose_orders(data: HorizonData, running: Mapping[tuple[str, int, PoolKey], float],
                  solver: str, time_limit_s: float = ORDER_CHOICE_S, robust: bool = False,
                  room: Mapping[tuple[str, int, str, str], int] | None = None
                  ) -> tuple[dict[tuple[str, OrderKey], int] | None, bool]:
    """Orders covering the committed nodes the blocks run, or leaving some to on-demand where
    that is cheaper (module docstring), ``None`` where no choice was found in time
    (``time_limit_s``, at most ``ORDER_CHOICE_S``); and whether the choice stopped at its
    time limit (then it may differ from run to run). ``robust``: the least worst scenario's
    cost first, then the least expected cost at that worst (the joint objective of
    ``--robust``). ``room``: the on-demand nodes each block's zone and GPU has left, per
    (scenario, period, zone, GPU) (:func:`on_demand_room`): the nodes left to on demand there
    are at most that many (``None``: no limit)."""
    started = time.perf_counter()
    prob = pulp.LpProblem("order_choice", pulp.LpMinimize)
    keys = [k for k in data.order_keys if _placeable(data, k)]
    u = {(s.name, k): prob.add_variable(f"u_{i}_{j}", 0, cat="Integer")
         for i, s in enumerate(data.scenarios) for j, k in enumerate(keys)}
    cost: dict[str, list[pulp.LpAffineExpression]] = {s.name: [] for s in data.scenarios}
    pools = sorted({pool for _, _, pool in running}, key=lambda p: (p.zone, p.gpu,
                                                                    p.purchase.value))
    beyond: dict[tuple[str, int, str, str], list[pulp.LpVariable]] = {}
    for s in data.scenarios:
        for pool in pools:
            on_demand = _on_demand_node_month(data, pool)
            for q, period in enumerate(data.periods):
                need = running.get((s.name, q, pool), 0) - data.held.get((pool, q), 0)
                if need <= 0:
                    continue
                held = pulp.lpSum(u[(s.name, k)] for k in keys if k.option.pool == pool
                                  and q in data.held_periods(k))
                if on_demand is None:
                    prob += held >= need
                    continue
                z = prob.add_variable(f"z_{s.name}_{q}_{len(cost[s.name])}", 0)
                prob += held + z >= need
                cost[s.name].append(period.months * on_demand * z)
                beyond.setdefault((s.name, q, pool.zone, pool.gpu), []).append(z)
        for option in data.options:
            for q in range(len(data.periods)):
                held = [u[(s.name, k)] for k in keys if k.option == option
                        and q in data.held_periods(k)]
                if held:
                    prob += option.gpus_per_node * pulp.lpSum(held) <= option.stock_gpus
        cost[s.name] += [data.order_cost(k) * u[(s.name, k)] for k in keys]
    for where, zs in beyond.items():
        if room is not None:
            prob += pulp.lpSum(zs) <= max(room.get(where, 0), 0)
    first = data.scenarios[0].name
    for (name, k), var in u.items():
        if name != first and data.order_by(k) < data.replan_date:
            prob += var == u[(first, k)]
    limit_s = min(time_limit_s, ORDER_CHOICE_S)
    expected = pulp.lpSum(s.probability * pulp.lpSum(cost[s.name]) for s in data.scenarios)
    timed, start, at_worst = False, None, None
    if robust:
        worst = prob.add_variable("theta", 0)
        for s in data.scenarios:
            prob += worst >= pulp.lpSum(cost[s.name])
        prob.setObjective(pulp.LpAffineExpression([(worst, 1.0)]))
        outcome = solve(prob, solver, limit_s, 1e-4)
        timed = outcome.status is SolveStatus.time_limit
        if not outcome.has_solution or outcome.report.objective is None:
            return None, timed
        # the worst as found, then the cheapest expected cost at it, from this choice
        start = {v.name: float(v.varValue or 0.0) for v in prob.variables()}
        at_worst = _chosen(u)
        prob += worst <= outcome.report.objective * (1 + 1e-9) + 1e-6
        limit_s = max(limit_s - (time.perf_counter() - started), 0.1)
    prob.setObjective(expected)
    outcome = solve(prob, solver, limit_s, 1e-4, start=start)
    timed |= outcome.status is SolveStatus.time_limit
    if not outcome.has_solution:
        return at_worst, timed
    return _chosen(u), timed


def _chosen(u: Mapping[tuple[str, OrderKey], pulp.LpVariable]) -> dict[tuple[str, OrderKey], int]:
    """The orders of a solved choice: nodes per (demand scenario, order), the non-zero ones."""
    return {key: integer_value(var) for key, var in u.items() if integer_value(var) > 0}


def held_block(data: HorizonData, block: Block, orders: Mapping[tuple[str, OrderKey], int]
               ) -> ProgramData:
    """A block as a single-period program of its own with each committed pool free, stocked
    with the nodes inventory and ``orders`` hold in its period."""

    def held(o: OfferTerm, pool: PoolKey) -> OfferTerm:
        nodes = data.held.get((pool, block.period), 0) + sum(
            n for (s, k), n in orders.items() if s == block.scenario and k.option.pool == pool
            and block.period in data.held_periods(k))
        return dataclasses.replace(o, price_per_gpu_hour=0.0,
                                   stock_gpus=nodes * o.gpus_per_node)

    return _committed_offers(block, held)


def in_time_block(data: HorizonData, block: Block) -> ProgramData:
    """A block as a single-period program of its own with each committed pool stocked with
    only what can be in service in its period: the inventory held through it, and each order
    option's stock where an order of it placed on or after the plan date (P3) holds the
    period (prices as the block's)."""

    def in_time(o: OfferTerm, pool: PoolKey) -> OfferTerm:
        options = {k.option for k in data.order_keys
                   if k.option.pool == pool and block.period in data.held_periods(k)
                   and (not data.lead_times or data.order_by(k) >= data.plan_date)}
        gpus = (data.held.get((pool, block.period), 0) * o.gpus_per_node
                + sum(option.stock_gpus for option in options))
        return dataclasses.replace(o, stock_gpus=min(o.stock_gpus, gpus))

    return _committed_offers(block, in_time)


def _committed_offers(block: Block, change: Callable[[OfferTerm, PoolKey], OfferTerm]
                      ) -> ProgramData:
    """``block``'s program with each committed offer (reserved, owned) as ``change`` makes it
    from the offer and its pool; on-demand and spot offers as they are."""
    return dataclasses.replace(block.data, offers=tuple(
        change(o, PoolKey(o.zone, o.gpu, o.purchase)) if o.purchase in COMMITTED_KINDS else o
        for o in block.data.offers))


def in_time_shortfalls(data: HorizonData, solver: str, time_limit_s: float,
                       before_period: int | None = None) -> tuple[Shortfall, ...]:
    """Where every period can be met on its own but not with orders placed in time: the
    shortfalls of the first block (in period order) that cannot be met with only the
    committed capacity in service by its period (:func:`in_time_block`), each located — how
    much is short, and when (an infeasible plan said only "each period can be met on its own,
    but not with orders placed in time", not where nor by how much). Empty where every block
    can (the order stock over several periods, or the budget, is what binds), or where the
    time runs out first. ``before_period``: only the blocks of earlier periods."""
    ends = time.perf_counter() + time_limit_s
    for block in sorted(data.blocks, key=lambda b: b.period):
        if before_period is not None and block.period >= before_period:
            return ()
        if ends - time.perf_counter() < ELASTIC_MIN_S:  # seconds_left is never below it
            return ()
        found = diagnose(block.workloads, in_time_block(data, block), solver, seconds_left(ends))
        if found:
            start = data.periods[block.period].start
            where = (f"with only the committed capacity in service by then (inventory, and "
                     f"orders placed from the plan date {data.plan_date} on), {block.scenario}, "
                     f"period {block.period} ({start})")
            return tuple(s.model_copy(update={"message": f"{where}: {s.message}"})
                         for s in found)
    return ()


def on_demand_beyond(program: Program, fleet: Mapping[ReplicaKey, int],
                     held: Mapping[PoolKey, int]) -> dict[ReplicaKey, int]:
    """A block's fleet (replicas of ``program``, the block's program) with the committed nodes
    beyond those ``held`` per pool (inventory and the orders chosen) run on demand instead:
    committed replicas moved one at a time to the same configuration on demand in the same
    zone, in every slice (each slice keeps the capacity it had, zone by zone), each time the
    move that leaves the fewest committed nodes (of equals, the fewest GPUs moved, then the
    first in key order) and keeps every row of the block, until the pool runs at most what is
    held. A move that breaks a row is not made: on-demand stock, or a node loss (replicas of
    one workload in two pools cannot be on one node; in one pool they can). What no move
    can take stays committed: orders must then hold more than ``held``.

    What :func:`choose_orders` leaves to on demand, the blocks' fleets made to run it there,
    with no second solve: a plan whose first pass took its whole time limit had only the
    orders bought to hold every committed node each block ran (quarterly.yaml at
    ``--time-limit 60``: 1.6–2.1 M where the blocks planned again with the chosen orders give
    0.72 M at 120 s; benchmarks/results/over-periods.md, "Over periods")."""
    data = program.data
    out = {k: n for k, n in fleet.items() if n > 0}
    pools = sorted({k.pool for k in out if k.purchase in COMMITTED_KINDS},
                   key=lambda p: (p.zone, p.gpu, p.purchase.value))
    for pool in pools:
        while _pool_nodes(program, out, pool) > held.get(pool, 0):
            trials: list[tuple[int, int, int, dict[ReplicaKey, int]]] = []
            for k in sorted(k for k in out if k.pool == pool):
                to = [k._replace(purchase=PurchaseKind.on_demand, slice=s.name)
                      for s in data.slices]
                if any(t not in program.v.replicas for t in to):
                    continue  # no on-demand offer of that GPU in the zone
                trial = dict(out)
                trial[k] -= 1
                if trial[k] == 0:
                    del trial[k]
                for t in to:
                    trial[t] = trial.get(t, 0) + 1
                trials.append((_pool_nodes(program, trial, pool), k.tp, len(trials), trial))
            moved = next((t[3] for t in sorted(trials, key=lambda t: t[:3])
                          if start_from_replicas(program, t[3]) is not None), None)
            if moved is None:
                break
            out = moved
    return out


def committed_pools(program: Program, fleet: Mapping[ReplicaKey, int]) -> dict[PoolKey, int]:
    """The committed nodes a block's fleet (replicas of ``program``) runs, per pool: the
    fewest whole nodes holding its replicas, as
    :func:`~solver.program.values.start_from_replicas` counts them [nodes]."""
    pools = {k.pool for k, n in fleet.items() if n > 0 and k.purchase in COMMITTED_KINDS}
    return {pool: _pool_nodes(program, fleet, pool) for pool in pools}


def _pool_nodes(program: Program, fleet: Mapping[ReplicaKey, int], pool: PoolKey) -> int:
    """Fewest whole nodes of a committed ``pool`` holding a fleet's replicas [nodes]."""
    mine = {k: n for k, n in fleet.items() if k.pool == pool}
    node = program.v.offer[pool].gpus_per_node
    return sum(nodes_needed(by_tp, node) for by_tp in replicas_by_group(program, mine).values())


def on_demand_room(data: HorizonData, fleets: Sequence[Mapping[ReplicaKey, int] | None]
                   ) -> dict[tuple[str, int, str, str], int]:
    """The on-demand nodes each block's first fleet leaves unused, per (scenario, period,
    zone, GPU): the on-demand offer's stock in whole nodes less the nodes of its busiest slice
    (its GPUs over the node size, rounded up) [nodes]; a block without a fleet counts none
    used. What :func:`choose_orders` may leave to on demand there: without it a shortfall
    ran on demand without limit, and where the committed capacity cannot grow (an owned quote
    whose lead time serves no period) the orders chosen left blocks no fleet within the
    on-demand stock, and the start bought every committed node the blocks ran (the finding's
    ``lead_long.yaml``: 21 nodes reserved now where 3 do)."""
    room: dict[tuple[str, int, str, str], int] = {}
    for block, fleet in zip(data.blocks, fleets, strict=True):
        for o in block.data.offers:
            if o.purchase is not PurchaseKind.on_demand:
                continue
            busiest = max((sum(n * k.tp for k, n in (fleet or {}).items()
                               if (k.zone, k.gpu, k.purchase, k.slice)
                               == (o.zone, o.gpu, o.purchase, s.name))
                           for s in block.data.slices), default=0)
            room[(block.scenario, block.period, o.zone, o.gpu)] = (
                o.stock_gpus // o.gpus_per_node - -(-busiest // o.gpus_per_node))
    return room
