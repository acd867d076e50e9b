"""Workloads whose outputs are one token (embeddings, rerankers): no second token, so no
per-token time. They plan on the TTFT alone; ``slo.tpot_p95_ms`` is optional there and, if
given, neither sizes the fleet nor shows as binding (s21 F4: a 1,200-req/s embedding pool's
capacity rows showed the per-token P95 at its SLO, 0 % slack, and the meaningless SLO had to be
given). docs/capacity-model.md, "One-token outputs"."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from models.capacity import CapacityRow
from models.errors import InputError
from models.loader import load_scenario
from solver.capacity.table import configuration_row
from solver.cli import main
from solver.cli.slo_verdict import verdict_line
from solver.outputs.labels import NO_SECOND_TOKEN

#: The embedding pool's TTFT P95 SLO [ms].
TTFT_SLO_MS = 200.0


def _embed(tmp_path: Path, slo: dict[str, float], output_p95: int = 1) -> Path:
    """tiny.yaml's pool as an embedding: prompts of 300/1,200/2,000 tokens, outputs of
    ``output_p95`` tokens at every percentile up to P95 (P99 the same), ``slo`` as given, on
    H100-SXM only."""
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    w = data["workloads"][0]
    w.update(input_tokens={"p50": 300, "p95": 1200, "p99": 2000},
             output_tokens={"p50": 1, "p95": output_p95, "p99": output_p95}, slo=slo,
             allowed_gpus=["H100-SXM"])
    path = tmp_path / f"embed_{len(slo)}_{output_p95}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _row(path: Path) -> CapacityRow:
    sc = load_scenario(path)
    [w] = sc.workloads
    row = configuration_row(sc, w, sc.gpu("H100-SXM"), 1)
    assert isinstance(row, CapacityRow), row
    return row


def test_one_token_outputs_need_no_per_token_slo_and_plan_on_the_ttft(tmp_path: Path) -> None:
    without = _row(_embed(tmp_path, {"ttft_p95_ms": TTFT_SLO_MS}))
    # the rate is the TTFT's edge: its P95 there is the SLO (the per-token SLO bound first
    # before: Mistral-7B's pool of docs/capacity-model.md, "One-token outputs", had a TTFT P95
    # of 184 of 200 ms at H100-SXM TP2, and 40.5 req/s at TP1 where the TTFT allows 64.2)
    assert without.ttft_p95_ms == pytest.approx(TTFT_SLO_MS, rel=1e-3)
    assert without.headroom == pytest.approx(0.0, abs=1e-3)  # 1 − TTFT ÷ SLO, no per-token term
    # a per-token SLO given anyway, however tight, changes nothing: there is no second token
    for tpot_ms in (50.0, 1.0):
        given = _row(_embed(tmp_path, {"ttft_p95_ms": TTFT_SLO_MS, "tpot_p95_ms": tpot_ms}))
        assert given.slo_rps == without.slo_rps


def test_outputs_with_a_second_token_still_need_the_per_token_slo(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        load_scenario(_embed(tmp_path, {"ttft_p95_ms": TTFT_SLO_MS}, output_p95=2))
    assert "slo.tpot_p95_ms is required: outputs have a second token" in str(raised.value)


def test_capacity_shows_no_per_token_figure_for_one_token_outputs(tmp_path: Path) -> None:
    path = _embed(tmp_path, {"ttft_p95_ms": TTFT_SLO_MS, "tpot_p95_ms": 50.0})
    result = CliRunner().invoke(main, ["capacity", str(path)])
    assert result.exit_code == 0, result.output
    head, columns, first = result.stdout.splitlines()[:3]
    assert f"SLO TTFT 200 ms (P95), {NO_SECOND_TOKEN}" in head
    assert "TPOT" not in head
    # the per-token column holds "—" (it held the SLO, 50.0, as if binding), the slack 0 %:
    # the TTFT binds
    def cell(title: str) -> str:
        start = columns.index(title)
        return first[start:start + len(title)].strip()

    assert cell("Per-token P95 [ms]") == "—", (columns, first)
    assert cell("TTFT P95 [ms]") == "200"
    assert cell("Latency slack at SLO rate") == "0%"


def test_plan_and_report_say_no_per_token_slo(tmp_path: Path) -> None:
    path = _embed(tmp_path, {"ttft_p95_ms": TTFT_SLO_MS})
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    [row] = [line for line in report.splitlines() if line.startswith("| chat | Llama-3.1-8B")]
    assert "| 200/— |" in row
    contract = (out / "contract.yaml").read_text()
    assert "slo_tpot_p95_ms: null" in contract, contract
    # check's steady state: no per-token P95 (it showed the model's one pretend decode step)
    checked = CliRunner().invoke(main, ["check", str(path), "--fleet", str(out / "plan.json")])
    assert checked.exit_code == 0, checked.output
    lines = checked.stdout.splitlines()
    at = lines.index("steady state (busiest slice): utilization, predicted TTFT / TPOT P95")
    assert lines[at + 2].split()[0] == "chat" and lines[at + 2].split()[-1] == "—", lines[at:]


def test_a_replayed_one_token_workload_says_no_per_token_slo_not_inf() -> None:
    from solver.cli.slo_verdict import GroupP95, SloVerdict

    v = SloVerdict("per-token", "tpot_p95_ms", math.inf,
                   (GroupP95("all requests", math.nan, 0, 0, 0),))
    line = verdict_line(v)
    assert line == f"per-token P95: {NO_SECOND_TOKEN} (no request)"
    assert "inf" not in line
