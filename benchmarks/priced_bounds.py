"""The bound of a plan over periods from its priced blocks' branch and bound, not their LPs
(issue 16: how much bound the blocks' integrality gives).

``horizon._priced_block`` makes each block a single-period program whose committed pools are
priced at their cheapest usable order's charge per period; Σ over blocks of p × months × (a
lower bound of that program's integer optimum) − its inventory credit bounds the joint program
(the docstring of ``_priced_block``). The planner takes each priced block's LP; here each
distinct priced block is solved by HiGHS for ``--seconds`` (no start) and its proven bound read
at each of ``--at``; the sum at each mark is printed beside the LP sum.

Run (from the repository root; about ten × ``--seconds``)::

    nice -n 19 .venv/bin/python benchmarks/priced_bounds.py --case medium:25 --seconds 120
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import _cpu_s, parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from solver.capacity.table import cached_tables  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.periods import HorizonData, build_horizon_data  # noqa: E402
from solver.solve import horizon  # noqa: E402
from solver.solve.block_plans import BLOCK_FAMILIES, lp_bound  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import Progress, model_of, run  # noqa: E402


def marks_of(text: str) -> list[float]:
    """``"10,30,60"`` → ``[10.0, 30.0, 60.0]``."""
    return [float(x) for x in text.split(",") if x]


def block_bounds(program: object, seconds: float, marks: list[float]
                 ) -> tuple[list[float | None], float | None, float | None, float, float]:
    """HiGHS on one priced block for ``seconds``: its bound at each mark (the last reported
    before it; the final one where the solve ended before it), its final bound and best
    fleet, wall and CPU seconds."""
    model = model_of(build_program(program, families=BLOCK_FAMILIES,  # type: ignore[arg-type]
                                   symmetry=False))
    seen: list[tuple[float, float | None]] = []

    def heard(p: Progress) -> None:
        seen.append((p.seconds, p.bound))

    cpu, started = _cpu_s(), time.perf_counter()
    result = run(model, Deadline(seconds), seconds, 1e-4, on_progress=heard)
    wall, cpu = time.perf_counter() - started, _cpu_s() - cpu
    at = []
    for m in marks:  # a solve that ended before the mark: its final bound
        known = [b for s, b in seen if s <= m and b is not None]
        at.append(result.bound if m >= wall else known[-1] if known else None)
    return at, result.bound, result.objective, wall, cpu


class PricedBound(NamedTuple):
    """One distinct priced block: its weight in the bound (Σ p × months over the blocks equal
    to it), LP, bound at each mark, final bound, best fleet, wall and CPU seconds."""

    name: str
    weight: float
    lp: float
    at: list[float | None]
    bound: float
    fleet: float | None
    wall_s: float
    cpu_s: float


def priced_bound(data: HorizonData, seconds: float, marks: list[float]
                 ) -> tuple[list[PricedBound], float, list[float], float]:
    """Each distinct priced block solved by HiGHS for ``seconds``; the blocks' bound from
    their LPs, from their B&B bounds at each mark, and at the end (Σ p × (months × bound −
    credit), the bound ``horizon_start`` takes with the LP in the bound's place)."""
    prob = {s.name: s.probability for s in data.scenarios}
    priced = [horizon._priced_block(data, b) for b in data.blocks]
    distinct: list[int] = []
    of: list[int] = []
    for i, (program, _) in enumerate(priced):
        same = next((j for j in distinct if priced[j][0] == program), None)
        if same is None:
            distinct.append(i)
            same = i
        of.append(same)
    rows: dict[int, PricedBound] = {}
    for i in distinct:
        program = priced[i][0]
        found = lp_bound(program, "highs", 600.0)
        assert found is not None
        marks_at, bound, fleet, wall, cpu = block_bounds(program, seconds, marks)
        block = data.blocks[i]
        weight = sum(prob[data.blocks[j].scenario] * data.periods[data.blocks[j].period].months
                     for j, k in enumerate(of) if k == i)
        rows[i] = PricedBound(f"{block.scenario} Q{block.period + 1}", weight, found, marks_at,
                              found if bound is None else max(bound, found), fleet, wall, cpu)

    def total(bound_of: Callable[[PricedBound], float]) -> float:
        return sum(prob[b.scenario] * (data.periods[b.period].months * bound_of(rows[of[i]])
                                       - priced[i][1]) for i, b in enumerate(data.blocks))

    return (list(rows.values()), total(lambda r: r.lp),
            [total(lambda r, k=k: max(r.lp, r.at[k] or 0.0))  # type: ignore[misc]
             for k in range(len(marks))], total(lambda r: r.bound))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--seconds", type=float, default=120.0)
    p.add_argument("--at", default="10,30,60,120")
    p.add_argument("--dedicated", dest="share_nodes", action="store_false")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    marks = [m for m in marks_of(args.at) if m <= args.seconds]
    sc = _scenario(size, scale, 0, args.share_nodes)
    print(f"{time.strftime('%H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}",
          flush=True)
    data = build_horizon_data(sc, cached_tables(sc.gpus_sold_or_held()))
    rows, lp_total, at_marks, final = priced_bound(data, args.seconds, marks)
    print("| block | weight | LP | " + " | ".join(f"bound at {m:g} s" for m in marks)
          + f" | bound at {args.seconds:g} s (÷ LP) | fleet | wall / CPU s |")
    print("|---|---:|---:|" + "---:|" * (len(marks) + 3))
    for r in rows:
        print(f"| {r.name} | {r.weight:.1f} | {r.lp:,.0f} | "
              + " | ".join("—" if b is None else f"{b:,.0f}" for b in r.at)
              + f" | {r.bound:,.0f} ({r.bound / r.lp:.4f}) | "
              + ("—" if r.fleet is None else f"{r.fleet:,.0f}")
              + f" | {r.wall_s:.0f} / {r.cpu_s:.0f} |")
    print(f"\nblocks' LP bound {lp_total:,.0f}")
    for m, value in zip(marks, at_marks, strict=True):
        print(f"blocks' B&B bound at {m:g} s each: {value:,.0f}")
    print(f"blocks' B&B bound at {args.seconds:g} s each: {final:,.0f}; "
          f"{time.strftime('%H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
