"""Cells of fleetplan's workbooks: number formats, header rows, text that never runs, and the
print layout, Excel Tables and defined names every sheet gets.

Text that came from a user (workload, tenant, zone names…) is always written as a string cell,
never as a formula: every cell goes through :func:`put`, and only a :class:`Formula` becomes one.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from openpyxl import Workbook
from openpyxl.cell.cell import Cell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.page import PageMargins
from openpyxl.worksheet.properties import PageSetupProperties
from openpyxl.worksheet.table import Table, TableStyleInfo
from openpyxl.worksheet.worksheet import Worksheet

from models.text import FORMULA_STARTS, cell_text, decimal_float
from solver.outputs.labels import label

MONEY = "#,##0.00"


RATE = "#,##0.000"


SHARE = "0.0%"


COUNT = "#,##0"


HEADER_FONT = Font(bold=True)


HEADER_FILL = PatternFill("solid", fgColor="DDE4EE")


SECTION_FONT = Font(bold=True, size=12)

#: A line of prose under a table (see :func:`note`).
NOTE_FONT = Font(italic=True)


GOOD_FILL = PatternFill("solid", fgColor="C6EFCE")


BAD_FILL = PatternFill("solid", fgColor="FFC7CE")


MAX_WIDTH = 40

#: Columns of long prose, by header title, and their width: wider than others so their rows
#: wrap over fewer lines (a derived reserved price's source is ~110 characters).
PROSE_COLUMNS = {"Price source": 72}

#: Height of one line of text in a row [pt] (Calibri 11).
LINE_HEIGHT = 15.0

#: Lines a header title may wrap over before it widens its column.
HEADER_LINES = 3




@dataclass(frozen=True)
class Formula:
    """An Excel formula written by fleetplan itself (without the leading ``=``)."""

    text: str


Value = str | int | float | bool | Enum | Formula | dt.datetime | None


def put(ws: Worksheet, row: int, col: int, value: Value, number_format: str | None = None) -> Cell:
    """Write one cell; strings are always text (never formulas), a :class:`Formula` is a formula."""
    cell: Cell = ws.cell(row=row, column=col)
    if isinstance(value, Formula):
        cell.value = "=" + value.text
    elif isinstance(value, Enum):
        put(ws, row, col, label(value))  # the words people read, not the identifier
    elif isinstance(value, str):
        text = cell_text(value)
        cell.value = text
        cell.data_type = "s"  # openpyxl would otherwise take "=…" for a formula
        if text.startswith(FORMULA_STARTS):
            cell.quotePrefix = True  # and Excel/LibreOffice keep it as text when edited
    elif isinstance(value, float):
        # the decimal the figure stands for, not its binary value's last digits: a quoted
        # 6.36 USD/GPU-hour was stored 6.359999999999999 (shown so in the formula bar)
        cell.value = decimal_float(value)
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


def note_line(ws: Worksheet, row: int, text: str) -> None:
    """A line of prose in an otherwise empty row: it runs on into the empty cells to its right,
    so it neither widens nor wraps the first column (:func:`fit_columns` skips it)."""
    put(ws, row, 1, text).font = NOTE_FONT


def _shown_width(cell: Cell) -> int:
    """Characters a cell shows: its text; a number as its format shows it (integer digits,
    the format's decimals, the text the format adds: a unit, *assumed*); a formula as ~12."""
    if cell.data_type == "s":
        return len(str(cell.value))
    fmt = (cell.number_format or "General").split(";")[0]
    extra = sum(len(part) for part in re.findall(r'"([^"]*)"', fmt))
    if cell.data_type == "f" or not isinstance(cell.value, int | float):
        return 12 + extra
    plain = re.sub(r'"[^"]*"', "", fmt)
    decimals = len(plain.split(".")[1].rstrip("%")) if "." in plain else 0
    if fmt == "General":
        return len(f"{cell.value}")
    scale = 100 if "%" in plain else 1
    return len(f"{cell.value * scale:,.0f}") + (decimals + 1 if decimals else 0) + extra + (
        1 if "%" in plain else 0)


def fit_columns(ws: Worksheet, max_widths: Mapping[int, int] | None = None) -> None:
    """Column widths from the widest shown cell in each column (at most :data:`MAX_WIDTH`, or
    the column's own limit in ``max_widths``, by column number: a column of long prose wraps
    over fewer lines).

    A header title wraps over up to three lines (its longest word sets the least width), so a
    long title does not widen its column; long text in a body cell wraps too. Rows grow to the
    lines they need.
    """
    limits = max_widths or {}
    widths: dict[int, int] = {}
    wrapped: list[tuple[Cell, int]] = []
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is None or cell.font == SECTION_FONT or cell.font == NOTE_FONT:
                continue  # empty, or a title or note running on into the empty cells right
            n = _shown_width(cell)
            if cell.font == HEADER_FONT and cell.data_type == "s":
                longest = max((len(word) for word in str(cell.value).split()), default=n)
                need = max(longest, -(-n // HEADER_LINES))
                wrapped.append((cell, n))
            elif n + 2 > limits.get(cell.column, MAX_WIDTH) and cell.data_type == "s":
                # long text wraps inside its column, and its row grows, instead of widening
                # the sheet (which would shrink every printed page of it)
                cell.alignment = Alignment(wrap_text=True, vertical="top")
                wrapped.append((cell, n))
                need = n
            else:
                need = n
            widest = limits.get(cell.column, MAX_WIDTH)
            widths[cell.column] = max(widths.get(cell.column, 8), min(need + 2, widest))
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = width
    lines: dict[int, int] = {}
    for cell, n in wrapped:
        width = widths.get(cell.column, 8) - 2
        lines[cell.row] = max(lines.get(cell.row, 1), -(-n // max(width - 2, 1)))
    for row_number, count in lines.items():
        if count > 1:
            ws.row_dimensions[row_number].height = LINE_HEIGHT * count
        for cell in ws[row_number]:  # the row's other cells line up with the wrapped text
            if not cell.alignment.wrap_text:
                cell.alignment = Alignment(horizontal=cell.alignment.horizontal,
                                           vertical="top")


def prose_widths(ws: Worksheet) -> dict[int, int]:
    """Width limits of the sheet's prose columns (:data:`PROSE_COLUMNS`), found by the titles
    of its first row, for :func:`fit_columns`."""
    return {c.column: PROSE_COLUMNS[c.value] for c in ws[1]
            if isinstance(c.value, str) and c.value in PROSE_COLUMNS}


def sheet_ref(title: str, cell: str) -> str:
    """A cross-sheet reference, quoted: ``'Purchase plan'!K9``."""
    return f"{quote_sheetname(title)}!{cell}"


# --- print layout, Excel Tables, number formats with units, defined names --------------------

#: Table style of every data block (banded rows; the header keeps fleetplan's own style).
TABLE_STYLE = "TableStyleLight9"

#: Shown after a figure nobody gave, inside its number format (the cell stays a number).
ASSUMED_SUFFIX = " (assumed)"

#: Characters a unit may keep inside a number format (anything else is left out).
_UNIT_CHARS = re.compile(r"[^A-Za-z0-9 /%.·€$£¥-]")


def unit_format(number_format: str, unit: str) -> str:
    """A number format that shows the unit after the figure: ``#,##0.00" USD/month"``.

    The figure stays a number (sums and formulas work on it); the unit is quoted text of the
    format, so only plain characters are kept.
    """
    text = _UNIT_CHARS.sub("", unit).strip()
    return f'{number_format}" {text}"' if text else number_format


def assumed_format(number_format: str) -> str:
    """A number format that says *assumed* after the figure: ``#,##0.0000" (assumed)"``."""
    return f'{number_format}"{ASSUMED_SUFFIX}"'


def table_name(text: str) -> str:
    """An Excel Table or defined name from ``text``: letters, digits and ``_``, starting with a
    letter, never read as a cell reference (``S1`` would be: it becomes ``S1_``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "Table"
    if not name[0].isalpha():
        name = "T_" + name
    if re.fullmatch(r"[A-Za-z]{1,3}\d+", name) or re.fullmatch(r"[RrCc]\d*", name):
        name += "_"
    return name


def add_table(ws: Worksheet, name: str, first_row: int, first_col: int, last_row: int,
              last_col: int) -> bool:
    """Make ``first_row`` (a header row of unique text cells) and the rows below up to
    ``last_row`` an Excel Table with an autofilter; nothing when it has no data row (Excel
    repairs a table without one). Returns whether a table was added."""
    if last_row <= first_row or last_col < first_col:
        return False
    ref = (f"{get_column_letter(first_col)}{first_row}:"
           f"{get_column_letter(last_col)}{last_row}")
    table = Table(displayName=table_name(name), ref=ref)
    table.tableStyleInfo = TableStyleInfo(name=TABLE_STYLE, showRowStripes=True,
                                          showColumnStripes=False, showFirstColumn=False,
                                          showLastColumn=False)
    ws.add_table(table)
    return True


def define_name(wb: Workbook, name: str, sheet: str, cell: str) -> None:
    """A workbook-wide defined name for one cell, absolute: ``cost_per_month`` →
    ``'Summary'!$B$11``; other sheets' formulas use the name, not the address."""
    column = "".join(ch for ch in cell if ch.isalpha())
    row = cell[len(column):]
    wb.defined_names[name] = DefinedName(name, attr_text=sheet_ref(sheet, f"${column}${row}"))


@dataclass(frozen=True)
class PrintFrame:
    """What every printed page of a workbook says: the scenario, the input fingerprint and the
    date the workbook was prepared; the page number is added per sheet."""

    scenario: str
    fingerprint: str
    prepared: str
    title: str = "fleetplan"


def _header_text(text: str, limit: int = 80) -> str:
    """User text inside a header or footer: ``&`` starts a code there, so it is doubled; control
    characters go; long text is cut (the whole header/footer may hold 255 characters)."""
    text = cell_text(text).replace("\n", " ").replace("\r", " ")
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("&", "&&")


def print_setup(ws: Worksheet, frame: PrintFrame, title_rows: str | None = "1:1",
                one_page: bool = False) -> None:
    """Landscape, fit to one page wide (``one_page``: and tall), header rows repeated on every
    page, a header with the sheet's name and a footer with scenario, fingerprint, date prepared
    and page x of y."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 1 if one_page else 0
    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=True)
    ws.print_options.horizontalCentered = False
    ws.page_margins = PageMargins(left=0.5, right=0.5, top=0.75, bottom=0.75, header=0.3,
                                  footer=0.3)
    if title_rows is not None:
        ws.print_title_rows = title_rows
    fingerprint = frame.fingerprint.removeprefix("sha256:")[:12]
    ws.oddHeader.left.text = _header_text(frame.title)
    ws.oddHeader.center.text = "&B&A"  # the sheet's name, bold
    ws.oddFooter.left.text = _header_text(f"Scenario {frame.scenario}") + (
        f" · fingerprint {fingerprint}" if fingerprint else "")
    ws.oddFooter.center.text = f"Prepared {frame.prepared}"
    ws.oddFooter.right.text = "Page &P of &N"
