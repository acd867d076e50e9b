"""Degradation plans: what to do, in order, when a failure leaves a workload short.

The field's order (docs/survivability.md), with the capacity each step frees for the broken
workload after the failure:

1. **Pause low-priority batch.** Batch workloads that need no survival and still run on
   non-spot GPUs of a type the broken workload has a configuration for hand their GPUs over:
   ⌊GPUs / tp⌋ replicas of the broken workload's best configuration on that GPU, at slo_rps ×
   failure utilization. GPUs of another type are paused too but free no capacity for it.
2. **Cap very long outputs (at the output P95) and hold new sessions.** Requests beyond the P95
   length take the decode share of the excess tokens; capping them frees that share:
   f = decode share × E[max(0, L − P95)] ÷ mean output, with the tail read from the
   percentiles (linear between P95 and P99, continued to P100 at P99 + (P99 − P95)/4, so
   E[max(0, L − P95)] = 0.03125 × (P99 − P95)); capacity C carries C × f / (1 − f) more.
   The decode share is mean output × TPOT ÷ (TTFT + mean output × TPOT) at the SLO rate.
3. **Queue or reject by tenant quota** whatever is still short, per tenant.

Never silently truncate context or swap models: both change answers users were promised.
"""

from __future__ import annotations

import math
from collections import defaultdict
from enum import StrEnum

from models.capacity import CapacityRow, CapacityTable
from models.common import Frozen, Survivability, WorkloadClass
from models.inventory import Fleet
from models.policy import TimeBlock
from models.scenario import Scenario
from models.workload import TokenPercentiles, Workload
from solver.survivability.check import WINDOW, CheckReport, CheckRow
from solver.survivability.failures import Failure, FailureKind, failure_domains, surviving_replicas

#: E[max(0, L − P95)] ÷ (P99 − P95) for the percentile tail described in the module docstring:
#: ∫ from 0.95 to 0.99 of (q − 0.95)/0.04 dq = 0.02, plus 0.01 × (1 + 1.25)/2 = 0.01125.
TAIL_EXCESS_PER_P95_TO_P99 = 0.03125

NEVER = (
    "never silently truncate context or swap models: both change the answers users were "
    "promised; shed load visibly instead"
)


class DegradeAction(StrEnum):
    """The steps, in the order the field recommends them."""

    pause_batch = "pause_batch"
    cap_output = "cap_output"
    shed_by_quota = "shed_by_quota"


class DegradeStep(Frozen):
    """One step and what it frees for the broken workload."""

    order: int
    action: DegradeAction
    frees_rps: float
    """Capacity freed (or, for shedding, demand removed) for the broken workload [1/s]."""
    frees_gpus: int = 0
    detail: str


class DegradationPlan(Frozen):
    """What to do when one failure leaves one workload short."""

    failure: str
    workload: str
    tenant: str
    slice: str
    shortfall_rps: float
    """Demand − usable capacity in the worst slice [1/s]."""
    steps: tuple[DegradeStep, ...]
    never: str = NEVER


def output_cap_fraction(tokens: TokenPercentiles, row: CapacityRow) -> float:
    """Share of a replica's work freed by capping outputs at their P95 [1] (module docstring)."""
    mean_out = tokens.typical  # [tokens]
    excess = TAIL_EXCESS_PER_P95_TO_P99 * (tokens.p99 - tokens.p95)  # [tokens/request]
    decode_ms = mean_out * row.tpot_p95_ms  # [tokens] × [ms/token]
    share = decode_ms / (row.ttft_p95_ms + decode_ms) if decode_ms > 0 else 0.0
    return share * min(excess / mean_out, 1.0)


def _best_row(table: CapacityTable, wl: Workload, gpu: str) -> CapacityRow | None:
    rows = [r for r in table.for_workload(wl.name) if r.gpu == gpu]
    return max(rows, key=lambda r: (r.slo_rps / r.tp, -r.tp), default=None)


def _worst_rows(report: CheckReport) -> dict[tuple[str, str], CheckRow]:
    worst: dict[tuple[str, str], CheckRow] = {}
    for r in report.rows:
        if r.holds or r.failure_kind is FailureKind.none:
            continue
        key = (r.failure, r.workload)
        if key not in worst or r.demand_rps - r.capacity_rps > (
            worst[key].demand_rps - worst[key].capacity_rps
        ):
            worst[key] = r
    return worst


def degradation_plans(
    report: CheckReport,
    fleet: Fleet,
    scenario: Scenario,
    table: CapacityTable,
) -> tuple[DegradationPlan, ...]:
    """For each failure that leaves a workload short, the steps and what each frees.

    Workloads short after the same failure share the paused batch GPUs: interactive workloads,
    then those that must survive, take them first, each only up to its shortfall.
    """
    domains = {f.label: f for f in failure_domains(fleet, scenario)}
    blocks = {b.name: b for b in scenario.policy.time_blocks}
    by_failure: dict[str, list[CheckRow]] = defaultdict(list)
    for (failure, _), row in sorted(_worst_rows(report).items()):
        by_failure[failure].append(row)
    plans: list[DegradationPlan] = []
    for label in report.failures:
        rows = by_failure.get(label, [])
        rows.sort(
            key=lambda r: (
                scenario.workload(r.workload).workload_class is not WorkloadClass.interactive,
                not r.required,
                r.workload,
            )
        )
        donated: dict[tuple[str, str], int] = defaultdict(int)  # (zone, gpu) → GPUs handed out
        for row in rows:
            plans.append(_plan_for(row, domains[label], fleet, scenario, table, blocks, donated))
    return tuple(plans)


def _plan_for(
    row: CheckRow,
    failure: Failure,
    fleet: Fleet,
    scenario: Scenario,
    table: CapacityTable,
    blocks: dict[str, TimeBlock],
    donated: dict[tuple[str, str], int],
) -> DegradationPlan:
    wl = scenario.workload(row.workload)
    shortfall = row.demand_rps - row.capacity_rps
    util = scenario.policy.failure_utilization
    slice_names = [row.slice] if row.slice != WINDOW else list(blocks)
    # 1. pause low-priority batch on GPUs that survive the failure
    donors = [
        w
        for w in scenario.workloads
        if w.workload_class is WorkloadClass.batch
        and w.survivability is Survivability.none
        and w.name != wl.name
    ]
    freed_rps, freed_gpus, paused, other_gpus = 0.0, 0, [], 0
    pool_gpus: dict[tuple[str, str], int] = defaultdict(int)
    for donor in donors:
        seen: set[tuple[str, str, int, str]] = set()
        for name in slice_names:
            for g, n in surviving_replicas(fleet, donor, scenario, name, failure):
                key = (g.zone, g.gpu, g.tp, g.purchase.value)
                if n > 0 and key not in seen:
                    seen.add(key)
                    pool_gpus[(g.zone, g.gpu)] += n * g.tp
                    if donor.name not in paused:
                        paused.append(donor.name)
    for (zone, gpu), gpus in sorted(pool_gpus.items()):
        gpus -= donated[(zone, gpu)]
        best = _best_row(table, wl, gpu)
        if best is None or gpus <= 0:
            other_gpus += max(gpus, 0)
            continue
        need = max(shortfall - freed_rps, 0.0)
        take = min(gpus // best.tp, _replicas_for(need, best.slo_rps * util))
        freed_rps += take * best.slo_rps * util  # [1/s]
        freed_gpus += take * best.tp
        donated[(zone, gpu)] += take * best.tp
    detail = (
        f"pause {', '.join(paused)}: {freed_gpus} GPUs become {wl.name} replicas"
        if paused
        else "no low-priority batch workload to pause"
    )
    if other_gpus:
        detail += f"; {other_gpus} other GPUs freed carry no {wl.name} configuration"
    steps = [
        DegradeStep(
            order=1,
            action=DegradeAction.pause_batch,
            frees_rps=freed_rps,
            frees_gpus=freed_gpus + other_gpus,
            detail=detail,
        )
    ]
    # 2. cap outputs at P95 and hold new sessions
    cap_rps = 0.0
    counted = [
        g
        for name in slice_names
        for g, n in surviving_replicas(
            fleet, wl, scenario, name, failure, count_spot=not row.required
        )
        if n > 0
    ]
    base_row = _best_row(table, wl, counted[0].gpu) if counted else None
    if base_row is not None:
        f = output_cap_fraction(wl.output_tokens, base_row)
        cap_rps = (row.capacity_rps + freed_rps) * f / (1.0 - f) if f < 1 else 0.0
    steps.append(
        DegradeStep(
            order=2,
            action=DegradeAction.cap_output,
            frees_rps=cap_rps,
            detail=(
                f"cap outputs at P95 ({wl.output_tokens.p95} tokens) and hold new sessions; "
                f"estimate from the output percentiles"
            ),
        )
    )
    # 3. queue or reject by tenant quota whatever is still short
    rest = max(shortfall - freed_rps - cap_rps, 0.0)
    steps.append(
        DegradeStep(
            order=3,
            action=DegradeAction.shed_by_quota,
            frees_rps=rest,
            detail=(
                f"queue or reject {rest:.3g} rps of tenant {wl.tenant} by quota"
                if rest > 0
                else "nothing left to shed"
            ),
        )
    )
    return DegradationPlan(
        failure=row.failure,
        workload=wl.name,
        tenant=wl.tenant,
        slice=row.slice,
        shortfall_rps=shortfall,
        steps=tuple(steps),
    )


def _replicas_for(need_rps: float, per_replica_rps: float) -> int:
    """Replicas that cover ``need_rps`` at ``per_replica_rps`` each [1]."""
    if need_rps <= 0:
        return 0
    return math.ceil(need_rps / per_replica_rps - 1e-9)
