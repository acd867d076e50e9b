"""Small × 1's quarterly blocks held at the orders the planner chooses
(:func:`benchmarks.held_widened.held_blocks`), built once per test session: the tests of
benchmarks/held_hours.py, held_optimum.py and held_rounding.py all study the same block, and
building the blocks (an LP per priced block, then the order choice) is most of their work."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.held_widened import held_blocks  # noqa: E402
from solver.solve.held_blocks import HeldBlocks  # noqa: E402


@cache
def small_second_quarter() -> tuple[HeldBlocks, int]:
    """Small × 1's held blocks and the index of the first second-quarter block among the
    distinct ones (the orders' nodes held there). The tests only read them (``HeldBlocks``
    caches each block it builds, the same whoever asks first)."""
    blocks, distinct = held_blocks("small", 1.0)
    return blocks, next(j for j in distinct if blocks.hp.data.blocks[j].period == 1)
