"""The capacity contract: the configuration rows a plan rests on, and what expires them.

``contract.yaml`` lists, for each configuration the plan buys replicas of, the field's
configuration-matrix row (model digest, GPU, runtime, precision, TP, workload, max stable
sequences, tested peak requests/s, TTFT P95, decode P95, headroom, source) and a fingerprint of
every input that, when it changes, makes the row's conclusion unsafe: the weights, the runtime,
the precision and TP, the measured row's date, the catalog efficiency factors and the runtime's
fixed costs on the GPU (analytic rows) and the SLO and token lengths the rate was derived for.
:func:`check_contract` compares a contract with a scenario as it is now and says which rows have
expired and why.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import Field

from models.capacity import CapacityRow, CapacityTable
from models.catalog import EfficiencyFactors
from models.common import CapacitySource, Frozen, OmitDefaults, Precision
from models.errors import InputError, Problem
from models.loader import read_document, validate_as
from models.measured import MeasuredCapacity
from models.plan import Plan
from models.runtime import RuntimeCosts
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.measured import length_mismatches, provenance
from solver.outputs.atomic import write_atomic
from solver.outputs.figures import used_configs

#: The capacity table of a period's single-period scenario (the planner's cache of them:
#: :func:`solver.capacity.table.cached_tables`).
TableFor = Callable[[Scenario], CapacityTable]

CONTRACT_VERSION = 1


class Fingerprint(OmitDefaults):
    """Inputs a contract row's conclusion depends on; any change expires the row."""

    omit_when_default = ("slo_e2e_p95_ms",)

    model: str
    model_weights_digest: str | None
    runtime: str
    """Serving runtime and version as the workload names it (e.g. ``vllm-0.6.3``)."""
    driver: str | None = None
    """GPU driver where the measurement recorded one; the schema has none yet, so ``None``."""
    precision: Precision
    tp: int
    measured_on: dt.date | None
    """Date of the measured row the rate comes from; ``None`` for an analytic row."""
    efficiency: EfficiencyFactors
    """The GPU's catalog efficiency factors (they set an analytic row's rate)."""
    runtime_costs: RuntimeCosts | None = None
    """The runtime's fixed costs on the GPU as the runtime catalog gives them (they set an
    analytic row's rate as much as the efficiency factors do); ``None``: the catalog lists
    none, or a contract written before they were recorded."""
    slo_ttft_p95_ms: float
    slo_tpot_p95_ms: float | None
    """``None``: no per-token SLO planned (one-token outputs)."""
    slo_e2e_p95_ms: float | None = None
    """The workload's ``slo.e2e_p95_ms``, which an analytic row's rate holds where stated;
    ``None``: none stated (or a contract written before it was planned), left out of
    contract.yaml."""
    input_tokens_p95: int
    output_tokens_p95: int
    arrival_scv: float | None = None
    """The workload's inter-arrival SCV (``arrival.burst``; 1: Poisson): an analytic row's
    rate is sized for it [1]. ``None``: a contract written before it was recorded."""
    burst_followers: tuple[tuple[float, float, float], ...] | None = None
    """``arrival.burst.followers`` as (window in mean gaps, mean, variance), empty without:
    the burst an analytic row's rate divides over the replicas. ``None``: as above."""


class ContractRow(OmitDefaults):
    """One configuration-matrix row of the contract."""

    omit_when_default = ("measured_row",)

    workload: str
    model: str
    model_digest: str | None
    gpu: str
    runtime: str
    precision: Precision
    tp: int = Field(ge=1)
    max_stable_sequences: int
    tested_peak_rps: float
    """SLO-holding rate of one replica (the capacity table's ``slo_rps``) [1/s]."""
    ttft_p95_ms: float
    decode_p95_ms_per_token: float
    headroom: float
    source: CapacitySource
    replicas_planned: int
    """Most replicas of this configuration running in any one slice, over all zones."""
    fingerprint: Fingerprint
    measured_row: str | None = None
    """A measured rate: the row it comes from (file and line, date, load test, lengths tested:
    :func:`solver.capacity.measured.provenance`); left out for a predicted one."""


class PeriodRows(Frozen):
    """The configurations a later period of a plan over periods runs, in any demand scenario:
    after a model migration they are not the first period's. Each row is fingerprinted
    against that period's workloads."""

    period: int = Field(ge=1)
    """The period's index, as plan.json's ``periods[].period`` (0, the first, is ``rows``)."""
    start: dt.date
    rows: tuple[ContractRow, ...]


class Contract(OmitDefaults):
    """Everything in ``contract.yaml``."""

    omit_when_default = ("periods",)

    version: int = CONTRACT_VERSION
    scenario: str
    plan_fingerprint: str = ""
    measured_max_age_days: int = Field(ge=1)
    rows: tuple[ContractRow, ...]
    """Required, though it may be empty: a contract whose rows were cut off must not pass.
    Over periods: the first period's configurations (the fleet shown)."""
    periods: tuple[PeriodRows, ...] = ()
    """A plan over periods: the configurations of each later period (left out otherwise)."""


class ExpiredRow(Frozen):
    """A contract row that no longer holds for the scenario, with every reason found."""

    workload: str
    gpu: str
    tp: int
    reasons: tuple[str, ...]
    period: int | None = None
    """A later period's row of a plan over periods (``None``: the first period's, ``rows``)."""
    start: dt.date | None = None


def _measured_row(scenario: Scenario, wl: Workload, gpu: str, tp: int) -> MeasuredCapacity | None:
    """The measured row of this exact configuration (latest date wins), if any."""
    rows = [m for m in scenario.measured
            if m.workload == wl.name and m.gpu == gpu and m.tp == tp and m.model == wl.model
            and m.runtime == wl.runtime and m.precision == wl.precision]
    return max(rows, key=lambda m: m.measured_on) if rows else None


def fingerprint_of(scenario: Scenario, wl: Workload, gpu: str, tp: int,
                   source: CapacitySource) -> Fingerprint:
    """The fingerprint of one configuration as the scenario stands."""
    measured = _measured_row(scenario, wl, gpu, tp) if source is CapacitySource.measured else None
    runtime = scenario.runtime(wl.runtime)
    burst = None if wl.arrival is None else wl.arrival.burst
    return Fingerprint(
        model=wl.model,
        model_weights_digest=scenario.model(wl.model).weights_digest,
        runtime=wl.runtime,
        precision=wl.precision,
        tp=tp,
        measured_on=measured.measured_on if measured is not None else None,
        efficiency=scenario.gpu(gpu).efficiency,
        runtime_costs=None if runtime is None else runtime.costs_for(gpu),
        slo_ttft_p95_ms=wl.slo.ttft_p95_ms,
        slo_tpot_p95_ms=wl.tpot_slo_ms if wl.has_second_token else None,
        slo_e2e_p95_ms=wl.slo.e2e_p95_ms,
        input_tokens_p95=wl.input_tokens.p95,
        output_tokens_p95=wl.output_tokens.p95,
        arrival_scv=1.0 if burst is None else float(burst.interarrival_scv),
        burst_followers=() if burst is None or not burst.followers else tuple(
            (float(f.window_gaps), float(f.followers_mean), float(f.followers_variance))
            for f in burst.followers),
    )


def _peak_replicas(plan: Plan, workload: str, gpu: str, tp: int) -> int:
    """Most replicas of a configuration running at once: reserved plus the busiest slice."""
    mine = [a for a in plan.allocations if (a.workload, a.gpu, a.tp) == (workload, gpu, tp)]
    reserved = sum(a.replicas for a in mine if a.slice is None)
    per_slice: dict[str, int] = {}
    for a in mine:
        if a.slice is not None:
            per_slice[a.slice] = per_slice.get(a.slice, 0) + a.replicas
    return reserved + max(per_slice.values(), default=0)


def _row(plan: Plan, scenario: Scenario, cap: CapacityRow) -> ContractRow:
    wl = scenario.workload(cap.workload)
    measured = (_measured_row(scenario, wl, cap.gpu, cap.tp)
                if cap.source is CapacitySource.measured else None)
    return ContractRow(
        workload=cap.workload, model=cap.model, model_digest=cap.model_digest, gpu=cap.gpu,
        runtime=cap.runtime, precision=cap.precision, tp=cap.tp,
        max_stable_sequences=cap.max_stable_sequences, tested_peak_rps=cap.slo_rps,
        ttft_p95_ms=cap.ttft_p95_ms, decode_p95_ms_per_token=cap.tpot_p95_ms,
        headroom=cap.headroom, source=cap.source,
        replicas_planned=_peak_replicas(plan, cap.workload, cap.gpu, cap.tp),
        fingerprint=fingerprint_of(scenario, wl, cap.gpu, cap.tp, cap.source),
        measured_row=None if measured is None else provenance(measured),
    )


def _rows(plan: Plan, scenario: Scenario, table: CapacityTable) -> tuple[ContractRow, ...]:
    """A row per configuration the plan's fleet runs replicas of, in table order."""
    rows = []
    for workload, gpu, tp in used_configs(plan, table):
        cap = table.row(workload, gpu, tp)
        if cap is not None:
            rows.append(_row(plan, scenario, cap))
    return tuple(rows)


def period_scenario(horizon_scenario: Scenario, period: int, demand: str | None = None
                    ) -> Scenario:
    """The single-period scenario of period ``period`` of a scenario with a ``horizon``, as
    the planner sizes it (:meth:`Scenario.in_period`, as ``solver.program.periods.
    block_scenario`` does): its workloads as then (migrations done; demand of ``demand``, else
    unscaled), measured rows aged to its start or ``policy.as_of`` where later."""
    from models.horizon import DemandScenario

    h = horizon_scenario.horizon
    assert h is not None
    chosen = next((d for d in horizon_scenario.demand_scenarios if d.name == demand),
                  DemandScenario(name="base", probability=1.0))
    return horizon_scenario.in_period(period, chosen,
                                      horizon_scenario.rows_aged_to(h.period_start(period)))


def _later_periods(plan: Plan, horizon_scenario: Scenario, table_for: TableFor | None = None
                   ) -> tuple[PeriodRows, ...]:
    """Per later period, a row per configuration any demand scenario runs then, fingerprinted
    against that period's workloads; its replicas the most any demand scenario runs.
    ``table_for``: the capacity tables the plan was planned with, by period scenario (the
    planner's cache; default: built here, once per table key)."""
    from solver.capacity.table import cached_tables
    from solver.survivability.signoff import period_fleet

    table_for = table_for or cached_tables(horizon_scenario.gpus_sold_or_held())
    out = []
    for k in sorted({p.period for p in plan.periods if p.period > 0}):
        mine = [p for p in plan.periods if p.period == k]
        by_config: dict[tuple[str, str, int], ContractRow] = {}
        for p in mine:
            one = period_scenario(horizon_scenario, k, p.scenario)
            for row in _rows(period_fleet(plan, p), one, table_for(one)):
                key = (row.workload, row.gpu, row.tp)
                if key not in by_config or row.replicas_planned > by_config[key].replicas_planned:
                    by_config[key] = row
        out.append(PeriodRows(period=k, start=mine[0].start, rows=tuple(by_config.values())))
    return tuple(out)


def build_contract(plan: Plan, scenario: Scenario, table: CapacityTable,
                   horizon_scenario: Scenario | None = None, table_for: TableFor | None = None
                   ) -> Contract:
    """Contract rows for every configuration the plan buys replicas of, in table order; for a
    plan over periods, given the scenario with its ``horizon`` (``scenario`` is then the first
    period's), those of each later period too, on the tables ``table_for`` gives (the
    planner's, where the caller has them: building them again took 2.5–3 s a plan)."""
    later = (() if plan.horizon is None or horizon_scenario is None
             or horizon_scenario.horizon is None
             else _later_periods(plan, horizon_scenario, table_for))
    return Contract(scenario=scenario.name, plan_fingerprint=plan.fingerprint,
                    measured_max_age_days=scenario.policy.measured_max_age_days,
                    rows=_rows(plan, scenario, table), periods=later)


def contract_yaml(contract: Contract) -> str:
    """``contract.yaml`` text: fields in schema order, dates as ISO strings."""
    header = ("# Capacity contract written by fleetplan: the configurations this plan rests on.\n"
              "# `fleetplan check --contract contract.yaml SCENARIO` says which rows expired.\n"
              "# A row's tested_peak_rps, ttft_p95_ms and decode_p95_ms_per_token were measured\n"
              "# by a load test where its source is `measured`; where it is `analytic` they are\n"
              "# the capacity model's prediction, not a test.\n")
    return header + yaml.safe_dump(contract.model_dump(mode="json"), sort_keys=False,
                                   allow_unicode=True)


def write_contract(plan: Plan, scenario: Scenario, table: CapacityTable,
                   path: str | Path, horizon_scenario: Scenario | None = None,
                   table_for: TableFor | None = None) -> Path:
    """Write ``contract.yaml`` atomically; returns its path (``horizon_scenario``,
    ``table_for``: as :func:`build_contract`)."""
    path = Path(path)
    write_atomic(path, contract_yaml(build_contract(plan, scenario, table, horizon_scenario,
                                                    table_for)))
    return path


def load_contract(path: str | Path) -> Contract:
    """Read and validate a ``contract.yaml``; a bad file is a located InputError."""
    path = Path(path)
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise InputError([Problem(str(path), "", "expected a mapping with `rows:`",
                                  "give the contract.yaml written beside a plan")])
    return validate_as(Contract, doc, str(path))


def _stated(value: float | None) -> str:
    """An optional SLO as a diff line shows it: ``none`` where not stated."""
    return "none" if value is None else f"{value:g}"


def _diff(label: str, old: object, new: object) -> list[str]:
    return [] if old == new else [f"{label} changed from {old} to {new}"]


def _measured_row_gone(row: ContractRow, scenario: Scenario) -> str:
    """Why a measured contract row has no fresh row behind it: gone from the scenario, or still
    there and no longer used. A runtime upgrade's expiry said "no longer in the scenario" of a
    row the scenario still had (fresh-s23), and sent its reader looking for a deleted file."""
    if any((m.workload, m.gpu, m.tp) == (row.workload, row.gpu, row.tp)
           for m in scenario.measured):
        return ("the measured row it rests on is still in the scenario but no longer used "
                "(`fleetplan validate` says why)")
    return "the measured row it rests on is no longer in the scenario"


def expiry_reasons(row: ContractRow, scenario: Scenario, as_of: dt.date,
                   max_age_days: int) -> tuple[str, ...]:
    """Why one contract row no longer holds for the scenario (empty when it still does)."""
    names = {w.name for w in scenario.workloads}
    if row.workload not in names:
        return (f"workload `{row.workload}` is no longer in the scenario",)
    if row.gpu not in {g.name for g in scenario.gpus}:
        return (f"GPU `{row.gpu}` is no longer in the catalog",)
    wl = scenario.workload(row.workload)
    if wl.model not in {m.name for m in scenario.models}:
        return (f"model `{wl.model}` is not in the catalog",)
    old = row.fingerprint
    new = fingerprint_of(scenario, wl, row.gpu, row.tp, row.source)
    reasons = [
        *_diff("model", old.model, new.model),
        *_diff("model weights digest", old.model_weights_digest, new.model_weights_digest),
        *_diff("runtime", old.runtime, new.runtime),
        *_diff("precision", old.precision.value, new.precision.value),
        *_diff("SLO TTFT P95 [ms]", old.slo_ttft_p95_ms, new.slo_ttft_p95_ms),
        *_diff("SLO per-token P95 [ms]", old.slo_tpot_p95_ms, new.slo_tpot_p95_ms),
        *_diff("SLO end-to-end P95 [ms]", _stated(old.slo_e2e_p95_ms),
               _stated(new.slo_e2e_p95_ms)),
        *_diff("input tokens P95", old.input_tokens_p95, new.input_tokens_p95),
        *_diff("output tokens P95", old.output_tokens_p95, new.output_tokens_p95),
    ]
    if old.driver is not None and new.driver is not None:
        reasons += _diff("driver", old.driver, new.driver)
    if row.tp > (scenario.gpu(row.gpu).gpus_per_node):
        reasons.append(f"TP {row.tp} no longer fits a node of {scenario.gpu(row.gpu).gpus_per_node}"
                       " GPUs")
    if row.source is CapacitySource.measured:
        if new.measured_on is None:
            reasons.append(_measured_row_gone(row, scenario))
        else:
            reasons += _diff("measured row date", old.measured_on, new.measured_on)
            measured = _measured_row(scenario, wl, row.gpu, row.tp)
            if measured is not None:  # the workload's lengths moved away from the test's
                reasons += length_mismatches(measured, wl,
                                             scenario.policy.measured_length_tolerance)
        if old.measured_on is not None:
            age = (as_of - old.measured_on).days
            if age > max_age_days:
                reasons.append(f"measured on {old.measured_on}, {age} days before {as_of}: older "
                               f"than the {max_age_days}-day limit")
    else:
        for field in EfficiencyFactors.model_fields:
            reasons += _diff(f"{row.gpu} efficiency factor {field}",
                             getattr(old.efficiency, field), getattr(new.efficiency, field))
        reasons += _costs_diff(row.gpu, old.runtime, old.runtime_costs, new.runtime_costs)
        # the arrivals' burst sizes an analytic rate (a contract written before it was
        # recorded is not expired by its appearing)
        if old.arrival_scv is not None:
            reasons += _diff("arrival burst inter-arrival SCV", old.arrival_scv,
                             new.arrival_scv)
        if old.burst_followers is not None and old.burst_followers != new.burst_followers:
            reasons.append("arrival burst followers changed (arrival.burst.followers: the "
                           "trace it was measured from, or the block, changed)")
    return tuple(reasons)


def _costs_diff(gpu: str, runtime: str, old: RuntimeCosts | None, new: RuntimeCosts | None
                ) -> list[str]:
    """Reasons the runtime's fixed costs on ``gpu`` expire an analytic row: a changed cost or
    source, or costs no longer listed. A contract that recorded none (written before they were
    recorded, or the catalog had none) is not expired by their appearing."""
    if old is None:
        return []
    if new is None:
        return [f"{runtime}'s fixed costs on {gpu} are no longer in the runtime catalog"]
    return [reason for field in RuntimeCosts.model_fields if field != "gpu"
            for reason in _diff(f"{runtime} fixed cost {field} on {gpu}",
                                getattr(old, field), getattr(new, field))]


def check_contract(contract_path: str | Path, scenario: Scenario,
                   today: dt.date | None = None) -> list[ExpiredRow]:
    """Rows of a contract that have expired against the scenario, each with its reasons.

    Ages count to the scenario's ``policy.as_of``, else ``today`` (default: the current date);
    the age limit is the scenario's ``policy.measured_max_age_days``.
    """
    contract = load_contract(contract_path)
    as_of = scenario.policy.as_of_date(today)
    max_age = scenario.policy.measured_max_age_days
    out = []
    for row in contract.rows:
        reasons = expiry_reasons(row, scenario, as_of, max_age)
        if reasons:
            out.append(ExpiredRow(workload=row.workload, gpu=row.gpu, tp=row.tp, reasons=reasons))
    for later in contract.periods:
        # against the period's workloads (a migration done) where the scenario still plans
        # that period; else against the scenario as it stands
        h = scenario.horizon
        one = (period_scenario(scenario, later.period)
               if h is not None and later.period < h.count else scenario)
        day = max(as_of, later.start)  # measured rows must last to the period's start
        for row in later.rows:
            reasons = expiry_reasons(row, one, day, max_age)
            if reasons:
                out.append(ExpiredRow(workload=row.workload, gpu=row.gpu, tp=row.tp,
                                      reasons=reasons, period=later.period, start=later.start))
    return out


def render_expired(expired: list[ExpiredRow], contract_path: str | Path) -> list[str]:
    """Lines for people: which contract rows expired and why (or that none did)."""
    if not expired:
        return [f"contract {contract_path}: every row still holds"]
    out = [f"contract {contract_path}: {len(expired)} row{'s' if len(expired) != 1 else ''} "
           "expired — re-test these configurations before relying on the plan"]
    for e in expired:
        when = "" if e.period is None else f" (period {e.period}, from {e.start})"
        out.append(f"  {e.workload} on {e.gpu} TP{e.tp}{when}:")
        out += [f"    - {reason}" for reason in e.reasons]
    return out
