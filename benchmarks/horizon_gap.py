"""Where the gap of a plan over periods comes from: the bound or the fleet (issue 16).

For the harness's multi-period case (``bench_quarterly.quarterly`` on a generated size, shared
nodes unless ``--dedicated``), one measurement after another in this process:

1. ``lp``: the LP relaxation of the whole joint program (every block, every order), and the
   bound the plan takes from its blocks alone (each block priced as
   ``horizon._priced_block`` prices it, its LP relaxation, Σ p × months × LP − credit);
2. ``plan``: ``plan_horizon`` at ``--limit`` (as ``fleetplan plan`` plans it): its fleet and bound;
3. ``long``: ``plan_horizon`` at ``--long-limit``: the best fleet of a longer run, and its bound.

Each fleet's expected cost (and the LP's) is split into what the blocks of each period run
(elastic capacity: on-demand and spot, × the period's months) and what the orders cost (whole
terms), expected over the demand scenarios: where the fleet pays more than the LP says.

Run (from the repository root; about ``--limit + --long-limit`` plus a few minutes)::

    nice -n 10 .venv/bin/python benchmarks/horizon_gap.py --case medium:25 --limit 120 \\
        --long-limit 600
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import _cpu_s, parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from models.plan import Plan  # noqa: E402
from solver.capacity.table import cached_tables  # noqa: E402
from solver.program.periods import (  # noqa: E402
    HorizonProgram,
    build_horizon_data,
    build_horizon_program,
)
from solver.program.variables import NameBook, Program, Variables  # noqa: E402
from solver.solve import horizon  # noqa: E402
from solver.solve.block_plans import lp_bound  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import model_of, run  # noqa: E402

Split = dict[str, float]


def split(hp: HorizonProgram, value: dict[str, float]) -> Split:
    """Expected cost by part: elastic capacity per period (× months), orders, total."""
    out: Split = {}
    for s in hp.data.scenarios:
        for p in hp.data.periods:
            cost = hp.blocks[(s.name, p.index)].v.cost
            elastic = sum(c * value.get(v.name, 0.0) for v, c in cost.items())
            key = f"elastic Q{p.index + 1}"
            out[key] = out.get(key, 0.0) + s.probability * p.months * elastic
        orders = sum(hp.data.order_cost(k) * value.get(var.name, 0.0)
                     for (name, k), var in hp.orders.items() if name == s.name)
        out["orders"] = out.get("orders", 0.0) + s.probability * orders
    out["total"] = sum(out.values())
    return out


def lp(hp: HorizonProgram) -> tuple[float, Split, float]:
    """The joint LP relaxation: its optimum, its split, seconds."""
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    model = model_of(program)
    started = time.perf_counter()
    result = run(model, Deadline(1800.0), 1800.0, 0.0, relaxation=True)
    seconds = time.perf_counter() - started
    assert result.x is not None and result.objective is not None
    values = {v.name: float(x) for v, x in zip(model.variables, result.x, strict=True)}
    return result.objective, split(hp, values), seconds


def blocks_bound(hp: HorizonProgram) -> tuple[float, float]:
    """Σ p × months × (LP of the priced block) − credit, and seconds."""
    started = time.perf_counter()
    seen: list[tuple[object, float]] = []
    total = 0.0
    prob = {s.name: s.probability for s in hp.data.scenarios}
    for block in hp.data.blocks:
        program, credit = horizon._priced_block(hp.data, block)
        found = next((b for p, b in seen if p == program), None)
        if found is None:
            found = lp_bound(program, "highs", 600.0)
            assert found is not None
            seen.append((program, found))
        total += prob[block.scenario] * (hp.data.periods[block.period].months * found - credit)
    return total, time.perf_counter() - started


def captured_plan(scenario: object, limit_s: float, table_for: object = None
                  ) -> tuple[Plan, HorizonProgram, dict[str, float], float, float]:
    """``plan_horizon`` at ``limit_s`` (``table_for``: as it takes it), its joint program
    caught on its way to ``assemble``, the plan's values of it, and wall and CPU s."""
    captured: list[HorizonProgram] = []
    assemble = horizon.assemble

    def keep(base, sc, hp, robust):  # type: ignore[no-untyped-def]
        captured.append(hp)
        return assemble(base, sc, hp, robust)

    horizon.assemble = keep  # type: ignore[assignment]
    try:
        cpu, started = _cpu_s(), time.perf_counter()
        plan = horizon.plan_horizon(scenario, time_limit_s=limit_s,  # type: ignore[arg-type]
                                    table_for=table_for)  # type: ignore[arg-type]
        wall, cpu = time.perf_counter() - started, _cpu_s() - cpu
    finally:
        horizon.assemble = assemble  # type: ignore[assignment]
    assert plan.horizon is not None and captured
    hp = captured[0]
    values = {v.name: float(v.varValue or 0.0) for v in hp.prob.variables()}
    return plan, hp, values, wall, cpu


def planned(scenario: object, limit_s: float) -> tuple[float, float | None, Split, float, float,
                                                        str]:
    """``plan_horizon`` at ``limit_s``: expected cost, bound, split, wall and CPU s, status."""
    plan, hp, values, wall, cpu = captured_plan(scenario, limit_s)
    assert plan.horizon is not None
    return (plan.horizon.expected_cost, plan.solver.bound, split(hp, values), wall, cpu,
            plan.status.value)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--limit", type=float, default=120.0)
    p.add_argument("--long-limit", type=float, default=600.0)
    p.add_argument("--dedicated", dest="share_nodes", action="store_false")
    p.add_argument("--skip", default="", help="comma-separated: lp, blocks, plan, long")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    skip = set(filter(None, args.skip.split(",")))
    sc = _scenario(size, scale, 0, args.share_nodes)
    print(f"{time.strftime('%H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}",
          flush=True)
    started = time.perf_counter()
    hp = build_horizon_program(build_horizon_data(sc, cached_tables(sc.gpus_sold_or_held())))
    print(f"build {time.perf_counter() - started:.1f} s, {len(hp.prob.variables()):,} columns",
          flush=True)
    columns: dict[str, Split] = {}
    if "lp" not in skip:
        value, parts, seconds = lp(hp)
        print(f"joint LP {value:,.0f} in {seconds:.1f} s", flush=True)
        columns["joint LP"] = parts
    if "blocks" not in skip:
        value, seconds = blocks_bound(hp)
        print(f"blocks' LP bound {value:,.0f} in {seconds:.1f} s", flush=True)
    del hp
    for name, limit in (("plan", args.limit), ("long", args.long_limit)):
        if name in skip:
            continue
        cost, bound, parts, wall, cpu, status = planned(sc, limit)
        print(f"{name} at {limit:g} s: {cost:,.0f} bound {bound:,.0f} ({status}), wall {wall:.1f}"
              f" s, CPU {cpu:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        columns[f"{name} {limit:g} s"] = parts
    names = list(columns)
    print("\n| part (expected over scenarios) | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for part in next(iter(columns.values())) if columns else ():
        print(f"| {part} | " + " | ".join(f"{columns[n][part]:,.0f}" for n in names) + " |")


if __name__ == "__main__":
    main()
