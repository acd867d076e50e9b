"""The order choice checked against the blocks it holds (solver/solve/order_nudge.py).

Two zones ``a`` and ``b`` sell one-GPU nodes of ``G``: on demand at 1.00 $/GPU-h (8,760 $ a
node-year), a 12-month reservation at 0.90 (7,884 $ a node over the year's four quarters). One
workload needs 2 nodes in every quarter. A block's LP relaxation may run its committed nodes
split over the zones, here 1.4 in ``a`` and 0.6 in ``b``: per pool, the choice then orders one
node in ``a`` (its 0.4 more on demand all year, 3,504, cost less than a second order) and none
in ``b`` (0.6 all year 5,256 < 7,884). The blocks held with that one node run the other 1.0
on demand: 7,884 + 8,760 = 16,644. With two nodes of ``a`` they run none: 15,768, the optimum
(three: 23,652; none: 17,520).
"""

from __future__ import annotations

import pytest

from models.common import PurchaseKind
from models.horizon import Horizon
from models.offers import Offer, OnDemandTerms, ReservedTerms
from solver.program.keys import PoolKey
from solver.program.periods import HorizonData, build_horizon_data, build_horizon_program
from solver.solve import horizon
from solver.solve.horizon import nudged_choice
from solver.solve.order_choice import choose_orders
from solver.solve.order_nudge import nudge_largest
from tests.plan_fixtures import gpu, scenario, workload, zone
from tests.test_periods import START, TABLE

YEAR = 8760.0  # hours in the four quarters [h]
RESERVED = 0.9  # [$/GPU-h]


def _two_zones() -> HorizonData:
    offer = Offer(gpu="G", gpus_per_node=1,
                  on_demand=OnDemandTerms(price_per_gpu_hour=1.0, stock_gpus=8),
                  reserved=ReservedTerms(price_per_gpu_hour=RESERVED, stock_gpus=8,
                                         commitment_months=12))
    wl = workload("chat", 2.0, utilization=1.0).model_copy(update={"growth": (1, 1, 1, 1)})
    sc = scenario([wl], [zone("a", offer), zone("b", offer)], gpus=[gpu("G", 1)])
    sc = sc.model_copy(update={"horizon": Horizon(start=START, period_months=3, count=4)})
    return build_horizon_data(sc, lambda _: TABLE)


def _split(data: HorizonData) -> dict[tuple[str, int, PoolKey], float]:
    """Committed nodes per block as an LP relaxation may split them: 1.4 in a, 0.6 in b."""
    a = PoolKey("a", "G", PurchaseKind.reserved)
    b = PoolKey("b", "G", PurchaseKind.reserved)
    return {(s.name, q, pool): n for s in data.scenarios for q in range(4)
            for pool, n in ((a, 1.4), (b, 0.6))}


def _nodes(orders: dict[tuple[str, object], int]) -> list[tuple[str, int, int]]:
    return sorted((k.option.pool.zone, k.arrival, n)  # type: ignore[attr-defined]
                  for (_, k), n in orders.items())


def test_the_choice_per_pool_orders_one_node_where_the_blocks_held_want_two() -> None:
    """The choice alone: one node of ``a`` from quarter 0 (module docstring); checked against
    the blocks it holds, two — the optimum, 2 × 7,884."""
    data = _two_zones()
    chosen, timed = choose_orders(data, _split(data), "highs")
    assert chosen is not None and not timed
    assert _nodes(chosen) == [("a", 0, 1)]
    nudged, moved_by = nudge_largest(data, chosen, "highs", 30.0)
    assert moved_by == 1
    assert _nodes(nudged) == [("a", 0, 2)]
    assert sum(n * data.order_cost(k) for (_, k), n in nudged.items()) == pytest.approx(
        2 * YEAR * RESERVED)


def test_the_plan_s_start_from_relaxations_takes_the_checked_orders(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`nudged_choice`, as ``_start_from_relaxations`` calls it, moves the choice to two
    nodes (its order of one node let through); with no time for an LP it leaves the choice as
    it is."""
    monkeypatch.setattr(horizon, "NUDGE_MIN_NODES", 1)
    data = _two_zones()
    hp = build_horizon_program(data)
    chosen, _ = choose_orders(data, _split(data), "highs")
    assert chosen is not None
    assert _nodes(nudged_choice(hp, chosen, "highs", 100.0, None)) == [("a", 0, 2)]
    assert nudge_largest(data, chosen, "highs", 0.0) == (chosen, 0)


def test_an_order_of_fewer_nodes_than_the_check_takes_is_left_as_chosen() -> None:
    """The largest order holds one node, under ``NUDGE_MIN_NODES``: the plan's check leaves it
    (on the harness's medium × 1 the check moved such orders by nothing and its seconds made
    the plans 0.5 % dearer), though the line search alone would move it."""
    assert horizon.NUDGE_MIN_NODES > 1
    data = _two_zones()
    hp = build_horizon_program(data)
    chosen, _ = choose_orders(data, _split(data), "highs")
    assert chosen is not None
    assert nudged_choice(hp, chosen, "highs", 100.0, None) == chosen


def test_a_choice_the_blocks_held_price_least_is_kept() -> None:
    """Two nodes of ``a`` already: one more costs 7,884 and saves nothing; one fewer runs a
    node on demand all year (8,760 > 7,884): kept as chosen."""
    data = _two_zones()
    chosen, _ = choose_orders(data, _split(data), "highs")
    assert chosen is not None
    two = {key: 2 for key in chosen}
    assert nudge_largest(data, two, "highs", 30.0) == (two, 0)
