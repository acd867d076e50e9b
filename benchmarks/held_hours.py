"""The hour-by-hour pass of a held block with each hour's gap counted on that hour's own cost,
against the planner's pass (gap counted on the whole block's cost), from the same fleet (issue
16: cheaper held-block fleets within a plan's seconds).

The held blocks are :mod:`benchmarks.held_widened`'s (the harness's multi-period case held at
the orders the planner chooses). For each distinct block, its first fleet is found as the
planner finds it: the MIP on its LP's support for ``--first-s`` (to 2 %), or, where that support
holds none, the widened restriction for ``--first-s``. From that one fleet, one after the other
so that all see the same load, each pass of ``--variants`` (``NAME=SECONDS/GAP/SCOPE[/PASS_S]``:
an hour's seconds and gap; SCOPE ``whole``: the gap is of the whole block's cost, as the
planner's :func:`~solver.solve.block_plans.polish_slices` counted it until 2026-12-04;
``hour``: of the hour's own cost, as it counts it now) re-solves the 24 hours, the costliest
above the LP first, each with every other column held, within PASS_S (default ``--pass-s``).

Each line: the fleet a month, as a ratio to the block's LP, the pass's wall and CPU seconds;
the last lines the sums over the distinct blocks in the plan's expected
cost (each block's fleet a month times its weight and the weights of the blocks equal to it)::

    nice -n 19 .venv/bin/python benchmarks/held_hours.py --case medium:25 --first-s 6 \\
        --pass-s 12
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
from benchmarks.held_widened import block_support, held_blocks, widened_restriction  # noqa: E402
from solver.solve.block_plans import polish_slices  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import run  # noqa: E402
from solver.solve.order_choice import held_block  # noqa: E402

#: The passes compared by default: the planner's before 2026-12-04 (0.2 % of the whole block),
#: then 2 % and 1 % of the hour's own cost [name=s/gap/scope].
VARIANTS = "planner=0.5/0.002/whole,h2pct=0.5/0.02/hour,h1pct=0.5/0.01/hour"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--first-s", type=float, default=6.0)
    p.add_argument("--pass-s", type=float, default=8.0)
    p.add_argument("--variants", default=VARIANTS)
    p.add_argument("--blocks", default="", help="comma-separated block indices (default all "
                                                "distinct)")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    blocks, distinct = held_blocks(size, scale)
    data = blocks.hp.data
    same = [held_block(data, b, blocks.orders) for b in data.blocks]
    # each distinct block's weight in the expected cost, with the blocks equal to it [month]
    group = {i: sum(blocks.block(j).weight for j in range(len(same)) if same[j] == same[i])
             for i in distinct}
    chosen = [int(b) for b in args.blocks.split(",") if b] or distinct
    variants = []
    for item in (v for v in args.variants.split(",") if v):
        name, spec = item.split("=")
        seconds, gap, scope, *within = spec.split("/")
        variants.append((name, float(seconds), float(gap), scope == "hour",
                         float(within[0]) if within else args.pass_s))
    totals = {name: [0.0, 0.0, 0.0] for name, *_ in variants}  # expected cost, CPU s, LP
    for i in chosen:
        bs = block_support(blocks, i, args.first_s, 0.02)
        model, program, weight, relaxed = bs.model, bs.program, bs.weight, bs.relaxed
        assert relaxed.x is not None and relaxed.objective is not None
        first, how = bs.support, "support"
        if first.x is None:
            first = run(model, Deadline(args.first_s), args.first_s, 0.02,
                        restriction=widened_restriction(bs))
            how = "widened"
        block = blocks.hp.data.blocks[i]
        lp = relaxed.objective
        if first.x is None:
            print(f"block {i} ({block.scenario}, period {block.period}): no first fleet")
            continue
        x = np.where(model.integer, np.round(first.x), first.x)
        print(f"block {i} ({block.scenario}, period {block.period}, weight "
              f"{group[i]:.2f}): LP {lp / weight:,.0f} a month; {how} fleet "
              f"{model.cost_of(x) / weight:,.0f} ({model.cost_of(x) / lp:.3f}); load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        for name, seconds, gap, hour, pass_s in variants:
            began, cpu = time.perf_counter(), time.process_time()
            y = polish_slices(program, model, x, relaxed.x, Deadline(pass_s), seconds,
                              gap, of_slice=hour)
            wall, used = time.perf_counter() - began, time.process_time() - cpu
            cost = model.cost_of(y)
            totals[name][0] += group[i] * cost / weight
            totals[name][1] += used
            totals[name][2] += group[i] * lp / weight
            print(f"  {name}: {cost / weight:,.0f} ({cost / lp:.3f}); {wall:.1f} s, "
                  f"{used:.1f} CPU-s", flush=True)
    for name, (cost, used, lp) in totals.items():
        print(f"{name}: expected {cost:,.0f} ({cost / lp:.4f} of the LPs), {used:.1f} CPU-s")


if __name__ == "__main__":
    main()
