"""The harness's multi-period size: its scenario, its table, and a plan beside the cold solve
of the same joint program."""

from __future__ import annotations

import os

import pytest

from benchmarks.bench_plan import COLD
from benchmarks.bench_quarterly import (
    PLAN,
    QuarterlyResult,
    markdown,
    quarterly,
    run_child,
    run_cold_child,
)
from benchmarks.generate import generate_scenario
from models.common import PurchaseKind


def test_the_case_is_four_quarters_of_three_demand_scenarios() -> None:
    sc = quarterly(generate_scenario("small", 0))
    assert sc.horizon is not None and sc.horizon.count == 4 and sc.horizon.period_months == 3
    assert [(d.name, d.probability) for d in sc.demand_scenarios] == [
        ("low", 0.3), ("base", 0.4), ("high", 0.3)]
    assert all(w.growth == (1.0, 1.1, 1.2, 1.3) for w in sc.workloads)
    for offer in (o for z in sc.zones for o in z.offers if o.terms(PurchaseKind.reserved)):
        terms = [(q.term_months, q.upfront.value) for q in offer.reserved_quotes]
        assert terms == [(12, "none"), (36, "all")]
        twelve, thirty_six = offer.reserved_quotes
        assert thirty_six.price_per_gpu_hour == 0.75 * twelve.price_per_gpu_hour


def test_the_table_sets_the_plan_beside_the_cold_solve() -> None:
    rows = markdown([QuarterlyResult("medium", 25, PLAN, expected_cost=90.0, status="optimal"),
                     QuarterlyResult("medium", 25, COLD, expected_cost=120.0)]).splitlines()[2:]
    assert rows[0].startswith("| medium ×25, 4 quarters × 3 scenarios | shared |")
    assert rows[0].endswith("| 0.750 |") and rows[1].endswith("| — |")


@pytest.mark.skipif(os.environ.get("FLEETPLAN_SLOW") != "1",
                    reason="solves the joint program twice (~40 s); set FLEETPLAN_SLOW=1")
def test_the_plan_and_the_cold_solve_share_the_program() -> None:
    """small ×1 with a short limit: both runs see the same joint program; the plan's bound,
    where the limit left time for every block's (its LP relaxations no longer run past the
    limit: at 5 and 15 s on the train's machine there was none), is at most its cost."""
    plan = run_child("small", 1, 0, 5.0, 0.01)
    cold = run_cold_child("small", 1, 0, 5.0, 0.01)
    assert plan.error == cold.error == "" and plan.blocks == cold.blocks == 12
    assert (plan.variables, plan.constraints) == (cold.variables, cold.constraints)
    assert plan.expected_cost is not None
    assert plan.bound is None or plan.bound <= plan.expected_cost * (1 + 1e-9)
