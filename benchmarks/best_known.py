"""Long runs for the best fleet known per scenario, and where a plan's gap comes from.

For each case (a size of benchmarks/generate.py at a demand scale, shared nodes, seed 0), in
this process and one after the other (run at most one at a time on a shared machine):

1. the program's LP relaxation: the bound the plan starts from;
2. the plan's solve (:func:`solver.solve.strategy.solve_shared`) at ``--plan-limit``: its fleet,
   bound and stages;
3. HiGHS on the whole program from the plan's fleet for ``--long-limit`` seconds (same options
   as the plan's joint solve: threads, seed; gap ``--long-gap``): the best fleet and bound known.

It then splits the plan's gap, (plan − bound) ÷ plan, into the part the long run's fleet closes
(plan − best fleet) ÷ plan — the fleet's share — and the rest, (best fleet − plan's bound) ÷ plan,
which only a higher bound can close (as far as the long run shows: its bound says how much of the
rest is the fleet's still).

Run (from the repository root)::

    .venv/bin/python benchmarks/best_known.py --cases medium:25 --long-limit 600 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package


@dataclass
class LongRun:
    """One case: the LP bound, the plan at its limit, and the long run from the plan's fleet."""

    case: str
    lp_bound: float | None = None
    lp_s: float = 0.0
    plan_cost: float | None = None
    plan_bound: float | None = None
    plan_s: float = 0.0
    plan_stages: str = ""
    long_cost: float | None = None
    long_bound: float | None = None
    long_status: str = ""
    long_s: float = 0.0
    cpu_s: float = 0.0
    load_before: float = 0.0
    load_after: float = 0.0

    def split(self) -> dict[str, float | None]:
        """The plan's gap and its parts, as shares of the plan's cost [1]."""
        if self.plan_cost is None or self.plan_bound is None:
            return {}
        best = min(c for c in (self.plan_cost, self.long_cost) if c is not None)
        bound = max(b for b in (self.plan_bound, self.long_bound) if b is not None)
        return {"plan_gap": (self.plan_cost - self.plan_bound) / self.plan_cost,
                "fleet_closed": (self.plan_cost - best) / self.plan_cost,
                "bound_raised": (bound - self.plan_bound) / self.plan_cost,
                "open": (best - bound) / self.plan_cost}


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def long_run(size: str, scale: int, plan_limit_s: float, long_limit_s: float, gap: float,
             long_gap: float, seed: int) -> LongRun:
    """Measure one case (see the module's docstring)."""
    import numpy as np

    from benchmarks.generate import generate_scenario
    from solver.capacity.table import build_capacity_table
    from solver.program.data import build_program_data
    from solver.solve.clock import Deadline
    from solver.solve.highs import model_of, run
    from solver.solve.strategy import solve_shared

    out = LongRun(case=f"{size} ×{scale}", load_before=os.getloadavg()[0])
    scenario = generate_scenario(size, seed, scale)
    data = build_program_data(scenario, build_capacity_table(scenario))
    started = time.perf_counter()
    program, outcome = solve_shared(data, "highs", plan_limit_s, gap)
    out.plan_s = time.perf_counter() - started
    out.plan_cost, out.plan_bound = outcome.report.objective, outcome.report.bound
    out.plan_stages = "; ".join(f"{s.name} {s.seconds:.1f}s {s.cost_after or 0:,.0f}"
                                for s in outcome.report.stages)
    model = model_of(program)
    x = np.array([float(v.varValue or 0.0) for v in model.variables])
    lp = run(model, Deadline(long_limit_s), long_limit_s, gap, relaxation=True)
    out.lp_bound, out.lp_s = lp.bound, lp.seconds
    long = run(model, Deadline(long_limit_s), long_limit_s, long_gap,
               start=x if outcome.has_solution else None)
    out.long_s = long.seconds
    out.long_status = long.status.value
    if long.x is not None and not model.broken_rows(np.where(model.integer, np.round(long.x),
                                                             long.x)):
        out.long_cost = long.objective
    out.long_bound = long.bound
    out.cpu_s = _cpu_s()
    out.load_after = os.getloadavg()[0]
    return out


def _money(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f}%"


def markdown(runs: list[LongRun], long_limit_s: float) -> str:
    head = ("| case | LP bound | plan $ | plan bound | plan gap | long-run $ | long-run bound | "
            "fleet share of the gap | bound raised | still open | long s | CPU s | load |")
    lines = [head, "|" + "---|" * 13]
    for r in runs:
        s = r.split()
        lines.append(
            f"| {r.case} | {_money(r.lp_bound)} | {_money(r.plan_cost)} | {_money(r.plan_bound)} "
            f"| {_pct(s.get('plan_gap'))} | {_money(r.long_cost)} | {_money(r.long_bound)} "
            f"| {_pct(s.get('fleet_closed'))} | {_pct(s.get('bound_raised'))} "
            f"| {_pct(s.get('open'))} | {r.long_s:.0f} | {r.cpu_s:.0f} "
            f"| {r.load_before:.1f} → {r.load_after:.1f} |")
    return "\n".join(lines) + f"\n\n(long run: {long_limit_s:.0f} s from the plan's fleet)"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default="medium:25", help="size:scale, comma-separated")
    p.add_argument("--plan-limit", type=float, default=60.0, help="the plan's limit [s]")
    p.add_argument("--long-limit", type=float, default=600.0, help="the long run's limit [s]")
    p.add_argument("--gap", type=float, default=0.01, help="the plan's gap")
    p.add_argument("--long-gap", type=float, default=0.001, help="the long run's gap")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    runs = []
    for case in args.cases.split(","):
        size, scale = case.split(":")
        r = long_run(size, int(scale), args.plan_limit, args.long_limit, args.gap,
                     args.long_gap, args.seed)
        runs.append(r)
        print(f"… {r.case}: plan {_money(r.plan_cost)} (bound {_money(r.plan_bound)}), "
              f"long run {_money(r.long_cost)} (bound {_money(r.long_bound)}, {r.long_status})",
              file=sys.stderr, flush=True)
    print(markdown(runs, args.long_limit))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"split": r.split()} for r in runs],
                                        indent=1))


if __name__ == "__main__":
    main()
