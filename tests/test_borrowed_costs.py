"""A row whose runtime costs were fitted on another GPU says so (docs/calibration.md): the
planner sees which analytic rates no measurement of that GPU stands behind."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from models.loader import load_scenario
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
