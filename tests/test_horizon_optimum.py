"""benchmarks/horizon_optimum.py: a block's track keeps its cheapest fleet and highest bound,
the sums given the orders weigh each block as the joint objective does (the blocks' fleets put
together are a fleet of the joint program at that cost), a nudge changes only the largest
order, and a held block solved by the pipeline and the tree ends with a fleet of the held block
at or above its bound."""

from __future__ import annotations

import pytest

from benchmarks.horizon_optimum import (
    Budgets,
    Track,
    given_orders,
    nudged,
    solve_block,
    study,
)
from solver.solve.clock import Deadline
from solver.solve.highs import run
from solver.solve.order_choice import held_block
from tests.held_cases import small_second_quarter


def test_a_track_keeps_the_cheapest_fleet_and_the_highest_bound_within_a_budget() -> None:
    track = Track(weight=3.0)
    track.add(1.0, 120.0, 90.0)
    track.add(2.0, None, 95.0)
    track.add(3.0, 110.0, 94.0)  # a later report's bound below the best: the best is kept
    assert track.at(0.5) == (None, None)
    assert track.at(1.0) == (120.0, 90.0)
    assert track.at(2.5) == (120.0, 95.0)
    assert track.at(10.0) == (110.0, 95.0)


def test_the_sums_given_the_orders_weigh_each_block_and_add_the_orders() -> None:
    a, b = Track(1.0), Track(1.0)
    a.add(1.0, 100.0, 90.0)
    b.add(2.0, 200.0, 150.0)
    # blocks 0 and 2 are the same program (class 0), block 1 another (class 1)
    fleet, bound = given_orders([0.9, 1.2, 0.9], [0, 1, 0], {0: a, 1: b}, 1000.0, 5.0)
    assert fleet == pytest.approx(1000.0 + 0.9 * 100 + 1.2 * 200 + 0.9 * 100)  # 1,420
    assert bound == pytest.approx(1000.0 + 0.9 * 90 + 1.2 * 150 + 0.9 * 90)  # 1,342
    # before block 1 has a fleet, neither sum is known
    assert given_orders([0.9, 1.2, 0.9], [0, 1, 0], {0: a, 1: b}, 1000.0, 1.5) == (None, None)


def test_a_nudge_changes_the_largest_order_in_every_scenario_and_no_other() -> None:
    orders = {("low", "k1"): 3, ("base", "k1"): 5, ("base", "k2"): 2, ("high", "k2"): 1}
    up = nudged(orders, 1)  # type: ignore[arg-type]
    assert up == {("low", "k1"): 4, ("base", "k1"): 6, ("base", "k2"): 2, ("high", "k2"): 1}
    down = nudged(orders, -4)  # type: ignore[arg-type]
    assert down == {("low", "k1"): 0, ("base", "k1"): 1, ("base", "k2"): 2, ("high", "k2"): 1}
    assert nudged(orders, 0) == orders  # type: ignore[arg-type]


def test_a_held_block_solved_ends_with_a_fleet_of_it_at_or_above_its_bound() -> None:
    """Small × 1, the first second-quarter block, by all three steps: every fleet recorded is
    one of the block taken from the joint arrays (at or above its LP), and no bound recorded
    exceeds a fleet recorded."""
    blocks, i = small_second_quarter()
    data = held_block(blocks.hp.data, blocks.hp.data.blocks[i], blocks.orders)
    track = solve_block(blocks, i, data, Budgets(pipeline_s=10.0, block_s=5.0, tree_s=3.0))
    fleet, bound = track.at(float("inf"))
    assert fleet is not None and bound is not None
    assert bound <= fleet * (1 + 1e-6)
    hb = blocks.block(i)
    # the block's LP bounds every fleet of it from below
    relaxed = run(hb.held.model, Deadline(30.0), 30.0, 0.0, relaxation=True)
    assert relaxed.objective is not None
    assert fleet >= relaxed.objective / hb.weight * (1 - 1e-6)
    assert bound >= relaxed.objective / hb.weight * (1 - 1e-3)


def test_the_blocks_fleets_put_together_are_a_joint_fleet_at_the_summed_cost() -> None:
    """Small × 1, every distinct held block by the planner's block step (2 s): the fleet the
    sums give is the joint program's cost of the blocks' fleets put together (the three tied
    first-quarter blocks sharing one), which breaks no row of it."""
    blocks, _ = small_second_quarter()
    fleet, checked = study(blocks, Budgets(pipeline_s=0.0, block_s=2.0, tree_s=0.0), [1e9], [])
    assert fleet is not None and checked is not None
    broken, cost = checked
    assert broken == []
    assert cost == pytest.approx(fleet, rel=1e-9)
