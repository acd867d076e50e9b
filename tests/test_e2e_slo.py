"""A stated `slo.e2e_p95_ms` is planned and checked (fresh-s21, H): a replica carries the
largest rate at which its TTFT P95 + (output P95 − 1) × per-token P95 holds the target
(docs/capacity-model.md, "The end-to-end SLO"); a target no configuration meets even at no load
is named; `simulate` gives it a verdict and exits 1 when it is missed. Until then the field was
read by nothing but a warning that said so."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from models.capacity import CapacityRow, RejectedConfig
from models.loader import load_scenario
from models.scenario import Scenario
from solver.capacity.perf import workload_perf
from solver.capacity.replica import LoadPoint, load_point, load_profile
from solver.capacity.table import build_capacity_table, configuration_row
from solver.cli import main

#: tiny's chat: output P95 300 tokens, so 299 per-token times after the first token
OUTPUT_P95 = 300


def _tiny(tmp_path: Path, e2e_ms: float | None, name: str = "tiny") -> Path:
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    assert data["workloads"][0]["output_tokens"]["p95"] == OUTPUT_P95
    if e2e_ms is not None:
        data["workloads"][0]["slo"]["e2e_p95_ms"] = e2e_ms
    path = tmp_path / f"{name}_{e2e_ms}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _h100_row(sc: Scenario) -> CapacityRow:
    row = configuration_row(sc, sc.workloads[0], sc.gpu("H100-SXM"), 1)
    assert isinstance(row, CapacityRow)
    return row


def _e2e_ms(sc: Scenario, rate_rps: float) -> float:
    """The end-to-end P95 of tiny's chat on one H100 at ``rate_rps``, by hand from the model's
    own TTFT and per-token P95s."""
    perf = workload_perf(sc, sc.workloads[0], sc.gpu("H100-SXM"), 1)
    assert not isinstance(perf, str)
    point = load_point(load_profile(perf, sc.workloads[0]), rate_rps)
    return point.ttft_p95_ms + (OUTPUT_P95 - 1) * point.tpot_p95_ms  # ms + tokens × ms/token


def test_an_e2e_slo_that_binds_lowers_the_rate_a_replica_carries(tmp_path: Path) -> None:
    free = _h100_row(load_scenario(_tiny(tmp_path, None)))
    assert "limited by tpot" in free.note or "limited by ttft" in free.note
    at_free_ms = _e2e_ms(load_scenario(_tiny(tmp_path, None)), free.slo_rps)
    idle_ms = _e2e_ms(load_scenario(_tiny(tmp_path, None)), 0.0)
    # a target between the unloaded end-to-end time and the one at the TTFT/TPOT rate
    target_ms = round((idle_ms + at_free_ms) / 2)
    assert idle_ms < target_ms < at_free_ms
    sc = load_scenario(_tiny(tmp_path, target_ms))
    bound = _h100_row(sc)
    assert bound.slo_rps < free.slo_rps * 0.99
    assert bound.note.startswith("analytic; the rate is limited by e2e")
    # at the row's rate the end-to-end P95 holds; 0.1 % above it, it breaks
    assert _e2e_ms(sc, bound.slo_rps) <= target_ms
    assert _e2e_ms(sc, bound.slo_rps * 1.001) > target_ms
    assert _e2e_ms(sc, bound.slo_rps) == pytest.approx(target_ms, rel=1e-3)
    # the latency slack counts it: the end-to-end SLO is the one met (almost) exactly
    assert bound.headroom == pytest.approx(0.0, abs=1e-3)
    shown = CliRunner().invoke(main, ["capacity", str(_tiny(tmp_path, target_ms)), "--explain"])
    assert shown.exit_code == 0, shown.output
    assert (f"SLO TTFT 1000 ms / TPOT 50 ms / end-to-end {target_ms:,} ms of a 300-token answer "
            "(P95)") in shown.output
    assert "H100-SXM TP1 (1 GPU): analytic; the rate is limited by e2e" in shown.output


def test_an_e2e_slo_that_does_not_bind_leaves_the_capacity_as_it_was(tmp_path: Path) -> None:
    free = build_capacity_table(load_scenario(_tiny(tmp_path, None)))
    # tiny's SLOs allow 1,000 + 299 × 50 = 15,950 ms: 60 s never binds
    loose = build_capacity_table(load_scenario(_tiny(tmp_path, 60_000)))
    assert [(r.gpu, r.tp, r.slo_rps, r.note) for r in loose.rows] == [
        (r.gpu, r.tp, r.slo_rps, r.note) for r in free.rows]
    assert loose.rejected == free.rejected
    # and it is no longer called unplanned: validate has no warning of it
    result = CliRunner().invoke(main, ["validate", str(_tiny(tmp_path, 60_000)), "--json"])
    assert result.exit_code == 0, result.output
    assert "e2e_warnings" not in json.loads(result.stdout)
    assert "e2e" not in result.stderr and "warning" not in result.stderr


def test_an_e2e_slo_no_configuration_meets_unloaded_is_named(tmp_path: Path) -> None:
    sc0 = load_scenario(_tiny(tmp_path, None))
    h100_idle_ms = _e2e_ms(sc0, 0.0)
    target_ms = 500.0  # far below: one decode step is several ms, × 299
    path = _tiny(tmp_path, target_ms)
    sc = load_scenario(path)
    rejected = configuration_row(sc, sc.workloads[0], sc.gpu("H100-SXM"), 1)
    assert isinstance(rejected, RejectedConfig)
    assert rejected.reason == (
        f"end-to-end time of a P95 answer (300 tokens) is {h100_idle_ms:,.0f} ms (TTFT "
        f"{_idle(sc).ttft_p95_ms:,.0f} ms + 299 × {_idle(sc).tpot_p95_ms:.1f} ms per token) > "
        f"SLO 500 ms even at no load, {h100_idle_ms - 500:,.0f} ms over")
    assert build_capacity_table(sc).rows == ()
    result = CliRunner().invoke(main, ["validate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (warning,) = json.loads(result.stdout)["slo_warnings"]
    # the fastest is the H100 (the L4's decode step is slower): its unloaded end-to-end time
    assert warning == (
        "`chat` cannot meet its end-to-end SLO (slo.e2e_p95_ms 500 ms): the fastest "
        "end-to-end time of a P95 answer (300 tokens: TTFT + 299 × per-token time) on any "
        f"allowed configuration is {h100_idle_ms:,.2f} ms even at no load (H100-SXM TP1 "
        f"(1 GPU)), {h100_idle_ms - 500:,.2f} ms over — raise slo.e2e_p95_ms to at least "
        f"{_round_up(h100_idle_ms):g} ms or allow faster GPUs (allowed_gpus, zone offers)")
    planned = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out"),
                                        "--quiet"])
    assert planned.exit_code == 1, planned.output
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["status"] == "infeasible"
    assert plan["diagnosis"][0]["message"].startswith(
        "`chat` cannot meet its end-to-end SLO (slo.e2e_p95_ms 500 ms)")


def _idle(sc: Scenario) -> LoadPoint:
    perf = workload_perf(sc, sc.workloads[0], sc.gpu("H100-SXM"), 1)
    assert not isinstance(perf, str)
    return load_point(load_profile(perf, sc.workloads[0]), 0.0)


def _round_up(ms: float) -> float:
    return math.ceil(ms * 10) / 10  # up to a tenth of a ms


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny_plan")
    result = CliRunner().invoke(main, ["plan", str(scenarios_dir() / "tiny.yaml"), "--out",
                                       str(out), "--quiet", "--time-limit", "600"])
    assert result.exit_code == 0, result.output
    return out / "plan.json"


def _simulate(tmp_path: Path, plan: Path, e2e_ms: float) -> tuple[int, dict[str, object]]:
    # one request every 0.5 s, 1,000 tokens in and 100 out, on tiny's one planned replica
    trace = tmp_path / "trace.csv"
    trace.write_text("time_s,input_tokens,output_tokens\n"
                     + "".join(f"{i * 0.5},1000,100\n" for i in range(60)))
    result = CliRunner().invoke(main, ["simulate", str(_tiny(tmp_path, e2e_ms, "sim")),
                                       "--fleet", str(plan), "--trace", str(trace), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_simulate_holds_the_replay_to_the_e2e_slo(tmp_path: Path, tiny_plan: Path) -> None:
    code, held = _simulate(tmp_path, tiny_plan, 60_000)
    assert code == 0
    by_slo = {v["slo"]: v for v in held["verdicts"]}  # type: ignore[union-attr]
    assert set(by_slo) == {"ttft_p95_ms", "tpot_p95_ms", "e2e_p95_ms"}
    assert by_slo["e2e_p95_ms"]["held"] and by_slo["e2e_p95_ms"]["target_ms"] == 60_000
    e2e_p95 = by_slo["e2e_p95_ms"]["groups"][0]["p95_ms"]
    # the replay's own figure: a 100-token answer takes its TTFT and 99 decode steps
    assert e2e_p95 > 99 * by_slo["tpot_p95_ms"]["groups"][0]["p95_ms"] * 0.9
    assert held["slo_attainment"] == 1.0
    code, missed = _simulate(tmp_path, tiny_plan, e2e_p95 / 2)
    assert code == 1
    by_slo = {v["slo"]: v for v in missed["verdicts"]}  # type: ignore[union-attr]
    assert by_slo["ttft_p95_ms"]["held"] and by_slo["tpot_p95_ms"]["held"]
    assert not by_slo["e2e_p95_ms"]["held"]
    assert missed["slo_held"] is False and missed["slo_attainment"] == 0.0


def test_plan_and_check_name_the_e2e_slo_where_it_binds(tmp_path: Path) -> None:
    sc0 = load_scenario(_tiny(tmp_path, None))
    target_ms = round((_e2e_ms(sc0, 0.0) + _e2e_ms(sc0, _h100_row(sc0).slo_rps)) / 2)
    path = _tiny(tmp_path, target_ms)
    out = tmp_path / "out"
    planned = CliRunner().invoke(main, ["plan", str(path), "--out", str(out), "--quiet",
                                        "--time-limit", "600"])  # a loaded machine
    assert planned.exit_code == 0, planned.output
    plan = json.loads((out / "plan.json").read_text())
    (used,) = {(a["gpu"], a["tp"]) for a in plan["allocations"]}
    assert used == ("H100-SXM", 1)  # tiny's plan: one H100 (the L4's decode is too slow)
    at_ms = _e2e_ms(load_scenario(path), _h100_row(load_scenario(path)).slo_rps)
    assert (f"- chat, H100-SXM BF16 TP1 (1 GPU): {at_ms:,.0f} / {target_ms:,.0f} ms — the "
            "end-to-end SLO binds") in (out / "report.md").read_text()
    checked = CliRunner().invoke(main, ["check", str(path), "--fleet", str(out / "plan.json"),
                                        "--json"])
    assert checked.exit_code == 0, checked.output
    (steady,) = [r for r in json.loads(checked.stdout)["rows"] if r["failure"] == "none"]
    assert steady["latency_holds"] is True and steady["e2e_p95_ms"] <= target_ms
    # the same fleet against a target 10 % under what it gives at that load: not held
    tight = _tiny(tmp_path, round(steady["e2e_p95_ms"] * 0.9), "tight")
    rechecked = CliRunner().invoke(main, ["check", str(tight), "--fleet", str(out / "plan.json")])
    assert "End-to-end P95 [ms]" in rechecked.output
    tight_rows = CliRunner().invoke(main, ["check", str(tight), "--fleet",
                                           str(out / "plan.json"), "--json"])
    (steady,) = [r for r in json.loads(tight_rows.stdout)["rows"] if r["failure"] == "none"]
    assert steady["latency_holds"] is False
    # the contract's conclusions rest on the target: without it they expire
    expired = CliRunner().invoke(main, ["check", str(_tiny(tmp_path, None)), "--contract",
                                        str(out / "contract.yaml")])
    assert f"SLO end-to-end P95 [ms] changed from {target_ms} to none" in expired.output
