"""The plan's survivability rows: capacity against demand, steady state and after each failure.

Plain arithmetic on the fleet a plan buys (:mod:`solver.survivability.failures`), never the
program: what ``plan.json`` says survives does not depend on how the program was written.
"""

from __future__ import annotations

from models.common import PurchaseKind, Survivability
from models.plan import Plan, SurvivabilityRow
from models.scenario import Scenario
from solver.survivability.failures import (
    Failure,
    FailureKind,
    capacity_holds,
    failover_capacity_rps,
    failure_domains,
    required_failures,
    slice_demand_rps,
    usable_capacity_rps,
)
from solver.survivability.fleet import fleet_from_plan


def survivability_rows(plan: Plan, scenario: Scenario) -> tuple[SurvivabilityRow, ...]:
    """Steady state and every failure each workload must survive, per slice (plain arithmetic).

    Node failures are reported per ``<zone>/<gpu>``: the worse of its reserved and on-demand
    pools. Batch volumes are compared with their even spread over the window.
    """
    fleet = fleet_from_plan(plan, scenario)
    domains = failure_domains(fleet, scenario)
    rows: list[SurvivabilityRow] = []
    for wl in sorted(scenario.workloads, key=lambda w: w.name):
        failures: list[tuple[str, list[Failure]]] = [("none", [])]
        if wl.survivability is not Survivability.none:
            by_label: dict[str, list[Failure]] = {}
            for f in required_failures(wl, domains):
                if f.kind is FailureKind.node and f.purchase is PurchaseKind.spot:
                    continue
                by_label.setdefault(f.plan_label, []).append(f)
            failures += sorted(by_label.items())
        for block in scenario.policy.time_blocks:
            need = slice_demand_rps(wl, block)
            for label, fs in failures:
                if label == "none":
                    cap = usable_capacity_rps(fleet.replicas, wl, scenario, block.name)
                else:
                    cap = min(failover_capacity_rps(fleet, wl, scenario, block.name, f)
                              for f in fs)
                rows.append(SurvivabilityRow(workload=wl.name, failure=label, slice=block.name,
                                             capacity_rps=cap, demand_rps=need,
                                             holds=capacity_holds(cap, need)))
    return tuple(rows)
