"""GPU memory of one replica: weights, runtime overhead, safety margin and the KV cache left over.

Everything here is per GPU of a tensor-parallel replica (all ``tp`` GPUs hold the same share).
Formulas and their units are in docs/capacity-model.md ("Memory"). Pure functions: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.catalog import GpuType, LlmSpec
from models.common import BYTES_PER_ELEMENT, Precision
from models.policy import Policy

#: Bytes in one GiB [bytes/GiB].
BYTES_PER_GIB = 1024**3

#: Tensor-parallel degrees considered; a replica lives inside one node.
TP_DEGREES = (1, 2, 4, 8)

#: Precision of the KV cache for each weight precision. FP8 checkpoints serve with an FP8 KV cache;
#: weight-only quantised models (int8, int4) keep a BF16 KV cache, as vLLM and TensorRT-LLM do by
#: default.
KV_PRECISION: dict[Precision, Precision] = {
    Precision.bf16: Precision.bf16,
    Precision.fp8: Precision.fp8,
    Precision.int8: Precision.bf16,
    Precision.int4: Precision.bf16,
}


def kv_precision(weight_precision: Precision) -> Precision:
    """Precision of the KV cache when the weights are served at ``weight_precision``."""
    return KV_PRECISION[weight_precision]


def tp_degrees(gpu: GpuType) -> tuple[int, ...]:
    """Tensor-parallel degrees a replica on ``gpu`` may use: 1, 2, 4, 8 up to the node size."""
    return tuple(t for t in TP_DEGREES if t <= gpu.gpus_per_node)


def weight_bytes_per_gpu(model: LlmSpec, precision: Precision, tp: int) -> float:
    """Weights held by each GPU [bytes]: all parameters × bytes per parameter ÷ TP."""
    return (
        model.total_params_b * 1e9  # parameters
        * BYTES_PER_ELEMENT[precision]  # bytes / parameter
        / tp  # GPUs sharing them
    )


def kv_heads_per_gpu(model: LlmSpec, tp: int) -> int:
    """KV heads each GPU caches: ⌈kv_heads ÷ TP⌉, at least one (heads replicate when TP > heads)."""
    return max(math.ceil(model.kv_heads / tp), 1)


def kv_bytes_per_token(model: LlmSpec, kv_prec: Precision) -> float:
    """KV cache of one token of the whole model, on one GPU (TP = 1) [bytes/token].

    GQA/MHA: layers × 2 (key and value) × KV heads × head dim × bytes.
    MLA (``kv_latent_dim`` set): layers × latent dim × bytes.
    """
    return kv_bytes_per_token_per_gpu(model, kv_prec, 1)


def kv_bytes_per_token_per_gpu(model: LlmSpec, kv_prec: Precision, tp: int) -> float:
    """KV cache of one token held by each GPU of a TP replica [bytes/token/GPU].

    MLA latents are shared by all heads and so replicated on every GPU, not split.
    """
    element = BYTES_PER_ELEMENT[kv_prec]  # bytes / element
    if model.kv_latent_dim is not None:
        return model.layers * model.kv_latent_dim * element
    return (
        model.layers
        * 2  # key and value
        * kv_heads_per_gpu(model, tp)  # heads on this GPU
        * model.head_dim  # elements / head
        * element
    )


@dataclass(frozen=True)
class MemoryPlan:
    """Where one GPU's memory goes in a replica [GiB unless stated]."""

    memory_gib: float
    weights_gib: float
    runtime_overhead_gib: float
    margin_gib: float
    kv_gib: float
    """Left for the KV cache; negative when the weights do not fit."""
    kv_bytes_per_token_per_gpu: float
    """[bytes/token]"""
    kv_capacity_tokens: int
    """Tokens of KV cache the replica holds (0 when nothing is left) [tokens]."""

    @property
    def weights_fit(self) -> bool:
        """Weights, overhead and margin leave some room for KV cache."""
        return self.kv_gib > 0


def memory_plan(
    model: LlmSpec, gpu: GpuType, precision: Precision, tp: int, memory_margin_fraction: float
) -> MemoryPlan:
    """Memory breakdown of one GPU of a ``tp``-GPU replica of ``model`` at ``precision``."""
    eff = gpu.efficiency
    weights_gib = weight_bytes_per_gpu(model, precision, tp) / BYTES_PER_GIB
    overhead_gib = eff.runtime_overhead_gib + eff.runtime_overhead_fraction * gpu.memory_gib
    margin_gib = memory_margin_fraction * gpu.memory_gib
    kv_gib = gpu.memory_gib - weights_gib - overhead_gib - margin_gib
    per_token = kv_bytes_per_token_per_gpu(model, kv_precision(precision), tp)
    capacity = math.floor(kv_gib * BYTES_PER_GIB / per_token) if kv_gib > 0 else 0
    return MemoryPlan(
        memory_gib=gpu.memory_gib,
        weights_gib=weights_gib,
        runtime_overhead_gib=overhead_gib,
        margin_gib=margin_gib,
        kv_gib=kv_gib,
        kv_bytes_per_token_per_gpu=per_token,
        kv_capacity_tokens=capacity,
    )


def max_stable_sequences(kv_capacity_tokens: int, context_tokens: int) -> int:
    """Sequences of ``context_tokens`` (input + output) the KV cache holds at once [sequences]."""
    return kv_capacity_tokens // context_tokens


@dataclass(frozen=True)
class FitProblem:
    """Why a configuration cannot serve (``cause``) and what would let it (``fix``)."""

    cause: str
    fix: str


def fit_problem(
    model: LlmSpec,
    gpu: GpuType,
    precision: Precision,
    tp: int,
    policy: Policy,
    longest_context_tokens: int,
    catalog: Sequence[GpuType] = (),
) -> FitProblem | None:
    """Why this configuration cannot serve and its fix, or ``None`` when it can.

    Checked in order: the precision the GPU runs, a TP that fits a node and divides the heads
    (no precision changes those), then memory (weights, then one longest sequence's KV cache:
    ``longest_context_tokens``, a workload's P99 input + output), which a larger TP, a smaller
    precision or another GPU can fix — :func:`memory_fix` says which (``catalog``: the GPUs it
    may name).
    """
    problem = _node_problem(model, gpu, precision, tp)
    if problem is not None:
        return problem
    cause = _memory_cause(model, gpu, precision, tp, policy, longest_context_tokens)
    if cause is None:
        return None
    return FitProblem(cause, memory_fix(model, gpu, precision, tp, policy,
                                        longest_context_tokens, catalog))


def _node_problem(model: LlmSpec, gpu: GpuType, precision: Precision, tp: int
                  ) -> FitProblem | None:
    """A precision the GPU does not run, or a TP that does not fit a node or divide the heads
    (no precision changes those), with its fix; ``None`` when neither."""
    if precision not in gpu.precisions:
        supported = ", ".join(p.value for p in gpu.precisions)
        return FitProblem(f"{gpu.name} does not run {precision.value} (supports {supported})",
                          "pick a precision the GPU runs, or another GPU")
    if tp > gpu.gpus_per_node or model.attention_heads % tp != 0:
        valid = _node_tps(model, gpu)
        fix = (f"use a TP of {', '.join(map(str, valid))} on {gpu.name} "
               f"({model.attention_heads} heads, {gpu.gpus_per_node} GPUs per node)")
        if tp > gpu.gpus_per_node:
            return FitProblem(f"TP {tp} exceeds {gpu.name}'s {gpu.gpus_per_node} GPUs per node",
                              fix)
        return FitProblem(
            f"TP {tp} does not divide {model.name}'s {model.attention_heads} attention heads", fix)
    return None


def _node_tps(model: LlmSpec, gpu: GpuType) -> list[int]:
    """TPs that fit one node of ``gpu`` and divide the heads."""
    return [t for t in range(1, gpu.gpus_per_node + 1) if model.attention_heads % t == 0]


def _memory_cause(model: LlmSpec, gpu: GpuType, precision: Precision, tp: int, policy: Policy,
                  longest_context_tokens: int) -> str | None:
    """Why the weights or one longest sequence's KV cache do not fit, else ``None``."""
    plan = memory_plan(model, gpu, precision, tp, policy.memory_margin_fraction)
    if not plan.weights_fit:
        used = plan.weights_gib + plan.runtime_overhead_gib + plan.margin_gib
        return (f"weights {plan.weights_gib:.1f} GiB/GPU + overhead {plan.runtime_overhead_gib:.1f}"
                f" + margin {plan.margin_gib:.1f} = {used:.1f} GiB exceed {gpu.memory_gib:g} GiB")
    if plan.kv_capacity_tokens < longest_context_tokens:
        return (f"KV cache holds {plan.kv_capacity_tokens} tokens, less than one P99 context of "
                f"{longest_context_tokens} tokens")
    return None


def memory_fix(model: LlmSpec, gpu: GpuType, precision: Precision, tp: int, policy: Policy,
               longest_context_tokens: int, catalog: Sequence[GpuType] = ()) -> str:
    """The fix for a configuration whose memory does not hold it.

    A larger TP when one that fits the node and divides the heads holds it; else (405B BF16 on
    8 H100s: 8 is the node) the lower precisions the GPU runs that fit at some TP of the node,
    and the GPUs of ``catalog`` that fit at this precision, each at its smallest TP that does —
    or, where ``catalog`` is empty, "a GPU with more memory".
    """
    def smallest_tp(g: GpuType, p: Precision) -> int | None:
        return next((t for t in _node_tps(model, g)
                     if _memory_cause(model, g, p, t, policy, longest_context_tokens) is None),
                    None)

    if any(t > tp and _memory_cause(model, gpu, precision, t, policy, longest_context_tokens)
           is None for t in _node_tps(model, gpu)):
        return "try a larger TP, a smaller precision or another GPU"
    lower = [(p, smallest_tp(gpu, p)) for p in gpu.precisions
             if BYTES_PER_ELEMENT[p] < BYTES_PER_ELEMENT[precision]]
    precisions = ", ".join(f"{p.value} at TP {t}" for p, t in lower if t is not None)
    others = [(g.name, smallest_tp(g, precision)) for g in catalog
              if g.name != gpu.name and precision in g.precisions]
    named = ", ".join(f"{name} at TP {t}" for name, t in others if t is not None)
    parts = ([f"a lower precision ({precisions})"] if precisions else []) + (
        [f"a GPU with more memory ({named})"] if named
        else [] if catalog else ["a GPU with more memory"])
    if not parts:
        return (f"no TP, lower precision or GPU of the catalog holds it at {precision.value}: "
                "a shorter context or a smaller model")
    return (f"no TP of {gpu.name}'s {gpu.gpus_per_node}-GPU node holds it: use "
            + " or ".join(parts))


def check_fit(
    model: LlmSpec,
    gpu: GpuType,
    precision: Precision,
    tp: int,
    policy: Policy,
    longest_context_tokens: int,
) -> str | None:
    """Why this configuration cannot serve, or ``None`` when it can (:func:`fit_problem`'s
    cause, without working out the memory fix, which the capacity table never shows).

    ``longest_context_tokens`` is the P99 input + output of the workload: at least one such
    sequence must fit in the KV cache.
    """
    problem = _node_problem(model, gpu, precision, tp)
    if problem is not None:
        return problem.cause
    return _memory_cause(model, gpu, precision, tp, policy, longest_context_tokens)
