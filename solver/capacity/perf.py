"""Step time of one replica: prefill, decode and mixed continuous-batching iterations.

One iteration of a serving engine processes ``P`` prefill tokens and one decode token for each of
``B`` running sequences. Its time is a roofline plus fixed costs::

    t = max(compute_ms, memory_ms) + allreduce_ms + overhead_ms      (0 when P + B = 0)

* compute: linear layers (2 FLOP per active parameter per token, outside the embedding table
  and the output head), the output head (2 × vocab × hidden FLOP for each sequence sampled:
  every decoded one, and the last position of each prompt), plus attention (4 × layers × heads
  × head_dim FLOP per query–key pair), at the precision's dense tensor FLOPS ×
  ``compute_efficiency`` × TP;
* memory: weights per GPU (for mixture-of-experts, the weights outside the routed experts and
  the routed experts some token of the iteration is sent to; never the input embedding table
  of an untied model, whose few looked-up rows are negligible) at HBM bandwidth ×
  ``bandwidth_efficiency``, plus the KV cache read and written at HBM bandwidth ×
  ``kv_bandwidth_efficiency`` (the attention kernels' own share; ``bandwidth_efficiency``
  where not fitted);
* all-reduce: 2 per layer of (P + B) × hidden × 2 bytes (BF16 activations), ring algorithm,
  at the link bandwidth × ``link_efficiency`` × NCCL's bandwidth scale for the ring size where
  the GPU lists one (:func:`allreduce_bandwidth_scale`; prefill-size messages go through NCCL
  whatever the runtime's small-message kernel), each with a latency: NCCL's per ring size
  where the GPU lists it, else one that grows as log2 T (:func:`allreduce_latency_ms`);
* replicated operators: the two RMSNorms and the residual add of every layer run on every
  token on each GPU of the tensor-parallel group (they are not split), moving
  :data:`REPLICATED_BYTES_PER_HIDDEN` bytes per hidden element per token at the datasheet HBM
  bandwidth — a cost TP does not divide;
* overhead: ``decode_step_overhead_ms`` per iteration, plus ``step_overhead_ms_per_layer`` per
  layer (kernel launches) and ``step_overhead_ms_per_seq`` per sequence in the iteration
  (sampling, per-sequence attention launches, scheduling).

Every formula, with units, is in docs/capacity-model.md ("Prefill", "Decode"). The arithmetic
is written once and works on floats and numpy arrays alike, so the trace replay can call it a
million times and the calibration can fit :class:`~models.catalog.EfficiencyFactors` with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.common import BYTES_PER_ELEMENT, Precision
from models.policy import Policy
from models.runtime import RuntimeSpec
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.memory import (
    BYTES_PER_GIB,
    check_fit,
    kv_bytes_per_token_per_gpu,
    kv_precision,
    memory_plan,
    weight_bytes_per_gpu,
)

#: Bytes of one activation element moved by tensor-parallel all-reduce (BF16) [bytes].
ACTIVATION_BYTES = 2
#: All-reduces per transformer layer under Megatron tensor parallelism (after attention, after MLP).
ALLREDUCES_PER_LAYER = 2
#: FLOP per active parameter per token of a forward pass (one multiply-add) [FLOP].
FLOPS_PER_PARAM = 2
#: FLOP per query–key pair per head-dim element per layer: QKᵀ (2) + attention × V (2) [FLOP].
ATTENTION_FLOPS_PER_PAIR_ELEMENT = 4

#: HBM traffic of a layer's replicated operators — input RMSNorm, post-attention RMSNorm and
#: residual add, which every GPU of a tensor-parallel group runs on every token — per token and
#: hidden element, as time at the datasheet bandwidth [bytes]: Vidur's H100 profile of
#: Llama-2-70B (``vidur/h100_Llama-2-70b-hf_mlp.csv``, the three operators' medians at 1,024
#: tokens or more, 524 rows) takes 29.1 bytes' worth a hidden element, 29 to two figures
#: (28.4 / 28.9 / 29.8 / 31.0 at TP 8 / 4 / 2 / 1: flat in TP, as a replicated operator is);
#: its A100 profile takes 30 (docs/calibration.md, "Eighth pass").
REPLICATED_BYTES_PER_HIDDEN = 29.0

Num = TypeVar("Num", float, npt.NDArray[np.float64])


def expert_share(model: LlmSpec) -> float:
    """Share of the routed weights each token reads [1]: ``k ÷ E`` of a mixture of experts
    stated with its experts; active ÷ total parameters otherwise (1 for a dense model)."""
    if model.routed_experts is None or model.experts_per_token is None:
        return model.active_params_b / model.total_params_b
    return model.experts_per_token / model.routed_experts


def routed_weight_bytes_per_gpu(model: LlmSpec, precision: Precision, tp: int) -> float:
    """Bytes of routed weights each GPU holds, experts sharded over the TP GPUs as vLLM and
    TensorRT-LLM do by default [bytes].

    A model stated with its experts: the routed experts' parameters. Otherwise every weight
    counts as routed with :func:`expert_share` = active ÷ total, which reads all weights of a
    dense model and approximates a mixture of experts stated only by its parameter counts.
    """
    params_b = model.routed_expert_params_b or model.total_params_b  # [10^9]
    return params_b * 1e9 * BYTES_PER_ELEMENT[precision] / tp


def compute_tflops(gpu: GpuType, precision: Precision) -> float:
    """Dense tensor throughput the GEMMs run at [10^12 FLOP/s].

    FP8 weights run FP8 GEMMs; BF16 and weight-only int8/int4 (dequantised to BF16 in the kernel,
    as AWQ/GPTQ/Marlin do) run BF16 GEMMs.
    """
    if precision is Precision.fp8 and gpu.fp8_tflops is not None:
        return gpu.fp8_tflops
    return gpu.bf16_tflops


def allreduce_latency_ms(
    tp: int, latency_us: float, nccl_latency_us: tuple[float, ...] | None = None,
) -> float:
    """Latency part of one all-reduce over ``tp`` GPUs [ms]; zero at T = 1.

    With ``nccl_latency_us`` (NCCL's latency at 2, 4, 8, … GPUs), that table: interpolated in
    log2 T between its entries, its last entry past them (NCCL's small-message latency per ring
    size, docs/calibration.md, "NCCL latency per ring size"). Otherwise ``latency × log2 T``:
    the 2-GPU latency growing with the steps of the collective.
    """
    if tp <= 1:
        return 0.0
    if nccl_latency_us:
        return per_ring(nccl_latency_us, tp) / 1000.0
    return latency_us / 1000.0 * math.log2(tp)


def per_ring(table: tuple[float, ...], tp: int) -> float:
    """A table of NCCL figures at 2, 4, 8, … GPUs read at ``tp`` GPUs (≥ 2): interpolated in
    log2 T between its entries, its last entry past them."""
    steps = math.log2(tp) - 1  # 0 at 2 GPUs, 1 at 4, ...
    return float(np.interp(steps, np.arange(len(table)), np.asarray(table, dtype=np.float64)))


def allreduce_bandwidth_scale(tp: int, scale: tuple[float, ...] | None = None) -> float:
    """NCCL's all-reduce bandwidth over ``tp`` GPUs relative to 2 GPUs [1]; 1 without a table.

    ``scale`` is NCCL's share of the link at 2, 4, 8, … GPUs
    (:attr:`~models.catalog.EfficiencyFactors.nccl_link_efficiency`), read as
    :func:`allreduce_latency_ms` reads NCCL's latencies (:func:`per_ring`) and divided by its
    first entry.
    """
    if tp <= 1 or not scale:
        return 1.0
    return per_ring(scale, tp) / scale[0]


def allreduce_time_ms(
    message_bytes: float, tp: int, link_gb_per_s: float, link_efficiency: float,
    latency_us: float, nccl_latency_us: tuple[float, ...] | None = None,
    bandwidth_scale: tuple[float, ...] | None = None,
) -> float:
    """Time of one ring all-reduce of ``message_bytes`` over ``tp`` GPUs [ms].

    ``2 (T − 1) / T × bytes ÷ (link bandwidth × efficiency × scale_T)`` plus
    :func:`allreduce_latency_ms`; zero at T = 1. ``scale_T`` is
    :func:`allreduce_bandwidth_scale` of ``bandwidth_scale`` (NCCL's bandwidth per ring size).
    """
    if tp <= 1:
        return 0.0
    wire_bytes = 2 * (tp - 1) / tp * message_bytes  # ring: reduce-scatter + all-gather
    bytes_per_ms = (link_gb_per_s * 1e6 * link_efficiency
                    * allreduce_bandwidth_scale(tp, bandwidth_scale))
    return wire_bytes / bytes_per_ms + allreduce_latency_ms(tp, latency_us, nccl_latency_us)


def prefill_attention_pairs(tokens: Num, seqs: Num, context_tokens: Num) -> Num:
    """Query–key pairs of a causal prefill of ``tokens`` new tokens [pairs].

    The tokens are split evenly over ``seqs`` sequences that already hold ``context_tokens``
    cached tokens between them; each new token attends to its sequence's cache and to the new
    tokens before it: ``T·C/n + T·(T/n + 1)/2``.
    """
    return tokens * context_tokens / seqs + tokens * (tokens / seqs + 1) / 2


@dataclass(frozen=True)
class ReplicaPerf:
    """Performance of one replica (``tp`` GPUs) of one model at one precision on one GPU type.

    The coefficients are precomputed so each step-time call is a handful of float operations.
    """

    model: str
    gpu: str
    precision: Precision
    tp: int
    kv_capacity_tokens: int
    """Tokens of KV cache the replica holds (0 if the weights leave no room) [tokens]."""
    weights_gib_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    flops_per_token: float
    """Linear-layer work outside the embedding table and the output head: 2 × (active
    parameters − embedding parameters) [FLOP/token]."""
    attention_flops_per_pair: float
    """4 × layers × attention heads × head dim [FLOP per query–key pair]."""
    flops_per_ms: float
    """Achieved replica compute: TFLOPS × compute efficiency × TP × 10^9 [FLOP/ms]."""
    weight_bytes_per_gpu: float
    bytes_per_ms: float
    """Achieved HBM bandwidth of one GPU: GB/s × bandwidth efficiency × 10^6 [bytes/ms]."""
    routed_weight_bytes_per_gpu: float
    """The part of :attr:`weight_bytes_per_gpu` in routed experts (0 for dense models) [bytes]."""
    expert_share: float
    """Routed experts a token reads ÷ routed experts (1 for dense models) [1]."""
    allreduce_ms_per_step: float
    """Latency part of the all-reduces of one iteration: 2 × layers ×
    :func:`allreduce_latency_ms` [ms]."""
    allreduce_ms_per_token: float
    """Bandwidth part of the all-reduces of one iteration, per token in it [ms/token]."""
    step_overhead_ms: float
    """Fixed cost of a non-empty iteration: per-step + layers × per-layer overhead [ms]."""
    seq_overhead_ms: float = 0.0
    """Cost of each sequence in an iteration (decoded or prefilled) [ms/sequence]."""
    head_flops_per_seq: float = 0.0
    """Output head of one sampled position: 2 × vocab × hidden [FLOP/sequence]."""
    unread_weight_bytes_per_gpu: float = 0.0
    """Weights held but not read by a step: the input embedding table of an untied model, of
    which a step looks up a few rows [bytes]."""
    kv_bytes_per_ms: float = 0.0
    """Achieved HBM bandwidth of the attention kernels reading the KV cache: GB/s × KV
    bandwidth efficiency × 10^6 [bytes/ms]; 0: :attr:`bytes_per_ms`."""
    replicated_ms_per_token: float = 0.0
    """The replicated operators of every layer (norms, residual add), per token in an
    iteration: layers × hidden × :data:`REPLICATED_BYTES_PER_HIDDEN` ÷ datasheet HBM
    bandwidth; the same at every TP [ms/token]."""

    def step_time_ms(
        self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
        prefill_seqs: int = 1, prefill_context_tokens: int = 0,
    ) -> float:
        """One continuous-batching iteration [ms].

        Prefills ``prefill_tokens`` new tokens (split over ``prefill_seqs`` sequences already
        holding ``prefill_context_tokens`` cached tokens between them) and decodes one token for
        each of ``decode_seqs`` sequences whose KV cache totals ``kv_tokens``.
        """
        return float(self._iteration_ms(
            float(prefill_tokens), float(decode_seqs), float(kv_tokens),
            float(max(prefill_seqs, 1)), float(prefill_context_tokens),
        ))

    def step_times_ms(
        self, prefill_tokens: npt.ArrayLike, decode_seqs: npt.ArrayLike, kv_tokens: npt.ArrayLike,
        prefill_seqs: npt.ArrayLike = 1, prefill_context_tokens: npt.ArrayLike = 0,
    ) -> npt.NDArray[np.float64]:
        """:meth:`step_time_ms` over numpy arrays (broadcast) [ms]."""
        def arr(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
            return np.asarray(x, dtype=np.float64)

        return self._iteration_ms(
            arr(prefill_tokens), arr(decode_seqs), arr(kv_tokens),
            np.maximum(arr(prefill_seqs), 1.0), arr(prefill_context_tokens),
        )

    def prefill_time_ms(self, tokens: int, context_tokens: int = 0) -> float:
        """Prefill of one prompt of ``tokens`` new tokens after ``context_tokens`` cached [ms]."""
        return self.step_time_ms(tokens, 0, 0, 1, context_tokens)

    def prefill_marginal_ms(self, tokens: int, context_tokens: int = 0) -> float:
        """GPU time a prompt adds to the iterations it joins under continuous batching [ms].

        Its compute, the bandwidth part of its all-reduces, its tokens' replicated operators
        and one sequence's per-step cost (it is in at least one iteration): the weight read,
        the all-reduce latency and the fixed step overhead are paid by the iteration anyway.
        """
        pairs = prefill_attention_pairs(float(tokens), 1.0, float(context_tokens))
        compute_ms = (self.flops_per_token * tokens + self.head_flops_per_seq
                      + self.attention_flops_per_pair * pairs) / self.flops_per_ms
        return (compute_ms + (self.allreduce_ms_per_token + self.replicated_ms_per_token) * tokens
                + self.seq_overhead_ms)

    def decode_step_time_ms(self, batch: int, kv_tokens: int) -> float:
        """One decode step of ``batch`` sequences whose KV cache totals ``kv_tokens`` [ms]."""
        return self.step_time_ms(0, batch, kv_tokens)

    def weights_read_bytes(self, tokens: Num) -> Num:
        """Weights one GPU reads in an iteration of ``tokens`` tokens [bytes].

        Every weight outside the routed experts and the input embedding table, and of the
        routed experts those some token is sent to: each expert is missed by all ``tokens``
        tokens with probability ``(1 − k ÷ E)^tokens`` (uniform routing). A dense model reads
        all its weights but the embedding table.
        """
        shared = (self.weight_bytes_per_gpu - self.routed_weight_bytes_per_gpu
                  - self.unread_weight_bytes_per_gpu)
        touched = 1 - (1 - self.expert_share) ** tokens  # share of routed experts read
        return shared + self.routed_weight_bytes_per_gpu * touched

    def _iteration_ms(self, p: Num, b: Num, k: Num, n: Num, c: Num) -> Num:
        tokens = p + b  # tokens through the linear layers [tokens]
        pairs = k + prefill_attention_pairs(p, n, c)  # decode: one query per cached token
        seqs = b + n * (p > 0)  # sequences in the iteration: decoded, and prefilled if any
        compute_ms = (self.flops_per_token * tokens + self.head_flops_per_seq * seqs
                      + self.attention_flops_per_pair * pairs) / self.flops_per_ms
        kv_bytes = self.kv_bytes_per_token_per_gpu * (k + c + tokens)  # read cache, write new
        memory_ms = (self.weights_read_bytes(tokens) / self.bytes_per_ms
                     + kv_bytes / (self.kv_bytes_per_ms or self.bytes_per_ms))
        roofline_ms = (compute_ms + memory_ms + abs(compute_ms - memory_ms)) / 2  # max(·, ·)
        comm_ms = self.allreduce_ms_per_step + self.allreduce_ms_per_token * tokens
        replicated_ms = self.replicated_ms_per_token * tokens  # norms and adds, not split by TP
        busy = tokens > 0  # an empty iteration costs nothing
        overhead_ms = self.step_overhead_ms + self.seq_overhead_ms * seqs
        return (roofline_ms + comm_ms + replicated_ms + overhead_ms) * busy


def perf_model(
    model: LlmSpec,
    gpu: GpuType,
    precision: Precision,
    tp: int,
    efficiency: EfficiencyFactors | None = None,
    memory_margin_fraction: float = Policy().memory_margin_fraction,
) -> ReplicaPerf:
    """Performance coefficients of a replica, with ``efficiency`` (default: the GPU's own).

    Does not check that the configuration fits (the calibration fits factors on measured
    configurations as they are); :func:`replica_perf` does.
    """
    eff = efficiency if efficiency is not None else gpu.efficiency
    if efficiency is not None:
        gpu = gpu.model_copy(update={"efficiency": efficiency})
    plan = memory_plan(model, gpu, precision, tp, memory_margin_fraction)
    message_bytes_per_token = model.hidden_size * ACTIVATION_BYTES  # [bytes/token]
    n_allreduce = ALLREDUCES_PER_LAYER * model.layers
    allreduce_ms_per_token = n_allreduce * (
        allreduce_time_ms(message_bytes_per_token, tp, gpu.link_bandwidth_gb_per_s,
                          eff.link_efficiency, 0.0, bandwidth_scale=eff.nccl_link_efficiency)
    )
    allreduce_ms_per_step = n_allreduce * allreduce_latency_ms(
        tp, eff.allreduce_latency_us, eff.nccl_latency_us)
    return ReplicaPerf(
        model=model.name,
        gpu=gpu.name,
        precision=precision,
        tp=tp,
        kv_capacity_tokens=plan.kv_capacity_tokens,
        weights_gib_per_gpu=weight_bytes_per_gpu(model, precision, tp) / BYTES_PER_GIB,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu(model, kv_precision(precision), tp),
        flops_per_token=FLOPS_PER_PARAM * (model.active_params_b - model.embedding_params_b) * 1e9,
        head_flops_per_seq=FLOPS_PER_PARAM * model.head_params_b * 1e9,  # [FLOP/sequence]
        unread_weight_bytes_per_gpu=(  # untied: the input table, looked up [bytes]
            0.0 if model.tied_embeddings
            else model.head_params_b * 1e9 * BYTES_PER_ELEMENT[precision] / tp),
        attention_flops_per_pair=(
            ATTENTION_FLOPS_PER_PAIR_ELEMENT * model.layers * model.attention_heads
            * model.head_dim
        ),
        flops_per_ms=compute_tflops(gpu, precision) * 1e9 * eff.compute_efficiency * tp,
        weight_bytes_per_gpu=weight_bytes_per_gpu(model, precision, tp),
        bytes_per_ms=gpu.hbm_bandwidth_gb_per_s * 1e6 * eff.bandwidth_efficiency,
        kv_bytes_per_ms=gpu.hbm_bandwidth_gb_per_s * 1e6 * (
            eff.kv_bandwidth_efficiency or eff.bandwidth_efficiency),
        routed_weight_bytes_per_gpu=routed_weight_bytes_per_gpu(model, precision, tp),
        expert_share=expert_share(model),
        allreduce_ms_per_step=allreduce_ms_per_step,
        allreduce_ms_per_token=allreduce_ms_per_token,
        step_overhead_ms=(eff.decode_step_overhead_ms  # [ms]
                          + eff.step_overhead_ms_per_layer * model.layers),  # [ms/layer × layers]
        seq_overhead_ms=eff.step_overhead_ms_per_seq,  # [ms/sequence]
        replicated_ms_per_token=(model.layers * model.hidden_size * REPLICATED_BYTES_PER_HIDDEN
                                 / (gpu.hbm_bandwidth_gb_per_s * 1e6)),  # [ms/token]
    )


def runtime_efficiency(gpu: GpuType, runtime: RuntimeSpec | None, tp: int = 1
                       ) -> EfficiencyFactors:
    """The GPU's efficiency factors with the fixed costs of ``runtime`` on it, for a replica of
    ``tp`` GPUs.

    Silicon factors (compute, bandwidth, link) and memory factors are the GPU's; the
    per-step, per-layer and per-sequence costs are the runtime's. The all-reduce is NCCL's
    unless the runtime all-reduces ``tp`` GPUs with a kernel of its own
    (:meth:`~models.runtime.RuntimeSpec.uses_nccl`) and lists that kernel's latency. NCCL's
    latency is the GPU's per ring size (``nccl_latency_us``, the profile's) for a CUDA-graph
    runtime, and the GPU's ``allreduce_latency_us`` × log2 T (fitted with the eager runtimes'
    steps) for an eager one (docs/calibration.md, "NCCL latency per ring size"). Without a
    runtime, or for a GPU the runtime lists no costs for, the GPU's own factors.
    """
    costs = None if runtime is None else runtime.costs_for(gpu.name)
    if runtime is None or costs is None:
        return gpu.efficiency
    update: dict[str, float | None] = {
        "decode_step_overhead_ms": costs.decode_step_overhead_ms,
        "step_overhead_ms_per_layer": costs.step_overhead_ms_per_layer,
        "step_overhead_ms_per_seq": costs.step_overhead_ms_per_seq,
    }
    if costs.allreduce_latency_us is not None and not runtime.uses_nccl(gpu.peer_link, tp):
        update["allreduce_latency_us"] = costs.allreduce_latency_us
        update["nccl_latency_us"] = None  # the runtime's kernel, not NCCL
    elif not runtime.cuda_graph_decode:  # an eager runtime's NCCL: the log2 T fit
        update["nccl_latency_us"] = None
    return gpu.efficiency.model_copy(update=update)


def scenario_efficiency(scenario: Scenario, gpu: GpuType, runtime: str, tp: int = 1
                        ) -> EfficiencyFactors:
    """:func:`runtime_efficiency` of the runtime a workload names in ``scenario``."""
    return runtime_efficiency(gpu, scenario.runtime(runtime), tp)


def replica_perf(
    scenario: Scenario, model: str, gpu: str, precision: Precision, tp: int, runtime: str = "",
) -> ReplicaPerf:
    """Performance of a replica of a scenario's configuration, with the fixed costs of the
    ``runtime`` the workload names (``""``: the GPU's own factors).

    Raises
    ------
    ValueError
        When the model or GPU is unknown, or the configuration cannot serve (the message is
        :func:`solver.capacity.memory.check_fit`'s reason).
    """
    models = {m.name: m for m in scenario.models}
    gpus = {g.name: g for g in scenario.gpus}
    if model not in models:
        raise ValueError(f"unknown model `{model}`")
    if gpu not in gpus:
        raise ValueError(f"unknown GPU `{gpu}`")
    spec, gpu_type = models[model], gpus[gpu]
    reason = check_fit(spec, gpu_type, precision, tp, scenario.policy, 1)
    if reason is not None:
        raise ValueError(reason)
    return perf_model(spec, gpu_type, precision, tp,
                      scenario_efficiency(scenario, gpu_type, runtime, tp),
                      memory_margin_fraction=scenario.policy.memory_margin_fraction)


def workload_perf(scenario: Scenario, workload: Workload, gpu: GpuType, tp: int
                  ) -> ReplicaPerf | str:
    """Performance of a replica of ``workload`` on ``gpu`` at ``tp``, or why it cannot serve
    the workload (:func:`~solver.capacity.memory.check_fit`'s reason for its longest request,
    P99 input + P99 output): what the capacity table and the SLO floor both start from."""
    spec = scenario.model(workload.model)
    longest = workload.input_tokens.p99 + workload.output_tokens.p99
    reason = check_fit(spec, gpu, workload.precision, tp, scenario.policy, longest)
    if reason is not None:
        return reason
    return perf_model(spec, gpu, workload.precision, tp,
                      scenario_efficiency(scenario, gpu, workload.runtime, tp),
                      memory_margin_fraction=scenario.policy.memory_margin_fraction)
