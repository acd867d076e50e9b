"""A row whose runtime costs were fitted on another GPU says so (docs/calibration.md): the
planner sees which analytic rates no measurement of that GPU stands behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
from click.testing import CliRunner

from models.loader import load_scenario
from models.plan import Plan
from solver.capacity.table import borrowed_costs, build_capacity_table
from solver.cli import main

DEMO = Path(__file__).resolve().parents[1] / "inputs" / "scenarios" / "demo.yaml"


def test_a_gpu_fitted_on_itself_borrows_nothing_and_one_fitted_on_another_names_it() -> None:
    scenario = load_scenario(DEMO)
    vllm = scenario.runtime("vllm")
    assert vllm is not None
    for gpu in ("A100-80GB", "L4", "H100-SXM", "H200"):
        costs = vllm.costs_for(gpu)
        assert costs is not None
        expected = None if costs.fitted_on == gpu else costs.fitted_on
        assert borrowed_costs(scenario, "vllm", gpu) == expected
    # the built-in catalog fits vLLM on the A100 (Vidur's profiles), and the L4 has no
    # vLLM measurement: its costs are the A100's
    assert borrowed_costs(scenario, "vllm", "A100-80GB") is None
    assert borrowed_costs(scenario, "vllm", "L4") == "A100-80GB"
    assert borrowed_costs(scenario, "vllm", "H200") is None
    assert borrowed_costs(scenario, "no-such-runtime", "L4") is None


def test_analytic_rows_carry_the_borrowed_costs_in_their_note() -> None:
    scenario = load_scenario(DEMO)
    table = build_capacity_table(scenario, gpus={"L4", "H200"})
    l4 = [r for r in table.rows if r.gpu == "L4"]
    h200 = [r for r in table.rows if r.gpu == "H200"]  # the demo's vLLM costs fitted on it
    assert l4 and h200
    for row in l4:
        assert "fixed costs fitted on A100-80GB, not measured on L4" in row.note, row.note
    assert not any("fitted on" in r.note for r in h200)


def test_capacity_prints_one_line_per_gpu_whose_costs_are_borrowed() -> None:
    result = CliRunner().invoke(main, ["capacity", str(DEMO)])
    assert result.exit_code == 0, result.output
    nightly = result.output.split("nightly-summaries:", 1)[1]
    assert nightly.count("L4: vllm's fixed costs fitted on A100-80GB, not measured on L4") == 1
    assert "H200: vllm's fixed costs" not in result.output


# --- the plan says it too: plan.json, the terminal, report.md and plan.xlsx ----------------

TINY = DEMO.parent / "tiny.yaml"


def _plan(tmp_path: Path, scenario: Path) -> tuple[dict[str, Any], str]:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(scenario), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return json.loads((out / "plan.json").read_text()), result.output


def test_a_plan_on_borrowed_costs_says_so_in_every_output(tmp_path: Path) -> None:
    # tiny plans one H100-SXM, whose vLLM costs the catalog fits on the H200: the rate says
    # "analytic"/"predicted", and every output names the GPU its costs came from
    scenario = load_scenario(TINY)
    data, output = _plan(tmp_path, TINY)
    assert data["allocations"]
    for a in data["allocations"]:
        assert a["capacity_source"] == "analytic"
        assert a["costs_fitted_on"] == borrowed_costs(scenario, "vllm", a["gpu"]) == "H200"
    plan = Plan.model_validate(data)  # read back as written
    assert all(a.costs_fitted_on == "H200" for a in plan.allocations)
    line = next(x for x in output.splitlines() if "runtime costs borrowed" in x)
    assert "H100-SXM (100.0% of the cost) from H200" in line and "vllm" in line
    report = (tmp_path / "out" / "report.md").read_text()
    assert "(predicted; runtime costs fitted on H200)" in report
    assumptions = report.split("## Assumptions", 1)[1]
    row = next(x for x in assumptions.splitlines() if x.startswith("| Runtime fixed costs"))
    assert "H100-SXM: vllm's fitted on H200" in row and "(100.0% of the cost)" in row
    book = openpyxl.load_workbook(tmp_path / "out" / "plan.xlsx", read_only=True)
    try:
        pools = list(book["Pools"].iter_rows(values_only=True))
        assumed = [r[0] for r in book["Assumptions"].iter_rows(values_only=True)]
    finally:
        book.close()
    col = pools[0].index("Runtime costs fitted on (another GPU)")
    assert [r[col] for r in pools[1:]] == ["H200"] * (len(pools) - 1)
    assert "Runtime fixed costs (assumed)" in assumed


def test_a_plan_on_the_gpus_own_costs_says_nothing_of_borrowing(tmp_path: Path) -> None:
    # the same scenario sold on the H200 only, where the catalog's vLLM costs were fitted:
    # plan.json has no costs_fitted_on (as plans before it), no line, no assumed row
    text = TINY.read_text().replace("gpu: H100-SXM", "gpu: H200").replace(
        "allowed_gpus: [L4, H100-SXM]", "allowed_gpus: [H200]")
    own = tmp_path / "own.yaml"
    own.write_text(text)
    assert borrowed_costs(load_scenario(own), "vllm", "H200") is None
    data, output = _plan(tmp_path, own)
    assert data["allocations"] and all(a["gpu"] == "H200" for a in data["allocations"])
    assert not any("costs_fitted_on" in a for a in data["allocations"])
    assert "runtime costs borrowed" not in output
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Runtime fixed costs" not in report and "fitted on" not in report


def test_estimate_says_its_runtime_costs_are_borrowed_as_capacity_does() -> None:
    """`estimate` on H100 said only "(predicted)" while `capacity --explain` and `plan` said
    the vLLM costs were fitted on the H200 (a new user's finding): the same source of truth."""
    scenario = load_scenario(DEMO)
    args = ["estimate", "--model", "Llama-3.1-8B", "--precision", "bf16", "--input-tokens",
            "1000", "--output-tokens", "200", "--gpu"]
    for gpu in ("H100-SXM", "H200"):
        fitted_on = borrowed_costs(scenario, "vllm", gpu)
        result = CliRunner().invoke(main, [*args, gpu, "--json"])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["costs_fitted_on"] == fitted_on
        text = CliRunner().invoke(main, [*args, gpu]).stdout
        assert ("fixed costs fitted on" in text) == (fitted_on is not None)
        if fitted_on is not None:
            assert f"fixed costs fitted on {fitted_on}, not measured on {gpu}" in text
    assert borrowed_costs(scenario, "vllm", "H100-SXM") not in (None, "H100-SXM")
