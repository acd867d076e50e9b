"""YAML and JSON structure at the door (models/documents.py): expansion bombs, aliases inside
their own anchor, deep nesting and numbers too large for a float are refused with exit code 2
and the file, the line and the limit — never a traceback, a hang or gigabytes of memory.

Each case was a traceback or a hang before the safe loader: the bombs run in a child process
under the address-space limit and a timeout (tests/hostile.py), so a regression fails the test
instead of the test run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from inputs import scenarios_dir
from models import documents
from models.documents import load_yaml, read_document
from models.errors import InputError
from models.input_files import count_values, json_depth
from models.limits import MAX_ALIASES, MAX_DEPTH, MAX_NODES
from tests.hostile import refused, run, run_bounded

TINY = (scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8")


def laughs(levels: int, width: int = 9) -> str:
    """A billion-laughs document: ``levels`` anchors, each a list of ``width`` aliases of the
    one before (width^levels values once expanded) in a few hundred bytes."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nname: *a{levels - 1}\n"


# --- the bombs, in a bounded child process ---------------------------------------------------


def test_billion_laughs_is_refused_quickly_in_bounded_memory(tmp_path: Path) -> None:
    # Was: the loader built the shared structure, then walking it for infinite numbers visited
    # 9^10 values and ran for more than five minutes.
    path = tmp_path / "laughs.yaml"
    path.write_text(laughs(10), encoding="utf-8")
    result = run_bounded("validate", str(path), cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert not result.traceback
    assert f"{path}: line 7" in result.output  # a6 repeats 9^7 values
    assert f"more than {MAX_NODES:,} values" in result.output


@pytest.mark.parametrize(("name", "text", "message"), [
    # Was: RecursionError from PyYAML's composer, printed as a traceback.
    ("deep.yaml", "name: " + "[" * 100_000 + "]" * 100_000 + "\n", "past a limit"),
    # Was: RecursionError from json.loads, printed as a traceback.
    ("deep.json", '{"name": ' + "[" * 100_000 + "]" * 100_000 + "}",
     f"JSON nested too deeply: more than {MAX_DEPTH} levels"),
])
def test_deep_nesting_is_refused(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = run_bounded("validate", str(path), cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert not result.traceback
    assert f"{path}: " in result.output and message in result.output


# --- structure limits, in process ------------------------------------------------------------


def test_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    # Was: a list containing itself; the walk for infinite numbers recursed until
    # RecursionError.
    path = tmp_path / "loop.yaml"
    path.write_text("name: x\nworkloads: &w [*w]\n", encoding="utf-8")
    refused(run("validate", str(path)), f"{path}: line 2, column 16",
            "alias *w repeats a value that contains it")


def test_block_nesting_past_the_limit_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    lines = [" " * (2 * i) + f"k{i}:" for i in range(MAX_DEPTH + 2)]
    path.write_text("\n".join(lines) + " 1\n", encoding="utf-8")
    refused(run("validate", str(path)), f"{path}: line {MAX_DEPTH + 1}",
            f"nested more than {MAX_DEPTH} levels deep")


def test_too_many_aliases_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "aliases.yaml"
    items = ", ".join(["*a"] * (MAX_ALIASES + 1))
    path.write_text(f"x: &a 1\nname: [{items}]\n", encoding="utf-8")
    refused(run("validate", str(path)), f"more than {MAX_ALIASES:,} aliases")


def test_merge_keys_and_a_few_aliases_still_load(tmp_path: Path) -> None:
    doc = yaml.safe_load(TINY)
    text = yaml.safe_dump(doc, sort_keys=False)
    text = text.replace("slo:", "slo: &slo", 1)
    path = tmp_path / "anchors.yaml"
    path.write_text(text + "x-defaults: &d {stock_gpus: 2}\n", encoding="utf-8")
    # an unknown top-level key is refused by the schema, not by the loader's limits
    refused(run("validate", str(path)), "unknown key `x-defaults`")
    loaded = load_yaml("base: &b {p: 1, q: 2}\nuse: {<<: *b, q: 3}\n")
    assert loaded == {"base": {"p": 1, "q": 2}, "use": {"p": 1, "q": 3}}


def test_duplicate_keys_are_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(TINY + "\nname: again\n", encoding="utf-8")
    refused(run("validate", str(path)), "key `name` appears twice in one mapping")


def test_expanded_size_counts_every_alias_at_its_size() -> None:
    # 9 × 9 × 9 values from three anchors: under the limit, loads; the counter saw 820
    doc = load_yaml(laughs(3))
    assert count_values(doc["name"]) == 1 + 9 + 81 + 729
    with pytest.raises(yaml.YAMLError, match="values"):
        load_yaml(laughs(7))  # 9^7 = 4.8 million values once expanded


def test_json_depth_skips_brackets_inside_strings() -> None:
    assert json_depth('{"a": "[[[[{{{{", "b": [[1]]}') == 3
    assert json_depth('"\\"[[["') == 0


# --- numbers too large -------------------------------------------------------------------------


def tiny_json(tmp_path: Path, peak_rps: Any, raw: str | None = None) -> Path:
    doc = yaml.safe_load(TINY)
    doc["workloads"][0]["arrival"]["peak_rps"] = peak_rps
    text = json.dumps(doc)
    if raw is not None:
        text = text.replace('"PEAK"', raw)
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_integer_too_large_for_a_float_is_located(tmp_path: Path) -> None:
    # Was: OverflowError (int too large to convert to float) while formatting the message.
    path = tiny_json(tmp_path, 10**400)
    refused(run("validate", str(path)), f"{path}: workloads[0].arrival.peak_rps",
            "a 401-digit number", "too large")


def test_integer_of_more_digits_than_python_reads_is_refused(tmp_path: Path) -> None:
    # Python refuses to read integers of more than 4,300 digits (a ValueError, not a
    # JSONDecodeError): it was a traceback.
    path = tiny_json(tmp_path, "PEAK", raw="9" * 5000)
    refused(run("validate", str(path)), f"{path}: cannot read as JSON", "4300")
    yaml_path = tmp_path / "s.yaml"
    yaml_path.write_text(TINY.replace("peak_rps: 4", "peak_rps: " + "9" * 5000),
                         encoding="utf-8")
    refused(run("validate", str(yaml_path)), f"{yaml_path}: cannot read as YAML")


def test_yes_is_not_one_request_per_second(tmp_path: Path) -> None:
    # Was: `peak_rps: true` validated as 1.0 req/s.
    path = tiny_json(tmp_path, True)
    refused(run("validate", str(path)), f"{path}: workloads[0].arrival.peak_rps",
            "`true` is yes/no, not a number")


def test_a_long_list_without_aliases_is_refused_without_speaking_of_aliases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The message spoke of aliases for a file holding none (a 15 MB list of 2 M entries).
    monkeypatch.setattr(documents, "MAX_NODES", 50)
    path = tmp_path / "long.yaml"
    path.write_text("name: long\nworkloads:\n" + "  - 1\n" * 60, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_document(path)
    assert "more than 50 values —" in str(err.value) and "counting" not in str(err.value)


def test_a_date_no_calendar_has_names_its_line(tmp_path: Path) -> None:
    # A new user's reservation `ends: 2027-15-05` (day and month swapped) was "cannot read as
    # YAML: month must be in 1..12 — fix the value": no line, no field, no format.
    path = tmp_path / "q.yaml"
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("ends: 2027-06-30", "ends: 2027-30-06"), encoding="utf-8")
    line = next(i for i, row in enumerate(text.splitlines(), start=1)
                if "ends: 2027-06-30" in row)
    column = text.splitlines()[line - 1].index("2027-06-30") + 1
    refused(run("validate", str(path)),
            f"{path}: line {line}, column {column}: invalid YAML: `2027-30-06` is not a date "
            "(month must be in 1..12) — write the date as YYYY-MM-DD (year, month, day)")
