"""compare and sweep plan each variant as ``fleetplan plan`` plans it, and say where two
variants' cost difference lies within the solver's gap.

A new user's quarterly comparison (a scenario over periods) was solved at compare's 60 s while
``plan`` gives a plan over periods its work limits and a 600 s safety stop: the no-spot
variant stopped at a 60 % gap, and the comparison compared how far each solve got."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from click.testing import CliRunner
from openpyxl.utils.cell import range_boundaries

from inputs import scenarios_dir
from models.loader import load_scenario
from solver.cli import main
from solver.solve.clock import HORIZON_SAFETY_S
from solver.studies.compare import (
    Compared,
    ComparisonRow,
    SolveOptions,
    Variant,
    comparison_row,
    within_gap,
    within_gap_lines,
)
from solver.studies.comparison_workbook import COMPARISON_SHEET, comparison_workbook
from solver.studies.executors import Task, plan_task

QUARTERLY = scenarios_dir() / "quarterly.yaml"
TINY = scenarios_dir() / "tiny.yaml"


class Stop(Exception):
    """Raised by a stand-in once it has seen what it was given."""


def _plans_limits(extra: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                  ) -> tuple[float, float]:
    """(time_limit_s, share_limit_s) `fleetplan plan` gives quarterly.yaml's plan_horizon."""
    from solver.cli import plan as plan_cli

    seen: list[tuple[float, float]] = []

    def planned(sc: object, **kwargs: Any) -> None:
        seen.append((kwargs["time_limit_s"], kwargs["share_limit_s"]))
        raise Stop

    with monkeypatch.context() as m:
        m.setattr(plan_cli, "plan_horizon", planned)
        result = CliRunner().invoke(main, ["plan", str(QUARTERLY), "--out",
                                           str(tmp_path / "p"), "--quiet", *extra])
    assert isinstance(result.exception, Stop), result.output
    return seen[0]


def _task_limits(options: SolveOptions, monkeypatch: pytest.MonkeyPatch) -> tuple[float, float]:
    """(time_limit_s, share_limit_s) a study's worker gives quarterly.yaml's plan_horizon."""
    import solver.solve.horizon as horizon

    seen: list[tuple[float, float]] = []

    def planned(sc: object, **kwargs: Any) -> None:
        seen.append((kwargs["time_limit_s"], kwargs["share_limit_s"]))
        raise Stop

    with monkeypatch.context() as m:
        m.setattr(horizon, "plan_horizon", planned)
        with pytest.raises(Stop):
            plan_task(Task("k", "quarterly", load_scenario(QUARTERLY), options))
    return seen[0]


@pytest.mark.parametrize("extra", [[], ["--time-limit", "30"]])
def test_compare_and_sweep_give_a_variant_over_periods_plans_limits(
        extra: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: compare and sweep planned quarterly.yaml to 60 s where `plan` gives it its work
    limits and a 600 s safety stop; a limit given still wins in all three."""
    import solver.cli.compare as cli_compare
    import solver.cli.sweep as cli_sweep

    options: list[SolveOptions] = []

    def captured(variants: object, opts: SolveOptions, *args: object, **kw: object) -> None:
        options.append(opts)
        raise Stop

    monkeypatch.setattr(cli_compare, "plan_all", captured)
    monkeypatch.setattr(cli_sweep, "run_sweep", captured)
    res = CliRunner().invoke(main, ["compare", str(QUARTERLY), "--out",
                                    str(tmp_path / "c.xlsx"), *extra])
    assert isinstance(res.exception, Stop), res.output
    res = CliRunner().invoke(main, ["sweep", str(QUARTERLY), "--vary", "spot=true,false",
                                    "--out", str(tmp_path / "s"), "--quiet", *extra])
    assert isinstance(res.exception, Stop), res.output
    expected = _plans_limits(extra, tmp_path, monkeypatch)
    assert expected == ((HORIZON_SAFETY_S, 60.0) if not extra else (30.0, 30.0))
    for opts in options:  # compare's, then sweep's
        assert _task_limits(opts, monkeypatch) == expected


def test_the_compare_baseline_over_periods_is_plans_result(tmp_path: Path) -> None:
    """compare's column of a scenario over periods is what `plan` gives for it: tiny over two
    quarters, with two demand scenarios."""
    scenario = tmp_path / "tiny_quarters.yaml"
    scenario.write_text(TINY.read_text() + (
        "\nhorizon: {start: 2027-01-01, period_months: 3, count: 2}\n"
        "demand_scenarios:\n"
        "  - {name: low, probability: 0.5, growth: [1.0, 0.5]}\n"
        "  - {name: high, probability: 0.5, growth: [1.0, 2.0]}\n"))
    runner = CliRunner()
    planned = runner.invoke(main, ["plan", str(scenario), "--out", str(tmp_path / "p"),
                                   "--quiet", "--json"])
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.stdout)
    compared = runner.invoke(main, ["compare", str(scenario), "--vary", "spot=true,false",
                                    "--out", str(tmp_path / "c.xlsx"), "--json"])
    assert compared.exit_code == 0, compared.output
    baseline = json.loads(compared.stdout)["scenarios"][0]
    assert baseline["plan"]["horizon"] is not None  # planned over periods
    assert baseline["status"] == plan["status"]
    assert baseline["cost_per_month"] == pytest.approx(plan["cost"]["per_month"])
    assert baseline["plan"]["solver"]["objective"] == pytest.approx(plan["solver"]["objective"])
    assert json.loads(compared.stdout)["within_gap"] == []  # tiny sells no spot: same cost


def _row(label: str, objective: float | None, bound: float | None,
         over_periods: bool = False) -> ComparisonRow:
    gap = None if objective is None or bound is None else (objective - bound) / objective
    return ComparisonRow(label=label, status="time_limit", cost_per_month=objective,
                         per_million_tokens=None, gpus_by_type={}, reserved_share=None,
                         committed_share=None,
                         survivability="n/a", gap=gap, objective=objective, bound=bound,
                         over_periods=over_periods)


def test_a_difference_within_the_dearer_variants_gap_is_named() -> None:
    rows = [
        _row("q spot=true", 100_000, 99_000),    # S1: gap 1 %
        _row("q spot=false", 110_000, 44_000),   # S2: 10 % dearer, but a 60 % gap
        _row("q drop=H200", 200_000, 198_000),   # S3: proven dearer than S1 and S2's cost
        _row("q growth=3", None, None),          # S4: no fleet
    ]
    assert [(p.cheaper, p.dearer) for p in within_gap(rows)] == [(0, 1)]
    lines = within_gap_lines(rows, "USD")
    assert lines[0].startswith("cost differences within the solver's gap (not real differences")
    assert lines[1:] == [
        "  - S2 q spot=false costs 10,000 USD/month more than S1 q spot=true, but its cheapest "
        "plan is proven only to cost at least 44,000, gap 60.00%, no more than S1's 100,000"]
    # the cheaper one's gap does not blur the difference: S1 cannot cost more than it does
    assert within_gap([_row("a", 100_000, 40_000), _row("b", 110_000, 108_000)]) == []
    # nothing proven apart where every difference is proven, or where the costs are equal
    assert within_gap_lines([_row("a", 100, 100), _row("b", 120, 119)], "USD") == []
    assert within_gap([_row("a", 100, 50), _row("b", 100, 50)]) == []
    # a plan over periods and one of one peak day: objectives in other units, not paired
    assert within_gap([_row("a", 100, 50), _row("b", 110, 50, over_periods=True)]) == []
    over = within_gap_lines([_row("a", 100, 90, True), _row("b", 110, 50, True)], "EUR")
    assert "costs 10 EUR over the horizon more than S1 a" in over[1]


@pytest.fixture(scope="module")
def tiny_result() -> Compared:
    from solver.studies.executors import plan_task as plan

    tiny = load_scenario(TINY)
    planned = plan(Task("t", "tiny", tiny, SolveOptions(time_limit_s=30)))
    return Compared(Variant("tiny", tiny), planned.plan, planned.table)


def _blurred(tiny_result: Compared) -> list[Compared]:
    """Two copies of one plan, the second's solver report made dearer with a wide gap (its
    bound below the first's cost)."""
    plan = tiny_result.plan
    cost = plan.solver.objective
    assert cost is not None
    dearer = plan.model_copy(update={"solver": plan.solver.model_copy(update={
        "objective": cost * 1.1, "bound": cost * 0.5, "gap": 1 - 0.5 / 1.1})})
    return [tiny_result, Compared(Variant("tiny spot=false", tiny_result.variant.scenario),
                                  dearer, tiny_result.table)]


def test_the_table_says_it_under_the_comparison(tiny_result: Compared, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import solver.cli.compare as cli_compare

    results = _blurred(tiny_result)
    monkeypatch.setattr(cli_compare, "plan_all", lambda *args, **kw: results)
    res = CliRunner().invoke(main, ["compare", str(TINY), "--out", str(tmp_path / "c.xlsx")])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    expected = within_gap_lines([comparison_row(r) for r in results], "USD")
    assert expected and "S2 tiny spot=false costs 175 USD/month more than S1 tiny" in expected[1]
    at = lines.index(expected[0])
    assert lines[at:at + 2] == expected
    assert lines[at - 1].split()[1] == "GPUs"  # right under the table (its GPU rows last)


def test_the_workbook_says_it_under_the_comparison(tiny_result: Compared,
                                                   tmp_path: Path) -> None:
    """The Comparison sheet says it under its table."""
    results = _blurred(tiny_result)
    path = tmp_path / "c.xlsx"
    comparison_workbook(results).save(path)
    ws = openpyxl.load_workbook(path)[COMPARISON_SHEET]
    texts = [c.value for c in ws["A"] if isinstance(c.value, str)]
    expected = within_gap_lines([comparison_row(r) for r in results], "USD")
    assert len(expected) == 2
    assert texts[-2:] == [line.strip() for line in expected]
    table_end = range_boundaries(next(iter(ws.tables.values())).ref)[3]
    assert table_end is not None and ws.max_row > table_end  # below the table, not a row of it
    # the same results without the blurred difference: no note
    same = comparison_workbook([tiny_result, tiny_result])
    assert not any(isinstance(c.value, str) and "within the solver's gap" in c.value
                   for c in same[COMPARISON_SHEET]["A"])
