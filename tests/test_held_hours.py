"""benchmarks/held_hours.py: from a held block's first fleet, each pass (the gap of the whole
block's cost or of each hour's own) ends at a fleet of the block no dearer than that first fleet
and no cheaper than the block's LP."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.held_hours import first_fleet, parse_variants, passes  # noqa: E402
from tests.held_cases import small_second_quarter  # noqa: E402


def test_each_pass_ends_at_a_fleet_between_the_lp_and_its_first_fleet() -> None:
    """Small × 1, the first second-quarter block (the orders' nodes held there)."""
    blocks, i = small_second_quarter()
    bs, x, _ = first_fleet(blocks, i, 5.0)
    assert x is not None and bs.relaxed.objective is not None
    first = bs.model.cost_of(x)
    variants = parse_variants("whole=0.5/0.002/whole,hour=0.5/0.02/hour/20", 10.0)
    assert [(v.of_slice, v.pass_s) for v in variants] == [(False, 10.0), (True, 20.0)]
    for done in passes(bs, x, variants):
        assert not bs.model.broken_rows(done.x)
        assert bs.relaxed.objective * (1 - 1e-6) - 1e-6 <= done.cost <= first * (1 + 1e-9)
