"""Fit the GPU efficiency factors of the performance model to measured timings.

Method (docs/calibration.md):

1. **Split.** Within each measurement kind, rows are ordered by the SHA-256 of their configuration
   key and the first ``held_out_share`` of them (rounded) are held out: deterministic, stratified
   by kind, independent of row order.
2. **Predict.** Each row is predicted by :mod:`solver.capacity.perf` with a candidate
   :class:`~models.catalog.EfficiencyFactors`: prefill and decode-step times from
   :class:`~solver.capacity.perf.ReplicaPerf`, all-reduce times from
   :func:`~solver.capacity.perf.allreduce_time_ms`,
   GEMM times from the linear-layer FLOPs at the compute roofline, maximum throughput from the
   capacity model's closed loop at the largest batch the KV cache holds
   (:func:`max_output_tokens_per_s`, the figure ``fleetplan estimate`` reports).
3. **Fit.** Per GPU type, the timing factors (:data:`FITTED`) minimise the sum of squared
   relative errors ``(predicted − measured) ÷ measured`` over the training rows, each kind weighted
   by ``1 / √rows`` so every kind counts the same whatever its row count. The silicon factors
   (:data:`SHARED`) are one set per GPU; the runtime's fixed costs and all-reduce latency
   (:data:`PER_RUNTIME`) are one set per runtime family measured on that GPU
   (:func:`runtime_of`), so a 2023 research runtime and TensorRT-LLM do not have to share one
   per-step overhead, and NCCL's latency (the all-reduce profiles) is not vLLM's custom
   kernel's (:func:`allreduce_ties`). A GPU with a GEMM profile (its source's, for a
   transferred GPU) reads weights at the efficiency that profile gives
   (:func:`gemm_bandwidth_efficiency`), held in the fit. Each factor lives in its bounds
   through a logistic map; a Levenberg–Marquardt iteration (numpy only, finite-difference
   Jacobian) starts from a small deterministic set of points and keeps the best. A weak pull
   (:data:`PRIOR_WEIGHT`) towards the prior factors keeps a factor the data cannot see at its prior.
4. **Choose.** A GPU's calibrated factors are its silicon factors with the fixed costs of the
   first runtime of :data:`PREFERRED_RUNTIMES` it has rows for (a modern runtime), else of the
   runtime with the most rows.
5. **Report.** Median absolute relative error per kind and GPU, on the training and the held-out
   rows, each row predicted with its own runtime's factors.

Pure functions: no I/O. The memory factors (``runtime_overhead_*``) are not fitted: no
measurement here observes memory; they stay at the GPU's catalog values.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.common import BYTES_PER_ELEMENT
from models.policy import Policy
from models.runtime import RuntimeCosts, RuntimeSpec, resolve_runtime
from models.text import csv_cell
from solver.capacity.memory import kv_bytes_per_token_per_gpu, kv_precision, max_stable_sequences
from solver.capacity.perf import (
    FLOPS_PER_PARAM,
    ReplicaPerf,
    allreduce_time_ms,
    compute_tflops,
    perf_model,
)
from solver.capacity.perfdata import (
    SPLITWISE_FILE,
    SPLITWISE_RUNTIME,
    TRTLLM_FILE,
    TRTLLM_RUNTIME,
    Measurement,
    MeasurementKind,
    read_published_perf,
    read_shared_perf,
    to_frame,
)
from solver.capacity.replica import closed_loop

Vector = npt.NDArray[np.float64]

#: Factors of the silicon and its kernels, one set per GPU, with their bounds (lower, upper) in
#: the factor's unit.
SHARED: dict[str, tuple[float, float]] = {
    "compute_efficiency": (0.05, 1.0),  # [1]
    "bandwidth_efficiency": (0.05, 1.0),  # [1]
    "link_efficiency": (0.05, 1.0),  # [1]
    "kv_bandwidth_efficiency": (0.05, 1.0),  # [1]
}

#: Fixed costs of a serving runtime, one set per runtime family on a GPU, with their bounds;
#: the all-reduce latency is the runtime's own collective path (the unnamed runtime ``""`` of
#: the NCCL profiles gives NCCL's, the GPU's silicon value).
PER_RUNTIME: dict[str, tuple[float, float]] = {
    "decode_step_overhead_ms": (0.0, 100.0),  # [ms]
    "step_overhead_ms_per_layer": (0.0, 2.0),  # [ms/layer]
    "step_overhead_ms_per_seq": (0.0, 5.0),  # [ms/sequence]
    "allreduce_latency_us": (0.0, 500.0),  # [µs]
}

#: Silicon factors that stay ``None`` (unset) on a GPU whose rows do not see them, with the
#: kind of row that does: the attention kernels' KV-read efficiency is fitted only where they
#: were profiled; elsewhere the KV cache is read at the weights' efficiency.
OPTIONAL_SHARED: dict[str, MeasurementKind] = {
    "kv_bandwidth_efficiency": MeasurementKind.decode_attention_ms,
}

#: 2-GPU latency of a custom one-shot all-reduce kernel [µs]: vLLM's custom all-reduce measured
#: at 9.5 / 9.1 / 10.1 µs for 512-byte messages over 2 / 4 / 8 H100s (sgl-project/sglang pull
#: request 2904, "unit test performance in H100"). The prior, and the value held where a
#: runtime's rows cannot fix its latency, of a runtime whose ``allreduce`` is ``custom``.
CUSTOM_ALLREDUCE_PRIOR_US = 10.0

#: Every factor fitted, with its bounds.
FITTED: dict[str, tuple[float, float]] = SHARED | PER_RUNTIME

#: Prior of the fit: the schema defaults, except the per-layer and per-sequence costs, whose
#: schema default (0, which keeps an uncalibrated GPU as it was) sits on the bound of the logistic
#: map; their prior is a small cost of a modern runtime instead, and the fixed part gives up the
#: share the layers take (80 layers × 0.025 ms + 1 ms ≈ the 3 ms default) [factor units].
PRIOR_FACTORS: dict[str, float] = {
    "decode_step_overhead_ms": 1.0,
    "step_overhead_ms_per_layer": 0.025,
    "step_overhead_ms_per_seq": 0.02,
}

#: Runtime of a row that names none, by the file its ``source`` names (rows written before
#: measurements carried their runtime); any other source: the unnamed runtime ``""`` (a user's).
RUNTIMES: dict[str, str] = {
    TRTLLM_FILE: TRTLLM_RUNTIME,
    SPLITWISE_FILE: SPLITWISE_RUNTIME,
}

#: Runtimes whose fixed costs a GPU's calibrated efficiency factors take when it has their rows:
#: the default workload runtime (vLLM) first, then other modern production runtimes
#: (docs/calibration.md, "Runtimes").
PREFERRED_RUNTIMES: tuple[str, ...] = ("vllm-0.6", TRTLLM_RUNTIME)

#: The runtime catalog entries calibrate writes (inputs/catalog/runtimes.yaml), without their
#: costs: a measurement's ``runtime`` resolves to one of them (:func:`runtime_of`).
RUNTIME_SPECS: tuple[RuntimeSpec, ...] = (
    RuntimeSpec(
        name="vllm-0.6", matches=("vllm",), cuda_graph_decode=True, allreduce="custom",
        custom_allreduce_pcie_max_tp=2,
        description="vLLM from 0.6 on: CUDA-graph decode, chunked prefill (the default runtime "
                    "of a workload, `runtime: vllm`); its own all-reduce kernel, NCCL on more "
                    "than two PCIe GPUs",
        source="fleetplan calibrate (docs/calibration.md, \"Runtimes\")"),
    RuntimeSpec(
        name="vllm-0.6-nccl", matches=("vllm-nccl",), cuda_graph_decode=True, allreduce="nccl",
        description="vLLM from 0.6 on with its custom all-reduce off "
                    "(`disable_custom_all_reduce`): NCCL all-reduces, vllm-0.6's other costs",
        source="fleetplan calibrate (docs/calibration.md, \"Runtimes\")"),
    RuntimeSpec(
        name=TRTLLM_RUNTIME, matches=("tensorrt-llm", "nim"), cuda_graph_decode=True,
        allreduce="custom",
        description="TensorRT-LLM in-flight batching, also behind NVIDIA NIM's optimised "
                    "profiles",
        source="fleetplan calibrate (docs/calibration.md, \"Runtimes\")"),
    RuntimeSpec(
        name="trtllm-0.9", cuda_graph_decode=False,
        description="TensorRT-LLM 0.9 (April 2024) measured with gptSessionBenchmark: static "
                    "batches, no CUDA graphs; kept to reproduce its published figures",
        source="fleetplan calibrate (docs/calibration.md, \"Runtimes\")"),
    RuntimeSpec(
        name="lmdeploy-0.1", matches=("lmdeploy", "turbomind"), cuda_graph_decode=False,
        description="LMDeploy's TurboMind engine as of 0.1 (late 2023): persistent batching in "
                    "C++, no CUDA graphs",
        source="fleetplan calibrate (docs/calibration.md, \"Runtimes\")"),
    RuntimeSpec(
        name=SPLITWISE_RUNTIME, cuda_graph_decode=False,
        description="the research runtime Splitwise measured in 2023 (no CUDA graphs): kept to "
                    "reproduce those measurements, not a runtime to plan on",
        source="fleetplan calibrate (docs/calibration.md, \"Runtimes\")"),
)

#: Runtimes that are another's with NCCL all-reduces: the catalog lists the other's fixed costs
#: for them, without its all-reduce latency (:func:`runtime_costs`); no row is fitted to them.
NCCL_VARIANTS: dict[str, str] = {"vllm-0.6-nccl": "vllm-0.6"}

#: Runtimes that replay decode steps as CUDA graphs: their per-layer launch cost is small, and
#: their prior says so (:func:`runtime_prior`).
CUDA_GRAPH_RUNTIMES: frozenset[str] = frozenset(
    r.name for r in RUNTIME_SPECS if r.cuda_graph_decode)

#: Runtimes whose all-reduce is a custom kernel rather than NCCL (:func:`runtime_prior`).
CUSTOM_ALLREDUCE_RUNTIMES: frozenset[str] = frozenset(
    r.name for r in RUNTIME_SPECS if r.allreduce == "custom")

#: GPU generations: a runtime's costs fitted on one GPU serve the GPUs of its generation that
#: have no measurements of that runtime (:func:`runtime_costs`).
GENERATIONS: dict[str, str] = {
    "A10G": "ampere", "A100-40GB": "ampere", "A100-80GB": "ampere",
    "L4": "ada", "L40S": "ada",
    "H100-SXM": "hopper", "H100-PCIe": "hopper", "H200": "hopper",
    "B200": "blackwell",
    "MI300X": "cdna3",
}

#: GPU makers by generation: a runtime's costs fitted on one maker's GPUs (its kernels, its
#: CUDA or HIP graph replay, its all-reduce) serve another maker's GPU only when no GPU of its
#: own maker has them (:func:`cost_source`; docs/calibration.md, "Eleventh pass").
MAKERS: dict[str, str] = {
    "ampere": "nvidia", "ada": "nvidia", "hopper": "nvidia", "blackwell": "nvidia",
    "cdna3": "amd",
}


def cost_source(gpu: str, fitted: Collection[str], rows: Callable[[str], int]) -> str:
    """The GPU of ``fitted`` (GPUs a runtime's costs were fitted on) whose costs serve ``gpu``:
    ``gpu`` itself when fitted; else the one of its generation (:data:`GENERATIONS`), else of
    its maker (:data:`MAKERS`), else any, with the most training rows of the runtime
    (``rows``), ties by name. ``fitted`` must not be empty."""
    if gpu in fitted:
        return gpu
    generation = GENERATIONS.get(gpu, gpu)
    maker = MAKERS.get(generation, generation)
    same = ([g for g in fitted if GENERATIONS.get(g) == generation]
            or [g for g in fitted if MAKERS.get(GENERATIONS.get(g, g)) == maker]
            or list(fitted))
    return min(same, key=lambda g: (-rows(g), g))

#: (model, GPU) pairs the built-in calibration holds out whole (docs/calibration.md, "Split"):
#: per GPU and runtime, a pair the fit never sees, so its error measures prediction.
BUILTIN_HELD_OUT_PAIRS: frozenset[tuple[str, str]] = frozenset({
    ("BLOOM-176B", "A100-80GB"),
    ("BLOOM-176B", "H100-SXM"),
    ("Llama-3.1-70B", "H100-SXM"),
    ("Llama-3.1-70B", "H200"),
    ("Mixtral-8x7B", "A100-80GB"),
    ("Mixtral-8x7B", "H200"),
    ("Mixtral-8x7B", "H100-SXM"),
    ("Mixtral-8x7B", "L40S"),
    ("Llama-2-70B", "H200"),
    ("Llama-2-70B", "L40S"),
    ("Llama-2-7B", "L40S"),
    ("Llama-2-7B", "A100-80GB"),
    # AMD's vLLM 0.9.1 latency table on 8 x MI300X: the 70B rows are a check of the MI300X's
    # factors and vLLM costs, fitted on the same table's Llama-3.1-405B rows alone
    ("Llama-3.1-70B", "MI300X"),
    # TensorRT-LLM 0.9's first-token latencies of three models measured nowhere else: test
    # data on every GPU they were measured on, never fitted
    *((model, gpu) for model in ("GPT-J-6B", "Mistral-7B", "Falcon-180B")
      for gpu in ("A100-80GB", "H100-SXM", "H200", "L40S")),
})

#: Kinds whose prediction depends on the runtime's fixed costs.
RUNTIME_KINDS: frozenset[MeasurementKind] = frozenset({
    MeasurementKind.prefill_ms,
    MeasurementKind.decode_step_ms,
    MeasurementKind.max_output_tokens_per_s,
    MeasurementKind.ttft_ms,
    MeasurementKind.tpot_ms,
    MeasurementKind.output_tokens_per_s,
    MeasurementKind.batch_e2e_ms,
    MeasurementKind.batch_output_tokens_per_s,
    MeasurementKind.first_token_ms,
})

#: Kinds the factors are fitted on. ``gemm_ms`` is predicted and reported as a check of the
#: compute efficiency only: a serving engine's prefill is more than its GEMMs.
FIT_KINDS: frozenset[MeasurementKind] = RUNTIME_KINDS | {
    MeasurementKind.allreduce_ms,
    MeasurementKind.decode_attention_ms,
}

#: Policy used for the memory margin when sizing the KV cache of a measured configuration.
DEFAULT_POLICY = Policy()

#: Default share of each kind held out of the fit [1].
HELD_OUT_SHARE = 0.3

#: Weight of the pull towards the prior, per factor, in logistic coordinates: a relative error of
#: 1 % on a row of weight 1 costs as much as moving a factor by 10 logistic units, so the pull only
#: decides what the data leave undetermined (a factor no row sees; the split of A100's fixed cost
#: between per-step and per-layer, whose rows all have 80 layers) [1].
PRIOR_WEIGHT = 0.001

#: GPUs without measurements of their own take the fitted factors of a GPU of the same
#: architecture and runtime class (docs/calibration.md, "GPUs without measurements").
TRANSFER: dict[str, str] = {
    "H100-PCIe": "H100-SXM",
    "H200": "H100-SXM",
    "A100-40GB": "A100-80GB",
}


def runtime_of(m: Measurement) -> str:
    """The runtime of a row: its ``runtime``, else :data:`RUNTIMES` by the file its ``source``
    names, else ``""`` (the unnamed runtime)."""
    runtime = m.runtime or next(
        (name for prefix, name in RUNTIMES.items() if m.source.startswith(prefix)), "")
    spec = resolve_runtime(runtime, RUNTIME_SPECS) if runtime else None
    return runtime if spec is None else spec.name


def row_key(m: Measurement) -> str:
    """The configuration of a row, as text: what the held-out split hashes."""
    return "|".join(str(x) for x in (
        m.kind.value, m.model, m.gpu, m.precision.value, m.tp, m.batch, m.input_tokens,
        m.output_tokens, m.context_tokens, m.size_bytes))


def held_out_pairs_mask(measurements: Sequence[Measurement],
                        pairs: Collection[tuple[str, str]]) -> list[bool]:
    """Which rows are held out: those of a (model, GPU) pair in ``pairs``, whole (rows without a
    model, the all-reduces, are never held out)."""
    return [m.model is not None and (m.model, m.gpu) in pairs for m in measurements]


def held_out_mask(measurements: Sequence[Measurement], share: float = HELD_OUT_SHARE) -> list[bool]:
    """Which rows are held out: per kind, the ``round(share × n)`` rows of smallest key hash.

    Deterministic (the hash of the row's configuration, not its position or a random draw) and
    stratified by kind, so each kind is held out in the same proportion.
    """
    if not 0 <= share < 1:
        raise ValueError("held-out share must be in [0, 1)")
    mask = [False] * len(measurements)
    by_kind: dict[MeasurementKind, list[int]] = {}
    for i, m in enumerate(measurements):
        by_kind.setdefault(m.kind, []).append(i)
    for rows in by_kind.values():
        ranked = sorted(rows, key=lambda i: (
            hashlib.sha256(row_key(measurements[i]).encode()).hexdigest(), i))
        for i in ranked[: round(share * len(rows))]:
            mask[i] = True
    return mask


# ---------------------------------------------------------------------------------------------
# Predictions


def gemm_time_ms(model: LlmSpec, gpu: GpuType, m: Measurement, eff: EfficiencyFactors) -> float:
    """One layer's linear projections for ``m.input_tokens`` tokens on one of ``m.tp`` GPUs [ms].

    ``2 × (active parameters ÷ layers) × tokens ÷ TP ÷ (TFLOPS × compute efficiency)``; the
    per-layer parameters include the embedding share, which at 0.5 B of Llama-2-70B's 69 B is
    within the measurement noise.
    """
    flops = (
        FLOPS_PER_PARAM * model.active_params_b * 1e9 / model.layers  # [FLOP/token/layer]
        * m.input_tokens  # tokens
        / m.tp  # GPUs sharing the GEMMs
    )
    return flops / (compute_tflops(gpu, m.precision) * 1e9 * eff.compute_efficiency)


def max_output_tokens_per_s(perf: ReplicaPerf, input_tokens: int, output_tokens: int) -> float:
    """Output tokens/s of one replica with no latency limit [tokens/s]: what ``fleetplan estimate``
    reports as ``max_output_tokens_per_s``.

    The replica's closed loop (:func:`solver.capacity.replica.closed_loop`) at the largest batch
    whose
    sequences all fit in the KV cache at full context (``max_stable_sequences`` at input + output);
    0 when not even one sequence fits.
    """
    seqs = max_stable_sequences(perf.kv_capacity_tokens, input_tokens + output_tokens)
    if seqs < 1:
        return 0.0
    return closed_loop(perf, input_tokens, output_tokens, seqs).output_tokens_per_s


#: Kinds measured on a closed loop of ``batch`` clients: the :class:`ClosedLoop` field of the
#: same name is their prediction.
CLOSED_LOOP_KINDS: frozenset[MeasurementKind] = frozenset({
    MeasurementKind.ttft_ms, MeasurementKind.tpot_ms, MeasurementKind.output_tokens_per_s})


def batch_prefill_ms(perf: ReplicaPerf, batch: int, input_tokens: int) -> float:
    """One iteration prefilling ``batch`` prompts of ``input_tokens`` together [ms]."""
    return float(perf.step_times_ms(prefill_tokens=batch * input_tokens, decode_seqs=0,
                                    kv_tokens=0, prefill_seqs=batch))


def first_token_ms(perf: ReplicaPerf, batch: int, input_tokens: int) -> float:
    """First output token of ``batch`` prompts started together on a runtime that emits it from
    a decode step after the prompts' pass [ms]: the prefill of every prompt, then one decode
    step at a context of ``input_tokens`` per sequence (``first_token_ms``)."""
    step = perf.decode_step_time_ms(batch, batch * input_tokens)
    return batch_prefill_ms(perf, batch, input_tokens) + step


def batch_e2e_ms(perf: ReplicaPerf, batch: int, input_tokens: int, output_tokens: int) -> float:
    """``batch`` requests served together to their last token [ms]: one prefill of every prompt,
    then ``output − 1`` decode steps at the mean context, ``input + output ÷ 2`` per sequence."""
    step = perf.decode_step_time_ms(batch, round(batch * (input_tokens + output_tokens / 2)))
    return batch_prefill_ms(perf, batch, input_tokens) + (output_tokens - 1) * step


def decode_attention_ms(model: LlmSpec, gpu: GpuType, m: Measurement,
                        eff: EfficiencyFactors) -> float:
    """One layer's decode attention on one of ``m.tp`` GPUs: its KV cache, ``batch × context``
    tokens, read at HBM bandwidth × the KV efficiency [ms]. The kernel's launch (some 15 µs a
    layer in Vidur's profile) is not in it: the step's per-layer cost holds launches."""
    kv_bytes = (kv_bytes_per_token_per_gpu(model, kv_precision(m.precision), m.tp)
                / model.layers * m.batch * m.context_tokens)  # [bytes]
    share = eff.kv_bandwidth_efficiency or eff.bandwidth_efficiency
    return kv_bytes / (gpu.hbm_bandwidth_gb_per_s * 1e6 * share)


def predict(
    m: Measurement, gpu: GpuType, model: LlmSpec | None, eff: EfficiencyFactors,
    policy: Policy = DEFAULT_POLICY,
) -> float:
    """The performance model's value for one measurement, with factors ``eff`` [kind's unit]."""
    if m.kind is MeasurementKind.allreduce_ms:
        return allreduce_time_ms(m.size_bytes, m.tp, gpu.link_bandwidth_gb_per_s,
                                 eff.link_efficiency, eff.allreduce_latency_us,
                                 eff.nccl_latency_us, eff.nccl_link_efficiency)
    if model is None:
        raise ValueError(f"a {m.kind} prediction needs the model")
    if m.kind is MeasurementKind.gemm_ms:
        return gemm_time_ms(model, gpu, m, eff)
    if m.kind is MeasurementKind.decode_attention_ms:
        return decode_attention_ms(model, gpu, m, eff)
    perf = perf_model(model, gpu, m.precision, m.tp, eff,
                      memory_margin_fraction=policy.memory_margin_fraction)
    if m.kind is MeasurementKind.prefill_ms:
        return batch_prefill_ms(perf, m.batch, m.input_tokens)
    if m.kind is MeasurementKind.decode_step_ms:
        return perf.decode_step_time_ms(m.batch, round(m.batch * m.context_tokens))
    if m.kind is MeasurementKind.batch_e2e_ms:
        return batch_e2e_ms(perf, m.batch, m.input_tokens, m.output_tokens)
    if m.kind is MeasurementKind.first_token_ms:
        return first_token_ms(perf, m.batch, m.input_tokens)
    if m.kind is MeasurementKind.batch_output_tokens_per_s:
        seconds = batch_e2e_ms(perf, m.batch, m.input_tokens, m.output_tokens) / 1000.0
        return m.batch * m.output_tokens / seconds
    if m.kind in CLOSED_LOOP_KINDS:
        loop = closed_loop(perf, m.input_tokens, m.output_tokens, m.batch)
        return float(getattr(loop, m.kind.value))
    return max_output_tokens_per_s(perf, m.input_tokens, m.output_tokens)


# ---------------------------------------------------------------------------------------------
# Fitting


def _to_unit(value: float, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    share = min(max((value - lo) / (hi - lo), 1e-6), 1 - 1e-6)
    return math.log(share / (1 - share))


def _from_unit(z: float, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    if z < -_EXP_LIMIT:  # exp(-z) would overflow; the share is 0 to double precision
        return lo
    return lo + (hi - lo) / (1 + math.exp(-z))


#: Largest argument of ``math.exp`` that does not overflow a double (ln of its maximum).
_EXP_LIMIT = 709.0


def factors_from(
    z: Vector, base: EfficiencyFactors, names: Mapping[str, tuple[float, float]] = FITTED
) -> EfficiencyFactors:
    """Factors at logistic coordinates ``z`` (order of ``names``), others from ``base``."""
    update = {name: _from_unit(float(zi), b) for (name, b), zi in zip(names.items(), z,
                                                                        strict=True)}
    return base.model_copy(update=update)


def _value(eff: EfficiencyFactors, name: str) -> float:
    """``eff``'s factor ``name``; an unset KV efficiency is the weights' bandwidth efficiency."""
    value = getattr(eff, name)
    if value is None and name == "kv_bandwidth_efficiency":
        return float(eff.bandwidth_efficiency)
    return float(value)


def coordinates_of(
    eff: EfficiencyFactors, names: Mapping[str, tuple[float, float]] = FITTED
) -> Vector:
    """Logistic coordinates of the factors ``names`` of ``eff``."""
    return np.array([_to_unit(_value(eff, n), b) for n, b in names.items()])


def unpack(
    z: Vector, base: EfficiencyFactors, runtimes: Sequence[str],
    unset: Collection[str] = (),
) -> dict[str, EfficiencyFactors]:
    """Factors per runtime from the packed coordinates of :func:`pack`; the optional silicon
    factors in ``unset`` (:data:`OPTIONAL_SHARED` no row sees) are left ``None``."""
    shared = factors_from(z[: len(SHARED)], base, SHARED)
    if unset:
        shared = shared.model_copy(update=dict.fromkeys(unset))
    out = {}
    for i, runtime in enumerate(runtimes):
        start = len(SHARED) + i * len(PER_RUNTIME)
        out[runtime] = factors_from(z[start: start + len(PER_RUNTIME)], shared, PER_RUNTIME)
    return out


def pack(eff: EfficiencyFactors, runtimes: Sequence[str], by_runtime: bool = False,
         known: Mapping[str, EfficiencyFactors] | None = None) -> Vector:
    """Coordinates of one GPU's fit: :data:`SHARED` once, then :data:`PER_RUNTIME` per runtime,
    every runtime starting from the fixed costs of ``eff`` (``by_runtime``: from
    :func:`runtime_prior` of ``eff`` for that runtime, or from ``known[runtime]``, the costs of
    that runtime fitted on the GPU the prior is transferred from)."""
    known = known or {}

    def start(r: str) -> EfficiencyFactors:
        if not by_runtime:
            return eff
        return known[r] if r in known else runtime_prior(eff, r)

    return np.concatenate([coordinates_of(eff, SHARED)] + [
        coordinates_of(start(r), PER_RUNTIME) for r in runtimes])


#: Prior fixed costs of a runtime that replays decode steps as CUDA graphs: launches are
#: replayed from the graph, so little is paid per layer; the step's own cost stays
#: (:data:`CUDA_GRAPH_RUNTIMES`) [factor units].
CUDA_GRAPH_PRIOR: dict[str, float] = {
    "decode_step_overhead_ms": 1.0,
    "step_overhead_ms_per_layer": 0.01,
    "step_overhead_ms_per_seq": 0.01,
}


def runtime_prior(eff: EfficiencyFactors, runtime: str) -> EfficiencyFactors:
    """The prior of ``runtime``'s fixed costs: :data:`CUDA_GRAPH_PRIOR` for a CUDA-graph
    runtime, else ``eff``'s; its all-reduce latency :data:`CUSTOM_ALLREDUCE_PRIOR_US` for a
    runtime with a custom all-reduce, else ``eff``'s (NCCL's)."""
    update: dict[str, float] = {}
    if runtime in CUDA_GRAPH_RUNTIMES:
        update |= CUDA_GRAPH_PRIOR
    if runtime in CUSTOM_ALLREDUCE_RUNTIMES:
        update["allreduce_latency_us"] = CUSTOM_ALLREDUCE_PRIOR_US
    return eff.model_copy(update=update) if update else eff


def levenberg_marquardt(
    residuals: Callable[[Vector], Vector], z0: Vector, iterations: int = 60,
    step: float = 1e-4,
) -> tuple[Vector, float]:
    """Minimise ``‖residuals(z)‖²`` from ``z0``; returns the best point and its cost.

    Forward-difference Jacobian; the damping grows ×4 on a rejected step and shrinks ×0.3 on an
    accepted one; stops when the cost improves by less than 1e-10 relatively.
    """
    z = np.array(z0, dtype=np.float64)
    r = residuals(z)
    cost = float(r @ r)
    damping = 1e-2
    for _ in range(iterations):
        jac = np.empty((r.size, z.size))
        for j in range(z.size):
            dz = np.zeros_like(z)
            dz[j] = step
            jac[:, j] = (residuals(z + dz) - r) / step
        jtj = jac.T @ jac
        grad = jac.T @ r
        improved = False
        while damping < 1e8:
            lhs = jtj + damping * (np.diag(np.diag(jtj)) + 1e-9 * np.eye(z.size))
            delta = np.linalg.solve(lhs, -grad)
            z_new = z + delta
            r_new = residuals(z_new)
            cost_new = float(r_new @ r_new)
            if cost_new < cost:
                improved = cost - cost_new > 1e-10 * max(cost, 1e-30)
                z, r, cost = z_new, r_new, cost_new
                damping = max(damping * 0.3, 1e-9)
                break
            damping *= 4
        if not improved:
            break
    return z, cost


#: Starting points besides the prior: a fast and a slow runtime (high/low efficiencies and
#: small/large fixed costs).
STARTS: tuple[EfficiencyFactors, ...] = (
    EfficiencyFactors(compute_efficiency=0.7, bandwidth_efficiency=0.85, link_efficiency=0.8,
                      allreduce_latency_us=10.0, decode_step_overhead_ms=0.5,
                      step_overhead_ms_per_layer=0.01, step_overhead_ms_per_seq=0.005),
    EfficiencyFactors(compute_efficiency=0.4, bandwidth_efficiency=0.5, link_efficiency=0.4,
                      allreduce_latency_us=100.0, decode_step_overhead_ms=10.0,
                      step_overhead_ms_per_layer=0.15, step_overhead_ms_per_seq=0.3),
)


def fit_prior(gpu: GpuType) -> EfficiencyFactors:
    """The prior of a GPU fitted from scratch: schema defaults with :data:`PRIOR_FACTORS`, and
    the GPU's own memory factors."""
    return EfficiencyFactors(runtime_overhead_gib=gpu.efficiency.runtime_overhead_gib,
                             runtime_overhead_fraction=gpu.efficiency.runtime_overhead_fraction,
                             **PRIOR_FACTORS)


@dataclass(frozen=True)
class GpuFit:
    """Fitted factors of one GPU type."""

    gpu: str
    factors: EfficiencyFactors
    """The calibrated factors: silicon factors with the fixed costs of :attr:`runtime`."""
    prior: str
    """Where the prior came from: ``defaults`` or the GPU whose fit it transferred."""
    train_rows: int
    cost: float
    """Final sum of squared weighted relative errors (with the prior term) [1]."""
    runtime: str = ""
    """The runtime family whose fixed costs :attr:`factors` holds (``""``: unnamed)."""
    by_runtime: tuple[tuple[str, EfficiencyFactors], ...] = ()
    """Factors of every runtime family fitted on this GPU."""

    def factors_for(self, runtime: str) -> EfficiencyFactors:
        """Factors of ``runtime`` on this GPU; the calibrated ones for a runtime not fitted."""
        return dict(self.by_runtime).get(runtime, self.factors)


def unidentified(rows: Sequence[tuple[Measurement, LlmSpec | None]],
                 runtimes: Sequence[str]) -> list[int]:
    """Coordinates of :func:`pack` the rows cannot identify: a runtime's per-layer cost when all
    its rows are of models of one depth (they fix ``t_step + layers × t_layer`` only); a
    silicon factor of :data:`OPTIONAL_SHARED` no row sees; a runtime's all-reduce latency when
    its rows have fewer than two tensor-parallel degrees above 1 (one degree fixes
    ``t_step + layers × (t_layer + 2 × latency × log2 T)`` only: :func:`allreduce_ties`)."""
    per_layer = list(PER_RUNTIME).index("step_overhead_ms_per_layer")
    per_step = list(PER_RUNTIME).index("decode_step_overhead_ms")
    out = [list(SHARED).index(name) for name, kind in OPTIONAL_SHARED.items()
           if not any(m.kind is kind for m, _ in rows)]
    for i, runtime in enumerate(runtimes):
        depths = {model.layers for m, model in rows
                  if model is not None and m.kind in RUNTIME_KINDS and runtime_of(m) == runtime}
        if len(depths) < 2:
            held = per_layer if runtime in CUDA_GRAPH_RUNTIMES else per_step
            out.append(len(SHARED) + i * len(PER_RUNTIME) + held)
    out += list(allreduce_ties(rows, runtimes))
    return out


def allreduce_ties(rows: Sequence[tuple[Measurement, LlmSpec | None]],
                   runtimes: Sequence[str]) -> dict[int, int | None]:
    """Runtimes whose all-reduce latency the rows cannot fix (fewer than two TP degrees above
    1 among their rows): coordinate → the coordinate it takes its value from, the NCCL
    profiles' (runtime ``""``) for a runtime whose all-reduce is NCCL, when the GPU has them;
    ``None`` (held at its prior) otherwise: a custom all-reduce keeps
    :data:`CUSTOM_ALLREDUCE_PRIOR_US`, an NCCL one without profiles on this GPU its prior."""
    latency = list(PER_RUNTIME).index("allreduce_latency_us")

    def coordinate(i: int) -> int:
        return len(SHARED) + i * len(PER_RUNTIME) + latency

    nccl = coordinate(runtimes.index("")) if "" in runtimes and any(
        m.kind is MeasurementKind.allreduce_ms for m, _ in rows) else None
    out: dict[int, int | None] = {}
    for i, runtime in enumerate(runtimes):
        if runtime == "" and nccl is not None:
            continue
        if runtime not in CUSTOM_ALLREDUCE_RUNTIMES:
            out[coordinate(i)] = nccl
            continue
        degrees = {m.tp for m, _ in rows
                   if m.kind in RUNTIME_KINDS and runtime_of(m) == runtime and m.tp > 1}
        if len(degrees) < 2:
            out[coordinate(i)] = None
    return out


#: Bounds of NCCL's latency at one ring size [µs] and of the link efficiency [1] in
#: :func:`nccl_latency_table`'s fit.
NCCL_LATENCY_BOUNDS = (0.0, 500.0)


def nccl_latency_table(rows: Sequence[Measurement], gpu: GpuType) -> tuple[float, ...] | None:
    """NCCL's all-reduce latency at 2, 4, 8, … GPUs from the GPU's all-reduce profile rows
    alone [µs]; ``None`` without such rows.

    One latency per ring size and one link efficiency, ``t = latency_T + 2 (T − 1) / T ×
    bytes ÷ (link bandwidth × efficiency)``, least squares on relative error
    (:func:`levenberg_marquardt`); the efficiency only separates the latency from the
    bandwidth here (the step time's is fitted with the rest). A ring size between two
    profiled ones is interpolated in log2 T, as :func:`allreduce_latency_ms` reads it; the
    table ends at the largest profiled ring. Ring sizes must be powers of two.
    """
    profile = [m for m in rows if m.kind is MeasurementKind.allreduce_ms and m.tp > 1]
    if not profile:
        return None
    rings = sorted({m.tp for m in profile})
    index, wire, measured = _ring_profile(profile, rings, gpu, "NCCL's latency table")
    link = SHARED["link_efficiency"]

    def residuals(z: Vector) -> Vector:
        latency_ms = np.array([_from_unit(float(x), NCCL_LATENCY_BOUNDS) for x in z[:-1]])
        bytes_per_ms = gpu.link_bandwidth_gb_per_s * 1e6 * _from_unit(float(z[-1]), link)
        return (latency_ms[index] / 1000.0 + wire / bytes_per_ms - measured) / measured

    z0 = np.array([_to_unit(20.0, NCCL_LATENCY_BOUNDS)] * len(rings) + [_to_unit(0.5, link)])
    z, _ = levenberg_marquardt(residuals, z0, iterations=200)
    return _ring_table(rings, [_from_unit(float(x), NCCL_LATENCY_BOUNDS) for x in z[:-1]])


#: Smallest all-reduce message the bandwidth per ring size is fitted on: a prefill's, 512
#: tokens of a 8,192-wide model in BF16 (smaller messages are mostly latency) [bytes].
PREFILL_MESSAGE_MIN_BYTES = 8 * 2**20
#: Messages a ring size needs in that range for its intercept and efficiency to be fitted; a
#: ring size with fewer is left out of the table [messages].
MIN_RING_MESSAGES = 3


def nccl_link_efficiency(rows: Sequence[Measurement], gpu: GpuType) -> tuple[float, ...] | None:
    """NCCL's all-reduce bus bandwidth as a share of the link bandwidth at 2, 4, 8, … GPUs,
    from the GPU's all-reduce profile rows of prefill-size messages alone [1]; ``None``
    without :data:`MIN_RING_MESSAGES` such rows at 2 GPUs and at one larger ring at least.

    Per ring size an intercept and an efficiency, ``t = a_T + 2 (T − 1) / T × bytes ÷ (link
    bandwidth × e_T)``, least squares on relative error over the messages of at least
    :data:`PREFILL_MESSAGE_MIN_BYTES` (the intercepts are not used: NCCL's latency is
    :func:`nccl_latency_table`'s). A step scales its ``link_efficiency`` by ``e_T ÷ e_2``
    (:func:`solver.capacity.perf.allreduce_bandwidth_scale`). Ring sizes must be powers of two.
    """
    large = [m for m in rows if m.kind is MeasurementKind.allreduce_ms and m.tp > 1
             and m.size_bytes >= PREFILL_MESSAGE_MIN_BYTES]
    counts = {t: sum(m.tp == t for m in large) for t in {m.tp for m in large}}
    profile = [m for m in large if counts[m.tp] >= MIN_RING_MESSAGES]
    rings = sorted({m.tp for m in profile})
    if len(rings) < 2 or rings[0] != 2:
        return None
    index, wire, measured = _ring_profile(profile, rings, gpu,
                                          "NCCL's bandwidth per ring size")
    link = SHARED["link_efficiency"]
    n = len(rings)

    def residuals(z: Vector) -> Vector:
        intercept_ms = np.array([_from_unit(float(x), NCCL_LATENCY_BOUNDS)
                                 for x in z[:n]]) / 1000.0
        efficiency = np.array([_from_unit(float(x), link) for x in z[n:]])
        bytes_per_ms = gpu.link_bandwidth_gb_per_s * 1e6 * efficiency
        return (intercept_ms[index] + wire / bytes_per_ms[index] - measured) / measured

    z0 = np.array([_to_unit(20.0, NCCL_LATENCY_BOUNDS)] * n + [_to_unit(0.5, link)] * n)
    z, _ = levenberg_marquardt(residuals, z0, iterations=200)
    return _ring_table(rings, [_from_unit(float(x), link) for x in z[n:]])


def _ring_table(rings: list[int], values: Sequence[float]) -> tuple[float, ...]:
    """Values fitted at the profiled ring sizes ``rings`` (powers of two) as a table at 2, 4,
    8, … GPUs up to the largest: a ring size between two profiled ones interpolated in log2 T,
    as :func:`~solver.capacity.perf.per_ring` reads it; rounded to
    :data:`SIGNIFICANT_DIGITS`."""
    steps = np.array([math.log2(t) - 1 for t in rings])
    last = round(float(steps[-1]))
    return tuple(float(f"{v:.{SIGNIFICANT_DIGITS}g}")
                 for v in np.interp(np.arange(last + 1), steps, np.asarray(values)))


def _ring_profile(profile: Sequence[Measurement], rings: list[int], gpu: GpuType, table: str
                  ) -> tuple[npt.NDArray[np.int64], Vector, Vector]:
    """The all-reduce profile rows as arrays for a fit per ring size: each row's ring index,
    its bytes on the wire (``2 (T − 1) / T ×`` the message, the ring algorithm's) and its
    measured time [ms]. Ring sizes must be powers of two (``table`` names what needs them)."""
    if any(t & (t - 1) for t in rings):
        raise ValueError(f"{gpu.name}: all-reduce profile rows at {rings} GPUs; "
                         f"{table} needs powers of two")
    index = np.array([rings.index(m.tp) for m in profile], dtype=np.int64)
    ring = np.array([m.tp for m in profile], dtype=np.float64)
    wire = 2 * (ring - 1) / ring * np.array([m.size_bytes for m in profile], dtype=np.float64)
    measured = np.array([m.value for m in profile], dtype=np.float64)
    return index, wire, measured


#: Tokens up to which a GEMM over a layer's weights is bound by reading them (a decode step's
#: few rows): Vidur's H100 profile of Llama-2-70B takes the same time from 1 to 16 tokens
#: (0.575–0.581 ms at TP1) [tokens].
GEMV_MAX_TOKENS = 16
#: Linear projections of a layer in a GEMM profile row: QKV, O, MLP up, MLP down (``gemm_ms``).
GEMMS_PER_LAYER = 4


def gemm_bandwidth_efficiency(
    rows: Sequence[tuple[Measurement, LlmSpec | None]], gpu: GpuType,
) -> float | None:
    """The weight read's HBM bandwidth efficiency from the GPU's GEMM profile alone [1];
    ``None`` without profile rows of at most :data:`GEMV_MAX_TOKENS` tokens at two sizes.

    At a decode step's few tokens a layer's GEMMs read its weights and do little else:
    ``t = bytes ÷ (BW × η) + GEMMS_PER_LAYER × t_kernel``, ``bytes`` the layer's linear weights
    on one GPU (``(N_tot − N_emb) ÷ L × β ÷ TP``, a dense model's) and ``t_kernel`` each
    kernel's fixed time, least squares on relative error (linear in ``1 ÷ η`` and
    ``t_kernel``). The kernel's fixed time is a per-layer cost, the runtime's
    ``step_overhead_ms_per_layer`` in a step; only ``η`` is returned, clipped to its bounds
    (docs/calibration.md, "Eighth pass").
    """
    profile = [(m, spec) for m, spec in rows
               if m.kind is MeasurementKind.gemm_ms and spec is not None
               and 0 < m.input_tokens <= GEMV_MAX_TOKENS]
    if len({(m.tp, spec.name) for m, spec in profile}) < 2:
        return None
    weight_bytes = np.array([
        (spec.total_params_b - spec.embedding_params_b) * 1e9 / spec.layers
        * BYTES_PER_ELEMENT[m.precision] / m.tp for m, spec in profile])  # [bytes]
    measured = np.array([m.value for m, _ in profile])  # [ms]
    design = np.column_stack([weight_bytes / (gpu.hbm_bandwidth_gb_per_s * 1e6) / measured,
                              GEMMS_PER_LAYER / measured])
    (inverse_eta, _), *_ = np.linalg.lstsq(design, np.ones_like(measured), rcond=None)
    if inverse_eta <= 0:
        return None
    lo, hi = SHARED["bandwidth_efficiency"]
    return float(f"{min(max(1 / float(inverse_eta), lo), hi):.{SIGNIFICANT_DIGITS}g}")


def fit_gpu(
    rows: Sequence[tuple[Measurement, LlmSpec | None]], gpu: GpuType, prior: EfficiencyFactors,
    policy: Policy = DEFAULT_POLICY, known: Mapping[str, EfficiencyFactors] | None = None,
    held: Mapping[str, float] | None = None,
) -> tuple[dict[str, EfficiencyFactors], float]:
    """Least-squares factors of one GPU type from its training rows (relative errors).

    A runtime's fixed costs start from, and are pulled towards, ``known[runtime]`` (its costs
    on the GPU the prior is transferred from) or else :func:`runtime_prior`. The part of a
    runtime's fixed cost its rows cannot identify (:func:`unidentified`) stays at that prior.
    The silicon factors in ``held`` (:data:`SHARED` names) are not fitted: they keep the value
    given (the weight read's efficiency from a GEMM profile, :func:`gemm_bandwidth_efficiency`).
    Returns the factors per runtime family of the rows whose prediction uses the fixed costs
    (``{"": ...}`` when none does) and the final cost.
    """
    counts: dict[MeasurementKind, int] = {}
    for m, _ in rows:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    weights = np.array([1 / math.sqrt(counts[m.kind]) for m, _ in rows])
    measured = np.array([m.value for m, _ in rows])
    runtimes = sorted({runtime_of(m) for m, _ in rows if m.kind in RUNTIME_KINDS}
                      | ({""} if any(m.kind is MeasurementKind.allreduce_ms for m, _ in rows)
                         else set())) or [""]
    # rows of no runtime (all-reduces, kernels) take the unnamed runtime's factors
    slot = [runtimes.index(runtime_of(m))
            if m.kind in RUNTIME_KINDS and runtime_of(m) in runtimes
            else runtimes.index("") if "" in runtimes else 0 for m, _ in rows]
    unset = [name for name, kind in OPTIONAL_SHARED.items()
             if not any(m.kind is kind for m, _ in rows)]
    held = dict(held or {})
    unknown = sorted(set(held) - set(SHARED))
    if unknown:
        raise ValueError(f"only silicon factors can be held, not {unknown}")
    if held:
        prior = prior.model_copy(update=held)
    z_prior = pack(prior, runtimes, by_runtime=True, known=known)
    frozen = set(unidentified(rows, runtimes)) | {list(SHARED).index(name) for name in held}
    ties = {dst: src for dst, src in allreduce_ties(rows, runtimes).items() if src is not None}
    free = np.array([i for i in range(z_prior.size) if i not in frozen], dtype=np.int64)

    def full(z_free: Vector) -> Vector:
        z = z_prior.copy()
        z[free] = z_free
        for dst, src in ties.items():
            z[dst] = z[src]
        return z

    def residuals(z_free: Vector) -> Vector:
        z = full(z_free)
        factors = unpack(z, prior, runtimes, unset)
        by_runtime = [factors[r] for r in runtimes]
        pred = np.array([predict(m, gpu, model, by_runtime[i], policy)
                         for (m, model), i in zip(rows, slot, strict=True)])
        rel = (pred - measured) / measured * weights
        return np.concatenate([rel, PRIOR_WEIGHT * (z - z_prior)])

    best_z, best_cost = z_prior[free], math.inf
    for z0 in [z_prior] + [pack(s, runtimes) for s in STARTS]:
        z, cost = levenberg_marquardt(residuals, z0[free])
        if cost < best_cost:
            best_z, best_cost = z, cost
    return unpack(full(best_z), prior, runtimes, unset), best_cost


def choose_runtime(by_runtime: Mapping[str, EfficiencyFactors],
                   rows: Sequence[Measurement]) -> str:
    """The runtime whose fixed costs a GPU's calibrated factors take: the first of
    :data:`PREFERRED_RUNTIMES` fitted, else the one with the most rows (then by name)."""
    for runtime in PREFERRED_RUNTIMES:
        if runtime in by_runtime:
            return runtime
    count = {r: sum(runtime_of(m) == r for m in rows if m.kind in RUNTIME_KINDS)
             for r in by_runtime}
    return min(by_runtime, key=lambda r: (-count[r], r))


# ---------------------------------------------------------------------------------------------
# The whole calibration


@dataclass(frozen=True)
class Prediction:
    """One measurement next to the calibrated model's prediction."""

    measurement: Measurement
    predicted: float
    held_out: bool

    @property
    def relative_error(self) -> float:
        """(predicted − measured) ÷ measured [1]."""
        return (self.predicted - self.measurement.value) / self.measurement.value


@dataclass(frozen=True)
class ErrorSummary:
    """Median absolute relative error of one kind on one GPU (or ``all``)."""

    kind: MeasurementKind
    gpu: str
    train_rows: int
    held_out_rows: int
    train_median_abs_error: float | None
    """[1]; ``None`` without training rows."""
    held_out_median_abs_error: float | None
    """[1]; ``None`` without held-out rows."""


@dataclass(frozen=True)
class Calibration:
    """Fitted factors per GPU, every prediction, and the rows that could not be used."""

    fits: tuple[GpuFit, ...]
    transferred: tuple[tuple[str, str], ...]
    """(GPU without measurements, GPU whose timing factors it takes)."""
    predictions: tuple[Prediction, ...]
    memory_factors: tuple[tuple[str, float, float], ...] = ()
    """(GPU, runtime_overhead_gib, runtime_overhead_fraction) of each transfer target: its own."""
    skipped: tuple[tuple[Measurement, str], ...] = field(default=())
    """Rows not used, with the reason (model or GPU not in the catalog, ...)."""
    held_out_share: float = HELD_OUT_SHARE
    held_out_pairs: tuple[tuple[str, str], ...] = ()
    """(model, GPU) pairs held out whole; empty when :attr:`held_out_share` split the rows."""

    def training_rows(self, gpu: str, runtime: str) -> int:
        """Training rows of ``runtime`` on ``gpu`` whose prediction uses its fixed costs."""
        return sum(1 for p in self.predictions
                   if not p.held_out and p.measurement.gpu == gpu
                   and p.measurement.kind in RUNTIME_KINDS and runtime_of(p.measurement) == runtime)

    def factors(self) -> dict[str, EfficiencyFactors]:
        """Calibrated factors by GPU name: the fitted ones, then the transferred ones."""
        out = {f.gpu: f.factors for f in self.fits}
        memory = {g: (gib, frac) for g, gib, frac in self.memory_factors}
        for target, source in self.transferred:
            gib, frac = memory.get(target, (out[source].runtime_overhead_gib,
                                            out[source].runtime_overhead_fraction))
            out[target] = out[source].model_copy(update={
                "runtime_overhead_gib": gib, "runtime_overhead_fraction": frac})
        return out

    def errors(self) -> list[ErrorSummary]:
        """Error summary per kind and GPU, then per kind over all GPUs (``gpu == "all"``)."""
        groups: dict[tuple[MeasurementKind, str], list[Prediction]] = {}
        for p in self.predictions:
            groups.setdefault((p.measurement.kind, p.measurement.gpu), []).append(p)
            groups.setdefault((p.measurement.kind, "all"), []).append(p)
        out = []
        for (kind, gpu), preds in sorted(groups.items(), key=lambda kv: (
                list(MeasurementKind).index(kv[0][0]), kv[0][1] == "all", kv[0][1])):
            train = [abs(p.relative_error) for p in preds if not p.held_out]
            held = [abs(p.relative_error) for p in preds if p.held_out]
            out.append(ErrorSummary(
                kind=kind, gpu=gpu, train_rows=len(train), held_out_rows=len(held),
                train_median_abs_error=float(np.median(train)) if train else None,
                held_out_median_abs_error=float(np.median(held)) if held else None))
        return out


def unfitted_factors(gpu: GpuType, runtime: str, fits: Sequence[GpuFit],
                     trained: Mapping[tuple[str, str], int]) -> EfficiencyFactors:
    """Factors a GPU without training rows predicts its (held-out) rows with: its catalog
    factors, with ``runtime``'s fixed costs (and, for a custom all-reduce, its latency; NCCL's
    is the GPU's own) from the fitted GPU :func:`cost_source` picks (as
    :func:`runtime_costs` transfers them); its catalog factors alone when no GPU has that
    runtime's rows."""
    sources = {f.gpu: f for f in fits if trained.get((f.gpu, runtime), 0) > 0}
    if not sources:
        return gpu.efficiency
    source = cost_source(gpu.name, sources, lambda g: trained[g, runtime])
    costs = sources[source].factors_for(runtime)
    keep = set(PER_RUNTIME) - ({"allreduce_latency_us"}  # NCCL: the GPU's own latency
                               if runtime not in CUSTOM_ALLREDUCE_RUNTIMES else set())
    return gpu.efficiency.model_copy(update={k: getattr(costs, k) for k in sorted(keep)})


def calibrate(
    measurements: Sequence[Measurement],
    gpus: Iterable[GpuType],
    models: Iterable[LlmSpec],
    held_out_share: float = HELD_OUT_SHARE,
    transfer: Mapping[str, str] = TRANSFER,
    policy: Policy = DEFAULT_POLICY,
    held_out_pairs: Collection[tuple[str, str]] | None = None,
) -> Calibration:
    """Fit every GPU type that has measurements; transfer factors to those that have none.

    The held-out rows are ``held_out_share`` of each kind (:func:`held_out_mask`), or, with
    ``held_out_pairs``, every row of those (model, GPU) pairs (:func:`held_out_pairs_mask`).

    The prior of a GPU is :func:`fit_prior` (schema defaults, so a fit does not depend on an
    earlier calibration), except that a GPU listed in ``transfer`` whose source GPU was fitted first
    starts from, and is pulled towards, the source's fitted factors. Memory factors are the
    catalog GPU's own.
    """
    gpu_by_name = {g.name: g for g in gpus}
    model_by_name = {m.name: m for m in models}
    usable: list[tuple[Measurement, LlmSpec | None]] = []
    skipped: list[tuple[Measurement, str]] = []
    for m in measurements:
        if m.gpu not in gpu_by_name:
            skipped.append((m, f"GPU `{m.gpu}` is not in the catalog"))
        elif m.model is not None and m.model not in model_by_name:
            skipped.append((m, f"model `{m.model}` is not in the catalog"))
        elif m.precision not in gpu_by_name[m.gpu].precisions:
            skipped.append((m, f"{m.gpu} does not run {m.precision.value}"))
        else:
            usable.append((m, model_by_name.get(m.model or "")))
    rows_used = [m for m, _ in usable]
    mask = (held_out_mask(rows_used, held_out_share) if held_out_pairs is None
            else held_out_pairs_mask(rows_used, held_out_pairs))
    measured_gpus = sorted({m.gpu for m, _ in usable})
    # sources of transfers first, so their fits can serve as priors
    order = sorted(measured_gpus, key=lambda g: (g in transfer, g))
    fitted: dict[str, EfficiencyFactors] = {}
    fits: list[GpuFit] = []
    fit_by_gpu: dict[str, GpuFit] = {}
    profiled: dict[str, float] = {}  # weight-read efficiency from a GEMM profile, per GPU
    for name in order:
        gpu = gpu_by_name[name]
        source = transfer.get(name)
        base = fit_prior(gpu)
        prior, prior_name = base, "defaults"
        known: dict[str, EfficiencyFactors] = {}
        if source in fitted:
            prior = fitted[source].model_copy(update={
                "runtime_overhead_gib": base.runtime_overhead_gib,
                "runtime_overhead_fraction": base.runtime_overhead_fraction,
                "nccl_latency_us": None})  # not in the fit: no fitted runtime uses it
            prior_name = source
            known = {r: e for r, e in fit_by_gpu[source].by_runtime if r}
        train = [(m, spec) for (m, spec), held in zip(usable, mask, strict=True)
                 if not held and m.gpu == name and m.kind in FIT_KINDS]
        if not train:  # every row held out: the GPU keeps its catalog factors
            continue
        # the weight read's efficiency from the GPU's GEMM profile (a transferred GPU: its
        # source's), held in the joint fit
        gemm = gemm_bandwidth_efficiency(
            [(m, spec) for (m, spec), held in zip(usable, mask, strict=True)
             if not held and m.gpu == name], gpu)
        if gemm is None and source in profiled:
            gemm = profiled[source]
        if gemm is not None:
            profiled[name] = gemm
        # NCCL's bandwidth per ring size, from the profile alone (a transferred GPU: its
        # source's): it scales every all-reduce's link efficiency, in the joint fit too
        scale = nccl_link_efficiency([m for m, _ in train], gpu) or (
            fitted[source].nccl_link_efficiency if source in fitted else None)
        prior = prior.model_copy(update={"nccl_link_efficiency": scale})
        by_runtime, cost = fit_gpu(train, gpu, prior, policy, known, held=(
            {} if gemm is None else {"bandwidth_efficiency": gemm}))
        runtime = choose_runtime(by_runtime, [m for m, _ in train])
        nccl = by_runtime.get("", prior)  # the GPU's own all-reduce latency: NCCL's
        # NCCL's latency per ring size, from the profile alone, for the CUDA-graph runtimes
        # that call NCCL (a transferred GPU takes its source's)
        table = nccl_latency_table([m for m, _ in train], gpu) or (
            fitted[source].nccl_latency_us if source in fitted else None)
        fitted[name] = by_runtime[runtime].model_copy(
            update={"allreduce_latency_us": nccl.allreduce_latency_us,
                    "nccl_latency_us": table})
        fits.append(GpuFit(gpu=name, factors=fitted[name], prior=prior_name,
                           train_rows=len(train), cost=cost, runtime=runtime,
                           by_runtime=tuple(sorted(by_runtime.items()))))
        fit_by_gpu[name] = fits[-1]
    transferred = tuple(sorted((t, s) for t, s in transfer.items()
                               if t in gpu_by_name and t not in fitted and s in fitted))
    fit_of = {f.gpu: f for f in fits}
    trained: dict[tuple[str, str], int] = {}
    for (m, _), held in zip(usable, mask, strict=True):
        if not held and m.kind in RUNTIME_KINDS:
            trained[m.gpu, runtime_of(m)] = trained.get((m.gpu, runtime_of(m)), 0) + 1

    def factors_of(m: Measurement) -> EfficiencyFactors:
        fit = fit_of.get(m.gpu)
        if fit is not None:
            return fit.factors_for(runtime_of(m))
        return unfitted_factors(gpu_by_name[m.gpu], runtime_of(m), fits, trained)

    predictions = tuple(
        Prediction(measurement=m, held_out=held,
                   predicted=predict(m, gpu_by_name[m.gpu], spec, factors_of(m), policy))
        for (m, spec), held in zip(usable, mask, strict=True)
    )
    memory = tuple((t, gpu_by_name[t].efficiency.runtime_overhead_gib,
                    gpu_by_name[t].efficiency.runtime_overhead_fraction) for t, _ in transferred)
    return Calibration(fits=tuple(sorted(fits, key=lambda f: f.gpu)), transferred=transferred,
                       predictions=predictions, memory_factors=memory, skipped=tuple(skipped),
                       held_out_share=held_out_share,
                       held_out_pairs=tuple(sorted(held_out_pairs or ())))


#: Digits kept in the overlay (factors are fitted to a few per cent; more digits are noise).
SIGNIFICANT_DIGITS = 4


def overlay_document(calibration: Calibration, source: str) -> dict[str, Any]:
    """The catalog overlay: ``gpus: [{name, efficiency: {...}}]`` for every calibrated GPU."""
    def rounded(x: Any) -> Any:
        if isinstance(x, tuple):  # NCCL's latency per ring size
            return [rounded(v) for v in x]
        return float(f"{x:.{SIGNIFICANT_DIGITS}g}")

    gpus = [
        {"name": name, "efficiency": {k: rounded(v) for k, v in eff.model_dump().items()
                                      if v is not None}}
        for name, eff in sorted(calibration.factors().items())
    ]
    return {"source": source, "gpus": gpus}


def builtin_calibration(perf_dir: Path, gpus: Iterable[GpuType], models: Iterable[LlmSpec]
                        ) -> Calibration:
    """The calibration behind the built-in catalog: the measurements of ``perf_dir`` (a copy of
    ../shared/data/perf) and the published figures of inputs/catalog, with the
    :data:`BUILTIN_HELD_OUT_PAIRS` held out."""
    rows = read_shared_perf(perf_dir) + read_published_perf()
    return calibrate(rows, gpus, models, held_out_pairs=BUILTIN_HELD_OUT_PAIRS)


def runtime_costs(calibration: Calibration, gpus: Iterable[str]) -> dict[str, list[RuntimeCosts]]:
    """The fixed costs of every fitted runtime on every GPU in ``gpus``.

    A runtime that all-reduces with NCCL lists no all-reduce latency (each GPU's own, NCCL's,
    applies); one with a custom all-reduce lists its own. On a GPU it was fitted on, its fit
    there. Elsewhere, transferred from the GPU :func:`cost_source` picks (same generation,
    else same maker, else any; the most training rows of that runtime); ``fitted_on`` names
    the GPU. A runtime of
    :data:`NCCL_VARIANTS` lists its base runtime's costs with NCCL's all-reduce.
    """
    fitted: dict[str, dict[str, EfficiencyFactors]] = {}
    for fit in calibration.fits:
        for runtime, eff in fit.by_runtime:
            if runtime and calibration.training_rows(fit.gpu, runtime):
                fitted.setdefault(runtime, {})[fit.gpu] = eff
    out: dict[str, list[RuntimeCosts]] = {}
    for runtime, by_gpu in sorted(fitted.items()):
        def rows(g: str, runtime: str = runtime) -> int:
            return calibration.training_rows(g, runtime)

        costs = []
        for gpu in sorted(gpus):
            source = cost_source(gpu, by_gpu, rows)
            eff = by_gpu[source]
            values: dict[str, float | None] = {
                k: float(f"{getattr(eff, k):.{SIGNIFICANT_DIGITS}g}") for k in PER_RUNTIME}
            if runtime not in CUSTOM_ALLREDUCE_RUNTIMES:  # NCCL: each GPU's own latency
                values["allreduce_latency_us"] = None
            costs.append(RuntimeCosts(gpu=gpu, fitted_on=source, **values))
        out[runtime] = costs
    for variant, base in NCCL_VARIANTS.items():  # the base's costs, NCCL's all-reduce
        if base in out:
            out[variant] = [c.model_copy(update={"allreduce_latency_us": None})
                            for c in out[base]]
    return out


def runtimes_document(calibration: Calibration, gpus: Iterable[str], source: str
                      ) -> dict[str, Any]:
    """The runtime catalog: every :data:`RUNTIME_SPECS` entry with its :func:`runtime_costs`
    (a runtime fitted under a name of its own, a user's, gets an entry of that name)."""
    costs = runtime_costs(calibration, gpus)
    specs = {r.name: r for r in RUNTIME_SPECS}
    entries = []
    for name in [*specs, *sorted(set(costs) - set(specs))]:
        if name not in costs:
            continue
        spec = specs[name] if name in specs else RuntimeSpec(name=name, source=source or name)
        entry = spec.model_copy(update={"costs": tuple(costs[name]), "source": source})
        dumped = entry.model_dump(mode="json", exclude_defaults=False)
        dumped["costs"] = [{k: v for k, v in c.items() if v is not None}  # NCCL: the GPU's
                           for c in dumped["costs"]]
        entries.append(dumped)
    return {"source": source, "runtimes": entries}


def predictions_csv(calibration: Calibration) -> str:
    """Every used measurement with its prediction, relative error and split, as CSV text."""
    frame = to_frame(p.measurement for p in calibration.predictions)
    frame["predicted"] = [p.predicted for p in calibration.predictions]
    frame["relative_error"] = [p.relative_error for p in calibration.predictions]
    frame["held_out"] = [p.held_out for p in calibration.predictions]
    return str(frame.map(csv_cell).to_csv(index=False, lineterminator="\n"))
