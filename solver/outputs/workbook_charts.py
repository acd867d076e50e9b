"""The plan workbook's native charts: cost by zone stacked by GPU type × purchase kind, and per
workload demand, usable capacity and capacity after the worst required failure as straight
steps on the hour, drawn from the hidden *Chart data* sheet (the same content as the report's
PNG charts, :mod:`solver.outputs.charts`).
"""

from __future__ import annotations

from collections.abc import Sequence

from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.chart.label import DataLabelList
from openpyxl.chart.series import SeriesLabel
from openpyxl.worksheet.worksheet import Worksheet

from models.common import PurchaseKind
from models.plan import Plan
from models.scenario import Scenario
from models.text import cell_text
from solver.outputs.figures import PURCHASE_ORDER, DaySeries, cost_by_zone_gpu_and_kind
from solver.outputs.labels import label
from solver.outputs.xlsx_cells import header, put

__all__ = ["WHOLE_NO_ZERO", "series_titles", "write_charts"]

#: Whole numbers, a zero shown as nothing (a chart's empty stack segment carries no label).
WHOLE_NO_ZERO = "#,##0;-#,##0;;"


def series_titles(name: str) -> tuple[str, str, str]:
    """Titles of a workload's three hourly columns (Hourly and Chart data sheets)."""
    return (f"{name} demand [req/s]", f"{name} usable capacity [req/s]",
            f"{name} after the worst required failure [req/s]")


def _chart_data(ws: Worksheet, series: Sequence[DaySeries],
                costs: dict[tuple[str, str, PurchaseKind], float], tz: str,
                currency: str) -> tuple[int, list[str]]:
    """The hidden sheet the native charts draw from: every hourly series as step points (each
    hour's value at its start and at its end), then the cost of each zone by GPU type × kind.
    Every numeric column's header carries its unit, as on the other sheets. Returns the row of
    the cost block's header and its stack labels (without the unit: the chart's legend)."""
    header(ws, 1, [f"Hour ({tz}) [h]",
                   *(t for s in series for t in series_titles(s.workload))])
    for h in range(24):
        for edge, x in enumerate((h, h + 1)):
            r = 2 + 2 * h + edge
            put(ws, r, 1, x)
            for i, s in enumerate(series):
                put(ws, r, 2 + 3 * i, s.demand_rps[h])
                put(ws, r, 3 + 3 * i, s.usable_rps[h])
                if s.after_failure_rps is not None:
                    put(ws, r, 4 + 3 * i, s.after_failure_rps[h])
    top = 2 + 48 + 1
    stacks = sorted({(g, k) for _, g, k in costs},
                    key=lambda gk: (gk[0], PURCHASE_ORDER.index(gk[1])
                                    if gk[1] in PURCHASE_ORDER else 9))
    labels = [f"{g} {label(k).lower()}" for g, k in stacks]
    header(ws, top, ["Zone", *(f"{lab} [{currency}/month]" for lab in labels)])
    for r, zone in enumerate(sorted({z for z, _, _ in costs}), start=top + 1):
        put(ws, r, 1, zone)
        for c, (g, k) in enumerate(stacks, start=2):
            put(ws, r, c, costs.get((zone, g, k), 0.0), WHOLE_NO_ZERO)
    ws.sheet_state = "hidden"
    return top, labels


def _step_chart(data: Worksheet, s: DaySeries, i: int, tz: str) -> ScatterChart:
    """A workload's hourly series as straight-line steps (scatter, no smoothing, no markers)."""
    chart = ScatterChart(scatterStyle="line")
    chart.title = cell_text(s.workload)
    chart.y_axis.title = "req/s"
    chart.x_axis.title = cell_text(f"hour of the peak day ({tz}); usable = {s.utilization:.0%} "
                                   "of SLO rate")
    chart.x_axis.scaling.min, chart.x_axis.scaling.max = 0, 24
    chart.x_axis.majorUnit = 3
    chart.y_axis.scaling.min = 0
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.legend.position = "b"
    chart.height, chart.width = 7.0, 12.5
    xs = Reference(data, min_col=1, min_row=2, max_row=49)
    colours = ("D55E00", "0072B2", "009E73")
    columns = (2 + 3 * i, 3 + 3 * i, 4 + 3 * i)
    for c, colour in zip(columns, colours, strict=True):
        if c == 4 + 3 * i and s.after_failure_rps is None:
            continue
        series = Series(Reference(data, min_col=c, min_row=2, max_row=49), xs,
                        title_from_data=False,
                        title=("demand", "usable capacity",
                               "after the worst required failure")[columns.index(c)])
        series.smooth = False
        series.marker.symbol = "none"
        series.graphicalProperties.line.solidFill = colour
        series.graphicalProperties.line.width = 22000  # [EMU] ≈ 1.7 pt
        if c == 4 + 3 * i:
            series.graphicalProperties.line.dashStyle = "dash"
        chart.series.append(series)
    return chart


def _cost_chart(data: Worksheet, top: int, labels: Sequence[str], zones: int,
                currency: str) -> BarChart:
    """Stacked columns: each zone's monthly cost by GPU type × purchase kind, values shown;
    each stack titled with its label (the data's header adds the unit the y axis shows)."""
    chart = BarChart()
    chart.type = "col"
    chart.grouping = "stacked"
    chart.overlap = 100
    chart.title = "Monthly cost by zone, GPU type and purchase kind"
    chart.y_axis.title = cell_text(f"cost [{currency}/month]")
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.height, chart.width = 7.0, 25.4
    chart.add_data(Reference(data, min_col=2, max_col=1 + len(labels), min_row=top + 1,
                             max_row=top + zones))
    for stack, text in zip(chart.series, labels, strict=True):
        stack.tx = SeriesLabel(v=cell_text(text))
    chart.set_categories(Reference(data, min_col=1, min_row=top + 1, max_row=top + zones))
    # each segment's value only (no series or category name); a zero segment shows nothing
    chart.dataLabels = DataLabelList(showVal=True, showSerName=False, showCatName=False,
                                     showLegendKey=False, showPercent=False,
                                     showLeaderLines=False, numFmt=WHOLE_NO_ZERO)
    chart.y_axis.number_format = "#,##0"
    chart.legend.position = "r"
    return chart


def write_charts(ws: Worksheet, data: Worksheet, plan: Plan, scenario: Scenario,
                 series: Sequence[DaySeries]) -> None:
    """The report's two charts as native charts: cost by zone on top, then one step chart per
    workload, two abreast, all on one printed page."""
    costs = cost_by_zone_gpu_and_kind(plan)
    top, labels = _chart_data(data, series, costs, scenario.policy.time_zone,
                              plan.cost.currency)
    put(ws, 1, 1, "Charts of the plan: cost by zone, then capacity vs demand per workload "
                  f"(hours in {scenario.policy.time_zone}); their data is on the hidden "
                  f"sheet '{data.title}'.")
    zones = len({z for z, _, _ in costs})
    if costs:
        ws.add_chart(_cost_chart(data, top, labels, zones, plan.cost.currency), "A3")
    for i, s in enumerate(series):
        anchor = f"{'A' if i % 2 == 0 else 'J'}{18 + 15 * (i // 2)}"
        ws.add_chart(_step_chart(data, s, i, scenario.policy.time_zone), anchor)
