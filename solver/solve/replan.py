"""Re-plan some workloads with the rest of a fleet kept: the cheap re-solve of the replay loop.

When a trace replay misses for some workloads (solver.solve.replay_loop), only their
configurations are de-rated, so only their replicas need to move: every other workload keeps
the replicas the previous plan gave it (each replica variable fixed to its count), and the
program is solved for the rest — the workloads named, and the nodes all of them share. A
program with most of its integers fixed solves in a fraction of the full solve's time, and
faster still from a good first fleet: the cheaper of two starts, each checked against every
row — the previous fleet with the re-planned workloads' replicas grown by their de-rating
(:func:`_scaled_start`), and the cheapest fleet on the previous fleet's nodes plus at most one
more node (:func:`_plus_one_node_start`; on the demo that is the re-plan's optimum, found in
under a second, benchmarks/results/replay.md "Replay in the planning loop").

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

import pulp

from models.capacity import CapacityTable
from models.plan import Cost, Plan, Slice, SolverReport, SolveStatus
from models.scenario import Scenario
from solver.capacity.node_fit import nodes_needed
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.keys import ReplicaKey
from solver.program.values import objective_of, replicas_by_group, start_from_replicas
from solver.program.variables import Program, node_key
from solver.solve.assemble import complete_plan, scenario_fingerprint
from solver.solve.backends import integer_value, solve
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
    time_limit_s: float = 60.0, gap: float = 0.01, *, plus_one_node: bool = True,
) -> Plan:
    """The cheapest fleet on ``table`` that keeps ``previous``'s replicas of every workload not
    in ``workloads``; ``full_solve(table)`` where that keeps no fleet. ``plus_one_node=False``
    starts from the scaled start alone, the re-plan as it was before the plus-one-node start
    (benchmarks/replay_cost.py times both on the same inputs)."""
    started = time.perf_counter()
    kept = kept_replicas(previous, workloads)
    program = _kept_program(scenario, table, kept, workloads)
    if any(key not in program.v.replicas for key in kept):
        return full_solve(table)  # a kept slot is not in this program: nothing to keep
    starts = [_scaled_start(program, previous, table, kept)]
    if plus_one_node:
        search = _kept_program(scenario, table, kept, workloads)  # a copy: the search adds a row
        starts.append(_plus_one_node_start(program, search, previous, workloads, solver,
                                           time_limit_s * NEIGHBOURHOOD_SHARE, gap))
    start = min((s for s in starts if s is not None), key=lambda s: objective_of(program, s),
                default=None)
    left_s = max(time_limit_s - (time.perf_counter() - started), 1.0)
    outcome = solve(program.prob, solver, left_s, gap, start=start)
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


#: Share of a re-plan's time limit the search of :func:`_plus_one_node_start` may take; a
#: search stopped by it gives no start (its fleet would depend on the machine's speed) [1].
NEIGHBOURHOOD_SHARE = 0.25


def _kept_program(scenario: Scenario, table: CapacityTable, kept: dict[ReplicaKey, int],
                  workloads: frozenset[str]) -> Program:
    """The program on ``table`` with every replica of a workload not in ``workloads`` fixed at
    its ``kept`` count (0 where ``kept`` has none)."""
    program = build_program(build_program_data(scenario, table))
    for key, var in program.v.replicas.items():
        if key.workload not in workloads:
            var.lowBound = var.upBound = kept.get(key, 0)
    return program


def _plus_one_node_start(program: Program, search: Program, previous: Plan,
                         workloads: frozenset[str], solver: str, time_limit_s: float,
                         gap: float) -> dict[str, float] | None:
    """A first incumbent for ``program`` from a small search on ``search`` (a second build of
    it, to which a row is added): the cheapest fleet (within ``gap``) that keeps the kept
    replicas, gives each re-planned workload at least its ``previous`` replicas, and holds
    at most one node more than ``previous`` in all; its paid GPUs no replica uses then serve
    the re-planned workloads (:func:`_fill_paid_gpus`). Where a de-rating asks for little
    more capacity (the demo's: one H100 node) that is the re-plan's optimum or near it, and
    the search a neighbourhood HiGHS proves in a fraction of the re-plan's time.

    ``None`` where no such fleet exists or the search did not finish within ``time_limit_s``
    (its fleet would then depend on the machine's speed); the fleet is checked against every
    row of ``program`` (nodes re-counted as the fewest that hold its replicas) like every
    start."""
    before = kept_replicas(previous, frozenset())  # every workload's replicas
    if any(key not in search.v.replicas for key in before):
        return None
    for key, var in search.v.replicas.items():
        if key.workload in workloads:
            var.lowBound = before.get(key, 0)
    held = replicas_by_group(search, before)
    nodes_before = sum(nodes_needed(held.get(group, {}), search.v.offer[group.pool].gpus_per_node)
                       for group in search.v.nodes)
    search.prob += (pulp.lpSum(search.v.nodes.values()) <= nodes_before + 1,
                    "replan_at_most_one_node_more")
    outcome = solve(search.prob, solver, time_limit_s, gap)
    if not outcome.has_solution or outcome.status is not SolveStatus.optimal:
        return None
    x = {key: n for key, var in search.v.replicas.items() if (n := integer_value(var)) > 0}
    start = start_from_replicas(program, x)
    return None if start is None else _fill_paid_gpus(program, x, start, workloads)


def _fill_paid_gpus(program: Program, x: dict[ReplicaKey, int], start: dict[str, float],
                    workloads: frozenset[str]) -> dict[str, float]:
    """``start`` (the fleet ``x``) with replicas of ``workloads`` added where they cost
    nothing: on GPUs of nodes it pays for that no replica uses, largest TP first, each
    addition checked against every row. Equal-cost fleets differ in how much of those GPUs
    they use, and the replay that de-rated these workloads found them short: on the demo the
    unfilled fleet missed again after a node loss and took a third round."""
    cost = objective_of(program, start)
    paid = {group for group, y in program.v.nodes.items() if start.get(y.name, 0.0) > 0}
    slots = sorted((key for key in program.v.replicas
                    if key.workload in workloads and node_key(program.data, key) in paid),
                   key=lambda key: (-key.tp, key))
    for key in slots:  # each slot as many as fit: a slot that failed cannot fit later
        while True:
            more = {**x, key: x.get(key, 0) + 1}
            values = start_from_replicas(program, more)
            if values is None or objective_of(program, values) > cost + 1e-6:
                break
            x, start = more, values
    return start


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
