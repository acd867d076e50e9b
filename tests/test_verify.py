"""The independent verifier: accepts the hand-made plan, catches each kind of violation."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.capacity import CapacityTable
from models.common import CapacitySource, PurchaseKind, Survivability
from models.loader import load_scenario
from models.plan import Plan, SolveStatus
from models.scenario import Scenario
from solver.survivability.verify import verify_plan
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
    assert ("nodes: 9 × tp2 H100 reserved replicas in z1 during day do not fit 2 nodes of 8 "
            "GPUs (1 of them without a place)") in out


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


@pytest.mark.parametrize("status", [SolveStatus.infeasible, SolveStatus.time_limit,
                                    SolveStatus.interrupted])
def test_a_plan_that_claims_no_fleet_passes(status: SolveStatus) -> None:
    # infeasible; or no fleet before the time limit (a program whose build the clock stopped)
    # or before the user stopped the solve
    plan = fc.plan().model_copy(
        update={"status": status, "allocations": (), "nodes": (), "survivability": ()})
    assert verify_plan(plan, fc.scenario(), fc.table()) == []


def test_an_optimal_plan_without_its_fleet_is_caught() -> None:
    plan = fc.plan().model_copy(update={"allocations": (), "nodes": (), "survivability": ()})
    assert "demand" in _kinds(verify_plan(plan, fc.scenario(), fc.table()))


def test_failure_utilization_scales_what_survives() -> None:
    # Failure utilization 0.9: losing a zone leaves 6 tp2 chat replicas × 2.0 × 0.9 = 10.8 rps
    # < 12 by day (at 1.0 they carry exactly 12). Losing a z1 node leaves (12 − 4) × 2.0 × 0.9
    # = 14.4 rps (holds, but the plan's row says 16). At night 10.8 ≥ 6 holds; the row says 12.
    sc = fc.scenario()
    sc = sc.model_copy(update={"policy": sc.policy.model_copy(
        update={"failure_utilization": 0.9})})
    assert verify_plan(fc.plan(), sc, fc.table()) == [
        "survival: chat after zone:z1 in day has 10.8 rps, needs 12",
        "survival: chat after zone:z2 in day has 10.8 rps, needs 12",
        "survivability row 1 (chat, zone:z1, day): capacity_rps 12, recomputed 10.8",
        "survivability row 1 (chat, zone:z1, day): says holds=True, recomputed 10.8 rps vs 12 "
        "demand",
        "survivability row 2 (chat, node:z1/H100, day): capacity_rps 16, recomputed 14.4",
        "survivability row 3 (chat, zone:z2, night): capacity_rps 12, recomputed 10.8",
    ]


def test_spot_never_survives_a_failure() -> None:
    # summarize asks for N+1 but runs only on 3 spot replicas: after losing any node (a reserved
    # one, which holds none of it, or its spot node) no non-spot capacity is left: 0 requests of
    # 36,000, whichever node is lost.
    sc = fc.scenario()
    summarize = sc.workload("summarize").model_copy(
        update={"survivability": Survivability.n_plus_1})
    sc = sc.model_copy(update={"workloads": (sc.workloads[0], summarize)})
    assert verify_plan(fc.plan(), sc, fc.table()) == [
        f"survival: summarize after node:{pool} completes 0 requests, needs 36000"
        for pool in ("z1/H100/reserved", "z1/H100/spot", "z2/H100/reserved")
    ]


ALLOC0 = "allocation 0 (chat H100 tp2 z1 reserved)"


@pytest.mark.parametrize(("update", "message"), [
    ({"capacity_source": CapacitySource.measured},
     f"{ALLOC0}: capacity_source measured != table analytic"),
    ({"gpus": 13}, f"{ALLOC0}: gpus 13 != replicas 6 × tp 2"),
    ({"slice": "day"}, f"{ALLOC0}: reserved capacity must run in every slice (slice null)"),
])
def test_allocation_reference_errors_are_caught(update: dict[str, object], message: str) -> None:
    plan = _replace_alloc(fc.plan(), 0, **update)
    assert verify_plan(plan, fc.scenario(), fc.table()) == [message]


def test_gpu_outside_allowed_gpus_is_caught() -> None:
    sc = fc.scenario()
    chat = sc.workload("chat").model_copy(update={"allowed_gpus": ("L4",)})
    sc = sc.model_copy(update={"workloads": (chat, sc.workloads[1])})
    assert verify_plan(fc.plan(), sc, fc.table()) == [
        f"allocation {i} (chat H100 tp2 {z} reserved): H100 is not in the workload's allowed_gpus"
        for i, z in ((0, "z1"), (1, "z2"))
    ]


@pytest.mark.parametrize(("update", "message"), [
    # 2 nodes × 8 GPUs × 2.0 $/GPU-h × 730 h = 23,360
    ({"cost_per_month": 23361.0},
     "cost: node row 0 (z1 H100 reserved None) costs 23361.000000, recomputed 23360.000000"),
    ({"price_per_gpu_hour": 2.5}, "cost: node row 0 price 2.5 != offer 2.0"),
    ({"gpus": 17}, "node row 0 (z1 H100 reserved): gpus 17 != nodes 2 × 8 GPUs per node"),
])
def test_node_row_errors_are_caught(update: dict[str, object], message: str) -> None:
    plan = fc.plan()
    nodes = (plan.nodes[0].model_copy(update=update), *plan.nodes[1:])
    out = verify_plan(plan.model_copy(update={"nodes": nodes}), fc.scenario(), fc.table())
    assert out == [message]


def test_slices_out_of_order_are_caught() -> None:
    plan = fc.plan()
    plan = plan.model_copy(update={"slices": tuple(reversed(plan.slices))})
    assert verify_plan(plan, fc.scenario(), fc.table()) == [
        "plan slices ['day', 'night'] differ from the scenario's time blocks ['night', 'day']"]


def test_wrong_survivability_demand_is_caught() -> None:
    # chat's busiest day hour asks 12 rps; a row saying 6 is wrong even though it still holds.
    plan = fc.plan()
    rows = (plan.survivability[0].model_copy(update={"demand_rps": 6.0}),
            *plan.survivability[1:])
    out = verify_plan(plan.model_copy(update={"survivability": rows}), fc.scenario(), fc.table())
    assert out == ["survivability row 0 (chat, none, day): demand_rps 6, recomputed 12"]


def test_paid_hours() -> None:
    sc = fc.scenario()
    assert sc.policy.paid_hours_per_month(PurchaseKind.reserved, None) == 730.0
    assert sc.policy.paid_hours_per_month(PurchaseKind.reserved, "night") == 730.0
    # night is 12 of 24 hours: 12 × 730 / 24 = 365 h
    assert sc.policy.paid_hours_per_month(PurchaseKind.spot, "night") == 365.0


# --- plans the program produces ----------------------------------------------------------------

SCENARIOS = Path(__file__).resolve().parents[1] / "inputs" / "scenarios"


@pytest.fixture(scope="module", params=["tiny", "twenty_rps", "doc_qa"])
def real(request: pytest.FixtureRequest) -> tuple[Scenario, CapacityTable, Plan]:
    from solver.capacity.table import build_capacity_table
    from solver.solve.strategy import plan_scenario

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
