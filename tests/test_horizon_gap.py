"""benchmarks/horizon_gap.py: a plan's cost split by quarter and orders adds up to its cost."""

from __future__ import annotations

import pytest

from benchmarks.horizon_gap import lp
from solver.program.periods import build_horizon_data, build_horizon_program
from tests.test_horizon_start import GROWTH
from tests.test_periods import QUARTER, TABLE, quarterly


def test_the_joint_lp_splits_into_quarters_and_orders() -> None:
    """Demand 1, 1, 1, 2 nodes: the relaxation holds one 12-month reservation (3,942) and runs
    the second node of the last quarter on demand (2,190), as the integer optimum does."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    value, parts, _ = lp(hp)
    assert value == pytest.approx(8760 * 0.45 + QUARTER)
    assert parts["orders"] == pytest.approx(8760 * 0.45)
    assert [parts[f"elastic Q{q}"] for q in (1, 2, 3, 4)] == pytest.approx([0, 0, 0, QUARTER])
    assert parts["total"] == pytest.approx(value)
