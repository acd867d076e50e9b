"""The fidelity benchmark: published figures, the pair split, error summaries, its docs table."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.fidelity import (  # noqa: E402
    BEGIN_MARK,
    DOCS_FILE,
    END_MARK,
    Cell,
    Figure,
    Outcome,
    all_figures,
    markdown,
    published_figures,
    summarize,
    targets_hold,
)
from benchmarks.fidelity import main as fidelity_main  # noqa: E402

SHARED_PERF = ROOT.parent / "shared" / "data" / "perf"


def figure(value: float, gpu: str = "H100-SXM", model: str = "Llama-3.1-70B",
           quantity: str = "tpot_ms") -> Figure:
    return Figure(quantity=quantity, mode="closed_loop", model=model, gpu=gpu, precision="fp8",
                  tp=2, runtime="trtllm", input_tokens=100, output_tokens=10, concurrency=1,
                  value=value, source="test")


def test_published_closed_loop_figures_agree_with_each_other() -> None:
    figures = [f for f in published_figures() if f.mode == "closed_loop"]
    assert len(figures) == 15  # 4 concurrencies × 3 quantities at 5000/500, 3 at 500/2000
    for f in figures:  # ITL × output + TTFT = the request time throughput implies (±5 %)
        if f.quantity == "output_tokens_per_s":
            same = {g.quantity: g.value for g in figures if (g.input_tokens, g.output_tokens,
                    g.concurrency) == (f.input_tokens, f.output_tokens, f.concurrency)}
            request_s = (same["ttft_ms"] + f.output_tokens * same["tpot_ms"]) / 1000
            assert f.value == pytest.approx(f.concurrency * f.output_tokens / request_s,
                                            rel=0.05)


def test_h200_per_token_figures_are_the_vllm_latency_runs_per_output_token() -> None:
    """H200's per-token figures: vLLM's nightly 8 × 32/128 runs, end-to-end time ÷ 128, on
    held-out pairs (docs/calibration.md, "Fidelity on published measurements")."""
    figures = [f for f in published_figures() if f.gpu == "H200" and f.runtime == "vllm"]
    e2e = {f.model: f for f in figures if f.quantity == "e2e_ms"}
    tpot = [f for f in figures if f.quantity == "tpot_ms"]
    assert sorted(f.model for f in tpot) == ["Llama-3.1-70B", "Mixtral-8x7B"]
    for f in tpot:
        run = e2e[f.model]
        assert (f.mode, f.concurrency, f.input_tokens, f.output_tokens, f.tp) == (
            "static_batch", 8, 32, 128, run.tp)
        assert f.value == pytest.approx(run.value / run.output_tokens, abs=0.005)
        assert f.held_out and "derived" in f.source
    # the 8B run is a training pair on H200: its per-token time would count it twice in the fit
    assert not e2e["Llama-3.1-8B"].held_out


def test_whole_model_gpu_pairs_are_held_out() -> None:
    assert figure(1.0).held_out  # Llama-3.1-70B on H100-SXM
    assert not figure(1.0, model="Llama-3.1-8B").held_out
    assert not figure(1.0, gpu="A100-80GB", model="Llama-2-70B").held_out


def test_summary_is_median_and_worst_absolute_error_per_gpu_and_quantity() -> None:
    outcomes = [Outcome(figure(10.0), 11.0), Outcome(figure(10.0), 7.0),
                Outcome(figure(10.0), 10.5), Outcome(figure(10.0, model="Llama-3.1-8B"), 20.0)]
    (cell,) = summarize(outcomes, held_out=True)
    # held-out errors +10 %, −30 %, +5 %: median |e| 10 %, worst 30 %, median signed +5 %
    assert (cell.rows, cell.median_abs, cell.worst_abs) == (3, pytest.approx(0.10),
                                                            pytest.approx(0.30))
    assert cell.median_signed == pytest.approx(0.05)
    (train,) = summarize(outcomes, held_out=False)
    assert train.median_abs == pytest.approx(1.0)  # 20 against 10
    assert "| H100-SXM | tpot_ms | 3 | 10.0 % | 30.0 % | +5.0 % |" in markdown(outcomes, "x")
    worse = [*outcomes, Outcome(figure(10.0), 14.0)]  # median of 10, 30, 5, 40 % = 20 %
    (worse_cell,) = summarize(worse, held_out=True)
    assert worse_cell.median_abs == pytest.approx(0.20)


def _cells(errors: dict[tuple[str, str], float]) -> list[Cell]:
    return [Cell(gpu, q, 3, e, e, e) for (gpu, q), e in errors.items()]


def test_targets_are_issue_17s_ten_percent_on_a100_h100_and_one_other_twenty_on_any() -> None:
    three = ("ttft_ms", "tpot_ms", "output_tokens_per_s")
    good = {(g, q): 0.10 for g in ("A100-80GB", "H100-SXM", "H200") for q in three}
    assert targets_hold(_cells(good))  # 10.0 % is within the target
    # another GPU between 10 and 20 % does not fail the check; above 20 % on any quantity does
    assert targets_hold(_cells({**good, ("MI300X", "tpot_ms"): 0.19}))
    assert not targets_hold(_cells({**good, ("MI300X", "tpot_ms"): 0.21}))
    assert not targets_hold(_cells({**good, ("MI300X", "e2e_ms"): 0.21}))
    # A100 and H100 each need all three quantities within 10 %, measured
    assert not targets_hold(_cells({**good, ("A100-80GB", "ttft_ms"): 0.11}))
    assert not targets_hold(_cells({k: v for k, v in good.items()
                                    if k != ("H100-SXM", "output_tokens_per_s")}))
    # and one other GPU with all three: H200 missing one quantity leaves none
    assert not targets_hold(_cells({**good, ("H200", "tpot_ms"): 0.11}))
    assert targets_hold(_cells({**good, ("H200", "tpot_ms"): 0.11,
                                **{("L40S", q): 0.05 for q in three}}))


@pytest.mark.skipif(os.environ.get("FLEETPLAN_SLOW") != "1",
                    reason="predicts every published figure; set FLEETPLAN_SLOW=1")
def test_docs_hold_the_table_a_fresh_run_writes(capsys: pytest.CaptureFixture[str]) -> None:
    if not SHARED_PERF.is_dir():
        pytest.skip("../shared/data/perf is absent")
    assert len(all_figures(SHARED_PERF)) > 400
    fidelity_main(["--perf", str(SHARED_PERF)])
    fresh = capsys.readouterr().out
    doc = DOCS_FILE.read_text(encoding="utf-8")
    block = doc[doc.index(BEGIN_MARK) + len(BEGIN_MARK): doc.index(END_MARK)]
    assert block.strip() == fresh.strip()
    assert fidelity_main(["--perf", str(SHARED_PERF), "--check"]) == 0, "issue 17's targets"
