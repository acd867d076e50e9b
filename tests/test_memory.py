"""Memory of one replica: hand-computed weights, KV bytes per token, capacity and fit reasons."""

from __future__ import annotations

import pytest

from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.common import Precision
from models.policy import Policy
from solver.capacity.memory import (
    BYTES_PER_GIB,
    check_fit,
    fit_problem,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    kv_precision,
    max_stable_sequences,
    memory_plan,
    tp_degrees,
    weight_bytes_per_gpu,
)

LLAMA_70B = LlmSpec(
    name="Llama-3.1-70B", layers=80, hidden_size=8192, attention_heads=64, kv_heads=8,
    head_dim=128, ffn_size=28672, vocab_size=128256, total_params_b=70.55, active_params_b=70.55,
    max_context_tokens=131072, source="test",
)
DEEPSEEK_V3 = LlmSpec(
    name="DeepSeek-V3", layers=61, hidden_size=7168, attention_heads=128, kv_heads=128,
    head_dim=128, ffn_size=18432, vocab_size=129280, total_params_b=671.03, active_params_b=37.44,
    max_context_tokens=163840, kv_latent_dim=576, source="test",
)
H100 = GpuType(
    name="H100-SXM", memory_gib=80, hbm_bandwidth_gb_per_s=3350, bf16_tflops=989,
    fp8_tflops=1979, link_bandwidth_gb_per_s=450, gpus_per_node=8,
    precisions=(Precision.bf16, Precision.fp8),
    efficiency=EfficiencyFactors(runtime_overhead_gib=2.0, runtime_overhead_fraction=0.05),
    source="test",
)
L4 = GpuType(
    name="L4", memory_gib=24, hbm_bandwidth_gb_per_s=300, bf16_tflops=121, fp8_tflops=242.5,
    link_bandwidth_gb_per_s=32, gpus_per_node=4, precisions=(Precision.bf16, Precision.fp8),
    source="test",
)
POLICY = Policy(memory_margin_fraction=0.05)


def test_llama_70b_kv_bytes_per_token_bf16() -> None:
    # 80 layers × 2 (K and V) × 8 KV heads × 128 head dim × 2 bytes = 327,680 bytes/token
    assert kv_bytes_per_token(LLAMA_70B, Precision.bf16) == 327_680


def test_kv_split_over_tp_and_replicated_past_the_kv_heads() -> None:
    # TP 4: 8 heads ÷ 4 = 2 per GPU → 80 × 2 × 2 × 128 × 2 = 81,920 bytes/token/GPU
    assert kv_bytes_per_token_per_gpu(LLAMA_70B, Precision.bf16, 4) == 81_920
    # TP 16 would leave 0.5 heads: each GPU still holds one → 80 × 2 × 1 × 128 × 2 = 40,960
    assert kv_bytes_per_token_per_gpu(LLAMA_70B, Precision.bf16, 16) == 40_960


def test_mla_latent_is_replicated_not_split() -> None:
    # DeepSeek-V3: 61 layers × 576 latent × 2 bytes = 70,272 bytes/token on every GPU
    assert kv_bytes_per_token(DEEPSEEK_V3, Precision.bf16) == 70_272
    assert kv_bytes_per_token_per_gpu(DEEPSEEK_V3, Precision.bf16, 8) == 70_272


def test_llama_70b_fp8_weights_on_tp2_about_35_gb() -> None:
    # 70.55e9 params × 1 byte ÷ 2 GPUs = 35.275e9 bytes per GPU
    assert weight_bytes_per_gpu(LLAMA_70B, Precision.fp8, 2) == pytest.approx(35.275e9)


def test_kv_precision_rule() -> None:
    assert kv_precision(Precision.fp8) is Precision.fp8
    assert kv_precision(Precision.bf16) is Precision.bf16
    assert kv_precision(Precision.int4) is Precision.bf16
    assert kv_precision(Precision.int8) is Precision.bf16


def test_memory_plan_hand_computed() -> None:
    plan = memory_plan(LLAMA_70B, H100, Precision.fp8, 2, POLICY.memory_margin_fraction)
    weights_gib = 35.275e9 / 2**30  # = 32.852 GiB
    overhead_gib = 2.0 + 0.05 * 80  # = 6.0 GiB
    margin_gib = 0.05 * 80  # = 4.0 GiB
    kv_gib = 80 - weights_gib - overhead_gib - margin_gib  # = 37.148 GiB
    # FP8 KV, 4 heads per GPU: 80 × 2 × 4 × 128 × 1 = 81,920 bytes/token/GPU
    assert plan.weights_gib == pytest.approx(weights_gib)
    assert plan.runtime_overhead_gib == pytest.approx(overhead_gib)
    assert plan.margin_gib == pytest.approx(margin_gib)
    assert plan.kv_gib == pytest.approx(kv_gib)
    assert plan.kv_bytes_per_token_per_gpu == 81_920
    assert plan.kv_capacity_tokens == int(kv_gib * BYTES_PER_GIB // 81_920)  # ≈ 486,900
    assert 486_000 < plan.kv_capacity_tokens < 488_000


def test_max_stable_sequences_floors() -> None:
    assert max_stable_sequences(10_000, 3_000) == 3  # 10,000 ÷ 3,000 = 3.33 → 3
    assert max_stable_sequences(2_999, 3_000) == 0


def test_tp_degrees_limited_by_node() -> None:
    assert tp_degrees(H100) == (1, 2, 4, 8)
    assert tp_degrees(L4) == (1, 2, 4)


def test_fits_when_everything_is_right() -> None:
    assert check_fit(LLAMA_70B, H100, Precision.fp8, 2, POLICY, 8_000) is None


@pytest.mark.parametrize(
    ("gpu", "precision", "tp", "context", "reason_part"),
    [
        (H100, Precision.int4, 2, 8_000, "does not run int4"),
        (L4, Precision.fp8, 8, 8_000, "exceeds L4's 4 GPUs per node"),
        (H100, Precision.bf16, 1, 8_000, "exceed 80 GiB"),  # 141.1e9 B = 131 GiB of weights
        (H100, Precision.fp8, 2, 600_000, "less than one P99 context"),
    ],
)
def test_reasons_for_not_fitting(
    gpu: GpuType, precision: Precision, tp: int, context: int, reason_part: str
) -> None:
    reason = check_fit(LLAMA_70B, gpu, precision, tp, POLICY, context)
    assert reason is not None
    assert reason_part in reason


def test_tp_must_divide_attention_heads() -> None:
    odd = LLAMA_70B.model_copy(update={"attention_heads": 28, "kv_heads": 4})
    reason = check_fit(odd, H100, Precision.fp8, 8, POLICY, 1_000)
    assert reason is not None
    assert "does not divide" in reason


@pytest.mark.parametrize(
    ("gpu", "precision", "tp", "context", "fix"),
    [
        (H100, Precision.int4, 2, 8_000, "pick a precision the GPU runs, or another GPU"),
        # no precision changes a node's size or the heads: the TPs that serve are named
        (L4, Precision.fp8, 8, 8_000, "use a TP of 1, 2, 4 on L4 (64 heads, 4 GPUs per node)"),
        (H100, Precision.fp8, 3, 8_000,
         "use a TP of 1, 2, 4, 8 on H100-SXM (64 heads, 8 GPUs per node)"),
        (H100, Precision.bf16, 1, 8_000, "try a larger TP, a smaller precision or another GPU"),
        (H100, Precision.fp8, 2, 600_000, "try a larger TP, a smaller precision or another GPU"),
    ],
)
def test_each_cause_comes_with_its_fix(
    gpu: GpuType, precision: Precision, tp: int, context: int, fix: str
) -> None:
    """check_fit's cause and the fix for it, from one place (estimate read the cause and
    re-tested its conditions to find the fix)."""
    problem = fit_problem(LLAMA_70B, gpu, precision, tp, POLICY, context)
    assert problem is not None and problem.fix == fix
    assert problem.cause == check_fit(LLAMA_70B, gpu, precision, tp, POLICY, context)
    assert fit_problem(LLAMA_70B, H100, Precision.fp8, 2, POLICY, 8_000) is None


def test_when_no_larger_tp_fits_the_node_the_fix_names_precisions_and_gpus_that_do() -> None:
    """405B BF16 on 8 H100s was told "try a larger TP", but 8 is the node: the fix names the
    lower precisions the GPU runs and the catalog's GPUs that hold it, at their smallest TP."""
    big = LLAMA_70B.model_copy(update={"name": "Llama-3.1-405B", "total_params_b": 405.85,
                                       "attention_heads": 128})
    h200 = H100.model_copy(update={"name": "H200", "memory_gib": 141})
    # 405.85e9 × 2 B ÷ 8 = 94.5 GiB per GPU > 80 GiB; FP8 at TP 8: 47.2 GiB
    problem = fit_problem(big, H100, Precision.bf16, 8, POLICY, 8_000)
    assert problem is not None
    assert problem.fix == ("no TP of H100-SXM's 8-GPU node holds it: use a lower precision "
                           "(fp8 at TP 8) or a GPU with more memory")
    problem = fit_problem(big, H100, Precision.bf16, 8, POLICY, 8_000, (L4, H100, h200))
    assert problem is not None
    assert problem.fix == ("no TP of H100-SXM's 8-GPU node holds it: use a lower precision "
                           "(fp8 at TP 8) or a GPU with more memory (H200 at TP 8)")
    # FP8 at TP 4 (94.5 GiB per GPU) does not fit, TP 8 does: a larger TP is the fix
    problem = fit_problem(big, H100, Precision.fp8, 4, POLICY, 8_000, (L4, H100, h200))
    assert problem is not None and problem.fix.startswith("try a larger TP")
    # nothing holds it: neither a TP, a precision nor a GPU of the catalog
    problem = fit_problem(big, L4, Precision.fp8, 4, POLICY, 8_000, (L4,))
    assert problem is not None
    assert problem.fix == ("no TP, lower precision or GPU of the catalog holds it at fp8: a "
                           "shorter context or a smaller model")
