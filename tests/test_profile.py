"""Trace profiles: hand-computed rates and percentiles, published summaries of the real traces,
and a workload block that validates as a scenario workload."""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from models.workload import Workload
from solver.cli import main
from solver.cli.profile import PASTE_HINT
from solver.replay.profile import (
    MIN_PEAK_MINUTES,
    prefix_reuse,
    profile_trace,
    workload_fields,
)
from solver.replay.traces import Trace, read_trace

DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces"


def _trace(times_s: Sequence[float], inputs: list[int] | None = None,
           outputs: list[int] | None = None, start_epoch_s: float | None = None,
           blocks: list[int] | None = None) -> Trace:
    n = len(times_s)
    return Trace(source="t", arrival_s=np.asarray(times_s, dtype=np.float64),
                 input_tokens=np.asarray(inputs or [10] * n, dtype=np.int64),
                 output_tokens=np.asarray(outputs or [5] * n, dtype=np.int64),
                 start_epoch_s=start_epoch_s,
                 prefix_block_ids=None if blocks is None else np.asarray(blocks, dtype=np.int64))


def _shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared trace {name} not present")
    return path


def test_minute_rates_by_hand() -> None:
    # Minute 0: 3 arrivals, minute 1: 6, minute 2: none, minute 3: 1, then 250 s (minute 4,
    # partial: left out). Rates [3, 6, 0, 1] / 60.
    times = [0, 10, 20, 60, 61, 62, 63, 64, 65, 190, 250]
    prof = profile_trace(_trace(times))
    assert prof.requests == 11
    assert prof.duration_s == 250.0
    assert prof.mean_rps == pytest.approx(11 / 250)
    assert prof.peak_minute_rps == pytest.approx(6 / 60)
    # P95 of sorted [0, 1, 3, 6]: position 0.95 × 3 = 2.85 → 3 + 0.85 × (6 − 3) = 5.55 → / 60.
    assert prof.p95_minute_rps == pytest.approx(5.55 / 60)
    assert prof.hourly_shape is None
    assert prof.prefix_reuse is None


def test_short_trace_uses_mean_rate() -> None:
    prof = profile_trace(_trace([0.0, 5.0, 10.0]))
    # Under a minute: 3 requests / 10 s = 0.3 req/s for mean, peak and P95.
    assert prof.peak_minute_rps == prof.p95_minute_rps == prof.mean_rps == pytest.approx(0.3)


def test_a_trace_too_short_for_a_busiest_minute_never_suggests_a_peak_below_its_mean() -> None:
    # 60 arrivals in the first whole minute (1 req/s), then 60 in the next 20 s (the last,
    # partial minute, left out of the minutes): mean 120 ÷ 79.5 s ≈ 1.51 req/s > the busiest
    # whole minute's 1.0. The block suggests the mean, and says it is a floor.
    times = [*range(60), *(60 + i / 3 for i in range(60))]
    prof = profile_trace(_trace(times))
    assert prof.peak_minute_rps == pytest.approx(1.0)
    assert prof.mean_rps == pytest.approx(120 / times[-1]) and prof.mean_rps > 1.0
    assert workload_fields(prof)["arrival"]["peak_rps"] == round(prof.mean_rps, 3)
    warning = prof.peak_warning()
    assert warning is not None and "below its mean rate" in warning and "floor" in warning


def test_a_few_minutes_warn_that_the_busiest_is_a_floor_and_enough_minutes_do_not() -> None:
    # three whole minutes at 1, 2 and 1 arrivals per second, then one arrival at 180 s
    def minutes(rates: Sequence[int]) -> list[float]:
        out: list[float] = []
        for m, rate in enumerate(rates):
            out += [m * 60 + i / rate for i in range(60 * rate)]
        return [*out, len(rates) * 60.0]

    short = profile_trace(_trace(minutes([1, 2, 1])))
    assert short.peak_minute_rps == pytest.approx(2.0) and short.mean_rps < 2.0
    assert workload_fields(short)["arrival"]["peak_rps"] == 2.0
    warning = short.peak_warning()
    assert warning is not None and "busiest of 3 minutes" in warning
    enough = profile_trace(_trace(minutes([1, 2] + [1] * (MIN_PEAK_MINUTES - 2))))
    assert enough.whole_minutes == MIN_PEAK_MINUTES
    assert enough.peak_warning() is None
    assert workload_fields(enough)["arrival"]["peak_rps"] == 2.0


def test_length_percentiles_by_hand() -> None:
    prof = profile_trace(_trace([0, 1, 2, 3, 4], inputs=[10, 20, 30, 40, 100],
                                outputs=[1, 1, 2, 2, 9]))
    # Inputs sorted [10, 20, 30, 40, 100]: mean 200 / 5 = 40; P50 = 30;
    # P95 at position 0.95 × 4 = 3.8 → 40 + 0.8 × 60 = 88; P99 at 3.96 → 40 + 0.96 × 60 = 97.6.
    assert prof.input_tokens.mean == 40.0
    assert prof.input_tokens.p50 == 30.0
    assert prof.input_tokens.p95 == pytest.approx(88.0)
    assert prof.input_tokens.p99 == pytest.approx(97.6)
    # Outputs: mean 15 / 5 = 3; P50 = 2.
    assert prof.output_tokens.mean == 3.0
    assert prof.output_tokens.p50 == 2.0


def test_prefix_reuse_by_hand() -> None:
    # Requests' blocks [0 1 2] [0 1 3] [0 4]: 8 blocks, 5 distinct, 3 seen before → 3 / 8.
    assert prefix_reuse(np.asarray([0, 1, 2, 0, 1, 3, 0, 4])) == pytest.approx(0.375)
    assert prefix_reuse(np.zeros(0, dtype=np.int64)) is None


def test_hourly_shape_of_a_two_day_trace() -> None:
    # Day 0: 3 requests (hours 0, 5, 12). Day 1 (busiest, 7 requests): 4 at 10:xx, 2 at 11:xx,
    # 1 at 23:xx → shape 1.0 at hour 10, 0.5 at 11, 0.25 at 23, zero elsewhere.
    day0 = [h * 3600.0 + 100 for h in (0, 5, 12)]
    day1 = [86400 + 10 * 3600 + k for k in (1, 2, 3, 4)] + [86400 + 11 * 3600 + 5,
                                                           86400 + 11 * 3600 + 6,
                                                           86400 + 23 * 3600 + 7]
    prof = profile_trace(_trace([*day0, *day1]))
    assert prof.hourly_shape is not None
    expected = [0.0] * 24
    expected[10], expected[11], expected[23] = 1.0, 0.5, 0.25
    assert list(prof.hourly_shape) == expected


def test_hourly_shape_uses_wall_clock_hours() -> None:
    # The trace starts at 1970-01-02 22:00 UTC: its first-hour requests fall in hour 22.
    times = [0.0, 1.0, 2.0, 3600.0 * 30]
    prof = profile_trace(_trace(times, start_epoch_s=86400 + 22 * 3600))
    assert prof.hourly_shape is not None
    assert prof.hourly_shape[22] == 1.0
    assert sum(prof.hourly_shape) == 1.0


def test_workload_block_validates_as_workload() -> None:
    trace = read_trace(DATA / "mooncake_conv_head200.jsonl")
    fields = workload_fields(profile_trace(trace))
    text = yaml.safe_dump(fields, sort_keys=False)
    block = yaml.safe_load(text) | {"name": "chat", "model": "Llama-3.1-8B",
                                    "slo": {"ttft_p95_ms": 2000, "tpot_p95_ms": 50}}
    wl = Workload.model_validate(block)
    assert wl.arrival is not None and wl.arrival.peak_rps > 0
    assert wl.input_tokens.p50 <= wl.input_tokens.p95 <= wl.input_tokens.p99
    assert 0 < wl.prefix_cache_hit_rate < 1


def test_azure_slice_matches_an_independent_count() -> None:
    path = DATA / "azure_conv_head300.csv"
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    prof = profile_trace(read_trace(path))
    assert prof.requests == len(rows) == 300
    inputs = [int(r["ContextTokens"]) for r in rows]
    outputs = [int(r["GeneratedTokens"]) for r in rows]
    assert prof.input_tokens.mean == pytest.approx(statistics.fmean(inputs))
    assert prof.output_tokens.mean == pytest.approx(statistics.fmean(outputs))
    assert prof.input_tokens.p50 == pytest.approx(statistics.median(inputs))
    # One whole minute in 84 s: its rate is the peak and the P95.
    assert prof.peak_minute_rps == prof.p95_minute_rps


@pytest.mark.parametrize(("name", "in_mean", "out_mean", "in_p99", "out_p99"), [
    ("AzureLLMInferenceTrace_conv.csv", 1155, 211, 4142, 601),
    ("AzureLLMInferenceTrace_code.csv", 2048, 28, 7436, 251),
])
def test_azure_traces_match_published_summary(name: str, in_mean: float, out_mean: float,
                                              in_p99: float, out_p99: float) -> None:
    prof = profile_trace(read_trace(_shared(name)))
    assert prof.input_tokens.mean == pytest.approx(in_mean, abs=0.5)
    assert prof.output_tokens.mean == pytest.approx(out_mean, abs=0.5)
    assert prof.input_tokens.p99 == pytest.approx(in_p99, abs=1)
    assert prof.output_tokens.p99 == pytest.approx(out_p99, abs=1)
    assert prof.prefix_reuse is None


def test_azure_conversation_rates() -> None:
    prof = profile_trace(read_trace(_shared("AzureLLMInferenceTrace_conv.csv")))
    assert prof.requests == 19_366
    # Published: 5.5 req/s over 58 minutes.
    assert prof.mean_rps == pytest.approx(5.5, abs=0.1)
    assert prof.duration_s == pytest.approx(58 * 60, abs=60)
    assert prof.mean_rps < prof.p95_minute_rps <= prof.peak_minute_rps


def test_mooncake_conversation_prefix_reuse() -> None:
    prof = profile_trace(read_trace(_shared("mooncake_conversation_trace.jsonl")))
    assert prof.requests == 12_031
    # Published: 37 % of prefix blocks repeat; input mean 12,035, output mean 343.
    assert prof.prefix_reuse == pytest.approx(0.37, abs=0.01)
    assert prof.input_tokens.mean == pytest.approx(12_035, abs=1)
    assert prof.output_tokens.mean == pytest.approx(343, abs=1)


def test_cli_json_keys_and_yaml_block() -> None:
    from click.testing import CliRunner

    from solver.cli import main

    path = str(DATA / "azure_conv_head300.csv")
    runner = CliRunner()
    res = runner.invoke(main, ["profile", path, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert list(data) == ["requests", "duration_s", "mean_rps", "peak_minute_rps",
                          "p95_minute_rps", "input_tokens", "output_tokens", "prefix_reuse",
                          "burstiness", "peak_rps", "warnings"]
    assert list(data["input_tokens"]) == ["mean", "p50", "p95", "p99", "p5"]
    # 300 requests over 1.4 min: the busiest whole minute (3.18 req/s) is below the mean
    # (3.57), so the suggested peak is the mean, and both outputs say it is a floor
    assert data["peak_minute_rps"] < data["mean_rps"] == data["peak_rps"]
    assert len(data["warnings"]) == 1 and "too short" in data["warnings"][0]
    assert data["requests"] == 300 and data["prefix_reuse"] is None
    text = runner.invoke(main, ["profile", path, "--format", "azure"]).output
    assert "  warning: the trace spans 1.4 min (1 whole minute): too short" in text
    block = yaml.safe_load(text.split(PASTE_HINT + "\n", 1)[1])
    assert block["arrival"]["peak_rps"] == round(data["mean_rps"], 3)
    wl = Workload.model_validate(block | {"name": "chat", "model": "m",
                                          "slo": {"ttft_p95_ms": 1, "tpot_p95_ms": 1}})
    assert wl.input_tokens.p50 == math.ceil(data["input_tokens"]["p50"])
    assert wl.output_tokens.p5 == math.floor(data["output_tokens"]["p5"])


def test_an_unknown_prefix_reuse_is_not_read_as_none() -> None:
    """Was "prefix reuse: none in trace" for an Azure trace, which carries no prefix block
    ids: read as "no reuse measured". It is unknown; the block leaves the field out (so the
    schema's 0 applies) and the line says so; a Mooncake trace's is measured."""
    from click.testing import CliRunner

    from solver.cli import main

    runner = CliRunner()
    azure = runner.invoke(main, ["profile", str(DATA / "azure_conv_head300.csv")]).output
    line = next(x for x in azure.splitlines() if x.startswith("  prefix reuse"))
    assert "none in trace" not in line
    assert "unknown: the trace has no prefix block ids" in line
    assert "prefix_cache_hit_rate" not in azure.split(PASTE_HINT + "\n", 1)[1]
    mooncake = runner.invoke(main, ["profile", str(DATA / "mooncake_conv_head200.jsonl")])
    measured = next(x for x in mooncake.output.splitlines() if x.startswith("  prefix reuse"))
    assert measured.endswith("): 5.8%") and "unknown" not in measured


def test_cli_bad_trace_is_a_clean_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from solver.cli import main

    bad = tmp_path / "bad.csv"
    bad.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,x,3\n")
    res = CliRunner().invoke(main, ["profile", str(bad)])
    assert res.exit_code == 2
    assert "line 2, column ContextTokens" in res.output


def test_the_table_shows_the_figures_the_block_holds() -> None:
    """Was: the Mooncake table showed P95 input `39,550` and the pasted block `p95: 39551` (the
    table rounded, the block rounds up so percentiles keep rising)."""
    from solver.cli.profile import render

    prof = profile_trace(_trace([float(t) for t in range(20)], inputs=list(range(1, 21)),
                                outputs=[3] * 10 + [4] * 10))
    assert not float(prof.input_tokens.p95).is_integer()  # a fractional percentile to round
    text = render(prof)
    block = yaml.safe_load(text.split(PASTE_HINT + "\n", 1)[1])
    for name in ("input", "output"):
        row = next(line.split() for line in text.splitlines() if line.split()[:1] == [name])
        fields = block[f"{name}_tokens"]
        assert row[1:] == [f"{fields['mean']:,.1f}",
                           *(f"{fields[p]:,}" for p in ("p50", "p95", "p99"))]


def test_the_hint_above_the_block_says_how_to_paste_it(tmp_path: Path) -> None:
    """Was: "add name, model and slo, then paste it under `workloads:`": nothing of the
    `- name:` that makes it a list item nor of how far its lines indent (pasted flush under
    `workloads:`, a block does not load). The hint's own example, the block indented as it
    says, loads as a scenario with the profile's figures."""
    from models.loader import load_scenario
    from solver.cli.profile import render

    prof = profile_trace(read_trace(DATA / "azure_conv_head300.csv"))
    text = render(prof)
    assert PASTE_HINT in text and "- name:" in PASTE_HINT and "indent" in PASTE_HINT
    block = text.split(PASTE_HINT + "\n", 1)[1]
    hint = PASTE_HINT.splitlines()
    example = [line.removeprefix("# ") for line in hint[hint.index("# workloads:"):-1]]
    assert hint[-1].startswith("#     arrival: …")  # stands for the block, 4 spaces in
    scenario = tmp_path / "pasted.yaml"
    scenario.write_text(
        "name: pasted\nprice_tables:\n"
        "  - {path: 'builtin:aws', zones: [use1-az1], gpus: [H100-SXM]}\n"
        + "".join(f"{line}\n" for line in example)
        + "".join(f"    {line}\n" for line in block.splitlines()))
    chat = load_scenario(scenario).workload("chat")
    assert chat.arrival is not None and chat.arrival.peak_rps == pytest.approx(
        yaml.safe_load(block)["arrival"]["peak_rps"])
    assert chat.input_tokens.p95 == yaml.safe_load(block)["input_tokens"]["p95"]


def _mooncake(path: Path, timestamps_ms: list[int]) -> Path:
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": 1000,
                                        "output_length": 100}) + "\n"
                            for t in timestamps_ms), encoding="utf-8")
    return path


def test_a_trace_recorded_in_batches_says_its_burst_figures_are_the_batching(
        tmp_path: Path) -> None:
    """Mooncake's conversation trace stamps about ten arrivals at once every 3 s (90 % of its
    gaps are 0 ms): its busiest second, SCV and followers were printed as traffic, no warning.
    Here 11 minutes of 10 arrivals every 3,000 ms: 9 of every 10 gaps are 0 → 90 % tied."""
    batched = _mooncake(tmp_path / "batched.jsonl",
                        [3000 * b for b in range(220) for _ in range(10)])
    result = CliRunner().invoke(main, ["profile", str(batched), "--json"])
    assert result.exit_code == 0, result.output
    (warning,) = [w for w in json.loads(result.stdout)["warnings"] if "batches" in w]
    assert warning.startswith("90% of the trace's arrivals have the previous arrival's very "
                              "timestamp (it records arrivals in batches, the batches 3 s apart")
    text = CliRunner().invoke(main, ["profile", str(batched)]).output
    assert "# warning: arrival.burst measures the trace's recorded batches" in text
    # the same arrivals 300 ms apart, one at a time: no batches, no warning
    spread = _mooncake(tmp_path / "spread.jsonl", [300 * i for i in range(2200)])
    result = CliRunner().invoke(main, ["profile", str(spread), "--json"])
    assert not [w for w in json.loads(result.stdout)["warnings"] if "batches" in w]


def test_validate_and_plan_warn_of_a_linked_trace_recorded_in_batches_as_profile_does(
        tmp_path: Path) -> None:
    """`profile` warned of a trace recorded in batches; `validate` and `plan` of a scenario
    linking it said nothing, though the workload is sized on those arrivals (its replayed
    window) and replayed on them. The same words begin both warnings
    (:meth:`TraceProfile.batched_arrivals`); the same arrivals one at a time give none."""
    from tests.plan_fixtures import chat_8b, h100_scenario_yaml

    batched = _mooncake(tmp_path / "batched.jsonl",
                        [3000 * b for b in range(220) for _ in range(10)])
    spread = _mooncake(tmp_path / "spread.jsonl", [300 * i for i in range(2200)])
    fact = profile_trace(read_trace(batched)).batched_arrivals()
    assert fact is not None and profile_trace(read_trace(spread)).batched_arrivals() is None
    runner = CliRunner()
    for trace in (batched, spread):
        scenario = tmp_path / f"{trace.stem}.yaml"
        scenario.write_text(h100_scenario_yaml(trace.stem, chat_8b(
            arrival={"peak_rps": 4, "trace": {"path": trace.name}})))
        checked = runner.invoke(main, ["validate", str(scenario)])
        planned = runner.invoke(main, ["plan", str(scenario), "--out", str(tmp_path / trace.stem),
                                       "--no-replay", "--quiet"])
        assert checked.exit_code == 0 and planned.exit_code == 0, planned.output
        for result in (checked, planned):
            said = [line for line in result.stderr.splitlines() if "in batches" in line]
            if trace is spread:
                assert said == []
                continue
            [line] = said
            assert line.startswith(f"warning: `chat` links {batched}: {fact}: it is sized on "
                                   "the replay of its window (trace window: batched.jsonl, ")
            assert line.endswith("the fleet may be sized for the recording, not the traffic: "
                                 "link a trace of the same traffic with finer timestamps, or "
                                 "leave arrival.trace out and give arrival.burst (else Poisson)")


# --- requests over the model's context (trust-s23 item 3) -------------------------------------


def test_profile_counts_the_requests_over_the_models_context(tmp_path: Path) -> None:
    """199 requests of 1,000 + 100 tokens and one of 131,000 + 100 = 131,100 > Llama-3.1-8B's
    131,072: the input P99 is 1,000 (numpy's rank 0.99 × 199 = 197.01 falls among the short
    ones), so a scenario with the block validates and the plan never hears of the long one —
    which the replay rejects. `profile --model` says how many, what share, and that they will
    be rejected; the YAML block carries the warning as a comment."""
    from click.testing import CliRunner

    from solver.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("time_s,input_tokens,output_tokens\n" + "".join(
        f"{i * 0.5},{131_000 if i == 77 else 1000},100\n" for i in range(200)))
    shown = CliRunner().invoke(main, ["profile", str(trace), "--model",
                                      "meta-llama/Llama-3.1-8B-Instruct"])
    assert shown.exit_code == 0, shown.output
    assert ("warning: 1 of 200 requests (0.5%) is longer than Llama-3.1-8B's context of "
            "131,072 tokens (input + output; the longest 131,100): they will be rejected, never "
            "truncated — no fleet of this model serves them; the block's input P99 (1,000) is "
            "under it, so a scenario with it validates") in shown.output
    assert ("# warning: 1 request (0.5%) is longer than Llama-3.1-8B's context: rejected, "
            "not planned (above)") in shown.output
    data = json.loads(CliRunner().invoke(main, ["profile", str(trace), "--model",
                                                "Llama-3.1-8B", "--json"]).stdout)
    assert data["over_context"] == {"model": "Llama-3.1-8B", "context_tokens": 131_072,
                                    "requests": 1, "share": 0.005, "longest_tokens": 131_100}
    # without the long one: said to fit; without --model: nothing said, the keys as before
    fits = tmp_path / "fits.csv"
    fits.write_text("time_s,input_tokens,output_tokens\n"
                    + "".join(f"{i * 0.5},1000,100\n" for i in range(200)))
    shown = CliRunner().invoke(main, ["profile", str(fits), "--model", "Llama-3.1-8B"])
    assert ("context: every request fits Llama-3.1-8B's 131,072 tokens (the longest 1,100, "
            "input + output)") in shown.output
    plain = CliRunner().invoke(main, ["profile", str(trace), "--json"])
    assert "over_context" not in json.loads(plain.stdout)
    assert "context" not in CliRunner().invoke(main, ["profile", str(trace)]).output
    bad = CliRunner().invoke(main, ["profile", str(trace), "--model", "Lama-3.1-8B"])
    assert bad.exit_code == 2 and "did you mean `Llama-3.1-8B`" in bad.output
