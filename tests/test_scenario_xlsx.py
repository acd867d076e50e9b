"""Scenarios in Excel: the template, the reader, and errors that name sheet, row and column."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from openpyxl import load_workbook

from inputs import scenarios_dir
from models.errors import InputError
from models.loader import load_scenario
from models.measured import MeasuredCapacity
from models.scenario import Scenario, ScenarioFile
from solver.cli import main
from solver.outputs.scenario_template import (
    scenario_workbook,
    template_scenario,
    template_workbook,
)

SHEETS = ["README", "scenario", "workloads", "offers", "measured", "price_tables", "policy"]


def _without_sources(sc: Scenario) -> Scenario:
    """The scenario without where it was read from: its files, and each measured row's file
    and line (a workbook names its CSV relative to itself)."""
    return sc.model_copy(update={"sources": (), "measured": tuple(
        m.model_copy(update={"origin": None}) for m in sc.measured)})


def _column(ws: object, key: str) -> int:
    for cell in ws[1]:  # type: ignore[index]
        if str(cell.value).split(" [")[0] == key:
            return int(cell.column)
    raise KeyError(key)


@pytest.fixture
def template(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.xlsx"
    template_workbook().save(path)
    return path


def test_a_workbook_loads_in_a_fresh_interpreter_without_the_cli(template: Path) -> None:
    """models.loader reads .xlsx on its own: nothing needs importing first (no import side
    effects), and loading a scenario imports nothing of solver/."""
    code = (
        "import sys\n"
        "from models.loader import load_scenario\n"
        f"sc = load_scenario({str(template)!r})\n"
        "print(sc.workloads[0].name, any(m.startswith('solver') for m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["chat", "False"]


def test_template_sheets_units_and_example_rows(template: Path) -> None:
    wb = load_workbook(template)
    assert wb.sheetnames == SHEETS
    workloads = pd.read_excel(template, sheet_name="workloads")
    assert "peak_rps [req/s]" in workloads.columns
    assert "slo_ttft_p95_ms [ms]" in workloads.columns
    assert list(workloads["name"]) == ["chat"]
    offers = pd.read_excel(template, sheet_name="offers")
    assert offers.loc[0, "reserved_price [currency/GPU-hour]"] == 0.70
    for sheet in SHEETS[1:]:
        # a filled example row, but no made-up measurement: the example was stale on purpose
        # (never used), and validate warned of it on the template as shipped (qa3)
        assert wb[sheet].max_row == 1 if sheet == "measured" else wb[sheet].max_row >= 2, sheet
        assert wb[sheet].freeze_panes == "A2"


def test_the_template_validates_without_a_warning(template: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(template)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr


def test_template_loads_as_the_scenario_it_was_made_from(template: Path, tmp_path: Path) -> None:
    yaml_path = tmp_path / "scenario.yaml"
    yaml_path.write_text(yaml.safe_dump(template_scenario().model_dump(
        mode="json", by_alias=True, exclude_none=True)))
    assert _without_sources(load_scenario(template)) == _without_sources(
        load_scenario(yaml_path))


@pytest.mark.parametrize("name", ["demo.yaml", "tiny.yaml", "twenty_rps.yaml"])
def test_shipped_scenarios_round_trip(name: str, tmp_path: Path) -> None:
    source = scenarios_dir() / name
    for extra in scenarios_dir().glob("*.csv"):
        shutil.copy(extra, tmp_path)  # measured_csv is relative to the scenario file
    raw = ScenarioFile.model_validate(yaml.safe_load(source.read_text()))
    path = tmp_path / name.replace(".yaml", ".xlsx")
    scenario_workbook(raw).save(path)
    assert _without_sources(load_scenario(path)) == _without_sources(load_scenario(source))


def _edit(template: Path, sheet: str, row: int, key: str, value: object) -> Path:
    wb = load_workbook(template)
    ws = wb[sheet]
    ws.cell(row=row, column=_column(ws, key)).value = value
    wb.save(template)
    return template


def test_bad_number_names_sheet_row_and_column(template: Path) -> None:
    _edit(template, "workloads", 2, "peak_rps", "fast")
    with pytest.raises(InputError) as err:
        load_scenario(template)
    (problem,) = err.value.problems
    assert problem.location == "sheet `workloads`, row 2, column G `peak_rps [req/s]`"
    assert "expected a number, got 'fast'" in problem.message


def test_every_problem_is_located(template: Path) -> None:
    _edit(template, "workloads", 2, "precision", "fp9")
    _edit(template, "workloads", 2, "slo_ttft_p95_ms", None)
    _edit(template, "offers", 2, "reserved_price", -1)
    wb = load_workbook(template)
    wb["policy"]["B2"].value = 0  # hours_per_month
    wb["workloads"].cell(row=1, column=40).value = "colour"
    wb.save(template)
    with pytest.raises(InputError) as err:
        load_scenario(template)
    where = [p.location for p in err.value.problems]
    assert where == [
        "sheet `workloads`, row 1, column AN",
        "sheet `workloads`, row 2, column C `precision`",
        "sheet `workloads`, row 2, column T `slo_ttft_p95_ms [ms]`",
        "sheet `offers`, row 2, column F `reserved_price [currency/GPU-hour]`",
        "sheet `policy`, row 2, column B `hours_per_month`",
    ]
    assert "unknown column `colour`" in err.value.problems[0].message


def test_unknown_reference_is_reported_by_the_loader(template: Path) -> None:
    _edit(template, "workloads", 2, "model", "Llama-3.1-8")
    with pytest.raises(InputError, match=r"did you mean `Llama-3.1-8B`"):
        load_scenario(template)


def test_hours_ranges_and_time_blocks(template: Path) -> None:
    _edit(template, "workloads", 2, "allowed_gpus", "L4, L40S")
    wb = load_workbook(template)
    wb["policy"]["B9"].value = "early: 0-5; rest: 6-23"  # time_blocks
    wb.save(template)
    sc = load_scenario(template)
    assert sc.workloads[0].allowed_gpus == ("L4", "L40S")
    assert [(b.name, b.hours) for b in sc.policy.time_blocks] == [
        ("early", (0, 1, 2, 3, 4, 5)), ("rest", tuple(range(6, 24)))]


def test_two_rows_for_one_zone_and_gpu(template: Path) -> None:
    wb = load_workbook(template)
    ws = wb["offers"]
    for col in range(1, ws.max_column + 1):
        ws.cell(row=3, column=col).value = ws.cell(row=2, column=col).value
    wb.save(template)
    with pytest.raises(InputError, match=r"sheet `offers`, row 3: zone `use1-az1` already offers"):
        load_scenario(template)


def test_a_formula_without_a_value_is_an_error(template: Path) -> None:
    _edit(template, "workloads", 2, "peak_rps", "=2*2")
    with pytest.raises(InputError, match=r"row 2, column G: a formula without a computed value"):
        load_scenario(template)


def test_not_a_workbook(tmp_path: Path) -> None:
    path = tmp_path / "scenario.xlsx"
    path.write_text("name: x\n")
    with pytest.raises(InputError, match=r"not a readable \.xlsx workbook"):
        load_scenario(path)


def test_cli_template_writes_and_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "s.xlsx"
    runner = CliRunner()
    first = runner.invoke(main, ["template", "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert load_scenario(out).name == "my-scenario"
    again = runner.invoke(main, ["template", "--out", str(out)])
    assert again.exit_code == 2
    assert "exists already" in again.output
    valid = runner.invoke(main, ["validate", str(out)])
    assert valid.exit_code == 0, valid.output


def test_cli_template_json_says_what_it_wrote(tmp_path: Path) -> None:
    """README: "Every command takes `--json`"; template did not."""
    import json

    out = tmp_path / "s.xlsx"
    source = scenarios_dir() / "twenty_rps.yaml"
    result = CliRunner().invoke(main, ["template", "--out", str(out), "--from", str(source),
                                       "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"out": str(out), "scenario": load_scenario(out).name,
                                         "from": str(source)}


def test_every_command_takes_json() -> None:
    import click

    ctx = click.Context(main)
    commands = {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}
    lacking = [name for name, command in commands.items()
               if command is None or not any("--json" in p.opts for p in command.params)]
    assert lacking == []


def test_cli_template_from_scenario_keeps_relative_paths(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "twenty.xlsx"
    out.parent.mkdir()
    source = scenarios_dir() / "twenty_rps.yaml"
    result = CliRunner().invoke(main, ["template", "--out", str(out), "--from", str(source)])
    assert result.exit_code == 0, result.output
    assert _without_sources(load_scenario(out)) == _without_sources(load_scenario(source))


def test_a_formula_like_name_round_trips_as_text(tmp_path: Path) -> None:
    evil = '=HYPERLINK("http://x","y")'
    raw = template_scenario()
    workload = raw.workloads[0].model_copy(update={"name": evil, "tenant": "-team"})
    measured = MeasuredCapacity.model_validate({
        "model": "Llama-3.1-8B", "gpu": "L4", "runtime": "vllm", "precision": "bf16", "tp": 1,
        "workload": evil, "max_stable_sequences": 24, "tested_peak_rps": 0.8, "ttft_p95_ms": 900,
        "decode_p95_ms_per_token": 45, "measured_on": "2026-01-15"})
    raw = raw.model_copy(update={"workloads": (workload,), "measured": (measured,)})
    path = tmp_path / "s.xlsx"
    scenario_workbook(raw).save(path)
    cell = load_workbook(path)["workloads"]["A2"]
    assert (cell.value, cell.data_type) == (evil, "s")
    sc = load_scenario(path)
    assert (sc.workloads[0].name, sc.workloads[0].tenant) == (evil, "-team")


def test_template_twice_is_the_same_bytes(tmp_path: Path) -> None:
    paths = [tmp_path / "a.xlsx", tmp_path / "b.xlsx"]
    for out in paths:
        result = CliRunner().invoke(main, ["template", "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert paths[0].read_bytes() == paths[1].read_bytes()
    # the example names no as_of: the workbook carries the fixed 2000-01-01, not the time of day
    assert load_workbook(paths[0]).properties.modified == dt.datetime(2000, 1, 1)
    with zipfile.ZipFile(paths[0]) as z:
        assert {i.date_time for i in z.infolist()} == {(2000, 1, 1, 0, 0, 0)}


def test_cli_template_refuses_a_scenario_the_workbook_cannot_hold(tmp_path: Path) -> None:
    """Fresh-clone trial: `template --from chat.yaml` (the README walk-through's scenario)
    wrote a workbook without the arrival's burst profile and the token p5s, which planned as
    Poisson arrivals; from quarterly.yaml it dropped the horizon and wrote a workbook that
    `validate` refused. Each lost field is named and nothing is written."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    chat = readme.split("$ cat > chat.yaml <<'YAML'\n", 1)[1].split("\nYAML\n", 1)[0]
    source = tmp_path / "chat.yaml"
    source.write_text(chat, encoding="utf-8")
    out = tmp_path / "chat.xlsx"
    result = CliRunner().invoke(main, ["template", "--from", str(source), "--out", str(out)])
    assert result.exit_code == 2, result.output
    for field in ("workloads[0].arrival.burst", "workloads[0].input_tokens.p5",
                  "workloads[0].output_tokens.p5"):
        assert (f"{source}: {field}: the scenario workbook has no place for it — keep the "
                "scenario as YAML") in result.output
    assert not out.exists()
    quarterly = scenarios_dir() / "quarterly.yaml"
    result = CliRunner().invoke(main, ["template", "--from", str(quarterly), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"{quarterly}: horizon: the scenario workbook has no place for it" in result.output
    assert "the workbook written from it would not read back" in result.output
    assert not out.exists()
