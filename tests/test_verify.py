"""The independent verifier: accepts the hand-made plan, catches each kind of violation."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.capacity import CapacityTable
from models.common import PurchaseKind
from models.loader import load_scenario
from models.plan import Plan, SolveStatus
from models.scenario import Scenario
from solver.verify import paid_hours_per_month, verify_plan
from tests import fleet_cases as fc


def _replace_alloc(plan: Plan, index: int, **update: object) -> Plan:
    allocs = list(plan.allocations)
    allocs[index] = allocs[index].model_copy(update=update)
    return plan.model_copy(update={"allocations": tuple(allocs)})


def _kinds(violations: list[str]) -> set[str]:
    return {v.split(":")[0].split(" ")[0] for v in violations}


def test_valid_hand_made_plan_passes() -> None:
    assert verify_plan(fc.plan(), fc.scenario(), fc.table()) == []


def test_removing_a_replica_breaks_zone_loss() -> None:
    # chat z1: 6 → 5 replicas; after losing z2, 5 × 2.0 × 1.0 = 10 rps < 12 demand by day.
    plan = _replace_alloc(fc.plan(), 0, replicas=5, gpus=10)
    out = verify_plan(plan, fc.scenario(), fc.table())
    assert any(v.startswith("survival: chat after zone:z2 in day has 10 rps") for v in out), out
    # the steady state still holds: 11 × 2.0 × 0.7 = 15.4 ≥ 12, but the plan's row says 16.8.
    assert not any(v.startswith("demand") for v in out)
    assert any("capacity_rps 16.8, recomputed 15.4" in v for v in out), out


def test_interactive_on_spot_is_caught() -> None:
    plan = _replace_alloc(fc.plan(), 1, purchase=PurchaseKind.spot)
    out = verify_plan(plan, fc.scenario(), fc.table())
    assert "interactive workload chat has 6 spot replicas in z2" in out


def test_stock_exceeded_is_caught() -> None:
    # Each zone's plan buys 16 reserved H100; stock 8 per zone.
    out = verify_plan(fc.plan(), fc.scenario(reserved_stock=8), fc.table())
    assert "stock: 16 H100 reserved GPUs in z1 during day, stock 8" in out
    assert "stock" in _kinds(out)


def test_changed_cost_is_caught() -> None:
    plan = fc.plan()
    plan = plan.model_copy(update={"cost": plan.cost.model_copy(update={"per_month": 51101.0})})
    out = verify_plan(plan, fc.scenario(), fc.table())
    assert out == ["cost: plan says 51101.000000 per month, nodes add up to 51100.000000"]


def test_cost_within_relative_tolerance_passes() -> None:
    plan = fc.plan()
    cost = plan.cost.model_copy(update={"per_month": 51100.0 * (1 + 1e-9)})
    assert verify_plan(plan.model_copy(update={"cost": cost}), fc.scenario(), fc.table()) == []


def test_budget_is_respected() -> None:
    out = verify_plan(fc.plan(), fc.scenario(budget=50000.0), fc.table())
    assert out == ["budget: 51100.00 per month exceeds 50000.00"]


def test_batch_volume_short_is_caught() -> None:
    # 2 spot replicas: 2 × 1.0 × 0.9 × (1 − 0.1) × 6 h × 3600 s = 34,992 < 36,000 requests.
    plan = _replace_alloc(fc.plan(), 2, replicas=2, gpus=2)
    out = verify_plan(plan, fc.scenario(), fc.table())
    assert out == ["demand: summarize completes 34992 requests in its window, needs 36000"]


def test_replica_capacity_must_match_table() -> None:
    plan = _replace_alloc(fc.plan(), 0, replica_capacity_rps=2.5)
    out = verify_plan(plan, fc.scenario(), fc.table())
    assert any("replica_capacity_rps 2.5 != table slo_rps 2" in v for v in out), out


def test_replicas_must_fit_nodes() -> None:
    # 9 tp2 replicas need 18 GPUs; 2 nodes hold 16.
    plan = _replace_alloc(fc.plan(), 0, replicas=9, gpus=18)
    out = verify_plan(plan, fc.scenario(), fc.table())
    assert "nodes: replicas use 18 H100 reserved GPUs in z1 during day, nodes hold 16" in out


def test_wrong_survivability_row_is_caught() -> None:
    plan = fc.plan()
    rows = list(plan.survivability)
    rows[1] = rows[1].model_copy(update={"holds": False})
    out = verify_plan(
        plan.model_copy(update={"survivability": tuple(rows)}), fc.scenario(), fc.table()
    )
    assert len(out) == 1 and "says holds=False" in out[0]


def test_node_loss_required_for_n_plus_1() -> None:
    # Only z1 keeps chat: 6 replicas; the worst node holds 4 → (6 − 4) × 2.0 = 4 rps < 12.
    plan = fc.plan()
    allocs = (plan.allocations[0].model_copy(update={"replicas": 6}), plan.allocations[2])
    plan = plan.model_copy(update={"allocations": allocs, "survivability": ()})
    out = verify_plan(plan, fc.scenario(survivability="n_plus_1"), fc.table())
    # steady state: 6 × 2.0 × 0.7 = 8.4 < 12 too
    assert "demand: chat in day has 8.4 rps usable, needs 12" in out
    assert "survival: chat after node:z1/H100/reserved in day has 4 rps, needs 12" in out


def test_infeasible_plan_without_allocations_passes() -> None:
    plan = fc.plan().model_copy(
        update={
            "status": SolveStatus.infeasible,
            "allocations": (),
            "nodes": (),
            "survivability": (),
        }
    )
    assert verify_plan(plan, fc.scenario(), fc.table()) == []


def test_paid_hours() -> None:
    sc = fc.scenario()
    assert paid_hours_per_month(PurchaseKind.reserved, None, sc) == 730.0
    # night is 12 of 24 hours: 12 × 730 / 24 = 365 h
    assert paid_hours_per_month(PurchaseKind.spot, "night", sc) == 365.0


# --- plans the program produces ----------------------------------------------------------------

SCENARIOS = Path(__file__).resolve().parents[1] / "inputs" / "scenarios"


@pytest.fixture(scope="module", params=["tiny", "twenty_rps", "doc_qa"])
def real(request: pytest.FixtureRequest) -> tuple[Scenario, CapacityTable, Plan]:
    from solver.capacity import build_capacity_table
    from solver.planner import plan_scenario

    sc = load_scenario(SCENARIOS / f"{request.param}.yaml")
    table = build_capacity_table(sc)
    return sc, table, plan_scenario(sc, table, time_limit_s=20.0)


def test_real_plan_passes(real: tuple[Scenario, CapacityTable, Plan]) -> None:
    sc, table, plan = real
    assert plan.allocations
    assert verify_plan(plan, sc, table) == []


def test_real_plan_mutations_are_caught(real: tuple[Scenario, CapacityTable, Plan]) -> None:
    sc, table, plan = real
    biggest = max(range(len(plan.allocations)), key=lambda i: plan.allocations[i].replicas)
    a = plan.allocations[biggest]
    # remove a replica: the plan's own rows (or its demand / survival) no longer add up
    fewer = _replace_alloc(plan, biggest, replicas=a.replicas - 1, gpus=a.gpus - a.tp)
    assert verify_plan(fewer, sc, table) != []
    # put an interactive workload on spot
    spot = _replace_alloc(plan, biggest, purchase=PurchaseKind.spot, slice=None)
    assert f"interactive workload {a.workload} has {a.replicas} spot replicas in {a.zone}" in (
        verify_plan(spot, sc, table)
    )
    # buy more GPUs than the zone's stock
    n = plan.nodes[0]
    offer = next(o for o in sc.zone(n.zone).offers if o.gpu == n.gpu)
    terms = offer.terms(n.purchase)
    assert terms is not None
    per_node = n.gpus // n.nodes
    extra = terms.stock_gpus // per_node + 1 - n.nodes  # nodes to add to pass the stock
    more = n.model_copy(update={"nodes": n.nodes + extra, "gpus": (n.nodes + extra) * per_node})
    out = verify_plan(plan.model_copy(update={"nodes": (more, *plan.nodes[1:])}), sc, table)
    assert any(v.startswith(f"stock: {(n.nodes + extra) * per_node} {n.gpu}") for v in out), out
    # change the cost by 1 %
    cost = plan.cost.model_copy(update={"per_month": plan.cost.per_month * 1.01})
    out = verify_plan(plan.model_copy(update={"cost": cost}), sc, table)
    assert len(out) == 1 and out[0].startswith("cost: plan says")
