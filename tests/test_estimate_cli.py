"""``fleetplan estimate`` and ``fleetplan capacity`` end to end through click."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli import main

KEYS = ["weights_gib", "kv_bytes_per_token", "kv_capacity_tokens", "max_stable_sequences",
        "ttft_ms", "tpot_ms", "output_tokens_per_s", "max_output_tokens_per_s", "source",
        "running_sequences", "queue_wait_ms", "costs_fitted_on"]

SCENARIO = """
name: cli-test
zones:
  - id: zone-a
    region: region-1
    offers:
      - gpu: H100-SXM
        reserved: {price_per_gpu_hour: 2.40, stock_gpus: 8}
        on_demand: {price_per_gpu_hour: 4.00, stock_gpus: 8}
      - gpu: L4
        on_demand: {price_per_gpu_hour: 0.80, stock_gpus: 8}
workloads:
  - name: chat
    model: Llama-3.1-70B
    precision: fp8
    runtime: vllm
    arrival: {peak_rps: 4}
    input_tokens: {p50: 1000, p95: 1500, p99: 2000}
    output_tokens: {p50: 200, p95: 300, p99: 400}
    slo: {ttft_p95_ms: 1500, tpot_p95_ms: 80}
    allowed_gpus: [L4, H100-SXM]
measured:
  - {model: Llama-3.1-70B, gpu: H100-SXM, runtime: vllm, precision: fp8, tp: 2, workload: chat,
     max_stable_sequences: 64, tested_peak_rps: 7.5, ttft_p95_ms: 800,
     decode_p95_ms_per_token: 45, measured_on: 2026-10-20}
  - {model: Llama-3.1-70B, gpu: H100-SXM, runtime: vllm-0.4, precision: fp8, tp: 4,
     workload: chat, max_stable_sequences: 64, tested_peak_rps: 9, ttft_p95_ms: 800,
     decode_p95_ms_per_token: 45, measured_on: 2026-10-20}
policy:
  as_of: "2026-11-01"
"""


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "cli.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def estimate_args(model: str = "Llama-3.1-70B", gpu: str = "H100-SXM", tp: str = "2",
                  *extra: str) -> list[str]:
    return ["estimate", "--model", model, "--gpu", gpu, "--precision", "fp8", "--tp", tp,
            "--input-tokens", "1500", "--output-tokens", "300", *extra]


def test_estimate_json_keys_and_hand_computed_figures() -> None:
    code, out, _ = run(*estimate_args("Llama-3.1-70B", "H100-SXM", "2", "--json"))
    assert code == 0
    data = json.loads(out)
    assert list(data) == KEYS
    # 70.55e9 parameters × 1 byte ÷ 2 GPUs ÷ 2^30 = 32.852 GiB per GPU
    assert data["weights_gib"] == pytest.approx(70.55e9 / 2 / 2**30)
    # FP8 KV: 80 layers × 2 × 8 KV heads × 128 × 1 byte = 163,840 bytes/token
    assert data["kv_bytes_per_token"] == 163_840
    # stable sequences = KV tokens ÷ (1500 + 300)
    assert data["max_stable_sequences"] == data["kv_capacity_tokens"] // 1800
    assert data["source"] == "analytic"
    assert 0 < data["output_tokens_per_s"] < data["max_output_tokens_per_s"]


def test_estimate_more_concurrency_more_throughput_slower_tokens() -> None:
    one = json.loads(run(*estimate_args("Llama-3.1-70B", "H100-SXM", "2", "--json"))[1])
    many = json.loads(run(*estimate_args("Llama-3.1-70B", "H100-SXM", "2", "--json",
                                         "--concurrency", "64"))[1])
    assert many["output_tokens_per_s"] > one["output_tokens_per_s"]
    assert many["tpot_ms"] > one["tpot_ms"]


def test_concurrency_beyond_the_kv_cache_queues_and_never_beats_the_maximum() -> None:
    """A new user saw 4,626 output tokens/s above the maximum of 4,360 and a TTFT of 129 ms at
    concurrency 1000 where the KV cache holds 377 sequences: only 377 run, the others wait."""
    args = ["estimate", "--model", "Llama-3.1-8B", "--gpu", "H100", "--precision", "bf16",
            "--input-tokens", "1000", "--output-tokens", "200", "--json", "--concurrency"]
    full = json.loads(run(*args, "1")[1])
    seqs = full["max_stable_sequences"]
    assert 1 < seqs < 1000
    at_seqs = json.loads(run(*args, str(seqs))[1])
    over = json.loads(run(*args, "1000")[1])
    assert at_seqs["queue_wait_ms"] == 0 and at_seqs["running_sequences"] == seqs
    assert over["running_sequences"] == seqs
    assert over["output_tokens_per_s"] == pytest.approx(over["max_output_tokens_per_s"])
    assert over["tpot_ms"] == pytest.approx(at_seqs["tpot_ms"])
    # Little's law: the 1000 − N others wait (1000 − N) ÷ X, X the requests/s of the N running
    requests_per_ms = over["output_tokens_per_s"] / 200 / 1000
    assert over["queue_wait_ms"] == pytest.approx((1000 - seqs) / requests_per_ms)
    assert over["ttft_ms"] == pytest.approx(at_seqs["ttft_ms"] + over["queue_wait_ms"])
    code, out, err = run(*args[:-2], "--concurrency", "1000")
    assert code == 0
    assert f"({seqs} running, {1000 - seqs} queued; means)" in out
    assert "queue for a slot" in err


def test_estimate_human_table() -> None:
    code, out, _ = run(*estimate_args())
    assert code == 0
    assert "KV capacity [tokens]" in out
    assert "Max output tokens/s" in out


def test_unknown_names_suggest_the_right_one() -> None:
    code, _, err = run(*estimate_args(model="Llama-3.1-75B"))
    assert code == 2
    assert "did you mean `Llama-3.1-70B`" in err
    code, _, err = run(*estimate_args(gpu="H300"))
    assert code == 2
    assert "unknown GPU `H300`" in err


def test_names_as_people_type_them_estimate_the_catalog_configuration() -> None:
    """The README says GPUs and models may be named H100, p5.48xlarge or by Hugging Face id;
    estimate refused `--gpu H100` (did you mean `H200`?) while a scenario took it."""
    want = json.loads(run(*estimate_args("Llama-3.1-70B", "H100-SXM", "2", "--json"))[1])
    for model, gpu in (("meta-llama/Llama-3.1-70B-Instruct", "H100"),
                       ("llama-3.1-70b", "p5.48xlarge")):
        code, out, err = run(*estimate_args(model, gpu, "2", "--json"))
        assert code == 0, err
        assert json.loads(out) == want
    code, out, _ = run(*estimate_args("meta-llama/Llama-3.1-70B-Instruct", "H100"))
    assert code == 0
    assert out.startswith("Llama-3.1-70B on H100-SXM TP2")


def test_a_configuration_that_does_not_fit_is_a_clear_error() -> None:
    code, _, err = run(*estimate_args(gpu="L4", tp="1"))
    assert code == 2
    assert "exceed" in err
    assert "Traceback" not in err


def test_a_tp_that_does_not_divide_the_heads_names_the_tps_that_do() -> None:
    # a new user got "try ... a smaller precision" for TP 3 on a 64-head model: no precision
    # changes the head count, the fix is a TP that divides it and fits the node
    code, _, err = run(*estimate_args(tp="3"))
    assert code == 2
    assert "does not divide" in err
    assert "use a TP of 1, 2, 4, 8 on H100-SXM" in err
    assert "precision" not in err.split("does not divide")[1]
    code, _, err = run(*estimate_args(gpu="L4", tp="1"))  # memory: precision is a fix
    assert "smaller precision" in err


def test_no_larger_tp_than_the_node_is_suggested() -> None:
    """405B BF16 on TP 8 H100 was told "try a larger TP": 8 is the node's every GPU."""
    code, _, err = run("estimate", "--model", "Llama-3.1-405B", "--gpu", "H100", "--precision",
                       "bf16", "--tp", "8", "--input-tokens", "1000", "--output-tokens", "200")
    assert code == 2
    assert "larger TP" not in err
    assert "no TP of H100-SXM's 8-GPU node holds it: use a lower precision (fp8 at TP 8" in err
    assert "or a GPU with more memory (H200 at TP 8" in err


def test_estimate_reports_a_matching_measurement(scenario_file: Path) -> None:
    code, out, _ = run(*estimate_args("Llama-3.1-70B", "H100-SXM", "2", "--json",
                                      "--scenario", str(scenario_file)))
    assert code == 0
    data = json.loads(out)
    assert data["source"] == "measured"
    assert (data["ttft_ms"], data["tpot_ms"], data["max_stable_sequences"]) == (800, 45, 64)
    assert data["output_tokens_per_s"] == pytest.approx(7.5 * 300)


def test_capacity_json_rows_sorted_and_measured(scenario_file: Path) -> None:
    code, out, _ = run("capacity", str(scenario_file), "--json")
    assert code == 0
    data = json.loads(out)
    rows = data["rows"]
    assert {r["workload"] for r in rows} == {"chat"}
    tp2 = next(r for r in rows if (r["gpu"], r["tp"]) == ("H100-SXM", 2))
    assert tp2["source"] == "measured"
    assert tp2["slo_rps"] == 7.5
    tp4 = next(r for r in rows if (r["gpu"], r["tp"]) == ("H100-SXM", 4))
    assert tp4["source"] == "analytic"  # its measured row ran another runtime: stale
    assert any("runtime vllm-0.4 differs" in w for w in data["warnings"])
    firm = [min(v for k, v in r["cost_per_million_tokens"].items() if k != "spot")
            for r in rows]
    assert firm == sorted(firm)
    assert any(r["gpu"] == "L4" and r["tp"] == 1 for r in data["rejected"])


def test_capacity_explain_lists_rejections(scenario_file: Path) -> None:
    code, out, err = run("capacity", str(scenario_file), "--explain")
    assert code == 0
    assert "rejected L4 TP1 (1 GPU): weights" in out
    assert "overrides the analytic model" in out
    assert "stale, not used" in err
    code, out, _ = run("capacity", str(scenario_file))
    assert "rejected" not in out


def test_validate_warns_about_stale_measured_rows(scenario_file: Path) -> None:
    code, _, err = run("validate", str(scenario_file))
    assert code == 0
    assert "measured[1] (chat on H100-SXM TP4, 2026-10-20): stale, not used" in err
    assert "measured[0] (chat on H100-SXM TP2, 2026-10-20): stale" not in err


def test_the_documented_estimate_figures_are_what_estimate_prints() -> None:
    """docs/capacity-model.md quoted 33,000 output tokens/s where estimate printed 23,294, and a
    model estimate does not know: each quoted row now carries its arguments and the figure."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "capacity-model.md").read_text(
        encoding="utf-8")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in doc.splitlines()
            if line.startswith("| ") and "| `--model " in line]
    assert len(rows) >= 6
    for _, arguments, figure, printed, _published in rows:
        code, out, err = run("estimate", *arguments.strip("`").split())
        assert code == 0, err
        line = next(x for x in out.splitlines() if x.startswith(figure))
        assert line[len(figure):].split()[0] == printed, (arguments, line)


def test_capacity_lists_the_gpus_a_zone_sells_and_names_the_rest_in_a_line(
        tmp_path: Path) -> None:
    """s21 F5: a workload without allowed_gpus listed every GPU type of the catalog (B200,
    MI300X, L40S …, priced "—") beside the two tiny.yaml's zone sells: 35 candidates, 6 of them
    placeable at all. The table keeps the sold ones; one line names the others; --json keeps
    every row."""
    import yaml

    from inputs import scenarios_dir

    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    del doc["workloads"][0]["allowed_gpus"]
    path = tmp_path / "tiny_all.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, out, _ = run("capacity", str(path))
    assert code == 0
    shown = {line.split()[0] for line in out.splitlines()[2:] if " TP" in line.split("(")[0]
             and "Predicted" in line}
    assert shown == {"H100-SXM", "L4"}
    [left] = [line for line in out.splitlines() if line.startswith("  left out")]
    named = left.split(": ", 1)[1].split(" (", 1)[0].split(", ")
    assert named == ["A100-40GB", "A100-80GB", "A10G", "B200", "H100-PCIe", "H200", "L40S",
                     "MI300X"]
    code, out, _ = run("capacity", str(path), "--json")
    assert code == 0
    assert {"B200", "L4", "H100-SXM"} <= {r["gpu"] for r in json.loads(out)["rows"]}
