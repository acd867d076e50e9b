"""``--period`` and ``--demand-scenario`` of ``check`` and ``simulate``: which cells (period ×
demand scenario) of a plan over periods to read.

A plan over periods claims its survivability in every period of every demand scenario; its
top-level fleet is only the first period's of one scenario (``horizon.fleet_shown``). A cell's
fleet is the period's own (``periods[]``: inventory held then, orders usable then, on-demand
and spot), against its single-period scenario (:func:`solver.cli.signoff.period_checks`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import click

from models.capacity import CapacityTable
from models.errors import InputError, Problem, did_you_mean
from models.horizon import DemandScenario
from models.inventory import Fleet
from models.plan import PeriodPlan, Plan
from models.scenario import Scenario
from solver.cli.signoff import period_checks
from solver.survivability.fleet import fit_to_nodes, fleet_from_plan

period_option = click.option(
    "--period", "period", default=None, metavar="N|YYYY-MM-DD",
    help="A plan over periods: the period to read, as plan.json names it (`period`, 0 the "
         "first, or its `start` date).")
demand_scenario_option = click.option(
    "--demand-scenario", "demand_scenario", default=None, metavar="NAME",
    help="A plan over periods: the demand scenario (`demand_scenarios` of the scenario) whose "
         "fleet and demand to read.")


@dataclass(frozen=True)
class Cell:
    """One period of one demand scenario: its fleet as a plan, its scenario and table."""

    period: PeriodPlan
    label: str
    fleet: Plan
    scenario: Scenario
    table: CapacityTable

    def node_fleet(self, source: str) -> Fleet:
        """The cell's replicas on its nodes, as ``check`` and ``simulate`` read a fleet (less
        any replica no node holds)."""
        return fit_to_nodes(fleet_from_plan(self.fleet, self.scenario, source=source),
                            self.scenario)


def _matches(p: PeriodPlan, period: str) -> bool:
    text = period.strip()
    if text.isdigit():
        return p.period == int(text)
    return p.start.isoformat() == text


def selected_periods(plan: Plan | None, period: str | None, demand_scenario: str | None,
                     file: str) -> tuple[PeriodPlan, ...]:
    """The periods of ``plan`` that ``--period`` and ``--demand-scenario`` name (every one
    where an option is not given); an unknown name, or either option on a fleet without
    periods (an inventory, ``plan`` ``None``), is a located :class:`InputError`."""
    if plan is None or plan.horizon is None:
        given = [o for o, v in (("--period", period), ("--demand-scenario", demand_scenario))
                 if v is not None]
        if given:
            what = "an inventory" if plan is None else "a plan of one peak day"
            raise InputError([Problem(" and ".join(given), "", f"{file} is {what}, with no "
                                      "periods or demand scenarios",
                                      "leave the option out, or give a plan.json planned over "
                                      "periods (a scenario with `horizon`)")])
        return ()
    periods = plan.periods
    if demand_scenario is not None:
        names = [p.scenario for p in periods]
        if demand_scenario not in names:
            raise InputError([Problem("--demand-scenario", "", f"{file} has no demand scenario "
                                      f"`{demand_scenario}`", did_you_mean(demand_scenario,
                                                                           names))])
        periods = tuple(p for p in periods if p.scenario == demand_scenario)
    if period is not None:
        mine = tuple(p for p in periods if _matches(p, period))
        if not mine:
            known = sorted({(p.period, p.start) for p in periods})
            raise InputError([Problem("--period", "", f"{file} has no period `{period}`",
                                      "give one of " + ", ".join(
                                          f"{n} (or {start.isoformat()})" for n, start in known))])
        periods = mine
    return periods


@dataclass(frozen=True)
class InventoryPeriod:
    """The period and demand scenario of a scenario over periods that an inventory is checked
    against (an inventory has no periods of its own)."""

    period: int
    start: dt.date
    demand_scenario: str
    scenario: Scenario
    """The period's single-period scenario: workloads grown, events on, migrations done."""

    def as_json(self) -> dict[str, Any]:
        """``demand_of`` in ``check --json`` and ``simulate --json``."""
        return {"period": self.period, "start": self.start.isoformat(),
                "demand_scenario": self.demand_scenario}

    def line(self, what: str) -> str:
        """The terminal's line saying which period's ``what`` an inventory was read against."""
        return (f"an inventory against a scenario over periods: {what} of period {self.period} "
                f"(from {self.start}) if demand follows `{self.demand_scenario}` (--period, "
                f"--demand-scenario: another)")


def inventory_period(scenario: Scenario, period: str | None, demand_scenario: str | None,
                     file: str) -> InventoryPeriod | None:
    """An inventory checked against a scenario with a ``horizon``: the period ``--period``
    names (default the first) under the demand scenario ``--demand-scenario`` names (default
    `base`: the one so named, else each workload's own growth), as the planner sizes it
    (:meth:`Scenario.in_period`). Before, the inventory was checked against each workload's
    ``peak_rps`` as written, its growth and events ignored, and nothing said which demand.
    ``None`` without a horizon (either option then is a located :class:`InputError`)."""
    h = scenario.horizon
    if h is None:
        selected_periods(None, period, demand_scenario, file)
        return None
    names = [d.name for d in scenario.demand_scenarios]
    name = demand_scenario if demand_scenario is not None else "base"
    if demand_scenario is not None and name not in names:
        raise InputError([Problem("--demand-scenario", "", f"the scenario has no demand "
                                  f"scenario `{name}`", did_you_mean(name, names)
                                  if names else "leave the option out: the scenario has no "
                                  "`demand_scenarios`")])
    demand = next((d for d in scenario.demand_scenarios if d.name == name),
                  DemandScenario(name=name, probability=1.0))
    k = 0
    if period is not None:
        text = period.strip()
        found = [q for q in range(h.count)
                 if (text.isdigit() and q == int(text)) or h.period_start(q).isoformat() == text]
        if not found:
            raise InputError([Problem("--period", "", f"the scenario's horizon has no period "
                                      f"`{period}`", "give one of " + ", ".join(
                                          f"{q} (or {h.period_start(q).isoformat()})"
                                          for q in range(h.count)))])
        k = found[0]
    start = h.period_start(k)
    return InventoryPeriod(k, start, name, scenario.in_period(k, demand,
                                                           scenario.rows_aged_to(start)))


def shown_period(plan: Plan) -> PeriodPlan | None:
    """The period whose fleet is the plan's top-level one: the first of ``fleet_shown``."""
    if plan.horizon is None:
        return None
    return next((p for p in plan.periods if p.scenario == plan.horizon.fleet_shown),
                plan.periods[0] if plan.periods else None)


def cells(plan: Plan, scenario: Scenario, periods: tuple[PeriodPlan, ...]) -> Iterator[Cell]:
    """A cell per period given, in plan order (capacity tables built once per table key)."""
    only = plan.model_copy(update={"periods": periods})
    for p, (label, fleet, one, table) in zip(periods, period_checks(only, scenario),
                                             strict=True):
        yield Cell(p, label, fleet, one, table)


def one_cell(plan: Plan | None, scenario: Scenario, period: str | None,
             demand_scenario: str | None, file: str) -> Cell | None:
    """The one cell a replay reads: the period and demand scenario named, the first period and
    the scenario the plan shows where one is not; ``None`` for a plan of one peak day or an
    inventory (``plan`` ``None``)."""
    first = None if plan is None else shown_period(plan)
    if plan is None or first is None:
        selected_periods(plan, period, demand_scenario, file)  # options on a one-day plan
        return None
    chosen = selected_periods(plan, period if period is not None else str(first.period),
                              demand_scenario if demand_scenario is not None
                              else first.scenario, file)
    return next(cells(plan, scenario, chosen[:1]))
