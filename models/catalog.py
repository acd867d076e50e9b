"""GPU types and LLM specifications: the hardware and model catalog."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from models.common import Frozen, OmitDefaults, Precision
from models.limits import LimitedList, Name, Real, Text, Whole, bounded

#: One all-reduce latency [µs], held to :func:`~models.limits.bounded`'s range for
#: ``allreduce_latency_us``.
LatencyUs = Annotated[Real, Field(ge=0, le=1e6, allow_inf_nan=False)]
#: NCCL's latencies at 2, 4, 8, … GPUs (ten entries reach 2,048 GPUs).
NcclTable = Annotated[tuple[LatencyUs, ...], Field(min_length=1, max_length=10)]
#: NCCL's share of the link bandwidth at 2, 4, 8, … GPUs (ten entries reach 2,048 GPUs).
NcclEfficiencies = Annotated[
    tuple[Annotated[Real, Field(ge=0.01, le=1, allow_inf_nan=False)], ...],
    Field(min_length=1, max_length=10)]


class EfficiencyFactors(Frozen):
    """Share of datasheet peaks a serving runtime reaches, and its fixed costs.

    The schema defaults are round guesses; the built-in catalog's calibrated values come from
    ``fleetplan calibrate`` (inputs/catalog/efficiency.yaml; method, data and errors in
    docs/calibration.md, formulas in docs/capacity-model.md). A catalog overlay may replace them
    per GPU type.
    """

    compute_efficiency: Real = bounded("compute_efficiency", 0.55)
    """Share of dense tensor FLOPS achieved by prefill GEMMs [1]."""
    bandwidth_efficiency: Real = bounded("bandwidth_efficiency", 0.75)
    """Share of HBM bandwidth achieved when a step reads the weights (and the KV cache, unless
    :attr:`kv_bandwidth_efficiency` is given) [1]."""
    kv_bandwidth_efficiency: Real | None = bounded("kv_bandwidth_efficiency", None)
    """Share of HBM bandwidth achieved by the attention kernels reading the KV cache [1];
    ``None``: :attr:`bandwidth_efficiency`. Fitted where attention kernels were profiled
    (docs/calibration.md, "Decode attention")."""
    decode_step_overhead_ms: Real = bounded("decode_step_overhead_ms", 3.0)
    """Fixed per-step cost of an iteration, whatever the model: scheduling, Python [ms]."""
    step_overhead_ms_per_layer: Real = bounded("step_overhead_ms_per_layer", 0.0)
    """Per-step cost of each transformer layer: kernel launches and their gaps [ms/layer]."""
    step_overhead_ms_per_seq: Real = bounded("step_overhead_ms_per_seq", 0.0)
    """Per-step cost of each sequence in the iteration: sampling, per-sequence attention
    launches, scheduler bookkeeping [ms/sequence]."""
    link_efficiency: Real = bounded("link_efficiency", 0.7)
    """Share of GPU-to-GPU link bandwidth achieved by tensor-parallel all-reduce [1]."""
    allreduce_latency_us: Real = bounded("allreduce_latency_us", 10.0)
    """Latency of one all-reduce call over 2 GPUs; it grows as log2 of the GPUs in the ring
    (docs/capacity-model.md, "Tensor-parallel all-reduce") [µs]. The GPU's own value is
    NCCL's as profiled; a runtime whose collectives cost otherwise (a custom all-reduce
    kernel, an eager runtime's launches) replaces it (:class:`~models.runtime.RuntimeCosts`)."""
    nccl_latency_us: NcclTable | None = None
    """NCCL's all-reduce latency by ring size: at 2, 4, 8, … GPUs (each entry doubles the ring;
    between two, interpolated in log2 of the GPUs; past the last, the last) [µs]. NCCL's
    small-message latency hardly grows with the ring, so it is listed per ring size rather
    than as :attr:`allreduce_latency_us` × log2 T; fitted on the GPU's all-reduce profile
    (docs/calibration.md, "NCCL latency per ring size"). ``None``: every all-reduce takes
    :attr:`allreduce_latency_us` × log2 T. A runtime whose all-reduce is its own kernel
    replaces both (:func:`solver.capacity.perf.runtime_efficiency`)."""
    nccl_link_efficiency: NcclEfficiencies | None = None
    """NCCL's all-reduce bus bandwidth on prefill-size messages as a share of the link
    bandwidth, by ring size: at 2, 4, 8, … GPUs (read as :attr:`nccl_latency_us`) [1]. Its
    growth with the ring scales :attr:`link_efficiency`: an all-reduce over T GPUs moves its
    bytes at ``link_efficiency × entry(T) ÷ entry(2)`` of the link bandwidth
    (:func:`solver.capacity.perf.allreduce_bandwidth_scale`). Fitted on the GPU's all-reduce
    profile (docs/calibration.md, "Ninth pass"); ``None``: the same share at
    every ring size."""
    runtime_overhead_gib: Real = bounded("runtime_overhead_gib", 1.5)
    """Per-GPU memory the runtime takes regardless of model: CUDA context, graphs [GiB]."""
    runtime_overhead_fraction: Real = bounded("runtime_overhead_fraction", 0.05)
    """Share of GPU memory lost to activation workspace and fragmentation [1]."""


class GpuType(Frozen):
    """One accelerator model, with datasheet figures (dense, no sparsity)."""

    name: Name
    memory_gib: Real = bounded("memory_gib")
    hbm_bandwidth_gb_per_s: Real = bounded("hbm_bandwidth_gb_per_s")
    """Memory bandwidth [GB/s, 10^9 bytes per second]."""
    bf16_tflops: Real = bounded("bf16_tflops")
    """Dense BF16/FP16 tensor throughput [10^12 FLOP/s]."""
    fp8_tflops: Real | None = bounded("fp8_tflops", None)
    """Dense FP8 tensor throughput [10^12 FLOP/s]; ``None`` where the GPU has no FP8."""
    int8_tops: Real | None = bounded("int8_tops", None)
    """Dense INT8 tensor throughput [10^12 op/s]."""
    link_bandwidth_gb_per_s: Real = bounded("link_bandwidth_gb_per_s")
    """GPU-to-GPU bandwidth per GPU, one direction [GB/s] (NVLink, xGMI, or PCIe where none)."""
    gpus_per_node: Whole = bounded("gpus_per_node")
    peer_link: Literal["nvlink", "xgmi", "pcie"] = "nvlink"
    """How the GPUs of a node reach each other: a fully connected NVLink (NVSwitch) or xGMI
    mesh, or PCIe (NVLink bridges joining pairs count as PCIe beyond two GPUs). A runtime's
    custom all-reduce kernel may need the mesh (vLLM's falls back to NCCL on more than two
    PCIe GPUs: :attr:`models.runtime.RuntimeSpec.custom_allreduce_pcie_max_tp`)."""
    precisions: tuple[Precision, ...] = (Precision.bf16,)
    """Weight precisions the GPU runs natively or through a supported kernel."""
    efficiency: EfficiencyFactors = EfficiencyFactors()
    source: Text = Field(min_length=1)
    """Where every figure above came from."""

    @model_validator(mode="after")
    def _fp8_needs_flops(self) -> GpuType:
        if Precision.fp8 in self.precisions and self.fp8_tflops is None:
            raise ValueError("precisions lists fp8 but fp8_tflops is not given")
        return self


#: Relative disagreement allowed between a MoE model's stated active parameters and those its
#: expert figures imply (rounding of published counts) [1].
MOE_ACTIVE_TOLERANCE = 0.02


class LlmSpec(OmitDefaults):
    """Architecture of one LLM: enough to size its weights, KV cache and FLOPs."""

    omit_when_default = ("aliases", "tied_embeddings")

    name: Name
    layers: Whole = bounded("layers")
    hidden_size: Whole = bounded("hidden_size")
    attention_heads: Whole = bounded("attention_heads")
    kv_heads: Whole = bounded("kv_heads")
    head_dim: Whole = bounded("head_dim")
    ffn_size: Whole = bounded("ffn_size")
    vocab_size: Whole = bounded("vocab_size")
    total_params_b: Real = bounded("total_params_b")
    """All parameters, every expert included [10^9]."""
    active_params_b: Real = bounded("active_params_b")
    """Parameters used per token (differs from total for mixture-of-experts) [10^9]."""
    max_context_tokens: Whole = bounded("max_context_tokens")
    tied_embeddings: bool = False
    """The output head is the input embedding table (one vocab × hidden matrix, BLOOM);
    ``False``: two such matrices, as in Llama, Mixtral, Qwen2.5-7B and larger, DeepSeek-V3."""
    kv_latent_dim: Whole | None = bounded("kv_latent_dim", None)
    """Multi-head latent attention (DeepSeek): elements cached per token per layer, shared by
    all heads and so replicated, not split, across tensor-parallel GPUs; ``None`` for GQA/MHA."""
    routed_experts: Whole | None = bounded("routed_experts", None)
    """Mixture of experts: routed experts per MoE layer (``None`` for a dense model)."""
    experts_per_token: Whole | None = bounded("experts_per_token", None)
    """Routed experts each token is sent to [experts]."""
    routed_expert_params_b: Real | None = bounded("routed_expert_params_b", None)
    """Parameters in all routed experts of all layers [10^9]: the part of the weights a token
    reads only ``experts_per_token ÷ routed_experts`` of; the rest (attention, embeddings,
    dense layers, shared experts) every token reads."""
    weights_digest: Text | None = None
    """Digest of the weights served; a measured row for other weights is stale."""
    aliases: Annotated[tuple[Name, ...], LimitedList] = ()
    """Other names of the model people type or tools record (Hugging Face ids, served model
    names); they resolve to this entry (models/names.py)."""
    source: Text = Field(min_length=1)

    @property
    def head_params_b(self) -> float:
        """Parameters of the output head, vocab × hidden [10^9]."""
        return self.vocab_size * self.hidden_size / 1e9

    @property
    def embedding_params_b(self) -> float:
        """Parameters of the input embedding table and the output head together [10^9]: one
        matrix when tied, two otherwise."""
        return self.head_params_b * (1 if self.tied_embeddings else 2)

    @model_validator(mode="after")
    def _consistent(self) -> LlmSpec:
        if self.active_params_b > self.total_params_b:
            raise ValueError("active_params_b exceeds total_params_b")
        if self.embedding_params_b >= self.active_params_b:
            raise ValueError(
                f"vocab_size × hidden_size ({self.embedding_params_b:.3g} B parameters in the "
                f"embedding{'' if self.tied_embeddings else ' and output head'}) is not less "
                f"than active_params_b {self.active_params_b:g}")
        if self.attention_heads % self.kv_heads != 0:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        moe = (self.routed_experts, self.experts_per_token, self.routed_expert_params_b)
        if any(x is not None for x in moe):
            if any(x is None for x in moe):
                raise ValueError("a mixture-of-experts model needs routed_experts, "
                                 "experts_per_token and routed_expert_params_b")
            assert self.routed_experts is not None and self.experts_per_token is not None
            assert self.routed_expert_params_b is not None
            if self.experts_per_token > self.routed_experts:
                raise ValueError("experts_per_token exceeds routed_experts")
            if self.routed_expert_params_b >= self.total_params_b:
                raise ValueError("routed_expert_params_b must be less than total_params_b")
            active = (self.total_params_b - self.routed_expert_params_b
                      + self.routed_expert_params_b * self.experts_per_token
                      / self.routed_experts)
            if abs(active - self.active_params_b) > MOE_ACTIVE_TOLERANCE * self.active_params_b:
                raise ValueError(
                    f"active_params_b {self.active_params_b:g} disagrees with the experts: "
                    f"shared + routed × experts_per_token ÷ routed_experts = {active:.2f}")
        return self
