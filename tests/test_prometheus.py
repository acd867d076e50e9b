"""Workload profiles from vLLM's Prometheus metrics: range-query JSON and CSV exports, counters
with resets, ``histogram_quantile`` semantics, hourly shape and prefix-cache hit rate.

The export built here spans two UTC days at one-minute steps from 2026-09-20 00:00. Day 1 serves
60 requests a minute (1 req/s) all day; day 2 serves 60 × (1 + h) a minute in hour h, so its
busiest minute is 24 req/s (hour 23) and its hourly shape is (1 + h) / 24. Requests are split
over two series (finish reasons); one restarts (a counter reset) half-way. The prompt histogram's
buckets gain, over the export, 0 (le 100), 100 (le 200), 600 (le 500), 900 (le 1000), 990 (le
2000) and 1,000 (le 5000 and +Inf) observations:

    P50: rank 500 in (200, 500]:  200 + 300 × (500 − 100) / (600 − 100) = 440
    P95: rank 950 in (1000, 2000]: 1000 + 1000 × (950 − 900) / (990 − 900) = 1,555.6
    P99: rank 990 in (1000, 2000]: 1000 + 1000 × (990 − 900) / 90 = 2,000
    mean: _sum 650,000 ÷ _count 1,000 = 650
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from models.errors import InputError
from models.workload import Workload
from solver.cli import main
from solver.replay.profile import workload_fields
from solver.replay.prometheus import (
    histogram_quantile,
    profile_prometheus,
    read_prometheus,
)

START = dt.datetime(2026, 9, 20, tzinfo=dt.UTC).timestamp()
MINUTES = 2 * 24 * 60
PROMPT_BUCKETS = {"100": 0, "200": 100, "500": 600, "1000": 900, "2000": 990, "5000": 1000,
                  "+Inf": 1000}
GENERATION_BUCKETS = {"50": 0, "100": 500, "200": 800, "500": 1000, "+Inf": 1000}


def per_minute() -> np.ndarray:
    """Requests in each minute of the two days (see the module docstring)."""
    day1 = np.full(24 * 60, 60.0)
    day2 = np.repeat(60.0 * (1 + np.arange(24)), 60)
    return np.concatenate([day1, day2])


def matrix() -> list[tuple[str, dict[str, str], list[float], list[float]]]:
    """(name, labels, times, values) of every series of the export."""
    times = [START + 60 * k for k in range(MINUTES + 1)]
    cum = np.concatenate([[0.0], np.cumsum(per_minute())])
    stop, length = cum * 2 / 3, cum / 3
    restart = MINUTES // 2
    length = np.where(np.arange(cum.size) >= restart, length - length[restart - 1], length)
    out = [("vllm:request_success_total", {"finished_reason": "stop", "model_name": "m"},
            times, list(stop)),
           ("vllm:request_success_total", {"finished_reason": "length", "model_name": "m"},
            times, list(length))]
    ends = [times[0], times[-1]]
    for name, buckets, mean in (("vllm:request_prompt_tokens", PROMPT_BUCKETS, 650.0),
                                ("vllm:request_generation_tokens", GENERATION_BUCKETS, 120.0)):
        for le, n in buckets.items():
            out.append((f"{name}_bucket", {"le": le, "model_name": "m"}, ends, [5.0, 5.0 + n]))
        out.append((f"{name}_count", {"model_name": "m"}, ends, [5.0, 1005.0]))
        out.append((f"{name}_sum", {"model_name": "m"}, ends, [3000.0, 3000.0 + mean * 1000]))
    out.append(("vllm:prefix_cache_queries_total", {"model_name": "m"}, ends, [0.0, 4000.0]))
    out.append(("vllm:prefix_cache_hits_total", {"model_name": "m"}, ends, [0.0, 1000.0]))
    return out


def range_query(series: list[tuple[str, dict[str, str], list[float], list[float]]]
                ) -> dict[str, Any]:
    """The response of /api/v1/query_range, as Prometheus returns it."""
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": name, **labels},
         "values": [[t, repr(float(v))] for t, v in zip(times, values, strict=True)]}
        for name, labels, times, values in series]}}


def selector(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def write_json(tmp_path: Path) -> Path:
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(range_query(matrix())), encoding="utf-8")
    return path


def write_wide_csv(tmp_path: Path) -> Path:
    """Grafana's 'series joined by time' CSV: ISO times, one column per series, blanks where a
    series has no sample."""
    series = matrix()
    times = sorted({t for _, _, ts, _ in series for t in ts})
    path = tmp_path / "vllm.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Time", *(selector(n, lab) for n, lab, _, _ in series)])
        lookups = [dict(zip(ts, vs, strict=True)) for _, _, ts, vs in series]
        for t in times:
            iso = dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
            w.writerow([iso, *("" if t not in lk else repr(float(lk[t])) for lk in lookups)])
    return path


def write_long_csv(tmp_path: Path) -> Path:
    path = tmp_path / "long.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["timestamp", "metric", "value"])
        for name, labels, times, values in matrix():
            for t, v in zip(times, values, strict=True):
                w.writerow([t, selector(name, labels), v])
    return path


@pytest.mark.parametrize("write", [write_json, write_wide_csv, write_long_csv])
def test_an_export_profiles_like_a_trace(tmp_path: Path, write: Any) -> None:
    prof, notes = profile_prometheus(read_prometheus(write(tmp_path)), "vllm")
    rates = per_minute() / 60
    assert prof.requests == int(per_minute().sum())  # the reset did not lose requests
    assert prof.duration_s == MINUTES * 60
    assert prof.mean_rps == pytest.approx(per_minute().sum() / (MINUTES * 60))
    assert prof.peak_minute_rps == pytest.approx(24.0)
    assert prof.p95_minute_rps == pytest.approx(np.percentile(rates, 95))
    assert prof.hourly_shape == tuple(1.0 if h == 23 else round((1 + h) / 24, 3)
                                      for h in range(24))
    assert (prof.input_tokens.p50, prof.input_tokens.p99) == (pytest.approx(440),
                                                              pytest.approx(2000))
    assert prof.input_tokens.p95 == pytest.approx(1000 + 1000 * 50 / 90)
    assert prof.input_tokens.mean == pytest.approx(650)
    # generation: P50 rank 500 in (50, 100]: 50 + 50 × 500/500 = 100; P95 rank 950 in
    # (200, 500]: 200 + 300 × (950 − 800)/200 = 425
    assert (prof.output_tokens.p50, prof.output_tokens.p95) == (pytest.approx(100),
                                                                pytest.approx(425))
    assert prof.prefix_reuse == pytest.approx(0.25)  # 1,000 hits ÷ 4,000 queries
    assert "requests from vllm:request_success_total" in notes


def test_the_workload_block_validates_as_a_scenario_workload(tmp_path: Path) -> None:
    prof, _ = profile_prometheus(read_prometheus(write_json(tmp_path)), "vllm")
    fields = workload_fields(prof)
    assert fields["arrival"]["peak_rps"] == 24.0
    assert fields["prefix_cache_hit_rate"] == 0.25
    Workload.model_validate({"name": "chat", "model": "Llama-3.1-8B",
                             "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50}, **fields})


def test_histogram_quantile_follows_prometheus() -> None:
    bounds = [1, 2, 5, math.inf]
    assert histogram_quantile(0.5, bounds, [2, 4, 8, 8]) == pytest.approx(2 + 3 * 0 / 4)
    # rank 4 is the top of (1, 2]: 2; rank 1 in (0, 1]: 0 + 1 × 1/2 = 0.5 (first bucket from 0)
    assert histogram_quantile(0.125, bounds, [2, 4, 8, 8]) == pytest.approx(0.5)
    # rank in +Inf: the highest finite bound
    assert histogram_quantile(0.99, bounds, [1, 1, 1, 10]) == 5
    # non-monotonic buckets are made monotonic first; no observations: NaN
    assert histogram_quantile(0.5, bounds, [4, 2, 4, 4]) == pytest.approx(0.5)
    assert math.isnan(histogram_quantile(0.5, bounds, [0, 0, 0, 0]))


def test_a_step_longer_than_a_minute_is_said(tmp_path: Path) -> None:
    series = [(n, lab, ts[::5], vs[::5]) if n == "vllm:request_success_total" else
              (n, lab, ts, vs) for n, lab, ts, vs in matrix()]
    path = tmp_path / "coarse.json"
    path.write_text(json.dumps(range_query(series)), encoding="utf-8")
    prof, notes = profile_prometheus(read_prometheus(path), "coarse")
    assert any("300-s windows" in n for n in notes)
    assert prof.peak_minute_rps == pytest.approx(24.0)


@pytest.mark.parametrize(("doc", "said"), [
    ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "the query failed"),
    ({"status": "success", "data": {"resultType": "vector", "result": []}}, "not a range query"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {}, "values": [[START, "1"]]}]}}, "without `__name__`"),
    ({"request_throughput": 1.0}, "not a Prometheus query response"),
])
def test_bad_exports_are_refused_saying_why(tmp_path: Path, doc: Any, said: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_prometheus(path)
    (problem,) = info.value.problems
    assert problem.file == str(path) and said in problem.message and problem.fix


def test_an_export_without_requests_or_mixing_models_is_refused(tmp_path: Path) -> None:
    series = [s for s in matrix() if s[0] != "vllm:request_success_total"
              and not s[0].endswith("_count")]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(range_query(series)), encoding="utf-8")
    with pytest.raises(InputError) as info:
        profile_prometheus(read_prometheus(path), str(path))
    assert "no request counter" in info.value.problems[0].message
    mixed = [*matrix(), ("vllm:request_success_total", {"model_name": "other"},
                         [START, START + 60], [0.0, 1.0])]
    path.write_text(json.dumps(range_query(mixed)), encoding="utf-8")
    with pytest.raises(InputError) as info:
        profile_prometheus(read_prometheus(path), str(path))
    assert "mixes models: m, other" in info.value.problems[0].message


def test_sample_times_far_outside_the_present_are_refused(tmp_path: Path) -> None:
    series = [("vllm:request_success_total", {}, [1e15, 1e15 + 60], [0.0, 1.0])]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(range_query(series)), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_prometheus(path)
    assert "outside 2001-2100" in info.value.problems[0].message


def test_profile_command_reads_prometheus(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["profile", "--prometheus", str(write_json(tmp_path))])
    assert result.exit_code == 0, result.output
    block = yaml.safe_load(result.output.split("# workload block")[1].split("\n", 1)[1])
    assert block["arrival"]["peak_rps"] == 24.0
    assert "histogram_quantile" in result.output
