"""Readers of measured performance data: the shared perf files and the user's MEASUREMENTS.csv."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.common import Precision
from models.errors import InputError
from solver.capacity.perfdata import (
    COLUMNS,
    Measurement,
    MeasurementKind,
    read_measurements_csv,
    read_published_perf,
    read_shared_perf,
    read_splitwise,
    read_trtllm,
    read_vidur_allreduce,
    read_vidur_gemm,
    to_csv_text,
    to_frame,
)

PERF = Path(__file__).resolve().parent / "data" / "perf"
SHARED_PERF = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "perf"


def _one(rows: list[Measurement], **match: object) -> Measurement:
    found = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_splitwise_prefill_and_decode_rows() -> None:
    rows = read_splitwise(PERF / "splitwise_sim_perf_model.csv")
    prefill = [r for r in rows if r.kind is MeasurementKind.prefill_ms]
    decode = [r for r in rows if r.kind is MeasurementKind.decode_step_ms]
    # TP4: 7 prompt sizes at batch 1 + batches 2..64 at prompt 512 = 13 configs per GPU (26);
    # A100 TP2 prompt 512: batch 32 kept, batch 64 dropped (incomplete run) → 27.
    assert len(prefill) == 27
    # TP4: 7 prompt sizes + 6 more token sizes + 6 more batches = 19 per GPU (38); TP2: 2 → 40.
    assert len(decode) == 40
    assert {r.gpu for r in rows} == {"A100-80GB", "H100-SXM"}  # pcap rows skipped
    assert {r.model for r in rows} == {"Llama-2-70B"}
    # prompt_time of the 5 runs: 63.77, 63.65, 78.52, 63.53, 63.32 → median 63.654
    p = _one(prefill, gpu="A100-80GB", tp=4, batch=1, input_tokens=128)
    assert p.value == pytest.approx(63.65380412898958)
    assert p.precision is Precision.bf16
    # token_time of those runs: 42.165, 42.388, 42.504, 42.419, 42.567 → median 42.419
    d = _one(decode, gpu="A100-80GB", tp=4, batch=1, input_tokens=128)
    assert d.value == pytest.approx(42.419229817437376)
    assert d.context_tokens == pytest.approx(128 + 128 / 2)  # prompt + half the generated tokens
    assert not [r for r in prefill if r.tp == 2 and r.batch == 64]
    assert _one(decode, gpu="A100-80GB", tp=2, batch=64).value > 0


def test_vidur_allreduce_keeps_single_node_rings_in_bytes() -> None:
    rows = read_vidur_allreduce(PERF / "vidur" / "h100_dgx_all_reduce.csv", "H100-SXM", every=1)
    assert len(rows) == 60  # 20 sampled rows for each of 2, 4, 8 workers, all within one node
    first = _one(rows, tp=8, size_bytes=2048.0)
    assert first.value == pytest.approx(0.037)  # time_stats.all_reduce.median of data row 1
    a100 = read_vidur_allreduce(PERF / "vidur" / "a100_dgx_all_reduce.csv", "A100-80GB", every=1)
    # devices_per_node == num_workers: (2,2), (4,4), (8,8) 10 each; (2,1), (4,2), (8,4), (16,8)
    # span nodes and are dropped
    assert len(a100) == 30
    assert {r.tp for r in a100} == {2, 4, 8}
    thinned = read_vidur_allreduce(PERF / "vidur" / "h100_dgx_all_reduce.csv", "H100-SXM", every=8)
    assert len(thinned) == 3 * 3  # ceil(20 / 8) = 3 per worker count


def test_vidur_gemm_sums_the_four_projections() -> None:
    rows = read_vidur_gemm(PERF / "vidur" / "h100_Llama-2-70b-hf_mlp.csv")
    assert len(rows) == 27
    # data row 1 (4096 tokens, TP1) medians: attn_pre_proj 0.9825 + attn_post_proj 0.7885
    # + mlp_up_proj 5.6685 + mlp_down_proj 2.647 = 10.0865 ms
    r = _one(rows, tp=1, input_tokens=4096)
    assert r.value == pytest.approx(10.0865)
    assert r.model == "Llama-2-70B"
    assert r.gpu == "H100-SXM"


def test_trtllm_maps_llama33_to_the_31_architecture() -> None:
    rows = read_trtllm(PERF / "trtllm_max_throughput.csv")
    assert len(rows) == 36
    assert {r.model for r in rows} == {"Llama-3.1-8B", "Llama-3.1-70B"}
    r = _one(rows, model="Llama-3.1-70B", gpu="H100-SXM", input_tokens=128, output_tokens=128)
    assert r.value == 6378  # num_gpus = tp = 2: per replica = total
    assert r.tp == 2
    assert r.precision is Precision.fp8


def test_read_shared_perf_collects_every_kind_of_the_shared_files() -> None:
    rows = read_shared_perf(PERF)
    frame = to_frame(rows)
    assert list(frame.columns) == list(COLUMNS)
    serving = {MeasurementKind.ttft_ms, MeasurementKind.tpot_ms,
               MeasurementKind.output_tokens_per_s, MeasurementKind.batch_e2e_ms,
               MeasurementKind.batch_output_tokens_per_s, MeasurementKind.first_token_ms,
               MeasurementKind.decode_attention_ms}  # published figures, not shared files
    assert set(frame["kind"]) == {k.value for k in MeasurementKind if k not in serving}
    assert len(frame) == len(rows)
    assert {r.runtime for r in rows if r.kind is MeasurementKind.prefill_ms} == {
        "splitwise-2023"}
    assert {r.runtime for r in rows if r.kind is MeasurementKind.allreduce_ms} == {""}


def test_published_figures_name_their_runtime_and_source() -> None:
    rows = read_published_perf()
    kinds = {r.kind for r in rows}
    assert kinds == {MeasurementKind.ttft_ms, MeasurementKind.tpot_ms,
                     MeasurementKind.output_tokens_per_s, MeasurementKind.batch_e2e_ms,
                     MeasurementKind.prefill_ms, MeasurementKind.decode_step_ms,
                     MeasurementKind.first_token_ms, MeasurementKind.batch_output_tokens_per_s,
                     MeasurementKind.decode_attention_ms}
    # every serving figure names its runtime; a profiled kernel time has none
    assert all((r.runtime or r.kind is MeasurementKind.decode_attention_ms)
               and len(r.source) > 40 for r in rows)
    assert {r.gpu for r in rows if r.kind is MeasurementKind.decode_attention_ms} == {
        "A100-80GB"}
    # TensorRT-LLM 0.9's batch-1 first-token latencies are prefills (output length 1) on four
    # GPUs; LMDeploy 0.1's come from the decode step after the prompt's pass
    assert {r.gpu for r in rows if r.runtime == "trtllm-0.9"} == {
        "A100-80GB", "H100-SXM", "H200", "L40S"}
    assert {r.kind for r in rows if r.runtime == "trtllm-0.9"} == {MeasurementKind.prefill_ms}
    assert {r.kind for r in rows if r.runtime == "lmdeploy-0.1"} == {
        MeasurementKind.first_token_ms, MeasurementKind.decode_step_ms,
        MeasurementKind.batch_output_tokens_per_s}
    nim = [r for r in rows if r.kind is MeasurementKind.tpot_ms and r.batch == 1
           and r.input_tokens == 5000]
    assert [(r.model, r.gpu, r.tp, r.precision, r.value) for r in nim] == [
        ("Llama-3.1-70B", "H100-SXM", 2, Precision.fp8, 18.58)]


def test_read_shared_perf_rejects_an_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="none of the known perf files"):
        read_shared_perf(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        read_shared_perf(tmp_path / "nope")


def test_measurements_csv_round_trips(tmp_path: Path) -> None:
    rows = read_trtllm(PERF / "trtllm_max_throughput.csv")[:3] + read_splitwise(
        PERF / "splitwise_sim_perf_model.csv")[:3]
    path = tmp_path / "m.csv"
    path.write_text(to_csv_text(rows), encoding="utf-8")
    assert read_measurements_csv(path) == rows


def test_measurements_csv_minimal_columns(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("kind,model,gpu,tp,input_tokens,value\n"
                    "prefill_ms,Llama-3.1-8B,L4,1,2048,950\n", encoding="utf-8")
    (row,) = read_measurements_csv(path)
    assert row.kind is MeasurementKind.prefill_ms
    assert row.batch == 1
    assert row.precision is Precision.bf16


def test_measurements_csv_reports_every_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("kind,model,gpu,tp,input_tokens,value\n"
                    "prefill_ms,Llama-3.1-8B,L4,1,2048,-1\n"
                    "decode_step_ms,Llama-3.1-8B,L4,1,2048,30\n"
                    "warp_ms,Llama-3.1-8B,L4,1,2048,30\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_measurements_csv(path)
    text = str(info.value)
    assert "line 2.value" in text
    assert "line 3" in text and "context_tokens" in text
    assert "line 4.kind" in text


def test_measurements_csv_with_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    """csv's DictReader keeps the second ``value`` cell: 30 would have been calibrated where
    the first column says 950, without a word."""
    path = tmp_path / "m.csv"
    path.write_text("kind,model,gpu,tp,input_tokens,value,value\n"
                    "prefill_ms,Llama-3.1-8B,L4,1,2048,950,30\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_measurements_csv(path)
    text = str(info.value)
    assert "m.csv" in text and "`value` (columns 6, 7)" in text


def test_measurements_csv_header_problems(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("kind,gpu,speed\nprefill_ms,L4,3\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_measurements_csv(path)
    text = str(info.value)
    assert "missing columns: value" in text
    assert "unknown columns: speed" in text
    with pytest.raises(InputError, match="file not found"):
        read_measurements_csv(tmp_path / "absent.csv")


def test_the_real_shared_perf_directory() -> None:
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    frame = to_frame(read_shared_perf(SHARED_PERF))
    counts = frame.groupby("kind").size().to_dict()
    # Splitwise prefill: Llama-2-70B 2 GPUs × 3 TP × 13 configs − 2 dropped TP2 batch-64 rows = 76,
    # + BLOOM-176B 2 GPUs × TP8 × 13 = 26 → 102; decode: 19 configs × (6 + 2) GPU-TP pairs = 152
    assert counts["prefill_ms"] == 102
    assert counts["decode_step_ms"] == 152
    assert counts["max_output_tokens_per_s"] == 36
    assert counts["allreduce_ms"] == 2 * 3 * 125  # 994 sizes, every 8th: ceil(994 / 8) = 125
    assert counts["gemm_ms"] == 4 * 259  # 259 distinct token counts per TP degree
