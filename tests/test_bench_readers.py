"""Load-test readers on files shaped as each tool writes them (tests/bench_files.py names the
versions), and the SLO-holding rate: interpolated between two tested loads, never extrapolated,
refused with the reason when no load held.

The sweep used throughout, against an SLO of TTFT P95 1,000 ms and per-token P95 50 ms:

    offered  served   TTFT P95  TPOT P95  in flight
    2 req/s  1.98     400 ms    30 ms     20
    4        3.95     700       40        30        held
    6        5.90     1,300     48        50        broke (TTFT)
    8        7.10     3,000     60        64

TTFT reaches 1,000 ms half-way from 4 to 6 (700 + 0.5 × (1,300 − 700)); per-token P95 still
holds there. SLO-holding rate = 3.95 + 0.5 × (5.90 − 3.95) = 4.925 req/s; per-token P95
40 + 0.5 × 8 = 44 ms; in flight 30 + 0.5 × 20 = 40.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from models.errors import InputError
from solver.capacity.bench.formats import read_bench_file
from solver.capacity.bench.points import BenchPoint, LoadKind, PercentileBasis
from solver.capacity.bench.slo import Slo, slo_holding
from tests import bench_files as bf

SLO = Slo(ttft_p95_ms=1000, tpot_p95_ms=50)
SWEEP = [bf.Load(2, 1.98, 400, 30, peak_in_flight=20), bf.Load(4, 3.95, 700, 40,
                                                                peak_in_flight=30),
         bf.Load(6, 5.90, 1300, 48, peak_in_flight=50), bf.Load(8, 7.10, 3000, 60,
                                                                peak_in_flight=64)]
NEVER = [bf.Load(1, 0.99, 1500, 30), bf.Load(2, 1.97, 2500, 35)]
RATE, TPOT = 3.95 + 0.5 * (5.90 - 3.95), 40 + 0.5 * 8


def per_file(tmp_path: Path, build: Callable[[bf.Load], Any], loads: list[bf.Load]
             ) -> list[BenchPoint]:
    """One file per tested load (as vLLM --save-result and AIPerf write them), all read."""
    return [p for i, x in enumerate(loads)
            for p in read_bench_file(bf.write_json(tmp_path / f"run{i}.json", build(x)))]


# --- vLLM ---------------------------------------------------------------------------------


VLLM_VERSIONS: dict[str, Callable[[Path, list[bf.Load]], list[BenchPoint]]] = {
    "bench serve >= 0.9, one file per rate": lambda t, loads: per_file(t, bf.vllm_new, loads),
    "benchmark_serving.py 0.6-0.8 (per-request samples)":
        lambda t, loads: per_file(t, bf.vllm_old, loads),
    "bench serve --append-result (JSON lines)": lambda t, loads: read_bench_file(
        bf.write_json_lines(t / "sweep.jsonl", [bf.vllm_new(x) for x in loads])),
    "bench sweep serve summary.json": lambda t, loads: read_bench_file(
        bf.write_json(t / "summary.json", bf.vllm_sweep_summary(loads))),
}


@pytest.mark.parametrize("version", VLLM_VERSIONS)
def test_vllm_sweep_breaks_between_two_rates_interpolated(tmp_path: Path, version: str) -> None:
    points = VLLM_VERSIONS[version](tmp_path, SWEEP)
    assert [p.load_kind for p in points] == [LoadKind.rate] * 4
    assert [p.load for p in points] == [2, 4, 6, 8]
    holding = slo_holding(points, SLO)
    assert holding.rate_rps == pytest.approx(RATE)  # 4.925 req/s
    assert holding.ttft_p95_ms == pytest.approx(1000)
    assert holding.tpot_p95_ms == pytest.approx(TPOT)
    assert holding.interpolated and holding.fraction == pytest.approx(0.5)
    assert (holding.below.load, holding.above and holding.above.load) == (4, 6)
    basis = points[0].basis
    assert basis is (PercentileBasis.samples if "0.6-0.8" in version else PercentileBasis.p95)
    assert all(p.model == bf.MODEL and p.engine == "vllm" for p in points)
    assert {p.measured_on.isoformat() for p in points if p.measured_on} == {"2026-09-21"}


@pytest.mark.parametrize("version", VLLM_VERSIONS)
def test_vllm_sweep_that_never_holds_is_refused_with_the_reason(tmp_path: Path,
                                                                 version: str) -> None:
    points = VLLM_VERSIONS[version](tmp_path, NEVER)
    with pytest.raises(InputError) as info:
        slo_holding(points, SLO)
    (problem,) = info.value.problems
    assert "the SLO held at no tested load" in problem.message
    assert "offered 1 req/s" in problem.message and "TTFT P95 1,500 ms > 1,000 ms" in (
        problem.message)
    assert "test lighter loads" in problem.fix


def test_vllm_in_flight_is_the_peak_it_observed(tmp_path: Path) -> None:
    holding = slo_holding(per_file(tmp_path, bf.vllm_new, SWEEP), SLO)
    assert holding.sequences == pytest.approx(40)  # 30 + 0.5 × (50 − 30)


def test_vllm_default_percentiles_take_p99_as_an_upper_bound(tmp_path: Path) -> None:
    # Without --metric-percentiles 95 vLLM saves P99 only: P99 = 1.25 × P95 in these files,
    # so TTFT P99 is 500, 875, 1,625, 3,750 ms: 1,000 is reached 1/6 of the way from 4 to 6
    # (per-token P99 50 → 60 ms reaches a 55 ms limit half-way: TTFT breaks first).
    points = per_file(tmp_path, lambda x: bf.vllm_new(x, percentiles=(99,), e2el=False), SWEEP)
    assert {p.basis for p in points} == {PercentileBasis.p99_bound}
    holding = slo_holding(points, Slo(ttft_p95_ms=1000, tpot_p95_ms=55))
    assert holding.fraction == pytest.approx((1000 - 875) / (1625 - 875))
    assert holding.rate_rps == pytest.approx(3.95 + (1 / 6) * (5.90 - 3.95))
    # The mean end-to-end latency is estimated from the means (no e2el in the file).
    assert points[0].mean_e2e_ms is not None


def test_vllm_concurrency_sweep_holds_the_interpolated_concurrency(tmp_path: Path) -> None:
    loads = [bf.Load(c, s, t, p) for c, s, t, p in ((8, 2.0, 300, 20), (16, 3.6, 600, 30),
                                                    (32, 5.2, 1200, 45))]
    points = per_file(tmp_path, lambda x: bf.vllm_new(x, kind="concurrency"), loads)
    assert [(p.load_kind, p.load) for p in points] == [(LoadKind.concurrency, 8.0),
                                                       (LoadKind.concurrency, 16.0),
                                                       (LoadKind.concurrency, 32.0)]
    holding = slo_holding(points, SLO)
    f = (1000 - 600) / (1200 - 600)  # 2/3 of the way from 16 to 32 in flight
    assert holding.rate_rps == pytest.approx(3.6 + f * (5.2 - 3.6))
    assert holding.sequences == pytest.approx(16 + f * 16)


# --- GuideLLM -----------------------------------------------------------------------------


GUIDELLM_VERSIONS = {"0.2-0.3": bf.guidellm_02, "0.4 and later": bf.guidellm_04}


@pytest.mark.parametrize("version", GUIDELLM_VERSIONS)
def test_guidellm_sweep_breaks_between_two_rates_interpolated(tmp_path: Path,
                                                               version: str) -> None:
    path = bf.write_json(tmp_path / "benchmarks.json", GUIDELLM_VERSIONS[version](SWEEP))
    points = read_bench_file(path)
    assert [p.where for p in points] == [f"benchmarks[{i}]" for i in range(4)]
    assert all(version in p.tool for p in points)
    holding = slo_holding(points, SLO)
    assert holding.rate_rps == pytest.approx(RATE)
    assert holding.tpot_p95_ms == pytest.approx(TPOT)  # inter-token latency, not TPOT
    assert holding.sequences == pytest.approx(40)  # peak concurrency observed, interpolated
    assert points[0].model == bf.MODEL and points[0].engine is None
    assert points[0].measured_on is not None and points[0].measured_on.isoformat() == (
        "2026-09-21")


@pytest.mark.parametrize("version", GUIDELLM_VERSIONS)
def test_guidellm_sweep_that_never_holds_is_refused(tmp_path: Path, version: str) -> None:
    path = bf.write_json(tmp_path / "benchmarks.json", GUIDELLM_VERSIONS[version](NEVER))
    with pytest.raises(InputError) as info:
        slo_holding(read_bench_file(path), SLO)
    (problem,) = info.value.problems
    assert problem.file.endswith("benchmarks.json: benchmarks[0]")
    assert "TTFT P95 1,500 ms > 1,000 ms" in problem.message


@pytest.mark.parametrize("version", GUIDELLM_VERSIONS)
def test_guidellm_counts_served_and_errored_requests(tmp_path: Path, version: str) -> None:
    # 0.2-0.3 keep the counts in the benchmark's request_totals, 0.4+ in metrics.request_totals
    loads = [bf.Load(2, 1.98, 400, 30, completed=480, failed=20)]
    (point,) = read_bench_file(bf.write_json(tmp_path / "b.json",
                                             GUIDELLM_VERSIONS[version](loads)))
    assert (point.completed, point.failed) == (480, 20)
    assert point.failed_share == pytest.approx(0.04)


def test_guidellm_concurrent_streams_are_the_sequences(tmp_path: Path) -> None:
    loads = [bf.Load(4, 1.5, 300, 20), bf.Load(8, 2.8, 500, 30)]
    path = bf.write_json(tmp_path / "b.json", bf.guidellm_04(loads, kind="concurrency"))
    points = read_bench_file(path)
    assert [(p.load_kind, p.sequences) for p in points] == [(LoadKind.concurrency, 4.0),
                                                            (LoadKind.concurrency, 8.0)]


# --- AIPerf and GenAI-Perf ----------------------------------------------------------------


PERF_VERSIONS = {"GenAI-Perf": bf.genai_perf, "AIPerf 0.1": bf.aiperf_01,
                 "AIPerf 0.2 and later": bf.aiperf}
CONCURRENCY_SWEEP = [bf.Load(c, s, t, p) for c, s, t, p in (
    (4, 1.9, 350, 25), (8, 3.4, 800, 35), (16, 4.6, 1400, 45), (32, 5.0, 2600, 70))]


@pytest.mark.parametrize("version", PERF_VERSIONS)
def test_perf_export_concurrency_sweep_interpolated(tmp_path: Path, version: str) -> None:
    points = per_file(tmp_path, PERF_VERSIONS[version], CONCURRENCY_SWEEP)
    assert all(p.tool.startswith(version.split(" ")[0]) for p in points)
    assert [p.load for p in points] == [4, 8, 16, 32]
    holding = slo_holding(points, SLO)
    f = (1000 - 800) / (1400 - 800)  # TTFT reaches 1,000 ms a third of the way from 8 to 16
    assert holding.rate_rps == pytest.approx(3.4 + f * (4.6 - 3.4))
    assert holding.tpot_p95_ms == pytest.approx(35 + f * 10)
    assert holding.sequences == pytest.approx(8 + f * 8)
    assert points[0].model == bf.MODEL
    dated = version != "GenAI-Perf"  # GenAI-Perf records no date
    assert (points[0].measured_on is not None) is dated


@pytest.mark.parametrize("version", PERF_VERSIONS)
def test_perf_export_sweep_that_never_holds_is_refused(tmp_path: Path, version: str) -> None:
    points = per_file(tmp_path, PERF_VERSIONS[version], NEVER)
    with pytest.raises(InputError) as info:
        slo_holding(points, SLO)
    assert "concurrency 1" in info.value.problems[0].message


def test_perf_export_failures_count_against_a_load(tmp_path: Path) -> None:
    loads = [bf.Load(4, 1.9, 350, 25), bf.Load(8, 3.4, 500, 30, failed=25, completed=475)]
    for build in (bf.aiperf, bf.aiperf_01):
        points = per_file(tmp_path, build, loads)
        assert points[1].failed_share == pytest.approx(0.05)
        holding = slo_holding(points, SLO)
        # 5 % failed at concurrency 8: the 1 % limit is reached a fifth of the way there.
        assert holding.fraction == pytest.approx(0.2)
        assert holding.rate_rps == pytest.approx(1.9 + 0.2 * 1.5)


# --- the rate, whatever the tool ----------------------------------------------------------


def test_every_load_held_gives_the_highest_tested_rate_and_says_so(tmp_path: Path) -> None:
    points = per_file(tmp_path, bf.vllm_new, SWEEP[:2])
    holding = slo_holding(points, SLO)
    assert holding.rate_rps == 3.95 and holding.above is None and not holding.interpolated
    assert "a lower bound" in holding.notes[0]


def test_a_load_that_holds_again_after_the_break_is_noise(tmp_path: Path) -> None:
    loads = [*SWEEP[:3], bf.Load(8, 7.1, 900, 45)]
    holding = slo_holding(per_file(tmp_path, bf.vllm_new, loads), SLO)
    assert holding.rate_rps == pytest.approx(RATE)
    assert "held again after the first break" in holding.notes[0]


def test_repeated_runs_of_one_load_count_their_worst_p95(tmp_path: Path) -> None:
    runs = [*SWEEP[:2], bf.Load(4, 3.85, 760, 42), *SWEEP[2:]]
    holding = slo_holding(per_file(tmp_path, bf.vllm_new, runs), SLO)
    # At 4 req/s: TTFT 760 (worst), served (3.95 + 3.85) / 2 = 3.9; f = (1000−760)/(1300−760)
    f = 240 / 540
    assert holding.rate_rps == pytest.approx(3.9 + f * (5.9 - 3.9))


# --- what is not a load-test result -------------------------------------------------------


@pytest.mark.parametrize(("text", "said"), [
    ('{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}\n',
     "Mooncake request trace"),
    ('{"status": "success", "data": {"resultType": "matrix", "result": []}}',
     "fleetplan profile --prometheus"),
    ("Metric,avg,min,max,p95\nRequest Latency (ms),1,1,1,1\n", "a CSV export"),
    ("", "empty file"),
    ('{"request_throughput": 1.0}', "not a load-test result fleetplan reads"),
])
def test_other_files_are_refused_saying_what_they_are(tmp_path: Path, text: str,
                                                      said: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_bench_file(path)
    (problem,) = info.value.problems
    assert problem.file == str(path) and said in problem.message, problem
    assert problem.fix


def test_a_run_without_latency_percentiles_is_refused(tmp_path: Path) -> None:
    doc = bf.vllm_new(SWEEP[0])
    for key in [k for k in doc if k.startswith(("p95_", "p99_"))]:
        del doc[key]
    with pytest.raises(InputError) as info:
        read_bench_file(bf.write_json(tmp_path / "r.json", doc))
    assert "--metric-percentiles 95,99" in info.value.problems[0].fix


def test_a_bad_number_is_located(tmp_path: Path) -> None:
    docs = [bf.vllm_new(x) for x in SWEEP[:2]]
    docs[1]["request_throughput"] = "fast"
    with pytest.raises(InputError) as info:
        read_bench_file(bf.write_json(tmp_path / "summary.json", docs))
    (problem,) = info.value.problems
    assert problem.location == "runs[1]" and "not a vLLM benchmark run" in problem.message
    docs[1]["request_throughput"] = float("nan")
    with pytest.raises(InputError) as info:
        read_bench_file(bf.write_json(tmp_path / "summary.json", docs))
    assert info.value.problems[0].location == "runs[1].request_throughput"
