"""Sign a plan off before it is written: the independent verifier on the fleet it buys.

The program, its starts and the strategy choosing between fleets all check rows of the program;
this is the check that does not depend on how the program was written
(:func:`solver.survivability.verify.verify_plan`, the same as ``fleetplan check`` runs). A plan
that passes is marked ``verified``; one that does not is a bug, never a plan to write.
"""

from __future__ import annotations

from collections.abc import Iterable

from models.capacity import CapacityTable
from models.plan import PeriodPlan, Plan
from models.scenario import Scenario
from solver.survivability.verify import verify_plan


class UnverifiedPlan(Exception):
    """The fleet a plan is about to write breaks rows the verifier recomputes."""

    def __init__(self, scenario: str, broken: list[str]) -> None:
        super().__init__(f"plan {scenario}: the fleet breaks {len(broken)} verified rows")
        self.broken = broken


def signed(plan: Plan, scenario: Scenario, table: CapacityTable) -> Plan:
    """``plan`` marked ``verified`` where :func:`verify_plan` finds nothing broken.

    Raises
    ------
    UnverifiedPlan
        With the broken rows, when the verifier finds any.
    """
    broken = verify_plan(plan, scenario, table)
    if broken:
        raise UnverifiedPlan(plan.scenario, broken)
    return plan.model_copy(update={"verified": True})


def period_fleet(plan: Plan, period: PeriodPlan) -> Plan:
    """One period of a plan over periods as a plan of its own: the fleet, rows and cost it
    claims for that period and demand scenario."""
    return plan.model_copy(update={
        "allocations": period.allocations, "nodes": period.nodes,
        "survivability": period.survivability,
        "cost": plan.cost.model_copy(update={"per_month": period.cost_per_month})})


def signed_over_periods(
    plan: Plan, checks: Iterable[tuple[str, Plan, Scenario, CapacityTable]]
) -> Plan:
    """``plan`` marked ``verified`` where every ``(label, fleet, scenario, table)`` check passes:
    each period's fleet of each demand scenario against that period's single-period scenario,
    its inventory held then (:func:`verify_plan` with ``over_periods``). A plan with no period
    to check (no fleet) is returned as it is, not marked.

    Raises
    ------
    UnverifiedPlan
        With every broken row, each prefixed by its check's label.
    """
    broken: list[str] = []
    checked = 0
    for label, fleet, scenario, table in checks:
        broken += [f"{label}: {row}"
                   for row in verify_plan(fleet, scenario, table, over_periods=True)]
        checked += 1
    if broken:
        raise UnverifiedPlan(plan.scenario, broken)
    return plan.model_copy(update={"verified": True}) if checked else plan
