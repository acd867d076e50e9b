"""Measured capacity rows: when one stands for its workload, and when it has expired.

A measured row overrides the analytic model for its configuration while it is fresh: same model (and
weights digest), runtime and precision as the workload, P95s at its rate within the workload's SLO,
token lengths tested within the policy's tolerance of the workload's (where the row records them),
and younger than the policy's maximum age counted to the scenario's ``as_of`` date.
"""

from __future__ import annotations

from models.catalog import GpuType, LlmSpec
from models.common import BYTES_PER_ELEMENT
from models.measured import MeasuredCapacity
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.memory import (
    BYTES_PER_GIB,
    max_stable_sequences,
    memory_plan,
    tp_degrees,
    weight_bytes_per_gpu,
)
from solver.capacity.perf import compute_tflops, perf_model
from solver.capacity.replica import e2e_p95_ms

#: A row's P95 may exceed the SLO by this share and still hold it: ``fleetplan import-bench``
#: interpolates the rate to where a P95 reaches its limit, which floating point may pass by an
#: ulp [1].
SLO_TOLERANCE = 1e-9


def staleness(scenario: Scenario, row: MeasuredCapacity) -> str | None:
    """Why a measured row cannot stand for its workload, or ``None`` when it is fresh."""
    workload = scenario.workload(row.workload)
    spec = scenario.model(workload.model)
    reasons = []
    if row.model != workload.model:
        reasons.append(f"model {row.model} is not the workload's {workload.model}")
    if row.model_digest and spec.weights_digest and row.model_digest != spec.weights_digest:
        reasons.append(f"digest {row.model_digest} differs from {spec.weights_digest}")
    if row.runtime != workload.runtime:
        reasons.append(f"runtime {row.runtime} differs from the workload's {workload.runtime}")
    if row.precision != workload.precision:
        reasons.append(f"precision {row.precision.value} differs from the workload's "
                       f"{workload.precision.value}")
    # the row's rate is where its test held the SLO it was imported against; a tighter SLO
    # since then is not held at that rate (a new user's 1,000 → 500 ms TTFT kept 19.7 req/s at
    # a TTFT P95 of 1,000 ms): the files, imported again against this SLO, give its rate
    for what, measured, limit, unit in (
            ("TTFT P95", row.ttft_p95_ms, workload.slo.ttft_p95_ms, "ms"),
            ("per-token P95", row.decode_p95_ms_per_token, workload.tpot_slo_ms, "ms")):
        if measured > limit * (1 + SLO_TOLERANCE):
            reasons.append(f"its {what} {measured:,.4g} {unit} at {row.tested_peak_rps:.4g} "
                           f"req/s is above the workload's SLO of {limit:,.4g} {unit} (import "
                           "the load test again against this SLO)")
    reasons += e2e_mismatch(row, workload)
    reasons += length_mismatches(row, workload, scenario.policy.measured_length_tolerance)
    age_days = (scenario.policy.as_of_date() - row.measured_on).days
    if age_days > scenario.policy.measured_max_age_days:
        reasons.append(f"measured {age_days} days ago, older than the policy's "
                       f"{scenario.policy.measured_max_age_days}")
    return "; ".join(reasons) or None


def e2e_mismatch(row: MeasuredCapacity, workload: Workload) -> list[str]:
    """Why a row's own latencies break the workload's ``slo.e2e_p95_ms`` (one reason, or none):
    its TTFT P95 + (output P95 − 1) × per-token P95 — the end-to-end time of an answer of the
    workload's P95 output length, as the analytic rows are held to it
    (:func:`~solver.capacity.replica.e2e_p95_ms`) — above the target. A load test judges TTFT
    and per-token only (``fleetplan import-bench``), so a row within both can still be past
    the end-to-end SLO the user stated: it is not used, as a row past either of the others is
    not, and the analytic model sizes the configuration."""
    slo_ms = workload.slo.e2e_p95_ms
    if slo_ms is None:
        return []
    tokens = workload.output_tokens.p95
    e2e_ms = e2e_p95_ms(row.ttft_p95_ms, row.decode_p95_ms_per_token, tokens)
    if e2e_ms <= slo_ms * (1 + SLO_TOLERANCE):
        return []
    return [f"its end-to-end P95 of a {tokens:,}-token answer, {e2e_ms:,.0f} ms (TTFT "
            f"{row.ttft_p95_ms:,.4g} ms + {tokens - 1:,} × per-token "
            f"{row.decode_p95_ms_per_token:,.4g} ms) at {row.tested_peak_rps:.4g} req/s, is "
            f"above the workload's slo.e2e_p95_ms of {slo_ms:,.6g} ms (load-test lower rates "
            "and give the row the highest rate whose P95s hold it)"]


def length_mismatches(row: MeasuredCapacity, workload: Workload, tolerance: float
                      ) -> list[str]:
    """Why the lengths a row was tested at do not stand for the workload's: each recorded P50
    or P95 (input, output) more than ``tolerance`` × the workload's away from it. A row that
    records only a mean is held to the workload's mean (its P50 where it gives none). Empty
    when the lengths match, or the row records none (:func:`unknown_lengths` says so)."""
    out = []
    for direction in ("input", "output"):
        tested = row.tested_lengths(direction)
        stats = getattr(workload, f"{direction}_tokens")
        pairs = [(s.upper(), tested[s], float(getattr(stats, s))) for s in ("p50", "p95")
                 if s in tested]
        if not pairs and "mean" in tested:
            pairs = [("mean", tested["mean"], stats.typical)]
        for what, got, want in pairs:
            if abs(got - want) > tolerance * want:
                their = what if what != "mean" or stats.mean is not None else "P50"
                out.append(f"its test's {direction} {what} was {got:,.0f} tokens, the workload's "
                           f"{their} is {want:,.0f} ({got / want - 1:+.0%}, beyond "
                           f"policy.measured_length_tolerance ±{tolerance:.0%}; load-test "
                           "the workload's lengths and import the files again)")
    return out


def unknown_lengths(scenario: Scenario) -> list[str]:
    """One note per used measured row that records no token lengths of a direction: the plan
    cannot tell whether the workload's lengths still match its test."""
    out = []
    for i, row in enumerate(scenario.measured):
        missing = [d for d in ("input", "output") if not row.tested_lengths(d)]
        if missing and unused_because(scenario, row) is None:
            fields = ", ".join(f"{d}_tokens_p50/_p95" for d in missing)
            out.append(f"{_where(i, row)}: records no {' or '.join(missing)} token lengths, so "
                       "whether its test stands for the workload's lengths is unknown (give "
                       f"the row's {fields} as tested, or import the load test with fleetplan "
                       "import-bench, which records them where the files do)")
    return out


def _gpu_and_model(scenario: Scenario, row: MeasuredCapacity) -> tuple[GpuType, LlmSpec] | None:
    """The scenario's GPU type and model of ``row``; ``None`` where either is not in it (a
    measured row may name what the scenario does not sell or run)."""
    gpu = next((g for g in scenario.gpus if g.name == row.gpu), None)
    model = next((m for m in scenario.models if m.name == row.model), None)
    return None if gpu is None or model is None else (gpu, model)


def weights_do_not_fit(scenario: Scenario, row: MeasuredCapacity) -> str | None:
    """Why no replica of ``row``'s configuration can have run: its model's weights alone, split
    over its ``tp`` GPUs, are more than one GPU's memory; ``None`` when they fit (or the row's
    model or GPU is not in the scenario). Measured beats the analytic model's throughput, not
    arithmetic: a BLOOM-176B row imported with ``--gpu A10G --tp 1`` (352 GB of weights on a
    22.5 GiB GPU) was planned on single A10Gs. Only the weights are counted — the runtime's
    overhead and the KV cache are the analytic model's, which a measurement may beat."""
    found = _gpu_and_model(scenario, row)
    if found is None:
        return None
    gpu, model = found
    weights_gib = weight_bytes_per_gpu(model, row.precision, row.tp) / BYTES_PER_GIB
    if weights_gib <= gpu.memory_gib:
        return None
    return (f"{model.name}'s {row.precision.value.upper()} weights are {weights_gib:,.1f} GiB "
            f"on each GPU at TP{row.tp} ({model.total_params_b:g} B parameters × "
            f"{BYTES_PER_ELEMENT[row.precision]:g} bytes ÷ {row.tp}), "
            f"more than the {gpu.name}'s {gpu.memory_gib:g} GiB: no replica of this "
            "configuration can have run (check the row's gpu and tp, or import-bench's --gpu "
            "and --tp)")


def _tested_context_tokens(row: MeasuredCapacity) -> float | None:
    """Input + output tokens a sequence of the row's test held, each direction at its P95 where
    recorded (else its P50, else its mean), as the capacity model counts a sequence at the
    workload's P95s; ``None`` where a direction records no length [tokens]."""
    total = 0.0
    for direction in ("input", "output"):
        tested = row.tested_lengths(direction)
        value = next((tested[s] for s in ("p95", "p50", "mean") if s in tested), None)
        if value is None:
            return None
        total += value
    return total


def kv_does_not_hold(scenario: Scenario, row: MeasuredCapacity) -> str | None:
    """Why ``row``'s concurrency cannot run at its workload's lengths: its
    ``max_stable_sequences`` above the sequences of the workload's P95 context (input P95 +
    output P95) the replica's KV cache holds, with the arithmetic; ``None`` when they fit, or
    the row records no token lengths (its test may have run the workload's: ``unknown_lengths``
    says so), or its model or GPU is not in the scenario.

    The KV cache is the capacity model's (GPU memory − weights − runtime overhead − margin, ÷
    KV bytes a token: :func:`~solver.capacity.memory.memory_plan`) or, where more, what the
    row's own test held (its sequences × its tested context): a measurement beats the model's
    overhead and margin, not a KV cache its test never filled. A row tested at 512/128 tokens
    with 21 sequences, used under ``policy.measured_length_tolerance: 1.5`` for traffic of
    1,155/211 tokens where the KV holds 10 such sequences, planned 2.72 req/s a replica that
    runs at a concurrency the replica cannot reach (findings s23, F7). Not used rather than
    capped: a rate scaled to fewer sequences is a model's figure, not the measurement's."""
    found = _gpu_and_model(scenario, row)
    tested = _tested_context_tokens(row)
    if found is None or tested is None:
        return None
    gpu, model = found
    workload = scenario.workload(row.workload)
    context = workload.input_tokens.p95 + workload.output_tokens.p95  # [tokens a sequence]
    mem = memory_plan(model, gpu, row.precision, row.tp, scenario.policy.memory_margin_fraction)
    in_test = round(row.max_stable_sequences * tested)  # [tokens] the test's KV at most
    kv_tokens = max(mem.kv_capacity_tokens, in_test)
    holds = max_stable_sequences(kv_tokens, context)
    if row.max_stable_sequences <= holds:
        return None
    return (f"its {row.max_stable_sequences} concurrent sequences do not fit the replica's KV "
            f"cache at the workload's P95 lengths: {workload.input_tokens.p95:,} + "
            f"{workload.output_tokens.p95:,} = {context:,} tokens a sequence, of which the KV "
            f"cache holds {holds} ({kv_tokens:,} tokens: {gpu.name} {mem.memory_gib:g} GiB − "
            f"weights {mem.weights_gib:.1f} − overhead {mem.runtime_overhead_gib:.1f} − margin "
            f"{mem.margin_gib:.1f} = {max(mem.kv_gib, 0.0):.1f} GiB a GPU ÷ "
            f"{mem.kv_bytes_per_token_per_gpu:,.0f} bytes a token = "
            f"{mem.kv_capacity_tokens:,} tokens; its test held at most "
            f"{row.max_stable_sequences} × {tested:,.0f} = {in_test:,}) — its rate was "
            "measured at a concurrency the workload's requests cannot reach on it (load-test "
            "the workload's lengths, or tighten policy.measured_length_tolerance)")


def unused_because(scenario: Scenario, row: MeasuredCapacity) -> str | None:
    """Why a measured row is not used (``stale, not used: …`` or ``not used: …``, no such
    candidate, weights that cannot fit, or more sequences than the KV cache holds at the
    workload's lengths), or ``None`` when it stands for its configuration."""
    reason = staleness(scenario, row)
    if reason is not None:
        return f"stale, not used: {reason}"
    if (impossible := weights_do_not_fit(scenario, row)) is not None:
        return f"not used: {impossible}"
    if (crowded := kv_does_not_hold(scenario, row)) is not None:
        return f"not used: {crowded}"
    if (none := no_such_candidate(scenario, row)) is not None:
        return f"not used: {none}"
    return None


def no_such_candidate(scenario: Scenario, row: MeasuredCapacity) -> str | None:
    """Why the workload has no candidate configuration ``row`` could stand for (its GPU not
    allowed, sold in no zone and held in no inventory, or its TP not a degree planned on that
    GPU's node), else ``None``. A row on a GPU no zone sells was listed by validate as used,
    and a plan cannot place it (fresh-s23)."""
    allowed = scenario.workload(row.workload).allowed_gpus
    if allowed is not None and row.gpu not in allowed:
        return f"{row.gpu} is not in the workload's allowed_gpus"
    if row.gpu not in scenario.gpus_sold_or_held():
        return (f"no zone of the scenario sells {row.gpu} and no inventory holds it, so a plan "
                "cannot place it (a `check --fleet` of nodes holding it uses the row)")
    if row.tp not in tp_degrees(scenario.gpu(row.gpu)):
        return (f"TP{row.tp} is not a candidate degree on {row.gpu} "
                f"(1, 2, 4, 8 up to {scenario.gpu(row.gpu).gpus_per_node} per node)")
    return None


def stale_measurements(scenario: Scenario) -> list[str]:
    """One warning per measured row that is not used, with why (stale, or no such candidate)."""
    out = []
    for i, row in enumerate(scenario.measured):
        why = unused_because(scenario, row)
        if why is not None:
            out.append(f"{_where(i, row)}: {why}")
    return out


def _where(i: int, row: MeasuredCapacity) -> str:
    """A measured row as a warning names it: its index in the scenario and what it measured."""
    return f"measured[{i}] ({row.workload} on {row.gpu} TP{row.tp}, {row.measured_on})"


def physics_ceilings(scenario: Scenario, row: MeasuredCapacity) -> tuple[float, float]:
    """The most requests a second a replica of ``row``'s configuration can carry for its
    workload at the GPU's datasheet peaks, whatever the runtime: (compute, HBM) [req/s].

    Compute: every prompt token not served from the prefix cache and every output token goes
    through the linear layers, 2 × (active − embedding) parameters FLOP a token
    (:attr:`ReplicaPerf.flops_per_token`), at ``tp`` × the datasheet's dense TFLOPS.
    HBM: each iteration reads the weights once on every GPU
    (:meth:`ReplicaPerf.weights_read_bytes`), so ``max_stable_sequences`` sequences decode at
    most that many tokens an iteration and an iteration takes at least the read at the
    datasheet's bandwidth. Lengths are the workload's P50s (a mean is at least its median for
    the right-skewed lengths traffic has), attention and every overhead left out — so a
    measured rate above either ceiling cannot be what the replica carried.
    """
    workload = scenario.workload(row.workload)
    gpu = scenario.gpu(row.gpu)
    perf = perf_model(scenario.model(workload.model), gpu, row.precision, row.tp)
    prompt_tokens = workload.input_tokens.p50 * (1.0 - workload.prefix_cache_hit_rate)
    output_tokens = workload.output_tokens.p50
    flops_per_request = perf.flops_per_token * (prompt_tokens + output_tokens)  # [FLOP]
    peak_flops_per_s = compute_tflops(gpu, row.precision) * 1e12 * row.tp  # [FLOP/s]
    compute_rps = peak_flops_per_s / flops_per_request
    read_s = perf.weights_read_bytes(row.max_stable_sequences) / (
        gpu.hbm_bandwidth_gb_per_s * 1e9)  # [s] a decode iteration at least
    hbm_rps = row.max_stable_sequences / read_s / output_tokens
    return compute_rps, hbm_rps


def above_ceiling(scenario: Scenario, row: MeasuredCapacity) -> str | None:
    """Why a used row's rate is above :func:`physics_ceilings` (which ceiling, what it
    allows, what to check), or ``None`` when it is not."""
    compute_rps, hbm_rps = physics_ceilings(scenario, row)
    ceiling, what = min((compute_rps, "compute (datasheet TFLOPS, P50 lengths)"),
                        (hbm_rps, f"HBM bandwidth ({row.max_stable_sequences} sequences "
                                  f"an iteration, P50 output)"))
    if row.tested_peak_rps <= ceiling:
        return None
    workload = scenario.workload(row.workload)
    return (f"tested_peak_rps {row.tested_peak_rps:g} is above what the replica's {what} "
            f"allows, {ceiling:.3g} req/s ({row.tested_peak_rps / ceiling:.0%} of it) — the "
            f"row is used as given; check that the test ran the workload's lengths (input P50 "
            f"{workload.input_tokens.p50:g}, output P50 {workload.output_tokens.p50:g} tokens) "
            f"at a steady rate, or lower tested_peak_rps")


def implausible_measurements(scenario: Scenario) -> list[str]:
    """One warning per used measured row whose rate is above :func:`physics_ceilings`: the row
    still overrides the analytic model (measured beats theoretical), but a rate no GPU can
    carry is a load test that measured something else — a burst, shorter requests, cache hits."""
    out = []
    for i, row in enumerate(scenario.measured):
        if unused_because(scenario, row) is not None:
            continue
        why = above_ceiling(scenario, row)
        if why is not None:
            out.append(f"{_where(i, row)}: {why}")
    return out


def provenance(row: MeasuredCapacity, dated: bool = True) -> str:
    """Where a measured row's figure comes from, as the outputs name it: the file and line (or
    scenario entry) it was read from, its date (``dated``), the tests it records, the token
    lengths tested."""
    parts = [row.origin or "a measured row given without a file"]
    if dated:
        parts.append(f"measured {row.measured_on}")
    if row.source:
        parts.append(row.source)
    lengths = [f"{d} " + ", ".join(f"{'mean' if s == 'mean' else s.upper()} {v:,.0f}"
                                   for s, v in row.tested_lengths(d).items())
               for d in ("input", "output") if row.tested_lengths(d)]
    parts.append(f"tested at {'; '.join(lengths)} tokens" if lengths
                 else "token lengths tested not recorded")
    return "; ".join(parts)


def fresh_measurement(
    scenario: Scenario, workload: Workload, gpu: str, tp: int
) -> MeasuredCapacity | None:
    """The most recent fresh measured row of this workload, GPU and TP, if any."""
    rows = [r for r in scenario.measured
            if r.workload == workload.name and r.gpu == gpu and r.tp == tp
            and staleness(scenario, r) is None and weights_do_not_fit(scenario, r) is None
            and kv_does_not_hold(scenario, r) is None]
    return max(rows, key=lambda r: r.measured_on) if rows else None
