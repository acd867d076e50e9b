"""The workbook's *Schedule* sheet of a plan over periods: orders with their order-by dates,
arrivals and expiries, the inventory held with the day each line ends, each period's demand and
usable capacity per scenario (with a chart per workload), and the committed capacity held and
idle. Read off the plan (docs/outputs.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from openpyxl.chart import LineChart, Reference
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from models.common import PurchaseKind
from models.horizon import InventoryKind
from models.plan import Order, Plan
from models.scenario import Scenario
from models.text import cell_text
from solver.outputs.assumptions import assumed_held_prices
from solver.outputs.held import kept_from
from solver.outputs.labels import day_after
from solver.outputs.schedule import FALLBACK_NOW, idle_reason
from solver.outputs.xlsx_cells import COUNT, MONEY, RATE, Value, header, note_line, put, section

#: Number format of a date cell: a date Excel sorts and filters as one, shown as written.
DATE = "yyyy-mm-dd"


def _day(day: dt.date) -> dt.datetime:
    """A date as a cell value (openpyxl writes a datetime as a date serial number)."""
    return dt.datetime.combine(day, dt.time())


def _order_rows(ws: Worksheet, r: int, orders: Sequence[Order], shared: str) -> int:
    """One row per order from row ``r`` (``shared``: the scenario cell of an order every
    demand scenario shares); returns the next free row."""
    formats = {6: COUNT, 7: COUNT, 8: DATE, 9: DATE, 10: DATE, 13: RATE, 15: MONEY, 16: MONEY,
               17: MONEY}
    for o in orders:
        cells: list[Value] = [o.scenario or shared, o.zone, o.gpu, o.purchase, o.instance_type,
                              o.nodes, o.gpus, _day(o.order_by), _day(o.usable_from),
                              _day(o.expires), o.term_months, o.upfront, o.price_per_gpu_hour,
                              "assumed" if o.price_assumed else "quoted", o.cost_per_month,
                              o.cost_in_horizon, o.committed_total]
        for c, value in enumerate(cells, start=1):
            put(ws, r, c, value, formats.get(c))
        r += 1
    return r


OWNED_PAID_NOTE = ("owned: Whole commitment = the capital; Paid in horizon = the capital + "
                   "power and hosting inside the horizon, so it can be the larger")
"""The line under orders that buy hardware: the terminal and report.md say "capital (… paid
inside the horizon, power and hosting included)", the sheet's two columns said nothing, and
an owned order's paid figure above its commitment read as an error (a new user's finding)."""


NO_ORDERS_NOTE = "nothing ordered: the plan buys no reservation or hardware in any demand scenario"
"""The line under an empty orders table."""


def _owned_note(ws: Worksheet, r: int, orders: Sequence[Order]) -> int:
    """:data:`OWNED_PAID_NOTE` on row ``r`` where an order is owned; the next free row."""
    if not any(o.purchase is PurchaseKind.owned for o in orders):
        return r
    note_line(ws, r, OWNED_PAID_NOTE)
    return r + 1


HELD_NOTE = ("held: what the plan starts from (a reservation cannot be released early; it "
             "ends the day before \"Held to\": renew it by a new order)")


def _held_rows(ws: Worksheet, r: int, plan: Plan, scenario: Scenario) -> int:
    """The scenario's inventory lines from row ``r`` (a section, a header, a row a line, a
    note), each with the day it stops counting; returns the next free row, ``r`` when there
    is no inventory. The sheet listed new orders' expiries only: a held reservation ending
    inside the horizon, the renewal procurement must decide on, was on no row of it (a new
    user's finding); the Purchase plan sheet shows the first period's fleet alone."""
    if not scenario.inventory:
        return r
    cur = plan.cost.currency
    assumed = {a.index: a.price_per_gpu_hour for a in assumed_held_prices(scenario)}
    start = plan.horizon.start if plan.horizon is not None else None
    section(ws, r, "Held (inventory): nodes the plan starts from")
    header(ws, r + 1, ["Zone", "GPU", "Purchase", "Instance type", "Nodes", "GPUs",
                       "Usable from", "Held to (day after the last)",
                       f"Price [{cur}/GPU-hour]", "Price assumed", "From",
                       f"Running cost [{cur}/node-month]", f"Cost held [{cur}/month]"])
    r += 2
    for i, line in enumerate(scenario.inventory):
        reserved = line.purchase is InventoryKind.reserved
        price = line.price_per_gpu_hour if line.price_per_gpu_hour is not None else assumed.get(i)
        usable = line.available_from or start
        kept = kept_from(plan, line)
        cells: list[Value] = [
            line.zone, line.gpu, line.purchase.pool_kind, line.instance_type, line.nodes,
            None if line.gpus_per_node is None else line.nodes * line.gpus_per_node,
            None if usable is None else _day(usable),
            None if line.ends is None else _day(day_after(line.ends)),
            price if reserved else None,
            ("assumed" if i in assumed else "stated") if reserved else None,
            f"kept from {kept}" if kept is not None else f"inventory[{i}]",
            # owned: power and hosting (the capital is spent), which no cell gave (F12)
            None if reserved else scenario.held_running_cost(line),
            scenario.held_cost_per_month(line)]
        formats = {5: COUNT, 6: COUNT, 7: DATE, 8: DATE, 9: RATE, 12: MONEY, 13: MONEY}
        for c, value in enumerate(cells, start=1):
            put(ws, r, c, value, formats.get(c))
        r += 1
    note_line(ws, r, HELD_NOTE)
    return r + 2


def write_schedule(ws: Worksheet, plan: Plan, scenario: Scenario | None = None) -> None:
    """The Schedule sheet: orders, periods (demand and capacity), capacity held and idle."""
    cur = plan.cost.currency
    # a fallback fleet's orders are no recommendation (FALLBACK_NOW, fresh-s22 F8): the sheet
    # goes to procurement, so its title says so where the terminal and report.md do
    section(ws, 1, f"Orders of the fallback fleet: {FALLBACK_NOW}" if plan.solver.fallback
            else "Orders")
    titles = ["Scenario", "Zone", "GPU", "Purchase", "Instance type", "Nodes", "GPUs",
              "Order by", "Usable from", "Held to (day after the last)", "Term [months]", "Upfront",
              f"Price [{cur}/GPU-hour]", "Price assumed", f"Cost [{cur}/month]",
              f"Paid in horizon [{cur}]", f"Whole commitment [{cur}]"]
    header(ws, 2, titles)
    r = _owned_note(ws, _order_rows(ws, 3, plan.orders, "all (due before the re-plan)"),
                    plan.orders)
    if not plan.orders:
        # the terminal and report.md say "order now: nothing"; a header with no row under it
        # read as a sheet cut short (a new user's re-plan)
        note_line(ws, r, NO_ORDERS_NOTE)
        r += 1
    r += 1
    kept = plan.replanned_from
    if kept is not None:
        # a re-plan's orders kept from the earlier plan, as it wrote them (its paid and
        # committed figures are of its own horizon): the terminal and report.md list them,
        # and the workbook had no word of them
        section(ws, r, f"Kept from {kept.file} of {kept.plan_date} (scenario {kept.scenario}): "
                       "placed earlier, held in this plan"
                       + ("" if kept.kept else ": nothing (no order of it shared by every "
                          "demand scenario was due before this plan's date)"))
        header(ws, r + 1, [*titles[:-2], f"Paid in its horizon [{cur}]", titles[-1]])
        r = _owned_note(ws, _order_rows(ws, r + 2, kept.kept, "all (placed)"), kept.kept) + 1
    if scenario is not None:
        r = _held_rows(ws, r, plan, scenario)
    section(ws, r, "Periods: demand and usable capacity at the busiest slice [req/s]")
    workloads = sorted({w.workload for p in plan.periods for w in p.workloads})
    header(ws, r + 1, ["Scenario", "Period", "Start", f"Cost [{cur}/month]",
                       *(f"{w} {kind} [req/s]" for w in workloads
                         for kind in ("demand", "capacity"))])
    first = r + 2
    r = first
    for p in plan.periods:
        by = {w.workload: w for w in p.workloads}
        put(ws, r, 1, p.scenario)
        put(ws, r, 2, p.period, COUNT)
        put(ws, r, 3, _day(p.start), DATE)
        put(ws, r, 4, p.cost_per_month, MONEY)
        for i, w in enumerate(workloads):
            # absent from a period before its launch (its `from_period`): no demand, no replicas
            put(ws, r, 5 + 2 * i, by[w].demand_rps if w in by else 0.0, RATE)
            put(ws, r, 6 + 2 * i, by[w].capacity_rps if w in by else 0.0, RATE)
        r += 1
    last = r - 1
    r += 1
    section(ws, r, "Capacity held and running")
    header(ws, r + 1, ["Scenario", "Period", "Zone", "GPU", "Purchase", "GPUs", "Busy GPUs",
                       "Idle nodes", "Why idle"])
    r += 2
    for p in plan.periods:
        for g in p.gpus:
            # the reason the terminal and report.md give, where the plan tells it
            why = idle_reason(p, g, scenario) if g.idle_nodes else None
            row: list[Value] = [p.scenario, p.period, g.zone, g.gpu, g.purchase, g.gpus,
                                g.busy_gpus, g.idle_nodes, why]
            for c, cell in enumerate(row, start=1):
                put(ws, r, c, cell, COUNT if 6 <= c <= 8 else None)
            r += 1
    # right of every used column (the orders' 17 are wider than the periods' block), one
    # column left blank, so no chart hides a cell
    anchor = ws.max_column + 2
    for i, name in enumerate(workloads):
        chart = LineChart()
        chart.title = cell_text(f"{name}: demand and capacity per period (all scenarios)")
        chart.y_axis.title = "req/s"
        chart.x_axis.title = "scenario, period"
        chart.height, chart.width = 7.0, 16.0
        chart.add_data(Reference(ws, min_col=5 + 2 * i, max_col=6 + 2 * i, min_row=first - 1,
                                 max_row=last), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, max_col=2, min_row=first, max_row=last))
        for series in chart.series:  # straight lines between periods, never smoothed
            series.smooth = False
        ws.add_chart(chart, f"{get_column_letter(anchor)}{2 + 15 * i}")
    ws.freeze_panes = "A3"
