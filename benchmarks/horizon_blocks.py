"""Where a plan over periods loses against its relaxation, block by block (issue 16).

Plans the harness's multi-period case (``bench_quarterly.quarterly`` on a generated size,
shared nodes unless ``--dedicated``) at ``--limit`` as ``fleetplan plan`` plans it, takes its
orders and each block's fleet, and for each distinct block as
:func:`~solver.solve.order_choice.held_block` makes it with those orders (each committed pool
free, stocked with what the orders hold): the plan's fleet of it (cost a month), its LP
relaxation, HiGHS on the whole block from that fleet for ``--whole-s`` (its fleet and bound;
0: not run), and :func:`~solver.solve.block_plans.polish_slices` from that fleet, one pass
over every slice, at each ``--slice SECONDS:GAP`` (per slice, the gap of the whole block's
cost as this script has always counted it; the fleet found and the pass's seconds). The
last row is each column's expected elastic cost, Σ over blocks of probability × months × the
block's figure.

Run (from the repository root; the plan's limit plus about a minute a block per setting)::

    nice -n 5 .venv/bin/python benchmarks/horizon_blocks.py --case medium:25 --limit 120 \\
        --whole-s 30 --slice 0.5:0.002 --slice 1:0.001
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

import numpy as np  # noqa: E402

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.periods import HorizonProgram  # noqa: E402
from solver.solve import horizon  # noqa: E402
from solver.solve.block_plans import BLOCK_FAMILIES, holds_in, polish_slices  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import model_of, run  # noqa: E402
from solver.solve.order_choice import held_block  # noqa: E402


@dataclass
class Row:
    """One distinct held block: its names, weight (Σ probability × months of the blocks it
    stands for) and figures a month."""

    blocks: str
    weight: float
    fleet: float
    lp: float
    whole: tuple[float, float] | None = None
    """HiGHS on the whole block from the fleet: fleet, bound."""
    polished: list[tuple[float, float]] = field(default_factory=list)
    """Per ``--slice`` setting: the fleet after one pass, the pass's seconds."""


def held_rows(hp: HorizonProgram, values: dict[str, float], whole_s: float,
              slices: list[tuple[float, float]]) -> list[Row]:
    """The rows of each distinct block of ``hp`` held at the orders of ``values`` (a fleet of
    the joint program, names as it names them)."""
    data = hp.data
    orders = {(s, k): n for (s, k), var in hp.orders.items()
              if (n := round(values.get(var.name, 0.0))) > 0}
    probability = {s.name: s.probability for s in data.scenarios}
    rows: list[tuple[object, Row]] = []
    for i, block in enumerate(data.blocks):
        held = held_block(data, block, orders)
        weight = probability[block.scenario] * data.periods[block.period].months
        name = f"{block.scenario} Q{block.period + 1}"
        seen = next((r for d, r in rows if d == held), None)
        if seen is not None:
            seen.blocks += f", {name}"
            seen.weight += weight
            continue
        program = build_program(held, families=BLOCK_FAMILIES, symmetry=False)
        model = model_of(program)
        own = {n[len(f"b{i}_"):]: v for n, v in values.items() if n.startswith(f"b{i}_")}
        x = model.vector(own)
        relaxed = run(model, Deadline(600.0), 600.0, 0.0, relaxation=True)
        assert relaxed.x is not None and relaxed.objective is not None
        row = Row(name, weight, float(model.cost @ x), relaxed.objective)
        if whole_s > 0:
            found = run(model, Deadline(whole_s), whole_s, 1e-4, start=x)
            if found.objective is not None and found.bound is not None:
                row.whole = (found.objective, found.bound)
        for slice_s, gap in slices:
            started = time.perf_counter()
            y = polish_slices(program, model, x, relaxed.x, Deadline(3600.0), slice_s, gap,
                              of_slice=False)
            assert holds_in(program, model.named(y))
            row.polished.append((float(model.cost @ y), time.perf_counter() - started))
        rows.append((held, row))
        print(f"{name}: {row}", flush=True)
    return [r for _, r in rows]


def markdown(rows: list[Row], slices: list[tuple[float, float]]) -> list[str]:
    """The rows as a table, then the expected elastic cost of each column."""
    head = ["blocks", "fleet $/month", "LP", "fleet ÷ LP"]
    if any(r.whole for r in rows):
        head.append("HiGHS whole: fleet, bound")
    head += [f"slices {s:g} s, {g:g}: fleet (s)" for s, g in slices]
    out = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for r in rows:
        ratio = "—" if r.lp <= 0 else f"{r.fleet / r.lp:.3f}"
        cells = [r.blocks, f"{r.fleet:,.0f}", f"{r.lp:,.0f}", ratio]
        if "HiGHS whole: fleet, bound" in head:
            cells.append("—" if r.whole is None else f"{r.whole[0]:,.0f}, {r.whole[1]:,.0f}")
        cells += [f"{c:,.0f} ({t:.1f})" for c, t in r.polished]
        out.append("| " + " | ".join(cells) + " |")
    total = ["expected elastic", f"{sum(r.weight * r.fleet for r in rows):,.0f}",
             f"{sum(r.weight * r.lp for r in rows):,.0f}", ""]
    if "HiGHS whole: fleet, bound" in head:
        whole = [(r.weight, *(r.whole or (np.nan, np.nan))) for r in rows]
        total.append(", ".join(f"{sum(w[0] * w[k] for w in whole):,.0f}" for k in (1, 2)))
    total += [f"{sum(r.weight * r.polished[j][0] for r in rows):,.0f}" for j in range(len(slices))]
    out.append("| " + " | ".join(total) + " |")
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--limit", type=float, default=120.0)
    p.add_argument("--whole-s", type=float, default=0.0)
    p.add_argument("--slice", action="append", default=[], help="SECONDS:GAP per slice")
    p.add_argument("--dedicated", dest="share_nodes", action="store_false")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    slices = [(float(a), float(b)) for a, b in (s.split(":") for s in args.slice)]
    sc = _scenario(size, scale, 0, args.share_nodes)
    print(f"{time.strftime('%H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}",
          flush=True)
    captured: list[HorizonProgram] = []
    assemble = horizon.assemble

    def keep(base, scenario, hp, robust):  # type: ignore[no-untyped-def]
        captured.append(hp)
        return assemble(base, scenario, hp, robust)

    horizon.assemble = keep  # type: ignore[assignment]
    try:
        plan = horizon.plan_horizon(sc, time_limit_s=args.limit)
    finally:
        horizon.assemble = assemble  # type: ignore[assignment]
    assert plan.horizon is not None and captured
    hp = captured[0]
    print(f"plan at {args.limit:g} s: {plan.horizon.expected_cost:,.0f}, bound "
          f"{plan.solver.bound:,.0f} ({plan.status.value})", flush=True)
    values = {v.name: float(v.varValue or 0.0) for v in hp.prob.variables()}
    rows = held_rows(hp, values, args.whole_s, slices)
    print("\n".join(["", *markdown(rows, slices)]))


if __name__ == "__main__":
    main()
