"""Survivability check of a fleet: every workload, every slice, steady state and every failure.

For the steady state and each failure domain of
:func:`solver.survivability.failures.failure_domains` (one node
of each zone × GPU × purchase pool, each zone, each region where there are several), per
workload and slice: the capacity that still serves, the utilization it runs at, the TTFT and
TPOT P95 the capacity model predicts at the resulting per-replica load, whether demand is met,
and the margin. Rules (docs/survivability.md):

- steady state: Σ replicas × slo_rps × target utilization (spot × (1 − interruption rate));
- after a failure the workload must survive: only running non-spot replicas, at slo_rps × the
  policy's failure utilization (a failure it need not survive also counts its surviving spot
  replicas, discounted, to show what it still has);
- a batch workload given as a daily volume is checked over its window as a whole (slice
  ``window``): average capacity over the window's hours against the volume's average rate;
- every workload must hold in the steady state; ``n_plus_1`` must survive any node, and
  ``zone_loss`` any zone and any node. Region losses are reported, never required.

``holds`` is the capacity arithmetic (the contract the program plans with); the predicted
latencies are reported beside it, with ``latency_holds`` from the model's own verdict.
"""

from __future__ import annotations

from collections.abc import Callable

from models.capacity import CapacityRow, CapacityTable
from models.common import Frozen, OmitDefaults, PurchaseKind
from models.inventory import Fleet, FleetReplicaGroup
from models.policy import TimeBlock
from models.scenario import Scenario
from models.workload import SECONDS_PER_HOUR, Workload
from solver.survivability.failures import (
    Failure,
    FailureKind,
    block_hours_in_window,
    capacity_holds,
    failure_domains,
    required_failures,
    runs_in,
    slice_demand_rps,
    spot_available_share,
    surviving_replicas,
)

#: Slice name of the whole-window row of a batch workload given as a daily volume.
WINDOW = "window"


class LatencyAtLoad(Frozen):
    """What the capacity model predicts for one replica at a given rate."""

    ttft_p95_ms: float
    tpot_p95_ms: float
    holds: bool
    e2e_p95_ms: float | None = None
    """End-to-end P95 of an answer of the workload's P95 output length [ms] (``None``: not
    predicted)."""
    basis: str = ""
    """Where the figures come from when they are a load test's points, not the model
    (``LatencyPrediction.basis``); empty otherwise."""


#: ``predict(workload, row, rate_rps)``: the capacity model's latency at a per-replica rate.
Predictor = Callable[[Workload, CapacityRow, float], LatencyAtLoad]


class CheckRow(OmitDefaults):
    """One workload in one slice under one failure."""

    omit_when_default = ("e2e_p95_ms", "latency_basis")

    failure: str
    """``none``, ``node:<zone>/<gpu>/<purchase>``, ``zone:<zone>`` or ``region:<region>``."""
    failure_kind: FailureKind
    workload: str
    slice: str
    required: bool
    """The workload must survive this failure (steady state: always)."""
    capacity_rps: float
    """Usable capacity: at target utilization in the steady state, else at failure utilization."""
    demand_rps: float
    replicas: int
    """Replicas counted (after the failure; spot excluded after a failure)."""
    utilization: float | None
    """Demand ÷ Σ counted replicas × slo_rps: share of the SLO-holding rate in use [1]."""
    ttft_p95_ms: float | None
    """Worst predicted TTFT P95 over the replica configurations at that load [ms]."""
    tpot_p95_ms: float | None
    """Worst predicted time per output token P95 [ms/token]."""
    latency_holds: bool | None
    holds: bool
    margin_pct: float | None
    """(capacity − demand) ÷ demand × 100; ``None`` without demand."""
    e2e_p95_ms: float | None = None
    """Worst predicted end-to-end P95 of a P95 answer, where the workload states
    ``slo.e2e_p95_ms`` (``latency_holds`` then holds it too) [ms]."""
    latency_basis: str = ""
    """For each configuration whose latencies come from its load test's points, which points
    (``H100-SXM TP8 measured: interpolated between 0.788 and 1.46 req/s (…)``), ``; ``-joined;
    empty where every figure is the model's."""


class CheckReport(Frozen):
    """Every row of a fleet check, and the verdict."""

    scenario: str
    fleet: str
    failures: tuple[str, ...]
    workloads: tuple[str, ...]
    rows: tuple[CheckRow, ...]

    @property
    def broken(self) -> tuple[CheckRow, ...]:
        """Rows that fail a requirement (steady state, or a failure the workload must survive)."""
        return tuple(r for r in self.rows if r.required and not r.holds)

    @property
    def ok(self) -> bool:
        """No required row fails."""
        return not self.broken

    def cell(self, failure: str, workload: str) -> CheckRow | None:
        """The worst row (smallest margin) of one failure and workload over the slices."""
        rows = [r for r in self.rows if r.failure == failure and r.workload == workload]
        if not rows:
            return None
        return min(rows, key=lambda r: (r.holds, _margin_key(r)))


def _margin_key(row: CheckRow) -> float:
    return row.margin_pct if row.margin_pct is not None else float("inf")


def capacity_predictor(scenario: Scenario) -> Predictor:
    """The capacity model's ``predict_at_rate`` as a :data:`Predictor`, each configuration's
    load profile built once for the scenario."""
    from solver.capacity.replica import PredictMemo, predict_at_rate

    memo: PredictMemo = {}

    def predict(workload: Workload, row: CapacityRow, rate_rps: float) -> LatencyAtLoad:
        p = predict_at_rate(scenario, workload, row, rate_rps, memo)
        return LatencyAtLoad(ttft_p95_ms=p.ttft_p95_ms, tpot_p95_ms=p.tpot_p95_ms, holds=p.holds,
                             e2e_p95_ms=p.e2e_p95_ms, basis=p.basis)

    return predict


def _table_row(table: CapacityTable, g: FleetReplicaGroup) -> CapacityRow | None:
    for r in table.for_workload(g.workload):
        if (r.gpu, r.tp, r.precision) == (g.gpu, g.tp, g.precision):
            return r
    return None


def _counted(
    fleet: Fleet,
    wl: Workload,
    scenario: Scenario,
    slice_name: str,
    failure: Failure,
    required: bool,
) -> tuple[list[tuple[FleetReplicaGroup, int]], float, float]:
    """Counted groups with replica counts, usable capacity [1/s] and raw SLO rate [1/s].

    Spot replicas count (discounted by their interruption rate) in the steady state and for a
    failure the workload need not survive; never for one it must survive.
    """
    steady = failure.kind is FailureKind.none
    if steady:
        groups = [
            (g, g.replicas)
            for g in fleet.replicas
            if g.workload == wl.name and runs_in(g.slice, slice_name) and g.replicas > 0
        ]
    else:
        groups = surviving_replicas(
            fleet, wl, scenario, slice_name, failure, count_spot=not required
        )
    raw = 0.0
    for g, n in groups:
        keep = 1.0
        if g.purchase is PurchaseKind.spot:
            keep = spot_available_share(scenario, g.zone, g.gpu)  # [1]
        raw += n * g.slo_rps * keep  # [1/s]
    util = wl.utilization if steady else scenario.policy.failure_utilization
    return groups, raw * util, raw


def _latency(
    groups: list[tuple[FleetReplicaGroup, int]],
    utilization: float | None,
    table: CapacityTable,
    wl: Workload,
    predict: Predictor | None,
) -> tuple[float | None, float | None, bool | None, float | None, str]:
    """The worst predicted TTFT, per-token and (where the workload states an end-to-end SLO)
    end-to-end P95 over the groups at ``utilization``, whether every group holds, and which
    configurations' figures are their load tests' points (``CheckRow.latency_basis``)."""
    if predict is None or utilization is None:
        return None, None, None, None, ""
    ttft: float | None = None
    tpot: float | None = None
    e2e: float | None = None
    ok: bool | None = None
    bases: dict[str, None] = {}
    for g, n in groups:
        row = _table_row(table, g)
        if row is None or n <= 0:
            continue
        p = predict(wl, row, utilization * g.slo_rps)  # per-replica load [1/s]
        if p.basis:
            bases[f"{row.gpu} TP{row.tp} — {p.basis}"] = None
        ttft = p.ttft_p95_ms if ttft is None else max(ttft, p.ttft_p95_ms)
        tpot = p.tpot_p95_ms if tpot is None else max(tpot, p.tpot_p95_ms)
        if wl.slo.e2e_p95_ms is not None and p.e2e_p95_ms is not None:
            e2e = p.e2e_p95_ms if e2e is None else max(e2e, p.e2e_p95_ms)
        ok = p.holds if ok is None else (ok and p.holds)
    # one-token outputs have no per-token time: the model's one pretend step is not shown
    return ttft, tpot if wl.has_second_token else None, ok, e2e, "; ".join(bases)


def _row(
    failure: Failure,
    wl: Workload,
    slice_name: str,
    required: bool,
    groups: list[tuple[FleetReplicaGroup, int]],
    capacity: float,
    raw: float,
    demand: float,
    table: CapacityTable,
    predict: Predictor | None,
) -> CheckRow:
    utilization = demand / raw if raw > 0 else None
    ttft, tpot, latency_ok, e2e, basis = _latency(groups, utilization, table, wl, predict)
    holds = capacity_holds(capacity, demand)
    margin = (capacity - demand) / demand * 100.0 if demand > 0 else None
    return CheckRow(
        failure=failure.label,
        failure_kind=failure.kind,
        workload=wl.name,
        slice=slice_name,
        required=required,
        capacity_rps=capacity,
        demand_rps=demand,
        replicas=sum(n for _, n in groups),
        utilization=utilization,
        ttft_p95_ms=ttft,
        tpot_p95_ms=tpot,
        latency_holds=latency_ok,
        holds=holds,
        margin_pct=margin,
        e2e_p95_ms=e2e,
        latency_basis=basis,
    )


def _window_row(
    fleet: Fleet,
    wl: Workload,
    scenario: Scenario,
    failure: Failure,
    required: bool,
    blocks: tuple[TimeBlock, ...],
    table: CapacityTable,
    predict: Predictor | None,
) -> CheckRow:
    """A daily-volume batch workload over its window: hour-weighted average capacity."""
    assert wl.batch is not None
    hours = 0
    capacity = raw = 0.0
    groups: list[tuple[FleetReplicaGroup, int]] = []
    busiest = -1.0
    for b in blocks:
        h = block_hours_in_window(wl, b)
        if h == 0:
            continue
        g_b, cap_b, raw_b = _counted(fleet, wl, scenario, b.name, failure, required)
        hours += h
        capacity += cap_b * h  # [1/s × h]
        raw += raw_b * h
        if raw_b > busiest:  # predict latency on the slice with the most capacity
            groups, busiest = g_b, raw_b
    demand = wl.batch.daily_requests / (hours * SECONDS_PER_HOUR)  # [1/s]
    return _row(
        failure, wl, WINDOW, required, groups, capacity / hours, raw / hours, demand, table, predict
    )


def check_fleet(
    fleet: Fleet,
    scenario: Scenario,
    table: CapacityTable,
    predict: Predictor | None = None,
) -> CheckReport:
    """Check a fleet against its scenario under the steady state and every failure domain.

    ``predict`` gives latencies at load (default: none, capacity arithmetic only; the CLI passes
    :func:`capacity_predictor`).
    """
    blocks = scenario.policy.time_blocks
    domains = failure_domains(fleet, scenario)
    rows: list[CheckRow] = []
    for failure in domains:
        for wl in scenario.workloads:
            required = failure.kind is FailureKind.none or failure in required_failures(
                wl, (failure,)
            )
            if wl.batch is not None:
                rows.append(
                    _window_row(fleet, wl, scenario, failure, required, blocks, table, predict)
                )
                continue
            for b in blocks:
                groups, capacity, raw = _counted(fleet, wl, scenario, b.name, failure, required)
                rows.append(
                    _row(
                        failure,
                        wl,
                        b.name,
                        required,
                        groups,
                        capacity,
                        raw,
                        slice_demand_rps(wl, b),
                        table,
                        predict,
                    )
                )
    return CheckReport(
        scenario=scenario.name,
        fleet=fleet.name,
        failures=tuple(f.label for f in domains),
        workloads=tuple(w.name for w in scenario.workloads),
        rows=tuple(rows),
    )
