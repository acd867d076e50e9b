"""How far a held block's optimum lies above its LP: HiGHS on the whole block for minutes, its
root bound, and the planner's widened restriction beside them (issue 16: fleet or bound?).

The blocks are those of :mod:`benchmarks.held_widened` (the harness's multi-period case held at
the orders the planner chooses). For each block named (``--blocks low:1,base:2,high:3``: demand
scenario and period index, 0 the first quarter), one after the other so that all see the same
load:

- ``LP``: the held block's LP relaxation;
- ``root``: HiGHS on the whole block stopped after its root node (``mip_max_nodes`` 1): the LP
  with the cuts HiGHS adds there, and the fleet its root heuristics find;
- ``widened``: the planner's widened restriction
  (:func:`~benchmarks.held_widened.widened_restriction`) for ``--widened-s`` (its fleet is what
  the planner's pass starts from);
- ``whole``: HiGHS on the whole block for ``--seconds``, no start, its best fleet and bound at
  each of ``--at`` seconds;
- ``hours``: the cheaper of the ``widened`` and ``whole`` fleets with its all-day (committed)
  columns held, each hour's own columns (:func:`~solver.solve.highs.slice_columns`) solved to
  ``PROOF_GAP`` in up to ``--hour-s`` with every other column held (as
  :func:`~solver.solve.block_plans.polish_slices` does, to proof), and the same hour as an LP:
  what the hours cost at best given that committed fleet, against their LP.

Every figure a month (the block's cost divided by its weight) and as a ratio to the LP; wall and
CPU seconds of each solve::

    nice -n 19 .venv/bin/python benchmarks/held_optimum.py --case medium:25 \\
        --blocks low:1,base:2,high:3 --seconds 300
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
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
from models.plan import SolveStatus  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.held_blocks import HeldBlocks  # noqa: E402
from solver.solve.highs import (  # noqa: E402
    Progress,
    RunResult,
    held_model,
    run,
    slice_columns,
)

Vector = npt.NDArray[np.float64]

#: Relative gap at which a solve here stops (proven optimal for this purpose) [1].
PROOF_GAP = 1e-4


def at_checkpoints(seen: list[Progress], marks: list[float]) -> list[tuple[float, Progress | None]]:
    """The last progress report at or before each mark (``None``: none yet)."""
    out: list[tuple[float, Progress | None]] = []
    for mark in marks:
        before = [p for p in seen if p.seconds <= mark]
        out.append((mark, before[-1] if before else None))
    return out


def _money(value: float | None, weight: float, lp: float) -> str:
    if value is None:
        return "none"
    return f"{value / weight:,.0f} ({value / lp:.3f})"


def _timed(solve: Callable[[], RunResult]) -> tuple[RunResult, float, float]:
    """A solve's result, wall and CPU seconds."""
    began, cpu = time.perf_counter(), time.process_time()
    result = solve()
    return result, time.perf_counter() - began, time.process_time() - cpu


def measure(blocks: HeldBlocks, i: int, args: argparse.Namespace) -> None:
    """Print held block ``i``'s LP, root, widened restriction and whole solve."""
    block = blocks.hp.data.blocks[i]
    bs = block_support(blocks, i, 0.0, 0.02)
    assert bs.relaxed.objective is not None
    lp, weight, model = bs.relaxed.objective, bs.weight, bs.model
    print(f"block {i} ({block.scenario}, period {block.period}): {model.columns_count} columns "
          f"({int(model.integer.sum())} integer), {len(model.row_lower)} rows; LP "
          f"{lp / weight:,.0f} a month; load {os.getloadavg()[0]:.1f}", flush=True)
    root, wall, cpu = _timed(functools.partial(run, model, Deadline(args.root_s), args.root_s,
                                               PROOF_GAP, nodes=1))
    print(f"  root: bound {_money(root.bound, weight, lp)}, fleet "
          f"{_money(root.objective, weight, lp)}, {root.status.value}; {wall:.1f} s, "
          f"{cpu:.1f} CPU-s", flush=True)
    wide, wall, cpu = _timed(functools.partial(run, model, Deadline(args.widened_s),
                                               args.widened_s, 0.02,
                                               restriction=widened_restriction(bs)))
    print(f"  widened {args.widened_s:.0f} s: fleet {_money(wide.objective, weight, lp)}, "
          f"restriction's bound {_money(wide.bound, weight, lp)}; {wall:.1f} s, "
          f"{cpu:.1f} CPU-s", flush=True)
    seen: list[Progress] = []
    whole, wall, cpu = _timed(functools.partial(run, model, Deadline(args.seconds), args.seconds,
                                                PROOF_GAP, on_progress=seen.append))
    for mark, at in at_checkpoints(seen, [float(m) for m in args.at.split(",") if m]):
        if at is None:
            print(f"  whole at {mark:.0f} s: no report yet")
            continue
        print(f"  whole at {mark:.0f} s: fleet {_money(at.cost, weight, lp)}, bound "
              f"{_money(at.bound, weight, lp)}")
    print(f"  whole end: fleet {_money(whole.objective, weight, lp)}, bound "
          f"{_money(whole.bound, weight, lp)}, {whole.status.value}, {whole.nodes} nodes; "
          f"{wall:.1f} s, {cpu:.1f} CPU-s; load {os.getloadavg()[0]:.1f}", flush=True)
    fleets = [r for r in (wide, whole) if r.x is not None and r.objective is not None]
    if not fleets or args.hour_s <= 0:
        return
    best = min(fleets, key=lambda r: r.objective or 0.0)
    assert best.x is not None and best.objective is not None
    began, cpu_began = time.perf_counter(), time.process_time()
    hours = exact_hours(bs, np.where(model.integer, np.round(best.x), best.x), args.hour_s)
    fleet_h = sum(h.fleet for h in hours)
    mip_h = sum(h.mip for h in hours)
    lp_h = sum(h.lp for h in hours)
    held = best.objective - fleet_h
    proven = sum(h.proven for h in hours)
    print(f"  hours from the {'widened' if best is wide else 'whole'} fleet: all-day part "
          f"{held / weight:,.0f} a month; the 24 hours as held {fleet_h / weight:,.0f}, at "
          f"best {mip_h / weight:,.0f} ({proven} of {len(hours)} proven), as LPs "
          f"{lp_h / weight:,.0f}: hours' integer ÷ LP {mip_h / lp_h:.3f}; fleet "
          f"{_money(held + mip_h, weight, lp)}; {time.perf_counter() - began:.1f} s, "
          f"{time.process_time() - cpu_began:.1f} CPU-s", flush=True)


class Hour(NamedTuple):
    """One hour's own columns given the rest of a fleet: as held, at best, as an LP."""

    slice: str
    fleet: float
    mip: float
    lp: float
    proven: bool


def exact_hours(bs: BlockSupport, x: Vector, hour_s: float) -> list[Hour]:
    """Each hour of held block ``bs``'s fleet ``x`` re-solved with every other column held:
    to :data:`PROOF_GAP` in up to ``hour_s`` (the cost of its own columns at best, or the
    fleet's where HiGHS finds none cheaper) and as an LP (the cost of its own columns
    [currency]). Hours share only the batch windows' volume rows, held met by the others."""
    model = bs.model
    out = []
    for s, own in sorted(slice_columns(bs.program, model).items()):
        part = held_model(model, own, x)
        as_held = part.model.cost_of(x[part.columns])
        mip = run(part.model, Deadline(hour_s), hour_s, PROOF_GAP, start=x[part.columns])
        relaxed = run(part.model, Deadline(hour_s), hour_s, 0.0, relaxation=True)
        assert relaxed.objective is not None, f"hour {s}: no LP"
        best = as_held if mip.objective is None else min(mip.objective, as_held)
        out.append(Hour(s, as_held, best, relaxed.objective,
                        mip.status is SolveStatus.optimal))
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--blocks", default="low:1,base:2,high:3")
    p.add_argument("--seconds", type=float, default=300.0)
    p.add_argument("--root-s", type=float, default=120.0)
    p.add_argument("--widened-s", type=float, default=10.0)
    p.add_argument("--at", default="10,30,60,120,300")
    p.add_argument("--hour-s", type=float, default=10.0, help="0: no hour-by-hour step")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    blocks, _ = held_blocks(size, scale)
    for name in (b for b in args.blocks.split(",") if b):
        scenario, period = name.split(":")
        measure(blocks, next(j for j, b in enumerate(blocks.hp.data.blocks)
                             if (b.scenario, b.period) == (scenario, int(period))), args)


if __name__ == "__main__":
    main()
