"""The harness's multi-period size: 4 quarters × 3 demand scenarios on a generated size.

The scenario (:func:`quarterly`) is ``benchmarks/generate.py``'s size (default: medium, seed 0)
at a demand scale (default ×25: every peak, daily volume and stock × 25, hundreds of GPUs), a
horizon of four quarters from 2027-01-01, growth 1.0 / 1.1 / 1.2 / 1.3 on every workload, the
generated reserved price as a 12-month quote with 4 weeks of lead time plus a 36-month quote at
0.75 of it (8 weeks, all upfront, half the stock), and three demand scenarios (low ×0.9 / base /
high ×1.25 per period from the second; 0.3 / 0.4 / 0.3).

Each case runs twice, each in a fresh subprocess (no shared memory peak or warm cache):

- ``plan``: :func:`solver.solve.horizon.plan_horizon`, as ``fleetplan plan`` plans it (each block
  planned alone for a start and a bound, then the joint program): status, proven gap and bound,
  expected cost over the horizon, wall and CPU seconds, peak memory;
- ``highs-cold``: the same joint program written to MPS and solved by HiGHS alone with the
  planner's options (threads, seed, gap) and the same time limit, no start;

and the table sets the plan's expected cost beside the cold solve's as a ratio, both measured
in the same run. ``benchmarks/quarterly_blocks.py`` solves one of the case's blocks alone, to
show how far a block gets in the time the twelve share. ``benchmarks/bench_plan.py`` runs these
cases after its single-period ones (``--quarterly medium:25``); alone::

    .venv/bin/python benchmarks/bench_quarterly.py [--cases medium:25] [--time-limit 120]
        [--gap 0.01] [--seed 0] [--dedicated] [--no-cold] [--workers 1] [--json out.json]

``--workers N`` plans the blocks in N processes side by side (``plan_horizon(workers=N)``); the
CPU seconds then count the planner's own process only (the workers are the fork server's
children, not its). The joint root run beside the blocks in a process of its own (stage
``joint-beside``) reports its CPU seconds in ``solver.stages``; they are added.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import (  # noqa: E402
    COLD,
    _cpu_s,
    _finite,
    _money,
    _nodes,
    _pct,
    _rss_mib,
    child_json,
    code_version,
    machine,
    parse_cases,
    with_node_model,
)

if TYPE_CHECKING:
    from models.scenario import Scenario

#: Growth of every workload per quarter [1].
GROWTH = (1.0, 1.1, 1.2, 1.3)
#: Demand scenarios: (name, probability, multiplier per quarter on the workloads' growth).
SCENARIOS = (("low", 0.3, (1.0, 0.9, 0.9, 0.9)), ("base", 0.4, ()),
             ("high", 0.3, (1.0, 1.25, 1.25, 1.25)))
#: The multi-period cases bench_plan.py runs by default (size:scale).
QUARTERLY_DEFAULT = "medium:25"
#: Solver name of the planner's runs.
PLAN = "plan"


def quarterly(scenario: Scenario) -> Scenario:
    """A generated scenario over four quarters: growth, two reserved quotes, three demand
    scenarios."""
    from models.common import PurchaseKind, Upfront
    from models.horizon import DemandScenario, Horizon
    from models.offers import ReservedTerms

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
    demands = tuple(DemandScenario(name=n, probability=p, growth=g) for n, p, g in SCENARIOS)
    start = dt.date(2027, 1, 1)
    # orders placed from the horizon's start, as in every run before orders could be planned
    # from an earlier policy.as_of (the generated scenarios' 2026-01-01 would let every quote
    # serve from the first quarter: another, easier program than the harness has measured)
    return scenario.model_copy(update={
        "workloads": workloads, "zones": tuple(zones),
        "horizon": Horizon(start=start, period_months=3, count=len(GROWTH)),
        "policy": scenario.policy.model_copy(update={"as_of": start.isoformat()}),
        "demand_scenarios": demands})


@dataclass
class QuarterlyResult:
    """One run of a multi-period case: the planner's (``plan``) or the cold reference's."""

    size: str
    scale: int
    run: str
    nodes: str = "shared"
    blocks: int = 0
    variables: int = 0
    integer_variables: int = 0
    constraints: int = 0
    build_s: float = 0.0
    """Capacity tables and the joint program [s]."""
    wall_s: float = 0.0
    """The plan: ``plan_horizon`` whole (it builds again); cold: reading the MPS and solving."""
    cpu_s: float = 0.0
    status: str = "error"
    gap: float | None = None
    bound: float | None = None
    expected_cost: float | None = None
    """The objective: expected cost over the horizon [USD]."""
    peak_rss_mib: float = 0.0
    load_average: float = 0.0
    error: str = ""


def _scenario(size: str, scale: int, seed: int, share_nodes: bool) -> Scenario:
    from benchmarks.generate import generate_scenario

    return quarterly(with_node_model(generate_scenario(size, seed, scale), share_nodes))


def _built(size: str, scale: int, seed: int, share_nodes: bool, run: str
           ) -> tuple[Scenario, object, QuarterlyResult]:
    """The case's scenario, its joint program (built and timed) and a fresh result."""
    import pulp

    from solver.capacity.table import cached_tables
    from solver.program.periods import build_horizon_data, build_horizon_program

    sc = _scenario(size, scale, seed, share_nodes)
    result = QuarterlyResult(size, scale, run, _nodes(share_nodes),
                             load_average=os.getloadavg()[0])
    start = time.perf_counter()
    hp = build_horizon_program(build_horizon_data(sc, cached_tables(sc.gpus_sold_or_held())))
    result.build_s = time.perf_counter() - start
    variables = hp.prob.variables()
    result.blocks = len(hp.blocks)
    result.variables = len(variables)
    result.integer_variables = sum(1 for v in variables if v.cat == pulp.LpInteger)
    result.constraints = len(hp.prob.constraints())
    return sc, hp, result


def run_child(size: str, scale: int, seed: int, time_limit_s: float, gap: float,
              share_nodes: bool = True, workers: int = 1) -> QuarterlyResult:
    """The planner on the case (inside the subprocess)."""
    from solver.solve.horizon import plan_horizon

    sc, hp, result = _built(size, scale, seed, share_nodes, PLAN)
    del hp
    cpu, start = _cpu_s(), time.perf_counter()
    plan = plan_horizon(sc, time_limit_s=time_limit_s, gap=gap, workers=workers)
    # with the CPU of the stages run in processes of their own (the joint root beside the
    # blocks), which this process's clock of its children does not see
    beside_cpu_s = sum(s.cpu_s or 0.0 for s in plan.solver.stages)
    result.wall_s = time.perf_counter() - start
    result.cpu_s = _cpu_s() - cpu + beside_cpu_s
    result.status = plan.status.value
    result.gap, result.bound = plan.solver.gap, plan.solver.bound
    if plan.horizon is not None:
        result.expected_cost = plan.horizon.expected_cost
    result.peak_rss_mib = _rss_mib()
    return result


def run_cold_child(size: str, scale: int, seed: int, time_limit_s: float, gap: float,
                   share_nodes: bool = True, workers: int = 1) -> QuarterlyResult:
    """The same joint program from MPS, HiGHS alone, no start (inside the subprocess)."""
    import highspy

    from solver.solve.backends import SOLVER_SEED, SOLVER_THREADS

    _, hp, result = _built(size, scale, seed, share_nodes, COLD)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "program.mps"
        hp.prob.writeMPS(str(path))  # type: ignore[attr-defined]
        del hp
        cpu, start = _cpu_s(), time.perf_counter()
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.readModel(str(path))
    for option, value in (("time_limit", float(time_limit_s)), ("mip_rel_gap", gap),
                          ("threads", SOLVER_THREADS), ("random_seed", SOLVER_SEED)):
        highs.setOptionValue(option, value)
    highs.run()
    result.wall_s, result.cpu_s = time.perf_counter() - start, _cpu_s() - cpu
    info = highs.getInfo()
    status = highs.getModelStatus()
    result.status = {highspy.HighsModelStatus.kOptimal: "optimal",
                     highspy.HighsModelStatus.kTimeLimit: "time_limit",
                     highspy.HighsModelStatus.kInfeasible: "infeasible"}.get(status, str(status))
    result.bound = _finite(info.mip_dual_bound)
    if info.primal_solution_status == 2:  # kSolutionStatusFeasible
        result.expected_cost = float(info.objective_function_value)
        result.gap = _finite(info.mip_gap)
    result.peak_rss_mib = _rss_mib()
    return result


def spawn(size: str, scale: int, run: str, seed: int, time_limit_s: float, gap: float,
          share_nodes: bool = True, workers: int = 1) -> QuarterlyResult:
    """One run in a fresh Python process."""
    failed = QuarterlyResult(size, scale, run, _nodes(share_nodes))
    result = child_json(Path(__file__), [
        "--run", run, "--cases", f"{size}:{scale}", "--time-limit", str(time_limit_s),
        "--gap", str(gap), "--seed", str(seed), "--workers", str(workers),
        *([] if share_nodes else ["--dedicated"])],
        time_limit_s)
    if isinstance(result, str):
        failed.error = result
        return failed
    known = {f.name for f in fields(QuarterlyResult)}
    return QuarterlyResult(**{k: v for k, v in result.items() if k in known})


def markdown(results: list[QuarterlyResult]) -> str:
    """Every run as a row, then per case the plan's expected cost ÷ the cold solve's."""
    head = ("| case | nodes | blocks | vars (int) | rows | run | build s | wall s | CPU s | load | "
            "status | gap | bound $ | expected cost $ | peak MiB | plan ÷ cold |")
    lines = [head, "|---|---|---:|---:|---:|---|" + "---:|" * 4 + "---|" + "---:|" * 5]
    cold = {(r.size, r.scale, r.nodes): r for r in results if r.run == COLD}
    for r in results:
        case = f"{r.size} ×{r.scale}, 4 quarters × 3 scenarios"
        if r.error:
            lines.append(f"| {case} | {r.nodes} | — | — | — | {r.run} | — | — | — | — | "
                         f"error: {r.error} | — | — | — | — | — |")
            continue
        c = cold.get((r.size, r.scale, r.nodes))
        ratio = (None if r.run != PLAN or c is None or r.expected_cost is None
                 or not c.expected_cost else r.expected_cost / c.expected_cost)
        lines.append(
            f"| {case} | {r.nodes} | {r.blocks} | {r.variables:,} ({r.integer_variables:,}) | "
            f"{r.constraints:,} | {r.run} | {r.build_s:.1f} | {r.wall_s:.1f} | {r.cpu_s:.1f} | "
            f"{r.load_average:.1f} | {r.status} | {_pct(r.gap)} | {_money(r.bound)} | "
            f"{_money(r.expected_cost)} | {r.peak_rss_mib:,.0f} | "
            f"{'—' if ratio is None else f'{ratio:.3f}'} |")
    return "\n".join(lines)


def run_cases(cases: list[tuple[str, int]], seed: int, time_limit_s: float, gap: float,
              share_nodes: bool, cold: bool, workers: int = 1) -> list[QuarterlyResult]:
    """Each case's plan, then its cold reference, one subprocess each, one at a time."""
    results = []
    for size, scale in cases:
        for run in (PLAN, *([COLD] if cold else [])):
            print(f"… {size} ×{scale} over 4 quarters × 3 scenarios / {run} / "
                  f"{_nodes(share_nodes)}", file=sys.stderr, flush=True)
            r = spawn(size, scale, run, seed, time_limit_s, gap, share_nodes, workers)
            print(f"  {r.status} in {r.wall_s:.1f} s (CPU {r.cpu_s:.1f} s), gap {_pct(r.gap)}, "
                  f"bound {_money(r.bound)}, expected cost {_money(r.expected_cost)} {r.error}",
                  file=sys.stderr, flush=True)
            results.append(r)
    return results


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--cases", default=QUARTERLY_DEFAULT, help="size:scale, comma-separated")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--gap", type=float, default=0.01)
    p.add_argument("--dedicated", dest="share_nodes", action="store_false",
                   help="dedicated pools (policy.share_nodes false)")
    p.add_argument("--no-cold", dest="cold", action="store_false")
    p.add_argument("--workers", type=int, default=1,
                   help="processes the plan's blocks are planned in side by side")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--run", default=PLAN, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    cases = parse_cases("", "", args.cases)
    if args.child is not None:
        (size, scale), = cases
        child = run_cold_child if args.run == COLD else run_child
        result = child(size, scale, args.seed, args.time_limit, args.gap, args.share_nodes,
                       args.workers)
        args.child.write_text(json.dumps(asdict(result)))
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    header = machine()
    results = run_cases(cases, args.seed, args.time_limit, args.gap, args.share_nodes,
                        args.cold, args.workers)
    print(f"Measured {started} on {header}; {code_version()}; time limit "
          f"{args.time_limit:g} s, gap {args.gap:g}, seed {args.seed}.\n")
    print(markdown(results))
    if args.json is not None:
        args.json.write_text(json.dumps({"started": started, "machine": header,
                                         "runs": [asdict(r) for r in results]}, indent=2))


if __name__ == "__main__":
    main()
