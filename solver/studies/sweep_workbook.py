"""``sweep.xlsx``: the results table, the swings with their tornado chart, and the study."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.drawing.image import Image
from openpyxl.worksheet.worksheet import Worksheet

from solver.outputs.xlsx_bytes import stamp_of, workbook_bytes
from solver.outputs.xlsx_cells import COUNT, MONEY, SHARE, fit_columns, header, put
from solver.studies.tornado import Swing

SWEEP_SHEET = "Sweep"
TORNADO_SHEET = "Tornado"
STUDY_SHEET = "Study"

#: Number formats of the table's columns (others are written as they are).
FORMATS = {"cost_per_month": MONEY, "cost_per_million_tokens": "#,##0.0000", "gap": "0.00%",
           "survivability_margin": SHARE, "reserved_share": SHARE, "committed_share": SHARE,
           "gpus_total": COUNT,
           "plan_seconds": "0.0"}


#: The Sweep sheet's title of each column of the table (``sweep.csv`` keeps the keys, as
#: ``--json`` does): what it is and its unit; ``{cur}`` is the plan's currency.
TITLES = {"variant": "Variant", "label": "Label", "key": "Key", "sample": "Sample",
          "status": "Status", "currency": "Currency", "cost_per_month": "Cost [{cur}/month]",
          "cost_per_million_tokens": "Cost per million tokens [{cur}/Mtok]",
          "gap": "MIP gap [1]", "survivability": "Survivability",
          "survivability_margin": "Survivability margin [1]",
          "reserved_share": "Reserved share of cost [1]",
          "committed_share": "Committed share of cost (reserved + owned) [1]",
          "gpus_total": "GPUs, all types [GPUs]", "plan_seconds": "Plan time [s]",
          "attempts": "Attempts", "error": "Error", "diagnosis": "Diagnosis"}


def column_title(column: str, currency: str) -> str:
    """The Sweep sheet's header of a table column: :data:`TITLES`, ``GPUs <type> [GPUs]`` for
    ``gpus_<type>``, and a varied key as its path (its unit is the field's: the path names
    it)."""
    if column in TITLES:
        return TITLES[column].format(cur=currency)
    if column.startswith("gpus_"):
        return f"GPUs {column.removeprefix('gpus_')} [GPUs]"
    return column


def _cell(value: Any) -> Any:
    """A table value as a cell: NaN (pandas' empty) is an empty cell."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def write_table(ws: Worksheet, frame: pd.DataFrame, currency: str) -> None:
    """The results table, one variant a row, under a header row of titles with units."""
    header(ws, 1, [column_title(str(c), currency) for c in frame.columns])
    for r, values in enumerate(frame.itertuples(index=False), start=2):
        for c, (column, value) in enumerate(zip(frame.columns, values, strict=True), start=1):
            fmt = COUNT if str(column).startswith("gpus_") else FORMATS.get(str(column))
            put(ws, r, c, _cell(value), fmt)
    ws.freeze_panes = "D2"


def write_swings(ws: Worksheet, bars: Sequence[Swing], currency: str, chart: bytes) -> None:
    """The swings, widest first, and the tornado chart beside them."""
    header(ws, 1, ["Input", "Cheapest value", f"Mean cost there [{currency}/month]",
                   "Dearest value", f"Mean cost there [{currency}/month]",
                   f"Swing [{currency}/month]", "Variants with a cost"])
    for r, swing in enumerate(bars, start=2):
        put(ws, r, 1, swing.key)
        put(ws, r, 2, swing.low_value)
        put(ws, r, 3, swing.low_cost, MONEY)
        put(ws, r, 4, swing.high_value)
        put(ws, r, 5, swing.high_cost, MONEY)
        put(ws, r, 6, swing.width, MONEY)
        put(ws, r, 7, swing.variants, COUNT)
    fit_columns(ws)
    ws.add_image(Image(io.BytesIO(chart)), f"A{len(bars) + 4}")


def write_study(ws: Worksheet, study: Mapping[str, Any]) -> None:
    """What was varied and how it was planned, one setting a row."""
    header(ws, 1, ["Setting", "Value"])
    for r, (name, value) in enumerate(study.items(), start=2):
        put(ws, r, 1, name)
        shown = ", ".join(map(str, value)) if isinstance(value, list | tuple) else value
        put(ws, r, 2, shown if isinstance(shown, str | int | float | bool) or shown is None
            else str(shown))
    fit_columns(ws)


def sweep_workbook_bytes(frame: pd.DataFrame, bars: Sequence[Swing], chart: bytes,
                         study: Mapping[str, Any], currency: str, as_of: str | None) -> bytes:
    """``sweep.xlsx`` as bytes, stamped with the scenario's ``policy.as_of``."""
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = SWEEP_SHEET
    write_table(ws, frame, currency)
    fit_columns(ws)
    write_swings(wb.create_sheet(TORNADO_SHEET), bars, currency, chart)
    write_study(wb.create_sheet(STUDY_SHEET), study)
    return workbook_bytes(wb, stamp_of(as_of))
