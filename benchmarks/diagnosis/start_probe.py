"""Probe: the elastic program's weighted slack after ``T`` s of HiGHS from each start.

``python benchmarks/diagnosis/start_probe.py SCENARIO T MODES`` (MODES: ``none``, ``free``,
``hybrid`` joined by commas) builds the scenario's elastic program (every family; the workloads
no configuration serves left out, as the diagnosis leaves them) and solves it for ``T`` s per
mode: from no start; from the greedy fleet that ignores stock; from the one that keeps to the
stock left where each workload fits in it (``greedy_fleet(..., within_stock=True,
over_stock=True)``) — each with every row it breaks taken up by its slack. One line per mode:
the start's weighted slack, the solve's, the GPUs beyond stock, the workloads left short.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pulp

from solver.capacity.table import build_capacity_table
from solver.cli.common import load
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.families import FAMILIES
from solver.program.values import start_from_replicas
from solver.program.variables import Program
from solver.solve import diagnose
from solver.solve.backends import real_value, solve
from solver.solve.greedy import greedy_fleet


def with_slack(program: Program, within: bool) -> dict[str, float] | None:
    """The greedy fleet's values with each broken row's slack set to the break."""
    fleet = greedy_fleet(program, within_stock=within, over_stock=True)
    values = None if fleet is None else start_from_replicas(program, fleet, checked=False)
    if values is None:
        return None
    slacks = {s.var.name for s in program.v.slacks}
    for row in program.prob.constraints():
        coefs = dict(row.items())
        slack = next((v for v in coefs if v.name in slacks), None)
        if slack is None:
            continue
        lhs = sum(c * values.get(v.name, 0.0) for v, c in coefs.items() if v is not slack)
        broken = -(lhs + row.constant) if row.sense == pulp.LpConstraintGE else lhs + row.constant
        values[slack.name] = max(broken, 0.0) / abs(coefs[slack])
    return values


def main() -> None:
    path, limit_s, modes = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3].split(",")
    sc = load(path)
    data = build_program_data(sc, build_capacity_table(sc, sc.gpus_sold_or_held()))
    culprits = diagnose.unservable(data)
    data = diagnose.without_workloads(data, culprits) if culprits else data
    for mode in modes:
        program = build_program(data, families=tuple(FAMILIES), elastic=True)
        weighted = pulp.lpSum(diagnose._weight(data, s) * s.var for s in program.v.slacks)
        program.prob.setObjective(weighted + 1e-9 * program.v.cost)
        began = time.perf_counter()
        start = None if mode == "none" else with_slack(program, within=mode == "hybrid")
        start_s = time.perf_counter() - began
        before = None if start is None else diagnose.weighted_slack(program, start)
        began = time.perf_counter()
        outcome = solve(program.prob, "highs", limit_s, gap=1e-4, start=start)
        seconds = time.perf_counter() - began
        beyond = sum(real_value(s.var) for s in program.v.slacks if s.family == "stock")
        short = sorted({s.row.workload or "" for s in program.v.slacks
                        if s.family != "stock" and real_value(s.var) > 1e-6})
        print(f"{path.name} T={limit_s:g} mode={mode} start_s={start_s:.2f} start={before} "
              f"-> weighted={diagnose.weighted_slack(program):,.1f} beyond_stock={beyond:,.0f} "
              f"short={short} status={outcome.status.value} {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
