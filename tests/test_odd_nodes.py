"""Whole replicas on odd nodes, read by the verifier, ``check`` and the workbook.

Three TP2 replicas use 6 GPUs but need three 3-GPU nodes (one replica each; the odd GPU of each
runs a TP1 replica, the canonical step filling paid GPUs); the program's rows are tested in
tests/test_program.py and tests/test_bruteforce_nodes.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import Workbook

from models.capacity import CapacityTable
from models.plan import Plan, SolveStatus
from models.scenario import Scenario
from solver.outputs.workbook import write_purchase_plan
from solver.solve.strategy import plan_scenario
from solver.survivability.check import check_fleet
from solver.survivability.fleet import load_fleet
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import offer, row, scenario, table, workload, zone


def _three_gpu_nodes() -> tuple[Scenario, CapacityTable]:
    # u: 25 req/s at 10 per TP2 replica → 3 replicas; w: 5 req/s at 10 per TP1 replica → 1.
    # 3 nodes of 3 GPUs: tp2 + tp1 | tp2 | tp2 (9 GPUs bought, 7 needed); the canonical step
    # fills the two odd GPUs left with w's TP1: tp2 + tp1 on each node, 9 used.
    sc = scenario([workload("u", 25.0, utilization=1.0), workload("w", 5.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=3))])
    return sc, table(row("u", "H100", 2, 10.0), row("w", "H100", 1, 10.0))


def _with_nodes(plan: Plan, nodes: int, per_node: int) -> Plan:
    edited = plan.nodes[0].model_copy(update={"nodes": nodes, "gpus": nodes * per_node})
    return plan.model_copy(update={"nodes": (edited,)})


@pytest.fixture(scope="module")
def planned() -> tuple[Scenario, CapacityTable, Plan]:
    sc, tb = _three_gpu_nodes()
    plan = plan_scenario(sc, tb, gap=1e-9)
    assert plan.status is SolveStatus.optimal
    return sc, tb, plan


def test_the_plan_buys_a_node_per_tp2_replica(planned: tuple[Scenario, CapacityTable, Plan]
                                              ) -> None:
    sc, tb, plan = planned
    assert [(n.nodes, n.gpus) for n in plan.nodes] == [(3, 9)]
    assert plan.cost.per_month == pytest.approx(9 * 2.0 * 730)
    assert verify_plan(plan, sc, tb) == []


def test_verifier_places_whole_replicas(planned: tuple[Scenario, CapacityTable, Plan]) -> None:
    # Two nodes hold 6 GPUs, but only two of the TP2 replicas and two of the TP1 ones.
    sc, tb, plan = planned
    out = verify_plan(_with_nodes(plan, 2, 3), sc, tb)
    assert ("nodes: 3 × tp1 + 3 × tp2 H100 reserved replicas in a during day do not fit 2 nodes "
            "of 3 GPUs (2 of them without a place)") in out, out


def test_check_drops_the_replica_no_node_holds(
    planned: tuple[Scenario, CapacityTable, Plan], tmp_path: Path
) -> None:
    sc, tb, plan = planned
    path = tmp_path / "plan.json"
    path.write_text(_with_nodes(plan, 2, 3).model_dump_json(), "utf-8")
    fleet = load_fleet(path, sc, tb)
    # TP2 first, each on the fullest node it fits: tp2 | tp2 on two nodes; the third TP2
    # replica has no place; two of the three TP1 ones take the odd GPUs, the third has none.
    assert fleet.notes == ("u H100 tp2 reserved in a: 1 of 3 replicas dropped, no node holds them",
                           "w H100 tp1 reserved in a: 1 of 3 replicas dropped, no node holds them")
    report = check_fleet(fleet, sc, tb)
    assert not report.ok
    assert {(r.workload, r.failure) for r in report.broken} == {("u", "none")}


def test_workbook_shows_the_replicas_each_node_row_holds(
    planned: tuple[Scenario, CapacityTable, Plan]
) -> None:
    sc, _, plan = planned
    ws = Workbook().active
    assert ws is not None
    write_purchase_plan(ws, plan, sc, "USD")
    titles = [c.value for c in ws[1]]
    held, idle = titles.index("Replicas held [TP × replicas]"), titles.index(
        "GPUs no replica uses")
    assert (ws.cell(2, held + 1).value, ws.cell(2, idle + 1).value) == ("tp1 × 3 + tp2 × 3", 0)
