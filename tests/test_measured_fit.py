"""A measured row whose model's weights cannot fit its GPUs is not used
(solver/capacity/measured.py, ``weights_do_not_fit``): measured beats the analytic model's
throughput, not arithmetic."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner, Result

from inputs import scenarios_dir
from models.loader import load_scenario
from solver.capacity.measured import kv_does_not_hold, stale_measurements, weights_do_not_fit
from solver.capacity.table import build_capacity_table
from solver.cli import main
from tests.test_measured_plausibility import _twenty_rps

SCENARIOS = scenarios_dir()


def _twenty_rps_on(tmp_path: Path, gpu: str, tp: int) -> Path:
    """twenty_rps (Llama-3.1-70B FP8) with its measured row moved to ``gpu`` at ``tp`` and that
    GPU offered beside the H100."""
    path = _twenty_rps(tmp_path, rows={"gpu": gpu, "tp": tp})
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["price_tables"][0]["gpus"] = ["H100-SXM", gpu]
    doc["workloads"][0].pop("allowed_gpus", None)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _import_bench(tmp_path: Path, scenario: Path, gpu: str, tp: int) -> str:
    """import-bench of two vLLM results (2 and 4 req/s) for Llama-3.1-70B FP8 on ``gpu`` at
    ``tp`` against ``scenario``: its output (exit 0 asserted)."""
    from tests.bench_files import Load, vllm_new, write_json

    files = [str(write_json(tmp_path / f"r{rate}.json", vllm_new(Load(rate, rate * 0.99, ttft,
                                                                          30.0))))
             for rate, ttft in ((2, 300.0), (4, 1400.0))]
    result = CliRunner().invoke(main, ["import-bench", *files, "--gpu", gpu, "--tp", str(tp),
                                       "--scenario", str(scenario), "--model", "Llama-3.1-70B",
                                       "--precision", "fp8"])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_row_whose_weights_exceed_the_gpu_is_not_a_candidate(tmp_path: Path) -> None:
    """70.55 B parameters × 1 byte (FP8) ÷ TP1 = 65.7 GiB on a 44.99 GiB L40S: said why, and the
    capacity table has no L40S TP1 row (before, the row made it a measured candidate)."""
    sc = load_scenario(_twenty_rps_on(tmp_path, "L40S", 1))
    why = weights_do_not_fit(sc, sc.measured[0])
    assert why is not None and "65.7 GiB on each GPU at TP1" in why
    assert "more than the L40S's 44.99 GiB" in why
    (warning,) = stale_measurements(sc)
    assert warning.startswith("measured[0] (twenty-rps on L40S TP1, 2026-10-15): not used: ")
    table = build_capacity_table(sc, sc.gpus_sold_or_held())
    assert table.row("twenty-rps", "L40S", 1) is None


def test_weights_that_fit_leave_the_row_used(tmp_path: Path) -> None:
    """The same row at TP2 on the L40S: 32.9 GiB a GPU fits its memory (the KV cache and the
    runtime's overhead are left to the measurement): used, the L40S TP2 row measured."""
    sc = load_scenario(_twenty_rps_on(tmp_path, "L40S", 2))
    assert weights_do_not_fit(sc, sc.measured[0]) is None
    table = build_capacity_table(sc, sc.gpus_sold_or_held())
    row = table.row("twenty-rps", "L40S", 2)
    assert row is not None and row.source.value == "measured"


def test_import_bench_says_the_plan_will_not_use_it(tmp_path: Path) -> None:
    output = _import_bench(tmp_path, _twenty_rps_on(tmp_path, "L40S", 1), "L40S", 1)
    assert "the plan will not use this row for twenty-rps: " in output
    assert "Llama-3.1-70B's FP8 weights are 65.7 GiB on each GPU at TP1" in output


def test_import_bench_says_a_tp_no_node_holds_is_not_used(tmp_path: Path) -> None:
    """`--tp 16` on the 8-GPU H100 node: validate says "not used: TP16 is not a candidate
    degree"; import-bench --scenario, which promises the reason the plan would not use its
    row, said nothing of it before."""
    output = _import_bench(tmp_path, SCENARIOS / "twenty_rps.yaml", "H100", 16)
    assert "TP16 is not a candidate degree on H100-SXM (1, 2, 4, 8 up to 8 per node)" in output


def test_a_row_on_a_gpu_no_zone_sells_is_said_not_used(tmp_path: Path) -> None:
    """A team's H200 load test beside a scenario that buys H100s only: validate listed it as
    used; a plan cannot place it. Said, with where it still counts (check --fleet)."""
    path = _twenty_rps_on(tmp_path, "H200", 2)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["price_tables"][0]["gpus"] = ["H100-SXM"]
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    sc = load_scenario(path)
    (warning,) = stale_measurements(sc)
    assert warning == ("measured[0] (twenty-rps on H200 TP2, 2026-10-15): not used: no zone of "
                       "the scenario sells H200 and no inventory holds it, so a plan cannot "
                       "place it (a `check --fleet` of nodes holding it uses the row)")
    assert stale_measurements(load_scenario(_twenty_rps_on(tmp_path, "H200", 2))) == []


def _tested_at(tmp_path: Path, input_p95: int, output_p95: int) -> Path:
    """twenty_rps (1,500 + 300 tokens) with its row of 72 sequences moved to the L40S at TP2
    and tested at ``input_p95`` + ``output_p95`` tokens, under
    ``policy.measured_length_tolerance: 1.5`` (the lengths check lets it through)."""
    path = _twenty_rps_on(tmp_path, "L40S", 2)
    rows = tmp_path / "rows.csv"
    header, row = rows.read_text(encoding="utf-8").split()
    rows.write_text(f"{header},input_tokens_p95,output_tokens_p95\n"
                    f"{row},{input_p95},{output_p95}\n", encoding="utf-8")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc.setdefault("policy", {})["measured_length_tolerance"] = 1.5
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_a_row_whose_sequences_the_kv_cache_cannot_hold_is_not_used(tmp_path: Path) -> None:
    """F7 (findings s23): a row tested at short lengths, let through by a loose length
    tolerance, ran more sequences than the replica's KV cache holds at the workload's. Here
    72 sequences of 500 + 100 tokens; at 1,500 + 300 the L40S TP2 holds 44: 44.99 GiB − 32.9
    weights − 3.7 overhead − 2.2 margin = 6.1 GiB a GPU ÷ 81,920 bytes a token (80 layers × 8
    KV heads × 128 × 2 (K and V) × 1 byte (FP8) ÷ 2 GPUs) = 80,459 tokens ÷ 1,800 = 44. Not
    used, said with the arithmetic; the L40S TP2 row is the analytic model's."""
    sc = load_scenario(_tested_at(tmp_path, 500, 100))
    why = kv_does_not_hold(sc, sc.measured[0])
    assert why is not None
    assert "its 72 concurrent sequences do not fit" in why
    assert "1,500 + 300 = 1,800 tokens a sequence, of which the KV cache holds 44" in why
    assert "81,920 bytes a token = 80,459 tokens; its test held at most 72 × 600 = 43,200" in why
    (warning,) = stale_measurements(sc)
    assert warning.startswith("measured[0] (twenty-rps on L40S TP2, 2026-10-15): not used: its "
                              "72 concurrent")
    row = build_capacity_table(sc, sc.gpus_sold_or_held()).row("twenty-rps", "L40S", 2)
    assert row is None or row.source.value == "analytic"


def test_a_row_tested_at_the_workloads_lengths_beats_the_models_kv(tmp_path: Path) -> None:
    """The same 72 sequences tested at the workload's 1,500 + 300 tokens: its test held
    72 × 1,800 = 129,600 tokens of KV, more than the model's 80,459 (its overhead and margin
    are the model's assumptions, a measurement may beat them): used."""
    sc = load_scenario(_tested_at(tmp_path, 1500, 300))
    assert kv_does_not_hold(sc, sc.measured[0]) is None
    row = build_capacity_table(sc, sc.gpus_sold_or_held()).row("twenty-rps", "L40S", 2)
    assert row is not None and row.source.value == "measured"


def _two_workloads(tmp_path: Path, first_model: str) -> Path:
    """twenty_rps with its workload on ``first_model`` and a second, ``small``, on
    Llama-3.1-8B."""
    path = _twenty_rps(tmp_path, rows={"model": first_model}, workload={"model": first_model})
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["workloads"].append({**doc["workloads"][0], "name": "small", "model": "Llama-3.1-8B"})
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _import_without_workload(tmp_path: Path, scenario: Path) -> Result:
    """import-bench of the files' sweep (meta-llama/Llama-3.1-8B-Instruct) against
    ``scenario``, no --workload, no --model."""
    from tests.bench_files import Load, vllm_new, write_json

    files = [str(write_json(tmp_path / f"r{rate}.json", vllm_new(Load(rate, rate * 0.99, ttft,
                                                                          30.0))))
             for rate, ttft in ((2, 300.0), (4, 1400.0))]
    return CliRunner().invoke(main, ["import-bench", *files, "--gpu", "H100", "--tp", "2",
                                     "--scenario", str(scenario), "--precision", "fp8"])


def test_import_bench_picks_the_only_workload_of_the_files_model(tmp_path: Path) -> None:
    """F7 (findings s23): `import-bench --scenario` of a scenario with two workloads required
    --workload even where one alone serves the files' model (the files say
    meta-llama/Llama-3.1-8B-Instruct; twenty-rps is on Llama-3.1-70B, small on the 8B)."""
    result = _import_without_workload(tmp_path, _two_workloads(tmp_path, "Llama-3.1-70B"))
    assert result.exit_code == 0, result.output
    assert "workload small, " in result.output
    assert ("note: workload small: the scenario's only workload of Llama-3.1-8B, the "
            "files' model (--workload to choose another)") in result.output


def test_import_bench_still_asks_which_of_two_workloads_of_the_files_model(
        tmp_path: Path) -> None:
    result = _import_without_workload(tmp_path, _two_workloads(tmp_path, "Llama-3.1-8B"))
    assert result.exit_code == 2
    assert "several workloads of Llama-3.1-8B, the files' model" in result.output
    assert "give --workload, one of twenty-rps, small" in result.output
