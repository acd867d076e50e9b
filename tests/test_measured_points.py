"""A load test's points kept on its measured row (``import-bench``) and read by ``check``.

The case (findings_s23 F5): BLOOM-176B on one H100-SXM TP8 replica, load-tested by Splitwise
(prompt 512, output 128, batch 1–64; ``tests/data/perf/splitwise_bloom176b_h100_tp8.csv``, a
slice of ``../shared/data/perf/splitwise_sim_perf_model.csv``), each batch size written as a
``vllm bench serve --max-concurrency B`` result as findings_s23 did: TTFT = the batch's
prompt_time, per-token = its token_time, end-to-end = its e2e_time, P95 = the worst of the
repeats, median = their mean, throughput = B ÷ mean e2e_time. SLO 1,500 ms / 50 ms: the row
plans at 2.645 req/s. At 45 % of it (1.19 req/s, between concurrency 4 and 8) ``check`` said
TTFT 1,034 ms and 26.4 ms per token — no load of the test went below 36.2 ms per token.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from models.common import CapacitySource
from models.errors import InputError
from models.loader import load_measured_csv, load_scenario
from models.measured import MeasuredCapacity, measured_csv
from solver.capacity.bench.formats import read_bench_file
from solver.capacity.replica import predict_at_rate
from solver.capacity.table import build_capacity_table
from solver.cli import main
from tests import bench_files as bf

DATA = Path(__file__).parent / "data" / "perf" / "splitwise_bloom176b_h100_tp8.csv"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "perf" / \
    "splitwise_sim_perf_model.csv"
BATCHES = (1, 2, 4, 8, 16, 32, 64)
#: TTFT and per-token P95 [ms] main (1ed5b57) predicts for the row without points at 1.2 req/s
#: (findings_s23 F5's "1,034 ms, 26.4 ms"), printed by repr: a row without points is unchanged.
MAIN_AT_1_2_RPS = (1033.929430454817, 26.38542417282438)
#: The header measured CSVs had before rows kept points (and still have without them).
OLD_HEADER = ("model,model_digest,gpu,runtime,precision,tp,workload,max_stable_sequences,"
              "tested_peak_rps,ttft_p95_ms,decode_p95_ms_per_token,measured_on,"
              "input_tokens_mean,input_tokens_p50,input_tokens_p95,output_tokens_mean,"
              "output_tokens_p50,output_tokens_p95,source")


def _batches(path: Path) -> dict[int, list[dict[str, str]]]:
    with path.open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if (r["model"], r["hardware"], r["prompt_size"],
                r["token_size"], r["tensor_parallel"]) == ("bloom-176b", "h100-80gb", "512",
                                                           "128", "8")]
    return {b: [r for r in rows if int(r["batch_size"]) == b] for b in BATCHES}


def _vllm_results(tmp_path: Path) -> list[Path]:
    """One ``vllm bench serve --save-result`` JSON per batch size of the Splitwise slice."""
    files = []
    for b, rows in _batches(DATA).items():
        prompt = [float(r["prompt_time"]) for r in rows]  # [ms]
        token = [float(r["token_time"]) for r in rows]  # [ms/token]
        e2e = [float(r["e2e_time"]) for r in rows]  # [ms]
        rps = b / (statistics.mean(e2e) / 1000)  # requests ÷ [s]
        n = len(rows) * b
        doc: dict[str, object] = {
            "date": "20261120-101500", "endpoint_type": "vllm", "backend": "vllm",
            "model_id": "bigscience/bloom", "num_prompts": n, "request_rate": "inf",
            "max_concurrency": b, "completed": n, "failed": 0, "request_throughput": rps,
            "total_input_tokens": n * 512, "total_output_tokens": n * 128,
            "max_concurrent_requests": b}
        for name, values in (("ttft", prompt), ("tpot", token), ("e2el", e2e)):
            doc |= {f"mean_{name}_ms": statistics.mean(values),
                    f"median_{name}_ms": statistics.mean(values),
                    f"p95_{name}_ms": max(values), f"p99_{name}_ms": max(values)}
        path = tmp_path / f"vllm-c{b}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        files.append(path)
    return files


def _scenario(tmp_path: Path) -> Path:
    doc = {
        "name": "platform",
        "price_tables": [{"path": "builtin:aws", "zones": ["use1-az1", "use1-az2", "use1-az4"],
                          "gpus": ["H100-SXM"]}],
        "workloads": [{
            "name": "assist", "model": "BLOOM-176B", "runtime": "vllm", "precision": "bf16",
            "survivability": "zone_loss", "slo": {"ttft_p95_ms": 1500, "tpot_p95_ms": 50},
            "arrival": {"peak_rps": 6},
            "input_tokens": {"p50": 512, "p95": 512, "p99": 512},
            "output_tokens": {"p50": 128, "p95": 128, "p99": 128}}],
        "measured_csv": "measured.csv",
    }
    path = tmp_path / "plat.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario beside the measured CSV ``import-bench --out`` wrote from the sweep."""
    tmp = tmp_path_factory.mktemp("points")
    scenario = _scenario(tmp)
    result = CliRunner().invoke(main, [
        "import-bench", *map(str, _vllm_results(tmp)), "--gpu", "H100", "--tp", "8",
        "--scenario", str(scenario), "--workload", "assist", "--out", str(tmp / "measured.csv")])
    assert result.exit_code == 0, result.output
    (tmp / "import.txt").write_text(result.output, encoding="utf-8")
    return scenario


def _row(scenario: Path) -> MeasuredCapacity:
    return load_scenario(scenario).measured[0]


def test_import_bench_keeps_every_point_of_the_sweep_and_plans_at_the_same_rate(
        imported: Path) -> None:
    said = (imported.parent / "import.txt").read_text(encoding="utf-8")
    assert "the row keeps the sweep's 7 tested loads (`points`)" in said
    row = _row(imported)
    # the rate it plans at is as before: f = (1,500 − 1,326.5) ÷ (2,582.4 − 1,326.5) = 0.138
    # of the way from concurrency 16 (2.457 req/s) to 32 (3.816): 2.645 req/s, 19 sequences
    assert row.tested_peak_rps == pytest.approx(2.6448, abs=1e-4)
    assert row.max_stable_sequences == 19
    assert [p.concurrency for p in row.points] == [float(b) for b in BATCHES]
    c8 = _batches(DATA)[8]
    e2e = [float(r["e2e_time"]) for r in c8]
    assert row.points[3].model_dump() == {
        "offered_rps": None, "concurrency": 8.0,
        "achieved_rps": pytest.approx(8 / (statistics.mean(e2e) / 1000)),
        "ttft_p50_ms": pytest.approx(statistics.mean(float(r["prompt_time"]) for r in c8)),
        "ttft_p95_ms": pytest.approx(645.952066),
        "tpot_p50_ms": pytest.approx(statistics.mean(float(r["token_time"]) for r in c8)),
        "tpot_p95_ms": pytest.approx(38.330626), "e2e_mean_ms": pytest.approx(
            statistics.mean(e2e)), "e2e_p50_ms": pytest.approx(statistics.mean(e2e)),
        "e2e_p95_ms": pytest.approx(max(e2e))}
    # no load of the test went below 36.2 ms per token (concurrency 1)
    assert min(p.tpot_p95_ms for p in row.points) == pytest.approx(36.177275)


def test_check_reads_a_measured_configurations_latency_off_its_points(imported: Path) -> None:
    # F5: 6 req/s on 5 replicas, 1.2 req/s each (45 % of the row's 2.645), between concurrency
    # 4 (0.788 req/s: TTFT P95 257.5 ms, 38.21 ms per token) and 8 (1.460: 646.0 ms, 38.33 ms).
    # Linear in the rate served: f = (1.2 − 0.788) ÷ (1.460 − 0.788) = 0.613 → TTFT 257.5 +
    # 0.613 × 388.5 = 495.7 ms, per-token 38.21 + 0.613 × 0.12 = 38.29 ms (before: 1,034 ms
    # and 26.4 ms, the analytic curve scaled to the measured P95s at 2.645 req/s)
    sc = load_scenario(imported)
    wl = sc.workload("assist")
    table = build_capacity_table(sc)
    row = next(r for r in table.rows if (r.gpu, r.tp) == ("H100-SXM", 8))
    assert row.source is CapacitySource.measured
    c4, c8 = _row(imported).points[2:4]
    rate = 6.0 / 5
    at = predict_at_rate(sc, wl, row, rate)
    f = (rate - c4.achieved_rps) / (c8.achieved_rps - c4.achieved_rps)
    assert f == pytest.approx(0.613, abs=1e-3)
    assert at.ttft_p95_ms == pytest.approx(495.7, abs=0.05)
    assert at.ttft_p95_ms == pytest.approx(257.450706 + f * (645.952066 - 257.450706))
    assert at.tpot_p95_ms == pytest.approx(38.213027 + f * (38.330626 - 38.213027))
    assert c4.ttft_p95_ms <= at.ttft_p95_ms <= c8.ttft_p95_ms
    assert at.holds
    assert at.basis == ("measured: interpolated between 0.788 and 1.46 req/s (concurrency 4 "
                        "and 8)")
    # at the rate it plans at: the row's own P95s (the points the rate was interpolated from)
    peak = predict_at_rate(sc, wl, row, row.slo_rps)
    assert (peak.ttft_p95_ms, peak.tpot_p95_ms, peak.holds) == (
        pytest.approx(1500.0), pytest.approx(row.tpot_p95_ms), True)


def test_below_the_lightest_load_the_lowest_measured_and_said_so(imported: Path) -> None:
    sc = load_scenario(imported)
    wl = sc.workload("assist")
    row = next(r for r in build_capacity_table(sc).rows if (r.gpu, r.tp) == ("H100-SXM", 8))
    at = predict_at_rate(sc, wl, row, 0.05)
    # concurrency 1 served 0.215 req/s at TTFT P95 77.1 ms and 36.18 ms per token: no lower
    assert (at.ttft_p95_ms, at.tpot_p95_ms) == (pytest.approx(77.139622),
                                                pytest.approx(36.177275))
    assert at.basis.startswith("measured: below the lightest tested load (0.215 req/s, "
                               "concurrency 1), whose latencies are given")


def test_above_the_heaviest_load_extrapolated_and_said_so(imported: Path) -> None:
    sc = load_scenario(imported)
    wl = sc.workload("assist")
    row = next(r for r in build_capacity_table(sc).rows if (r.gpu, r.tp) == ("H100-SXM", 8))
    between = predict_at_rate(sc, wl, row, 3.0)  # past the row's 2.645, inside the sweep
    assert not between.holds and between.ttft_p95_ms > 1500.0
    above = predict_at_rate(sc, wl, row, 5.0)  # concurrency 64 served 4.853 req/s
    assert above.basis == ("extrapolated above the heaviest tested load (4.85 req/s, "
                           "concurrency 64): its P95s × the analytic model's rise from it")
    assert above.ttft_p95_ms >= 5159.596380 and above.tpot_p95_ms >= 65.192584
    assert not above.holds


def test_check_says_which_points_the_steady_state_latency_comes_from(
        imported: Path, tmp_path: Path) -> None:
    # 5 replicas in three zones carry 6 req/s: 6 ÷ (5 × 2.645) = 45 % of the row's rate
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({
        "nodes": [{"zone": z, "gpu": "H100-SXM", "nodes": n}
                  for z, n in (("use1-az1", 2), ("use1-az2", 2), ("use1-az4", 1))],
        "layout": [{"workload": "assist", "zone": z, "gpu": "H100-SXM", "tp": 8, "replicas": n}
                   for z, n in (("use1-az1", 2), ("use1-az2", 2), ("use1-az4", 1))]}),
        encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(imported), "--fleet", str(fleet)])
    assert result.exit_code in (0, 1), result.output
    steady = result.output.split("steady state (busiest slice)")[1]
    assert "45%" in steady and "496" in steady and "38.3" in steady
    assert ("  assist, H100-SXM TP8 — measured: interpolated between 0.788 and 1.46 req/s "
            "(concurrency 4 and 8)") in steady


def test_a_row_without_points_predicts_as_before(imported: Path, tmp_path: Path) -> None:
    # the same row with its points left out: the analytic curve at the same share of the
    # analytic SLO-holding rate, scaled to the measured P95s at the row's rate — the figures
    # main (1ed5b57) gives, to the last digit (F5's 1,034 ms and 26.4 ms)
    kept = _row(imported).model_dump()
    bare = MeasuredCapacity.model_validate({k: v for k, v in kept.items() if k != "points"})
    (tmp_path / "measured.csv").write_text(measured_csv([bare]), encoding="utf-8")
    assert (tmp_path / "measured.csv").read_text(encoding="utf-8").splitlines()[0] == OLD_HEADER
    scenario = _scenario(tmp_path)
    sc = load_scenario(scenario)
    wl = sc.workload("assist")
    row = next(r for r in build_capacity_table(sc).rows if (r.gpu, r.tp) == ("H100-SXM", 8))
    at = predict_at_rate(sc, wl, row, 6.0 / 5)
    assert (at.ttft_p95_ms, at.tpot_p95_ms) == MAIN_AT_1_2_RPS
    assert getattr(at, "basis", "") == ""  # (main has no basis: nothing said either)


def test_points_survive_the_csv_and_a_bad_cell_is_located(imported: Path,
                                                          tmp_path: Path) -> None:
    row = _row(imported)
    again = load_measured_csv(imported.parent / "measured.csv")[0]
    assert again.points == row.points and len(row.points) == 7
    text = (imported.parent / "measured.csv").read_text(encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace('"[{', '"[{oops', 1), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_measured_csv(bad)
    assert "row 2" in str(err.value) and "points" in str(err.value)


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/perf not present")
def test_the_slice_is_splitwises_published_rows() -> None:
    assert _batches(SHARED) == _batches(DATA)


@pytest.mark.parametrize(("write", "e2e_p95_per_mean"), [
    (lambda x, p: bf.write_json(p, bf.vllm_new(x, kind="concurrency")), None),
    (lambda x, p: bf.write_json(p, bf.guidellm_04([x], kind="concurrency")), 1.25),
    (lambda x, p: bf.write_json(p, bf.guidellm_02([x], kind="concurrency")), 1.25),
    (lambda x, p: bf.write_json(p, bf.aiperf(x)), 1.5),
    (lambda x, p: bf.write_json(p, bf.aiperf_01(x)), 1.5),
    (lambda x, p: bf.write_json(p, bf.genai_perf(x)), 1.5),
], ids=["vllm", "guidellm-0.4", "guidellm-0.2", "aiperf", "aiperf-0.1", "genai-perf"])
def test_every_reader_keeps_the_medians_the_files_give(
        tmp_path: Path, write: Callable[[bf.Load, Path], Path],
        e2e_p95_per_mean: float | None) -> None:
    # the builders write each median as 0.6 × its P95 (tests/bench_files.py), GuideLLM's
    # request latency P95 as mean ÷ 800 [s] (1.25 × the mean in ms), AIPerf's as 1.5 × the mean
    x = bf.Load(8, 3.9, ttft_p95_ms=700.0, tpot_p95_ms=40.0, e2e_mean_ms=4000.0)
    (p,) = read_bench_file(write(x, tmp_path / "run.json"))
    assert (p.ttft_p50_ms, p.tpot_p50_ms) == (pytest.approx(420.0), pytest.approx(24.0))
    if e2e_p95_per_mean is not None:
        assert p.e2e_p95_ms == pytest.approx(4000.0 * e2e_p95_per_mean)
