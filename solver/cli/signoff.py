"""The plan command's sign-off: a fleet the verifier rejects is a bug, never a plan written.

Exit 3 with the broken rows on stderr (:mod:`solver.survivability.signoff`); nothing is written.
"""

from __future__ import annotations

import click

from models.capacity import CapacityTable
from models.plan import Plan
from models.scenario import Scenario
from solver.survivability.signoff import UnverifiedPlan, signed

#: Exit code of a plan whose fleet the verifier rejects (1: no fleet, 2: bad input).
UNVERIFIED_EXIT = 3


def sign_off(plan: Plan, scenario: Scenario, table: CapacityTable) -> Plan:
    """``plan`` marked ``verified``, or exit :data:`UNVERIFIED_EXIT` naming every broken row."""
    try:
        return signed(plan, scenario, table)
    except UnverifiedPlan as exc:
        click.echo(f"plan {plan.scenario}: the fleet found breaks {len(exc.broken)} rows the "
                   "verifier recomputes; this is a bug in fleetplan, and no plan was written:",
                   err=True)
        for row in exc.broken:
            click.echo(f"  - {row}", err=True)
        raise SystemExit(UNVERIFIED_EXIT) from None
