"""A workbook checked at the door, before openpyxl parses any of it.

An ``.xlsx`` file is a zip of XML parts. A few KiB of zip can expand to gigabytes, a sheet with
one cell at its last row makes a reader walk a million empty rows, and XML may declare entities
that expand without end or is cut short. So, from the zip's directory and the parts' text alone:
the number of parts and their sizes once unzipped (as declared: Python's zip reader stops at the
declared size), no DTD in any part (Excel never writes one; entities are how XML bombs), and per
worksheet the rows and cells it holds and the last row and column it names. Every refusal is an
:class:`~models.errors.InputError` naming the file, the part and the limit (docs/limits.md).
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from pathlib import Path

from openpyxl.utils import column_index_from_string

from models.errors import InputError, Problem
from models.input_files import read_bytes
from models.limits import (
    MAX_SHEET_CELLS,
    MAX_SHEET_COLUMNS,
    MAX_SHEET_ROWS,
    MAX_WORKBOOK_PARTS,
    MAX_WORKBOOK_UNZIPPED_BYTES,
    MIB,
)

__all__ = ["check_workbook"]

_DTD = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_FORMULA = re.compile(rb"<(?:\w+:)?f\b")
_ROW = re.compile(rb"<(?:\w+:)?row\b")
_CELL = re.compile(rb"<(?:\w+:)?c\b")
_ROW_NUMBER = re.compile(rb"<(?:\w+:)?row\b[^>]*?\sr\s*=\s*[\"'](\d{1,12})")
_CELL_REF = re.compile(rb"<(?:\w+:)?c\b[^>]*?\sr\s*=\s*[\"']([A-Za-z]{1,8})(\d{1,12})")
_FIX = "save it again from Excel or LibreOffice, or start from `fleetplan template`"


def check_workbook(path: Path) -> tuple[bytes, bool]:
    """The workbook's bytes, read once within its size, and whether any sheet holds a formula
    (if none does, its values need not be read a second time); refused past a limit of
    docs/limits.md, or when not a zip, before any part is parsed."""
    data = read_bytes(path, "scenario workbook")
    formulas = False
    file = str(path)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
            if len(parts) > MAX_WORKBOOK_PARTS:
                raise _refuse(file, "", f"{len(parts):,} parts in the zip; a workbook has at "
                              f"most {MAX_WORKBOOK_PARTS:,}")
            unzipped = sum(p.file_size for p in parts)
            if unzipped > MAX_WORKBOOK_UNZIPPED_BYTES:
                raise _refuse(file, "", f"{unzipped / MIB:,.0f} MiB once unzipped; at most "
                              f"{MAX_WORKBOOK_UNZIPPED_BYTES / MIB:,.0f} MiB are read")
            for part in parts:
                if part.filename.lower().endswith((".xml", ".rels", ".vml")):
                    text = archive.read(part)
                    _check_part(file, part.filename, text)
                    formulas = formulas or (part.filename.lower().startswith("xl/worksheets/")
                                            and _FORMULA.search(text) is not None)
    except InputError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
            RuntimeError, ValueError) as exc:  # RuntimeError: encrypted; NotImplemented: method
        raise InputError([Problem(file, "", f"not a readable .xlsx workbook: {exc}",
                                  _FIX)]) from None
    return data, formulas


def _check_part(file: str, name: str, data: bytes) -> None:
    if _DTD.search(data):
        raise InputError([Problem(file, name, "declares a DTD or entities, which no "
                                  "spreadsheet writes (they are how XML expands without end)",
                                  _FIX)])
    if not name.lower().startswith("xl/worksheets/"):
        return
    rows = len(_ROW.findall(data))
    cells = len(_CELL.findall(data))
    last_row = max((int(m) for m in _ROW_NUMBER.findall(data)), default=0)
    refs = _CELL_REF.findall(data)
    last_row = max(last_row, max((int(r) for _, r in refs), default=0))
    last_column = max((column_index_from_string(c.decode().upper()) for c, _ in refs
                       if len(c) <= 3), default=0)
    if any(len(c) > 3 for c, _ in refs):
        last_column = MAX_SHEET_COLUMNS + 1
    if max(rows, last_row) > MAX_SHEET_ROWS:
        raise _refuse(file, name, f"reaches row {max(rows, last_row):,}; a sheet is read up to "
                      f"row {MAX_SHEET_ROWS:,}")
    if last_column > MAX_SHEET_COLUMNS:
        raise _refuse(file, name, f"reaches column {last_column:,}; a sheet is read up to "
                      f"column {MAX_SHEET_COLUMNS:,}")
    if cells > MAX_SHEET_CELLS:
        raise _refuse(file, name, f"{cells:,} cells; a sheet is read up to "
                      f"{MAX_SHEET_CELLS:,}")


def _refuse(file: str, where: str, message: str) -> InputError:
    return InputError([Problem(file, where, f"past a limit: {message}",
                               "delete the rows and columns beyond the data, or split the "
                               "workbook (docs/limits.md)")])
