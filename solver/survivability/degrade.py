"""Degradation plans: what to do, in order, when a failure leaves a workload short.

The field's order (docs/survivability.md), with the capacity each step frees for the broken
workload after the failure:

1. **Pause low-priority batch.** Batch workloads that need no survival and still run on
   non-spot GPUs of a type the broken workload has a configuration for hand their GPUs over:
   ⌊GPUs / tp⌋ replicas of the broken workload's best configuration on that GPU, at slo_rps ×
   failure utilization. GPUs of another type are paused too but free no capacity for it.
   In a slice outside a batch workload's window (a daily volume runs only in its window hours)
   its GPUs are idle anyway: they are taken as idle GPUs (``use_idle_batch_gpus`` when nothing
   is paused), not "paused". A step that frees nothing says why ("nothing to pause for agent:
   agent may not run on L40S") instead of "0 GPUs become … replicas".
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

from pydantic import Field

from models.capacity import CapacityRow, CapacityTable
from models.common import Frozen, Survivability, WorkloadClass
from models.inventory import Fleet
from models.policy import TimeBlock
from models.scenario import Scenario
from models.units import amount_text
from models.workload import TokenPercentiles, Workload
from solver.survivability.check import WINDOW, CheckReport, CheckRow
from solver.survivability.failures import (
    Failure,
    FailureKind,
    block_hours_in_window,
    failure_domains,
    surviving_replicas,
)

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
    use_idle_batch_gpus = "use_idle_batch_gpus"
    """Step 1 in a slice outside every donor batch workload's window: its GPUs idle there."""


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
    # 1. pause low-priority batch on GPUs that survive the failure (or, in a slice outside a
    # batch workload's window, take its GPUs that are idle there anyway)
    donors = [
        w
        for w in scenario.workloads
        if w.workload_class is WorkloadClass.batch
        and w.survivability is Survivability.none
        and w.name != wl.name
    ]
    running: dict[tuple[str, str], int] = defaultdict(int)  # (zone, gpu) → GPUs of batch at work
    idle: dict[tuple[str, str], int] = defaultdict(int)  # (zone, gpu) → GPUs of batch off-window
    paused: list[str] = []
    idle_donors: list[Workload] = []
    for donor in donors:
        seen: set[tuple[str, str, int, str]] = set()
        for name in slice_names:
            for g, n in surviving_replicas(fleet, donor, scenario, name, failure):
                key = (g.zone, g.gpu, g.tp, g.purchase.value)
                if n <= 0 or key in seen:
                    continue
                seen.add(key)
                at_work = any(
                    block_hours_in_window(donor, blocks[s]) > 0
                    for s in (slice_names if g.slice is None else [name])
                )
                (running if at_work else idle)[(g.zone, g.gpu)] += n * g.tp
                if at_work and donor.name not in paused:
                    paused.append(donor.name)
                if not at_work and donor not in idle_donors:
                    idle_donors.append(donor)
    need = shortfall
    idle_use = _hand_over(idle, wl, need, util, table, donated)
    pause_use = _hand_over(running, wl, need - idle_use.rps, util, table, donated)
    freed_rps = idle_use.rps + pause_use.rps
    parts = []
    if idle_donors:
        parts.append(_idle_text(idle_donors, row.slice, idle_use, wl))
    if paused:
        parts.append(
            f"pause {', '.join(paused)}: {pause_use.gpus} GPUs become {wl.name} replicas"
            if pause_use.gpus
            else f"nothing to pause for {wl.name}: {_why_none(pause_use, wl)}"
        )
        if pause_use.gpus and pause_use.no_config:
            parts.append(
                f"{sum(pause_use.no_config.values())} other GPUs freed carry no "
                f"{wl.name} configuration"
            )
    elif not idle_donors:  # a batch workload with nothing left there is not an absent one
        parts.append(
            f"nothing to pause: {', '.join(d.name for d in donors)} (batch) "
            f"{'has' if len(donors) == 1 else 'have'} no GPUs left in {row.slice} after this "
            "failure" if donors else "no low-priority batch workload to pause")
    steps = [
        DegradeStep(
            order=1,
            action=(
                DegradeAction.pause_batch
                if paused or not idle_donors
                else DegradeAction.use_idle_batch_gpus
            ),
            frees_rps=freed_rps,
            frees_gpus=idle_use.gpus
            + pause_use.gpus
            + (sum(pause_use.no_config.values()) if pause_use.gpus else 0),
            detail="; ".join(parts),
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
                f"queue or reject {amount_text(rest)} rps of tenant {wl.tenant} by quota"
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


class _HandOver(Frozen):
    """What a set of batch GPU pools gives a short workload."""

    rps: float = 0.0
    """Capacity freed for the short workload [1/s]."""
    gpus: int = 0
    """GPUs that become its replicas [1]."""
    no_config: dict[str, int] = Field(default_factory=dict)
    """GPU type → GPUs of it the short workload has no configuration on [1]."""
    taken_gpus: int = 0
    """GPUs already handed to a workload short after the same failure [1]."""
    covered: bool = False
    """Whether the shortfall was met before these pools were used."""


def _hand_over(
    pools: dict[tuple[str, str], int],
    wl: Workload,
    need_rps: float,
    util: float,
    table: CapacityTable,
    donated: dict[tuple[str, str], int],
) -> _HandOver:
    """Turn batch GPU pools into replicas of ``wl`` up to ``need_rps``, marking them donated."""
    rps, gpus, taken, covered = 0.0, 0, 0, False
    no_config: dict[str, int] = defaultdict(int)
    for (zone, gpu), pool in sorted(pools.items()):
        left = pool - donated[(zone, gpu)]
        best = _best_row(table, wl, gpu)
        if best is None:
            no_config[gpu] += max(left, 0)
            continue
        if left <= 0:
            taken += pool
            continue
        n = min(left // best.tp, _replicas_for(need_rps - rps, best.slo_rps * util))
        if n == 0 and need_rps - rps <= 0:
            covered = True
        rps += n * best.slo_rps * util  # [1/s]
        gpus += n * best.tp
        donated[(zone, gpu)] += n * best.tp
    return _HandOver(
        rps=rps, gpus=gpus, no_config=dict(no_config), taken_gpus=taken, covered=covered
    )


def _why_none(use: _HandOver, wl: Workload) -> str:
    """Why batch GPUs gave ``wl`` nothing, for a step that frees nothing."""
    why = []
    for gpu in sorted(use.no_config):
        allowed = wl.allowed_gpus is None or gpu in wl.allowed_gpus
        why.append(
            f"{wl.name} has no configuration on {gpu} that fits and holds its SLO"
            if allowed
            else f"{wl.name} may not run on {gpu}"
        )
    if use.taken_gpus:
        why.append(
            f"their {use.taken_gpus} GPUs {wl.name} could use went to a workload short after "
            f"the same failure first"
        )
    if use.covered:
        why.append("the steps before cover the shortfall")
    return "; ".join(why) or "their GPUs hold too few for one replica"


def _hours_text(hours: tuple[int, ...]) -> str:
    """Hours as ranges of consecutive hours: (2, 3, 4, 5, 6, 7) → ``2–7`` [h]."""
    runs: list[list[int]] = []
    for h in sorted(hours):
        if runs and h == runs[-1][-1] + 1:
            runs[-1].append(h)
        else:
            runs.append([h])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def _idle_text(donors: list[Workload], slice_name: str, use: _HandOver, wl: Workload) -> str:
    """The GPUs of batch workloads outside their window in a slice: idle, not paused."""
    off = ", ".join(
        f"{d.name} (window hours {_hours_text(d.batch.window_hours)})" if d.batch else d.name
        for d in donors
    )
    head = f"{off} does not run in {slice_name}: its GPUs are idle there"
    if len(donors) > 1:
        head = f"{off} do not run in {slice_name}: their GPUs are idle there"
    if use.gpus:
        return f"{head}; {use.gpus} of them become {wl.name} replicas"
    return f"{head}, but give {wl.name} nothing: {_why_none(use, wl)}"
