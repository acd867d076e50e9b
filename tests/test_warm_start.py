"""The greedy warm start is a feasible point of the program (every row holds), never below the
optimum."""

from __future__ import annotations

import math

import pulp
import pytest

from models.capacity import CapacityTable
from models.common import PurchaseKind
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.values import objective_of
from solver.solve.backends import solve
from solver.solve.greedy import greedy_start
from tests import fleet_cases as fc
from tests.plan_fixtures import blocks, offer, row, scenario, table, workload, zone

TOL = 1e-6


def cases() -> list[tuple[Scenario, CapacityTable]]:
    two = [zone(z, offer(reserved=(2.0, 64), on_demand=(3.0, 64))) for z in ("a", "b", "c")]
    halves = blocks(("x", range(0, 12)), ("y", range(12, 24)))
    shape = [1.0] * 12 + [0.4] * 12
    return [
        (fc.scenario(), fc.table()),
        (scenario([workload("z", 30.0, shape=shape, survivability="zone_loss"),
                   workload("n", 17.0, survivability="n_plus_1"),
                   workload("v", None, cls="batch", batch=(40000.0, range(0, 6)))],
                  two, time_blocks=halves),
         table(row("z", "H100", 1, 4.0), row("z", "H100", 2, 9.0), row("n", "H100", 1, 6.0),
               row("v", "H100", 2, 3.0))),
    ]


@pytest.mark.parametrize("index", [0, 1])
def test_greedy_start_satisfies_every_row(index: int) -> None:
    sc, tb = cases()[index]
    program = build_program(build_program_data(sc, tb))
    start = greedy_start(program)
    assert start is not None
    for con in program.prob.constraints():
        name = con.name
        lhs = sum(coef * start[var.name] for var, coef in con.items()) + con.constant
        if con.sense == pulp.LpConstraintGE:
            assert lhs >= -TOL * max(1.0, abs(con.constant)), name
        elif con.sense == pulp.LpConstraintLE:
            assert lhs <= TOL * max(1.0, abs(con.constant)), name
        else:
            assert abs(lhs) <= TOL * max(1.0, abs(con.constant)), name
    for var in program.prob.variables():
        value = start[var.name]
        assert var.lowBound is None or value >= var.lowBound - TOL
        assert var.upBound is None or value <= var.upBound + TOL
        if var.cat == pulp.LpInteger:
            assert value == round(value)
    best = build_program(build_program_data(sc, tb))
    solve(best.prob, gap=1e-9)
    assert objective_of(program, start) >= float(pulp.value(best.prob.objective)) - TOL


def test_reserved_base_is_the_cheapest_of_every_base_size() -> None:
    # The base is chosen among 0 and the slices' counts only (the cost is convex and piecewise
    # linear with kinks there); a scan of every base from 0 to the peak finds no cheaper one.
    # Reserved 2.0 × 730 h per replica-month against on-demand 3.0 × 365 h per slice: a replica
    # needed in both halves of the day is cheaper reserved (1,460 < 2,190), in one half not.
    import random

    from solver.solve.greedy import _zone_plan

    sc, tb = cases()[1]
    program = build_program(build_program_data(sc, tb))
    c = next(c for c in program.data.candidates if c.workload == "n")
    rng = random.Random(7)
    for _ in range(200):
        need = {s.name: rng.uniform(0.0, 60.0) for s in program.data.slices}
        plan = _zone_plan(program, c, "a", need, 6.0)
        assert plan is not None
        counts = [math.ceil(n / 6.0 - 1e-9) for n in need.values()]
        scan = min(base * 2.0 * 730 + sum(max(n - base, 0) * 3.0 * 365 for n in counts)
                   for base in range(max(counts) + 1))
        assert plan[0] == pytest.approx(scan)
        assert plan[1].get(("n", "H100", 1, "a", PurchaseKind.reserved, None), 0) == sorted(
            counts)[0]


def test_a_greedy_fleet_within_stock_takes_what_the_workloads_before_left() -> None:
    """Two workloads of 2 req/s on one-GPU nodes of 1 req/s, reservations at 1 $/GPU-h (3
    GPUs in stock) and on demand at 2: each alone takes 2 reserved nodes, 4 together, so the
    greedy fleet breaks stock and there is none. Within stock (the fallback of a plan over
    periods), the second takes the 1 reserved node left and 1 on demand: (3 × 1 + 1 × 2) ×
    730 h a month."""
    from tests.plan_fixtures import gpu

    sc = scenario([workload(w, 2.0, utilization=1.0) for w in ("x", "y")],
                  [zone("a", offer(reserved=(1.0, 3), on_demand=(2.0, 64)))],
                  gpus=[gpu("H100", 1)])
    program = build_program(build_program_data(sc, table(row("x", "H100", 1, 1.0),
                                                         row("y", "H100", 1, 1.0))))
    assert greedy_start(program) is None
    start = greedy_start(program, within_stock=True)
    assert start is not None
    hours = program.data.hours_per_month
    assert objective_of(program, start) == pytest.approx((3 * 1.0 + 1 * 2.0) * hours)
    reserved = sum(start[y.name] for k, y in program.v.nodes.items()
                   if k.purchase is PurchaseKind.reserved)
    assert reserved == 3
