"""Bounded reading of the files people bring: size limits, encodings and JSON refused cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from models import input_files
from models.errors import InputError, Problem
from models.input_files import first_long_row, read_json, read_json_lines, read_text


def refused(call: object, *args: object) -> Problem:
    with pytest.raises(InputError) as info:
        call(*args)  # type: ignore[operator]
    (problem,) = info.value.problems
    return problem


def test_a_file_over_its_kinds_limit_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(input_files.MAX_INPUT_BYTES, "metrics export", 1000)
    path = tmp_path / "big.json"
    path.write_text("[" + "1," * 600 + "1]", encoding="utf-8")
    problem = refused(read_json, path, "metrics export")
    assert problem.file == str(path)
    assert "over the 0 MiB limit for a metrics export file" in problem.message
    path.write_text("[1, 2]", encoding="utf-8")
    assert read_json(path, "metrics export") == [1, 2]


def test_missing_directory_and_binary_files(tmp_path: Path) -> None:
    assert "not found" in refused(read_text, tmp_path / "nope.json", "benchmark result").message
    assert "directory" in refused(read_text, tmp_path, "benchmark result").message
    binary = tmp_path / "x.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    problem = refused(read_text, binary, "benchmark result")
    assert problem.message == "not UTF-8 text" and problem.location == "byte 0"


def test_bad_and_too_deep_json_is_located(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"a": 1,\n "b": }', encoding="utf-8")
    assert refused(read_json, path, "benchmark result").location == "line 2, column 7"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert "nested too deeply" in refused(read_json, path, "benchmark result").message
    lines = tmp_path / "x.jsonl"
    lines.write_text('{"a": 1}\n\n{"b": \n', encoding="utf-8")
    assert refused(read_json_lines, lines, "benchmark result").location.startswith("line 3")


@pytest.mark.parametrize("block_bytes", [7, 16, 4 * 1024 * 1024])
def test_first_long_row_finds_the_row_wherever_the_blocks_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int) -> None:
    # the unquoted scan reads the file in blocks: a row cut by a block's end is still one row
    monkeypatch.setattr(input_files, "SCAN_BYTES", block_bytes)
    rows = [f"{t},{100 + t},{20 + t}" for t in range(12)]
    path = tmp_path / "t.csv"
    cases = {  # rows → the row found (header: line 1)
        (*rows,): None,
        (*rows[:5], "5,1,5,129", *rows[6:]): "line 7",
        (*rows[:11], "11,1,5"): None,
        (*rows[:11], "11,1,5,"): "line 13",  # a trailing comma, on the last line
        (*rows[:3], '3,"1,5",20', *rows[4:]): None,  # a quoted comma is inside one cell
        (*rows[:3], '3,"1,5",20', *rows[4:8], "8,9,10,11"): "line 10",
    }
    for lines, where in cases.items():
        for sep, end in (("\n", "\n"), ("\r\n", "\r\n"), ("\n", "")):  # "": none at the end
            path.write_bytes((sep.join(["ts,input,output", *lines]) + end).encode())
            found = first_long_row(path, "t.csv", "line")
            assert (found and found.location) == where, (lines, sep, end)
