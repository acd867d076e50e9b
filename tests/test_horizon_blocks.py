"""benchmarks/horizon_blocks.py: each distinct block held at a plan's orders, its fleet against
its relaxation, weighted by the probability and months of the blocks it stands for."""

from __future__ import annotations

import pytest

from benchmarks.horizon_blocks import held_rows, markdown
from solver.program.periods import build_horizon_data, build_horizon_program
from solver.solve.horizon import horizon_start
from tests.test_horizon_start import GROWTH
from tests.test_periods import QUARTER, TABLE, quarterly


def test_blocks_held_at_the_orders_of_the_optimum() -> None:
    """Demand 1, 1, 1, 2 nodes; the optimum holds one 12-month reservation: the first three
    quarters are one held program (the node held runs free: 0 a month, weight 9 months) and
    the last runs its second node on demand (730 a month, its LP too); the expected elastic cost
    is the quarter's 2,190, as the plan's split says."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, _, _, _ = horizon_start(hp, "highs", 10.0, 1e-6)
    assert start is not None
    rows = held_rows(hp, start, 0.0, [(1.0, 1e-4)])
    assert [(r.blocks, r.weight) for r in rows] == [("base Q1, base Q2, base Q3", 9.0),
                                                   ("base Q4", 3.0)]
    assert [r.fleet for r in rows] == pytest.approx([0.0, 730.0])
    assert [r.lp for r in rows] == pytest.approx([0.0, 730.0])
    assert [r.polished[0][0] for r in rows] == pytest.approx([0.0, 730.0])
    total = markdown(rows, [(1.0, 1e-4)])[-1]
    assert total.startswith(f"| expected elastic | {QUARTER:,.0f} | {QUARTER:,.0f} |")
