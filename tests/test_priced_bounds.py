"""benchmarks/priced_bounds.py: the priced blocks' branch-and-bound bound of a plan over
periods lies between their LP bound and the joint program's optimum."""

from __future__ import annotations

import pytest

from benchmarks.priced_bounds import priced_bound
from solver.program.periods import build_horizon_data
from tests.test_periods import QUARTER, TABLE, quarterly

# Demand 1.5 nodes in every quarter; a 12-month reservation at 0.45 costs 8,760 × 0.45 = 3,942
# (985.5 a quarter over four), on demand 2,190 a quarter. The joint optimum holds two terms,
# 7,884 (one term and a node on demand every quarter: 3,942 + 4 × 2,190, dearer). Each priced
# block (reserved at 985.5 a quarter) runs 1.5 nodes in its LP (1,478.25) and 2 whole nodes
# in its integer optimum (1,971).
RESERVED_QUARTER = 8760 * 0.45 / 4


def test_the_blocks_integer_bound_is_the_joint_optimum_here_and_the_lp_is_below() -> None:
    assert RESERVED_QUARTER < QUARTER  # a reserved node-quarter is the cheaper
    data = build_horizon_data(quarterly([1.5] * 4), lambda _: TABLE)
    rows, lp_total, at_marks, final = priced_bound(data, 10.0, [10.0])
    assert lp_total == pytest.approx(4 * 1.5 * RESERVED_QUARTER)
    assert final == pytest.approx(4 * 2 * RESERVED_QUARTER)  # = 7,884, the joint optimum
    assert at_marks == [pytest.approx(final)]
    assert [r.weight for r in rows] == [12.0]  # the four quarters are one program, 3 months each


def test_the_long_run_from_the_plans_fleet_ends_at_the_optimum() -> None:
    """benchmarks/horizon_long.py on the same kind of case (demand 1, 1, 1, 2 nodes): the plan
    and the joint solve after it both end at the optimum, 3,942 + 2,190, with the bound there."""
    from benchmarks.horizon_long import long_solve, plan_and_program
    from tests.test_horizon_start import GROWTH

    hp, values, cost, bound = plan_and_program(quarterly(GROWTH), 20.0, lambda _: TABLE)
    assert cost == pytest.approx(8760 * 0.45 + QUARTER)
    assert bound == pytest.approx(cost, rel=1e-6)
    best, best_bound, parts = long_solve(hp, values, 10.0, 1e-6, 60.0)
    assert best == pytest.approx(cost)
    assert best_bound == pytest.approx(cost, rel=1e-6)
    assert parts is not None and parts["total"] == pytest.approx(cost)


def test_the_orders_of_a_fleet_are_read_back_as_the_order_choice_keys_them() -> None:
    """benchmarks/held_orders.py: the optimum of demand 1, 1, 1, 2 nodes holds one 12-month
    reservation from the first quarter; read from its values by column name, that is the one
    order, keyed (scenario, order) as ``choose_orders`` keys it."""
    from benchmarks.held_orders import orders_of
    from benchmarks.horizon_long import plan_and_program
    from tests.test_horizon_start import GROWTH

    hp, values, _, _ = plan_and_program(quarterly(GROWTH), 20.0, lambda _: TABLE)
    orders = orders_of(hp.data, values)
    assert [(s, k.arrival, n) for (s, k), n in orders.items()] == [("base", 0, 1)]
