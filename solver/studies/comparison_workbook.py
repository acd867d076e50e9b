"""``compare.xlsx``: purchase scenarios side by side, then each plan's own sheets."""

from __future__ import annotations

from collections.abc import Sequence

from openpyxl import Workbook
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from solver.outputs.workbook import SUMMARY_COST_ROW, SUMMARY_MTOK_ROW, Names, add_plan_sheets
from solver.outputs.xlsx_bytes import stamp_of, workbook_bytes
from solver.outputs.xlsx_cells import (
    COUNT,
    MONEY,
    SHARE,
    Formula,
    fit_columns,
    header,
    put,
    sheet_ref,
)
from solver.studies.compare import Compared, comparison_row, gpu_types

COMPARISON_SHEET = "Comparison"


def _plan_prefix(i: int) -> str:
    """Sheet prefix of the i-th compared plan (0-based): ``S1 ``, ``S2 ``…"""
    return f"S{i + 1} "


def write_comparison(ws: Worksheet, results: Sequence[Compared]) -> None:
    """Side by side, one column per scenario: cost, $/Mtok, reserved share, survivability, GPUs.

    Cost and $/Mtok are formulas pointing at each plan's own Summary sheet, so an edit in a
    plan's purchase sheet shows here too.
    """
    rows = [comparison_row(r) for r in results]
    currency = results[0].plan.cost.currency if results else "USD"
    header(ws, 1, ["Figure", *(f"S{i + 1}" for i in range(len(results)))])
    labels = ["Scenario and variation", "Solver status", f"Cost per month [{currency}/month]",
              f"Cost per year [{currency}/year]", f"Cost per million tokens [{currency}/Mtok]",
              "Reserved share of cost [1]", "Survivability", "MIP gap [1]"]
    types = gpu_types(rows)
    labels += [f"{g} GPUs (reserved + busiest elastic)" for g in types] + ["All GPUs"]
    for r, label in enumerate(labels, start=2):
        put(ws, r, 1, label)
    gpu_top = 2 + 8
    for i, row in enumerate(rows):
        c = i + 2
        summary = Names(_plan_prefix(i))["Summary"]
        has_fleet = row.cost_per_month is not None
        put(ws, 2, c, row.label)
        put(ws, 3, c, row.status)
        put(ws, 4, c, Formula(sheet_ref(summary, f"B{SUMMARY_COST_ROW}")) if has_fleet else None,
            MONEY)
        letter = get_column_letter(c)
        put(ws, 5, c, Formula(f"{letter}4*12") if has_fleet else None, MONEY)
        put(ws, 6, c, Formula(sheet_ref(summary, f"B{SUMMARY_MTOK_ROW}"))
            if has_fleet and row.per_million_tokens is not None else None, "#,##0.0000")
        put(ws, 7, c, row.reserved_share, SHARE)
        put(ws, 8, c, row.survivability)
        put(ws, 9, c, row.gap, "0.00%")
        for j, g in enumerate(types):
            put(ws, gpu_top + j, c, row.gpus_by_type.get(g, 0), COUNT)
        last = gpu_top + len(types)
        put(ws, last, c, Formula(f"SUM({letter}{gpu_top}:{letter}{last - 1})") if types else 0,
            COUNT)
    ws.freeze_panes = "B2"


def comparison_workbook(results: Sequence[Compared]) -> Workbook:
    """One workbook: the side-by-side sheet, then each plan's own sheets prefixed ``S<n> ``."""
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = COMPARISON_SHEET
    write_comparison(ws, results)
    for i, r in enumerate(results):
        add_plan_sheets(wb, r.plan, r.variant.scenario, r.table, prefix=_plan_prefix(i))
    fit_columns(ws)
    return wb


def comparison_workbook_bytes(results: Sequence[Compared]) -> bytes:
    """``compare.xlsx`` as bytes, stamped with the latest ``policy.as_of`` of the scenarios."""
    stamp = stamp_of(*(r.variant.scenario.policy.as_of for r in results))
    return workbook_bytes(comparison_workbook(results), stamp)
