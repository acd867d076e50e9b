"""``fleetplan import-bench``: load-test files → a measured row, and a plan that uses it.

The sweep is tests/test_bench_readers.py's: against TTFT P95 1,000 ms and per-token P95 50 ms
it holds up to 3.95 + 0.5 × (5.90 − 3.95) = 4.925 req/s, 40 sequences in flight.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest
import yaml
from click.testing import CliRunner, Result

from models.loader import load_measured_csv
from solver.cli import main
from tests import bench_files as bf
from tests.test_bench_readers import NEVER, RATE, SWEEP, TPOT

SLO_ARGS = ["--slo-ttft-ms", "1000", "--slo-tpot-ms", "50"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["import-bench", *args])


def sweep_files(tmp_path: Path, loads: list[bf.Load] = SWEEP) -> list[str]:
    return [str(bf.write_json(tmp_path / f"vllm-rate{x.load:g}.json", bf.vllm_new(x)))
            for x in loads]


def scenario(tmp_path: Path, runtime: str = "vllm") -> Path:
    path = tmp_path / "chat.yaml"
    path.write_text(yaml.safe_dump({
        "name": "measured-chat",
        "zones": [{"id": "zone-a", "region": "r-1", "offers": [
            {"gpu": "H100-SXM", "gpus_per_node": 1, "price_source": "round price",
             "on_demand": {"price_per_gpu_hour": 4.0, "stock_gpus": 64}}]}],
        "workloads": [{"name": "chat", "model": "Llama-3.1-8B", "runtime": runtime,
                       "arrival": {"peak_rps": 10},
                       "input_tokens": {"p50": 1000, "p95": 1000, "p99": 1000},
                       "output_tokens": {"p50": 200, "p95": 200, "p99": 200},
                       "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
                       "allowed_gpus": ["H100-SXM"]}],
        "measured_csv": "measured.csv",
        "policy": {"as_of": "2026-10-01"},
    }), encoding="utf-8")
    return path


def test_a_vllm_sweep_becomes_a_measured_row(tmp_path: Path) -> None:
    out = tmp_path / "measured.csv"
    result = run(*sweep_files(tmp_path), "--gpu", "p5.48xlarge", "--tp", "1",
                 "--workload", "chat", *SLO_ARGS, "--out", str(out))
    assert result.exit_code == 0, result.output
    (row,) = load_measured_csv(out)
    assert (row.model, row.gpu, row.tp, row.runtime, row.precision.value, row.workload) == (
        "Llama-3.1-8B", "H100-SXM", 1, "vllm", "bf16", "chat")
    assert row.tested_peak_rps == pytest.approx(RATE)
    assert row.ttft_p95_ms == pytest.approx(1000)
    assert row.decode_p95_ms_per_token == pytest.approx(TPOT)
    assert row.max_stable_sequences == 40
    assert row.measured_on.isoformat() == "2026-09-21"
    assert row.source is not None and "interpolated between 3.95 and 5.9 req/s" in row.source
    assert "holds up to 4.925 req/s (interpolated" in result.output
    assert "precision assumed bf16" in result.output


def test_a_sweep_that_never_holds_exits_2_with_the_reason(tmp_path: Path) -> None:
    result = run(*sweep_files(tmp_path, NEVER), "--gpu", "H100", "--tp", "1",
                 "--workload", "chat", *SLO_ARGS)
    assert result.exit_code == 2
    assert "the SLO held at no tested load" in result.output
    assert "TTFT P95 1,500 ms > 1,000 ms" in result.output
    assert "Traceback" not in result.output


def test_rows_of_other_configurations_are_kept_and_a_foreign_file_never_replaced(
        tmp_path: Path) -> None:
    out = tmp_path / "measured.csv"
    common = [*sweep_files(tmp_path), "--workload", "chat", *SLO_ARGS, "--out", str(out)]
    assert run(*common, "--gpu", "H100", "--tp", "1").exit_code == 0
    assert run(*common, "--gpu", "H100", "--tp", "2").exit_code == 0
    assert run(*common, "--gpu", "H100", "--tp", "2").exit_code == 0  # same row: replaced
    assert sorted(r.tp for r in load_measured_csv(out)) == [1, 2]
    foreign = tmp_path / "notes.csv"
    foreign.write_text("a,b\n1,2\n", encoding="utf-8")
    result = run(*common[:-1], str(foreign), "--gpu", "H100", "--tp", "1")
    assert result.exit_code == 2 and "is not a measured-capacity CSV" in result.output
    assert foreign.read_text(encoding="utf-8") == "a,b\n1,2\n"


def test_a_file_that_names_no_engine_needs_a_runtime(tmp_path: Path) -> None:
    path = bf.write_json(tmp_path / "benchmarks.json", bf.guidellm_04(SWEEP))
    args = [str(path), "--gpu", "H100", "--tp", "1", "--workload", "chat", *SLO_ARGS]
    result = run(*args)
    assert result.exit_code == 2
    assert "do not say which engine served the test" in result.output and "--runtime" in (
        result.output)
    result = run(*args, "--runtime", "vllm-0.11.0", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["row"]["runtime"] == "vllm-0.11.0"
    assert data["row"]["tested_peak_rps"] == pytest.approx(RATE)
    assert [p["holds"] for p in data["points"]] == [True, True, False, False]


def test_the_scenario_gives_the_slo_and_warns_when_the_row_would_not_be_used(
        tmp_path: Path) -> None:
    sc = scenario(tmp_path, runtime="vllm-0.6.3")
    result = run(*sweep_files(tmp_path), "--gpu", "H100", "--tp", "1", "--scenario", str(sc))
    assert result.exit_code == 0, result.output
    assert "SLO (TTFT P95 1,000 ms, per-token P95 50 ms)" in result.output
    assert "the plan will not use this row for chat: runtime vllm differs from the " \
           "workload's vllm-0.6.3" in result.output


def test_unknown_names_are_refused_with_the_closest(tmp_path: Path) -> None:
    result = run(*sweep_files(tmp_path), "--gpu", "H10O", "--tp", "1", "--workload", "chat",
                 *SLO_ARGS)
    assert result.exit_code == 2 and "did you mean" in result.output
    result = run(*sweep_files(tmp_path), "--gpu", "H100", "--tp", "1", "--workload", "chat",
                 "--model", "Llama-9", *SLO_ARGS)
    assert result.exit_code == 2 and "`Llama-9` is not a catalog model" in result.output


# --- from a vLLM sweep to a plan that says "(measured)" -------------------------------------


def _workbook_pools(path: Path) -> list[dict[str, Any]]:
    book = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = list(book["Pools"].iter_rows(values_only=True))
    finally:
        book.close()  # a read-only workbook holds its file open until closed
    return [dict(zip(rows[0], r, strict=False)) for r in rows[1:]]


def test_a_plan_from_an_imported_sweep_uses_the_measured_rate(tmp_path: Path) -> None:
    sc = scenario(tmp_path)
    result = run(*sweep_files(tmp_path), "--gpu", "H100", "--tp", "1", "--scenario", str(sc),
                 "--out", str(tmp_path / "measured.csv"))
    assert result.exit_code == 0, result.output
    out = tmp_path / "plan"
    result = CliRunner().invoke(main, ["plan", str(sc), "--out", str(out)])
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    h100 = [a for a in plan["allocations"] if a["gpu"] == "H100-SXM" and a["tp"] == 1]
    assert h100 and all(a["capacity_source"] == "measured" for a in h100)
    assert [a["replica_capacity_rps"] for a in h100] == [pytest.approx(RATE)] * len(h100)
    # 10 req/s at 0.7 × 4.925 = 3.4475 req/s per replica: ceil(2.90) = 3 replicas, in every
    # slice of the (flat) day
    per_slice: dict[str | None, int] = {}
    for a in h100:
        per_slice[a["slice"]] = per_slice.get(a["slice"], 0) + a["replicas"]
    assert set(per_slice.values()) == {3}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"{RATE:,.3f} (measured)" in report
    # and says what the capacity model would have given for the configuration it overrides
    # (it said *measured* alone: only `capacity --explain` named the analytic figure)
    overrides = [line for line in report.splitlines()
                 if line.startswith("- chat, H100-SXM BF16 TP1 (1 GPU): measured vllm load "
                                    "test of 2026-09-21 (Llama-3.1-8B on H100-SXM TP1, bf16; "
                                    "measured.csv line 2; fleetplan import-bench: vLLM bench "
                                    "serve (vLLM \\>= 0.9) (vllm-rate2.json, ")]
    assert len(overrides) == 1 and overrides[0].endswith(" req/s"), report
    assert ("tested at input mean 1,000; output mean 200 tokens) overrides the analytic model: "
            in overrides[0])
    # plan.json names the row each measured rate comes from: file and line, date, load test
    assert {a["measured_row"] for a in h100} == {
        "measured.csv line 2; measured 2026-09-21; fleetplan import-bench: vLLM bench serve "
        "(vLLM >= 0.9) (vllm-rate2.json, vllm-rate4.json, vllm-rate6.json and 1 more); "
        "interpolated between 3.95 and 5.9 req/s; tested at input mean 1,000; output mean 200 "
        "tokens"}
    pools = _workbook_pools(out / "plan.xlsx")
    assert {p["Capacity"] for p in pools if p["GPU"] == "H100-SXM"} == {"Measured"}
    assert {p["Measured row (file and line, date, load test, lengths tested)"] for p in pools
            if p["GPU"] == "H100-SXM"} == {a["measured_row"] for a in h100}
    with (tmp_path / "measured.csv").open(encoding="utf-8") as fh:
        assert next(csv.reader(fh))[-1] == "source"


@pytest.mark.parametrize("command", ["profile", "calibrate"])
def test_commands_given_a_load_test_result_say_which_command_reads_it(
        tmp_path: Path, command: str) -> None:
    # A vLLM result used to pass for a Mooncake trace (profile) or be parsed as CSV (calibrate).
    (path,) = sweep_files(tmp_path, SWEEP[:1])
    result = CliRunner().invoke(main, [command, path])
    assert result.exit_code == 2, result.output
    assert "this is a load-test result (vLLM, AIPerf or GenAI-Perf)" in result.output
    assert "fleetplan import-bench" in result.output


def test_profile_given_a_guidellm_report_or_prometheus_export_says_what_it_is(
        tmp_path: Path) -> None:
    guidellm = bf.write_json(tmp_path / "benchmarks.json", bf.guidellm_04(SWEEP[:1]))
    result = CliRunner().invoke(main, ["profile", str(guidellm)])
    assert result.exit_code == 2 and "a GuideLLM benchmark report" in result.output
    prometheus = tmp_path / "metrics.json"
    prometheus.write_text('{"status": "success", "data": {"resultType": "matrix", '
                          '"result": []}}', encoding="utf-8")
    result = CliRunner().invoke(main, ["profile", str(prometheus)])
    assert result.exit_code == 2 and "fleetplan profile --prometheus" in result.output


def test_a_row_above_the_workloads_datasheet_ceiling_is_said_at_import(tmp_path: Path) -> None:
    """The sweep holds 4.925 req/s; the scenario's workload asks 20,000-token prompts, which an
    H100-SXM's 989 BF16 TFLOPS carries at most 989e12 ÷ (2 × 7.0e9 × 20,200) ≈ 3.5 req/s of:
    the test did not run the workload's lengths, and import-bench says so (the row is still
    written). Files that record their lengths (vLLM's token totals: 1,000 in a prompt) make
    the row stale outright; files that do not are checked against the datasheet ceiling."""
    sc = scenario(tmp_path)
    doc = yaml.safe_load(sc.read_text(encoding="utf-8"))
    doc["workloads"][0]["input_tokens"] = {"p50": 20000, "p95": 20000, "p99": 20000}
    sc.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "measured.csv"
    result = run(*sweep_files(tmp_path), "--gpu", "H100", "--tp", "1", "--scenario", str(sc),
                 "--out", str(out))
    assert result.exit_code == 0, result.output
    assert ("the plan will not use this row for chat: its test's input mean was 1,000 tokens, "
            "the workload's P50 is 20,000 (-95%") in result.output
    bare = []  # the same runs without their token totals
    for x in SWEEP:
        run_doc = bf.vllm_new(x)
        del run_doc["total_input_tokens"], run_doc["total_output_tokens"]
        bare.append(str(bf.write_json(tmp_path / f"bare-rate{x.load:g}.json", run_doc)))
    result = run(*bare, "--gpu", "H100", "--tp", "1", "--scenario", str(sc), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "for chat: tested_peak_rps 4.92" in result.output
    assert "above what the replica's compute (datasheet TFLOPS, P50 lengths) allows" in (
        result.output)
    assert load_measured_csv(out)
    # at the sweep's own lengths the same files warn of nothing
    assert "above what the replica's" not in run(
        *sweep_files(tmp_path), "--gpu", "H100", "--tp", "1", "--scenario", str(scenario(tmp_path))
    ).output
