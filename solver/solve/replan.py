"""Re-plan some workloads with the rest of a fleet kept: the cheap re-solve of the replay loop.

When a trace replay misses for some workloads (solver.solve.replay_loop), only their
configurations are de-rated, so only their replicas need to move: every other workload keeps
the replicas the previous plan gave it (each replica variable fixed to its count), and the
program is solved for the rest — the workloads named, and the nodes all of them share —
started from the previous fleet with the re-planned workloads' replicas grown by their
de-rating. A program with most of its integers fixed solves in a fraction of the full solve's
time.

What it proves: the fleet meets every row of the de-rated program (it is that program with
variables fixed), and de-rating only tightens rows, so the bound of the full solve the loop
started from is still a lower bound; the plan reports that bound and the gap to it, and is
``optimal`` only when that gap is within the one asked for. Where keeping the rest leaves no
fleet (a stock the kept replicas use up), the full program is solved instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from models.capacity import CapacityTable
from models.plan import Cost, Plan, Slice, SolverReport, SolveStatus
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.keys import ReplicaKey
from solver.program.values import start_from_replicas
from solver.program.variables import Program
from solver.solve.assemble import complete_plan, scenario_fingerprint
from solver.solve.backends import solve
from solver.solve.replay_loop import HAS_FLEET


def kept_replicas(plan: Plan, workloads: frozenset[str]) -> dict[ReplicaKey, int]:
    """The replicas of every workload of ``plan`` not in ``workloads``, by program key."""
    kept: dict[ReplicaKey, int] = {}
    for a in plan.allocations:
        if a.workload not in workloads and a.replicas > 0:
            key = ReplicaKey(a.workload, a.gpu, a.tp, a.zone, a.purchase, a.slice)
            kept[key] = kept.get(key, 0) + a.replicas
    return kept


def replan_workloads(
    scenario: Scenario, table: CapacityTable, previous: Plan, workloads: frozenset[str],
    full_solve: Callable[[CapacityTable], Plan], solver: str = "highs",
    time_limit_s: float = 60.0, gap: float = 0.01,
) -> Plan:
    """The cheapest fleet on ``table`` that keeps ``previous``'s replicas of every workload not
    in ``workloads``; ``full_solve(table)`` where that keeps no fleet."""
    started = time.perf_counter()
    program = build_program(build_program_data(scenario, table))
    kept = kept_replicas(previous, workloads)
    if any(key not in program.v.replicas for key in kept):
        return full_solve(table)  # a kept slot is not in this program: nothing to keep
    for key, var in program.v.replicas.items():
        if key.workload not in workloads:
            var.lowBound = var.upBound = kept.get(key, 0)
    outcome = solve(program.prob, solver, time_limit_s, gap,
                    start=_scaled_start(program, previous, table, kept))
    if not outcome.has_solution or outcome.status not in HAS_FLEET:
        return full_solve(table)
    base = Plan(
        scenario=scenario.name, status=outcome.status, solver=outcome.report,
        cost=Cost(per_month=0.0, per_million_tokens=None, per_million_output_tokens=None,
                  currency=scenario.policy.currency),
        slices=tuple(Slice(name=b.name, hours=b.hours) for b in scenario.policy.time_blocks),
        fingerprint=scenario_fingerprint(scenario),
    )
    plan = complete_plan(base, scenario, program, table)
    return plan.model_copy(update=_against_full_bound(plan, previous, outcome.status,
                                                      outcome.report, gap,
                                                      time.perf_counter() - started))


def _scaled_start(program: Program, previous: Plan, table: CapacityTable,
                  kept: dict[ReplicaKey, int]) -> dict[str, float] | None:
    """A first incumbent: the kept replicas, and each re-planned workload's replicas where
    they were, grown by how much its rate came down (⌈n × old rate ÷ new rate⌉); ``None``
    where that breaks a row (stock, nodes, a zone's share)."""
    rate = {(r.workload, r.gpu, r.tp): r.slo_rps for r in table.rows}
    x = dict(kept)
    for a in previous.allocations:
        key = ReplicaKey(a.workload, a.gpu, a.tp, a.zone, a.purchase, a.slice)
        new = rate.get((a.workload, a.gpu, a.tp))
        if key in kept or a.replicas == 0 or new is None:
            continue
        grown = math.ceil(a.replicas * a.replica_capacity_rps / new - 1e-9)
        x[key] = x.get(key, 0) + grown
    return start_from_replicas(program, x)


def _against_full_bound(plan: Plan, previous: Plan, solved: SolveStatus, report: SolverReport,
                        gap: float, seconds: float) -> dict[str, object]:
    """Status and solver report of a re-planned fleet: the full solve's bound (still a lower
    bound after de-rating), the gap to it, ``optimal`` only within ``gap``; otherwise
    ``time_limit`` when the re-plan's own solve (``solved``) stopped at its time limit — its
    fleet then depends on the machine's speed, and the plan must say so — else ``feasible``
    (the re-plan proved its fleet the cheapest within ``gap`` that keeps the rest: a re-run
    gives the same fleet)."""
    cost = plan.cost.per_month
    bound = previous.solver.bound
    unproven = SolveStatus.time_limit if solved is SolveStatus.time_limit else SolveStatus.feasible
    if bound is None or cost <= 0:
        return {"status": unproven,
                "solver": report.model_copy(update={"seconds": seconds, "gap": None,
                                                    "bound": None, "objective": cost})}
    bound = min(bound, cost)
    rel = (cost - bound) / cost
    status = SolveStatus.optimal if rel <= gap else unproven
    return {"status": status,
            "solver": report.model_copy(update={"seconds": seconds, "gap": rel, "bound": bound,
                                                "objective": cost})}
