"""The plan command's sign-off: a fleet the verifier rejects is a bug, never a plan written.

Exit 3 with the broken rows on stderr (:mod:`solver.survivability.signoff`); nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NoReturn

import click

from models.capacity import CapacityTable
from models.horizon import DemandScenario
from models.plan import Plan
from models.scenario import Scenario
from solver.capacity.table import cached_tables
from solver.program.periods import BASE, Period, block_scenario
from solver.survivability.signoff import (
    UnverifiedPlan,
    period_fleet,
    signed,
    signed_over_periods,
)

#: Exit code of a plan whose fleet the verifier rejects (1: no fleet, 2: bad input).
UNVERIFIED_EXIT = 3


def sign_off(plan: Plan, scenario: Scenario, table: CapacityTable) -> Plan:
    """``plan`` marked ``verified``, or exit :data:`UNVERIFIED_EXIT` naming every broken row."""
    try:
        return signed(plan, scenario, table)
    except UnverifiedPlan as exc:
        _refuse(plan, exc)


def sign_off_periods(plan: Plan, scenario: Scenario,
                     table_for: Callable[[Scenario], CapacityTable] | None = None) -> Plan:
    """A plan over periods marked ``verified``: every period's fleet of every demand scenario
    checked against that period's demand and the inventory held through it; else exit
    :data:`UNVERIFIED_EXIT` naming every broken row. ``table_for``: as :func:`period_checks`."""
    try:
        return signed_over_periods(plan, period_checks(plan, scenario, table_for))
    except UnverifiedPlan as exc:
        _refuse(plan, exc)


def period_checks(plan: Plan, scenario: Scenario,
                  table_for: Callable[[Scenario], CapacityTable] | None = None
                  ) -> Iterator[tuple[str, Plan, Scenario, CapacityTable]]:
    """Per period and demand scenario: its fleet, its single-period scenario (demand grown,
    events, migrations; the inventory lines held through the period) and capacity table."""
    if plan.horizon is None:
        return
    # the planner passes the tables it planned with (the same: a table is a pure function of
    # its table_key), sparing their building again
    table_for = table_for or cached_tables(scenario.gpus_sold_or_held())
    for p in plan.periods:
        demand = next((s for s in scenario.demand_scenarios if s.name == p.scenario),
                      DemandScenario(name=BASE, probability=1.0))
        one = block_scenario(scenario, demand,
                             Period(p.period, p.start, p.end, plan.horizon.period_months),
                             dated=scenario.horizon is not None)
        one = one.model_copy(update={"inventory": tuple(
            line for line in scenario.inventory if line.held_through(p.start, p.end))})
        yield (f"{p.scenario} period {p.period} ({p.start})", period_fleet(plan, p), one,
               table_for(one))


def _refuse(plan: Plan, exc: UnverifiedPlan) -> NoReturn:
        click.echo(f"plan {plan.scenario}: the fleet found breaks {len(exc.broken)} rows the "
                   "verifier recomputes; this is a bug in fleetplan, and no plan was written:",
                   err=True)
        for row in exc.broken:
            click.echo(f"  - {row}", err=True)
        raise SystemExit(UNVERIFIED_EXIT) from None
