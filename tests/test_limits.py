"""Limits at the door (models/limits.py, docs/limits.md): file sizes, numbers per field with
their reason, names, list lengths. Every refusal exits 2 naming the file, the place and the
limit; each case here was accepted, or a traceback, before the limits.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import models.limits as limits
from inputs import scenarios_dir
from models.errors import MAX_SHOWN_PROBLEMS, InputError, Problem
from models.limits import MAX_LIST_ENTRIES, MAX_NAME_CHARS, RANGES
from tests.hostile import refused, run, run_bounded

TINY: dict[str, Any] = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
DOCS = Path(__file__).resolve().parents[1] / "docs" / "limits.md"


def tiny_with(tmp_path: Path, path: tuple[Any, ...], value: Any) -> Path:
    doc = copy.deepcopy(TINY)
    node = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    out = tmp_path / "s.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return out


# --- file sizes --------------------------------------------------------------------------------


def test_a_document_past_its_size_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:  # sparse: 17 MiB of nothing
        fh.truncate(limits.MAX_DOCUMENT_BYTES + 1)
    refused(run("validate", str(path)), f"{path}: 16.0 MiB is over the 16 MiB limit for a YAML "
            "or JSON document file")


def test_a_device_or_pipe_is_not_read_forever(tmp_path: Path) -> None:
    # Was: /dev/zero read until memory ran out; a FIFO waited for a writer forever. Run in a
    # bounded child process: a regression must not take the test run's memory.
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        # the default bound (60 s): 30 s was overrun by a correct answer at load ~8 (33.5 s)
        result = run_bounded("validate", path, cwd=tmp_path)
        assert result.exit_code == 2, result.output
        assert f"{path}: is not a regular file" in result.output


def test_a_nul_byte_in_a_path_is_refused(tmp_path: Path) -> None:
    # Was: ValueError (embedded null byte) from os.stat, a traceback. (A command line cannot
    # hold a NUL byte; a path inside a file can.)
    path = tiny_with(tmp_path, ("catalog",), {"overlays": ["over\0lay.yaml"]})
    refused(run("validate", str(path)), f"{path}: catalog.overlays[0]: text holds control or "
            "invisible characters U+0000")


def test_a_measured_table_past_its_size_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "m.csv"
    with table.open("wb") as fh:
        fh.truncate(limits.MAX_TABLE_BYTES + 1)
    path = tiny_with(tmp_path, ("measured_csv",), "m.csv")
    refused(run("validate", str(path)), f"{table}: 64.0 MiB is over the 64 MiB limit for a CSV "
            "table file")


# --- numbers, per field, with the reason ------------------------------------------------------


@pytest.mark.parametrize(("place", "value", "field"), [
    # 10^-300 req/s validated and planned "optimal" with no fleet at all
    (("workloads", 0, "arrival", "peak_rps"), 1e-300, "peak_rps"),
    # 10^18 req/s: a unit slip, planned for minutes before it was found infeasible
    (("workloads", 0, "arrival", "peak_rps"), 1e18, "peak_rps"),
    # a price of 10^-300 per GPU-hour planned a fleet that costs nothing
    (("zones", 0, "offers", 0, "on_demand", "price_per_gpu_hour"), 1e-300, "price_per_gpu_hour"),
    # an hour of 10^-300 a month made every fleet free
    (("policy", "hours_per_month"), 1e-300, "hours_per_month"),
    # planning at 10^-300 of capacity asked for 10^300 replicas
    (("workloads", 0, "target_utilization"), 1e-300, "target_utilization"),
    (("zones", 0, "offers", 0, "on_demand", "stock_gpus"), 10**12, "stock_gpus"),
    (("workloads", 0, "input_tokens", "p99"), 10**12, "p99"),
])
def test_extreme_but_finite_numbers_are_refused_with_the_reason(
        tmp_path: Path, place: tuple[Any, ...], value: float, field: str) -> None:
    path = tiny_with(tmp_path, place, value)
    location = re.sub(r"\.(\d+)", r"[\1]", ".".join(str(p) for p in place))
    result = run("validate", str(path))
    refused(result, f"{path}: {location}", f"give {RANGES[field].text(field)} (",
            RANGES[field].reason[:30])


def test_the_limits_do_not_refuse_any_shipped_scenario() -> None:
    for path in sorted(scenarios_dir().glob("*.yaml")):
        assert run("validate", str(path)).exit_code == 0, path


# --- names and text -------------------------------------------------------------------------------


def test_a_name_past_its_length_is_refused(tmp_path: Path) -> None:
    # Was: a 300-character name validated, was planned for, and the plan then failed to write
    # outputs/<name>/ with OSError "File name too long", a traceback after a full solve.
    path = tiny_with(tmp_path, ("name",), "x" * 300)
    refused(run("plan", str(path)), f"{path}: name: name of 300 characters; at most "
            f"{MAX_NAME_CHARS}")


@pytest.mark.parametrize("name", ["red\x1b[31mtext", "bell\x07", "nul\x00x", "line\nbreak",
                                  "bidi\u202eoverride", "tab\tx"])
def test_control_characters_in_names_are_refused(tmp_path: Path, name: str) -> None:
    # Was: accepted; reached the terminal as escape sequences and broke the workbook's XML.
    path = tiny_with(tmp_path, ("workloads", 0, "name"), name)
    result = run("validate", str(path))
    refused(result, f"{path}: workloads[0].name: name holds control or invisible characters U+")
    assert "\x1b" not in result.output and "\x07" not in result.output


def test_newlines_are_allowed_in_descriptions_but_escapes_are_not(tmp_path: Path) -> None:
    ok = tiny_with(tmp_path, ("description",), "two\nlines\tand a tab")
    assert run("validate", str(ok)).exit_code == 0
    bad = tiny_with(tmp_path, ("description",), "clear screen \x1b[2J")
    refused(run("validate", str(bad)), f"{bad}: description: text holds control or invisible "
            "characters U+001B")


# --- lists ----------------------------------------------------------------------------------------


def test_a_list_past_its_length_is_one_problem_not_a_million(tmp_path: Path) -> None:
    # Was: 10^5 empty workloads gave 5 × 10^5 "missing" errors, all printed.
    path = tmp_path / "many.yaml"
    path.write_text("name: many\nworkloads:\n" + "  - {}\n" * (MAX_LIST_ENTRIES + 1),
                    encoding="utf-8")
    refused(run("validate", str(path)), f"{path}: workloads: {MAX_LIST_ENTRIES + 1:,} entries; "
            f"at most {MAX_LIST_ENTRIES:,} are read")


def test_an_error_lists_at_most_fifty_problems() -> None:
    error = InputError([Problem("f.csv", f"row {i}", "bad") for i in range(2, 1002)])
    lines = error.render().splitlines()
    assert lines[0] == "1000 problems in the input:"
    assert len(lines) == 1 + MAX_SHOWN_PROBLEMS + 1
    assert lines[-1] == f"  … and {1000 - MAX_SHOWN_PROBLEMS:,} more"


# --- the page that lists them --------------------------------------------------------------


def test_docs_limits_lists_every_range_and_limit() -> None:
    page = DOCS.read_text(encoding="utf-8")
    for field, r in RANGES.items():
        row = f"| `{field}` | {r.text()} |"
        assert row in page, f"docs/limits.md lacks the row {row!r}"
    constants = [n for n in dir(limits) if n.startswith(("MAX_", "MIN_"))]
    for name in constants:
        assert f"`{name}`" in page, f"docs/limits.md does not name {name}"
