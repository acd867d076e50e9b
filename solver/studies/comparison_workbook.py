"""``compare.xlsx``: purchase scenarios side by side, then their detail in one table per topic.

The first sheet, Comparison, has one column per scenario (S1, S2, …). The others stack every
scenario's rows in one Excel Table with a *Scenario* column to filter on — purchase plan, pools,
survivability, cost attribution, assumed figures — so three variants print in a few pages
instead of three copies of every plan sheet. Each scenario's cost is a live formula over its
rows of the purchase plan (SUMIFS on the Scenario column), so editing a node count there moves
the comparison; it has a defined name (``S1_cost_per_month`` …).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from openpyxl import Workbook
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from solver.outputs.assumptions import ASSUMED, assumed_figures
from solver.outputs.figures import objective_cost, survivability_margins, tightest_cases
from solver.outputs.labels import OBJECTIVE_AS_MINIMISED, failure_label, plural, status_label
from solver.outputs.prepared import prepared_on
from solver.outputs.workbook import (
    POOL_TITLES,
    PRICE,
    PURCHASE_TITLES,
    pool_rows,
    purchase_rows,
)
from solver.outputs.xlsx_bytes import workbook_bytes
from solver.outputs.xlsx_cells import (
    COUNT,
    MONEY,
    RATE,
    SHARE,
    Formula,
    PrintFrame,
    Value,
    add_table,
    define_name,
    fit_columns,
    header,
    note_line,
    print_setup,
    prose_widths,
    put,
    sheet_ref,
)
from solver.studies.compare import (
    Compared,
    comparison_row,
    gpu_types,
    within_gap_lines,
)

COMPARISON_SHEET = "Comparison"
#: The detail sheets after the comparison, in order.
DETAIL_SHEETS = ("Purchase plan", "Pools", "Survivability", "Cost attribution", "Assumptions")
SCENARIO = "Scenario"
#: Row of the cost per month in the Comparison sheet.
COST_ROW = 4


def scenario_id(i: int) -> str:
    """The column title of the i-th compared scenario (0-based): ``S1``, ``S2``…"""
    return f"S{i + 1}"


def write_purchases(ws: Worksheet, results: Sequence[Compared], currency: str) -> int:
    """Every scenario's purchase rows, its id first; returns the last row."""
    header(ws, 1, [SCENARIO, *(t.format(cur=currency) for t in PURCHASE_TITLES)])
    r = 1
    for i, res in enumerate(results):
        r = purchase_rows(ws, r + 1, res.plan, res.variant.scenario, lead=(scenario_id(i),))
    add_table(ws, "All_purchases", 1, 1, r, 1 + len(PURCHASE_TITLES))
    ws.freeze_panes = "B2"
    return r


def horizon_scenarios(results: Sequence[Compared]) -> list[str]:
    """The demand scenarios of the plans over periods compared, in order of first appearance."""
    return list(dict.fromkeys(s.scenario for r in results if r.plan.horizon is not None
                              for s in r.plan.horizon.scenarios))


OBJECTIVE = OBJECTIVE_AS_MINIMISED
"""The figure a plan over periods is the cheapest by: "spent inside the horizon" counts an owned
order's whole capital, so a variant with 30 % more demand that reserved instead of buying
spent 437,001 where the other spent 674,090, though its objective was higher (366,456 against
333,121): without this row the comparison read as more demand costing less."""
NOW_GPUS = "Ordered now, the same in every demand scenario (due before the re-plan)"
NOW_COMMITTED = "Committed by the orders now (their whole terms)"
LATER_GPUS = "Ordered later, the most of any demand scenario"
"""Rows of plans over periods: their orders (``plan.orders``), which the first period's GPUs
below them do not show (an order serves from a later period)."""


def write_comparison(ws: Worksheet, results: Sequence[Compared], purchase_last: int) -> None:
    """Side by side, one column per scenario: cost, $/Mtok, committed share
    (reserved + owned), survivability, GPUs.

    Cost is a SUMIFS over the scenario's rows of the Purchase plan sheet; cost per Mtok divides
    it by the tokens a month the scenario carries. A plan over periods shows what each demand
    scenario spends inside its horizon where a one-day plan shows its cost per year (its
    first period × 12 would read as the year's spend, though later periods run other fleets),
    and its monthly figures are its first period's.
    """
    rows = [comparison_row(r) for r in results]
    currency = results[0].plan.cost.currency if results else "USD"
    spent = horizon_scenarios(results)
    one_day = not spent or any(r.plan.horizon is None for r in results)
    first = " (over periods: first period)" if spent else ""
    header(ws, 1, ["Figure", *(scenario_id(i) for i in range(len(results)))])
    labels = ["Scenario and variation", "Solver status",
              f"Cost per month{first} [{currency}/month]"]
    labels += [f"Cost per year [{currency}/year]"] if one_day else []
    labels += [f"Spent inside the horizon if demand follows {name} [{currency}]"
               for name in spent]
    labels += [f"{OBJECTIVE} [{currency}]"] if spent else []
    labels += [f"Tokens per month{first} [Mtok/month]",
               f"Cost per million tokens{first} [{currency}/Mtok]",
               f"Committed share of cost (reserved + owned){first} [1]", "Survivability",
               "MIP gap [1]"]
    labels += [f"{NOW_GPUS} [GPUs]", f"{NOW_COMMITTED} [{currency}]",
               f"{LATER_GPUS} [GPUs]"] if spent else []
    labels += ["What cannot be met"]
    types = gpu_types(rows)
    labels += [f"{g} GPUs (reserved + busiest elastic){first}" for g in types]
    labels += [f"All GPUs{first}"]
    at = {text.split(" [")[0]: r for r, text in enumerate(labels, start=2)}
    for text, r in zip(labels, at.values(), strict=True):
        put(ws, r, 1, text)
    assert at[f"Cost per month{first}"] == COST_ROW
    cost_col = get_column_letter(1 + PURCHASE_TITLES.index("Cost [{cur}/month]") + 1)
    purchases = "Purchase plan"
    tokens_row = at[f"Tokens per month{first}"]
    gpu_top = at["What cannot be met"] + 1
    for i, (row, res) in enumerate(zip(rows, results, strict=True)):
        c = i + 2
        letter = get_column_letter(c)
        has_fleet = row.cost_per_month is not None
        tokens = sum(w.tokens_per_month for w in res.plan.workload_costs) / 1e6
        h = res.plan.horizon
        put(ws, 2, c, row.label)
        put(ws, 3, c, status_label(res.plan.status, res.plan.solver))
        cost = Formula(
            f"SUMIFS({sheet_ref(purchases, f'${cost_col}$2:${cost_col}${purchase_last}')},"
            f"{sheet_ref(purchases, f'$A$2:$A${purchase_last}')},\"{scenario_id(i)}\")")
        put(ws, COST_ROW, c, cost if has_fleet else None, MONEY)
        if one_day:
            put(ws, at["Cost per year"], c,
                Formula(f"{letter}{COST_ROW}*12") if has_fleet and h is None else None, MONEY)
        by_name = {} if h is None else {s.scenario: s.cost_in_horizon for s in h.scenarios}
        for name in spent:
            put(ws, at[f"Spent inside the horizon if demand follows {name}"], c,
                by_name.get(name), MONEY)
        if spent:
            put(ws, at[OBJECTIVE], c, None if h is None else objective_cost(h), MONEY)
        put(ws, tokens_row, c, tokens, RATE)
        put(ws, at[f"Cost per million tokens{first}"], c,
            Formula(f"{letter}{COST_ROW}/{letter}{tokens_row}")
            if has_fleet and tokens > 0 else None, PRICE)
        put(ws, at[f"Committed share of cost (reserved + owned){first}"], c,
            row.committed_share, SHARE)
        put(ws, at["Survivability"], c, row.survivability)
        put(ws, at["MIP gap"], c, row.gap, "0.00%")
        if spent:  # what to order: the decision a plan over periods is made for
            now = [o for o in res.plan.orders if o.scenario is None]
            later: dict[str, int] = {}
            for o in res.plan.orders:
                if o.scenario is not None:
                    later[o.scenario] = later.get(o.scenario, 0) + o.gpus
            put(ws, at[NOW_GPUS], c, sum(o.gpus for o in now) if h else None, COUNT)
            put(ws, at[NOW_COMMITTED], c, sum(o.committed_total for o in now) if h else None,
                MONEY)
            put(ws, at[LATER_GPUS], c, max(later.values(), default=0) if h else None, COUNT)
        put(ws, at["What cannot be met"], c,
            "; ".join(d.message for d in res.plan.diagnosis) or None)
        for j, g in enumerate(types):
            put(ws, gpu_top + j, c, row.gpus_by_type.get(g, 0), COUNT)
        last = gpu_top + len(types)
        put(ws, last, c, Formula(f"SUM({letter}{gpu_top}:{letter}{last - 1})") if types else 0,
            COUNT)
    add_table(ws, "Comparison", 1, 1, len(labels) + 1, len(results) + 1)
    # under the table: differences the solver did not prove, as the terminal table says them
    for r, line in enumerate(within_gap_lines(rows, currency), start=len(labels) + 3):
        note_line(ws, r, line.strip())
    ws.freeze_panes = "B2"


def write_pools(ws: Worksheet, results: Sequence[Compared]) -> None:
    """Every scenario's pools, its id first."""
    header(ws, 1, [SCENARIO, *POOL_TITLES])
    r = 1
    for i, res in enumerate(results):
        r = pool_rows(ws, r + 1, res.plan, res.variant.scenario, res.table,
                      lead=(scenario_id(i),))
    add_table(ws, "All_pools", 1, 1, r, 1 + len(POOL_TITLES))
    ws.freeze_panes = "C2"


def write_survivability(ws: Worksheet, results: Sequence[Compared]) -> None:
    """Every scenario's tightest case per workload: the failure with the least margin (a
    failing one first) and its worst slice (every failure's row: each plan's report.md)."""
    header(ws, 1, [SCENARIO, "Workload", "Tightest failure", "Worst slice", "Capacity [req/s]",
                   "Demand [req/s]", "Margin [1]", "Failures checked", "Result"])
    r = 1
    for i, res in enumerate(results):
        names = [w.name for w in res.variant.scenario.workloads]
        for m, checked, failing in tightest_cases(survivability_margins(res.plan), names):
            r += 1
            cells: tuple[tuple[Value, str | None], ...] = (
                (scenario_id(i), None), (m.workload, None), (failure_label(m.failure), None),
                (m.slice, None), (m.capacity_rps, RATE), (m.demand_rps, RATE), (m.margin, SHARE),
                (checked, None), ("holds" if not failing else f"FAILS {failing}", None))
            for c, (v, fmt) in enumerate(cells, start=1):
                put(ws, r, c, v, fmt)
    add_table(ws, "All_survivability", 1, 1, r, 9)
    ws.freeze_panes = "B2"


def write_costs(ws: Worksheet, results: Sequence[Compared], currency: str) -> None:
    """Every scenario's cost per workload."""
    header(ws, 1, [SCENARIO, "Workload", "Tenant", f"Cost [{currency}/month]",
                   "Tokens [Mtok/month]", f"Cost per Mtok [{currency}/Mtok]"])
    r = 1
    for i, res in enumerate(results):
        for w in res.plan.workload_costs:
            r += 1
            cells: tuple[tuple[Value, str | None], ...] = (
                (scenario_id(i), None), (w.workload, None), (w.tenant, None),
                (w.cost_per_month, MONEY), (w.tokens_per_month / 1e6, RATE),
                (w.per_million_tokens, PRICE))
            for c, (v, fmt) in enumerate(cells, start=1):
                put(ws, r, c, v, fmt)
    add_table(ws, "All_costs", 1, 1, r, 6)
    ws.freeze_panes = "B2"


def write_assumed(ws: Worksheet, results: Sequence[Compared]) -> None:
    """Every scenario's assumed figures (the rest of each scenario is in its resolved file)."""
    header(ws, 1, [SCENARIO, "Assumed figure", "Value", "Applies to", "Why it is assumed"])
    r = 1
    for i, res in enumerate(results):
        for a in assumed_figures(res.variant.scenario):
            r += 1
            for c, v in enumerate((scenario_id(i), f"{a.figure} ({ASSUMED})", a.value,
                                   a.applies_to, a.why), start=1):
                put(ws, r, c, v)
    add_table(ws, "All_assumed", 1, 1, r, 5)
    ws.freeze_panes = "B2"


def comparison_workbook(results: Sequence[Compared], prepared: dt.date | None = None) -> Workbook:
    """One workbook: the side-by-side sheet, then one table per topic over every scenario."""
    day = prepared or prepared_on(*(r.variant.scenario.policy.as_of for r in results))
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = COMPARISON_SHEET
    sheets = {name: wb.create_sheet(name) for name in DETAIL_SHEETS}
    currency = results[0].plan.cost.currency if results else "USD"
    last = write_purchases(sheets["Purchase plan"], results, currency)
    write_comparison(ws, results, last)
    for i in range(len(results)):
        define_name(wb, f"{scenario_id(i)}_cost_per_month", COMPARISON_SHEET,
                    f"{get_column_letter(i + 2)}{COST_ROW}")
    write_pools(sheets["Pools"], results)
    write_survivability(sheets["Survivability"], results)
    write_costs(sheets["Cost attribution"], results, currency)
    write_assumed(sheets["Assumptions"], results)
    first = results[0].variant.scenario.name if results else ""
    frame = PrintFrame(f"{first}: {plural(len(results), 'variant')} compared", "",
                       day.isoformat())
    for sheet in (ws, *sheets.values()):
        fit_columns(sheet, prose_widths(sheet))
        print_setup(sheet, frame)
    return wb


def comparison_workbook_bytes(results: Sequence[Compared],
                              prepared: dt.date | None = None) -> bytes:
    """``compare.xlsx`` as bytes, dated the day it is prepared on (the latest ``policy.as_of``
    of the scenarios, else :func:`~solver.outputs.prepared.prepared_on`'s date)."""
    day = prepared or prepared_on(*(r.variant.scenario.policy.as_of for r in results))
    return workbook_bytes(comparison_workbook(results, day), dt.datetime.combine(day, dt.time()))
