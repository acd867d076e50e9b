"""The held blocks whose LP support holds no fleet, planned as the planner plans them
(:func:`~solver.solve.block_plans.lp_support_held`), with and without the widened restriction
started from the block's greedy fleet (``block_plans.WIDEN_SEED``), one after the other so that
both see about the same load (the order alternating from block to block).

The harness's multi-period case is held at the orders the planner chooses
(:func:`benchmarks.held_widened.held_blocks`); each distinct block is given what
:func:`~solver.solve.block_plans.plan_block` gives it in a share of ``--seconds``: its LP
support at least ``LP_SUPPORT_MIN_S``, the widened restriction ``--seconds``, its polish in
what that leaves. Each line: the fleet a month and as a ratio to the block's LP, which step's
fleet it is (``highs``: the restriction's, ``greedy``: the floor), wall and CPU seconds::

    nice -n 19 .venv/bin/python benchmarks/widened_seed.py --case medium:25 --seconds 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.held_widened import block_support, held_blocks  # noqa: E402
from solver.solve import block_plans  # noqa: E402
from solver.solve.order_choice import held_block  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--gap", type=float, default=0.02)
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    blocks, distinct = held_blocks(size, scale)
    data = blocks.hp.data
    flip = False
    for i in distinct:
        bs = block_support(blocks, i, args.seconds, args.gap)
        if bs.support.x is not None:
            continue  # the planner keeps the support's fleet here: no widened restriction
        assert bs.relaxed.objective is not None
        lp = bs.relaxed.objective / bs.weight
        own = held_block(data, data.blocks[i], blocks.orders)
        line = [f"block {i} ({data.blocks[i].scenario}, period {data.blocks[i].period}): "
                f"LP {lp:,.0f}"]
        for seeded in ((False, True) if not flip else (True, False)):
            block_plans.WIDEN_SEED = seeded
            support_s = max(args.seconds, block_plans.LP_SUPPORT_MIN_S)
            began, cpu = time.perf_counter(), time.process_time()
            _, values, outcome = block_plans.lp_support_held(
                blocks.block(i), own, support_s, args.gap, widened_s=args.seconds,
                polish_s=support_s + block_plans.POLISH_EXTRA_S)
            cost = outcome.report.objective
            shown = "none" if values is None or cost is None else (
                f"{cost:,.0f} ({cost / lp:.3f})")
            line.append(f"{'seeded' if seeded else 'main'} {shown} {outcome.report.name} "
                        f"{time.perf_counter() - began:.1f} s {time.process_time() - cpu:.1f} "
                        f"CPU-s")
        flip = not flip
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main()
