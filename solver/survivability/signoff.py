"""Sign a plan off before it is written: the independent verifier on the fleet it buys.

The program, its starts and the strategy choosing between fleets all check rows of the program;
this is the check that does not depend on how the program was written
(:func:`solver.survivability.verify.verify_plan`, the same as ``fleetplan check`` runs). A plan
that passes is marked ``verified``; one that does not is a bug, never a plan to write.
"""

from __future__ import annotations

from models.capacity import CapacityTable
from models.plan import Plan
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
