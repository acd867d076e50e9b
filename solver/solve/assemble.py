"""A typed :class:`~models.plan.Plan` from a solved program.

The fleet is read back from the solver once (integers checked and rounded), then every figure of
the plan — costs, cost attribution, survivability, $/Mtok — is recomputed with plain arithmetic
from the fleet it buys, so what ``plan.json`` says does not depend on how the program was written.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

from models.capacity import CapacityTable
from models.common import FINGERPRINT_CONTEXT, CapacitySource, PurchaseKind
from models.plan import (
    Allocation,
    Cost,
    NodeCount,
    Plan,
    SolverReport,
    SolveStatus,
    WorkloadCost,
)
from models.scenario import Scenario
from models.workload import HOURS_PER_DAY, SECONDS_PER_HOUR, Workload
from solver.capacity.measured import fresh_measurement, provenance
from solver.capacity.table import borrowed_costs
from solver.program.variables import Program
from solver.solve.backends import integer_value
from solver.survivability.rows import survivability_rows


def scenario_fingerprint(scenario: Scenario) -> str:
    """SHA-256 of the resolved scenario's JSON: the same inputs give the same fingerprint.

    ``sources`` (the input paths as given) are left out: what was planned is the content, and
    the same files named by a relative or an absolute path are the same inputs; so are labels
    of figures (a price marked *assumed*), which change no figure.
    """
    text = scenario.model_dump_json(exclude={"sources"}, context=FINGERPRINT_CONTEXT)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def extract_fleet(
    program: Program, scenario: Scenario
) -> tuple[tuple[Allocation, ...], tuple[NodeCount, ...]]:
    """Allocations and node counts of the solution, per policy time block for elastic kinds."""
    data, v = program.data, program.v
    members = {s.name: s.blocks for s in data.slices}
    sources = {(c.workload, c.gpu, c.tp): c.source for c in data.candidates}
    runtimes = {w.name: w.runtime for w in scenario.workloads}
    rows_from: dict[tuple[str, str, int], str] = {}
    for (w, g, tp), source in sources.items():
        measured = (fresh_measurement(scenario, scenario.workload(w), g, tp)
                    if source is CapacitySource.measured else None)
        if measured is not None:
            rows_from[(w, g, tp)] = provenance(measured)
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
                cost_per_month=gpus * price * scenario.policy.paid_hours_per_month(kind, block),
                costs_fitted_on=None if sources[(w, g, tp)] is not CapacitySource.analytic
                else borrowed_costs(scenario, runtimes[w], g),
                measured_row=rows_from.get((w, g, tp)),
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
            hours = scenario.policy.paid_hours_per_month(kind, block)
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
    return finish_plan(base.model_copy(update={"allocations": allocations, "nodes": nodes}),
                       scenario)


def finish_plan(plan: Plan, scenario: Scenario) -> Plan:
    """Cost, cost per workload and token, and survivability of a plan whose fleet is set."""
    workload_costs = attribute_costs(plan, scenario)
    per_month = sum(n.cost_per_month for n in plan.nodes)
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


#: A bound this far (relative) above the plan's cost is the solver's rounding, not a contradiction.
BOUND_TOLERANCE = 1e-6


def bound_within_cost(plan: Plan) -> Plan:
    """The plan with a reported bound never above its cost.

    A bound within :data:`BOUND_TOLERANCE` above the cost (solver tolerances) is lowered to the
    cost, gap 0. One further above says the fleet is cheaper than any fleet meeting every row:
    the bound and gap are dropped and the plan is not ``optimal`` (the verifier then names the
    broken rows).
    """
    report = plan.solver
    cost = plan.cost.per_month
    if report.bound is None or report.bound <= cost:
        return plan
    if report.bound <= cost * (1 + BOUND_TOLERANCE) + BOUND_TOLERANCE:
        update: dict[str, object] = {"bound": cost, "gap": 0.0}
        status = plan.status
    else:
        update = {"bound": None, "gap": None}
        status = SolveStatus.feasible if plan.status is SolveStatus.optimal else plan.status
    return plan.model_copy(update={"solver": report.model_copy(update=update), "status": status})


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


def solver_summary(report: SolverReport, bound_unit: str = "") -> str:
    """One line on how the solve went, for people; ``bound_unit`` follows the bound
    (``USD/month``: a cost without its currency reads as any number)."""
    gap = "n/a" if report.gap is None else f"{report.gap:.2%}"
    bound = "n/a" if report.bound is None else f"{report.bound:,.2f} {bound_unit}".rstrip()
    return f"{report.name}: {report.seconds:.2f} s, gap {gap}, bound {bound}"
