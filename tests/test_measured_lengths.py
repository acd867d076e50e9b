"""The token lengths a measured row was tested at: read from the load-test files, recorded on the
row, and held to the workload's (solver/capacity/measured.py, ``length_mismatches``).

A new user's measured row kept standing after the workload's prompts grew: the row recorded no
lengths, so nothing could tell that its test ran other requests than the workload sends.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from models.common import CapacitySource
from models.loader import load_scenario
from solver.capacity.bench.formats import read_bench_file
from solver.capacity.measured import provenance, stale_measurements, staleness, unknown_lengths
from solver.capacity.table import build_capacity_table
from solver.cli import main
from solver.outputs.contract import check_contract
from tests import bench_files as bf
from tests.test_bench_readers import SWEEP

SCENARIOS = scenarios_dir()
LENGTHS = {"input_tokens_p50": 1500, "input_tokens_p95": 1500, "output_tokens_p50": 300,
           "output_tokens_p95": 300}


# --- read from the files ---------------------------------------------------------------------


def test_vllm_totals_give_the_mean_lengths(tmp_path: Path) -> None:
    # the builder sends 1,000-token prompts and 200-token outputs: totals ÷ completed
    (point,) = read_bench_file(bf.write_json(tmp_path / "r.json", bf.vllm_new(SWEEP[0])))
    assert point.input_tokens is not None and point.output_tokens is not None
    assert (point.input_tokens.mean, point.input_tokens.p50) == (1000.0, None)
    assert (point.output_tokens.mean, point.output_tokens.p95) == (200.0, None)


def test_vllm_per_request_lengths_give_median_and_p95(tmp_path: Path) -> None:
    doc = bf.vllm_old(SWEEP[0], samples=40)
    doc["input_lens"] = list(range(1, 41))  # 1 … 40 tokens: median 20.5, P95 38.05 (numpy)
    (point,) = read_bench_file(bf.write_json(tmp_path / "r.json", doc))
    assert point.input_tokens is not None
    assert point.input_tokens.p50 == pytest.approx(20.5)
    assert point.input_tokens.p95 == pytest.approx(1 + 0.95 * 39)
    assert point.input_tokens.mean == pytest.approx(20.5)


def test_guidellm_and_aiperf_distributions_give_mean_median_and_p95(tmp_path: Path) -> None:
    # the builders' distributions: GuideLLM mean 1,000, median/p50 0.6 × p95, p95 1,000;
    # AIPerf avg 1,000, p50 0.6 × 1,000, p95 1,000
    (g, *_) = read_bench_file(bf.write_json(tmp_path / "g.json", bf.guidellm_04(SWEEP)))
    (a,) = read_bench_file(bf.write_json(tmp_path / "a.json", bf.aiperf(SWEEP[0])))
    # AIPerf 0.1 tags them isl and osl, under records
    (a01,) = read_bench_file(bf.write_json(tmp_path / "a01.json", bf.aiperf_01(SWEEP[0])))
    for point in (g, a, a01):
        assert point.input_tokens is not None and point.output_tokens is not None
        assert (point.input_tokens.mean, point.input_tokens.p50, point.input_tokens.p95) == (
            pytest.approx(1000), pytest.approx(600), pytest.approx(1000))
        assert point.output_tokens.p95 == pytest.approx(200)


def test_import_bench_writes_the_lengths_on_the_row(tmp_path: Path) -> None:
    files = [str(bf.write_json(tmp_path / f"r{x.load:g}.json", bf.vllm_new(x))) for x in SWEEP]
    out = tmp_path / "measured.csv"
    result = CliRunner().invoke(main, ["import-bench", *files, "--gpu", "H100", "--tp", "1",
                                       "--workload", "chat", "--slo-ttft-ms", "1000",
                                       "--slo-tpot-ms", "50", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["row"]
    assert (row["input_tokens_mean"], row["output_tokens_mean"]) == (1000.0, 200.0)
    assert "input_tokens_mean" in out.read_text(encoding="utf-8").splitlines()[0]


# --- held to the workload's ------------------------------------------------------------------


def _scenario(tmp_path: Path, row: dict[str, object], workload: dict[str, object] | None = None,
              policy: dict[str, object] | None = None, name: str = "s") -> Path:
    """twenty_rps (1,500-token prompts, 300-token outputs, fixed) with its measured row inline,
    changed as given, written to ``name``.yaml."""
    doc = yaml.safe_load((SCENARIOS / "twenty_rps.yaml").read_text(encoding="utf-8"))
    doc.pop("measured_csv")
    doc["measured"] = [{"model": "Llama-3.1-70B", "gpu": "H100-SXM", "runtime": "vllm",
                        "precision": "fp8", "tp": 2, "workload": "twenty-rps",
                        "max_stable_sequences": 72, "tested_peak_rps": 18, "ttft_p95_ms": 1000,
                        "decode_p95_ms_per_token": 50, "measured_on": "2026-10-15", **row}]
    doc["workloads"][0].update(workload or {})
    doc["policy"] = {**doc.get("policy", {}), **(policy or {})}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _source(sc_path: Path) -> CapacitySource:
    sc = load_scenario(sc_path)
    row = build_capacity_table(sc).row("twenty-rps", "H100-SXM", 2)
    assert row is not None
    return row.source


def test_a_row_tested_at_the_workloads_lengths_stands(tmp_path: Path) -> None:
    path = _scenario(tmp_path, LENGTHS)
    assert staleness(load_scenario(path), load_scenario(path).measured[0]) is None
    assert _source(path) is CapacitySource.measured


def test_longer_prompts_than_the_test_make_the_row_stale(tmp_path: Path) -> None:
    """The workload's prompts grew to 2,000 tokens (P50 and P95); the row was tested at 1,500:
    1,500 ÷ 2,000 − 1 = −25 %, beyond the default ±20 %: stale, said why, and the plan's rate
    is the model's."""
    grown = {"input_tokens": {"p50": 2000, "p95": 2000, "p99": 2000}}
    path = _scenario(tmp_path, LENGTHS, grown)
    sc = load_scenario(path)
    reason = staleness(sc, sc.measured[0])
    assert reason is not None
    assert ("its test's input P50 was 1,500 tokens, the workload's P50 is 2,000 (-25%, beyond "
            "policy.measured_length_tolerance ±20%") in reason
    assert "input P95 was 1,500 tokens, the workload's P95 is 2,000" in reason
    (warning,) = stale_measurements(sc)
    assert warning.startswith("measured[0] (twenty-rps on H100-SXM TP2, 2026-10-15): stale, "
                              "not used: its test's input P50")
    assert _source(path) is CapacitySource.analytic
    # validate prints it as other expiries are
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0 and "stale, not used: its test's input P50" in result.stderr


def test_the_tolerance_is_the_policys(tmp_path: Path) -> None:
    """Outputs 300 → 350 tokens: +16.7 % of the workload's 350 is within ±20 % and fresh;
    with ``measured_length_tolerance: 0.1`` the same row is stale on its output P50 and P95."""
    longer = {"output_tokens": {"p50": 350, "p95": 350, "p99": 350}}
    assert _source(_scenario(tmp_path, LENGTHS, longer)) is CapacitySource.measured
    tight = _scenario(tmp_path, LENGTHS, longer, {"measured_length_tolerance": 0.1}, "tight")
    sc = load_scenario(tight)
    reason = staleness(sc, sc.measured[0])
    assert reason is not None and "its test's output P50 was 300 tokens, the workload's P50 " \
        "is 350 (-14%, beyond policy.measured_length_tolerance ±10%" in reason
    assert "input" not in reason
    assert _source(tight) is CapacitySource.analytic


def test_a_row_with_only_a_mean_is_held_to_the_workloads_mean_else_its_p50(
        tmp_path: Path) -> None:
    mean_only = {"input_tokens_mean": 1500, "output_tokens_mean": 300}
    assert _source(_scenario(tmp_path, mean_only)) is CapacitySource.measured
    skewed = {"input_tokens": {"p50": 1000, "p95": 4000, "p99": 5000, "mean": 2000}}
    sc = load_scenario(_scenario(tmp_path, mean_only, skewed))
    reason = staleness(sc, sc.measured[0])
    assert reason is not None and "input mean was 1,500 tokens, the workload's mean is 2,000" \
        in reason
    no_mean = {"input_tokens": {"p50": 1000, "p95": 4000, "p99": 5000}}
    sc = load_scenario(_scenario(tmp_path, mean_only, no_mean))
    reason = staleness(sc, sc.measured[0])
    assert reason is not None and "input mean was 1,500 tokens, the workload's P50 is 1,000" \
        in reason


def test_a_row_without_lengths_says_it_cannot_tell(tmp_path: Path) -> None:
    path = _scenario(tmp_path, {"input_tokens_p50": 1500, "input_tokens_p95": 1500})
    sc = load_scenario(path)
    (note,) = unknown_lengths(sc)
    assert note.startswith("measured[0] (twenty-rps on H100-SXM TP2, 2026-10-15): records no "
                           "output token lengths")
    assert unknown_lengths(load_scenario(_scenario(tmp_path, LENGTHS, name="both"))) == []
    result = CliRunner().invoke(main, ["validate", "--json", str(path)])
    assert result.exit_code == 0
    assert note in json.loads(result.stdout)["measured_warnings"]
    # a row that cannot know its lengths is still used (nothing says it is wrong)
    assert _source(path) is CapacitySource.measured


def test_a_contract_on_a_measured_row_expires_when_the_lengths_move(tmp_path: Path) -> None:
    """The plan's contract holds while the workload's lengths are the test's; a workload whose
    median prompt grew 1,500 → 2,000 (its P95 as it was) expires it with the row's reason."""
    path = _scenario(tmp_path, LENGTHS, {"input_tokens": {"p50": 1500, "p95": 2000,
                                                           "p99": 2000}},
                     {"measured_length_tolerance": 0.4})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    contract = out / "contract.yaml"
    assert "measured_row: s.yaml measured[0]; measured 2026-10-15" in contract.read_text(
        encoding="utf-8")
    assert check_contract(contract, load_scenario(path)) == []
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["workloads"][0]["input_tokens"] = {"p50": 2000, "p95": 2000, "p99": 2000}
    doc["policy"]["measured_length_tolerance"] = 0.2
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    (expired,) = check_contract(contract, load_scenario(path))
    assert any(r.startswith("its test's input P50 was 1,500 tokens, the workload's P50 is "
                            "2,000") for r in expired.reasons), expired.reasons


# --- where a row comes from ------------------------------------------------------------------


def test_each_row_names_the_file_and_place_it_was_read_from(tmp_path: Path) -> None:
    sc = load_scenario(SCENARIOS / "twenty_rps.yaml")
    (row,) = sc.measured
    assert row.origin == "twenty_rps_measured.csv line 2"
    assert provenance(row) == ("twenty_rps_measured.csv line 2; measured 2026-10-15; token "
                               "lengths tested not recorded")
    inline = load_scenario(_scenario(tmp_path, LENGTHS))
    assert inline.measured[0].origin == "s.yaml measured[0]"
    assert provenance(inline.measured[0]).endswith(
        "tested at input P50 1,500, P95 1,500; output P50 300, P95 300 tokens")
