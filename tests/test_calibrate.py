"""Calibration: the held-out split, the fit, the error on real data, and `fleetplan calibrate`."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from inputs import catalog_dir, scenarios_dir
from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.common import Precision
from models.loader import load_catalog, load_scenario
from solver.capacity.calibrate import (
    CUSTOM_ALLREDUCE_PRIOR_US,
    FITTED,
    PER_RUNTIME,
    SHARED,
    Calibration,
    builtin_calibration,
    calibrate,
    cost_source,
    first_token_ms,
    fit_gpu,
    fit_prior,
    gemm_bandwidth_efficiency,
    gemm_time_ms,
    held_out_mask,
    max_output_tokens_per_s,
    nccl_latency_table,
    nccl_link_efficiency,
    overlay_document,
    pack,
    predict,
    runtime_of,
    runtimes_document,
    unidentified,
)
from solver.capacity.perf import REPLICATED_BYTES_PER_HIDDEN, allreduce_time_ms, perf_model
from solver.capacity.perfdata import (
    SPLITWISE_FILE,
    TRTLLM_FILE,
    Measurement,
    MeasurementKind,
    read_published_perf,
    read_shared_perf,
    to_csv_text,
)
from solver.capacity.replica import closed_loop
from solver.cli import main
from solver.outputs.units import field_label

PERF = Path(__file__).resolve().parent / "data" / "perf"
SHARED_PERF = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "perf"
K = MeasurementKind


def _catalog() -> tuple[dict[str, GpuType], dict[str, LlmSpec]]:
    gpus, models, _ = load_catalog()
    return {g.name: g for g in gpus}, {m.name: m for m in models}


def _rows(kind: MeasurementKind, n: int) -> list[Measurement]:
    return [Measurement(kind=kind, model="Llama-3.1-8B", gpu="H100-SXM", input_tokens=100 + i,
                        context_tokens=100 + i, output_tokens=10, size_bytes=1e6, tp=2,
                        value=1.0) for i in range(n)]


def test_held_out_split_is_stratified_and_order_free() -> None:
    rows = _rows(K.prefill_ms, 40) + _rows(K.decode_step_ms, 7) + _rows(K.allreduce_ms, 3)
    mask = held_out_mask(rows, 0.3)
    held = [r for r, h in zip(rows, mask, strict=True) if h]
    # round(0.3 × 40) = 12, round(0.3 × 7) = round(2.1) = 2, round(0.3 × 3) = round(0.9) = 1
    assert sum(r.kind is K.prefill_ms for r in held) == 12
    assert sum(r.kind is K.decode_step_ms for r in held) == 2
    assert sum(r.kind is K.allreduce_ms for r in held) == 1
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    mask2 = held_out_mask(shuffled, 0.3)
    assert {r for r, h in zip(shuffled, mask2, strict=True) if h} == set(held)
    assert not any(held_out_mask(rows, 0.0))
    with pytest.raises(ValueError, match="share"):
        held_out_mask(rows, 1.0)


def test_max_output_tokens_per_s_is_the_estimate_figure() -> None:
    gpus, models = _catalog()
    perf = perf_model(models["Llama-3.1-8B"], gpus["H100-SXM"], Precision.fp8, 1)
    seqs = perf.kv_capacity_tokens // (1000 + 1000)  # max stable sequences at full context
    assert seqs > 1
    expected = closed_loop(perf, 1000, 1000, seqs).output_tokens_per_s
    assert max_output_tokens_per_s(perf, 1000, 1000) == pytest.approx(expected)
    # more output tokens per request at the same context: no fewer sequences fit, and each
    # request's prefill is spread over more output, so throughput does not fall
    assert max_output_tokens_per_s(perf, 100, 1900) >= max_output_tokens_per_s(perf, 1900, 100)
    too_long = perf.kv_capacity_tokens + 1
    assert max_output_tokens_per_s(perf, too_long, 1) == 0.0  # not one sequence fits


def test_first_token_ms_is_the_prefill_then_one_decode_step() -> None:
    gpus, models = _catalog()
    perf = perf_model(models["Llama-2-7B"], gpus["A100-80GB"], Precision.bf16, 1)
    prefill = perf.step_time_ms(2048, 0, 0)
    step = perf.decode_step_time_ms(1, 2048)
    assert first_token_ms(perf, 1, 2048) == pytest.approx(prefill + step)
    m = Measurement(kind=K.first_token_ms, model="Llama-2-7B", gpu="A100-80GB",
                    input_tokens=2048, value=139.0)
    eff = gpus["A100-80GB"].efficiency
    assert predict(m, gpus["A100-80GB"], models["Llama-2-7B"], eff) == pytest.approx(
        first_token_ms(perf_model(models["Llama-2-7B"], gpus["A100-80GB"], Precision.bf16, 1,
                                  eff), 1, 2048))


def test_lmdeploy_first_token_latency_holds_one_decode_step_more_than_a_prefill() -> None:
    # The published figures themselves (inputs/catalog/published_perf.csv): Llama-2-70B FP16,
    # TP4, 128-token prompt, batch 1 on A100-80GB. LMDeploy 0.1's first-token latency less
    # TensorRT-LLM 0.9's (an engine run with output length 1: the prefill alone) is LMDeploy's
    # own per-token time, within 5 %: its first token comes from a decode step.
    rows = read_published_perf()

    def value(kind: MeasurementKind, runtime: str) -> float:
        (v,) = [r.value for r in rows if r.kind is kind and r.runtime == runtime
                and r.model == "Llama-2-70B" and r.gpu == "A100-80GB" and r.tp == 4
                and r.input_tokens == 128 and r.batch == 1 and r.output_tokens in (1, 128)]
        return v

    ftl = value(K.first_token_ms, "lmdeploy-0.1")  # 74 ms
    prefill = value(K.prefill_ms, "trtllm-0.9")  # 45.6 ms
    step = value(K.decode_step_ms, "lmdeploy-0.1")  # 29 ms
    assert ftl - prefill == pytest.approx(step, rel=0.05)


def test_gemm_time_by_hand() -> None:
    gpus, models = _catalog()
    m = Measurement(kind=K.gemm_ms, model="Llama-2-70B", gpu="H100-SXM", tp=2,
                    input_tokens=4096, value=5.0)
    eff = EfficiencyFactors(compute_efficiency=0.7)
    # 2 FLOP × 68.98e9 params / 80 layers × 4096 tokens / 2 GPUs = 3.5318e12 FLOP;
    # 989 TFLOPS × 0.7 = 6.923e11 FLOP/ms → 5.1016 ms
    expected = 2 * 68.98e9 / 80 * 4096 / 2 / (989e9 * 0.7)
    assert gemm_time_ms(models["Llama-2-70B"], gpus["H100-SXM"], m, eff) == pytest.approx(
        expected)
    assert expected == pytest.approx(5.1016, rel=1e-4)


def _synthetic(truth: EfficiencyFactors,
               throughput_truth: EfficiencyFactors | None = None) -> list[Measurement]:
    """Measurements of H100-SXM generated by the model itself with factors ``truth``.

    With ``throughput_truth``, the maximum-throughput rows are generated with those factors and
    are marked as TensorRT-LLM's, the timings as Splitwise's: two runtimes on one GPU.
    """
    gpus, models = _catalog()
    gpu = gpus["H100-SXM"]
    rng = random.Random(11)
    rows: list[Measurement] = []
    two_runtimes = throughput_truth is not None

    def add(**kw: object) -> None:
        m = Measurement(value=1.0, gpu="H100-SXM", **kw)
        spec = models.get(str(m.model)) if m.model else None
        eff, source = truth, ""
        if two_runtimes and m.kind is K.max_output_tokens_per_s:
            eff, source = throughput_truth or truth, TRTLLM_FILE
        elif two_runtimes and m.kind is not K.allreduce_ms:
            source = SPLITWISE_FILE
        value = predict(m, gpu, spec, eff)
        rows.append(m.model_copy(update={"value": value, "source": source}))

    for tp in (1, 2, 4, 8):
        for tokens in (128, 512, 2048, 8192):
            add(kind=K.prefill_ms, model="Llama-2-70B", tp=tp, batch=rng.choice([1, 2, 4]),
                input_tokens=tokens)
        for batch in (1, 4, 16, 64):
            add(kind=K.decode_step_ms, model="Llama-2-70B", tp=tp, batch=batch,
                input_tokens=512, context_tokens=rng.choice([600.0, 1500.0, 3000.0]))
    for batch in (1, 16, 64):  # a 32-layer model beside the 80-layer one: per-layer vs fixed
        add(kind=K.decode_step_ms, model="Llama-3.1-8B", batch=batch, input_tokens=512,
            context_tokens=rng.choice([600.0, 1500.0, 3000.0]))
    for tp in (2, 4, 8):
        for size in (1e4, 1e5, 1e6, 1e7, 1e8):
            add(kind=K.allreduce_ms, tp=tp, size_bytes=size)
    for batch in (16, 64, 128):  # profiled attention kernels: the KV-read efficiency
        for context in (1024.0, 3008.0):
            add(kind=K.decode_attention_ms, model="Llama-2-70B", tp=2, batch=batch,
                context_tokens=context)
    for inp, out in ((128, 128), (1000, 1000), (2048, 128), (5000, 500)):
        add(kind=K.max_output_tokens_per_s, model="Llama-3.1-8B", precision=Precision.fp8,
            input_tokens=inp, output_tokens=out)
        add(kind=K.max_output_tokens_per_s, model="Llama-3.1-70B", precision=Precision.fp8,
            tp=2, input_tokens=inp, output_tokens=out)
    return rows


def test_fit_recovers_the_factors_that_generated_the_data() -> None:
    truth = EfficiencyFactors(compute_efficiency=0.62, bandwidth_efficiency=0.81,
                              decode_step_overhead_ms=1.5, step_overhead_ms_per_layer=0.04,
                              step_overhead_ms_per_seq=0.03, link_efficiency=0.73,
                              allreduce_latency_us=17.0, kv_bandwidth_efficiency=0.6)
    gpus, models, _ = load_catalog()
    cal = calibrate(_synthetic(truth), gpus, models, held_out_share=0.3, transfer={})
    (fit,) = cal.fits
    assert fit.gpu == "H100-SXM"
    assert fit.runtime == ""  # no known runtime named in the rows' sources
    for name in FITTED:
        assert getattr(fit.factors, name) == pytest.approx(getattr(truth, name), rel=0.02), name
    for e in cal.errors():
        if e.kind is not K.gemm_ms:
            assert e.held_out_median_abs_error is not None
            assert e.held_out_median_abs_error < 0.01


def test_runtime_of_reads_the_source_file() -> None:
    row = _rows(K.prefill_ms, 1)[0]
    assert runtime_of(row) == ""
    assert runtime_of(row.model_copy(update={"source": f"{TRTLLM_FILE} (x)"})) == "trtllm"
    assert runtime_of(row.model_copy(update={"source": SPLITWISE_FILE})) == "splitwise-2023"


def test_each_runtime_gets_its_own_fixed_costs() -> None:
    # One GPU, two runtimes: the same silicon, but the older runtime pays far more per step.
    # TensorRT-LLM's all-reduce is a custom kernel: its rows (one TP degree above 1) cannot fix
    # its latency, which stays at the custom kernel's; Splitwise's runtime calls NCCL, whose
    # latency the all-reduce profiles (runtime "") fix: 17 µs.
    modern = EfficiencyFactors(compute_efficiency=0.62, bandwidth_efficiency=0.81,
                               decode_step_overhead_ms=1.5, step_overhead_ms_per_layer=0.04,
                               step_overhead_ms_per_seq=0.01, link_efficiency=0.73,
                               allreduce_latency_us=CUSTOM_ALLREDUCE_PRIOR_US)
    old = modern.model_copy(update={"decode_step_overhead_ms": 3.0,
                                    "step_overhead_ms_per_layer": 0.2,
                                    "step_overhead_ms_per_seq": 0.3,
                                    "allreduce_latency_us": 17.0})
    gpus, models, _ = load_catalog()
    cal = calibrate(_synthetic(old, modern), gpus, models, held_out_share=0.3, transfer={})
    (fit,) = cal.fits
    by_runtime = dict(fit.by_runtime)
    assert set(by_runtime) == {"", "splitwise-2023", "trtllm"}  # "": the NCCL profiles
    assert by_runtime[""].allreduce_latency_us == pytest.approx(17.0, rel=0.02)
    assert by_runtime["splitwise-2023"].allreduce_latency_us == (
        by_runtime[""].allreduce_latency_us)  # NCCL: the profiles' latency
    # the GPU's calibrated factors: TensorRT-LLM's costs, NCCL's latency (the silicon's), and
    # NCCL's latency per ring size read off the profiles alone (17 µs × log2 T generated them)
    assert fit.factors.nccl_latency_us == pytest.approx((17.0, 34.0, 51.0), rel=0.02)
    assert fit.runtime == "trtllm" and fit.factors == by_runtime["trtllm"].model_copy(
        update={"allreduce_latency_us": by_runtime[""].allreduce_latency_us,
                "nccl_latency_us": fit.factors.nccl_latency_us})
    for name in SHARED:  # one silicon (the unset KV efficiency: the weights')
        expected = getattr(modern, name) or modern.bandwidth_efficiency
        assert getattr(fit.factors, name) == pytest.approx(expected, rel=0.02)
        assert getattr(by_runtime["splitwise-2023"], name) == getattr(fit.factors, name)
    for name in PER_RUNTIME:  # throughput rows of an 8B and a 70B model separate all three
        assert getattr(by_runtime["trtllm"], name) == pytest.approx(getattr(modern, name),
                                                                    rel=0.05)
    for name in PER_RUNTIME:
        assert getattr(by_runtime["splitwise-2023"], name) == pytest.approx(getattr(old, name),
                                                                            rel=0.05)
    for e in cal.errors():
        if e.kind is not K.gemm_ms and e.held_out_median_abs_error is not None:
            assert e.held_out_median_abs_error < 0.01


def test_a_per_layer_cost_one_depth_cannot_identify_stays_at_its_prior() -> None:
    # TensorRT-LLM throughput rows of Llama-3.1-8B only (32 layers): they fix t_step + 32 t_layer,
    # not the split. The per-layer cost keeps the CUDA-graph prior (0.01 ms) and the step takes
    # the rest: 2.0 + 32 × (0.05 − 0.01) = 3.28 ms.
    truth = EfficiencyFactors(compute_efficiency=0.6, bandwidth_efficiency=0.8,
                              decode_step_overhead_ms=2.0, step_overhead_ms_per_layer=0.05,
                              step_overhead_ms_per_seq=0.01)
    gpus, models = _catalog()
    gpu, spec = gpus["H100-SXM"], models["Llama-3.1-8B"]
    rows = []
    for n_in, n_out in ((128, 128), (128, 2048), (1000, 1000), (2048, 128), (5000, 500)):
        m = Measurement(kind=K.max_output_tokens_per_s, model=spec.name, gpu=gpu.name,
                        precision=Precision.fp8, input_tokens=n_in, output_tokens=n_out,
                        value=1.0, runtime="trtllm")
        rows.append((m.model_copy(update={"value": predict(m, gpu, spec, truth)}), spec))
    kv = list(SHARED).index("kv_bandwidth_efficiency")  # no attention kernel profiled
    latency = len(SHARED) + list(PER_RUNTIME).index("allreduce_latency_us")  # TP1 rows only
    assert unidentified(rows, ["trtllm"]) == [kv, len(SHARED) + 1, latency]  # + per-layer
    by_runtime, _ = fit_gpu(rows, gpu, fit_prior(gpu))
    fitted = by_runtime["trtllm"]
    assert fitted.step_overhead_ms_per_layer == pytest.approx(0.01, rel=1e-6)
    assert fitted.decode_step_overhead_ms == pytest.approx(3.28, rel=0.05)
    # a second depth identifies it: 70B rows added, the per-layer cost is free again
    deep = models["Llama-3.1-70B"]
    rows.append((rows[0][0].model_copy(update={"model": deep.name, "tp": 2}), deep))
    assert unidentified(rows, ["trtllm"]) == [kv, latency]
    assert fitted.allreduce_latency_us == pytest.approx(CUSTOM_ALLREDUCE_PRIOR_US, rel=1e-9)


def test_an_eager_runtime_of_one_depth_pays_its_fixed_cost_per_layer() -> None:
    # A runtime without CUDA graphs launches every layer's kernels each step: rows of one depth
    # (Llama-2-70B decode steps, 80 layers) fix t_step + 80 t_layer, and the per-step cost is the
    # one held at its prior (1 ms): the layers take the rest, (1.0 + 80 × 0.1 − 1.0) / 80 = 0.1.
    truth = EfficiencyFactors(compute_efficiency=0.6, bandwidth_efficiency=0.8,
                              decode_step_overhead_ms=1.0, step_overhead_ms_per_layer=0.1,
                              step_overhead_ms_per_seq=0.05)
    gpus, models = _catalog()
    gpu, spec = gpus["A100-80GB"], models["Llama-2-70B"]
    rows = []
    for tp, batch in ((2, 1), (2, 16), (4, 1), (4, 64), (8, 1), (8, 16)):
        m = Measurement(kind=K.decode_step_ms, model=spec.name, gpu=gpu.name, tp=tp,
                        batch=batch, context_tokens=600, value=1.0, runtime="lmdeploy")
        rows.append((m.model_copy(update={"value": predict(m, gpu, spec, truth)}), spec))
    assert runtime_of(rows[0][0]) == "lmdeploy-0.1"
    # the per-step coordinate; no attention kernel and no NCCL profile on this GPU: the KV
    # efficiency unset, the NCCL runtime's all-reduce latency at its prior
    assert unidentified(rows, ["lmdeploy-0.1"]) == [
        list(SHARED).index("kv_bandwidth_efficiency"), len(SHARED),
        len(SHARED) + list(PER_RUNTIME).index("allreduce_latency_us")]
    by_runtime, _ = fit_gpu(rows, gpu, fit_prior(gpu))
    fitted = by_runtime["lmdeploy-0.1"]
    assert fitted.decode_step_overhead_ms == pytest.approx(1.0, rel=1e-6)
    assert fitted.step_overhead_ms_per_layer == pytest.approx(0.1, rel=0.05)


def test_a_transferred_gpu_starts_from_its_source_gpus_runtime_costs() -> None:
    gpus, _ = _catalog()
    base = fit_prior(gpus["H200"])
    h100 = base.model_copy(update={"decode_step_overhead_ms": 4.5,
                                   "step_overhead_ms_per_layer": 0.02,
                                   "step_overhead_ms_per_seq": 0.003})
    start = pack(base, ["splitwise-2023", "trtllm"], by_runtime=True, known={"trtllm": h100})
    per = len(PER_RUNTIME)
    assert start[len(SHARED) + per:].tolist() == pytest.approx(
        pack(h100, ["trtllm"])[len(SHARED):].tolist())  # trtllm: H100-SXM's fitted costs
    assert start[len(SHARED):len(SHARED) + per].tolist() == pytest.approx(
        pack(base, ["splitwise-2023"])[len(SHARED):].tolist())  # unknown there: its prior


def test_a_runtimes_costs_go_to_a_gpu_of_the_same_maker_before_the_one_with_most_rows() -> None:
    rows = {"MI300X": 16, "A100-80GB": 10, "H200": 5}.__getitem__
    fitted = ["A100-80GB", "H200", "MI300X"]
    assert cost_source("MI300X", fitted, rows) == "MI300X"  # its own fit
    assert cost_source("H100-SXM", fitted, rows) == "H200"  # same generation (Hopper)
    # no Ada GPU has the runtime's rows: an NVIDIA GPU's costs, not the ROCm fit with the
    # most rows
    assert cost_source("L40S", fitted, rows) == "A100-80GB"
    assert cost_source("B200", fitted, rows) == "A100-80GB"
    # no GPU of its maker: the one with the most rows anywhere, ties by name
    assert cost_source("L40S", ["MI300X"], rows) == "MI300X"
    assert cost_source("TPU-v5", ["H200", "A100-80GB"], lambda g: 3) == "A100-80GB"


def test_calibrate_skips_unknown_names_and_transfers() -> None:
    gpus, models, _ = load_catalog()
    rows = read_shared_perf(PERF)
    bloom = Measurement(kind=K.prefill_ms, model="BLOOMZ-176B", gpu="H100-SXM", tp=8,
                        input_tokens=512, value=100.0)
    odd = Measurement(kind=K.allreduce_ms, gpu="TPU-v5", tp=8, size_bytes=1e6, value=0.1)
    cal = calibrate([*rows, bloom, odd], gpus, models)
    reasons = {reason for _, reason in cal.skipped}
    assert reasons == {"model `BLOOMZ-176B` is not in the catalog",
                       "GPU `TPU-v5` is not in the catalog"}
    factors = cal.factors()
    assert factors["A100-40GB"] == factors["A100-80GB"]  # equal memory factors too, here
    assert factors["H100-PCIe"] == factors["H100-SXM"]
    # a transfer target keeps its own memory factors and takes only the timing ones
    by_name = {g.name: g for g in gpus}
    pcie = by_name["H100-PCIe"].model_copy(update={"efficiency": EfficiencyFactors(
        runtime_overhead_gib=3.0, runtime_overhead_fraction=0.1)})
    h100_rows = [r for r in rows if r.gpu == "H100-SXM" and r.kind is K.max_output_tokens_per_s]
    cal2 = calibrate(h100_rows, [g for n, g in by_name.items() if n != "H100-PCIe"] + [pcie],
                     models)
    moved = cal2.factors()["H100-PCIe"]
    assert (moved.runtime_overhead_gib, moved.runtime_overhead_fraction) == (3.0, 0.1)
    assert moved.compute_efficiency == cal2.factors()["H100-SXM"].compute_efficiency
    h200 = next(f for f in cal.fits if f.gpu == "H200")
    assert h200.prior == "H100-SXM"  # H200 has its own rows, pulled towards H100-SXM's fit
    doc = overlay_document(cal, "test")
    assert [g["name"] for g in doc["gpus"]] == sorted(factors)


@functools.cache
def _calibration_of(perf_dir: Path) -> Calibration:
    """The calibration of a perf directory on the built-in catalog (computed once per run)."""
    gpus, models, _ = load_catalog()
    return calibrate(read_shared_perf(perf_dir), gpus, models)


@functools.cache
def _builtin_calibration() -> Calibration:
    """``fleetplan calibrate ../shared/data/perf --builtin``'s calibration (once per run)."""
    gpus, models, _ = load_catalog()
    return builtin_calibration(SHARED_PERF, gpus, models)


def _held_out_errors(perf_dir: Path) -> dict[MeasurementKind, float]:
    return {e.kind: e.held_out_median_abs_error for e in _calibration_of(perf_dir).errors()
            if e.gpu == "all" and e.held_out_median_abs_error is not None}


@pytest.mark.parametrize("kind", [K.prefill_ms, K.decode_step_ms, K.max_output_tokens_per_s])
def test_held_out_error_on_the_test_copies_is_within_25_percent(kind: MeasurementKind) -> None:
    assert _held_out_errors(PERF)[kind] <= 0.25


def test_held_out_error_on_the_shared_data_is_within_25_percent() -> None:
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    errors = _held_out_errors(SHARED_PERF)
    for kind in (K.prefill_ms, K.decode_step_ms, K.max_output_tokens_per_s):
        assert errors[kind] <= 0.25, kind


def test_builtin_efficiency_overlay_is_reproducible() -> None:
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    builtin = catalog_dir() / "efficiency.yaml"
    committed = yaml.safe_load(builtin.read_text(encoding="utf-8"))
    cal = _builtin_calibration()
    fresh = overlay_document(cal, "")
    assert committed["gpus"] == fresh["gpus"]
    runtimes = yaml.safe_load((catalog_dir() / "runtimes.yaml").read_text(encoding="utf-8"))
    gpus, _, _ = load_catalog()
    fresh_runtimes = runtimes_document(cal, [g.name for g in gpus], "")
    assert [r["costs"] for r in runtimes["runtimes"]] == [
        r["costs"] for r in fresh_runtimes["runtimes"]]


def _scenario_with_overlay(tmp_path: Path, overlay: Path) -> Path:
    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["catalog"] = {"overlays": [str(overlay)]}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_cli_writes_an_overlay_a_scenario_accepts(tmp_path: Path) -> None:
    measurements = tmp_path / "MEASUREMENTS.csv"
    measurements.write_text(to_csv_text(read_shared_perf(PERF)), encoding="utf-8")
    before = measurements.read_bytes()
    out = tmp_path / "overlay.yaml"
    result = CliRunner().invoke(main, ["calibrate", str(measurements), "--out", str(out),
                                       "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["out"] == str(out)
    assert {e["kind"] for e in summary["errors"]} >= {"prefill_ms", "decode_step_ms"}
    assert measurements.read_bytes() == before  # the input is never touched
    scenario = load_scenario(_scenario_with_overlay(tmp_path, out))
    fits = {f["gpu"]: f for f in summary["fits"]}
    # H100-SXM has TensorRT-LLM and Splitwise rows: its factors are TensorRT-LLM's
    assert fits["H100-SXM"]["runtime"] == "trtllm"
    assert set(fits["H100-SXM"]["by_runtime"]) == {"", "trtllm", "splitwise-2023"}
    trtllm = fits["H100-SXM"]["by_runtime"]["trtllm"]
    nccl = fits["H100-SXM"]["by_runtime"][""]["allreduce_latency_us"]
    table = summary["factors"]["H100-SXM"]["nccl_latency_us"]  # NCCL per ring size
    assert len(table) == 3  # the test copies profile 2, 4 and 8 GPUs
    assert trtllm | {"allreduce_latency_us": nccl, "nccl_latency_us": table} == (
        summary["factors"]["H100-SXM"])
    fitted = summary["factors"]["H100-SXM"]
    assert scenario.gpu("H100-SXM").efficiency.compute_efficiency == pytest.approx(
        fitted["compute_efficiency"], rel=1e-3)  # the overlay keeps 4 significant digits


def test_cli_table_output_and_perf_directory(tmp_path: Path) -> None:
    out = tmp_path / "o.yaml"
    pred = tmp_path / "pred.csv"
    result = CliRunner().invoke(main, ["calibrate", str(PERF), "--out", str(out),
                                       "--predictions", str(pred)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(pred)
    assert {"predicted", "relative_error", "held_out"} <= set(table.columns)
    # relative error = (predicted − measured) ÷ measured, row by row
    assert (table["relative_error"] - (table["predicted"] - table["value"]) / table["value"]
            ).abs().max() < 1e-9
    assert "Held-out err" in result.output
    assert "H100-PCIe: no measurements: takes H100-SXM's factors, runtime trtllm" in (
        result.output)
    assert "H100-SXM: runtime trtllm" in result.output
    unset = ("kv_bandwidth_efficiency", "nccl_link_efficiency")
    for name in EfficiencyFactors.model_fields:  # every factor, in words, with its unit
        if name not in unset:
            assert field_label(name) in result.output
    # no attention kernel profiled in these data: the KV read keeps the weights' efficiency;
    # and the test copy of the all-reduce profiles has two messages of 8 MiB or more a ring,
    # too few for NCCL's bandwidth per ring size (MIN_RING_MESSAGES)
    for name in unset:
        assert field_label(name) not in result.output
    assert "step overhead per sequence" in result.output and " ms/sequence" in result.output
    assert out.read_text(encoding="utf-8").startswith("# Calibrated efficiency factors")


def test_cli_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    measurements = tmp_path / "m.csv"
    measurements.write_text(to_csv_text(read_shared_perf(PERF)[:5]), encoding="utf-8")
    result = CliRunner().invoke(main, ["calibrate", str(measurements), "--out",
                                       str(measurements)])
    assert result.exit_code == 2
    assert "would overwrite the input" in result.output
    result = CliRunner().invoke(main, ["calibrate", str(measurements), "--out",
                                       str(tmp_path / "o.yaml"), "--predictions",
                                       str(measurements)])
    assert result.exit_code == 2


def test_cli_bad_measurements_are_a_clean_error(tmp_path: Path) -> None:
    bad = tmp_path / "m.csv"
    bad.write_text("kind,gpu,value\nprefill_ms,H100-SXM,abc\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["calibrate", str(bad), "--out", str(tmp_path / "o.yaml")])
    assert result.exit_code == 2
    assert "line 2" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "o.yaml").exists()


def test_cli_nothing_to_fit(tmp_path: Path) -> None:
    rows = tmp_path / "m.csv"
    rows.write_text("kind,model,gpu,tp,input_tokens,value\n"
                    "prefill_ms,BLOOMZ-176B,H100-SXM,8,512,100\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["calibrate", str(rows), "--out", str(tmp_path / "o.yaml")])
    assert result.exit_code == 2
    assert "no measurement names a catalog GPU and model" in result.output


def test_cli_refuses_to_fit_when_every_row_is_held_out(tmp_path: Path) -> None:
    # 0.99 of each kind, rounded, is every row: the overlay would be the prior, unfitted.
    out = tmp_path / "o.yaml"
    result = CliRunner().invoke(main, ["calibrate", str(PERF), "--out", str(out),
                                       "--held-out-share", "0.99"])
    assert result.exit_code == 2, result.output
    assert "--held-out-share" in result.output
    assert "none is left to fit" in result.output
    assert not out.exists()


def test_cli_builtin_and_out_are_exclusive(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["calibrate", str(PERF), "--builtin", "--out",
                                       str(tmp_path / "o.yaml")])
    assert result.exit_code == 2
    assert "either --out or --builtin" in result.output


#: BLOOMZ-176B (BLOOM-176B fine-tuned, same architecture; not in the built-in catalog) as a
#: catalog entry for this test only (bigscience/bloom config.json: n_layer 70, hidden_size
#: 14336, n_head 112, vocab 250880; multi-head attention, so KV heads = heads).
BLOOM_OVERLAY = """
models:
  - name: BLOOMZ-176B
    layers: 70
    hidden_size: 14336
    attention_heads: 112
    kv_heads: 112
    head_dim: 128
    ffn_size: 57344
    vocab_size: 250880
    total_params_b: 176.2
    active_params_b: 176.2
    max_context_tokens: 2048
    source: bigscience/bloom config.json (test entry)
"""


def test_cli_overlay_adds_the_models_the_measurements_name(tmp_path: Path) -> None:
    overlay = tmp_path / "bloom.yaml"
    overlay.write_text(BLOOM_OVERLAY, encoding="utf-8")
    rows = tmp_path / "m.csv"
    # Splitwise BLOOM-176B on H100 TP8, prompt 512, batch 1: prompt_time ≈ 76 ms, token_time ≈ 36 ms
    rows.write_text("kind,model,gpu,tp,batch,input_tokens,output_tokens,context_tokens,value\n"
                    "prefill_ms,BLOOMZ-176B,H100-SXM,8,1,512,,,76.4\n"
                    "decode_step_ms,BLOOMZ-176B,H100-SXM,8,1,512,128,576,35.9\n",
                    encoding="utf-8")
    out = tmp_path / "o.yaml"
    without = CliRunner().invoke(main, ["calibrate", str(rows), "--out", str(out)])
    assert without.exit_code == 2  # BLOOMZ-176B is not in the built-in catalog
    result = CliRunner().invoke(main, ["calibrate", str(rows), "--out", str(out), "--overlay",
                                       str(overlay), "--held-out-share", "0", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["rows_used"] == 2
    assert summary["rows_skipped"] == 0
    errors = {e["kind"]: e for e in summary["errors"] if e["gpu"] == "all"}
    assert errors["prefill_ms"]["held_out_rows"] == 0
    # five factors, two rows: the fit reproduces both (the prior pull costs a fraction of a %)
    assert errors["prefill_ms"]["train_median_abs_error"] < 0.01
    assert errors["decode_step_ms"]["train_median_abs_error"] < 0.01


def test_nccl_latency_table_recovers_the_latency_of_each_ring_size() -> None:
    gpus, _ = _catalog()
    gpu = gpus["A100-80GB"]
    truth = {2: 30.0, 4: 34.0, 8: 38.0}  # µs: hardly growing, as NCCL's small messages do
    rows = [Measurement(kind=K.allreduce_ms, gpu=gpu.name, tp=tp, size_bytes=size,
                        value=allreduce_time_ms(size, tp, gpu.link_bandwidth_gb_per_s, 0.5,
                                                0.0, (latency,)))
            for tp, latency in truth.items() for size in (2e3, 1e5, 1e6, 8e6, 6e7)]
    assert nccl_latency_table(rows, gpu) == pytest.approx((30.0, 34.0, 38.0), rel=1e-3)
    # a ring size missing between two profiled ones is interpolated in log2 T
    no_four = [m for m in rows if m.tp != 4]
    assert nccl_latency_table(no_four, gpu) == pytest.approx((30.0, 34.0, 38.0), rel=1e-3)
    assert nccl_latency_table(_rows(K.prefill_ms, 3), gpu) is None  # no profile
    with pytest.raises(ValueError, match="powers of two"):
        nccl_latency_table([rows[0].model_copy(update={"tp": 6})], gpu)


def test_nccl_link_efficiency_reads_the_bandwidth_of_each_ring_size_off_large_messages() -> None:
    gpus, _ = _catalog()
    gpu = gpus["H100-SXM"]
    truth = {2: 0.64, 4: 0.77, 8: 0.84}  # the bus bandwidth grows with the ring (DGX H100)
    rows = [Measurement(kind=K.allreduce_ms, gpu=gpu.name, tp=tp, size_bytes=size,
                        value=allreduce_time_ms(size, tp, gpu.link_bandwidth_gb_per_s, eff,
                                                0.0, (20.0 * tp,)))
            for tp, eff in truth.items() for size in (2e3, 1e6, 1e7, 3e7, 6e7)]
    # the small messages (latency) do not enter; each ring's intercept takes its latency
    assert nccl_link_efficiency(rows, gpu) == pytest.approx((0.64, 0.77, 0.84), rel=1e-3)
    no_four = [m for m in rows if m.tp != 4]  # interpolated in log2 T, as the latency table
    assert nccl_link_efficiency(no_four, gpu) == pytest.approx((0.64, 0.74, 0.84), rel=1e-3)
    # a ring with fewer than MIN_RING_MESSAGES large messages cannot separate its intercept
    # from its bandwidth and is left out; without 2 GPUs and another ring there is no table
    two_large = [m for m in rows if m.tp != 8 or m.size_bytes < 5e7]
    assert nccl_link_efficiency(two_large, gpu) == pytest.approx((0.64, 0.77), rel=1e-3)
    assert nccl_link_efficiency([m for m in rows if m.tp == 2], gpu) is None
    assert nccl_link_efficiency(_rows(K.prefill_ms, 3), gpu) is None  # no profile


def test_builtin_nccl_bandwidth_grows_with_the_ring_on_h100_and_transfers_to_h200() -> None:
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    factors = _builtin_calibration().factors()
    h100 = factors["H100-SXM"].nccl_link_efficiency
    assert h100 is not None and len(h100) == 3
    # Vidur's DGX H100 profile: 272 / 316 / 338 GB/s bus bandwidth at 64 MiB over 2 / 4 / 8
    assert 0.55 < h100[0] < h100[1] < h100[2] < 0.95
    assert factors["H200"].nccl_link_efficiency == h100  # transferred with the latency table
    a100 = factors["A100-80GB"].nccl_link_efficiency
    assert a100 is not None and max(a100) / min(a100) < 1.2  # A100: nearly flat


def _gemv_rows(eta: float, kernel_ms: float) -> list[tuple[Measurement, LlmSpec | None]]:
    """Decode-sized GEMM profile rows of Llama-2-70B on H100-SXM: the layer's BF16 weights on one
    GPU read at ``eta`` of the datasheet bandwidth, plus ``kernel_ms`` for each of the 4 GEMMs."""
    gpus, models = _catalog()
    gpu, spec = gpus["H100-SXM"], models["Llama-2-70B"]
    layer_bytes = (spec.total_params_b - spec.embedding_params_b) * 1e9 / spec.layers * 2
    return [(Measurement(kind=K.gemm_ms, model=spec.name, gpu=gpu.name, tp=tp, input_tokens=n,
                         value=layer_bytes / tp / (gpu.hbm_bandwidth_gb_per_s * 1e6 * eta)
                         + 4 * kernel_ms), spec)
            for tp in (1, 2, 4, 8) for n in (1, 8, 16)]


def test_gemm_bandwidth_efficiency_separates_the_weight_read_from_the_kernels_fixed_time() -> None:
    gpus, _ = _catalog()
    gpu = gpus["H100-SXM"]
    rows = _gemv_rows(0.85, 0.005)
    assert gemm_bandwidth_efficiency(rows, gpu) == pytest.approx(0.85, rel=1e-3)
    # compute-bound sizes say nothing about the read; one TP cannot tell it from the fixed time
    assert gemm_bandwidth_efficiency(
        [(m.model_copy(update={"input_tokens": 4096}), spec) for m, spec in rows], gpu) is None
    assert gemm_bandwidth_efficiency([r for r in rows if r[0].tp == 1], gpu) is None
    assert gemm_bandwidth_efficiency([], gpu) is None


def test_a_held_silicon_factor_is_not_fitted() -> None:
    # the same rows as the per-layer test above, fitted with the bandwidth efficiency held at
    # 0.7 where the rows were made at 0.8: it stays 0.7 and the other factors absorb the rest
    truth = EfficiencyFactors(compute_efficiency=0.6, bandwidth_efficiency=0.8,
                              decode_step_overhead_ms=2.0, step_overhead_ms_per_seq=0.01)
    gpus, models = _catalog()
    gpu, spec = gpus["H100-SXM"], models["Llama-3.1-8B"]
    rows = []
    for n_in, n_out in ((128, 128), (1000, 1000), (5000, 500)):
        m = Measurement(kind=K.max_output_tokens_per_s, model=spec.name, gpu=gpu.name,
                        precision=Precision.fp8, input_tokens=n_in, output_tokens=n_out,
                        value=1.0, runtime="trtllm")
        rows.append((m.model_copy(update={"value": predict(m, gpu, spec, truth)}), spec))
    held, _ = fit_gpu(rows, gpu, fit_prior(gpu), held={"bandwidth_efficiency": 0.7})
    free, _ = fit_gpu(rows, gpu, fit_prior(gpu))
    assert held["trtllm"].bandwidth_efficiency == pytest.approx(0.7, rel=1e-9)
    assert free["trtllm"].bandwidth_efficiency != pytest.approx(0.7, rel=1e-3)
    with pytest.raises(ValueError, match="only silicon factors"):
        fit_gpu(rows, gpu, fit_prior(gpu), held={"decode_step_overhead_ms": 1.0})


def test_hopper_reads_weights_at_the_h100_gemm_profiles_efficiency() -> None:
    factors = {g["name"]: g["efficiency"] for g in yaml.safe_load(
        (catalog_dir() / "efficiency.yaml").read_text(encoding="utf-8"))["gpus"]}
    hopper = factors["H100-SXM"]["bandwidth_efficiency"]
    assert factors["H200"]["bandwidth_efficiency"] == hopper  # transferred with the prior
    assert hopper < 0.95  # the profile's, not the bound (1.0) the joint fit ran to
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    gpus, models = _catalog()
    rows = [(m, models.get(m.model or "")) for m in read_shared_perf(SHARED_PERF)
            if m.gpu == "H100-SXM"]
    assert gemm_bandwidth_efficiency(rows, gpus["H100-SXM"]) == hopper


def test_replicated_bytes_are_the_profiled_norms_and_residual_add() -> None:
    # Vidur's H100 profile of Llama-2-70B: input and post-attention RMSNorm and the residual add,
    # per token at 1,024 tokens or more, as bytes per hidden element at the datasheet bandwidth
    gpus, models = _catalog()
    h100, hidden = gpus["H100-SXM"], models["Llama-2-70B"].hidden_size
    for perf_dir, tolerance in ((PERF, 0.5), (SHARED_PERF, 0.1)):  # 29 to two figures
        if not perf_dir.is_dir():
            pytest.skip("../shared/data/perf is absent")
        raw = pd.read_csv(perf_dir / "vidur" / "h100_Llama-2-70b-hf_mlp.csv")
        raw = raw[raw["num_tokens"] >= 1024]
        ms = sum(raw[f"time_stats.{op}.median"]
                 for op in ("input_layernorm", "post_attention_layernorm", "add"))
        per_hidden = ms / raw["num_tokens"] * h100.hbm_bandwidth_gb_per_s * 1e6 / hidden
        assert float(per_hidden.median()) == pytest.approx(REPLICATED_BYTES_PER_HIDDEN,
                                                           abs=tolerance)
    one, eight = (perf_model(models["Llama-2-70B"], h100, Precision.bf16, tp) for tp in (1, 8))
    assert one.replicated_ms_per_token == eight.replicated_ms_per_token  # not split by TP


def test_builtin_nccl_table_is_the_profile_and_the_nccl_variant_is_vllm() -> None:
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    cal = _builtin_calibration()
    factors = cal.factors()
    a100 = factors["A100-80GB"].nccl_latency_us
    assert a100 is not None and len(a100) == 3
    assert 25.0 <= a100[0] <= a100[1] <= a100[2] <= 45.0  # Vidur's DGX A100: near-constant
    assert factors["H200"].nccl_latency_us == factors["H100-SXM"].nccl_latency_us  # transferred
    gpus, _, _ = load_catalog()
    doc = {r["name"]: r for r in runtimes_document(cal, [g.name for g in gpus], "")["runtimes"]}
    variant, base = doc["vllm-0.6-nccl"], doc["vllm-0.6"]
    assert variant["allreduce"] == "nccl" and base["allreduce"] == "custom"
    assert [{k: v for k, v in c.items() if k != "allreduce_latency_us"} for c in base["costs"]] \
        == variant["costs"]
