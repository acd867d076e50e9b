"""A file not found that an option names says the option, the path and the fix (exit 2, no
traceback): a new user's `check --fleet nothere.json` said only "nothere.json: file not found —
check the path", not which of the paths typed it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from inputs import scenarios_dir
from solver.cli import main

TINY = str(scenarios_dir() / "tiny.yaml")


def cases(present: str, missing: str) -> list[tuple[str, list[str]]]:
    """Every option that names a file to read, with a command line in which only that option's
    file is missing (``present`` stands for any file that exists)."""
    return [
        ("--fleet", ["check", TINY, "--fleet", missing]),
        ("--contract", ["check", TINY, "--contract", missing]),
        ("--existing", ["plan", TINY, "--existing", missing]),
        ("--fleet", ["simulate", TINY, "--fleet", missing, "--trace", present]),
        ("--trace", ["simulate", TINY, "--fleet", present, "--trace", missing]),
        ("--overlay", ["calibrate", present, "--overlay", present, "--overlay", missing]),
        ("--scenario", ["estimate", "--scenario", missing]),
        ("--scenario", ["forecast", present, "--scenario", missing]),
        ("--scenario", ["import-bench", present, "--scenario", missing]),
        ("--prometheus", ["profile", "--prometheus", missing]),
        ("--from", ["template", "--out", str(Path(missing).with_name("t.xlsx")),
                    "--from", missing]),
    ]


@pytest.mark.parametrize("index", range(len(cases("p", "m"))),
                         ids=[f"{args[0]} {option}" for option, args in cases("p", "m")])
def test_a_missing_file_names_the_option_that_gave_it(tmp_path: Path, index: int) -> None:
    present = tmp_path / "present.yaml"
    present.write_text("x: 1\n", encoding="utf-8")
    missing = tmp_path / "nothere.json"
    option, args = cases(str(present), str(missing))[index]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    assert "Traceback" not in result.output
    assert f"{missing}: file not found (the path given to {option})" in result.output, (
        result.output)
    if option != "--trace":
        assert f"check the path given to {option}" in result.output, result.output
    assert not (tmp_path / "t.xlsx").exists()  # refused before anything is written


def test_a_missing_public_trace_given_to_trace_keeps_where_to_download_it(
        tmp_path: Path) -> None:
    fleet = tmp_path / "plan.json"
    fleet.write_text("{}", encoding="utf-8")
    trace = tmp_path / "AzureLLMInferenceTrace_conv.csv"
    result = CliRunner().invoke(main, ["simulate", TINY, "--fleet", str(fleet),
                                       "--trace", str(trace)])
    assert result.exit_code == 2, result.output
    assert f"{trace}: file not found (the path given to --trace)" in result.output
    assert "Azure/AzurePublicDataset" in result.output, result.output


def test_a_missing_option_file_is_located_in_json_too(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.json"
    result = CliRunner().invoke(main, ["plan", TINY, "--existing", str(missing), "--json"])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert doc["problems"] == [{
        "file": str(missing), "field": "",
        "message": "file not found (the path given to --existing)",
        "fix": "check the path given to --existing"}]


def test_a_trace_refused_by_its_reader_names_the_option_too(tmp_path: Path) -> None:
    """Not only a missing file: an empty trace given to `simulate --trace` said "empty.csv:
    empty file: no requests" with no word of the option that gave it."""
    out = tmp_path / "plan"
    planned = CliRunner().invoke(main, ["plan", TINY, "--out", str(out), "--quiet"])
    assert planned.exit_code == 0, planned.output
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    workload = json.loads((out / "plan.json").read_text())["allocations"][0]["workload"]
    result = CliRunner().invoke(main, ["simulate", TINY, "--fleet", str(out / "plan.json"),
                                       "--trace", str(empty), "--workload", workload])
    assert result.exit_code == 2, result.output
    assert f"{empty}: empty file: no requests (the path given to --trace)" in result.output
    assert "Traceback" not in result.output
