"""The plan's survivability rows: capacity against demand, steady state and after each failure.

Plain arithmetic on the fleet a plan buys (:mod:`solver.survivability.failures`), never the
program: what ``plan.json`` says survives does not depend on how the program was written.
"""

from __future__ import annotations

from models.common import PurchaseKind, Survivability
from models.inventory import Fleet
from models.plan import Plan, SurvivabilityRow
from models.scenario import Scenario
from models.workload import Workload
from solver.survivability.failures import (
    Failure,
    FailureKind,
    capacity_holds,
    failover_capacity_rps,
    failure_domains,
    required_failures,
    slice_demand_rps,
    usable_capacity_rps,
    volume_demand_rps,
)
from solver.survivability.fleet import fleet_from_plan


def survivability_rows(plan: Plan, scenario: Scenario) -> tuple[SurvivabilityRow, ...]:
    """Steady state and every failure each workload must survive, per slice (plain arithmetic).

    Node failures are reported per ``<zone>/<gpu>``: the worse of its reserved and on-demand
    pools. A batch volume is compared, in each slice, with the work the fleet does there
    (:func:`~solver.survivability.failures.volume_demand_rps`): the volume may run anywhere in
    its window, so a slice it was moved out of does not fail.
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
        blocks = scenario.policy.time_blocks
        figures: list[tuple[str, dict[str, float], dict[str, float]]] = []
        for label, fs in failures:
            cap = {b.name: row_capacity_rps(fleet, wl, scenario, b.name, fs) for b in blocks}
            need = (volume_demand_rps(wl, blocks, cap) if wl.batch is not None
                    else {b.name: slice_demand_rps(wl, b) for b in blocks})
            figures.append((label, cap, need))
        for block in blocks:
            for label, cap, need in figures:
                rows.append(SurvivabilityRow(
                    workload=wl.name, failure=label, slice=block.name,
                    capacity_rps=cap[block.name], demand_rps=need[block.name],
                    holds=capacity_holds(cap[block.name], need[block.name])))
    return tuple(rows)


def row_capacity_rps(
    fleet: Fleet, wl: Workload, scenario: Scenario, slice_name: str, failures: list[Failure]
) -> float:
    """Capacity of a row: usable in steady state (no failures), else the least left after any
    of ``failures`` (a node label's reserved and on-demand pools) [1/s]."""
    if not failures:
        return usable_capacity_rps(fleet.replicas, wl, scenario, slice_name)
    return min(failover_capacity_rps(fleet, wl, scenario, slice_name, f) for f in failures)
