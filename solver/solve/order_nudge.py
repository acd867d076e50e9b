"""The order choice checked against the blocks it holds: more (or fewer) nodes of its largest
order, kept where the blocks' LP relaxations with what the orders hold cost less (issue 16).

:func:`~solver.solve.order_choice.choose_orders` reads the committed nodes each block's LP
relaxation runs of each pool (``R``, priced at the pool's cheapest order) as fixed needs, a pool
at a time, and leaves the rest to on demand. A block given more nodes of one pool plans around
them: it moves work onto them from other pools, zones and GPUs, and from on demand, which a need
per pool does not see. On the harness's medium × 25 program over periods the choice orders 5
nodes of its largest order (12-month reserved H200 in use1-az1, from the second quarter) in each
scenario; the blocks held with 2 more cost less in their LPs (20,873,155 → 20,806,683 with the
orders, i16-s23) and in their fleets planned deeper (−0.31 %); 120-s plans with this check
(which moves it +2) were 0.16–0.37 % cheaper than main's in four interleaved pairs of four
(benchmarks/results/over-periods.md, "Over periods: the order choice checked against the
blocks it holds (i16-s24)").

So, where time allows: the blocks the largest order holds are relaxed with what the orders hold
(:func:`~solver.solve.order_choice.held_block`, every committed pool free at its held nodes),
and the order is moved a node at a time, up first, then down if up is no cheaper, while the
orders' cost plus the blocks' LP optima (each weighted by its scenario's probability and its
period's months) falls. A line search: the LP optimum is convex in a pool's held nodes. The
other blocks do not change and are not solved.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from solver.program.data import ProgramData
from solver.program.periods import HorizonData, OrderKey
from solver.solve.block_plans import lp_relaxation
from solver.solve.order_choice import held_block

Orders = Mapping[tuple[str, OrderKey], int]

#: Relative fall of the orders' cost with the held blocks' LPs below which a move is not
#: taken (the LPs' own tolerance, and no move for nothing) [1].
NUDGE_MIN_FALL = 1e-5


def largest_order(orders: Orders) -> OrderKey:
    """The order key holding the most nodes in any scenario (of equals, the first by text)."""
    return max(orders.items(), key=lambda item: (item[1], str(item[0][1])))[0][1]


def moved(orders: Orders, key: OrderKey, nodes: int) -> dict[tuple[str, OrderKey], int]:
    """``orders`` with ``nodes`` more (fewer, negative) of ``key`` in every scenario that orders
    it (none below zero; an order due before the re-plan stays the same in every scenario, as
    it is in each of them)."""
    out = {k: n for k, n in orders.items()}
    for (s, k), n in orders.items():
        if k == key:
            out[(s, k)] = max(n + nodes, 0)
    return {k: n for k, n in out.items() if n > 0}


def within_stock(data: HorizonData, orders: Orders, key: OrderKey) -> bool:
    """Whether the orders of ``key``'s option fit its stock in every period and scenario (P4)."""
    option = key.option
    for s in data.scenarios:
        for q in range(len(data.periods)):
            nodes = sum(n for (name, k), n in orders.items() if name == s.name
                        and k.option == option and q in data.held_periods(k))
            if option.gpus_per_node * nodes > option.stock_gpus:
                return False
    return True


def held_lp_cost(data: HorizonData, orders: Orders, key: OrderKey, scenarios: frozenset[str],
                 solver: str, ends: float) -> float | None:
    """What ``orders`` cost with the blocks of ``scenarios`` that ``key`` holds (its held
    periods) relaxed given what the orders hold: Σ over those scenarios of probability × (their
    orders' cost + Σ months × the block's LP optimum a month) [currency]; ``None`` where a
    block has no LP optimum by ``ends`` (``time.perf_counter()``) or none at all."""
    probability = {s.name: s.probability for s in data.scenarios}
    total = sum(probability[s] * n * data.order_cost(k) for (s, k), n in orders.items()
                if s in scenarios)
    solved: list[tuple[ProgramData, float]] = []
    for block in data.blocks:
        if block.scenario not in scenarios or block.period not in data.held_periods(key):
            continue
        program = held_block(data, block, orders)
        optimum = next((o for p, o in solved if p == program), None)
        if optimum is None:
            left_s = ends - time.perf_counter()
            relaxed = None if left_s <= 0 else lp_relaxation(program, solver, left_s)
            if relaxed is None:
                return None
            optimum = relaxed[0]
            solved.append((program, optimum))
        total += probability[block.scenario] * data.periods[block.period].months * optimum
    return total


def nudge_largest(data: HorizonData, orders: Orders, solver: str, time_limit_s: float
                  ) -> tuple[dict[tuple[str, OrderKey], int], int]:
    """``orders`` with the largest order (:func:`largest_order`) moved while the blocks it holds
    cost less with the orders (:func:`held_lp_cost`; module docstring), and the nodes it was
    moved by (0: as chosen) — within ``time_limit_s``: what no LP has priced in time is not
    taken."""
    out = dict(orders)
    if not out:
        return out, 0
    ends = time.perf_counter() + time_limit_s
    key = largest_order(out)
    scenarios = frozenset(s for s, k in out if k == key)  # the same blocks for every trial
    best = held_lp_cost(data, out, key, scenarios, solver, ends)
    if best is None:
        return out, 0
    shift = 0
    for step in (1, -1):
        while True:
            trial = moved(out, key, step)
            if trial == out or not within_stock(data, trial, key):
                break
            cost = held_lp_cost(data, trial, key, scenarios, solver, ends)
            if cost is None or cost >= best * (1 - NUDGE_MIN_FALL):
                break
            out, best, shift = trial, cost, shift + step
        if shift:
            break  # up was cheaper: down is not tried
    return out, shift
