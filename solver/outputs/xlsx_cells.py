"""Cells of fleetplan's workbooks: number formats, header rows, and text that never runs.

Text that came from a user (workload, tenant, zone names…) is always written as a string cell,
never as a formula: every cell goes through :func:`put`, and only a :class:`Formula` becomes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from openpyxl.cell.cell import Cell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.worksheet.worksheet import Worksheet

from models.text import FORMULA_STARTS, cell_text

MONEY = "#,##0.00"


RATE = "#,##0.000"


SHARE = "0.0%"


COUNT = "#,##0"


HEADER_FONT = Font(bold=True)


HEADER_FILL = PatternFill("solid", fgColor="DDE4EE")


SECTION_FONT = Font(bold=True, size=12)


GOOD_FILL = PatternFill("solid", fgColor="C6EFCE")


BAD_FILL = PatternFill("solid", fgColor="FFC7CE")


MAX_WIDTH = 48




@dataclass(frozen=True)
class Formula:
    """An Excel formula written by fleetplan itself (without the leading ``=``)."""

    text: str


Value = str | int | float | bool | Enum | Formula | None


def put(ws: Worksheet, row: int, col: int, value: Value, number_format: str | None = None) -> Cell:
    """Write one cell; strings are always text (never formulas), a :class:`Formula` is a formula."""
    cell: Cell = ws.cell(row=row, column=col)
    if isinstance(value, Formula):
        cell.value = "=" + value.text
    elif isinstance(value, Enum):
        put(ws, row, col, str(value.value))
    elif isinstance(value, str):
        text = cell_text(value)
        cell.value = text
        cell.data_type = "s"  # openpyxl would otherwise take "=…" for a formula
        if text.startswith(FORMULA_STARTS):
            cell.quotePrefix = True  # and Excel/LibreOffice keep it as text when edited
    else:
        cell.value = value
    if number_format is not None:
        cell.number_format = number_format
    return cell


def header(ws: Worksheet, row: int, titles: Sequence[str], col: int = 1) -> None:
    """A header row: bold on a light fill; titles carry their units in brackets."""
    for i, title in enumerate(titles):
        cell = put(ws, row, col + i, title)
        cell.font = HEADER_FONT
        cell.fill = HEADER_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")


def section(ws: Worksheet, row: int, title: str) -> None:
    """A section title inside a sheet that holds several tables."""
    put(ws, row, 1, title).font = SECTION_FONT


def fit_columns(ws: Worksheet) -> None:
    """Column widths from the longest text in each column (formulas count as 12 characters)."""
    widths: dict[int, int] = {}
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is None:
                continue
            n = 12 if cell.data_type == "f" else len(str(cell.value))
            widths[cell.column] = max(widths.get(cell.column, 8), min(n + 2, MAX_WIDTH))
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = width


def sheet_ref(title: str, cell: str) -> str:
    """A cross-sheet reference, quoted: ``'Purchase plan'!K9``."""
    return f"{quote_sheetname(title)}!{cell}"
