"""benchmarks/held_restriction.py: a block with the orders held, taken from the joint program's
arrays (ties dropped, node-loss big-Ms capped by the nodes held), has the LP relaxation of the
block built on its own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

import benchmarks.held_restriction as held_restriction  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from benchmarks.held_restriction import compare  # noqa: E402


def test_every_block_restricted_has_the_built_blocks_lp() -> None:
    """Small × 1: the restriction's LP per month is the held block's, every block."""
    compared = compare(_scenario("small", 1, 0, True))
    assert len(compared) == 12
    for c in compared:
        assert c.built_lp is not None
        assert c.restricted_lp == pytest.approx(c.built_lp, rel=1e-6)
        assert c.capped_lp == pytest.approx(c.built_lp, rel=1e-6)


def test_tie_rows_left_in_make_the_first_quarter_infeasible(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """With the tie rows kept (bounds and all), a tied block's restriction takes in the other
    blocks' rows with their replicas held at zero: no LP."""
    monkeypatch.setattr(held_restriction, "_without_ties", lambda model: model)
    compared = compare(_scenario("small", 1, 0, True))
    tied = [c for c in compared if c.block.period == 0]
    assert tied and all(c.restricted_lp is None for c in tied)


@pytest.mark.skipif(os.environ.get("FLEETPLAN_SLOW") != "1",
                    reason="builds medium x 1's joint program and 24 blocks (~30 s); set "
                           "FLEETPLAN_SLOW=1")
def test_medium_needs_the_big_ms_capped() -> None:
    """Medium × 1: the joint program's blocks carry each committed pool's whole stock, so the
    plain restriction's LP is below the held block's in some block; capped, equal in all."""
    compared = compare(_scenario("medium", 1, 0, True))
    assert any(c.restricted_lp is not None and c.built_lp is not None
               and c.restricted_lp < c.built_lp * (1 - 1e-3) for c in compared)
    for c in compared:
        assert c.capped_lp == pytest.approx(c.built_lp, rel=1e-6)
