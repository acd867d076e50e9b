"""The end-to-end SLO in what a planner reads (trust-s23 item 1): `slo.e2e_p95_ms` was planned,
but the workbook's Pools sheet, report.md's workloads table and `fleetplan capacity` showed no
end-to-end figure and not which SLO binds a row's rate, and a measured row whose own latencies
broke the end-to-end target kept its load test's rate (only `check` held it to the target)."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from models.capacity import CapacityRow
from models.common import CapacitySource, Precision
from models.loader import load_scenario
from solver.capacity.measured import stale_measurements, staleness
from solver.capacity.table import build_capacity_table
from solver.cli import main
from solver.outputs.slo_binding import binding_text, row_e2e_ms

#: a load test of tiny's chat on one H100: TTFT P95 900 ms, 40 ms a token, so a 300-token
#: answer (tiny's output P95) takes 900 + 299 × 40 = 12,860 ms end to end
MEASURED = {"model": "Llama-3.1-8B", "gpu": "H100-SXM", "runtime": "vllm", "precision": "bf16",
            "tp": 1, "workload": "chat", "max_stable_sequences": 64, "tested_peak_rps": 9.0,
            "ttft_p95_ms": 900, "decode_p95_ms_per_token": 40, "measured_on": "2026-11-20"}
MEASURED_E2E_MS = 900 + 299 * 40  # ms + tokens × ms/token = 12,860


def _tiny(tmp_path: Path, e2e_ms: float | None, measured: bool = False,
          name: str = "tiny") -> Path:
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    if e2e_ms is not None:
        data["workloads"][0]["slo"]["e2e_p95_ms"] = e2e_ms
    if measured:
        data["measured"] = [MEASURED]
        data.setdefault("policy", {})["as_of"] = "2026-12-01"
    path = tmp_path / f"{name}_{e2e_ms}_{measured}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _row(ttft_ms: float, tpot_ms: float, source: CapacitySource = CapacitySource.analytic
         ) -> CapacityRow:
    return CapacityRow(workload="chat", model="m", gpu="H100-SXM", runtime="vllm",
                       precision=Precision.bf16, tp=1, source=source, max_stable_sequences=10,
                       slo_rps=1.0, input_tokens_per_s=1000, output_tokens_per_s=200,
                       ttft_p95_ms=ttft_ms, tpot_p95_ms=tpot_ms, headroom=0.0)


# --- which SLO binds, by hand ------------------------------------------------------------------


def test_the_binding_slo_is_the_tightest_within_one_percent(tmp_path: Path) -> None:
    wl = load_scenario(_tiny(tmp_path, 20_000)).workloads[0]  # TTFT 1,000, TPOT 50, E2E 20,000
    # 500 + 299 × 49.8 = 15,390.2 ms: per-token 0.4 % left, TTFT 50 %, end-to-end 23 %
    row = _row(500, 49.8)
    assert row_e2e_ms(row, wl) == pytest.approx(15_390.2)
    assert binding_text(row, wl) == "per-token"
    # 900 + 299 × 63.9 = 20,006.1 ms would break it; 899 + 299 × 63.87 = 19,996.1 binds
    assert binding_text(_row(899, 63.87), wl) == "per-token BROKEN (+28%)"
    wide = load_scenario(_tiny(tmp_path, 20_000, name="wide")).workloads[0].model_copy(
        update={"slo": wl.slo.model_copy(update={"tpot_p95_ms": 100})})
    assert binding_text(_row(899, 63.87), wide) == "end-to-end"  # 19,996.1 / 20,000
    # nothing within 1 %: a rate limited by the KV cache (or a load test's rate)
    assert binding_text(_row(500, 40), wl) == "none (per-token 20% left)"
    # a row past the end-to-end target: 900 + 299 × 70 = 21,830 ms, +9 % (against TPOT 100)
    assert binding_text(_row(900, 70), wide) == "end-to-end BROKEN (+9%)"
    # a workload stating no end-to-end SLO has no such figure
    plain = load_scenario(_tiny(tmp_path, None)).workloads[0]
    assert row_e2e_ms(row, plain) is None
    assert binding_text(row, plain) == "per-token"


# --- a measured row past the end-to-end target -------------------------------------------------


def test_a_measured_row_past_the_end_to_end_slo_is_not_used_and_says_why(
        tmp_path: Path) -> None:
    """Its TTFT (900 of 1,000) and per-token (40 of 50) hold, but its 300-token answer takes
    12,860 ms against a 12,000-ms target: the row is stale, as one past TTFT or per-token is,
    the warning names the figure, and the analytic model sizes the configuration."""
    sc = load_scenario(_tiny(tmp_path, 12_000, measured=True))
    reason = staleness(sc, sc.measured[0])
    assert reason is not None
    assert ("its end-to-end P95 of a 300-token answer, 12,860 ms (TTFT 900 ms + 299 × "
            "per-token 40 ms) at 9 req/s, is above the workload's slo.e2e_p95_ms of 12,000 ms"
            ) in reason
    (warning,) = stale_measurements(sc)
    assert warning.startswith("measured[0] (chat on H100-SXM TP1, 2026-11-20): stale, not used: "
                              "its end-to-end P95")
    row = build_capacity_table(sc).row("chat", "H100-SXM", 1)
    assert row is not None and row.source is CapacitySource.analytic
    validated = CliRunner().invoke(main, ["validate", str(_tiny(tmp_path, 12_000, True))])
    assert validated.exit_code == 0 and "stale, not used: its end-to-end P95" in \
        validated.stderr
    # a target it holds (13,000 > 12,860): the row overrides the model as before
    held = load_scenario(_tiny(tmp_path, 13_000, measured=True))
    assert staleness(held, held.measured[0]) is None
    row = build_capacity_table(held).row("chat", "H100-SXM", 1)
    assert row is not None and row.source is CapacitySource.measured
    assert row.slo_rps == 9.0
    assert row_e2e_ms(row, held.workloads[0]) == MEASURED_E2E_MS


# --- the columns -------------------------------------------------------------------------------


def test_capacity_shows_the_end_to_end_p95_and_the_binding_slo(tmp_path: Path) -> None:
    """A 12,000-ms target binds tiny's H100 row (its TTFT/TPOT rate gives more end to end):
    the table gives the row's end-to-end P95 and names the end-to-end SLO as binding; a
    workload stating no target keeps the columns it had."""
    shown = CliRunner().invoke(main, ["capacity", str(_tiny(tmp_path, 12_000))])
    assert shown.exit_code == 0, shown.output
    header = next(line for line in shown.output.splitlines() if "Configuration" in line)
    assert "End-to-end P95 [ms]" in header and "Binding SLO" in header
    h100 = next(line for line in shown.output.splitlines() if "H100-SXM TP1" in line)
    assert h100.rstrip().endswith("end-to-end")
    row = build_capacity_table(load_scenario(_tiny(tmp_path, 12_000))).row("chat", "H100-SXM", 1)
    assert row is not None
    assert f"{row_e2e_ms(row, load_scenario(_tiny(tmp_path, 12_000)).workloads[0]):,.0f}" in h100
    plain = CliRunner().invoke(main, ["capacity", str(_tiny(tmp_path, None))])
    assert "End-to-end" not in plain.output and "Binding SLO" not in plain.output


def test_the_report_and_the_pools_sheet_show_the_end_to_end_p95(tmp_path: Path) -> None:
    path = _tiny(tmp_path, 12_000)
    out = tmp_path / "out"
    planned = CliRunner().invoke(main, ["plan", str(path), "--out", str(out), "--quiet",
                                        "--time-limit", "600"])  # a loaded machine
    assert planned.exit_code == 0, planned.output
    sc = load_scenario(path)
    row = build_capacity_table(sc).row("chat", "H100-SXM", 1)
    assert row is not None
    e2e_ms = row_e2e_ms(row, sc.workloads[0])
    assert e2e_ms is not None and 11_880 <= e2e_ms <= 12_000  # binds: within 1 %
    report = (out / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| Workload | Tenant"))
    assert header.rstrip(" |").endswith("End-to-end P95 / SLO [ms] | Binding SLO")
    chat = next(line for line in report.splitlines() if line.startswith("| chat | demo"))
    assert chat.rstrip(" |").endswith(f"{e2e_ms:,.0f} / 12,000 | end-to-end")
    pools = list(openpyxl.load_workbook(out / "plan.xlsx")["Pools"].iter_rows(values_only=True))
    cells = dict(zip(pools[0], pools[1], strict=True))
    assert cells["End-to-end P95 at SLO rate [ms]"] == pytest.approx(e2e_ms)
    assert cells["End-to-end P95 SLO [ms]"] == 12_000
    assert cells["Binding SLO"] == "end-to-end"
    # plan.json keeps every key it had
    assert json.loads((out / "plan.json").read_text())["status"] == "optimal"
