"""An SLO that no configuration meets is named by `validate`, `compare` and `sweep` as `plan`
names it (qa3 F8: `validate` said "valid", and compare and sweep only "infeasible")."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from solver.cli import main

#: tiny's chat, and a copy of it whose per-token SLO no GPU of tiny meets even at no load
STRICT_TPOT_MS = 0.5


@pytest.fixture
def strict(tmp_path: Path) -> Path:
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    chat = data["workloads"][0]
    data["workloads"].append({**chat, "name": "strict",
                              "slo": {**chat["slo"], "tpot_p95_ms": STRICT_TPOT_MS}})
    path = tmp_path / "strict.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_validate_warns_of_an_slo_nothing_meets(strict: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(strict), "--json"])
    assert result.exit_code == 0, result.output  # well-formed: plan says infeasible, not bad
    warnings = json.loads(result.stdout)["slo_warnings"]
    assert len(warnings) == 1
    assert warnings[0].startswith("`strict` cannot meet its per-token SLO (slo.tpot_p95_ms 0.5 ms)")
    assert f"warning: {warnings[0]}" in result.stderr
    tiny = CliRunner().invoke(main, ["validate", str(scenarios_dir() / "tiny.yaml"), "--json"])
    assert "slo_warnings" not in json.loads(tiny.stdout) and "warning" not in tiny.stderr


def test_compare_says_which_slo_no_configuration_meets(strict: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.xlsx"
    result = CliRunner().invoke(main, ["compare", str(strict), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("S1 tiny: no fleet meets every requirement:")
    assert lines[at + 1].startswith("  - `strict` cannot meet its per-token SLO "
                                    "(slo.tpot_p95_ms 0.5 ms)")
    assert "raise slo.tpot_p95_ms to at least" in lines[at + 1]
    frame = pd.read_excel(out, sheet_name="Comparison", index_col=0)
    assert "cannot meet its per-token SLO" in frame.loc["What cannot be met"].iloc[0]


def test_sweep_says_which_slo_no_configuration_meets(strict: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, [
        "sweep", str(strict), "--vary", "workloads.strict.slo.tpot_p95_ms=0.5,50",
        "--out", str(out), "--quiet", "--workers", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("no fleet in 1 variant (1):")
    assert lines[at + 1].startswith("  - `strict` cannot meet its per-token SLO")
    frame = pd.read_csv(out / "sweep.csv")
    assert list(frame["status"]) == ["infeasible", "optimal"]
    assert "slo.tpot_p95_ms 0.5 ms" in frame["diagnosis"][0]
    assert pd.isna(frame["diagnosis"][1])


@pytest.mark.parametrize("how", [[], ["--solver", "cbc"], ["share_nodes=false"]])
def test_a_scenario_whose_only_workload_no_configuration_serves_is_infeasible(
        how: list[str], tmp_path: Path) -> None:
    """With no configuration left at all the program has no columns: HiGHS calls it empty, with
    no status of its rows; the plan was `time_limit` with no fleet, and `plan` then said "this
    is a bug in fleetplan" (exit 3) instead of naming the SLO."""
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    assert len(data["workloads"]) == 1
    data["workloads"][0]["slo"]["tpot_p95_ms"] = STRICT_TPOT_MS
    if how == ["share_nodes=false"]:
        data["policy"]["share_nodes"] = False
        how = []
    path = tmp_path / "only.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out"),
                                       "--quiet", *how])
    assert result.exit_code == 1, result.output
    assert "this is a bug" not in result.output
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["status"] == "infeasible"
    assert plan["diagnosis"][0]["message"].startswith(
        "`chat` cannot meet its per-token SLO (slo.tpot_p95_ms 0.5 ms)")
