"""``fleetplan check``: does a fleet hold its workloads through every failure it must survive?

Parse → validate → compute → print. The compute step is :func:`run_check`; options that add
inputs (e.g. a contract) extend it without touching the rendering.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from models.capacity import CapacityTable
from models.errors import InputError
from models.inventory import Fleet
from models.plan import Plan
from models.scenario import Scenario
from models.units import amount_text
from solver.cli.common import echo_json, given_file, json_option, load, scenario_argument
from solver.cli.periods import (
    Cell,
    InventoryPeriod,
    cells,
    demand_scenario_option,
    inventory_period,
    period_option,
    selected_periods,
    shown_period,
)
from solver.cli.show import Col, progress, table_lines
from solver.cli.signoff import period_checks
from solver.outputs.labels import failure_label, margin_label, plural
from solver.survivability.check import CheckReport, capacity_predictor, check_fleet
from solver.survivability.degrade import DegradationPlan, degradation_plans
from solver.survivability.fleet import fleet_file_gpus, load_fleet, read_plan
from solver.survivability.verify import verify_plan

fleet_option = click.option(
    "--fleet",
    "fleet_path",
    required=False,
    type=click.Path(path_type=Path),
    callback=given_file(),
    help="plan.json, or an inventory YAML/JSON of owned nodes (and optionally their layout).",
)


@dataclass(frozen=True)
class CellVerdict:
    """One period of one demand scenario of a plan over periods, checked."""

    demand_scenario: str
    period: int
    start: str
    report: CheckReport

    @property
    def ok(self) -> bool:
        return self.report.ok


@dataclass(frozen=True)
class CheckResult:
    """Everything the check command shows."""

    scenario: Scenario
    table: CapacityTable
    fleet: Fleet
    report: CheckReport
    plans: tuple[DegradationPlan, ...]
    verification: tuple[str, ...] | None
    """verify_plan's findings when the fleet is a plan.json (``None`` for an inventory)."""
    period: tuple[str, str] | None = None
    """A plan over periods: the first day and demand scenario of the period whose fleet the
    matrix checks (the one --period and --demand-scenario name, else the first of the scenario
    shown); ``None`` otherwise."""
    cells: tuple[CellVerdict, ...] = ()
    """A plan over periods: every period × demand scenario checked (those the options name),
    in plan order; the matrix shows one of them (``period``)."""
    period_index: int | None = None
    inventory_period: InventoryPeriod | None = None
    """An inventory against a scenario over periods: the period and demand scenario whose
    demand it is checked against (:func:`~solver.cli.periods.inventory_period`)."""

    @property
    def ok(self) -> bool:
        """Every required survival holds: in the fleet checked, and in every cell checked."""
        return self.report.ok and all(c.ok for c in self.cells)

    @property
    def exit_code(self) -> int:
        """1 when a required survival (or the steady state) fails in any cell, else 0."""
        return 0 if self.ok else 1


def run_check(scenario_path: Path | None, fleet_path: Path, period: str | None = None,
              demand_scenario: str | None = None) -> CheckResult:
    """Load the scenario and fleet, check every failure domain, plan the degradations.

    A plan over periods is checked in every period of every demand scenario (or those
    ``period`` and ``demand_scenario`` name, as :func:`solver.cli.periods.selected_periods`
    reads them): each cell's own fleet against its own demand. The matrix shown is the named
    cell's, else the first period's of the scenario the plan shows."""
    from solver.capacity.table import build_capacity_table

    scenario = load(scenario_path)
    plan = read_plan(fleet_path)
    against = None
    if plan is None:  # an inventory: against one period's demand of a scenario over periods
        against = inventory_period(scenario, period, demand_scenario, str(fleet_path))
        scenario = scenario if against is None else against.scenario
    chosen = selected_periods(plan, period, demand_scenario, str(fleet_path)) if plan else ()
    table = build_capacity_table(scenario, fleet_file_gpus(fleet_path, scenario))
    fleet = load_fleet(fleet_path, scenario, table)  # validates the file, as for any plan
    if plan is None or plan.horizon is None or not chosen:
        report = check_fleet(fleet, scenario, table, capacity_predictor(scenario))
        plans = degradation_plans(report, fleet, scenario, table)
        verification = None if plan is None else tuple(plan_findings(plan, scenario, table))
        shown = None if plan is None or plan.horizon is None else (
            plan.horizon.start.isoformat(), plan.horizon.fleet_shown)
        return CheckResult(scenario, table, fleet, report, plans, verification, shown,
                           inventory_period=against)
    first = shown_period(plan)
    # the first period of the scenario shown, else (--period alone) the period named under
    # the scenario shown, as simulate reads it: not the first demand scenario listed
    show = (first if first in chosen else
            next((c for c in chosen if first is not None and c.scenario == first.scenario),
                 chosen[0]))
    verdicts: list[CellVerdict] = []
    findings: list[str] = []
    shown_cell: tuple[Cell, Fleet, CheckReport] | None = None
    for cell in cells(plan, scenario, chosen):
        one = _cell_fleet(cell, fleet, str(fleet_path))
        report = check_fleet(one, cell.scenario, cell.table, capacity_predictor(cell.scenario))
        verdicts.append(CellVerdict(cell.period.scenario, cell.period.period,
                                    cell.period.start.isoformat(), report))
        findings += [f"{cell.label}: {row}" for row in verify_plan(
            cell.fleet, cell.scenario, cell.table, over_periods=True)]
        if cell.period == show:
            shown_cell = (cell, one, report)
    assert shown_cell is not None
    cell, one, report = shown_cell
    plans = degradation_plans(report, one, cell.scenario, cell.table)
    return CheckResult(cell.scenario, cell.table, one, report, plans, tuple(findings),
                       (show.start.isoformat(), show.scenario), tuple(verdicts), show.period)


def _cell_fleet(cell: Cell, top: Fleet, source: str) -> Fleet:
    """A cell's fleet: its period's replicas and nodes, less any no node holds; the notes of
    the plan as a whole (its status) kept."""
    fleet = cell.node_fleet(source)
    status = tuple(n for n in top.notes if n.startswith("the plan's status is"))
    return fleet.model_copy(update={"notes": (*status, *fleet.notes)})


def plan_findings(plan: Plan, scenario: Scenario, table: CapacityTable) -> list[str]:
    """``verify_plan``'s findings on a plan.json. A plan over periods is verified period by
    period, as ``plan`` signs it off: each period's fleet of each demand scenario against that
    period's demand, the inventory held then and its capacity table, each finding prefixed by
    the period (its top-level fleet is only the first period's)."""
    if plan.horizon is None:
        return verify_plan(plan, scenario, table)
    return [f"{label}: {row}" for label, fleet, one, one_table in period_checks(plan, scenario)
            for row in verify_plan(fleet, one, one_table, over_periods=True)]


def laid_out_by(result: CheckResult) -> str:
    """Who placed the replicas checked: ``plan`` (a plan.json's allocations, as ``fleetplan
    plan`` placed them), ``inventory`` (an inventory's own ``layout:``) or ``check`` (check's
    greedy layout of an inventory that gives none). ``laid_out_by_fleetplan`` (kept for the
    scripts that read it) is true only for ``check``: a plan's own layout reads false there."""
    if result.fleet.laid_out_by_fleetplan:
        return "check"
    return "inventory" if result.verification is None else "plan"


def to_json(result: CheckResult) -> dict[str, Any]:
    """Machine output: verdict, every row, every degradation plan, the fleet checked."""
    return {
        "scenario": result.report.scenario,
        "fleet": result.fleet.source,
        "ok": result.ok,
        "laid_out_by_fleetplan": result.fleet.laid_out_by_fleetplan,
        "replicas_laid_out_by": laid_out_by(result),
        "notes": list(result.fleet.notes),
        "failures": list(result.report.failures),
        "workloads": list(result.report.workloads),
        "broken": [
            {"failure": r.failure, "workload": r.workload, "slice": r.slice}
            for r in result.report.broken
        ],
        "rows": [r.model_dump(mode="json") for r in result.report.rows],
        "degradation": [p.model_dump(mode="json") for p in result.plans],
        "verification": None if result.verification is None else list(result.verification),
        "period": None if result.period is None else {
            "start": result.period[0], "demand_scenario": result.period[1],
            **({} if result.period_index is None else {"period": result.period_index})},
        **({} if result.inventory_period is None else {
            "demand_of": result.inventory_period.as_json()}),
        "cells": [{"demand_scenario": c.demand_scenario, "period": c.period, "start": c.start,
                   "ok": c.ok,
                   "broken": [{"failure": r.failure, "workload": r.workload, "slice": r.slice}
                              for r in c.report.broken]}
                  for c in result.cells],
        "replicas": [g.model_dump(mode="json") for g in result.fleet.replicas],
    }


def _cell(report: CheckReport, failure: str, workload: str) -> str | None:
    row = report.cell(failure, workload)
    if row is None:
        return None  # not checked: the workload does not ask to survive this failure
    margin = "" if row.margin_pct is None else f" {margin_label(row.margin_pct / 100)}"
    if row.holds:
        return f"holds{margin}"
    return f"FAILS{margin}" if row.required else f"fails{margin} {NOT_REQUIRED}"


#: Beside a failure a workload fails but need not survive (its survivability does not ask it).
NOT_REQUIRED = "(not required)"


def _intact_cell(report: CheckReport, scenario: Scenario, workload: str) -> str | None:
    """The no-failure margin with capacity at the failure utilization, as failure rows count it
    (:func:`solver.outputs.figures.intact_at_failure_utilization`)."""
    row = report.cell("none", workload)
    wl = next((w for w in scenario.workloads if w.name == workload), None)
    if row is None or wl is None or row.demand_rps <= 0:
        return None
    capacity = (row.capacity_rps / wl.utilization
                * scenario.policy.failure_utilization)
    return margin_label((capacity - row.demand_rps) / row.demand_rps)


def render_matrix(report: CheckReport, scenario: Scenario | None = None) -> list[str]:
    """Failure × workload: holds/fails and margin in the worst slice (FAILS = required; a dash:
    not checked); with the scenario, under *No failure* the same at the failure utilization,
    the basis of the failure rows."""
    rows = []
    for f in report.failures:
        rows.append([failure_label(f), *(_cell(report, f, w) for w in report.workloads)])
        if f == "none" and scenario is not None:
            rows.append([f"No failure, at {scenario.policy.failure_utilization:.0%}",
                         *(_intact_cell(report, scenario, w) for w in report.workloads)])
    return table_lines(["Failure", *report.workloads], rows, indent=0)


def render_cells(result: CheckResult) -> list[str]:
    """A plan over periods: one verdict per period × demand scenario checked, and the line
    saying whether every one holds."""
    if not result.cells:
        return []
    rows = [(c.demand_scenario, c.period, c.start,
             "holds" if c.ok else verdict_line(c.report)) for c in result.cells]
    failed = [c for c in result.cells if not c.ok]
    n = plural(len(result.cells), "period × demand scenario cell")
    # one cell (--period and --demand-scenario): "each of the 1 … cell" read as a slip
    whole = ("the one period × demand scenario cell checked" if len(result.cells) == 1 else
             f"each of the {n} checked")
    failing = ("FAIL: the one period × demand scenario cell checked fails: "
               if len(result.cells) == 1 else f"FAIL: {len(failed)} of the {n} checked fail: ")
    last = (f"OK: every required survival holds in {whole}" if not failed
            else failing + ", ".join(
                f"{c.demand_scenario} period {c.period} ({c.start})" for c in failed)
            + f" (its matrix: --period {failed[0].period} --demand-scenario "
              f"{failed[0].demand_scenario})")
    return ["every period of every demand scenario checked, each on its own fleet and demand "
            "(--period, --demand-scenario: one; the matrix above is one cell's):",
            *table_lines(["Demand scenario", Col("Period", right=True), "Start", "Verdict"],
                         rows), last]


#: Under the verdict of an inventory that fails where check laid its replicas out: the verdict
#: is of that layout, not of the nodes (a new user's 40 nodes failed zone loss here and held it
#: in `plan` with the same nodes as the scenario's inventory).
OWN_LAYOUT_LINE = (
    "check laid these replicas out itself, greedily (docs/survivability.md, \"Without a "
    "layout\"): the same nodes laid out otherwise may hold — give the inventory a `layout:`, "
    "or list the nodes as the scenario's `inventory` and run `fleetplan plan`, which places "
    "replicas to survive (and says what is short if the nodes cannot)")


def verdict_line(report: CheckReport) -> str:
    """The last line: OK, or which FAILS cells of the matrix fail, named as its rows are, and
    in how many slices (the count of failing rows alone, "48 required rows fail" under two
    FAILS cells of a flat day's 24 hourly slices, matched nothing on the screen)."""
    broken = report.broken
    if not broken:
        return "OK: every required survival holds"
    cells: dict[tuple[str, str], int] = {}
    for row in broken:
        cells[(row.workload, row.failure)] = cells.get((row.workload, row.failure), 0) + 1
    slices = {r.slice for r in report.rows}
    named = "; ".join(
        f"{workload} under {failure_label(failure)[:1].lower()}{failure_label(failure)[1:]}"
        + (f" ({plural(n, 'slice')} of {len(slices)})" if len(slices) > 1 else "")
        for (workload, failure), n in sorted(
            cells.items(), key=lambda c: (report.workloads.index(c[0][0]),
                                          report.failures.index(c[0][1]))))
    return (f"FAIL: {plural(len(cells), 'required cell')} of the table "
            f"{'fails' if len(cells) == 1 else 'fail'}: {named}")


def matrix_caption(scenario: Scenario, report: CheckReport | None = None) -> list[str]:
    """What a margin counts: with no failure the target utilization, after a failure the
    policy's failure utilization, so a failure that spares a workload shows more than none;
    and (``report``) what FAILS and fails (not required) mean, where a cell shows one."""
    share = f"{scenario.policy.failure_utilization:.0%}"
    out = ["margin = (capacity − demand) ÷ demand in the worst slice; capacity at each "
           "workload's target utilization with no failure,",
           f"at the failure utilization ({share} of the SLO-holding rate) in failure rows: "
           f"compare them with \"No failure, at {share}\", which a failure",
           "can only lower (docs/survivability.md)"]
    if report is not None and any(not r.holds for r in report.rows):
        out.append(f"FAILS: a failure the workload must survive (its survivability; exit "
                   f"code 1); fails {NOT_REQUIRED}: beyond what its survivability asks (e.g. a "
                   "region, or a zone under N+1), shown for information")
    return out


def render_latency(report: CheckReport) -> list[str]:
    """Steady state per workload in its busiest slice: utilization and predicted P95s (the
    end-to-end one where a workload states ``slo.e2e_p95_ms``)."""
    out = ["steady state (busiest slice): utilization, predicted TTFT / TPOT P95"]
    rows: list[tuple[object, ...]] = []
    steady = [max(mine, key=lambda x: x.demand_rps) for w in report.workloads
              if (mine := [r for r in report.rows if r.failure == "none" and r.workload == w])]
    with_e2e = any(r.e2e_p95_ms is not None for r in steady)
    for r in steady:
        rows.append((r.workload, r.slice, r.replicas,
                     None if r.utilization is None else f"{r.utilization:.0%}",
                     None if r.ttft_p95_ms is None else f"{r.ttft_p95_ms:,.0f}",
                     None if r.tpot_p95_ms is None else f"{r.tpot_p95_ms:,.1f}",
                     *([None if r.e2e_p95_ms is None else f"{r.e2e_p95_ms:,.0f}"]
                       if with_e2e else [])))
    heads: list[Col | str] = ["Workload", "Slice", Col("Replicas", right=True),
                              Col("Utilization", right=True), Col("TTFT P95 [ms]", right=True),
                              Col("Per-token P95 [ms]", right=True)]
    if with_e2e:
        heads.append(Col("End-to-end P95 [ms]", right=True))
    # a configuration whose row keeps its load test's points is read off them: say which
    measured = [f"  {r.workload}, {r.latency_basis}" for r in steady if r.latency_basis]
    return [*out, *table_lines(heads, rows), *measured]


def render_degradation(plans: tuple[DegradationPlan, ...], report: CheckReport) -> list[str]:
    """Each failure that leaves a workload short: the steps in order and what each frees."""
    if not plans:
        return ["no failure leaves a workload short: no degradation needed"]
    required = {(r.failure, r.workload) for r in report.broken}
    out = ["degradation, per failure that leaves a workload short (rps freed by each step):"]
    for p in plans:
        tag = " [must survive]" if (p.failure, p.workload) in required else ""
        out.append(
            f"  {p.failure} → {p.workload}{tag}: short {amount_text(p.shortfall_rps)} rps "
            f"({p.slice})"
        )
        for s in p.steps:
            out.append(f"    {s.order}. {s.action} +{amount_text(s.frees_rps)} rps: {s.detail}")
    out.append(f"  {plans[0].never}")
    return out


contract_option = click.option(
    "--contract", "contract_path", type=click.Path(path_type=Path), default=None,
    callback=given_file(),
    help="contract.yaml written beside a plan: report rows whose inputs changed (then --fleet "
         "may be omitted).",
)


def _check_contract(scenario: Path | None, contract_path: Path, as_json: bool) -> int:
    """Report expired contract rows (solver/outputs/contract.py); 1 when any row expired."""
    from solver.outputs.contract import check_contract, render_expired

    expired = check_contract(contract_path, load(scenario))
    if as_json:
        echo_json({"contract": str(contract_path),
                   "expired": [e.model_dump(mode="json") for e in expired]})
    else:
        for line in render_expired(expired, contract_path):
            click.echo(line)
    return 1 if expired else 0


def _over_periods(fleet_path: Path) -> bool:
    """FLEET is a readable plan over periods (a bad file is left to :func:`run_check`, which
    reports the scenario's problems first)."""
    try:
        plan = read_plan(fleet_path)
    except (InputError, OSError):
        return False
    return plan is not None and plan.horizon is not None


@click.command("check")
@scenario_argument()
@fleet_option
@contract_option
@period_option
@demand_scenario_option
@json_option
def command(scenario: Path | None, fleet_path: Path | None, contract_path: Path | None,
            period: str | None, demand_scenario: str | None, as_json: bool) -> None:
    """Check FLEET against SCENARIO (default: the built-in demo) under every failure domain.

    Exit code 1 when a workload fails a failure it must survive (or its steady state). A
    plan.json is also re-verified with plain arithmetic (reported, not part of the exit code).
    A plan over periods is checked in every period of every demand scenario, each on its own
    fleet and demand (--period and --demand-scenario narrow it), and exits 1 when any fails.
    With --contract, also exit 1 when a contract row has expired. Exit 2 on bad input.
    """
    if fleet_path is None and contract_path is None:
        raise click.UsageError("give --fleet (a plan.json or inventory), --contract, or both")
    if as_json and fleet_path is not None and contract_path is not None:
        raise click.UsageError("with --json, check a fleet or a contract, one at a time")
    contract_code = 0
    if contract_path is not None:
        contract_code = _check_contract(scenario, contract_path, as_json)
        if fleet_path is None:
            click.get_current_context().exit(contract_code)
    assert fleet_path is not None
    over_periods = _over_periods(fleet_path)
    # a plan over periods is checked cell by cell, each on a capacity table of its own: a new
    # user's twelve cells took 9 minutes on a loaded machine with nothing on the screen
    with progress(f"checking {fleet_path}, a plan over periods: each period × demand scenario "
                  "cell on its own capacity table…", enabled=over_periods and not as_json):
        result = run_check(scenario, fleet_path, period, demand_scenario)
    if as_json:
        echo_json(to_json(result))
    else:
        fleet = result.fleet
        how = (" (replicas laid out by check: the inventory gives no layout)"
               if fleet.laid_out_by_fleetplan else "")
        click.echo(f"fleet {fleet.source}{how} against scenario {result.report.scenario}")
        for note in fleet.notes:  # a warning (default_purchase_notes) to stderr, as it says
            warned = note.startswith("warning: ")
            click.echo(note if warned else f"note: {note}", err=warned)
        if result.inventory_period is not None:
            click.echo(result.inventory_period.line("checked against the demand"))
        if result.period is not None and not result.cells:
            click.echo(f"a plan over periods: the failures below are checked on its first "
                       f"period's fleet (from {result.period[0]}, if demand follows "
                       f"`{result.period[1]}`); the plan verification covers every period of "
                       "every demand scenario")
        elif result.period is not None:
            click.echo(f"a plan over periods: the matrix below is the fleet and demand of "
                       f"period {result.period_index} (from {result.period[0]}) if demand "
                       f"follows `{result.period[1]}`; the plan verification covers the "
                       f"{plural(len(result.cells), 'cell')} checked")
        for line in [
            *render_matrix(result.report, result.scenario),
            *matrix_caption(result.scenario, result.report),
            "",
            *render_latency(result.report),
            "",
            *render_degradation(result.plans, result.report),
        ]:
            click.echo(line)
        if result.verification is not None:
            click.echo("")
            click.echo(
                "plan verification (solver/survivability/verify.py): "
                + ("OK" if not result.verification else f"{len(result.verification)} findings")
            )
            for finding in result.verification:
                click.echo(f"  - {finding}")
        if result.cells:
            click.echo("")
            for line in render_cells(result):
                click.echo(line)
        else:
            if fleet.laid_out_by_fleetplan and not result.report.ok:  # the verdict stays last
                click.echo(OWN_LAYOUT_LINE)
            click.echo(verdict_line(result.report))
    click.get_current_context().exit(max(result.exit_code, contract_code))
