"""A bound on a held block by hour: every hour given its own copy of the all-day columns (issue 16:
is a held block's optimum far above its LP?).

A held block (:mod:`benchmarks.held_widened`: the harness's multi-period case held at the orders
the planner chooses) pays nothing for its all-day columns — the committed nodes are the orders',
paid outside the block — so the slice Lagrangian of :mod:`benchmarks.slice_lagrange` at zero
multipliers is a plain relaxation: each hour chooses its own committed replicas (whole, within
the nodes held) and its own elastic fleet, the batch windows' volume rows (the only rows that
span hours) dropped. Its value, each hour counted at HiGHS's proven bound, is a lower bound on
the block's optimum. So is the same at the LP relaxation's duals (at least the LP; ``--duals``).
Printed for each block named (``--blocks``: demand scenario and period index) beside its LP::

    nice -n 19 .venv/bin/python benchmarks/held_lagrange.py --case medium:25 \\
        --blocks low:1,base:2,high:3 --slice-limit 10
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.held_widened import block_support, held_blocks  # noqa: E402
from benchmarks.lp_gap import _column_slices  # noqa: E402
from benchmarks.slice_lagrange import Evaluation, SliceLagrangian, lp_duals  # noqa: E402
from solver.solve.held_blocks import HeldBlocks  # noqa: E402


def hour_split(blocks: HeldBlocks, i: int, slice_limit_s: float, at_duals: bool
               ) -> tuple[float, Evaluation]:
    """Held block ``i``'s LP and its hour-split bound at zero multipliers (``at_duals``: at
    the LP's duals), each hour to proof or ``slice_limit_s``."""
    bs = block_support(blocks, i, 0.0, 0.02)
    assert bs.relaxed.objective is not None
    assert not bs.model.cost[_column_slices(bs.program, bs.model) == -1].any(), (
        "an all-day column with a cost: zero multipliers are then not the relaxation")
    lag = SliceLagrangian(bs.model, slice_limit_s=slice_limit_s)
    lag.split(_column_slices(bs.program, bs.model))
    if at_duals:
        lam, mu = lag.from_duals(lp_duals(bs.model)[1])
    else:
        lam = np.zeros((lag.slices, len(lag.all_day)))
        mu = np.zeros(len(lag.spanning))
    return bs.relaxed.objective, lag.evaluate(lam, mu)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--blocks", default="low:1,base:2,high:3")
    p.add_argument("--slice-limit", type=float, default=10.0)
    p.add_argument("--duals", action="store_true", help="also at the LP's duals")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    blocks, _ = held_blocks(size, scale)
    data = blocks.hp.data
    for name in (b for b in args.blocks.split(",") if b):
        scenario, period = name.split(":")
        i = next(j for j, b in enumerate(data.blocks)
                 if (b.scenario, b.period) == (scenario, int(period)))
        weight = blocks.block(i).weight
        for at_duals in (False, True)[:2 if args.duals else 1]:
            began = time.perf_counter()
            lp, ev = hour_split(blocks, i, args.slice_limit, at_duals)
            print(f"block {i} ({scenario}, period {period}) at "
                  f"{'the LP duals' if at_duals else 'zero'}: LP {lp / weight:,.0f}, bound "
                  f"{ev.bound / weight:,.0f} ({ev.bound / lp:.3f}); hours' gaps "
                  f"{ev.slice_gaps.sum() / weight:,.0f} a month; "
                  f"{time.perf_counter() - began:.1f} s, {ev.seconds:.1f} CPU-s; load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
