"""Plan a scenario: capacity table → program data → program → solve → a typed :class:`Plan`.

The plan is read back from the solver once (integers checked and rounded), then every figure in
it — costs, survivability, $/Mtok — is recomputed with plain arithmetic from the fleet it buys,
so what ``plan.json`` says does not depend on how the program was written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import defaultdict

from models.capacity import CapacityTable
from models.common import PurchaseKind, Survivability
from models.plan import (
    Allocation,
    Cost,
    NodeCount,
    Plan,
    Slice,
    SolverReport,
    SolveStatus,
    SurvivabilityRow,
    WorkloadCost,
)
from models.scenario import Scenario
from models.workload import HOURS_PER_DAY, Workload
from solver.program.build import build_program
from solver.program.data import SECONDS_PER_HOUR, ProgramData, build_program_data
from solver.program.variables import Program
from solver.solve.aggregate import AGGREGATE_ABOVE_SLICES, STATIC_STAGE, aggregated_start
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.decompose import solve_decomposed
from solver.solve.diagnose import diagnose
from solver.solve.greedy import greedy_start, keep_better, objective_of, start_from_replicas
from solver.solve.neighbourhood import improve_start
from solver.survivability.failures import (
    Failure,
    FailureKind,
    failover_capacity_rps,
    failure_domains,
    required_failures,
    slice_demand_rps,
    usable_capacity_rps,
)
from solver.survivability.fleet import fleet_from_plan

#: Share of the time limit spent finding the dedicated-pool fleet that starts a shared solve [1],
#: at most ``DEDICATED_START_MAX_S``: the start needs to be good, not proven optimal.
DEDICATED_START_SHARE = 0.25
DEDICATED_START_MAX_S = 20.0
#: Gap the dedicated-pool start is solved to (looser than the plan's: sub-programs then stop on
#: their gap, not on the clock, so the start — and the plan — do not depend on machine speed) [1].
DEDICATED_START_GAP = 0.05

#: A capacity within this relative distance of the demand holds it (the verifier's tolerance).
REL_TOL = 1e-6
ABS_TOL_RPS = 1e-9


def plan_scenario(
    scenario: Scenario,
    capacity_table: CapacityTable | None = None,
    solver: str = "highs",
    time_limit_s: float = 60.0,
    gap: float = 0.01,
) -> Plan:
    """The cheapest fleet for a scenario, or the diagnosis of why there is none."""
    if capacity_table is None:
        from solver.capacity.table import build_capacity_table

        capacity_table = build_capacity_table(scenario)
    data = build_program_data(scenario, capacity_table)
    if data.share_nodes:
        program, outcome = solve_shared(data, solver, time_limit_s, gap)
    else:  # dedicated pools: one sub-program per workload, bound proven by their sum
        program, outcome = solve_decomposed(data, solver, time_limit_s, gap)
    slices = tuple(Slice(name=b.name, hours=b.hours) for b in scenario.policy.time_blocks)
    base = Plan(
        scenario=scenario.name, status=outcome.status, solver=outcome.report,
        cost=Cost(per_month=0.0, per_million_tokens=None, per_million_output_tokens=None,
                  currency=scenario.policy.currency),
        slices=slices, fingerprint=scenario_fingerprint(scenario),
    )
    if not outcome.has_solution:
        if outcome.status is SolveStatus.infeasible:
            shortfalls = diagnose(scenario, data, solver=solver, time_limit_s=time_limit_s)
            return base.model_copy(update={"diagnosis": shortfalls})
        return base
    return complete_plan(base, scenario, program, capacity_table)


def solve_shared(
    data: ProgramData, solver: str, time_limit_s: float, gap: float
) -> tuple[Program, SolveOutcome]:
    """Shared node pools: the joint program, started from the best fleet found cheaply.

    With many slices (hourly ones), the start is the fleet of the time-aggregated programs of
    :mod:`solver.solve.aggregate` (slices grouped at their busiest demand: a restriction, so its
    fleet
    is feasible here); with few, the cheaper of the dedicated-pool fleet of the per-workload
    decomposition (dedicated pools restrict shared ones) and the static fleet at the day's peak
    (one group); else the greedy fleet. With more than one slice the start is then improved in
    the two neighbourhoods of :mod:`solver.solve.neighbourhood`. The fleet reported is the joint
    solve's, or the start where the joint solve ends without a better one (CBC takes no start).
    The bound reported is the joint solver's own: no start's bound holds for this program.
    """
    started = time.perf_counter()
    program = build_program(data)
    if len(data.slices) > AGGREGATE_ABOVE_SLICES:
        start = aggregated_start(program, solver, time_limit_s, gap)
    else:
        start = _cheaper(program, _dedicated_start(program, solver, time_limit_s, gap),
                         aggregated_start(program, solver, time_limit_s, gap, STATIC_STAGE))
    if start is None:
        start = greedy_start(program)
    if start is not None and len(data.slices) > 1:
        start = improve_start(program, start, solver, time_limit_s, gap, started)
    left_s = max(time_limit_s - (time.perf_counter() - started), 0.5)
    outcome = solve(program.prob, solver, left_s, gap, start=start)
    return program, keep_better(program, outcome, start, started, gap)


def _dedicated_start(
    program: Program, solver: str, time_limit_s: float, gap: float
) -> dict[str, float] | None:
    """The dedicated-pool fleet of the per-workload decomposition, as values of ``program``."""
    dedicated = dataclasses.replace(program.data, share_nodes=False)
    budget_s = max(min(time_limit_s * DEDICATED_START_SHARE, DEDICATED_START_MAX_S), 0.5)
    ded_program, ded_outcome = solve_decomposed(dedicated, solver, budget_s,
                                                max(gap, DEDICATED_START_GAP))
    if not ded_outcome.has_solution:
        return None
    fleet = {k: integer_value(v) for k, v in ded_program.v.replicas.items()}
    return start_from_replicas(program, {k: n for k, n in fleet.items() if n > 0})


def _cheaper(
    program: Program, *starts: dict[str, float] | None
) -> dict[str, float] | None:
    """The cheapest of the starts found (the first on a tie), ``None`` if none was found."""
    found = [s for s in starts if s is not None]
    return min(found, key=lambda s: objective_of(program, s)) if found else None


def scenario_fingerprint(scenario: Scenario) -> str:
    """SHA-256 of the resolved scenario's JSON: the same inputs give the same fingerprint.

    ``sources`` (the input paths as given) are left out: what was planned is the content, and
    the same files named by a relative or an absolute path are the same inputs.
    """
    text = scenario.model_dump_json(exclude={"sources"})
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _paid_hours(scenario: Scenario, purchase: PurchaseKind, block: str | None) -> float:
    """Hours per month a GPU is paid for: all for reserved, else the block's share [h/month]."""
    if purchase is PurchaseKind.reserved or block is None:
        return scenario.policy.hours_per_month
    hours = next(len(b.hours) for b in scenario.policy.time_blocks if b.name == block)
    return hours * scenario.policy.hours_per_month / HOURS_PER_DAY  # [h/day] × [day/month]


def extract_fleet(
    program: Program, scenario: Scenario
) -> tuple[tuple[Allocation, ...], tuple[NodeCount, ...]]:
    """Allocations and node counts of the solution, per policy time block for elastic kinds."""
    data, v = program.data, program.v
    members = {s.name: s.blocks for s in data.slices}
    sources = {(c.workload, c.gpu, c.tp): c.source for c in data.candidates}
    allocations: list[Allocation] = []
    for key, x in v.replicas.items():
        replicas = integer_value(x)
        if replicas == 0:
            continue
        w, g, tp, z, kind, s = key
        price = v.offer[(z, g, kind)].price_per_gpu_hour
        for block in (None,) if s is None else members[s]:
            gpus = replicas * tp
            allocations.append(Allocation(
                workload=w, zone=z, gpu=g, tp=tp, purchase=kind, slice=block, replicas=replicas,
                gpus=gpus, replica_capacity_rps=v.rate[key], capacity_source=sources[(w, g, tp)],
                cost_per_month=gpus * price * _paid_hours(scenario, kind, block),
            ))
    counts: dict[tuple[str, str, PurchaseKind, str | None], int] = defaultdict(int)
    for group, y in v.nodes.items():
        counts[group.stock] += integer_value(y)  # a workload's own pools add up per offer
    nodes: list[NodeCount] = []
    for (z, g, kind, s), count in counts.items():
        if count == 0:
            continue
        o = v.offer[(z, g, kind)]
        for block in (None,) if s is None else members[s]:
            gpus = count * o.gpus_per_node
            hours = _paid_hours(scenario, kind, block)
            nodes.append(NodeCount(
                zone=z, gpu=g, purchase=kind, slice=block, nodes=count, gpus=gpus,
                instance_type=o.instance_type, price_per_gpu_hour=o.price_per_gpu_hour,
                hours_per_month=hours, cost_per_month=gpus * o.price_per_gpu_hour * hours,
            ))
    block_order = {b.name: i for i, b in enumerate(scenario.policy.time_blocks)}
    allocations.sort(key=lambda a: (a.workload, a.zone, a.gpu, a.tp, a.purchase.value,
                                    -1 if a.slice is None else block_order[a.slice]))
    nodes.sort(key=lambda n: (n.zone, n.gpu, n.purchase.value,
                              -1 if n.slice is None else block_order[n.slice]))
    return tuple(allocations), tuple(nodes)


def complete_plan(
    base: Plan, scenario: Scenario, program: Program, table: CapacityTable
) -> Plan:
    """Fill a plan from a solved program: fleet, cost, survivability and cost per token."""
    allocations, nodes = extract_fleet(program, scenario)
    plan = base.model_copy(update={"allocations": allocations, "nodes": nodes})
    workload_costs = attribute_costs(plan, scenario)
    per_month = sum(n.cost_per_month for n in nodes)
    tokens = sum(c.tokens_per_month for c in workload_costs)
    out_tokens = sum(c.output_tokens_per_month for c in workload_costs)
    cost = Cost(
        per_month=per_month,
        per_million_tokens=per_month / (tokens / 1e6) if tokens > 0 else None,
        per_million_output_tokens=per_month / (out_tokens / 1e6) if out_tokens > 0 else None,
        currency=scenario.policy.currency,
    )
    return plan.model_copy(update={
        "cost": cost, "workload_costs": workload_costs,
        "survivability": survivability_rows(plan, scenario),
    })


def tokens_per_month(workload: Workload, hours_per_month: float) -> tuple[float, float]:
    """(all, output) tokens a workload processes in a month at planned demand [tokens/month].

    Requests per day (Σ hourly rate × 3600 s, or the batch volume) × typical input + output
    tokens (mean, else P50) × days per month (hours_per_month / 24).
    """
    if workload.batch is not None:
        per_day = workload.batch.daily_requests  # [requests/day]
    else:
        per_day = sum(workload.hourly_demand_rps()) * SECONDS_PER_HOUR  # [1/s] × [s/h] × 1 h
    days = hours_per_month / HOURS_PER_DAY  # [day/month]
    out = per_day * workload.output_tokens.typical * days
    return per_day * (workload.input_tokens.typical + workload.output_tokens.typical) * days, out


def attribute_costs(plan: Plan, scenario: Scenario) -> tuple[WorkloadCost, ...]:
    """Each node group's cost split over the workloads by the GPUs their replicas use there."""
    used: dict[tuple[str, str, PurchaseKind, str | None], dict[str, int]] = defaultdict(
        lambda: defaultdict(int))
    for a in plan.allocations:
        used[(a.zone, a.gpu, a.purchase, a.slice)][a.workload] += a.gpus
    cost: dict[str, float] = defaultdict(float)
    for n in plan.nodes:
        shares = used.get((n.zone, n.gpu, n.purchase, n.slice), {})
        total = sum(shares.values())
        for w, gpus in shares.items():
            cost[w] += n.cost_per_month * gpus / total  # idle GPUs shared pro rata
    out = []
    for wl in sorted(scenario.workloads, key=lambda w: w.name):
        tokens, out_tokens = tokens_per_month(wl, scenario.policy.hours_per_month)
        out.append(WorkloadCost(
            workload=wl.name, tenant=wl.tenant, cost_per_month=cost[wl.name],
            tokens_per_month=tokens, output_tokens_per_month=out_tokens,
            per_million_tokens=cost[wl.name] / (tokens / 1e6) if tokens > 0 else None,
        ))
    return tuple(out)


def _holds(capacity: float, demand: float) -> bool:
    return capacity >= demand * (1.0 - REL_TOL) - ABS_TOL_RPS


def survivability_rows(plan: Plan, scenario: Scenario) -> tuple[SurvivabilityRow, ...]:
    """Steady state and every failure each workload must survive, per slice (plain arithmetic).

    Node failures are reported per ``<zone>/<gpu>``: the worse of its reserved and on-demand
    pools. Batch volumes are compared with their even spread over the window.
    """
    fleet = fleet_from_plan(plan, scenario)
    domains = failure_domains(fleet, scenario)
    rows: list[SurvivabilityRow] = []
    for wl in sorted(scenario.workloads, key=lambda w: w.name):
        failures: list[tuple[str, list[Failure]]] = [("none", [])]
        if wl.survivability is not Survivability.none:
            by_label: dict[str, list[Failure]] = {}
            for f in required_failures(wl, domains):
                if f.kind is FailureKind.node and f.purchase is PurchaseKind.spot:
                    continue
                by_label.setdefault(f.plan_label, []).append(f)
            failures += sorted(by_label.items())
        for block in scenario.policy.time_blocks:
            need = slice_demand_rps(wl, block)
            for label, fs in failures:
                if label == "none":
                    cap = usable_capacity_rps(fleet.replicas, wl, scenario, block.name)
                else:
                    cap = min(failover_capacity_rps(fleet, wl, scenario, block.name, f)
                              for f in fs)
                rows.append(SurvivabilityRow(workload=wl.name, failure=label, slice=block.name,
                                             capacity_rps=cap, demand_rps=need,
                                             holds=_holds(cap, need)))
    return tuple(rows)


def solver_summary(report: SolverReport) -> str:
    """One line on how the solve went, for people."""
    gap = "n/a" if report.gap is None else f"{report.gap:.2%}"
    bound = "n/a" if report.bound is None else f"{report.bound:,.2f}"
    return f"{report.name}: {report.seconds:.2f} s, gap {gap}, bound {bound}"


__all__ = ["ProgramData", "complete_plan", "plan_scenario", "scenario_fingerprint"]
