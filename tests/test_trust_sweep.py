"""benchmarks/trust_sweep.py's recorded-trace cases: the scenario is the profile's block, and
the two replays scale the trace as they say (busiest minute at the planned peak; mean at it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.trust_sweep import TRACE_SPECS, trace_cases


def _write_conv(dirpath: Path) -> Path:
    """A CSV trace in the shared conv trace's name: 1 req/s for minutes 0–2, 3 req/s in
    minute 3, 1 req/s in minutes 4–5: 480 requests, the busiest minute 3 req/s."""
    rows = ["arrival_s,input_tokens,output_tokens"]
    t = 0.0
    for minute in range(6):
        per_s = 3 if minute == 3 else 1
        for k in range(60 * per_s):
            t = minute * 60 + k / per_s
            rows.append(f"{t:.3f},1000,100")
    path = dirpath / "AzureLLMInferenceTrace_conv.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_trace_cases_scale_the_busiest_minute_to_the_peak_and_the_mean_for_the_walk(
        tmp_path: Path) -> None:
    path = _write_conv(tmp_path)
    cases = {name: (doc, replays) for name, doc, replays in trace_cases(tmp_path, [1, 5])}
    assert "trace-azure-conv-x1" in cases and "trace-azure-conv-x5" in cases
    assert set(cases) >= {"trace-azure-conv-x1-hit0", "trace-azure-conv-x1-hit0.9",
                          "trace-azure-conv-x1-mixed-h100"}
    doc, replays = cases["trace-azure-conv-x1"]
    wl = doc["workloads"][0]
    spec = TRACE_SPECS[path.name]
    assert (wl["model"], wl["slo"]["tpot_p95_ms"]) == (spec["model"], spec["tpot"])
    peak_rps = wl["arrival"]["peak_rps"]
    assert peak_rps == pytest.approx(3.0, rel=0.02)  # the busiest minute, as profile gives it
    kinds = {r.kind: r for r in replays}
    # busiest minute (3 req/s) at the planned peak: ×1; the failure a minute before minute 3
    assert kinds["peak"].rate_scale == pytest.approx(peak_rps / 3.0)
    assert kinds["peak"].fail_minute == pytest.approx(2.0 / kinds["peak"].rate_scale, rel=0.01)
    # the mean (480 requests over 359 s, first to last arrival) at the planned peak, failing
    # half-way: 3 ÷ (480 / 359) = 2.24
    mean_rps = 480 / (6 * 60 - 1)
    assert kinds["walk"].rate_scale == pytest.approx(peak_rps / mean_rps, rel=0.01)
    assert kinds["walk"].fail_minute == pytest.approx(
        (6 * 60 - 1) / kinds["walk"].rate_scale / 2 / 60, abs=0.01)
    # ×5: five times the peak, the trace replayed five times as fast
    doc5, replays5 = cases["trace-azure-conv-x5"]
    assert doc5["workloads"][0]["arrival"]["peak_rps"] == pytest.approx(5 * peak_rps, rel=1e-3)
    assert replays5[0].rate_scale == pytest.approx(5 * kinds["peak"].rate_scale, rel=1e-3)
    assert cases["trace-azure-conv-x1-hit0.9"][0]["workloads"][0]["prefix_cache_hit_rate"] == 0.9
