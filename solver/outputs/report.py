"""``report.md``: the plan as a reviewer reads it, with its two PNG charts.

Every figure comes from :mod:`solver.outputs.figures` (one formula per figure, documented in
docs/outputs.md); this module only lays them out.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from models.capacity import CapacityTable
from models.common import CapacitySource, PurchaseKind
from models.offers import AssumedFigure, SpotTerms
from models.plan import (
    REPLAY_WARMUP_S,
    REPLAY_WINDOW_S,
    Allocation,
    HorizonStart,
    Plan,
    SolveStatus,
)
from models.scenario import Scenario
from models.text import markdown_code, markdown_text
from models.units import amount_text
from solver.capacity.replica import e2e_p95_ms
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
from solver.outputs.charts import (
    capacity_by_period_figure,
    capacity_vs_demand_figure,
    cost_by_zone_figure,
    png,
)
from solver.outputs.figures import (
    capacity_headroom,
    committed_share,
    cost_by_zone_gpu_and_kind,
    day_series,
    gpu_counts,
    intact_at_failure_utilization,
    peak_utilization,
    slice_figures,
    survivability_margins,
    tenant_costs,
    used_configs,
)
from solver.outputs.held import Held, held_in_row
from solver.outputs.labels import (
    FROM_TODAY,
    RERUN_NOTE,
    TO_EXCLUSIVE,
    config_label,
    diagnosis_title,
    failure_label,
    label,
    status_label,
)
from solver.outputs.plan_dir import (
    COST_CHART_FILE,
    DAY_CHART_FILE,
    PERIOD_CHART_FILE,
    REPORT_FILE,
)
from solver.outputs.prepared import prepared_on
from solver.outputs.replay_words import excluded_lines, gross_misses, window_lines
from solver.outputs.schedule import SPENT_COUNTS, schedule_lines, work_limited
from solver.outputs.slo_binding import BINDING_SLACK, binding_text, row_e2e_ms


def _table(titles: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    out += ["| " + " | ".join(markdown_text(v) for v in row) + " |" for row in rows]
    return [*out, ""]


def _held_rows(plan: Plan, scenario: Scenario) -> dict[tuple[str, str, PurchaseKind], Held]:
    """What of each committed pool is the scenario's inventory (empty: none)."""
    out = {}
    for n in plan.nodes:
        held = held_in_row(plan, scenario, n, None, plan.cost.currency)
        if held is not None:
            out[(n.zone, n.gpu, n.purchase)] = held
    return out


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f}"


def _schedule_items(plan: Plan, scenario: Scenario) -> list[str]:
    """The schedule's lines as a Markdown list: a demand scenario's or workload's name as code
    (the terminal writes it between backticks, which plain text would show escaped), an order
    under the line that introduces it as a nested item."""
    names = [s.scenario for s in plan.horizon.scenarios] if plan.horizon is not None else []
    if plan.replanned_from is not None:  # the earlier plan's scenario, in its kept line
        names.append(plan.replanned_from.scenario)
    names += [w.name for w in scenario.workloads]  # an idle node's reason names workloads
    items = []
    for line in schedule_lines(plan, scenario):
        text = markdown_text(line.strip())
        for name in names:
            text = text.replace(markdown_text(f"`{name}`"), markdown_code(name))
        items.append(f"{'  ' if line.startswith('  ') else ''}- {text}")
    return items


def _cost_rows(plan: Plan) -> list[list[str]]:
    """The Cost table. A plan over periods shows what each demand scenario spends inside the
    horizon where a one-day plan shows its cost per year: the first period's month × 12 read as
    the year's spend, though later periods run a different fleet."""
    cur, h = plan.cost.currency, plan.horizon
    first = "" if h is None else f", first period ({h.start}, {h.fleet_shown})"
    rows = [[f"Cost per month{first} [{cur}/month]", _money(plan.cost.per_month)]]
    if h is None:
        rows.append([f"Cost per year [{cur}/year]", _money(plan.cost.per_month * 12)])
    else:
        rows += [[f"Spent inside the horizon {h.start} to {h.end} if demand follows "
                  f"{s.scenario} [{cur}]", _money(s.cost_in_horizon)]
                 for s in h.scenarios]
    return [*rows,
            [f"Cost per million tokens, input + output{first} [{cur}/Mtok]",
             _money(plan.cost.per_million_tokens)],
            [f"Cost per million output tokens{first} [{cur}/Mtok]",
             _money(plan.cost.per_million_output_tokens)],
            [f"Share of cost on committed capacity (reserved + owned){first}",
             _share(committed_share(plan))]]


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _assumed(text: str, assumed: bool) -> str:
    """A figure with *assumed* beside it where nobody gave it."""
    return f"{text} ({ASSUMED})" if assumed else text


def _source_text(a: Allocation) -> str:
    """Where a rate comes from: *predicted* or *measured*, and the GPU whose runtime costs a
    predicted rate borrows."""
    source = label(a.capacity_source).lower()
    return source if a.costs_fitted_on is None else (
        f"{source}; runtime costs fitted on {a.costs_fitted_on}")


def _workload_rows(plan: Plan, scenario: Scenario, table: CapacityTable) -> list[list[object]]:
    figures = slice_figures(plan, scenario)
    rows: list[list[object]] = []
    for wl in scenario.workloads:
        configs = [c for c in used_configs(plan, table) if c[0] == wl.name]
        peak = max((f.demand_rps for f in figures if f.workload == wl.name), default=0.0)
        util = peak_utilization(figures, wl.name)
        spare = capacity_headroom(figures, wl.name)
        if not configs:
            rows.append([wl.name, wl.tenant, "—", "—", "—", f"{peak:,.2f}", _share(util),
                         _share(spare), "—", "—", "—"])
            continue
        for _, gpu, tp in configs:
            mine = [a for a in plan.allocations if (a.workload, a.gpu, a.tp) == (wl.name, gpu, tp)]
            reserved = sum(a.replicas for a in mine if a.slice is None)
            per_slice: dict[str, int] = defaultdict(int)
            for a in mine:
                if a.slice is not None:
                    per_slice[a.slice] += a.replicas
            cap = table.row(wl.name, gpu, tp)
            rows.append([
                wl.name, wl.tenant, config_label(gpu, tp, wl.precision),
                f"{reserved} + {max(per_slice.values(), default=0)}",
                f"{mine[0].replica_capacity_rps:,.3f} ({_source_text(mine[0])})",
                f"{peak:,.2f}", _share(util), _share(spare),
                f"{cap.ttft_p95_ms:,.0f} / {wl.slo.ttft_p95_ms:,.0f}" if cap else "—",
                f"{cap.tpot_p95_ms:,.1f} / {wl.tpot_slo_ms:,.1f}"
                if cap and wl.has_second_token else "—",
                _share(cap.headroom) if cap else "—",
            ])
    return rows


def e2e_titles(scenario: Scenario) -> list[str]:
    """The workloads table's end-to-end columns, where a workload states ``slo.e2e_p95_ms``
    (:func:`with_e2e_cells`); none otherwise."""
    if all(w.slo.e2e_p95_ms is None for w in scenario.workloads):
        return []
    return ["End-to-end P95 / SLO [ms]", "Binding SLO"]


def with_e2e_cells(rows: list[list[object]], plan: Plan, scenario: Scenario,
                   table: CapacityTable) -> list[list[object]]:
    """:func:`_workload_rows` with :func:`e2e_titles`' cells: the end-to-end P95 of a P95
    answer at the row's P95s against the SLO, and the SLO that binds the rate
    (:func:`~solver.outputs.slo_binding.binding_text`); ``—`` where the workload states no
    end-to-end SLO or uses no configuration. Rows come in :func:`_workload_rows`' order (a
    workload's used configurations, or one ``—`` row)."""
    if not e2e_titles(scenario):
        return rows
    cells: list[list[object]] = []
    for wl in scenario.workloads:
        configs: list[tuple[str, str, int] | None] = [
            c for c in used_configs(plan, table) if c[0] == wl.name]
        for config in configs or [None]:
            cap = None if config is None else table.row(*config)
            e2e_ms = None if cap is None else row_e2e_ms(cap, wl)
            if cap is None or e2e_ms is None or wl.slo.e2e_p95_ms is None:
                cells.append(["—", "—" if cap is None else binding_text(cap, wl)])
            else:
                cells.append([f"{e2e_ms:,.0f} / {wl.slo.e2e_p95_ms:,.0f}",
                              binding_text(cap, wl)])
    assert len(cells) == len(rows)
    return [[*row, *extra] for row, extra in zip(rows, cells, strict=True)]


def _e2e_lines(plan: Plan, scenario: Scenario, table: CapacityTable) -> list[str]:
    """Each configuration the plan uses for a workload that states ``slo.e2e_p95_ms``: the
    end-to-end P95 of a P95 answer at the SLO-holding rate against the SLO, and whether it is
    the SLO that binds (the tightest of the three there, within :data:`BINDING_SLACK` of it;
    docs/capacity-model.md, "The end-to-end SLO")."""
    out = []
    stating = {w.name: w for w in scenario.workloads if w.slo.e2e_p95_ms is not None}
    for workload, gpu, tp in used_configs(plan, table):
        wl, row = stating.get(workload), table.row(workload, gpu, tp)
        if row is None or wl is None or wl.slo.e2e_p95_ms is None:
            continue
        e2e_ms = e2e_p95_ms(row.ttft_p95_ms, row.tpot_p95_ms, wl.output_tokens.p95)
        slack = 1 - e2e_ms / wl.slo.e2e_p95_ms  # [1]
        binds = slack <= row.headroom + 1e-12 and slack < BINDING_SLACK
        out.append(f"- {markdown_text(workload)}, {config_label(gpu, tp, row.precision)}: "
                   f"{e2e_ms:,.0f} / {wl.slo.e2e_p95_ms:,.0f} ms"
                   + (" — the end-to-end SLO binds" if binds else ""))
    if not out:
        return []
    return ["End-to-end P95 of an answer of the P95 output length at the SLO-holding rate / SLO "
            "(TTFT P95 + (output P95 − 1) × per-token P95):", "", *out, ""]


def _measured_lines(plan: Plan, table: CapacityTable) -> list[str]:
    """Each configuration the plan sizes from a measured row, with the load test and the
    analytic figure it overrides (the capacity row's note: a new user's plan said *measured*
    and nowhere what the model would have given; ``capacity --explain`` alone did)."""
    out = []
    for workload, gpu, tp in used_configs(plan, table):
        row = table.row(workload, gpu, tp)
        if row is not None and row.source is CapacitySource.measured:
            config = config_label(gpu, tp, row.precision)
            out.append(f"- {markdown_text(workload)}, {config}: {markdown_text(row.note)}")
    if not out:
        return []
    return ["Rates measured by a load test, not predicted (docs/capacity-model.md, \"Measured "
            "rows override\"):", "", *out, ""]


def _price_rows(plan: Plan, scenario: Scenario) -> tuple[list[list[object]], str]:
    """Offers of the (zone, GPU) pairs the plan buys, each assumed figure marked; and one line
    summarising the offers the plan does not use."""
    bought, unused = offers_bought(plan, scenario)
    rows: list[list[object]] = []
    for b in bought:
        o, kind, t = b.offer, b.kind, b.terms
        rows.append([
            scenario.zone_label(b.zone), o.gpu, b.kind_label,
            _assumed(f"{t.price_per_gpu_hour:.4f}",
                     kind is PurchaseKind.reserved
                     and offer_assumes(o, AssumedFigure.reserved_price, kind)),
            _assumed(f"{t.stock_gpus:,}", offer_assumes(o, AssumedFigure.stock)),
            _assumed(f"{t.interruption_rate_per_hour:g}",  # [1/h]
                     offer_assumes(o, AssumedFigure.spot_interruption_rate))
            if isinstance(t, SpotTerms) else "—",
            price_source(o, kind) or "scenario"])
    return rows, unused


def replay_section(plan: Plan) -> list[str]:
    """The final round of the trace replay (none without one): each check's P95s vs SLO."""
    if not plan.replay:
        return []
    last = max(c.round for c in plan.replay)

    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:,.1f}"

    rows = [[c.workload, c.failure, c.slice, f"{c.requests:,}",
             f"{ms(c.ttft_p95_ms)} / {c.ttft_slo_ms:,.0f}",
             f"{ms(c.tpot_p95_ms)} / "
             + ("—" if c.tpot_slo_ms is None else f"{c.tpot_slo_ms:,.0f}"),
             _share(c.slo_attainment),
             c.verdict] for c in plan.replay if c.round == last]
    earlier = sum(1 for c in plan.replay if c.round < last and not c.holds)
    note = (f"Round {last} of the solve–replay loop; {earlier} miss(es) in earlier rounds "
            "de-rated their workloads' configurations (plan.json `replay` has every round)."
            if last > 1 else "Round 1: the first solve, replayed.")
    windows = [*window_lines(plan), *excluded_lines(plan)]
    gross = gross_misses(plan)
    return ["## Trace replay at the planned peak", "",
            "Each workload's trace scaled to its planned peak, replayed on the plan's replicas "
            f"over the {REPLAY_WINDOW_S:.0f} s around its busiest minute after "
            f"{REPLAY_WARMUP_S:.0f} s of warm-up (less where the trace is shorter), intact and "
            "after each failure it must survive (docs/replay.md, \"Replay in the plan\"). "
            + note, "",
            *([] if not windows else [*(f"- {markdown_text(w)}" for w in windows), ""]),
            *([] if not gross else [*(f"- **Warning:** {markdown_text(g)}." for g in gross), ""]),
            *_table(["Workload", "Failure", "Slice", "Requests", "TTFT P95 / SLO [ms]",
                     "Per-token P95 / SLO [ms]", "Within both SLOs", "Result"], rows)]


def render_report(plan: Plan, scenario: Scenario, table: CapacityTable,
                  charts: Sequence[str] = (), prepared: dt.date | None = None) -> str:
    """``report.md``: what a reviewer reads; ``charts`` are the PNG file names written beside.

    ``prepared`` is the date the report is prepared on (default: :func:`prepared_on` of the
    scenario's ``policy.as_of``).
    """
    cur = plan.cost.currency
    s = plan.solver
    gap = "—" if s.gap is None else f"{s.gap:.2%}"
    day = prepared or prepared_on(scenario.policy.as_of)
    lines = [
        f"# Fleet plan: {markdown_text(plan.scenario)}", "",
        f"Prepared on {day.isoformat()}"
        + ("" if plan.horizon is None else
           f"; the horizon starts {plan.horizon.start.isoformat()}"
           + (f" ({FROM_TODAY})" if plan.horizon.start_from is HorizonStart.today else ""))
        + f". Status **{status_label(plan.status, s)}** "
        f"({markdown_text(s.name)}, {s.seconds:.1f} s, MIP gap {gap}). "
        f"Input fingerprint {markdown_code(plan.fingerprint or '—')}.", "",
    ]
    if plan.warnings:  # as plan said them on stderr (Plan.warnings)
        lines += ["## Warnings", "", *(f"- {markdown_text(w)}" for w in plan.warnings), ""]
    if plan.status is SolveStatus.time_limit:
        lines += [f"The solve stopped at its time limit: {RERUN_NOTE}.", ""]
    elif work_limited(plan):
        from solver.outputs.labels import WORK_LIMIT_NOTE

        lines += [f"The solve stopped at its search limit, short of the gap asked: "
                  f"{WORK_LIMIT_NOTE}.", ""]
    if scenario.description:
        lines += [markdown_text(scenario.description, line_start=True), ""]
    assumptions = plan_assumptions(plan, scenario)
    if assumptions:
        lines += [f"Figures marked *{ASSUMED}* were not given by anyone: "
                  + "; ".join(f"{a.figure.lower()} ({markdown_text(a.value)})"
                              for a in assumptions)
                  + ". They are listed first under Assumptions.", ""]
    if plan.diagnosis:
        lines += [f"## {diagnosis_title(plan)}", ""]
        lines += _table(["Requirement", "Workload", "Zone", "GPU", "Slice", "Short by", "Message"],
                        [[d.requirement, d.workload or "", d.zone or "", d.gpu or "",
                          d.slice or "", f"{d.amount:,.2f} {d.unit}", d.message]
                         for d in plan.diagnosis])
    if plan.horizon is not None:
        lines += ["## Schedule", "",
                  *_schedule_items(plan, scenario),
                  "", f"The sections below describe the fleet of the first period "
                  f"({plan.horizon.start}) if demand follows "
                  f"{markdown_code(plan.horizon.fleet_shown)}; "
                  "every period is in plan.json (`periods`) and the workbook's Schedule sheet.",
                  ""]
        if PERIOD_CHART_FILE in charts:
            lines += [f"![Peak demand and usable capacity per period]({PERIOD_CHART_FILE})", ""]
    lines += ["## Cost", ""]
    lines += _table(["Figure", "Value"], _cost_rows(plan))
    if plan.horizon is not None:
        lines += [f"Spent inside the horizon counts {SPENT_COUNTS} (plan.json "
                  "`horizon.scenarios[].cost_in_horizon`); the other figures are the first "
                  "period's.", ""]
    if COST_CHART_FILE in charts:
        lines += [f"![Monthly cost by zone, GPU type and purchase kind]({COST_CHART_FILE})", ""]
    lines += ["## GPUs", "",
              "Reserved GPUs as bought; on-demand and spot at their busiest slice.", ""]
    held = _held_rows(plan, scenario)
    lines += _table(["Zone", "GPU", "Purchase", "GPUs", f"Cost [{cur}/month]",
                     *(["Already held"] if held else [])],
                    [[scenario.zone_label(c.zone), c.gpu, label(c.purchase), c.gpus,
                      _money(c.cost_per_month),
                      *([h.text if (h := held.get((c.zone, c.gpu, c.purchase))) else ""]
                        if held else [])]
                     for c in gpu_counts(plan)])
    if held:
        lines += ["Held reservations cost their own price (a line stating none: the zone's "
                  "cheapest reserved quote, marked assumed), owned nodes held their power and "
                  "hosting only (the capital is spent): plan.xlsx, Purchase plan, gives each "
                  "price's source.", ""]
        if any(h.to is not None for h in held.values()):
            # "reservation to 2027-07-01" of a line written `ends: 2027-06-30` said nothing of
            # the day after beside it: only the schedule line and the sheet's header said it
            lines += [f"Already held: {TO_EXCLUSIVE}, as in every \"A to B\" of this report "
                      "(an inventory line's `ends` is its last day held, so `ends: 2027-06-30` "
                      "reads \"to 2027-07-01\").", ""]
    lines += ["## Workloads", "",
              "Replicas: committed (reserved and owned, running every hour) + most elastic "
              "(on-demand and spot) in one slice. Capacity headroom: the demand "
              "growth the intact fleet absorbs at the SLO before its tightest slice is full. "
              "Latency: P95 at the SLO-holding rate / SLO, predicted or measured as the rate "
              "is; latency slack: the share of "
              "the tighter SLO left unused at that rate (near 0 by construction: the rate is "
              "where an SLO binds).", ""]
    lines += _table(["Workload", "Tenant", "Configuration", "Replicas", "Rate [req/s/replica]",
                     "Peak demand [req/s]", "Utilization at peak", "Capacity headroom",
                     "TTFT P95 [ms]", "Per-token P95 [ms]", "Latency slack at SLO rate",
                     *e2e_titles(scenario)],
                    with_e2e_cells(_workload_rows(plan, scenario, table), plan, scenario, table))
    lines += _measured_lines(plan, table)
    lines += _e2e_lines(plan, scenario, table)
    if DAY_CHART_FILE in charts:
        lines += [f"![Capacity vs demand over the peak day]({DAY_CHART_FILE})", ""]
    share = _share(scenario.policy.failure_utilization)
    lines += ["## Survivability", "",
              "Worst slice of each failure; margin = (capacity − demand) ÷ demand. Capacity "
              "is the replicas' SLO-holding rates × the workload's target utilization with "
              "no failure (the intact fleet's rule), and × the utilization allowed after a "
              f"failure ({share}) in every failure row. Compare a failure row with the row "
              f"*No failure, at {share}*, which counts the intact fleet at that same "
              "utilization: a failure can only lower it (docs/survivability.md).", ""]
    rows = []
    for m in survivability_margins(plan):
        rows.append([failure_label(m.failure), m.workload, m.slice, f"{m.capacity_rps:,.2f}",
                     f"{m.demand_rps:,.2f}", _share(m.margin),
                     "holds" if m.holds else "FAILS"])
        c = intact_at_failure_utilization(m, scenario) if m.failure == "none" else None
        if c is not None:
            rows.append([f"No failure, at {share}", c.workload, c.slice,
                         f"{c.capacity_rps:,.2f}", f"{c.demand_rps:,.2f}", _share(c.margin),
                         "for comparison"])
    lines += _table(["Failure", "Workload", "Worst slice", "Capacity [req/s]", "Demand [req/s]",
                     "Margin", "Result"], rows)
    lines += replay_section(plan)
    lines += ["## Cost attribution", ""]
    lines += _table(["Workload", "Tenant", f"Cost [{cur}/month]", "Tokens [Mtok/month]",
                     f"{cur}/Mtok"],
                    [[w.workload, w.tenant, _money(w.cost_per_month),
                      f"{w.tokens_per_month / 1e6:,.1f}", _money(w.per_million_tokens)]
                     for w in plan.workload_costs])
    lines += _table(["Tenant", f"Cost [{cur}/month]", "Tokens [Mtok/month]", f"{cur}/Mtok"],
                    [[t, _money(c), f"{n / 1e6:,.1f}", _money(c / (n / 1e6) if n > 0 else None)]
                     for t, (c, n) in tenant_costs(plan).items()])
    p = scenario.policy
    lines += ["## Assumptions", ""]
    if assumptions:
        lines += [f"Figures nobody gave ({ASSUMED}), first:", ""]
        lines += _table(["Assumed figure", "Value", "Applies to", "Why"],
                        [[f"{a.figure} ({ASSUMED})", a.value, a.applies_to, a.why]
                         for a in assumptions])
    lines += _table(["Assumption", "Value"], [
        ["Hours per month", f"{p.hours_per_month:g}"],
        ["Utilization after a failure (share of SLO-holding rate)", _share(p.failure_utilization)],
        ["Monthly budget", _money(p.monthly_budget)],
        ["Measured rows valid for", f"{p.measured_max_age_days} days"],
        ["Measured rows' token lengths (P50, P95) within",
         f"±{_share(p.measured_length_tolerance)} of the workload's"],
        ["Replicas of different workloads share nodes",
         "yes" if p.share_nodes else "no (dedicated pools)"],
        ["Hours of the day are in", p.time_zone],
        ["Slices of the peak day", ", ".join(f"{sl.name} ({len(sl.hours)} h)"
                                             for sl in plan.slices)],
    ])
    price_rows, unused = _price_rows(plan, scenario)
    lines += _table(["Zone", "GPU", "Purchase", f"Price [{cur}/GPU-hour]", "Stock [GPUs]",
                     "Spot interruption rate [1/h]", "Price source"], price_rows)
    if unused:
        lines += [unused, ""]
    lines += _table(["Workload", "Model", "Peak [req/s] or volume [req/day]", "Arrivals",
                     "Input P50/P95 [tokens]", "Output P50/P95 [tokens]",
                     "Typical input/output [tokens] (mean, else P50)",
                     "SLO TTFT/per-token P95 [ms]", "Survivability", "Target utilization"],
                    [[w.name, w.model,
                      amount_text(w.arrival.peak_rps, 4) if w.arrival
                      else f"{w.batch.daily_requests:,.0f}/day"
                      if w.batch else "",
                      arrivals_text(w),
                      f"{w.input_tokens.p50}/{w.input_tokens.p95}",
                      f"{w.output_tokens.p50}/{w.output_tokens.p95}",
                      f"{w.input_tokens.typical:.10g}/{w.output_tokens.typical:.10g}",
                      f"{w.slo.ttft_p95_ms:g}/"
                      + (f"{w.tpot_slo_ms:g}" if w.has_second_token else "—"),
                      label(w.survivability),
                      _assumed(_share(w.utilization), utilization_assumed(w))]
                     for w in scenario.workloads])
    lines += ["Every figure, its formula and its source: docs/outputs.md. Inputs: "
              + ", ".join(markdown_code(src) for src in scenario.sources), ""]
    return "\n".join(lines)


def write_report(plan: Plan, scenario: Scenario, table: CapacityTable,
                 out_dir: str | Path, prepared: dt.date | None = None) -> list[Path]:
    """Write ``report.md`` and its PNG charts into ``out_dir``; returns the paths written
    (``prepared``: as :func:`render_report`)."""
    out = Path(out_dir)
    written: list[Path] = []
    costs = cost_by_zone_gpu_and_kind(plan)
    if costs:
        write_atomic(out / COST_CHART_FILE, png(cost_by_zone_figure(costs, plan.cost.currency)))
        written.append(out / COST_CHART_FILE)
    if scenario.workloads and plan.slices:
        figure = capacity_vs_demand_figure(day_series(plan, scenario), scenario.policy.time_zone,
                                           scenario.policy.failure_utilization)
        write_atomic(out / DAY_CHART_FILE, png(figure))
        written.append(out / DAY_CHART_FILE)
    if plan.periods:
        write_atomic(out / PERIOD_CHART_FILE, png(capacity_by_period_figure(plan)))
        written.append(out / PERIOD_CHART_FILE)
    write_atomic(out / REPORT_FILE, render_report(plan, scenario, table,
                                                  [p.name for p in written], prepared))
    return [out / REPORT_FILE, *written]
