"""The operator-sum step time built from Vidur's A100 profiles (solver.capacity.operator_sum)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from models.catalog import LlmSpec
from models.loader import load_catalog
from solver.capacity.operator_sum import (
    GQA_BATCHING_OVERHEAD,
    NCCL_LAUNCH_MS,
    TOKEN_OPERATORS,
    AttentionShape,
    OperatorSumModel,
    ProfileError,
    load_operator_sum,
)

DATA = Path(__file__).parent / "data" / "perf" / "vidur" / "a100"
ATTENTION = DATA / "attention_8192_64q_8kv_tp2.csv"
ALLREDUCE = DATA / "a100_dgx_all_reduce_2.csv"
SHAPE = AttentionShape(q_heads=64, kv_heads=8, head_dim=128, tp=2)


def _model(name: str) -> LlmSpec:
    return next(m for m in load_catalog()[1] if m.name == name)


def _llama70(tp: int = 2) -> OperatorSumModel:
    return load_operator_sum(_model("Llama-2-70B"), tp, 40_000,
                             mlp_csv=DATA / "Llama-2-70b-hf_mlp_tp2.csv",
                             attention_csv=ATTENTION, attention_shape=SHAPE,
                             allreduce_csv=ALLREDUCE)


def _llama8() -> OperatorSumModel:
    return load_operator_sum(_model("Llama-3.1-8B"), 1, 400_000,
                             mlp_csv=DATA / "Meta-Llama-3-8B_mlp_tp1.csv",
                             attention_csv=ATTENTION, attention_shape=SHAPE)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _unique(rows: list[dict[str, str]], *keys: str) -> list[dict[str, str]]:
    """Rows whose key columns occur once (duplicated profile points are averaged)."""
    count: dict[tuple[str, ...], int] = {}
    for r in rows:
        k = tuple(r[c] for c in keys)
        count[k] = count.get(k, 0) + 1
    return [r for r in rows if count[tuple(r[c] for c in keys)] == 1]


def test_token_operators_are_the_profiled_sum_at_profiled_token_counts() -> None:
    model = _llama70()
    rows = _unique(_rows(DATA / "Llama-2-70b-hf_mlp_tp2.csv"), "num_tokens")
    for r in rows[::25]:
        want = sum(float(r[f"time_stats.{op}.median"]) for op in TOKEN_OPERATORS)
        assert model.layer_ms(float(r["num_tokens"])) == pytest.approx(want)


def test_attention_tables_return_the_profiled_times_at_profiled_points() -> None:
    model = _llama70()
    rows = _unique(_rows(ATTENTION), "is_prefill", "batch_size", "prefill_chunk_size",
                   "kv_cache_size")
    decode = [r for r in rows if r["is_prefill"] == "False"][::500]
    prefill = [r for r in rows if r["is_prefill"] == "True"][::200]
    assert decode and prefill
    for r in decode:
        b = float(r["batch_size"])
        got = model.decode_attention_ms(b, float(r["kv_cache_size"]))
        want = float(r["time_stats.attn_decode.median"]) * (1 + GQA_BATCHING_OVERHEAD * (b > 1))
        assert got == pytest.approx(want)
    for r in prefill:
        got = model.prefill_attention_ms(float(r["prefill_chunk_size"]), 1,
                                         float(r["kv_cache_size"]))
        assert got == pytest.approx(float(r["time_stats.attn_prefill.median"]))


def test_a_model_with_twice_the_kv_heads_per_gpu_reads_the_profile_at_twice_the_kv() -> None:
    small, big = _llama8(), _llama70()  # 8 KV heads on one GPU against 8 over two
    assert small.decode_kv_scale == 2.0 and small.prefill_scale == 1.0
    for b, kv in ((1, 300.0), (16, 1000.0), (100, 1500.0)):
        assert small.decode_attention_ms(b, kv) == pytest.approx(big.decode_attention_ms(b, 2 * kv))


def test_decode_attention_grows_past_the_profiled_kv_lengths_and_batches() -> None:
    model = _llama70()
    top_kv = 4032.0  # the profile's longest
    t = [model.decode_attention_ms(32, kv) for kv in (top_kv + 1000, top_kv + 2000,
                                                      top_kv + 3000)]
    assert t[0] < t[1] < t[2]
    assert t[2] - t[1] == pytest.approx(t[1] - t[0])  # along a line past the grid
    assert model.decode_attention_ms(256, 1000.0) == pytest.approx(
        2 * model.decode_attention_ms(128, 1000.0))


def test_a_step_sums_layers_of_operators_attention_and_two_all_reduces() -> None:
    model = _llama70()
    b, kv, pre, ctx = 20, 20 * 900, 500, 300
    tokens = pre + b
    per_layer = (model.layer_ms(tokens) + model.decode_attention_ms(b, kv / b)
                 + model.prefill_attention_ms(pre, 1, ctx) + 2 * model.allreduce_time_ms(tokens))
    assert model.step_time_ms(pre, b, kv, 1, ctx) == pytest.approx(80 * per_layer)
    assert model.allreduce_time_ms(tokens) > NCCL_LAUNCH_MS
    assert model.step_time_ms(0, 0, 0) == 0.0


def test_one_gpu_has_no_all_reduce() -> None:
    model = _llama8()
    step = model.step_time_ms(0, 8, 8 * 500)
    assert step == pytest.approx(32 * (model.layer_ms(8) + model.decode_attention_ms(8, 500)))


def test_several_prompts_share_a_prefill_kernel_as_vidur_aggregates_them() -> None:
    model = _llama70()
    one = model.prefill_attention_ms(1024, 1, 0)
    four = model.prefill_attention_ms(1024, 4, 0)  # four 256-token chunks: root of squares 512
    assert four == pytest.approx(model.prefill_attention_ms(512, 1, 0)
                                 * (1 + GQA_BATCHING_OVERHEAD))
    assert four < one


def test_a_profile_of_another_shape_is_refused_naming_file_and_column(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="n_embd is 4096"):
        load_operator_sum(_model("Llama-2-70B"), 1, 1, mlp_csv=DATA / "Meta-Llama-3-8B_mlp_tp1.csv",
                          attention_csv=ATTENTION, attention_shape=SHAPE,
                          allreduce_csv=ALLREDUCE)
    with pytest.raises(ProfileError, match="head size 64"):
        load_operator_sum(_model("Llama-2-70B"), 2, 1, mlp_csv=DATA / "Llama-2-70b-hf_mlp_tp2.csv",
                          attention_csv=ATTENTION, attention_shape=AttentionShape(64, 8, 64, 2),
                          allreduce_csv=ALLREDUCE)
    bad = tmp_path / "mlp.csv"
    bad.write_text("num_tokens,time_stats.add.median\n1,0.1\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"mlp\.csv: no column 'time_stats\.input_layernorm"):
        load_operator_sum(_model("Llama-3.1-8B"), 1, 1, mlp_csv=bad, attention_csv=ATTENTION,
                          attention_shape=SHAPE)
    with pytest.raises(ProfileError, match="needs an all-reduce profile"):
        load_operator_sum(_model("Llama-2-70B"), 2, 1, mlp_csv=DATA / "Llama-2-70b-hf_mlp_tp2.csv",
                          attention_csv=ATTENTION, attention_shape=SHAPE)


def test_a_profile_naming_a_column_twice_is_refused_naming_both(tmp_path: Path) -> None:
    # csv's DictReader keeps the second column's cells: its times would be read as the
    # first's, without a word
    rows = (DATA / "Meta-Llama-3-8B_mlp_tp1.csv").read_text(encoding="utf-8").splitlines()
    twice = tmp_path / "mlp.csv"
    twice.write_text("\n".join([rows[0] + ",num_tokens", *(r + ",1" for r in rows[1:])]) + "\n",
                     encoding="utf-8")
    with pytest.raises(ProfileError, match=r"mlp\.csv: a column named twice: `num_tokens`"):
        load_operator_sum(_model("Llama-3.1-8B"), 1, 1, mlp_csv=twice, attention_csv=ATTENTION,
                          attention_shape=SHAPE)
