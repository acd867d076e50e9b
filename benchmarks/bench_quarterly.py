"""Benchmark of the plan over periods: 4 quarters × 3 demand scenarios on a generated size.

The scenario is ``benchmarks/generate.py``'s size (default: medium, seed 0) at its demand
scale ``--scale`` (default ×25: every peak, daily volume and stock × 25, hundreds of GPUs), a
horizon of four quarters from 2027-01-01, growth 1.0 / 1.1 / 1.2 / 1.3 on every workload, the
generated reserved price as a 12-month quote with 4 weeks of lead time plus a 36-month quote at
0.75 of it (8 weeks), and three demand scenarios (low ×0.9 / base / high ×1.25 per period from
the second, 0.3 / 0.4 / 0.3). It reports, from one run on this machine:

- the plan's expected cost, proven gap and bound, wall and CPU seconds (``fleetplan plan``'s
  strategy: each block planned alone for a start, then the joint program), and
- the same joint program solved cold by HiGHS with no start and the same time limit,

and the ratio of the two costs. ``python benchmarks/bench_quarterly.py [--time-limit 120]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate import generate_scenario
from models.common import PurchaseKind, Upfront
from models.horizon import DemandScenario, Horizon
from models.offers import ReservedTerms
from models.scenario import Scenario
from solver.program.periods import build_horizon_data, build_horizon_program
from solver.solve.backends import solve
from solver.solve.horizon import _cached_tables, plan_horizon

GROWTH = (1.0, 1.1, 1.2, 1.3)
SCENARIOS = (DemandScenario(name="low", probability=0.3, growth=(1.0, 0.9, 0.9, 0.9)),
             DemandScenario(name="base", probability=0.4),
             DemandScenario(name="high", probability=0.3, growth=(1.0, 1.25, 1.25, 1.25)))


def quarterly(scenario: Scenario) -> Scenario:
    """A generated scenario over four quarters: growth, quotes, three demand scenarios."""
    workloads = tuple(w.model_copy(update={"growth": GROWTH}) for w in scenario.workloads)
    zones = []
    for z in scenario.zones:
        offers = []
        for o in z.offers:
            res = o.terms(PurchaseKind.reserved)
            if isinstance(res, ReservedTerms):
                o = o.model_copy(update={"reserved": (
                    res.model_copy(update={"commitment_months": 12, "lead_time_weeks": 4.0}),
                    res.model_copy(update={"stock_gpus": res.stock_gpus // 2,
                                           "commitment_months": 36, "lead_time_weeks": 8.0,
                                           "upfront": Upfront.all,
                                           "price_per_gpu_hour": res.price_per_gpu_hour * 0.75}))})
            offers.append(o)
        zones.append(z.model_copy(update={"offers": tuple(offers)}))
    return scenario.model_copy(update={
        "workloads": workloads, "zones": tuple(zones),
        "horizon": Horizon(start=dt.date(2027, 1, 1), period_months=3, count=4),
        "demand_scenarios": SCENARIOS})


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="medium")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=int, default=25)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--gap", type=float, default=0.01)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    sc = quarterly(generate_scenario(args.size, args.seed, args.scale))
    tables = _cached_tables()
    wall, cpu = time.perf_counter(), _cpu_s()
    plan = plan_horizon(sc, time_limit_s=args.time_limit, gap=args.gap, table_for=tables)
    wall, cpu = time.perf_counter() - wall, _cpu_s() - cpu
    hp = build_horizon_program(build_horizon_data(sc, tables))
    cold_wall = time.perf_counter()
    cold = solve(hp.prob, "highs", args.time_limit, args.gap)
    cold_wall = time.perf_counter() - cold_wall
    h = plan.horizon
    row = {
        "size": args.size, "seed": args.seed, "scale": args.scale,
        "blocks": len(hp.blocks), "variables": len(hp.prob.variables()),
        "rows": len(hp.prob.constraints()), "time_limit_s": args.time_limit,
        "status": plan.status.value, "expected_cost": None if h is None else h.expected_cost,
        "gap": plan.solver.gap, "bound": plan.solver.bound, "wall_s": wall, "cpu_s": cpu,
        "cold_status": cold.status.value, "cold_cost": cold.report.objective,
        "cold_gap": cold.report.gap, "cold_bound": cold.report.bound, "cold_wall_s": cold_wall,
    }
    if row["expected_cost"] and row["cold_cost"]:
        row["cost_vs_cold"] = row["expected_cost"] / row["cold_cost"]
    print(json.dumps(row, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
