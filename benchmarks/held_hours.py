"""The hour-by-hour pass of a held block with each hour's gap counted on that hour's own cost,
against the planner's pass (gap counted on the whole block's cost), from the same fleet (issue
16: cheaper held-block fleets within a plan's seconds).

The held blocks are :mod:`benchmarks.held_widened`'s (the harness's multi-period case held at
the orders the planner chooses). For each distinct block, its first fleet is found as the
planner finds it: the MIP on its LP's support for ``--first-s`` (to 2 %), or, where that support
holds none, the widened restriction for ``--first-s``. From that one fleet, one after the other
so that all see the same load, each pass of ``--variants`` (``NAME=SECONDS/GAP/SCOPE[/PASS_S]``:
an hour's seconds and gap; SCOPE ``whole``: the gap is of the whole block's cost, as the
planner's :func:`~solver.solve.block_plans.polish_slices` counts it;
``hour``: of the hour's own cost, its ``of_slice``) re-solves the 24 hours, the costliest
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
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.held_widened import (  # noqa: E402
    BlockSupport,
    block_support,
    held_blocks,
    widened_restriction,
)
from solver.solve.block_plans import polish_slices  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.held_blocks import HeldBlocks  # noqa: E402
from solver.solve.highs import run  # noqa: E402
from solver.solve.order_choice import held_block  # noqa: E402

Vector = npt.NDArray[np.float64]

#: The passes compared by default: the planner's (0.2 % of the whole block), then 2 % and 1 %
#: of the hour's own cost [name=s/gap/scope].
VARIANTS = "planner=0.5/0.002/whole,h2pct=0.5/0.02/hour,h1pct=0.5/0.01/hour"


class Variant(NamedTuple):
    """One pass compared: each hour's seconds and gap, whether that gap is of the hour's own
    cost, and the pass's clock."""

    name: str
    slice_s: float
    gap: float
    of_slice: bool
    pass_s: float


class Pass(NamedTuple):
    """A pass's fleet of a held block, its cost (the block's, weighted) and seconds."""

    variant: Variant
    x: Vector
    cost: float
    wall_s: float
    cpu_s: float


def first_fleet(blocks: HeldBlocks, i: int, first_s: float
                ) -> tuple[BlockSupport, Vector | None, str]:
    """Held block ``i``, its first fleet as the planner finds it (the support's MIP, else the
    widened restriction's, each ``first_s`` to 2 %; ``None``: none) and which found it."""
    bs = block_support(blocks, i, first_s, 0.02)
    first, how = bs.support, "support"
    if first.x is None:
        first = run(bs.model, Deadline(first_s), first_s, 0.02,
                    restriction=widened_restriction(bs))
        how = "widened"
    if first.x is None:
        return bs, None, how
    return bs, np.where(bs.model.integer, np.round(first.x), first.x), how


def passes(bs: BlockSupport, x: Vector, variants: list[Variant]) -> list[Pass]:
    """Each variant's hour-by-hour pass from the fleet ``x``, one after the other."""
    assert bs.relaxed.x is not None
    out = []
    for v in variants:
        began, cpu = time.perf_counter(), time.process_time()
        y = polish_slices(bs.program, bs.model, x, bs.relaxed.x, Deadline(v.pass_s), v.slice_s,
                          v.gap, of_slice=v.of_slice)
        out.append(Pass(v, y, bs.model.cost_of(y), time.perf_counter() - began,
                        time.process_time() - cpu))
    return out


def parse_variants(text: str, pass_s: float) -> list[Variant]:
    """``NAME=SECONDS/GAP/SCOPE[/PASS_S],…`` (module docstring)."""
    out = []
    for item in (v for v in text.split(",") if v):
        name, spec = item.split("=")
        seconds, gap, scope, *within = spec.split("/")
        out.append(Variant(name, float(seconds), float(gap), scope == "hour",
                           float(within[0]) if within else pass_s))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--first-s", type=float, default=6.0)
    p.add_argument("--pass-s", type=float, default=12.0)
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
    variants = parse_variants(args.variants, args.pass_s)
    totals = {v.name: [0.0, 0.0, 0.0] for v in variants}  # expected cost, CPU s, LP
    for i in chosen:
        bs, x, how = first_fleet(blocks, i, args.first_s)
        weight, lp = bs.weight, bs.relaxed.objective
        assert lp is not None
        block = data.blocks[i]
        if x is None:
            print(f"block {i} ({block.scenario}, period {block.period}): no first fleet")
            continue
        print(f"block {i} ({block.scenario}, period {block.period}, weight "
              f"{group[i]:.2f}): LP {lp / weight:,.0f} a month; {how} fleet "
              f"{bs.model.cost_of(x) / weight:,.0f} ({bs.model.cost_of(x) / lp:.3f}); load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        for done in passes(bs, x, variants):
            totals[done.variant.name][0] += group[i] * done.cost / weight
            totals[done.variant.name][1] += done.cpu_s
            totals[done.variant.name][2] += group[i] * lp / weight
            print(f"  {done.variant.name}: {done.cost / weight:,.0f} ({done.cost / lp:.3f}); "
                  f"{done.wall_s:.1f} s, {done.cpu_s:.1f} CPU-s", flush=True)
    for name, (cost, used, lp) in totals.items():
        print(f"{name}: expected {cost:,.0f} ({cost / lp:.4f} of the LPs), {used:.1f} CPU-s")


if __name__ == "__main__":
    main()
