"""The procurement workbook ``plan.xlsx``: the plan as finance and procurement read it.

Sheets: Summary, Purchase plan, Pools, Hourly, Survivability, Capacity contract, Cost attribution,
Assumptions (docs/outputs.md says where each figure comes from). Costs and totals of the purchase
plan are live formulas, so editing a node count moves the cost. Text that came from a user
(workload, tenant, zone names…) is always written as a string cell, never as a formula: every
cell goes through :func:`put`, and only a :class:`Formula` becomes a formula.

This is the only module that imports openpyxl to write plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openpyxl import Workbook
from openpyxl.chart import LineChart, Reference
from openpyxl.formatting.rule import CellIsRule
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from models.capacity import CapacityRow, CapacityTable
from models.catalog import EfficiencyFactors
from models.common import PurchaseKind
from models.offers import Offer, ReservedTerms
from models.plan import NodeCount, Plan
from models.scenario import Scenario
from models.text import cell_text
from solver.outputs.atomic import write_atomic
from solver.outputs.contract import build_contract
from solver.outputs.figures import (
    PURCHASE_ORDER,
    gpus_by,
    peak_utilization,
    slice_figures,
    survivability_margins,
    tenant_costs,
    tokens_per_month,
)
from solver.outputs.schedule_sheet import write_schedule
from solver.outputs.units import field_header
from solver.outputs.xlsx_bytes import stamp_of, workbook_bytes
from solver.outputs.xlsx_cells import (
    BAD_FILL,
    COUNT,
    GOOD_FILL,
    HEADER_FONT,
    MONEY,
    RATE,
    SHARE,
    Formula,
    Value,
    fit_columns,
    header,
    put,
    section,
    sheet_ref,
)

#: Sheet titles, in workbook order.
SHEETS = ("Summary", "Purchase plan", "Pools", "Hourly", "Survivability", "Capacity contract",
          "Cost attribution", "Assumptions")

#: Every efficiency factor, in schema order: the Assumptions sheet shows them all.
EFFICIENCY_FIELDS = tuple(EfficiencyFactors.model_fields)


#: Rows of the Summary sheet other sheets (and the comparison) refer to.
SUMMARY_COST_ROW = 10
SUMMARY_MTOK_ROW = 14


@dataclass(frozen=True)
class Names:
    """Sheet titles of one plan in a workbook (prefixed when several plans share it)."""

    prefix: str = ""

    def __getitem__(self, sheet: str) -> str:
        return f"{self.prefix}{sheet}"


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


def write_purchase_plan(ws: Worksheet, plan: Plan, scenario: Scenario, currency: str) -> str:
    """Purchase plan rows with live formulas; returns the cell holding the monthly total."""
    header(ws, 1, ["Zone", "GPU", "Purchase kind", "Slice", "Instance type", "GPUs per node",
                   "Nodes", "GPUs", f"Price [{currency}/GPU-hour]", "Hours paid [h/month]",
                   f"Cost [{currency}/month]", "Lead time [weeks]", "Commitment [months]",
                   "Stock [GPUs]", "Price source", "Replicas held [TP × replicas]",
                   "GPUs no replica uses"])
    order = {k: i for i, k in enumerate(PURCHASE_ORDER)}
    slice_order = {s.name: i for i, s in enumerate(plan.slices)}
    nodes = sorted(plan.nodes, key=lambda n: (n.zone, n.gpu, order[n.purchase],
                                              slice_order.get(n.slice or "", -1)))
    r = 1
    for n in nodes:
        r += 1
        offer = _offer(scenario, n.zone, n.gpu)
        terms = offer.terms(n.purchase) if offer is not None else None
        put(ws, r, 1, n.zone)
        put(ws, r, 2, n.gpu)
        put(ws, r, 3, n.purchase)
        put(ws, r, 4, n.slice if n.slice is not None else "all")
        put(ws, r, 5, n.instance_type or (offer.instance_type if offer is not None else None))
        put(ws, r, 6, _gpus_per_node(scenario, n.zone, n.gpu, n.nodes, n.gpus), COUNT)
        put(ws, r, 7, n.nodes, COUNT)
        put(ws, r, 8, Formula(f"F{r}*G{r}"), COUNT)
        put(ws, r, 9, n.price_per_gpu_hour, "#,##0.0000")
        put(ws, r, 10, n.hours_per_month, "#,##0.0")
        put(ws, r, 11, Formula(f"H{r}*I{r}*J{r}"), MONEY)
        quote = offer.terms(PurchaseKind.reserved) if offer is not None else None
        if n.purchase is PurchaseKind.reserved and isinstance(quote, ReservedTerms):
            put(ws, r, 12, quote.lead_time_weeks, "0.0")
            put(ws, r, 13, quote.commitment_months, COUNT)
        if terms is not None:
            put(ws, r, 14, terms.stock_gpus, COUNT)
        put(ws, r, 15, offer.price_source if offer is not None else None)
        held = _replicas_held(plan, n)
        put(ws, r, 16, " + ".join(f"tp{tp} × {count}" for tp, count in held.items()) or None)
        put(ws, r, 17, n.gpus - sum(tp * count for tp, count in held.items()), COUNT)
    total_row = r + 1
    put(ws, total_row, 1, "Total").font = HEADER_FONT
    total = Formula(f"SUM(K2:K{r})") if r >= 2 else 0.0
    put(ws, total_row, 11, total, MONEY).font = HEADER_FONT
    ws.freeze_panes = "A2"
    return f"K{total_row}"


def write_summary(ws: Worksheet, plan: Plan, scenario: Scenario, total_ref: str,
                  currency: str) -> None:
    """Key figures: cost, $/Mtok, GPUs by type / zone / purchase kind, solver status."""
    header(ws, 1, ["Item", "Value", "Unit"])
    tokens_m = tokens_per_month(plan) / 1e6
    output_m = sum(w.output_tokens_per_month for w in plan.workload_costs) / 1e6
    rows: list[tuple[str, Value, str, str | None]] = [
        ("Scenario", plan.scenario, "", None),
        ("Description", scenario.description, "", None),
        ("Input fingerprint", plan.fingerprint, "digest of the resolved scenario", None),
        ("Solver status", plan.status, "", None),
        ("Solver", plan.solver.name, "", None),
        ("Solve time", plan.solver.seconds, "s", "0.00"),
        ("MIP gap", plan.solver.gap, "1", "0.00%"),
        ("Best bound", plan.solver.bound, f"{currency}/month", MONEY),
        ("Cost per month", Formula(total_ref), f"{currency}/month", MONEY),
        ("Cost per year", Formula(f"B{SUMMARY_COST_ROW}*12"), f"{currency}/year", MONEY),
        ("Tokens per month (input + output)", tokens_m, "Mtok/month", RATE),
        ("Output tokens per month", output_m, "Mtok/month", RATE),
        ("Cost per million tokens", Formula(f"B{SUMMARY_COST_ROW}/B12") if tokens_m > 0
         else None, f"{currency}/Mtok", "#,##0.0000"),
        ("Cost per million output tokens", Formula(f"B{SUMMARY_COST_ROW}/B13") if output_m > 0
         else None, f"{currency}/Mtok", "#,##0.0000"),
    ]
    assert rows[SUMMARY_COST_ROW - 2][0] == "Cost per month"  # other sheets refer to this cell
    assert rows[SUMMARY_MTOK_ROW - 2][0] == "Cost per million tokens"
    for i, (label, value, unit, fmt) in enumerate(rows, start=2):
        put(ws, i, 1, label)
        put(ws, i, 2, value, fmt)
        put(ws, i, 3, unit)
    r = len(rows) + 3
    for field, title in (("gpu", "GPUs by type"), ("zone", "GPUs by zone"),
                         ("purchase", "GPUs by purchase kind")):
        section(ws, r, f"{title} (reserved as bought; on-demand and spot at their busiest slice)")
        header(ws, r + 1, [title.removeprefix("GPUs by ").capitalize(), "GPUs"])
        r += 2
        for key, count in gpus_by(plan, field).items():
            put(ws, r, 1, key)
            put(ws, r, 2, count, COUNT)
            r += 1
        r += 1
    if plan.diagnosis:
        section(ws, r, "Why the scenario is infeasible")
        header(ws, r + 1, ["Requirement", "Workload", "Zone", "GPU", "Slice", "Amount", "Unit",
                           "Message"])
        for i, s in enumerate(plan.diagnosis, start=r + 2):
            values: tuple[Value, ...] = (s.requirement, s.workload, s.zone, s.gpu, s.slice,
                                         s.amount, s.unit, s.message)
            for col, v in enumerate(values, start=1):
                put(ws, i, col, v)
    ws.freeze_panes = "A2"


def _cap_row(table: CapacityTable, workload: str, gpu: str, tp: int) -> CapacityRow | None:
    return next((r for r in table.rows if (r.workload, r.gpu, r.tp) == (workload, gpu, tp)), None)


def write_pools(ws: Worksheet, plan: Plan, scenario: Scenario, table: CapacityTable) -> None:
    """Per workload and configuration and zone: replicas, rate, utilization, latency vs SLO."""
    header(ws, 1, ["Workload", "Tenant", "Class", "Model", "Precision", "GPU", "TP", "Zone",
                   "Reserved replicas", "On-demand replicas (busiest slice)",
                   "Spot replicas (busiest slice)", "SLO-holding rate [req/s per replica]",
                   "Capacity source", "Target utilization [1]", "Peak demand [req/s]",
                   "Utilization at peak [1]", "TTFT P95 predicted [ms]", "TTFT P95 SLO [ms]",
                   "Per-token P95 predicted [ms]", "Per-token P95 SLO [ms]", "Headroom [1]"])
    figures = slice_figures(plan, scenario)
    keys: list[tuple[str, str, int, str]] = []
    for a in plan.allocations:
        key = (a.workload, a.gpu, a.tp, a.zone)
        if a.replicas > 0 and key not in keys:
            keys.append(key)
    wl_order = {w.name: i for i, w in enumerate(scenario.workloads)}
    keys.sort(key=lambda k: (wl_order.get(k[0], len(wl_order)), k[0], k[1], k[2], k[3]))
    for r, (workload, gpu, tp, zone) in enumerate(keys, start=2):
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
        cap = _cap_row(table, workload, gpu, tp)
        peak = max((f.demand_rps for f in figures if f.workload == workload), default=0.0)
        values: list[tuple[Value, str | None]] = [
            (workload, None), (wl.tenant, None), (wl.workload_class, None), (wl.model, None),
            (wl.precision, None), (gpu, None), (tp, COUNT), (zone, None),
            (by_kind[PurchaseKind.reserved], COUNT), (by_kind[PurchaseKind.on_demand], COUNT),
            (by_kind[PurchaseKind.spot], COUNT), (mine[0].replica_capacity_rps, RATE),
            (mine[0].capacity_source, None), (wl.utilization, SHARE), (peak, RATE),
            (peak_utilization(figures, workload), SHARE),
            (cap.ttft_p95_ms if cap else None, "#,##0.0"), (wl.slo.ttft_p95_ms, "#,##0.0"),
            (cap.tpot_p95_ms if cap else None, "#,##0.00"), (wl.slo.tpot_p95_ms, "#,##0.00"),
            (cap.headroom if cap else None, SHARE),
        ]
        for c, (v, fmt) in enumerate(values, start=1):
            put(ws, r, c, v, fmt)
    ws.freeze_panes = "B2"


def write_hourly(ws: Worksheet, plan: Plan, scenario: Scenario) -> None:
    """Demand and usable capacity per slice and workload, with one line chart per workload."""
    figures = slice_figures(plan, scenario)
    names = [w.name for w in scenario.workloads]
    titles = ["Slice", "Hours"]
    for name in names:
        titles += [f"{name} demand [req/s]", f"{name} usable capacity [req/s]"]
    header(ws, 1, titles)
    by_key = {(f.slice, f.workload): f for f in figures}
    for r, s in enumerate(plan.slices, start=2):
        put(ws, r, 1, s.name)
        put(ws, r, 2, ",".join(str(h) for h in s.hours))
        for i, name in enumerate(names):
            f = by_key[(s.name, name)]
            put(ws, r, 3 + 2 * i, f.demand_rps, RATE)
            put(ws, r, 4 + 2 * i, f.usable_rps, RATE)
    last = len(plan.slices) + 1
    if last < 2:
        ws.freeze_panes = "C2"
        return
    anchor_col = get_column_letter(3 + 2 * len(names) + 1)
    for i, name in enumerate(names):
        chart = LineChart()
        chart.title = cell_text(f"{name}: demand vs usable capacity")
        chart.y_axis.title = "req/s"
        chart.x_axis.title = "slice"
        chart.height, chart.width = 7.0, 16.0
        data = Reference(ws, min_col=3 + 2 * i, max_col=4 + 2 * i, min_row=1, max_row=last)
        chart.add_data(data, titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=last))
        ws.add_chart(chart, f"{anchor_col}{2 + 15 * i}")
    ws.freeze_panes = "C2"


def write_survivability(ws: Worksheet, plan: Plan, scenario: Scenario) -> None:
    """Failure × workload matrix of worst-slice margins, coloured; then the detail rows."""
    margins = survivability_margins(plan)
    names = [w.name for w in scenario.workloads]
    failures = list(dict.fromkeys(m.failure for m in margins))
    header(ws, 1, ["Failure \\ workload: margin [1] = (capacity − demand) ÷ demand, worst slice",
                   *names])
    by_key = {(m.failure, m.workload): m for m in margins}
    for r, failure in enumerate(failures, start=2):
        put(ws, r, 1, failure)
        for c, name in enumerate(names, start=2):
            m = by_key.get((failure, name))
            if m is not None:
                put(ws, r, c, m.margin if m.margin is not None else "no demand", SHARE)
    last_row = len(failures) + 1
    if failures and names:
        area = f"B2:{get_column_letter(len(names) + 1)}{last_row}"
        ws.conditional_formatting.add(area, CellIsRule(operator="lessThan", formula=["0"],
                                                       fill=BAD_FILL))
        ws.conditional_formatting.add(area, CellIsRule(operator="greaterThanOrEqual",
                                                       formula=["0"], fill=GOOD_FILL))
    r = last_row + 2
    section(ws, r, "Detail: worst slice of each failure and workload")
    header(ws, r + 1, ["Failure", "Workload", "Worst slice", "Capacity [req/s]", "Demand [req/s]",
                       "Margin [1]", "Holds"])
    for i, m in enumerate(margins, start=r + 2):
        cells: tuple[tuple[Value, str | None], ...] = (
            (m.failure, None), (m.workload, None), (m.slice, None), (m.capacity_rps, RATE),
            (m.demand_rps, RATE), (m.margin, SHARE), ("holds" if m.holds else "FAILS", None))
        for c, (v, fmt) in enumerate(cells, start=1):
            put(ws, i, c, v, fmt)
    ws.freeze_panes = "B2"


def write_contract_sheet(ws: Worksheet, plan: Plan, scenario: Scenario,
                         table: CapacityTable) -> None:
    """The configuration-matrix rows the plan rests on (the same rows as contract.yaml)."""
    header(ws, 1, ["Model", "Model digest", "GPU", "Runtime", "Precision", "TP", "Workload",
                   "Max stable sequences", "Tested peak [req/s]", "TTFT P95 [ms]",
                   "Decode P95 [ms/token]", "Headroom [1]", "Source", "Measured on",
                   "Replicas planned (busiest slice)"])
    for r, row in enumerate(build_contract(plan, scenario, table).rows, start=2):
        measured = row.fingerprint.measured_on
        for c, (v, fmt) in enumerate((
                (row.model, None), (row.model_digest, None), (row.gpu, None), (row.runtime, None),
                (row.precision, None), (row.tp, COUNT), (row.workload, None),
                (row.max_stable_sequences, COUNT), (row.tested_peak_rps, RATE),
                (row.ttft_p95_ms, "#,##0.0"), (row.decode_p95_ms_per_token, "#,##0.00"),
                (row.headroom, SHARE), (row.source, None),
                (measured.isoformat() if measured else None, None),
                (row.replicas_planned, COUNT)), start=1):
            put(ws, r, c, v, fmt)
    ws.freeze_panes = "A2"


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
    r += 2
    section(ws, r, "Per tenant")
    header(ws, r + 1, ["Tenant", *titles])
    r += 1
    output_by_tenant: dict[str, float] = {}
    for w in plan.workload_costs:
        output_by_tenant[w.tenant] = output_by_tenant.get(w.tenant, 0.0) + w.output_tokens_per_month
    for tenant, (cost, tokens) in tenant_costs(plan).items():
        r += 1
        _cost_row(ws, r, (tenant,), cost, tokens, output_by_tenant[tenant], first_value_col=2)
    ws.freeze_panes = "A2"


def _cost_row(ws: Worksheet, r: int, labels: tuple[str, ...], cost: float, tokens: float,
              output_tokens: float, first_value_col: int) -> None:
    for c, label in enumerate(labels, start=1):
        put(ws, r, c, label)
    c = first_value_col
    cost_cell, tok_cell, out_cell = (f"{get_column_letter(c + i)}{r}" for i in range(3))
    put(ws, r, c, cost, MONEY)
    put(ws, r, c + 1, tokens / 1e6, RATE)
    put(ws, r, c + 2, output_tokens / 1e6, RATE)
    put(ws, r, c + 3, Formula(f"{cost_cell}/{tok_cell}") if tokens > 0 else None, "#,##0.0000")
    put(ws, r, c + 4, Formula(f"{cost_cell}/{out_cell}") if output_tokens > 0 else None,
        "#,##0.0000")


def _table(ws: Worksheet, r: int, title: str, titles: Sequence[str],
           rows: Sequence[Sequence[Value]]) -> int:
    """A titled table inside a multi-table sheet; returns the next free row."""
    section(ws, r, title)
    header(ws, r + 1, titles)
    for i, values in enumerate(rows, start=r + 2):
        for c, v in enumerate(values, start=1):
            put(ws, i, c, v)
    return r + len(rows) + 3


def write_assumptions(ws: Worksheet, plan: Plan, scenario: Scenario) -> None:
    """Every input the plan used: policy, prices, catalog entries, workloads, hourly shapes."""
    p = scenario.policy
    r = _table(ws, 1, "Policy", ["Setting", "Value", "Unit"], [
        ("hours_per_month", p.hours_per_month, "h/month"),
        ("failure_utilization", p.failure_utilization, "1"),
        ("monthly_budget", p.monthly_budget, f"{p.currency}/month"),
        ("currency", p.currency, ""),
        ("memory_margin_fraction", p.memory_margin_fraction, "1"),
        ("measured_max_age_days", p.measured_max_age_days, "days"),
        ("as_of", p.as_of, "date"),
        ("share_nodes", p.share_nodes, ""),
        ("time blocks", "; ".join(f"{b.name}: {','.join(map(str, b.hours))}"
                                  for b in p.time_blocks), "hours of the day"),
    ])
    price_rows: list[Sequence[Value]] = []
    named = any(z.name for z in scenario.zones)  # the account's zone names, where mapped
    for z in scenario.zones:
        for o in z.offers:
            for kind in PURCHASE_ORDER:
                t = o.terms(kind)
                if t is None:
                    continue
                res = t if isinstance(t, ReservedTerms) else None
                price_rows.append((
                    z.id, z.region, o.gpu, o.instance_type, o.gpus_per_node, kind,
                    t.price_per_gpu_hour, t.stock_gpus,
                    res.commitment_months if res else None, res.lead_time_weeks if res else None,
                    o.on_demand.startup_minutes if kind is PurchaseKind.on_demand and o.on_demand
                    else None,
                    o.spot.interruption_rate_per_hour if kind is PurchaseKind.spot and o.spot
                    else None,
                    o.price_source, *((z.name,) if named else ())))
    cur = p.currency
    r = _table(ws, r, "Prices and stock", [
        "Zone", "Region", "GPU", "Instance type", "GPUs per node", "Purchase kind",
        f"Price [{cur}/GPU-hour]", "Stock [GPUs]", "Commitment [months]", "Lead time [weeks]",
        "Startup [min]", "Interruption rate [1/h]", "Price source",
        *(("Zone name (account)",) if named else ())], price_rows)
    used_gpus = sorted({n.gpu for n in plan.nodes} | {a.gpu for a in plan.allocations})
    gpus = [g for g in scenario.gpus if g.name in used_gpus] or list(scenario.gpus)
    r = _table(ws, r, "GPU catalog entries (and efficiency factors)", [
        "GPU", "Memory [GiB]", "HBM bandwidth [GB/s]", "BF16 dense [TFLOPS]", "FP8 dense [TFLOPS]",
        "Link bandwidth [GB/s]", "GPUs per node", *map(field_header, EFFICIENCY_FIELDS),
        "Source"],
        [(g.name, g.memory_gib, g.hbm_bandwidth_gb_per_s, g.bf16_tflops, g.fp8_tflops,
          g.link_bandwidth_gb_per_s, g.gpus_per_node,
          *(getattr(g.efficiency, f) for f in EFFICIENCY_FIELDS), g.source)
         for g in gpus])
    model_names = {w.model for w in scenario.workloads}
    r = _table(ws, r, "Models", [
        "Model", "Layers", "Hidden size", "Attention heads", "KV heads", "Head dim",
        "Total params [10^9]", "Active params [10^9]", "Max context [tokens]", "Weights digest",
        "Source"],
        [(m.name, m.layers, m.hidden_size, m.attention_heads, m.kv_heads, m.head_dim,
          m.total_params_b, m.active_params_b, m.max_context_tokens, m.weights_digest, m.source)
         for m in scenario.models if m.name in model_names])
    r = _table(ws, r, "Workloads", [
        "Workload", "Tenant", "Class", "Model", "Precision", "Runtime", "Peak [req/s]",
        "Batch volume [req/day]", "Batch window [hours]", "Input P50/P95/P99 [tokens]",
        "Output P50/P95/P99 [tokens]", "Typical input [tokens] (mean, else P50)",
        "Typical output [tokens] (mean, else P50)", "Prefix cache hit rate [1]",
        "TTFT P95 SLO [ms]", "Per-token P95 SLO [ms]", "Survivability", "Target utilization [1]",
        "Allowed GPUs"],
        [(w.name, w.tenant, w.workload_class, w.model, w.precision, w.runtime,
          w.arrival.peak_rps if w.arrival else None,
          w.batch.daily_requests if w.batch else None,
          ",".join(map(str, w.batch.window_hours)) if w.batch else None,
          f"{w.input_tokens.p50}/{w.input_tokens.p95}/{w.input_tokens.p99}",
          f"{w.output_tokens.p50}/{w.output_tokens.p95}/{w.output_tokens.p99}",
          w.input_tokens.typical, w.output_tokens.typical,  # [tokens]: what volumes use
          w.prefix_cache_hit_rate, w.slo.ttft_p95_ms, w.slo.tpot_p95_ms, w.survivability,
          w.utilization, ",".join(w.allowed_gpus) if w.allowed_gpus is not None else "any")
         for w in scenario.workloads])
    r = _table(ws, r, "Hourly demand [req/s] of the peak day (hour 0..23)",
               ["Workload", *(f"h{h:02d}" for h in range(24))],
               [(w.name, *w.hourly_demand_rps()) for w in scenario.workloads])
    _table(ws, r, "Input files", ["Source"], [(s,) for s in scenario.sources])
    ws.freeze_panes = "A2"


def add_plan_sheets(wb: Workbook, plan: Plan, scenario: Scenario, table: CapacityTable,
                    prefix: str = "") -> None:
    """Append one plan's eight sheets to a workbook, their titles prefixed with ``prefix``."""
    names = Names(prefix)
    ws = {s: wb.create_sheet(names[s]) for s in SHEETS}
    currency = plan.cost.currency
    total = write_purchase_plan(ws["Purchase plan"], plan, scenario, currency)
    write_summary(ws["Summary"], plan, scenario, sheet_ref(names["Purchase plan"], total),
                  currency)
    write_pools(ws["Pools"], plan, scenario, table)
    write_hourly(ws["Hourly"], plan, scenario)
    write_survivability(ws["Survivability"], plan, scenario)
    write_contract_sheet(ws["Capacity contract"], plan, scenario, table)
    write_cost_attribution(ws["Cost attribution"], plan, currency)
    write_assumptions(ws["Assumptions"], plan, scenario)
    if plan.horizon is not None:  # a plan over periods: its orders and periods
        ws["Schedule"] = wb.create_sheet(names["Schedule"], index=wb.index(ws["Purchase plan"]))
        write_schedule(ws["Schedule"], plan)
    for sheet in ws.values():
        fit_columns(sheet)


def plan_workbook(plan: Plan, scenario: Scenario, table: CapacityTable) -> Workbook:
    """The procurement workbook of one plan."""
    wb = Workbook()
    wb.remove(wb.active)
    add_plan_sheets(wb, plan, scenario, table)
    return wb


def write_plan_workbook(plan: Plan, scenario: Scenario, table: CapacityTable,
                        path: str | Path) -> Path:
    """Write ``plan.xlsx`` atomically; returns its path."""
    path = Path(path)
    stamp = stamp_of(scenario.policy.as_of)
    write_atomic(path, workbook_bytes(plan_workbook(plan, scenario, table), stamp))
    return path


