"""benchmarks/held_optimum.py: each hour of a held block's fleet re-solved with the rest held
costs no more than the fleet's hour and no less than the hour's LP, and the hours so re-solved
put back together are a fleet of the block."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.held_lagrange import hour_split  # noqa: E402
from benchmarks.held_optimum import exact_hours  # noqa: E402
from benchmarks.held_widened import BlockSupport, block_support  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import RunResult, run  # noqa: E402
from tests.held_cases import small_second_quarter  # noqa: E402

#: Wall-clock limit of the block's exact solve (gap 0) [s]: it ends by its gap, but at a
#: 30-s limit it stopped short of the optimum under a load of ~15 (2026-12-04, on main too).
EXACT_S = 120.0


@cache
def _solved() -> tuple[BlockSupport, RunResult]:
    """The block's support (as the planner tries it first) and its exact solve (gap 0),
    once for both tests."""
    blocks, i = small_second_quarter()
    bs = block_support(blocks, i, 5.0, 0.0)
    return bs, run(bs.model, Deadline(EXACT_S), EXACT_S, 0.0)


def test_each_hour_at_best_lies_between_its_lp_and_the_fleet() -> None:
    """Small × 1, the first second-quarter block (the orders' nodes held there)."""
    bs, whole = _solved()
    assert whole.x is not None and whole.objective is not None
    x = np.where(bs.model.integer, np.round(whole.x), whole.x)
    hours = exact_hours(bs, x, 5.0)
    assert len(hours) == len(bs.program.data.slices)
    for h in hours:
        assert h.lp <= h.mip * (1 + 1e-9) + 1e-6
        assert h.mip <= h.fleet * (1 + 1e-9) + 1e-6
    # the fleet is optimal (gap 0): no hour re-solved alone beats its own hour
    assert sum(h.mip for h in hours) >= sum(h.fleet for h in hours) * (1 - 1e-6) - 1e-6
    # the hours' own columns and the all-day ones add up to the fleet
    assert bs.relaxed.objective is not None
    assert sum(h.fleet for h in hours) <= whole.objective + 1e-6


def test_the_hour_split_bound_lies_between_the_lp_at_the_duals_and_the_optimum() -> None:
    """Small × 1, the same block: at zero multipliers and at the LP's duals the hour-split
    bound is at most the block's optimum; at the duals at least its LP."""
    blocks, i = small_second_quarter()
    _, whole = _solved()
    assert whole.objective is not None and whole.bound is not None
    for at_duals in (False, True):
        lp, ev = hour_split(blocks, i, 5.0, at_duals)
        assert ev.bound <= whole.objective * (1 + 1e-6) + 1e-6
        if at_duals:
            assert ev.bound >= lp * (1 - 1e-6) - 1e-6
