"""benchmarks/held_rounding.py: a held block's LP rounded hour by hour is a fleet of the block
(every row met, every integer column whole), at least its LP, its all-day replicas the LP's
rounded down."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.held_rounding import committed_floor, hours_rounded  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import run  # noqa: E402
from tests.held_cases import small_second_quarter  # noqa: E402


def test_the_hours_rounded_from_the_floor_are_a_fleet_of_the_held_block() -> None:
    """Small × 1, the first second-quarter block (the orders' nodes held there)."""
    blocks, i = small_second_quarter()
    hb = blocks.block(i)
    model, program = hb.held.model, hb.program
    relaxed = run(model, Deadline(30.0), 30.0, 0.0, relaxation=True)
    assert relaxed.x is not None and relaxed.objective is not None
    floored = committed_floor(program, model, relaxed.x)
    all_day = model.columns_named([x.name for k, x in program.v.replicas.items()
                                   if k.slice is None])
    assert np.array_equal(floored[all_day], np.floor(relaxed.x[all_day] + 1e-6))
    x = hours_rounded(program, model, floored, 5.0, 0.0)
    assert x is not None
    assert model.broken_rows(x) == []
    assert float(model.cost @ x) >= relaxed.objective * (1 - 1e-9)
