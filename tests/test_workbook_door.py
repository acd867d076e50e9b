"""Hostile workbooks are refused at the door (models/workbook_door.py), located, in seconds.

Each was a traceback, minutes or gigabytes before: a zip of a few MiB that expands to
gigabytes (killed at 60 s under 3 GiB), one cell at the last row of a sheet, a sheet cut short
(xml's ParseError), entities declared in a sheet (a ParseError out of expat's amplification
guard, or, below it, expanded). The bomb runs in a bounded child: a regression must not take
the machine's memory.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from models.documents import read_document
from models.errors import InputError
from models.limits import MAX_SHEET_CELLS, MAX_SHEET_ROWS, MAX_WORKBOOK_PARTS
from solver.outputs.scenario_template import template_workbook
from tests.hostile import run_bounded

SHEET = "xl/worksheets/sheet2.xml"  # the `scenario` sheet
BOMB_LETTERS = "".join(f'<!ENTITY {n} "{("&" + p + ";") * 10}">'
                       for p, n in zip("abcdefg", "bcdefgh", strict=True))
BOMB_DTD = f'<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">{BOMB_LETTERS}]>'


@pytest.fixture
def template(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.xlsx"
    template_workbook().save(path)
    return path


def rewrite(src: Path, dst: Path, part: str, change: Callable[[bytes], bytes]) -> Path:
    """``src`` with one part's bytes changed."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info.filename, change(data) if info.filename == part else data)
    return dst


def refused(path: Path, *texts: str) -> None:
    with pytest.raises(InputError) as err:
        read_document(path)
    for text in (str(path), *texts):
        assert text in str(err.value), (text, str(err.value))


def test_the_template_passes_the_door(template: Path) -> None:
    assert read_document(template)["name"]


def test_one_cell_at_the_last_row_is_refused_before_the_rows_are_read(
        template: Path, tmp_path: Path) -> None:
    path = rewrite(template, tmp_path / "last.xlsx", SHEET, lambda b: b.replace(
        b"</sheetData>", b'<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>x</t></is>'
        b"</c></row></sheetData>"))
    refused(path, f"{SHEET}: past a limit: reaches row 1,048,576; a sheet is read up to row "
            f"{MAX_SHEET_ROWS:,}")


def test_a_cell_past_the_last_column_is_refused(template: Path, tmp_path: Path) -> None:
    path = rewrite(template, tmp_path / "wide.xlsx", SHEET, lambda b: b.replace(
        b"</sheetData>", b'<row r="9"><c r="XFD9" t="inlineStr"><is><t>x</t></is></c></row>'
        b"</sheetData>"))
    refused(path, "reaches column 16,384")


def test_rows_without_numbers_are_counted(template: Path, tmp_path: Path) -> None:
    path = rewrite(template, tmp_path / "rows.xlsx", SHEET, lambda b: b.replace(
        b"</sheetData>", b"<row/>" * (MAX_SHEET_ROWS + 1) + b"</sheetData>"))
    refused(path, "past a limit: reaches row")
    path = rewrite(template, tmp_path / "cells.xlsx", SHEET, lambda b: b.replace(
        b"</sheetData>", b'<row r="7">' + b"<c/>" * (MAX_SHEET_CELLS + 1) + b"</row></sheetData>"))
    refused(path, f"cells; a sheet is read up to {MAX_SHEET_CELLS:,}")


def test_a_sheet_cut_short_is_not_a_readable_workbook(template: Path, tmp_path: Path) -> None:
    path = rewrite(template, tmp_path / "cut.xlsx", SHEET, lambda b: b[: len(b) // 2])
    refused(path, "not a readable .xlsx workbook")


def test_entities_are_refused_before_they_expand(template: Path, tmp_path: Path) -> None:
    path = rewrite(template, tmp_path / "ent.xlsx", SHEET, lambda b: BOMB_DTD.encode()
                   + b[b.index(b"?>") + 2:] if b"?>" in b else BOMB_DTD.encode() + b)
    refused(path, f"{SHEET}: declares a DTD or entities")


def test_too_many_parts_are_refused(template: Path, tmp_path: Path) -> None:
    path = tmp_path / "parts.xlsx"
    with zipfile.ZipFile(template) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info.filename))
        for i in range(MAX_WORKBOOK_PARTS):
            zout.writestr(f"xl/extra{i}.bin", b"")
    refused(path, f"parts in the zip; a workbook has at most {MAX_WORKBOOK_PARTS:,}")


def test_a_zip_that_expands_to_gigabytes_is_refused_in_seconds(template: Path,
                                                              tmp_path: Path) -> None:
    # Was: 3.7 MB on disk, 2.4 GB unzipped; `validate` ran past 60 s under 3 GiB.
    path = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(template) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename != SHEET:
                zout.writestr(info.filename, data)
                continue
            with zout.open(info.filename, "w", force_zip64=True) as fh:
                cut = data.index(b"<sheetData>") + len(b"<sheetData>")
                fh.write(data[:cut])
                for _ in range(100):  # 600 MiB of empty rows
                    fh.write(b"<row/>" * (1 << 20))
                fh.write(data[cut:])
    assert path.stat().st_size < 4 * 1024**2
    done = run_bounded("validate", str(path), cwd=tmp_path, timeout_s=60)
    assert done.exit_code == 2 and not done.traceback, done.output
    assert "600 MiB once unzipped; at most 64 MiB are read" in done.output
