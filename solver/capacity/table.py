"""The capacity table of a scenario: one row per feasible workload × GPU × TP, and the rejections.

A row's SLO-holding rate comes from the analytic replica model (:mod:`solver.capacity.replica`)
unless a fresh measured row (:mod:`solver.capacity.measured`) for the same configuration overrides
it — the row then says so, and what the model would have said.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from models.capacity import CapacityRow, CapacityTable, RejectedConfig
from models.catalog import GpuType, LlmSpec
from models.common import CapacitySource
from models.runtime import RuntimeSpec
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.measured import fresh_measurement, provenance
from solver.capacity.memory import max_stable_sequences, tp_degrees
from solver.capacity.perf import ReplicaPerf, workload_perf
from solver.capacity.pricing import cheapest_prices, cost_key, cost_per_million_tokens
from solver.capacity.replica import LoadPoint, latency_slack, load_profile, slo_holding_point


def _row(
    scenario: Scenario, workload: Workload, spec: LlmSpec, gpu: GpuType, tp: int,
    source: CapacitySource, max_seqs: int, rate_rps: float, ttft_ms: float, tpot_ms: float,
    perf: ReplicaPerf | None, note: str,
) -> CapacityRow:
    input_tps = rate_rps * workload.input_tokens.typical
    output_tps = rate_rps * workload.output_tokens.typical
    prices = cheapest_prices(scenario, gpu.name)
    return CapacityRow(
        workload=workload.name, model=spec.name, model_digest=spec.weights_digest, gpu=gpu.name,
        runtime=workload.runtime, precision=workload.precision, tp=tp, source=source,
        max_stable_sequences=max_seqs, slo_rps=rate_rps, input_tokens_per_s=input_tps,
        output_tokens_per_s=output_tps, ttft_p95_ms=ttft_ms, tpot_p95_ms=tpot_ms,
        headroom=latency_slack(workload, ttft_ms, tpot_ms),
        weights_gib_per_gpu=None if perf is None else perf.weights_gib_per_gpu,
        kv_capacity_tokens=None if perf is None else perf.kv_capacity_tokens,
        cost_per_million_tokens={
            k: cost_per_million_tokens(p, tp, input_tps + output_tps) for k, p in prices.items()
        },
        note=note,
    )


def configuration_row(
    scenario: Scenario, workload: Workload, gpu: GpuType, tp: int
) -> CapacityRow | RejectedConfig:
    """The capacity row of one workload on one GPU type at one TP, or why it is rejected."""
    spec = scenario.model(workload.model)
    precision = workload.precision
    fitted = workload_perf(scenario, workload, gpu, tp)
    perf, reason = (None, fitted) if isinstance(fitted, str) else (fitted, None)
    analytic: tuple[LoadPoint | None, str] = (None, reason or "")
    if perf is not None:
        analytic = slo_holding_point(load_profile(perf, workload), workload.slo.ttft_p95_ms,
                                     workload.tpot_slo_ms, workload.slo.e2e_p95_ms)
    measured = fresh_measurement(scenario, workload, gpu.name, tp)
    point, limit = analytic
    if measured is not None:
        model_says = (f"{point.rate_rps:.3g} req/s" if point is not None
                      else f"not a candidate ({limit})")
        note = (f"measured {measured.runtime} load test of {measured.measured_on} "
                f"({measured.model} on {measured.gpu} TP{measured.tp}, "
                f"{measured.precision.value}; {provenance(measured, dated=False)}) overrides "
                f"the analytic model: {model_says}")
        return _row(scenario, workload, spec, gpu, tp, CapacitySource.measured,
                    measured.max_stable_sequences, measured.tested_peak_rps,
                    measured.ttft_p95_ms, measured.decode_p95_ms_per_token, perf, note)
    if point is None:
        return RejectedConfig(workload=workload.name, gpu=gpu.name, precision=precision, tp=tp,
                              reason=limit)
    assert perf is not None
    p95_context = workload.input_tokens.p95 + workload.output_tokens.p95
    borrowed = borrowed_costs(scenario, workload.runtime, gpu.name)
    return _row(scenario, workload, spec, gpu, tp, CapacitySource.analytic,
                max_stable_sequences(perf.kv_capacity_tokens, p95_context), point.rate_rps,
                point.ttft_p95_ms, point.tpot_p95_ms, perf,
                f"analytic; the rate is limited by {limit}"
                + ("" if borrowed is None else f"; {borrowed_note(gpu.name, borrowed)}"))


def borrowed_costs(scenario: Scenario, runtime: str, gpu: str) -> str | None:
    """The GPU whose measurements fitted ``runtime``'s fixed costs on ``gpu``, where that is
    another GPU (``fitted_on`` in the runtime catalog): no measurement of ``gpu`` with that
    runtime stands behind its analytic rows, and a published check can be far off (vLLM on
    MI300X, which takes the A100's costs: per-token +96–105 % on AMD's figures;
    docs/calibration.md, "Tenth pass"). ``None`` where the costs are the GPU's own or the
    runtime lists none."""
    return costs_fitted_elsewhere(scenario.runtime(runtime), gpu)


def costs_fitted_elsewhere(runtime: RuntimeSpec | None, gpu: str) -> str | None:
    """:func:`borrowed_costs` of a runtime catalog entry (``fleetplan estimate`` has no
    scenario): the other GPU its fixed costs on ``gpu`` were fitted on, else ``None``."""
    costs = None if runtime is None else runtime.costs_for(gpu)
    return None if costs is None or costs.fitted_on == gpu else costs.fitted_on


def borrowed_note(gpu: str, fitted_on: str) -> str:
    """How a row says its runtime costs are another GPU's."""
    return f"fixed costs fitted on {fitted_on}, not measured on {gpu}"


def build_capacity_table(
    scenario: Scenario, gpus: Collection[str] | None = None,
    check: Callable[[], None] | None = None,
) -> CapacityTable:
    """Every workload × allowed GPU × TP: a row when it can serve, else a rejection.

    ``gpus`` limits the GPU types to those named; default every GPU of the catalog, offered or
    not (``fleetplan capacity`` lists them all; ``check`` adds the fleet's own GPUs). A plan
    passes :meth:`~models.scenario.Scenario.gpus_sold_or_held`: its program places no other,
    and each row costs a load profile.
    Rows are ordered by workload (scenario order), then :func:`cost_key`, GPU and TP.
    ``check`` is called before each configuration and may raise to stop the build (a plan's
    clock: a traced workload's configuration takes seconds).
    """
    rows: list[CapacityRow] = []
    rejected: list[RejectedConfig] = []
    for workload in scenario.workloads:
        allowed = workload.allowed_gpus or tuple(g.name for g in scenario.gpus)
        mine: list[CapacityRow] = []
        for gpu_name in (g for g in allowed if gpus is None or g in gpus):
            gpu = scenario.gpu(gpu_name)
            for tp in tp_degrees(gpu):
                if check is not None:
                    check()
                result = configuration_row(scenario, workload, gpu, tp)
                if isinstance(result, CapacityRow):
                    mine.append(result)
                else:
                    rejected.append(result)
        mine.sort(key=lambda r: (cost_key(r), r.gpu, r.tp))
        rows.extend(mine)
    return CapacityTable(rows=tuple(rows), rejected=tuple(rejected))


def table_key(scenario: Scenario) -> str:
    """What the capacity table of ``scenario`` depends on, as text: scenarios with the same key
    have the same table (of the same GPUs). Left out: inventory, horizon and demand scenarios,
    which no row reads, the demand (peak rate, hourly shape, daily volume) of every workload
    without an ``arrival.burst`` (its rows do not read it), and the as-of date where no
    measured row is aged by it. A workload with a burst keeps its demand in the key: its rows
    divide the burst over the replicas carrying its peak (``LoadProfile.workload_rps``, the
    split SCV and the followers' windows), so its SLO rate moves with the peak — shared across
    periods, a grown period was sized at the first one's rates (a linked trace's assistant at
    10 req/s with the TP4 rate of 6 req/s, 36 % above its own). Over periods, the blocks of
    every demand scenario then share one table per model migration (per distinct peak where a
    workload is bursty) and, with measured rows, per period start."""
    demand: dict[str, Any] = {"arrival": {"peak_rps", "hourly_shape"},
                              "batch": {"daily_requests"}}
    exclude: dict[str, Any] = {"inventory": True, "horizon": True, "demand_scenarios": True,
                               "workloads": {i: demand for i, w in enumerate(scenario.workloads)
                                             if w.arrival is None or w.arrival.burst is None}}
    if not scenario.measured:
        exclude["policy"] = {"as_of"}
    return scenario.model_dump_json(exclude=exclude)


def cached_tables(gpus: Collection[str] | None, check: Callable[[int], None] | None = None,
                  ) -> Callable[[Scenario], CapacityTable]:
    """:func:`build_capacity_table` of ``gpus``, built once per :func:`table_key`: for the
    scenarios of one plan's periods and demand scenarios. ``check`` is called with the number
    of tables built so far before each configuration a build evaluates, and may raise to stop
    it (:func:`build_capacity_table`)."""
    cache: dict[str, CapacityTable] = {}

    def table_for(scenario: Scenario) -> CapacityTable:
        key = table_key(scenario)
        if key not in cache:
            cache[key] = build_capacity_table(
                scenario, gpus, None if check is None else lambda: check(len(cache)))
        return cache[key]

    return table_for
