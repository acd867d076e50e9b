"""The measured rows a plan does not use, and those it uses above their datasheet ceiling, are
in plan.json's ``warnings``, report.md's Warnings and the workbook's Summary in the words
``plan`` printed on stderr
(solver/cli/plan.py, ``with_measured_warnings``): a platform team's load tests set aside for
their token lengths were named on stderr only, and report.md said the pool was predicted."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from models.plan import Plan
from models.text import markdown_text
from solver.cli import main


def test_a_stale_measured_row_is_in_plan_json_and_the_report(tmp_path: Path) -> None:
    """tiny with a load test of its L4 TP1 configuration at 500-token prompts (the workload's
    P50 is 1,000: −50 %, beyond the ±20 % tolerance): not used, and said where the plan is read."""
    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["measured"] = [{
        "model": "Llama-3.1-8B", "gpu": "L4", "runtime": "vllm", "precision": "bf16", "tp": 1,
        "workload": "chat", "max_stable_sequences": 20, "tested_peak_rps": 3.0,
        "ttft_p95_ms": 900, "decode_p95_ms_per_token": 40, "measured_on": "2026-11-20",
        "input_tokens_p50": 500, "output_tokens_p50": 200}]
    doc["policy"]["as_of"] = "2026-12-03"
    path = tmp_path / "tiny_measured.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out"),
                                       "--quiet", "--no-replay"])
    assert result.exit_code == 0, result.output
    said = [line.removeprefix("warning: ") for line in result.stderr.splitlines()
            if line.startswith("warning: measured[0]")]
    assert len(said) == 1 and "stale, not used: its test's input P50 was 500 tokens" in said[0]
    plan = Plan.model_validate_json((tmp_path / "out" / "plan.json").read_text(encoding="utf-8"))
    assert list(plan.warnings) == said
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Warnings" in report and f"- {markdown_text(said[0])}" in report
    summary = openpyxl.load_workbook(tmp_path / "out" / "plan.xlsx")["Summary"]
    assert [row[1] for row in summary.iter_rows(values_only=True) if row[0] == "Warning"] == said
