"""The best fleet and the best bound known of a plan over periods: the plan, then its joint
program solved from the plan's fleet for many minutes (issue 16).

For the harness's multi-period case (``bench_quarterly.quarterly`` on a generated size, shared
nodes unless ``--dedicated``):

1. ``plan_horizon`` at ``--limit`` (as ``fleetplan plan`` plans it): its fleet, its bound;
2. HiGHS on the same joint program from that fleet (:func:`solver.solve.horizon.joint_solve`,
   no node limit, gap ``--gap``) for ``--long-s`` seconds, its best fleet and bound printed
   every ``--every-s`` seconds;
3. each fleet's expected cost split as ``horizon_gap.split`` splits it (elastic capacity per
   quarter, orders), beside the plan's.

The plan's gap is (plan − plan's bound) / plan; with the long run's best fleet F and best
bound B, the fleet slack is (plan − F) / plan and the bound slack (B − plan's bound) / plan,
and what is left, (F − B) / plan, is not attributed (the optimum lies between B and F).

Run (from the repository root; about ``--limit + --long-s`` plus a minute)::

    nice -n 19 .venv/bin/python benchmarks/horizon_long.py --case medium:25 --limit 120 \\
        --long-s 1800 [--save fleet.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import _cpu_s, parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from benchmarks.horizon_gap import Split, captured_plan, split  # noqa: E402
from solver.program.periods import HorizonProgram  # noqa: E402
from solver.program.variables import NameBook, Program, Variables  # noqa: E402
from solver.solve import horizon  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import Progress  # noqa: E402


def _stamp() -> str:
    return f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}"


def plan_and_program(scenario: object, limit_s: float, table_for: object = None
                     ) -> tuple[HorizonProgram, dict[str, float], float, float | None]:
    """``plan_horizon`` at ``limit_s`` (``table_for``: as it takes it): its joint program, the
    plan's values of it, its expected cost and bound."""
    plan, hp, values, wall, cpu = captured_plan(scenario, limit_s, table_for)
    assert plan.horizon is not None
    print(f"plan at {limit_s:g} s: {plan.horizon.expected_cost:,.0f}, bound "
          f"{plan.solver.bound or 0:,.0f} ({plan.status.value}, gap "
          f"{100 * (plan.solver.gap or 0):.2f} %), wall {wall:.1f} s, CPU {cpu:.1f} s; "
          f"{_stamp()}", flush=True)
    for stage in plan.solver.stages:
        print(f"  stage {stage.name}: {stage.seconds:.1f} s, cost {stage.cost_after or 0:,.0f},"
              f" bound {stage.bound_after or 0:,.0f}", flush=True)
    return hp, values, plan.horizon.expected_cost, plan.solver.bound


def long_solve(hp: HorizonProgram, start: dict[str, float], long_s: float, gap: float,
               every_s: float) -> tuple[float | None, float | None, Split | None]:
    """The joint program from ``start`` for ``long_s`` seconds: best cost, bound, split."""
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    last = [0.0]

    def heard(p: Progress) -> None:
        if p.seconds - last[0] >= every_s:
            last[0] = p.seconds
            print(f"  {p.seconds:7.0f} s: fleet {p.cost or 0:,.0f} bound {p.bound or 0:,.0f}"
                  f" ({_stamp()})", flush=True)

    cpu, started = _cpu_s(), time.perf_counter()
    outcome = horizon.joint_solve(program, Deadline(long_s), gap, start, nodes=None,
                                  on_progress=heard)
    wall, cpu = time.perf_counter() - started, _cpu_s() - cpu
    report = outcome.report
    print(f"long joint solve: {report.objective or 0:,.0f}, bound {report.bound or 0:,.0f} "
          f"({outcome.status.value}), wall {wall:.1f} s, CPU {cpu:.1f} s; {_stamp()}",
          flush=True)
    parts = None
    if outcome.has_solution:
        parts = split(hp, {v.name: float(v.varValue or 0.0) for v in hp.prob.variables()})
    return report.objective, report.bound, parts


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--limit", type=float, default=120.0)
    p.add_argument("--long-s", type=float, default=1800.0)
    p.add_argument("--gap", type=float, default=1e-4)
    p.add_argument("--every-s", type=float, default=60.0)
    p.add_argument("--dedicated", dest="share_nodes", action="store_false")
    p.add_argument("--save", type=Path, help="the long run's best fleet (values by column), JSON")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    sc = _scenario(size, scale, 0, args.share_nodes)
    print(f"start {_stamp()}", flush=True)
    hp, values, cost, bound = plan_and_program(sc, args.limit)
    plan_parts = split(hp, values)
    best, best_bound, parts = long_solve(hp, values, args.long_s, args.gap, args.every_s)
    if args.save is not None:
        args.save.write_text(json.dumps({v.name: float(v.varValue or 0.0)
                                         for v in hp.prob.variables() if v.varValue}))
    columns = {"plan": plan_parts} | ({"long": parts} if parts is not None else {})
    print("\n| part (expected over scenarios) | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for part in plan_parts:
        print(f"| {part} | " + " | ".join(f"{c[part]:,.0f}" for c in columns.values()) + " |")
    if bound is not None and best is not None and best_bound is not None:
        print(f"\nplan gap {100 * (cost - bound) / cost:.2f} %: fleet slack "
              f"{100 * (cost - best) / cost:.2f} %, bound slack "
              f"{100 * (max(best_bound, bound) - bound) / cost:.2f} %, unattributed "
              f"{100 * (best - max(best_bound, bound)) / cost:.2f} %")


if __name__ == "__main__":
    main()
