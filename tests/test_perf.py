"""Step times of a replica: hand-computed prefill, decode, all-reduce and MoE figures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.common import Precision
from models.runtime import RuntimeCosts, RuntimeSpec
from models.scenario import Scenario
from solver.capacity.perf import (
    REPLICATED_BYTES_PER_HIDDEN,
    allreduce_bandwidth_scale,
    allreduce_latency_ms,
    allreduce_time_ms,
    compute_tflops,
    perf_model,
    replica_perf,
    runtime_efficiency,
)

# Round numbers so every figure below can be checked by hand. Tied embeddings: the one
# 32,000 × 1000 matrix (0.032 B parameters) is read by every step as the output head.
TOY = LlmSpec(
    name="toy-1b", layers=10, hidden_size=1000, attention_heads=10, kv_heads=10, head_dim=100,
    ffn_size=4000, vocab_size=32000, total_params_b=1.0, active_params_b=1.0,
    max_context_tokens=32768, tied_embeddings=True, source="test",
)
EFF = EfficiencyFactors(
    compute_efficiency=0.5, bandwidth_efficiency=0.5, decode_step_overhead_ms=1.0,
    link_efficiency=0.5, allreduce_latency_us=10.0, runtime_overhead_gib=1.0,
    runtime_overhead_fraction=0.0,
)
#: The replicated norms and residual add of TOY on GPU, per token at any TP:
#: 10 layers × 1000 hidden × 29 bytes ÷ (1000 GB/s × 10^6 B/ms) [ms/token].
REP_MS_PER_TOKEN = 10 * 1000 * REPLICATED_BYTES_PER_HIDDEN / 1e9
GPU = GpuType(
    name="toy-gpu", memory_gib=80, hbm_bandwidth_gb_per_s=1000, bf16_tflops=100, fp8_tflops=200,
    link_bandwidth_gb_per_s=100, gpus_per_node=8, precisions=(Precision.bf16, Precision.fp8),
    efficiency=EFF, source="test",
)


def test_compute_tflops_by_precision() -> None:
    assert compute_tflops(GPU, Precision.fp8) == 200
    assert compute_tflops(GPU, Precision.bf16) == 100
    assert compute_tflops(GPU, Precision.int4) == 100  # weight-only: BF16 GEMMs


def test_allreduce_ring_time() -> None:
    # 2 × (4 − 1)/4 × 1e6 bytes = 1.5e6 bytes ÷ (100 GB/s × 0.5 = 5e7 bytes/ms) = 0.03 ms
    # + 10 µs × log2 4 = 0.02 ms latency → 0.05 ms
    assert allreduce_time_ms(1e6, 4, 100, 0.5, 10) == pytest.approx(0.05)
    # T = 2: 1e6 / 5e7 = 0.02 ms + 10 µs × 1 = 0.03 ms
    assert allreduce_time_ms(1e6, 2, 100, 0.5, 10) == pytest.approx(0.03)
    # T = 8: 2 × 7/8 × 1e6 / 5e7 = 0.035 ms + 10 µs × 3 = 0.065 ms
    assert allreduce_time_ms(1e6, 8, 100, 0.5, 10) == pytest.approx(0.065)
    assert allreduce_time_ms(1e6, 1, 100, 0.5, 10) == 0.0


def test_allreduce_latency_grows_as_log2_of_the_ring() -> None:
    assert allreduce_latency_ms(1, 20) == 0.0
    assert allreduce_latency_ms(2, 20) == pytest.approx(0.02)  # 20 µs × 1
    assert allreduce_latency_ms(8, 20) == pytest.approx(0.06)  # 20 µs × 3


def test_prefill_hand_computed() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 1)
    # linear: 2 FLOP × (1e9 − 0.032e9 head) params × 1000 tokens = 1.936e12 FLOP
    # output head, last position only: 2 × 0.032e9 = 6.4e7 FLOP
    # attention: 4 × 10 layers × 10 heads × 100 dim = 40,000 FLOP/pair × 1000·1001/2 pairs
    #            = 2.002e10 FLOP
    # at 100 TFLOPS × 0.5 = 5e10 FLOP/ms → 1.956084e12 / 5e10 = 39.12168 ms
    # memory: (2e9 weight bytes + 40,000 B/token × 1000) / 5e8 B/ms = 4.08 ms (< compute)
    # + replicated norms and add: 1000 tokens × REP_MS_PER_TOKEN = 0.29 ms
    # + 1 ms overhead = 40.41168 ms
    assert perf.prefill_time_ms(1000) == pytest.approx(40.41168)


def test_prefill_after_cached_context_adds_attention() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 1)
    # 1000 new tokens after 1000 cached: extra pairs 1000 × 1000 = 1e6 → 4e10 FLOP = 0.8 ms
    assert perf.prefill_time_ms(1000, 1000) == pytest.approx(40.41168 + 0.8)


def test_decode_step_hand_computed() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 1)
    # compute: (2e9 × 10 + 40,000 × 10,000) / 5e10 = 0.408 ms
    # memory: (2e9 + 40,000 × (10,000 read + 10 written)) / 5e8 = 4.8008 ms → memory-bound
    # + 10 tokens × REP_MS_PER_TOKEN = 0.0029 ms + 1 ms overhead = 5.8037 ms
    assert perf.decode_step_time_ms(10, 10_000) == pytest.approx(5.8037)


def test_kv_cache_is_read_at_its_own_bandwidth_efficiency() -> None:
    eff = EFF.model_copy(update={"kv_bandwidth_efficiency": 0.25})
    perf = perf_model(TOY, GPU, Precision.bf16, 1, eff)
    # weights: 2e9 / 5e8 = 4 ms; KV: 40,000 × 10,010 / (1e6 × 1000 × 0.25) = 1.6016 ms;
    # compute 0.408 ms → memory-bound; + 0.0029 ms replicated + 1 ms overhead = 6.6045 ms
    # (5.8037 at one efficiency)
    assert perf.decode_step_time_ms(10, 10_000) == pytest.approx(6.6045)
    # unset: the KV cache is read at the weights' efficiency
    assert perf_model(TOY, GPU, Precision.bf16, 1).decode_step_time_ms(10, 10_000) == (
        pytest.approx(5.8037))


def test_a_runtime_with_its_own_allreduce_latency_replaces_the_gpus() -> None:
    nccl = RuntimeSpec(name="eager", costs=(RuntimeCosts(
        gpu="toy-gpu", decode_step_overhead_ms=1.0, step_overhead_ms_per_layer=0.0,
        step_overhead_ms_per_seq=0.0, fitted_on="toy-gpu"),), source="test")
    custom = RuntimeSpec(name="fast", allreduce="custom", costs=(nccl.costs[0].model_copy(
        update={"allreduce_latency_us": 4.0}),), source="test")
    assert runtime_efficiency(GPU, nccl).allreduce_latency_us == 10.0  # the GPU's
    assert runtime_efficiency(GPU, custom).allreduce_latency_us == 4.0
    step = [perf_model(TOY, GPU, Precision.bf16, 2, runtime_efficiency(GPU, r))
            .decode_step_time_ms(10, 10_000) for r in (nccl, custom)]
    # 2 × 10 layers × (10 − 4) µs × log2 2 = 0.12 ms less
    assert step[0] - step[1] == pytest.approx(0.12)


def test_nccl_latency_table_is_read_per_ring_size() -> None:
    table = (28.0, 33.0, 37.0)  # µs at 2, 4, 8 GPUs
    assert allreduce_latency_ms(1, 10.0, table) == 0.0
    assert [allreduce_latency_ms(t, 10.0, table) for t in (2, 4, 8)] == pytest.approx(
        [0.028, 0.033, 0.037])
    # between two ring sizes: linear in log2 T (6 GPUs: log2 6 − 1 = 1.585 steps)
    assert allreduce_latency_ms(6, 10.0, table) == pytest.approx(
        (33.0 + (37.0 - 33.0) * (np.log2(6) - 2)) / 1000)
    assert allreduce_latency_ms(16, 10.0, table) == pytest.approx(0.037)  # past the table
    assert allreduce_latency_ms(8, 10.0, None) == pytest.approx(0.030)  # 10 µs × log2 8


def _runtimes() -> tuple[RuntimeSpec, RuntimeSpec, RuntimeSpec]:
    costs = RuntimeCosts(gpu="toy-gpu", decode_step_overhead_ms=1.0,
                         step_overhead_ms_per_layer=0.0, step_overhead_ms_per_seq=0.0,
                         fitted_on="toy-gpu")
    eager = RuntimeSpec(name="eager", cuda_graph_decode=False, costs=(costs,), source="test")
    graphs = RuntimeSpec(name="graphs", costs=(costs,), source="test")
    custom = RuntimeSpec(name="fast", allreduce="custom", custom_allreduce_pcie_max_tp=2,
                         costs=(costs.model_copy(update={"allreduce_latency_us": 4.0}),),
                         source="test")
    return eager, graphs, custom


def test_nccl_per_ring_size_for_cuda_graph_runtimes_log2_for_eager_ones() -> None:
    gpu = GPU.model_copy(update={"efficiency": EFF.model_copy(
        update={"nccl_latency_us": (28.0, 33.0)})})
    eager, graphs, custom = _runtimes()
    latency = {r.name: perf_model(TOY, gpu, Precision.bf16, 4, runtime_efficiency(gpu, r, 4))
               .allreduce_ms_per_step for r in (eager, graphs, custom)}
    # 2 all-reduces × 10 layers at 4 GPUs: eager 10 µs × 2, graphs 33 µs, custom 4 µs × 2
    assert latency == pytest.approx({"eager": 0.4, "graphs": 0.66, "fast": 0.16})


def test_a_custom_allreduce_falls_back_to_nccl_past_its_pcie_limit() -> None:
    _, _, custom = _runtimes()
    pcie = GPU.model_copy(update={"peer_link": "pcie", "efficiency": EFF.model_copy(
        update={"nccl_latency_us": (28.0, 33.0)})})
    nvlink = pcie.model_copy(update={"peer_link": "nvlink"})
    assert custom.uses_nccl("pcie", 4) and not custom.uses_nccl("pcie", 2)
    assert not custom.uses_nccl("nvlink", 8)
    assert runtime_efficiency(pcie, custom, 2).allreduce_latency_us == 4.0  # its kernel
    assert runtime_efficiency(pcie, custom, 2).nccl_latency_us is None
    assert runtime_efficiency(pcie, custom, 4).nccl_latency_us == (28.0, 33.0)  # NCCL's
    assert runtime_efficiency(nvlink, custom, 4).allreduce_latency_us == 4.0
    step = {g.peer_link: perf_model(TOY, g, Precision.bf16, 4, runtime_efficiency(g, custom, 4))
            .allreduce_ms_per_step for g in (pcie, nvlink)}
    assert step == pytest.approx({"pcie": 20 * 0.033, "nvlink": 20 * 0.008})


def test_decode_step_on_tp2_adds_allreduce() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 2)
    # memory per GPU: (1e9 + 20,000 B/token × 10,010) / 5e8 = 2.4004 ms
    # all-reduce: 2 × 10 layers × 10 µs = 0.2 ms,
    #   + 20 × (2 × 1/2 × 1000 hidden × 2 bytes) / 5e7 B/ms × 10 tokens = 0.008 ms
    # + 0.0029 ms replicated norms and add (not split by TP) + 1 ms overhead = 3.6113 ms
    assert perf.decode_step_time_ms(10, 10_000) == pytest.approx(3.6113)


def test_decode_step_on_tp4_pays_twice_the_allreduce_latency_of_tp2() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 4)
    # memory per GPU: weights 2e9 / 4 = 5e8 B; KV 10 layers × 2 × ⌈10/4⌉ = 3 heads × 100 × 2 B
    #   = 12,000 B/token × 10,010 = 1.2012e8 B → (5e8 + 1.2012e8) / 5e8 = 1.24024 ms
    # compute (2e10 + 4e8) / (5e10 × 4) = 0.102 ms → memory-bound
    # all-reduce latency: 2 × 10 layers × 10 µs × log2 4 = 0.4 ms,
    #   bandwidth: 20 × (2 × 3/4 × 2000 B) / 5e7 B/ms × 10 tokens = 0.012 ms
    # + 0.0029 ms replicated + 1 ms overhead = 2.65514 ms
    assert perf.decode_step_time_ms(10, 10_000) == pytest.approx(2.65514)


#: EFF with the per-layer and per-sequence step costs.
EFF_SEQ = EFF.model_copy(update={"step_overhead_ms_per_layer": 0.1,
                                 "step_overhead_ms_per_seq": 0.05})


def test_step_overhead_per_layer_and_per_sequence() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 1, EFF_SEQ)
    # decode: 5.8037 ms (above) + 10 layers × 0.1 ms + 10 sequences × 0.05 ms = 7.3037 ms
    assert perf.decode_step_time_ms(10, 10_000) == pytest.approx(7.3037)
    # prefill of 2 prompts of 500 tokens: linear 1.936e12 FLOP + head 2 × 6.4e7 + attention
    #   40,000 × 1000 × (500 + 1)/2 = 1.002e10 FLOP → 1.946148e12 / 5e10 = 38.92296 ms
    #   (memory 4.08 ms) + 0.29 ms replicated + 1 ms + 1.0 ms (layers) + 2 sequences × 0.05 ms
    #   = 41.31296 ms
    assert perf.step_time_ms(1000, 0, 0, prefill_seqs=2) == pytest.approx(41.31296)
    # mixed: 20.01738 ms (test_mixed_step_is_one_roofline, without its 1 ms) + 1 + 1.0
    #   + (10 + 1) × 0.05
    assert perf.step_time_ms(500, 10, 10_000) == pytest.approx(22.56738)
    # a prompt joining iterations adds its compute (39.12168 ms, test_prefill_hand_computed),
    # its tokens' replicated norms and add (0.29 ms) and one sequence's 0.05 ms, not the
    # per-step or per-layer costs: 39.46168 ms
    assert perf.prefill_marginal_ms(1000) == pytest.approx(39.46168)
    assert perf.step_time_ms(0, 0, 0) == 0.0  # still nothing for an empty iteration


def test_per_layer_overhead_scales_with_the_model() -> None:
    deep = TOY.model_copy(update={"layers": 40})
    shallow, deeper = (perf_model(m, GPU, Precision.bf16, 1, EFF_SEQ) for m in (TOY, deep))
    # fixed cost of an iteration: 1 ms + 10 layers × 0.1 ms = 2 ms; with 40 layers 1 + 4 = 5 ms
    assert shallow.step_overhead_ms == pytest.approx(2.0)
    assert deeper.step_overhead_ms == pytest.approx(5.0)


def test_moe_reads_the_shared_weights_and_the_experts_its_tokens_are_sent_to() -> None:
    # 0.2 B shared + 0.8 B in 4 routed experts, 1 per token: active 0.2 + 0.8 / 4 = 0.4 B
    moe = LlmSpec(**(TOY.model_dump() | {
        "active_params_b": 0.4, "routed_experts": 4, "experts_per_token": 1,
        "routed_expert_params_b": 0.8}))
    perf = perf_model(moe, GPU, Precision.bf16, 1)
    # batch 1: 0.4e9 B shared + 1.6e9 B × (1 − 3/4) = 0.8e9 B, + 40,000 B of KV written
    # = 8.0004e8 B ÷ 5e8 B/ms = 1.60008 ms, + 1 token × REP_MS_PER_TOKEN + 1 ms per step
    assert perf.decode_step_time_ms(1, 0) == pytest.approx(2.60037)
    # batch 2: 0.4e9 + 1.6e9 × (1 − (3/4)²) = 1.1e9 B, + 80,000 B → 2.20016 ms, + 2 × REP, + 1 ms
    assert perf.decode_step_time_ms(2, 0) == pytest.approx(3.20074)
    # the approximation by counts alone (all weights routed at 0.4) reads more at batch 2:
    # 1 − 0.6² = 64 % of 2e9 = 1.28e9 B
    counts_only = TOY.model_copy(update={"active_params_b": 0.4})
    assert perf_model(counts_only, GPU, Precision.bf16, 1).decode_step_time_ms(2, 0) == (
        pytest.approx(1 + (1.28e9 + 80_000) / 5e8 + 2 * REP_MS_PER_TOKEN))


def test_moe_reads_more_experts_as_the_batch_grows() -> None:
    moe = TOY.model_copy(update={"active_params_b": 0.25})
    perf = perf_model(moe, GPU, Precision.bf16, 1)
    # batch 1: 25 % of 2e9 bytes + 40,000 B written = 5.0004e8 B / 5e8 = 1.00008 ms, + 1 ms
    # (+ REP_MS_PER_TOKEN a token)
    assert perf.decode_step_time_ms(1, 0) == pytest.approx(2.00037)
    # batch 2: 1 − 0.75² = 43.75 % of 2e9 = 8.75e8 + 80,000 B → 1.75016 ms, + 1 ms
    assert perf.decode_step_time_ms(2, 0) == pytest.approx(2.75074)


def test_empty_iteration_costs_nothing() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 1)
    assert perf.step_time_ms(0, 0, 0) == 0.0


def test_mixed_step_is_one_roofline() -> None:
    perf = perf_model(TOY, GPU, Precision.bf16, 1)
    # 500 prefill + 10 decode tokens: linear 2 × 0.968e9 × 510 = 9.8736e11, output head for the
    # 10 decoded sequences and the prompt's last position 11 × 6.4e7 = 7.04e8, attention
    # 40,000 × (10,000 + 500·501/2) = 5.41e9 → 9.93474e11 / 5e10 = 19.86948 ms;
    # memory 4.82 ms → 19.86948, + 510 tokens × REP_MS_PER_TOKEN = 0.1479 ms, + 1 ms
    assert perf.step_time_ms(500, 10, 10_000) == pytest.approx(21.01738)


def test_vectorised_matches_scalar() -> None:
    perf = perf_model(TOY, GPU, Precision.fp8, 2, EFF_SEQ)
    p = np.array([0, 0, 512, 2048, 100])
    b = np.array([0, 64, 0, 8, 200])
    k = np.array([0, 64_000, 0, 9_000, 400_000])
    n = np.array([3, 1, 4, 2, 1])
    arr = perf.step_times_ms(p, b, k, n)
    assert arr.tolist() == pytest.approx(
        [perf.step_time_ms(int(x), int(y), int(z), int(s))
         for x, y, z, s in zip(p, b, k, n, strict=True)])
    assert arr[1] > 0 and arr[0] == 0.0


def test_untied_embedding_table_is_looked_up_not_read_or_multiplied() -> None:
    untied = TOY.model_copy(update={"tied_embeddings": False})
    perf = perf_model(untied, GPU, Precision.bf16, 1)
    # decode, batch 10 at 10,000 cached tokens: the 0.032e9-parameter input table (6.4e7 B)
    # is not read: (2e9 − 6.4e7 + 40,000 × 10,010) / 5e8 = 4.6728 ms, + 0.0029 ms + 1 ms
    assert perf.decode_step_time_ms(10, 10_000) == pytest.approx(5.6757)
    # prefill of 1000 tokens: linear 2 × (1e9 − 2 × 0.032e9) × 1000 = 1.872e12, head 6.4e7,
    # attention 2.002e10 → 1.892084e12 / 5e10 = 37.84168 ms, + 0.29 ms replicated, + 1 ms
    assert perf.prefill_time_ms(1000) == pytest.approx(39.13168)
    # the head runs once per prompt: 4 prompts of 250 tokens pay 3 more heads (1.92e8 FLOP,
    # 0.00384 ms) and less attention (40,000 × 1000 × 251/2 = 5.02e9 vs 2.002e10 FLOP, −0.3 ms)
    four = perf.step_time_ms(1000, 0, 0, prefill_seqs=4)
    assert four == pytest.approx(39.13168 + 0.00384 - (2.002e10 - 5.02e9) / 5e10)
    with pytest.raises(ValueError, match="embedding"):
        LlmSpec(**(untied.model_dump() | {"vocab_size": 600_000}))


def test_efficiency_parameter_overrides_the_catalog() -> None:
    faster = EFF.model_copy(update={"bandwidth_efficiency": 1.0})
    slow, fast = perf_model(TOY, GPU, Precision.bf16, 1), perf_model(TOY, GPU, Precision.bf16, 1,
                                                                      faster)
    # memory time halves: 4.8008 / 2 = 2.4004 ms, + 0.0029 ms replicated + 1 ms
    assert fast.decode_step_time_ms(10, 10_000) == pytest.approx(3.4033)
    assert slow.decode_step_time_ms(10, 10_000) == pytest.approx(5.8037)


def test_replica_perf_checks_fit() -> None:
    scenario = Scenario(name="t", gpus=(GPU,), models=(TOY,), zones=(), workloads=())
    assert replica_perf(scenario, "toy-1b", "toy-gpu", Precision.fp8, 2).kv_capacity_tokens > 0
    with pytest.raises(ValueError, match="does not run int4"):
        replica_perf(scenario, "toy-1b", "toy-gpu", Precision.int4, 1)
    with pytest.raises(ValueError, match="unknown GPU"):
        replica_perf(scenario, "toy-1b", "H100", Precision.bf16, 1)


@settings(max_examples=30, deadline=None)
@given(tokens=st.integers(1, 16_000), tp=st.sampled_from([1, 2, 4]))
def test_tp_never_makes_prefill_cheaper_in_gpu_time(tokens: int, tp: int) -> None:
    # More GPUs split the work, but all-reduce only adds: GPU·ms per prompt never falls.
    one = perf_model(TOY, GPU, Precision.bf16, tp).prefill_time_ms(tokens)
    two = perf_model(TOY, GPU, Precision.bf16, 2 * tp).prefill_time_ms(tokens)
    assert two < one
    assert two * 2 * tp >= one * tp


def test_nccl_bandwidth_per_ring_size_scales_the_link_efficiency() -> None:
    table = (0.6, 0.75, 0.84)  # NCCL's share of the link at 2, 4, 8 GPUs
    assert allreduce_bandwidth_scale(1, table) == 1.0
    assert allreduce_bandwidth_scale(2, table) == 1.0
    assert allreduce_bandwidth_scale(4, table) == pytest.approx(1.25)
    assert allreduce_bandwidth_scale(16, table) == pytest.approx(1.4)  # the last, past the table
    assert allreduce_bandwidth_scale(8, None) == 1.0
    gpu = GPU.model_copy(update={"efficiency": EFF.model_copy(
        update={"nccl_link_efficiency": table})})
    for tp, scale in ((2, 1.0), (4, 1.25), (8, 1.4)):
        # 2 all-reduces × 10 layers of 1000 × 2 bytes a token, 2 (T − 1) / T on the wire, at
        # 100 GB/s × 0.5 × scale
        wire = 2 * (tp - 1) / tp * 2000
        assert perf_model(TOY, gpu, Precision.bf16, tp).allreduce_ms_per_token == pytest.approx(
            20 * wire / (100e6 * 0.5 * scale))
        assert perf_model(TOY, gpu, Precision.bf16, tp).allreduce_ms_per_step == (
            perf_model(TOY, GPU, Precision.bf16, tp).allreduce_ms_per_step)  # latency: as was
