"""A batch volume the program moves within its window: each slice's row is judged by the work the
fleet does there, so a slice the volume was moved out of does not fail."""

from __future__ import annotations

import pytest

from models.common import PurchaseKind
from models.plan import SolveStatus
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import blocks, offer, row, scenario, table, workload, zone


def test_a_volume_moved_out_of_a_slice_leaves_no_failing_row_there() -> None:
    # Window: hours 0-1 (slice "x") and 12-23 (slice "y"). 432,000 requests a day = one TP1
    # replica of 10 req/s for 12 h, so the cheapest fleet is one on-demand replica running in
    # "y" only (1 GPU × 3.0 × 365 h = 1,095); none runs in "x".
    sc = scenario([workload("b", None, cls="batch", utilization=1.0,
                            batch=(432_000.0, [0, 1, *range(12, 24)]))],
                  [zone("a", offer(on_demand=(3.0, 8), gpus_per_node=1))],
                  time_blocks=blocks(("x", range(0, 12)), ("y", range(12, 24))))
    tb = table(row("b", "H100", 1, 10.0))
    plan = plan_scenario(sc, tb, gap=1e-9)
    assert plan.status is SolveStatus.optimal
    assert plan.cost.per_month == pytest.approx(1095.0)
    assert [(a.slice, a.purchase, a.replicas) for a in plan.allocations if a.replicas] == [
        ("y", PurchaseKind.on_demand, 1)]
    rows = {r.slice: r for r in plan.survivability if r.failure == "none"}
    assert (rows["x"].capacity_rps, rows["x"].demand_rps, rows["x"].holds) == (0.0, 0.0, True)
    # "y" runs the whole volume: 432,000 ÷ (12 h × 3600 s) = 10 req/s, all it has.
    assert (rows["y"].capacity_rps, rows["y"].holds) == (10.0, True)
    assert rows["y"].demand_rps == pytest.approx(10.0)
    assert verify_plan(plan, sc, tb) == []
