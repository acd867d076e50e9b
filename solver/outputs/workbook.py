"""The procurement workbook ``plan.xlsx``: the plan as finance and procurement read and print it.

Sheets: Summary, Purchase plan, Pools, Hourly, Charts, Survivability, Capacity contract, Cost
attribution, Assumptions, and a hidden *Chart data* sheet the native charts draw from
(:mod:`solver.outputs.workbook_charts`; docs/outputs.md says where each figure comes from).
Every data block is an Excel Table (an autofilter on its header, banded rows), every sheet
prints landscape, one page wide, its header row repeated, with scenario, fingerprint, date
prepared and page x of y in the footer. Costs and totals of the purchase plan are live
formulas, so editing a node count moves the cost; the figures other sheets (and the comparison)
use have defined names (``cost_per_month``…). Text that came from a user is always written as a
string cell, never as a formula (:func:`put`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openpyxl import Workbook
from openpyxl.formatting.rule import FormulaRule
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from models.capacity import CapacityRow, CapacityTable
from models.catalog import EfficiencyFactors
from models.common import CapacitySource, PurchaseKind
from models.offers import AssumedFigure, Offer, OnDemandTerms, ReservedTerms, SpotTerms
from models.plan import HorizonStart, NodeCount, Plan
from models.scenario import Scenario
from models.workload import Workload
from solver.outputs.assumptions import (
    ASSUMED,
    arrivals_text,
    offer_assumes,
    offers_bought,
    plan_assumptions,
    price_source,
    utilization_assumed,
)
from solver.outputs.atomic import write_atomic
from solver.outputs.contract import Contract, ContractRow, build_contract
from solver.outputs.figures import (
    PURCHASE_ORDER,
    DaySeries,
    capacity_headroom,
    day_series,
    gpus_by,
    intact_at_failure_utilization,
    objective_cost,
    peak_utilization,
    slice_figures,
    survivability_margins,
    tenant_costs,
    tightest_cases,
    tokens_per_month,
)
from solver.outputs.held import held_in_row, partly_held, row_price_source
from solver.outputs.labels import (
    FROM_TODAY,
    OBJECTIVE_AS_MINIMISED,
    PARTLY_HELD_RULE,
    TO_EXCLUSIVE,
    config_label,
    diagnosis_title,
    failure_label,
    label,
    status_label,
)
from solver.outputs.prepared import prepared_on
from solver.outputs.schedule import SPENT_COUNTS
from solver.outputs.schedule_sheet import write_schedule
from solver.outputs.slo_binding import binding_text, row_e2e_ms
from solver.outputs.units import field_header
from solver.outputs.workbook_charts import series_titles, write_charts
from solver.outputs.xlsx_bytes import workbook_bytes
from solver.outputs.xlsx_cells import (
    BAD_FILL,
    COUNT,
    GOOD_FILL,
    HEADER_FONT,
    MONEY,
    RATE,
    SHARE,
    Formula,
    PrintFrame,
    Value,
    add_table,
    assumed_format,
    define_name,
    fit_columns,
    header,
    note_line,
    print_setup,
    prose_widths,
    put,
    section,
    sheet_ref,
    unit_format,
)

#: Sheet titles, in workbook order (the hidden chart data sheet comes last).
SHEETS = ("Summary", "Purchase plan", "Pools", "Hourly", "Charts", "Survivability",
          "Capacity contract", "Cost attribution", "Assumptions", "Offers")
CHART_DATA = "Chart data"
#: Sheets holding one table: its header row is repeated on every printed page.
ONE_TABLE = ("Purchase plan", "Pools", "Hourly", "Capacity contract", "Offers")

#: Every efficiency factor, in schema order: the Assumptions sheet shows them all.
EFFICIENCY_FIELDS = tuple(EfficiencyFactors.model_fields)

#: Defined names of the Summary's figures (other sheets and the comparison use these names).
COST_PER_MONTH = "cost_per_month"
COST_PER_YEAR = "cost_per_year"
COST_PER_MTOK = "cost_per_mtok"
COST_PER_OUTPUT_MTOK = "cost_per_output_mtok"
TOKENS_PER_MONTH = "tokens_per_month"
OUTPUT_TOKENS_PER_MONTH = "output_tokens_per_month"
PREPARED_ON = "prepared_on"

#: The Summary's line on formulas: a script reading the workbook finds their cells empty.
LIVE_FORMULAS = ("Cost per month, cost per million tokens and the Purchase plan's GPUs and "
                 "costs are live formulas: Excel and LibreOffice compute them on open; the file "
                 "stores no computed value, so pandas and openpyxl read them empty. Scripts: "
                 "read plan.json, or recalculate first (README, \"Reading plan.xlsx from a "
                 "script\").")

#: Figures at 4 decimals: prices per GPU-hour, cost per Mtok.
PRICE = "#,##0.0000"


@dataclass(frozen=True)
class Names:
    """Sheet titles and defined names of one plan in a workbook (prefixed when several plans
    share it)."""

    prefix: str = ""

    def __getitem__(self, sheet: str) -> str:
        return f"{self.prefix}{sheet}"

    def name(self, figure: str) -> str:
        """A defined name of this plan: ``cost_per_month``, or ``S1_cost_per_month``."""
        return f"{self.prefix.strip().replace(' ', '_')}_{figure}" if self.prefix else figure


def _offer(scenario: Scenario, zone: str, gpu: str) -> Offer | None:
    zones = [z for z in scenario.zones if z.id == zone]
    return next((o for o in zones[0].offers if o.gpu == gpu), None) if zones else None


def _gpus_per_node(scenario: Scenario, zone: str, gpu: str, nodes: int, gpus: int) -> int:
    """GPUs per node of an offer: the plan's own ratio, else the offer's, else the GPU type's."""
    if nodes > 0 and gpus % nodes == 0:
        return gpus // nodes
    offer = _offer(scenario, zone, gpu)
    if offer is not None and offer.gpus_per_node is not None:
        return offer.gpus_per_node
    return scenario.gpu(gpu).gpus_per_node


def _replicas_held(plan: Plan, nodes: NodeCount) -> dict[int, int]:
    """Replicas by TP degree running on a node row's nodes (whole replicas on whole nodes: an
    odd node size leaves GPUs no replica can use) [replicas]."""
    held: dict[int, int] = {}
    for a in plan.allocations:
        if (a.zone, a.gpu, a.purchase, a.slice) == (nodes.zone, nodes.gpu, nodes.purchase,
                                                    nodes.slice):
            held[a.tp] = held.get(a.tp, 0) + a.replicas
    return dict(sorted(held.items()))


def _maybe_assumed(number_format: str, assumed: bool) -> str:
    return assumed_format(number_format) if assumed else number_format


PURCHASE_TITLES = ("Zone", "GPU", "Purchase kind", "Slice", "Instance type", "GPUs per node",
                   "Nodes", "GPUs", "Price [{cur}/GPU-hour]", "Hours paid [h/month]",
                   "Cost [{cur}/month]", "Lead time [weeks]", "Commitment [months]",
                   "Stock [GPUs]", "Price source", "Replicas held [TP × replicas]",
                   "GPUs no replica uses", "Already held")


def purchase_rows(ws: Worksheet, first_row: int, plan: Plan, scenario: Scenario,
                  lead: Sequence[Value] = ()) -> int:
    """Purchase rows from ``first_row`` on, each with its live cost formula (``lead`` cells
    first, e.g. the variant of a comparison); returns the last row written. A figure nobody
    gave (a derived reserved price, a table's stock) says *assumed* in its number format."""
    order = {k: i for i, k in enumerate(PURCHASE_ORDER)}
    slice_order = {s.name: i for i, s in enumerate(plan.slices)}
    nodes = sorted(plan.nodes, key=lambda n: (n.zone, n.gpu, order.get(n.purchase, 9),
                                              slice_order.get(n.slice or "", -1)))
    c0 = len(lead)
    col = {t.split(" [")[0]: c0 + i for i, t in enumerate(PURCHASE_TITLES, start=1)}
    letter = {k: get_column_letter(v) for k, v in col.items()}
    r = first_row - 1
    for n in nodes:
        r += 1
        offer = _offer(scenario, n.zone, n.gpu)
        terms = offer.terms(n.purchase) if offer is not None else None
        for c, v in enumerate(lead, start=1):
            put(ws, r, c, v)
        put(ws, r, col["Zone"], n.zone)
        put(ws, r, col["GPU"], n.gpu)
        put(ws, r, col["Purchase kind"], n.purchase)
        put(ws, r, col["Slice"], n.slice if n.slice is not None else "all day")
        put(ws, r, col["Instance type"],
            n.instance_type or (offer.instance_type if offer is not None else None))
        put(ws, r, col["GPUs per node"],
            _gpus_per_node(scenario, n.zone, n.gpu, n.nodes, n.gpus), COUNT)
        put(ws, r, col["Nodes"], n.nodes, COUNT)
        put(ws, r, col["GPUs"], Formula(f"{letter['GPUs per node']}{r}*{letter['Nodes']}{r}"),
            COUNT)
        held = held_in_row(plan, scenario, n, offer, plan.cost.currency)
        # the new nodes' price is the offer's; held nodes' their line's, else the rule's
        reserved_assumed = (offer is not None and n.purchase is PurchaseKind.reserved
                            and (held is None or not held.all_held)
                            and offer_assumes(offer, AssumedFigure.reserved_price))
        reserved_assumed |= held is not None and held.price_assumed
        put(ws, r, col["Price"], n.price_per_gpu_hour, _maybe_assumed(PRICE, reserved_assumed))
        put(ws, r, col["Hours paid"], n.hours_per_month, "#,##0.0")
        put(ws, r, col["Cost"], Formula(f"{letter['GPUs']}{r}*{letter['Price']}{r}*"
                                        f"{letter['Hours paid']}{r}"), MONEY)
        quote = offer.terms(PurchaseKind.reserved) if offer is not None else None
        new_nodes = held is None or not held.all_held  # a quote's terms are for new nodes
        if (n.purchase is PurchaseKind.reserved and isinstance(quote, ReservedTerms)
                and new_nodes):
            term_assumed = offer is not None and offer_assumes(offer, AssumedFigure.reserved_term)
            put(ws, r, col["Lead time"], quote.lead_time_weeks,
                _maybe_assumed("0.0", term_assumed or quote.lead_time_assumed))
            put(ws, r, col["Commitment"], quote.commitment_months,
                _maybe_assumed(COUNT, term_assumed))
        if terms is not None and offer is not None and new_nodes:
            put(ws, r, col["Stock"], terms.stock_gpus,
                _maybe_assumed(COUNT, offer_assumes(offer, AssumedFigure.stock)))
        put(ws, r, col["Price source"],
            row_price_source(n, offer, held, plan.cost.currency))
        replicas = _replicas_held(plan, n)
        put(ws, r, col["Replicas held"],
            " + ".join(f"tp{tp} × {count}" for tp, count in replicas.items()) or None)
        put(ws, r, col["GPUs no replica uses"],
            n.gpus - sum(tp * count for tp, count in replicas.items()), COUNT)
        put(ws, r, col["Already held"], held.text if held is not None else None)
    return r


def write_purchase_plan(ws: Worksheet, plan: Plan, scenario: Scenario, currency: str) -> str:
    """Purchase plan rows with live formulas; returns the cell holding the monthly total."""
    header(ws, 1, [t.format(cur=currency) for t in PURCHASE_TITLES])
    last = purchase_rows(ws, 2, plan, scenario)
    add_table(ws, "Purchases", 1, 1, last, len(PURCHASE_TITLES))
    total_row = last + 1
    put(ws, total_row, 1, "Total").font = HEADER_FONT
    total = Formula(f"SUM(K2:K{last})") if last >= 2 else 0.0
    put(ws, total_row, 11, total, unit_format(MONEY, f"{currency}/month")).font = HEADER_FONT
    ws.freeze_panes = "A2"
    return f"K{total_row}"


def _first_period(plan: Plan) -> str:
    h = plan.horizon
    return ("" if h is None else
            f": the first period's ({h.start}) if demand follows {h.fleet_shown}")


def _yearly_rows(plan: Plan, scenario: Scenario, names: Names, per_year: str, currency: str
                 ) -> list[tuple[str, Value, str | None, str, str | None]]:
    """Cost per year of a one-day plan; for a plan over periods, what each demand scenario
    spends inside the horizon instead (the first period × 12 read as the year's spend, though
    later periods run another fleet), and of it each held reservation's payments in a period
    it ends inside, where it carries no load (:func:`~solver.outputs.held.partly_held`); then
    the objective the plan minimised, worded as the comparison workbook words it (the spend
    counts an owned order's whole capital: a plan read dearer by its spend can be the cheaper
    by what it was planned to minimise)."""
    h = plan.horizon
    if h is None:
        return [("Cost per year", Formula(f"{names.name(COST_PER_MONTH)}*12"), per_year, "",
                 COST_PER_YEAR)]
    return [*((f"Spent inside the horizon if demand follows {s.scenario}", s.cost_in_horizon,
               unit_format(MONEY, currency), f"{h.start} to {h.end}: {SPENT_COUNTS}", None)
              for s in h.scenarios),
            *((f"of which inventory[{p.index}], paid to {p.paid_to} carrying no load",
               p.cost, unit_format(MONEY, currency),
               f"in every demand scenario: {p.what}, paid for {p.months:.2g} months of a "
               f"period it ends inside, where the plan counts none of its capacity ("
               f"{PARTLY_HELD_RULE}; not pro rata)", None)
              for p in partly_held(plan, scenario)),
            (OBJECTIVE_AS_MINIMISED, objective_cost(h), unit_format(MONEY, currency),
             f"{h.start} to {h.end}: the "
             + ("probability-weighted (expected) cost of the demand scenarios"
                if h.objective == "expected" else "worst demand scenario's cost (--robust)")
             + ", the figure the plan is the cheapest by (each demand scenario's: plan.json's "
               "horizon.scenarios[].cost)", None)]


def _bound_row(plan: Plan, per_month: str, currency: str
               ) -> tuple[str, Value, str | None, str, str | None]:
    """The solver's bound in its own unit: per month for a one-day plan; over the horizon for
    a plan over periods, whose objective is a cost over the horizon (the terminal's "bound …
    USD over the horizon"), not a month's."""
    h = plan.horizon
    if h is None:
        return ("Best bound", plan.solver.bound, per_month, "no fleet costs less", None)
    return ("Best bound", plan.solver.bound, unit_format(MONEY, currency),
            f"{h.start} to {h.end}: no plan's {h.objective.replace('_', ' ')} cost over the "
            "horizon is lower (the objective: new orders, on-demand and spot; held inventory "
            "left out)", None)


def _horizon_rows(plan: Plan) -> list[tuple[str, Value, str | None, str, str | None]]:
    """A plan over periods: its horizon's first day, and the horizon with the convention of
    every "A to B" of the workbook (the day after the last: the sheets' spans read otherwise as
    ending a day late beside an inventory line's last day held)."""
    h = plan.horizon
    if h is None:
        return []
    return [("Horizon start", dt.datetime.combine(h.start, dt.time()), "yyyy-mm-dd",
             "first day of the first period, whose fleet the sheets show; the Assumptions' "
             "as_of (measured rows are aged to it)"
             + (f"; {FROM_TODAY}" if h.start_from is HorizonStart.today else ""), None),
            ("Horizon", f"{h.start} to {h.end}", None,
             f"{TO_EXCLUSIVE}, in every \"A to B\" of this workbook", None)]


def write_summary(ws: Worksheet, plan: Plan, scenario: Scenario, total_ref: str,
                  currency: str, names: Names, prepared: dt.date) -> dict[str, str]:
    """Key figures: cost, $/Mtok, GPUs by type / zone / purchase kind, solver status; returns
    the cell of each named figure."""
    header(ws, 1, ["Item", "Value", "Note"])
    tokens_m = tokens_per_month(plan) / 1e6
    output_m = sum(w.output_tokens_per_month for w in plan.workload_costs) / 1e6
    per_month, per_year, mtok = (unit_format(MONEY, f"{currency}/month"),
                                 unit_format(MONEY, f"{currency}/year"),
                                 unit_format(PRICE, f"{currency}/Mtok"))
    figures = slice_figures(plan, scenario)
    spare = [h for w in scenario.workloads
             if (h := capacity_headroom(figures, w.name)) is not None]
    rows: list[tuple[str, Value, str | None, str, str | None]] = [
        # label, value, number format, note, defined name
        ("Scenario", plan.scenario, None, "", None),
        ("Description", scenario.description, None, "", None),
        ("Prepared on", dt.datetime.combine(prepared, dt.time()), "yyyy-mm-dd",
         "the day the plan was prepared: the scenario's policy.as_of, else the day it was "
         "written" + ("" if plan.horizon is None else " (not the horizon's start, below)"),
         PREPARED_ON),
        *_horizon_rows(plan),
        ("Input fingerprint", plan.fingerprint, None, "digest of the resolved scenario", None),
        ("Solver status", status_label(plan.status, plan.solver), None, "", None),
        ("Solver", plan.solver.name, None, "", None),
        ("Solve time", plan.solver.seconds, unit_format("0.00", "s"), "", None),
        ("MIP gap", plan.solver.gap, "0.00%", "", None),
        _bound_row(plan, per_month, currency),
        ("Cost per month", Formula(total_ref), per_month, "the Purchase plan's total"
         + _first_period(plan), COST_PER_MONTH),
        *_yearly_rows(plan, scenario, names, per_year, currency),
        ("Tokens per month (input + output)", tokens_m, unit_format(RATE, "Mtok/month"), "",
         TOKENS_PER_MONTH),
        ("Output tokens per month", output_m, unit_format(RATE, "Mtok/month"), "",
         OUTPUT_TOKENS_PER_MONTH),
        ("Cost per million tokens",
         Formula(f"{names.name(COST_PER_MONTH)}/{names.name(TOKENS_PER_MONTH)}")
         if tokens_m > 0 else None, mtok, "", COST_PER_MTOK),
        ("Cost per million output tokens",
         Formula(f"{names.name(COST_PER_MONTH)}/{names.name(OUTPUT_TOKENS_PER_MONTH)}")
         if output_m > 0 else None, mtok, "", COST_PER_OUTPUT_MTOK),
        ("Capacity headroom, tightest workload", min(spare) if spare else None, SHARE,
         "demand growth the intact fleet absorbs at the SLO (Pools sheet per workload)", None),
        # what plan warned of on stderr (report.md's Warnings): the workbook said none of it
        *(("Warning", w, None, "as plan said it on stderr; report.md's Warnings", None)
          for w in plan.warnings),
    ]
    cells: dict[str, str] = {}
    for i, (text, value, fmt, note, name) in enumerate(rows, start=2):
        put(ws, i, 1, text)
        put(ws, i, 2, value, fmt)
        put(ws, i, 3, note)
        if name is not None:
            cells[name] = f"B{i}"
    add_table(ws, names.name("Summary"), 1, 1, len(rows) + 1, 3)
    note_line(ws, len(rows) + 2, LIVE_FORMULAS)
    r = len(rows) + 3
    section(ws, r, "GPUs by GPU type, zone and purchase kind (reserved as bought; on-demand and "
                   "spot at their busiest slice)")
    tallest = 0
    for i, (field, title) in enumerate((("gpu", "GPU type"), ("zone", "Zone"),
                                        ("purchase", "Purchase kind"))):
        col = 1 + 3 * i  # side by side: A:B, D:E, G:H
        header(ws, r + 1, [title, "GPUs"], col=col)
        counts = gpus_by(plan, field)
        for j, (key, count) in enumerate(counts.items(), start=r + 2):
            put(ws, j, col, label(PurchaseKind(key)) if field == "purchase" else key)
            put(ws, j, col + 1, count, COUNT)
        add_table(ws, names.name(f"GPUs_by_{field}"), r + 1, col, r + 1 + len(counts), col + 1)
        tallest = max(tallest, len(counts))
    r += tallest + 3
    if plan.diagnosis:
        section(ws, r, diagnosis_title(plan))
        header(ws, r + 1, ["Requirement", "Workload", "Zone", "GPU", "Slice", "Amount", "Unit",
                           "Message"])
        for i, s in enumerate(plan.diagnosis, start=r + 2):
            values: tuple[Value, ...] = (s.requirement, s.workload, s.zone, s.gpu, s.slice,
                                         s.amount, s.unit, s.message)
            for col, v in enumerate(values, start=1):
                put(ws, i, col, v)
        add_table(ws, names.name("Infeasible"), r + 1, 1, r + 1 + len(plan.diagnosis), 8)
    ws.freeze_panes = "A2"
    return cells


POOL_TITLES = ("Workload", "Tenant", "Class", "Model", "Precision", "GPU",
               "TP [GPUs per replica]", "Zone", "Reserved replicas", "Owned replicas",
               "On-demand replicas (busiest slice)", "Spot replicas (busiest slice)",
               "SLO-holding rate [req/s per replica]", "Capacity",
               "Runtime costs fitted on (another GPU)",
               "Measured row (file and line, date, load test, lengths tested)",
               "Target utilization [1]",
               "Peak demand [req/s]", "Utilization at peak [1]", "Capacity headroom [1]",
               "TTFT P95 at SLO rate [ms]", "TTFT P95 SLO [ms]",
               "Per-token P95 at SLO rate [ms]", "Per-token P95 SLO [ms]",
               "Latency slack at SLO rate [1]",
               "End-to-end P95 at SLO rate [ms]", "End-to-end P95 SLO [ms]", "Binding SLO")


def pool_e2e_cells(cap: CapacityRow | None, wl: Workload
                   ) -> list[tuple[Value, str | None]]:
    """A pool's last three cells: the end-to-end P95 of a P95 answer at the row's P95s and the
    workload's ``slo.e2e_p95_ms`` (empty where it states none), and the SLO that binds the
    row's rate (:func:`~solver.outputs.slo_binding.binding_text`)."""
    if cap is None:
        return [(None, None)] * 3
    return [(row_e2e_ms(cap, wl), "#,##0"), (wl.slo.e2e_p95_ms, "#,##0"),
            (binding_text(cap, wl), None)]


def pool_rows(ws: Worksheet, first_row: int, plan: Plan, scenario: Scenario,
              table: CapacityTable, lead: Sequence[Value] = ()) -> int:
    """Pools from ``first_row`` on (``lead`` cells first); returns the last row written."""
    figures = slice_figures(plan, scenario)
    keys: list[tuple[str, str, int, str]] = []
    for a in plan.allocations:
        key = (a.workload, a.gpu, a.tp, a.zone)
        if a.replicas > 0 and key not in keys:
            keys.append(key)
    wl_order = {w.name: i for i, w in enumerate(scenario.workloads)}
    keys.sort(key=lambda k: (wl_order.get(k[0], len(wl_order)), k[0], k[1], k[2], k[3]))
    r = first_row - 1
    for workload, gpu, tp, zone in keys:
        r += 1
        wl = scenario.workload(workload)
        mine = [a for a in plan.allocations if (a.workload, a.gpu, a.tp, a.zone)
                == (workload, gpu, tp, zone)]
        by_kind: dict[PurchaseKind, int] = {}
        for kind in PURCHASE_ORDER:
            per_slice: dict[str | None, int] = {}
            for a in mine:
                if a.purchase is kind:
                    per_slice[a.slice] = per_slice.get(a.slice, 0) + a.replicas
            by_kind[kind] = max(per_slice.values(), default=0)
        cap = table.row(workload, gpu, tp)
        peak = max((f.demand_rps for f in figures if f.workload == workload), default=0.0)
        values: list[tuple[Value, str | None]] = [
            *((v, None) for v in lead),
            (workload, None), (wl.tenant, None), (wl.workload_class, None), (wl.model, None),
            (wl.precision, None), (gpu, None), (tp, COUNT), (zone, None),
            # owned replicas in a column of their own: without it a pool on owned nodes (a
            # plan with an inventory) read 0 replicas of every kind
            (by_kind[PurchaseKind.reserved], COUNT), (by_kind[PurchaseKind.owned], COUNT),
            (by_kind[PurchaseKind.on_demand], COUNT),
            (by_kind[PurchaseKind.spot], COUNT), (mine[0].replica_capacity_rps, RATE),
            (mine[0].capacity_source, None), (mine[0].costs_fitted_on, None),
            (mine[0].measured_row, None),
            (wl.utilization, _maybe_assumed(SHARE, utilization_assumed(wl))), (peak, RATE),
            (peak_utilization(figures, workload), SHARE),
            (capacity_headroom(figures, workload), SHARE),
            (cap.ttft_p95_ms if cap else None, "#,##0.0"), (wl.slo.ttft_p95_ms, "#,##0.0"),
            (cap.tpot_p95_ms if cap and wl.has_second_token else None, "#,##0.00"),
            (wl.tpot_slo_ms if wl.has_second_token else None, "#,##0.00"),
            (cap.headroom if cap else None, SHARE),
            *pool_e2e_cells(cap, wl),
        ]
        for c, (v, fmt) in enumerate(values, start=1):
            put(ws, r, c, v, fmt)
    return r


def write_pools(ws: Worksheet, plan: Plan, scenario: Scenario, table: CapacityTable) -> None:
    """Per workload and configuration and zone: replicas, rate, utilization, latency vs SLO."""
    header(ws, 1, POOL_TITLES)
    last = pool_rows(ws, 2, plan, scenario, table)
    add_table(ws, "Pools", 1, 1, last, len(POOL_TITLES))
    ws.freeze_panes = "B2"


def write_hourly(ws: Worksheet, plan: Plan, scenario: Scenario,
                 series: Sequence[DaySeries]) -> None:
    """Per hour of the peak day (scenario's time zone): its slice, and per workload demand,
    usable capacity and capacity after the worst failure it must survive."""
    tz = scenario.policy.time_zone
    titles = [f"Hour ({tz})", "Slice"]
    for s in series:
        titles += list(series_titles(s.workload))
    header(ws, 1, titles)
    hour_slice = {h: sl.name for sl in plan.slices for h in sl.hours}
    for h in range(24):
        r = h + 2
        put(ws, r, 1, f"{h:02d}:00–{(h + 1) % 24:02d}:00")
        put(ws, r, 2, hour_slice.get(h))
        for i, s in enumerate(series):
            put(ws, r, 3 + 3 * i, s.demand_rps[h], RATE)
            put(ws, r, 4 + 3 * i, s.usable_rps[h], RATE)
            put(ws, r, 5 + 3 * i,
                s.after_failure_rps[h] if s.after_failure_rps is not None else None, RATE)
    add_table(ws, "Hourly", 1, 1, 25, len(titles))
    ws.freeze_panes = "C2"


#: The Survivability matrix's row of the intact fleet at the failure utilization.
INTACT_AT_FAILURE = "none at failure utilization"


def survivability_caption(scenario: Scenario) -> str:
    """What a margin counts (as report.md and ``check`` say): with nothing lost, the target
    utilization; after a failure, the policy's failure utilization, so a failure that takes
    none of a workload's replicas shows more capacity than no failure."""
    share = f"{scenario.policy.failure_utilization:.0%}"
    return ("Capacity = the replicas' SLO-holding rates × the workload's target utilization "
            f"with no failure, × the utilization allowed after a failure ({share}) in every "
            f"failure row. Compare failure rows with \"No failure, at {share}\": the intact "
            "fleet at that same utilization, which a failure can only lower "
            "(docs/survivability.md).")


def write_survivability(ws: Worksheet, plan: Plan, scenario: Scenario) -> None:
    """Failure × workload matrix of worst-slice margins, coloured where checked (a blank cell:
    the workload need not survive that failure); then each workload's tightest case, so the
    sheet stays one page however many failures the fleet has."""
    margins = survivability_margins(plan)
    names = [w.name for w in scenario.workloads]
    failures = list(dict.fromkeys(m.failure for m in margins))
    header(ws, 1, ["Failure (margin = (capacity − demand) ÷ demand, worst slice)", *names])
    by_key = {(m.failure, m.workload): m for m in margins}
    if "none" in failures:  # the intact fleet on the failure rows' basis, right under it
        failures.insert(failures.index("none") + 1, INTACT_AT_FAILURE)
        by_key |= {(INTACT_AT_FAILURE, m.workload): intact for m in margins
                   if m.failure == "none"
                   and (intact := intact_at_failure_utilization(m, scenario)) is not None}
    share = f"{scenario.policy.failure_utilization:.0%}"
    for r, failure in enumerate(failures, start=2):
        put(ws, r, 1, f"No failure, at {share}" if failure == INTACT_AT_FAILURE
            else failure_label(failure))
        for c, name in enumerate(names, start=2):
            m = by_key.get((failure, name))
            if m is not None:
                put(ws, r, c, m.margin if m.margin is not None else "no demand", SHARE)
    last_row = len(failures) + 1
    if failures and names:
        last_col = get_column_letter(len(names) + 1)
        area = f"B2:{last_col}{last_row}"
        # only numbers are coloured: a blank (not checked) cell reads as 0 to a CellIs rule
        ws.conditional_formatting.add(area, FormulaRule(formula=["AND(ISNUMBER(B2),B2<0)"],
                                                        fill=BAD_FILL))
        ws.conditional_formatting.add(area, FormulaRule(formula=["AND(ISNUMBER(B2),B2>=0)"],
                                                        fill=GOOD_FILL))
        add_table(ws, "Survivability", 1, 1, last_row, len(names) + 1)
    note_line(ws, last_row + 2, survivability_caption(scenario))
    r = last_row + 4
    section(ws, r, "Tightest case of each workload (every failure's worst slice: report.md)")
    header(ws, r + 1, ["Workload", "Tightest failure", "Worst slice", "Capacity [req/s]",
                       "Demand [req/s]", "Margin [1]", "Failures checked", "Result"])
    tightest = tightest_cases(margins, names)
    for i, (m, checked, failing) in enumerate(tightest, start=r + 2):
        cells: tuple[tuple[Value, str | None], ...] = (
            (m.workload, None), (failure_label(m.failure), None), (m.slice, None),
            (m.capacity_rps, RATE), (m.demand_rps, RATE), (m.margin, SHARE), (checked, None),
            ("holds" if not failing else f"FAILS {failing}", None))
        for c, (v, fmt) in enumerate(cells, start=1):
            put(ws, i, c, v, fmt)
    if tightest:
        add_table(ws, "Survivability_detail", r + 1, 1, r + 1 + len(tightest), 8)
    if plan.replay:
        last = max(c.round for c in plan.replay)
        r += len(tightest) + 3
        section(ws, r, f"Trace replay at the planned peak (round {last}; docs/replay.md)")
        header(ws, r + 1, ["Workload", "Failure", "Slice", "Requests", "TTFT P95 [ms]",
                           "TTFT SLO [ms]", "Per-token P95 [ms]", "Per-token SLO [ms]",
                           "Within both SLOs [1]", "Window [s]", "Warm-up [s]", "Result",
                           "Longer than the context", "Cut off by the failure"])
        checks = [check for check in plan.replay if check.round == last]
        for i, check in enumerate(checks, start=r + 2):
            values: tuple[Value, ...] = (
                check.workload, check.failure, check.slice, check.requests, check.ttft_p95_ms,
                check.ttft_slo_ms, check.tpot_p95_ms, check.tpot_slo_ms, check.slo_attainment,
                check.window_s, check.warmup_s, check.verdict, check.over_context,
                check.cut_off)
            for col, v in enumerate(values, start=1):
                put(ws, i, col, v)
    ws.freeze_panes = "B2"


CONTRACT_TITLES = ("Configuration", "Workload", "Model", "Model digest", "Runtime",
                   "Max stable sequences", "Capacity",
                   "Measured peak [req/s]", "Measured TTFT P95 [ms]",
                   "Measured decode P95 [ms/token]", "Measured on",
                   "Measured row (file and line, load test, lengths tested)",
                   "Predicted SLO rate [req/s]", "Predicted TTFT P95 [ms]",
                   "Predicted decode P95 [ms/token]", "Latency slack at SLO rate [1]",
                   "Replicas planned (busiest slice)")
CONTRACT_PERIOD_TITLES = ("Period", "From")
"""Leading columns of a plan over periods: the period (0 the first) and its first day; a
later period's replicas are the most any demand scenario runs (contract.yaml's ``periods``)."""


def write_contract_sheet(ws: Worksheet, plan: Plan, scenario: Scenario,
                         table: CapacityTable, contract: Contract | None = None) -> None:
    """The configuration rows the plan rests on (contract.yaml's rows): what a load test
    measured and what the capacity model predicts in separate columns. A plan over periods
    lists every period's rows, as contract.yaml does (``contract``: built with the horizon
    scenario), each led by its period and first day."""
    contract = contract or build_contract(plan, scenario, table)
    dated: list[tuple[int, dt.date | None, ContractRow]] = [
        (0, plan.horizon.start if plan.horizon is not None else None, row)
        for row in contract.rows]
    dated += [(p.period, p.start, row) for p in contract.periods for row in p.rows]
    lead = CONTRACT_PERIOD_TITLES if contract.periods else ()
    header(ws, 1, [*lead, *CONTRACT_TITLES])
    for r, (period, start, row) in enumerate(dated, start=2):
        if lead:
            put(ws, r, 1, period, COUNT)
            put(ws, r, 2, dt.datetime.combine(start, dt.time()) if start else None,
                "yyyy-mm-dd")
        measured = row.source is CapacitySource.measured
        on = row.fingerprint.measured_on
        got = (row.tested_peak_rps, row.ttft_p95_ms, row.decode_p95_ms_per_token)
        values: tuple[tuple[Value, str | None], ...] = (
            (config_label(row.gpu, row.tp, row.precision), None), (row.workload, None),
            (row.model, None), (row.model_digest, None), (row.runtime, None),
            (row.max_stable_sequences, COUNT), (row.source, None),
            *((v if measured else None, f) for v, f in zip(got, (RATE, "#,##0.0", "#,##0.00"),
                                                            strict=True)),
            (dt.datetime.combine(on, dt.time()) if on else None, "yyyy-mm-dd"),
            (row.measured_row, None),
            *((None if measured else v, f) for v, f in zip(got, (RATE, "#,##0.0", "#,##0.00"),
                                                            strict=True)),
            (row.headroom, SHARE), (row.replicas_planned, COUNT))
        for c, (v, fmt) in enumerate(values, start=1 + len(lead)):
            put(ws, r, c, v, fmt)
    add_table(ws, "Contract", 1, 1, len(dated) + 1, len(lead) + len(CONTRACT_TITLES))
    ws.freeze_panes = "B2"


def write_cost_attribution(ws: Worksheet, plan: Plan, currency: str) -> None:
    """Cost per workload and per tenant, with $/Mtok as formulas of the cells beside them."""
    titles = [f"Cost [{currency}/month]", "Tokens [Mtok/month]", "Output tokens [Mtok/month]",
              f"Cost per Mtok [{currency}/Mtok]", f"Cost per output Mtok [{currency}/Mtok]"]
    header(ws, 1, ["Workload", "Tenant", *titles])
    r = 1
    for w in plan.workload_costs:
        r += 1
        _cost_row(ws, r, (w.workload, w.tenant), w.cost_per_month, w.tokens_per_month,
                  w.output_tokens_per_month, first_value_col=3)
    add_table(ws, "Cost_per_workload", 1, 1, r, 7)
    r += 2
    section(ws, r, "Per tenant")
    header(ws, r + 1, ["Tenant", *titles])
    top = r + 1
    r += 1
    output_by_tenant: dict[str, float] = {}
    for w in plan.workload_costs:
        output_by_tenant[w.tenant] = output_by_tenant.get(w.tenant, 0.0) + w.output_tokens_per_month
    for tenant, (cost, tokens) in tenant_costs(plan).items():
        r += 1
        _cost_row(ws, r, (tenant,), cost, tokens, output_by_tenant[tenant], first_value_col=2)
    add_table(ws, "Cost_per_tenant", top, 1, r, 6)
    ws.freeze_panes = "A2"


def _cost_row(ws: Worksheet, r: int, labels: tuple[str, ...], cost: float, tokens: float,
              output_tokens: float, first_value_col: int) -> None:
    for c, text in enumerate(labels, start=1):
        put(ws, r, c, text)
    c = first_value_col
    cost_cell, tok_cell, out_cell = (f"{get_column_letter(c + i)}{r}" for i in range(3))
    put(ws, r, c, cost, MONEY)
    put(ws, r, c + 1, tokens / 1e6, RATE)
    put(ws, r, c + 2, output_tokens / 1e6, RATE)
    put(ws, r, c + 3, Formula(f"{cost_cell}/{tok_cell}") if tokens > 0 else None, PRICE)
    put(ws, r, c + 4, Formula(f"{cost_cell}/{out_cell}") if output_tokens > 0 else None, PRICE)


Cell = tuple[Value, str | None]


def _cell(value: float | tuple[float, ...] | None) -> Value:
    """A factor as a cell: a per-ring-size table (NCCL's latency at 2, 4, 8, … GPUs) as text."""
    if isinstance(value, tuple):
        rings = " / ".join(str(2 ** (i + 1)) for i in range(len(value)))
        return f"{' / '.join(f'{v:g}' for v in value)} (at {rings} GPUs)"
    return value


def _block(ws: Worksheet, r: int, title: str, titles: Sequence[str],
           rows: Sequence[Sequence[Value | Cell]], name: str) -> int:
    """A titled Excel Table inside a multi-table sheet; a cell may carry its number format as
    ``(value, format)``. Returns the next free row."""
    section(ws, r, title)
    header(ws, r + 1, titles)
    for i, values in enumerate(rows, start=r + 2):
        for c, v in enumerate(values, start=1):
            if isinstance(v, tuple):
                put(ws, i, c, v[0], v[1])
            else:
                put(ws, i, c, v)
    add_table(ws, name, r + 1, 1, r + 1 + len(rows), len(titles))
    return r + len(rows) + 3


def _offer_rows(plan: Plan, scenario: Scenario) -> tuple[list[list[Value | Cell]], str]:
    """Offers of the (zone, GPU) pairs the plan buys, assumed figures marked; and one line
    summarising the rest."""
    bought, unused = offers_bought(plan, scenario)
    rows: list[list[Value | Cell]] = []
    for b in bought:
        o, kind, t = b.offer, b.kind, b.terms
        res = t if isinstance(t, ReservedTerms) else None
        term = offer_assumes(o, AssumedFigure.reserved_term)
        rows.append([
            scenario.zone_label(b.zone), scenario.zone(b.zone).region, o.gpu, b.kind_label,
            (t.price_per_gpu_hour, _maybe_assumed(PRICE, res is not None and offer_assumes(
                o, AssumedFigure.reserved_price))),
            (t.stock_gpus, _maybe_assumed(COUNT, offer_assumes(o, AssumedFigure.stock))),
            (res.commitment_months if res else None, _maybe_assumed(COUNT, term)),
            (res.lead_time_weeks if res else None, _maybe_assumed(
                "0.0", term or (res is not None and res.lead_time_assumed))),
            (t.startup_minutes if isinstance(t, OnDemandTerms) else None,
             _maybe_assumed("0", offer_assumes(o, AssumedFigure.on_demand_startup))),
            (t.interruption_rate_per_hour if isinstance(t, SpotTerms) else None,
             _maybe_assumed("0.000", offer_assumes(o, AssumedFigure.spot_interruption_rate))),
            price_source(o, kind)])
    return rows, unused


def write_offers(ws: Worksheet, plan: Plan, scenario: Scenario) -> None:
    """Every offer of the zones and GPU types the plan buys, assumed figures marked; one line
    for the offers it does not use."""
    cur = scenario.policy.currency
    offers, unused = _offer_rows(plan, scenario)
    titles = ["Zone", "Region", "GPU", "Purchase kind", f"Price [{cur}/GPU-hour]", "Stock [GPUs]",
              "Commitment [months]", "Lead time [weeks]", "Startup [min]",
              "Interruption rate [1/h]", "Price source"]
    header(ws, 1, titles)
    for i, values in enumerate(offers, start=2):
        for c, v in enumerate(values, start=1):
            if isinstance(v, tuple):
                put(ws, i, c, v[0], v[1])
            else:
                put(ws, i, c, v)
    add_table(ws, "Offers", 1, 1, len(offers) + 1, len(titles))
    if unused:
        note_line(ws, len(offers) + 3, unused)
    ws.freeze_panes = "D2"


def write_assumptions(ws: Worksheet, plan: Plan, scenario: Scenario,
                      prepared: dt.date | None = None) -> None:
    """What the plan rests on, assumed figures first: then policy, the catalog entries, models
    and workloads (one column each), input files (the offers: the Offers sheet). Over periods
    the scenario's ``as_of`` is the first period's start, labelled so beside the day the plan
    was prepared (``prepared``)."""
    p = scenario.policy
    r = 1
    assumed = plan_assumptions(plan, scenario)
    r = _block(ws, r, f"Assumed, not given: check these first (each is marked *{ASSUMED}* "
                      "where it is shown)",
               ["Assumed figure", "Value", "Applies to", "Why it is assumed"],
               [(f"{a.figure} ({ASSUMED})", a.value, a.applies_to, a.why) for a in assumed]
               or [("nothing", "", "", "every figure was given")], "Assumed")
    r = _block(ws, r, "Policy", ["Setting", "Value", "Unit"], [
        ("hours_per_month", p.hours_per_month, "h/month"),
        ("failure_utilization", p.failure_utilization, "1"),
        ("monthly_budget", p.monthly_budget, f"{p.currency}/month"),
        ("currency", p.currency, ""),
        ("memory_margin_fraction", p.memory_margin_fraction, "1"),
        ("measured_max_age_days", p.measured_max_age_days, "days"),
        ("measured_length_tolerance", p.measured_length_tolerance, "1"),
        *([("as_of", p.as_of, "date")] if plan.horizon is None else [
            ("as_of", p.as_of, "date: the first period's start (the horizon's), that the "
                               "fleet shown is sized for and measured rows are aged to"),
            ("prepared on", None if prepared is None else prepared.isoformat(),
             "date the plan was prepared (the scenario's as_of, else the day written)")]),
        ("share_nodes", p.share_nodes, ""),
        ("time_zone", p.time_zone, "hours of the day are in it"),
        ("time blocks", "; ".join(f"{b.name}: {','.join(map(str, b.hours))}"
                                  for b in p.time_blocks), "hours of the day"),
    ], "Policy")
    used_gpus = sorted({n.gpu for n in plan.nodes} | {a.gpu for a in plan.allocations})
    gpus = [g for g in scenario.gpus if g.name in used_gpus] or list(scenario.gpus)
    gpu_fields: list[tuple[str, list[Value]]] = [
        ("Memory [GiB]", [g.memory_gib for g in gpus]),
        ("HBM bandwidth [GB/s]", [g.hbm_bandwidth_gb_per_s for g in gpus]),
        ("BF16 dense [TFLOPS]", [g.bf16_tflops for g in gpus]),
        ("FP8 dense [TFLOPS]", [g.fp8_tflops for g in gpus]),
        ("Link bandwidth [GB/s]", [g.link_bandwidth_gb_per_s for g in gpus]),
        ("GPUs per node", [g.gpus_per_node for g in gpus]),
        *((field_header(f), [_cell(getattr(g.efficiency, f)) for g in gpus])
          for f in EFFICIENCY_FIELDS),
        ("Source", [g.source for g in gpus]),
    ]
    r = _block(ws, r, "GPU catalog entries the plan uses (and their efficiency factors)",
               ["GPU", *(g.name for g in gpus)],
               [(name, *values) for name, values in gpu_fields], "GPUs")
    model_names = {w.model for w in scenario.workloads}
    models = [m for m in scenario.models if m.name in model_names]
    model_fields: list[tuple[str, list[Value]]] = [
        ("Layers", [m.layers for m in models]),
        ("Hidden size", [m.hidden_size for m in models]),
        ("Attention heads", [m.attention_heads for m in models]),
        ("KV heads", [m.kv_heads for m in models]),
        ("Head dim", [m.head_dim for m in models]),
        ("Total params [10^9]", [m.total_params_b for m in models]),
        ("Active params [10^9]", [m.active_params_b for m in models]),
        ("Max context [tokens]", [m.max_context_tokens for m in models]),
        ("Weights digest", [m.weights_digest for m in models]),
        ("Source", [m.source for m in models]),
    ]
    r = _block(ws, r, "Models", ["Model", *(m.name for m in models)],
               [(name, *values) for name, values in model_fields], "Models")
    wls = scenario.workloads
    wl_fields: list[tuple[str, list[Value | Cell]]] = [
        ("Tenant", [w.tenant for w in wls]),
        ("Class", [label(w.workload_class) for w in wls]),
        ("Model", [w.model for w in wls]),
        ("Precision", [label(w.precision) for w in wls]),
        ("Runtime", [w.runtime for w in wls]),
        ("Peak [req/s]", [w.arrival.peak_rps if w.arrival else None for w in wls]),
        ("Arrivals", [arrivals_text(w) for w in wls]),
        ("Batch volume [req/day]", [w.batch.daily_requests if w.batch else None for w in wls]),
        (f"Batch window [hours, {p.time_zone}]",
         [",".join(map(str, w.batch.window_hours)) if w.batch else None for w in wls]),
        ("Input P50/P95/P99 [tokens]",
         [f"{w.input_tokens.p50}/{w.input_tokens.p95}/{w.input_tokens.p99}" for w in wls]),
        ("Output P50/P95/P99 [tokens]",
         [f"{w.output_tokens.p50}/{w.output_tokens.p95}/{w.output_tokens.p99}" for w in wls]),
        ("Typical input [tokens] (mean, else P50)", [w.input_tokens.typical for w in wls]),
        ("Typical output [tokens] (mean, else P50)", [w.output_tokens.typical for w in wls]),
        ("Prefix cache hit rate [1]", [w.prefix_cache_hit_rate for w in wls]),
        ("TTFT P95 SLO [ms]", [w.slo.ttft_p95_ms for w in wls]),
        ("Per-token P95 SLO [ms]", [w.tpot_slo_ms if w.has_second_token else None
                                    for w in wls]),
        ("Survivability", [label(w.survivability) for w in wls]),
        ("Target utilization [1]", [(w.utilization,
                                     _maybe_assumed(SHARE, utilization_assumed(w)))
                                    for w in wls]),
        ("Allowed GPUs", [",".join(w.allowed_gpus) if w.allowed_gpus is not None else "any"
                          for w in wls]),
    ]
    r = _block(ws, r, "Workloads (hourly demand: the Hourly sheet)",
               ["Workload", *(w.name for w in wls)],
               [(name, *values) for name, values in wl_fields], "Workloads")
    _block(ws, r, "Input files", ["Source"], [(s,) for s in scenario.sources], "Inputs")
    ws.freeze_panes = "A3"


def _unique_titles(ws: Worksheet) -> None:
    """Excel Tables need distinct header texts: a duplicate (two workloads named alike once
    cleaned) gets a counter."""
    for table in ws.tables.values():
        seen: set[str] = set()
        for cell in next(iter(ws[table.ref])):
            text = str(cell.value)
            n = 1
            while text.lower() in seen:
                n += 1
                text = f"{cell.value} ({n})"
            seen.add(text.lower())
            if text != cell.value:
                put(ws, cell.row, cell.column, text).font = HEADER_FONT


def add_plan_sheets(wb: Workbook, plan: Plan, scenario: Scenario, table: CapacityTable,
                    prepared: dt.date, names: Names | None = None,
                    contract: Contract | None = None) -> dict[str, str]:
    """Append one plan's sheets to a workbook; returns the defined name of each Summary figure
    (``cost_per_month`` …) by figure (``contract``: as contract.yaml's, every period's rows for
    a plan over periods; default the first period's)."""
    names = names or Names()
    ws = {s: wb.create_sheet(names[s]) for s in SHEETS}
    data = wb.create_sheet(names[CHART_DATA])
    currency = plan.cost.currency
    series = day_series(plan, scenario)
    total = write_purchase_plan(ws["Purchase plan"], plan, scenario, currency)
    cells = write_summary(ws["Summary"], plan, scenario, sheet_ref(names["Purchase plan"], total),
                          currency, names, prepared)
    for figure, cell in cells.items():
        define_name(wb, names.name(figure), names["Summary"], cell)
    write_pools(ws["Pools"], plan, scenario, table)
    write_hourly(ws["Hourly"], plan, scenario, series)
    write_charts(ws["Charts"], data, plan, scenario, series)
    write_survivability(ws["Survivability"], plan, scenario)
    write_contract_sheet(ws["Capacity contract"], plan, scenario, table, contract)
    write_cost_attribution(ws["Cost attribution"], plan, currency)
    write_assumptions(ws["Assumptions"], plan, scenario, prepared)
    write_offers(ws["Offers"], plan, scenario)
    if plan.horizon is not None:  # a plan over periods: its orders and periods
        ws["Schedule"] = wb.create_sheet(names["Schedule"], index=wb.index(ws["Purchase plan"]))
        write_schedule(ws["Schedule"], plan, scenario)
    frame = PrintFrame(plan.scenario, plan.fingerprint, prepared.isoformat())
    for title, sheet in ws.items():
        _unique_titles(sheet)
        if title != "Charts":  # charts are anchored to columns of the default width
            fit_columns(sheet, prose_widths(sheet))
        print_setup(sheet, frame, title_rows="1:1" if title in ONE_TABLE else None,
                    one_page=title == "Charts")
    return {figure: names.name(figure) for figure in cells}


def plan_workbook(plan: Plan, scenario: Scenario, table: CapacityTable,
                  prepared: dt.date | None = None, contract: Contract | None = None) -> Workbook:
    """The procurement workbook of one plan (``prepared``: default :func:`prepared_on`;
    ``contract``: as :func:`add_plan_sheets`)."""
    wb = Workbook()
    wb.remove(wb.active)
    add_plan_sheets(wb, plan, scenario, table, prepared or prepared_on(scenario.policy.as_of),
                    contract=contract)
    return wb


def write_plan_workbook(plan: Plan, scenario: Scenario, table: CapacityTable,
                        path: str | Path, prepared: dt.date | None = None,
                        contract: Contract | None = None) -> Path:
    """Write ``plan.xlsx`` atomically, dated the day it is prepared on; returns its path
    (``contract``: as :func:`add_plan_sheets`)."""
    path = Path(path)
    day = prepared or prepared_on(scenario.policy.as_of)
    stamp = dt.datetime.combine(day, dt.time())
    write_atomic(path, workbook_bytes(plan_workbook(plan, scenario, table, day, contract),
                                      stamp))
    return path
