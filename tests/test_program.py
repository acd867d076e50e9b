"""The fleet program: hand-computed optima, and each constraint family shown to matter.

Prices are per GPU-hour and the month has 730 hours unless a test says otherwise; a slice of h
hours is paid h × 730 / 24 hours a month (12 h → 365 h).
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import pulp
import pytest

from models.capacity import CapacityTable
from models.common import PurchaseKind
from models.plan import SolveStatus
from models.scenario import Scenario
from solver.capacity.node_fit import slot_rows
from solver.program import families
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.families import FAMILIES, add_no_spot_for_interactive
from solver.program.variables import Program
from solver.solve.backends import solve
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import (
    blocks,
    offer,
    row,
    scenario,
    shared_two_node_fleet,
    table,
    workload,
    zone,
)

DAY_NIGHT = blocks(("night", [*range(0, 6), *range(18, 24)]), ("day", range(6, 18)))
#: 1.0 of the peak from 06:00 to 18:00, half of it otherwise.
HALF_AT_NIGHT = tuple(1.0 if 6 <= h < 18 else 0.5 for h in range(24))


def optimum(sc: Scenario, tb: CapacityTable, families: Iterable[str] = tuple(FAMILIES)
            ) -> float | None:
    """Optimal monthly cost of the program with the given families, None when infeasible."""
    program = build_program(build_program_data(sc, tb), families=families)
    outcome = solve(program.prob, gap=1e-9)
    if outcome.status is SolveStatus.infeasible:
        return None
    assert outcome.status is SolveStatus.optimal
    return float(pulp.value(program.prob.objective))


def relaxation(sc: Scenario, tb: CapacityTable) -> float:
    """Optimal monthly cost of the program's LP relaxation (every variable continuous)."""
    program = build_program(build_program_data(sc, tb))
    for var in program.prob.variables():
        var.cat = pulp.LpContinuous
    assert solve(program.prob).status is SolveStatus.optimal
    return float(pulp.value(program.prob.objective))


def assert_cut_tightens(
    monkeypatch: pytest.MonkeyPatch, sc: Scenario, tb: CapacityTable, name: str,
    replacement: object, relaxed_with: float, relaxed_without: float, integer: float,
) -> None:
    """With the cut the relaxation is ``relaxed_with``, with ``solver.program.cuts.<name>``
    replaced ``relaxed_without``; the integer optimum is ``integer`` either way (the cut keeps
    it)."""
    import solver.program.cuts as cuts_module

    assert relaxation(sc, tb) == pytest.approx(relaxed_with)
    assert optimum(sc, tb) == pytest.approx(integer)
    monkeypatch.setattr(cuts_module, name, replacement)
    assert relaxation(sc, tb) == pytest.approx(relaxed_without)
    assert optimum(sc, tb) == pytest.approx(integer)


def planned(sc: Scenario, tb: CapacityTable) -> float:
    """Plan, verify independently, and return the monthly cost."""
    plan = plan_scenario(sc, tb, gap=1e-9)
    assert plan.status is SolveStatus.optimal
    assert verify_plan(plan, sc, tb) == []
    return plan.cost.per_month


def without(name: str) -> tuple[str, ...]:
    return tuple(f for f in FAMILIES if f != name)


# --- hand-computed optima ---------------------------------------------------------------------


def test_reserved_base_plus_on_demand_peak() -> None:
    # 20 req/s by day, 10 at night; a 1-GPU replica carries 10 req/s at utilization 1.0.
    # Day needs 2 replicas, night 1. Reserved 2.0 $/GPU-h, on-demand 3.0.
    #   2 reserved:                 2 × 2.0 × 730               = 2,920
    #   1 reserved + 1 OD by day:   1 × 2.0 × 730 + 1 × 3.0 × 365 = 1,460 + 1,095 = 2,555  ← best
    #   all on demand:              3.0 × (2 × 365 + 1 × 365)   = 3,285
    sc = scenario([workload("w", 20.0, shape=HALF_AT_NIGHT, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 8), on_demand=(3.0, 8), gpus_per_node=1))],
                  time_blocks=DAY_NIGHT)
    assert planned(sc, table(row("w", "H100", 1, 10.0))) == pytest.approx(2555.0)


def test_spot_counts_after_interruption_discount() -> None:
    # Batch, 9 req/s flat, replica 10 req/s at utilization 1.0; spot 1.0 $/GPU-h, OD 3.0.
    # Interruption 0.1: one spot replica counts 10 × 0.9 = 9 ≥ 9 → 1 × 1.0 × 730 = 730.
    # Interruption 0.2: one counts 8 < 9 → two spot (1,460) beat one on-demand (2,190).
    def case(rate: float) -> Scenario:
        return scenario([workload("b", 9.0, cls="batch", utilization=1.0)],
                        [zone("a", offer(on_demand=(3.0, 8), spot=(1.0, 8, rate),
                                         gpus_per_node=1))])
    tb = table(row("b", "H100", 1, 10.0))
    assert planned(case(0.1), tb) == pytest.approx(730.0)
    assert planned(case(0.2), tb) == pytest.approx(1460.0)


def test_interactive_pays_on_demand_not_spot() -> None:
    # Same as above but interactive: spot is not allowed → one OD replica 3.0 × 730 = 2,190.
    sc = scenario([workload("i", 9.0, utilization=1.0)],
                  [zone("a", offer(on_demand=(3.0, 8), spot=(1.0, 8, 0.0), gpus_per_node=1))])
    assert planned(sc, table(row("i", "H100", 1, 10.0))) == pytest.approx(2190.0)


def test_replicas_pack_into_whole_nodes() -> None:
    # 25 req/s at 10 × 1.0 per TP2 replica → 3 replicas = 6 GPUs → one 8-GPU node:
    # 8 × 2.0 × 730 = 11,680 (the two idle GPUs are paid for).
    sc = scenario([workload("w", 25.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 64)))])
    assert planned(sc, table(row("w", "H100", 2, 10.0))) == pytest.approx(11680.0)


def test_an_odd_node_holds_whole_replicas_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two workloads share 3-GPU nodes, TP2 replicas of 10 req/s: 15 req/s → 2 replicas, 5 → 1.
    # A 3-GPU node holds one TP2 replica (its odd GPU idles) → 3 nodes = 9 GPUs × 2.0 × 730 =
    # 13,140. Counting GPUs alone (6 ≤ 3 y) buys 2 nodes = 8,760 for replicas that do not fit
    # them (each workload's node cover cut alone asks for 2 and 1 nodes).
    sc = scenario([workload("u", 15.0, utilization=1.0), workload("v", 5.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=3))])
    tb = table(row("u", "H100", 2, 10.0), row("v", "H100", 2, 10.0))
    assert planned(sc, tb) == pytest.approx(13140.0)
    monkeypatch.setattr(families, "slot_rows", lambda degrees, g: ((1, g),))
    assert optimum(sc, tb) == pytest.approx(8760.0)


def test_mixed_tp_on_odd_nodes_needs_a_row_per_degree(monkeypatch: pytest.MonkeyPatch) -> None:
    # 6-GPU nodes shared by two TP4 workloads (20 req/s a replica, 40 req/s each → 2 replicas
    # each) and a TP1 one (10 req/s a replica, 5 req/s → 1). A node takes one TP4 replica
    # (4 ⌊6/4⌋ = 4 GPUs for TP ≥ 4) → 4 nodes = 24 GPUs × 2.0 × 730 = 35,040. With the TP1 row
    # alone (17 ≤ 6 y) 3 nodes = 26,280 would do.
    sc = scenario([workload("u", 40.0, utilization=1.0), workload("v", 40.0, utilization=1.0),
                   workload("w", 5.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=6))])
    tb = table(row("u", "H100", 4, 20.0), row("v", "H100", 4, 20.0), row("w", "H100", 1, 10.0))
    assert planned(sc, tb) == pytest.approx(35040.0)
    monkeypatch.setattr(families, "slot_rows", lambda degrees, g: slot_rows(degrees, g)[:1])
    assert optimum(sc, tb) == pytest.approx(26280.0)


def test_stock_caps_reserved_and_on_demand_fills_in() -> None:
    # 20 req/s flat needs 2 one-GPU replicas; reserved stock is 1 GPU →
    # 1 reserved (2.0 × 730 = 1,460) + 1 on-demand all day (3.0 × 730 = 2,190) = 3,650.
    sc = scenario([workload("w", 20.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 1), on_demand=(3.0, 8), gpus_per_node=1))])
    assert planned(sc, table(row("w", "H100", 1, 10.0))) == pytest.approx(3650.0)


def test_zone_loss_doubles_a_flat_pool_over_two_zones() -> None:
    # 20 req/s, 10 per replica at utilization and failure utilization 1.0: losing either zone must
    # leave 20 req/s → 2 replicas in each zone = 4 GPUs × 2.0 × 730 = 5,840 (vs 2,920 without).
    z = [zone(n, offer(reserved=(2.0, 8), gpus_per_node=1)) for n in ("a", "b")]
    tb = table(row("w", "H100", 1, 10.0))
    sc = scenario([workload("w", 20.0, utilization=1.0, survivability="zone_loss")], z)
    assert planned(sc, tb) == pytest.approx(5840.0)
    assert optimum(sc, tb, without("zone_loss")) == pytest.approx(2920.0)


def test_zone_loss_counts_neither_spot_nor_the_lost_zone() -> None:
    # Batch, 10 req/s, 10 per replica; spot at 0.5 is cheapest but never failover capacity.
    # Steady state could be one spot replica (365... all day 0.5 × 730 = 365); zone loss needs one
    # on-demand replica in each zone (3.0 × 730 × 2 = 4,380), which also carries the steady state.
    z = [zone(n, offer(on_demand=(3.0, 8), spot=(0.5, 8, 0.0), gpus_per_node=1))
         for n in ("a", "b")]
    tb = table(row("b", "H100", 1, 10.0))
    sc = scenario([workload("b", 10.0, cls="batch", utilization=1.0, survivability="zone_loss")],
                  z)
    assert planned(sc, tb) == pytest.approx(4380.0)
    assert optimum(sc, tb, without("zone_loss")) == pytest.approx(365.0)


def test_n_plus_1_loses_the_fullest_node() -> None:
    # 20 req/s, TP1 replicas of 10 req/s on 8-GPU nodes (a node holds 8 replicas = 80 req/s).
    # Without N+1: 2 replicas on 1 node = 8 × 2.0 × 730 = 11,680.
    # With N+1 in one zone: x − min(x, 8) ≥ 2 → x = 10 on 2 nodes = 23,360.
    sc = scenario([workload("w", 20.0, utilization=1.0, survivability="n_plus_1")],
                  [zone("a", offer(reserved=(2.0, 64)))])
    tb = table(row("w", "H100", 1, 10.0))
    assert planned(sc, tb) == pytest.approx(23360.0)
    assert optimum(sc, tb, without("n_plus_1")) == pytest.approx(11680.0)


def test_n_plus_1_uses_failure_utilization() -> None:
    # One-GPU nodes, replica 10 req/s, utilization 0.5, failure utilization 0.8, 20 req/s flat.
    # Steady: 20 / (10 × 0.5) = 4 replicas. After losing one: 3 × 10 × 0.8 = 24 ≥ 20 → 4 suffice:
    # 4 × 2.0 × 730 = 5,840. With failure utilization 0.6: 3 × 6 = 18 < 20 → 5 → 7,300.
    def case(phi: float) -> Scenario:
        return scenario([workload("w", 20.0, utilization=0.5, survivability="n_plus_1")],
                        [zone("a", offer(reserved=(2.0, 64), gpus_per_node=1))],
                        failure_utilization=phi)
    tb = table(row("w", "H100", 1, 10.0))
    assert planned(case(0.8), tb) == pytest.approx(5840.0)
    assert planned(case(0.6), tb) == pytest.approx(7300.0)


def test_batch_volume_moves_inside_its_window() -> None:
    # 27,000 requests a day in hours 0-5, split into blocks a (0-2) and b (3-5); one on-demand
    # GPU replica carries 1.0 req/s × 0.9 (batch default) = 0.9 req/s; price 1.0.
    #   even spread: 27,000 / (6 h × 3,600) = 1.25 req/s → 2 replicas × 6 h = 12 GPU-h a day;
    #   all in one block: 27,000 / (3 h × 3,600) = 2.5 req/s → 3 replicas × 3 h = 9 GPU-h a day.
    # 9 GPU-h a day × 730 / 24 days × 1.0 = 273.75.
    tb_ = blocks(("a", [0, 1, 2]), ("b", [3, 4, 5]), ("rest", range(6, 24)))
    sc = scenario([workload("v", None, cls="batch", batch=(27000.0, range(6)))],
                  [zone("z", offer(on_demand=(1.0, 8), gpus_per_node=1))], time_blocks=tb_)
    assert planned(sc, table(row("v", "H100", 1, 1.0))) == pytest.approx(273.75)


def test_dominated_tp_is_dropped_without_changing_the_optimum() -> None:
    # TP1 carries 10 req/s per GPU; TP2 carries 15 per 2 GPUs (7.5 per GPU): TP2 is dominated.
    sc = scenario([workload("w", 30.0, utilization=1.0, survivability="n_plus_1")],
                  [zone("a", offer(reserved=(2.0, 64)))])
    tb = table(row("w", "H100", 1, 10.0), row("w", "H100", 2, 15.0))
    data = build_program_data(sc, tb)
    assert [(c.gpu, c.tp) for c in data.candidates] == [("H100", 1)]
    assert [(c.gpu, c.tp) for c in data.dropped] == [("H100", 2)]
    full = build_program(build_program_data(sc, tb, prune=False))
    solve(full.prob, gap=1e-9)
    assert optimum(sc, tb) == pytest.approx(float(pulp.value(full.prob.objective)))
    # N+1 on 8-GPU nodes: x − min(x, 8) ≥ 3 → 11 TP1 replicas on 2 nodes × 8 × 2.0 × 730.
    assert optimum(sc, tb) == pytest.approx(23360.0)


def test_equal_slices_are_grouped_and_reported_per_block() -> None:
    # Three blocks; the two at half demand group into one slice of 16 h paid 16 × 730 / 24.
    three = blocks(("night", range(0, 6)), ("day", range(6, 14)), ("eve", range(14, 24)))
    shape = tuple(1.0 if 6 <= h < 14 else 0.5 for h in range(24))
    sc = scenario([workload("w", 20.0, shape=shape, utilization=1.0)],
                  [zone("a", offer(on_demand=(3.0, 8), gpus_per_node=1))], time_blocks=three)
    tb = table(row("w", "H100", 1, 10.0))
    data = build_program_data(sc, tb)
    assert [(s.name, s.blocks, s.hours_per_day) for s in data.slices] == [
        ("night", ("night", "eve"), 16), ("day", ("day",), 8)]
    # 1 replica for 16 h + 2 replicas for 8 h = 32 GPU-h a day × 730/24 × 3.0 = 2,920.
    plan = plan_scenario(sc, tb)
    assert plan.cost.per_month == pytest.approx(2920.0)
    assert sorted((a.slice, a.replicas) for a in plan.allocations) == [
        ("day", 2), ("eve", 1), ("night", 1)]
    assert verify_plan(plan, sc, tb) == []


# --- each constraint family matters -------------------------------------------------------------


def test_without_demand_the_fleet_is_empty() -> None:
    sc = scenario([workload("w", 20.0)], [zone("a", offer(reserved=(2.0, 8)))])
    tb = table(row("w", "H100", 1, 10.0))
    # ⌈20 / (10 × 0.7)⌉ = 3 replicas on one 8-GPU node: 8 × 2.0 × 730 = 11,680.
    assert optimum(sc, tb) == pytest.approx(11680.0)
    assert optimum(sc, tb, without("demand")) == pytest.approx(0.0)


def test_without_spot_rule_interactive_takes_spot() -> None:
    sc = scenario([workload("i", 9.0, utilization=1.0)],
                  [zone("a", offer(on_demand=(3.0, 8), spot=(1.0, 8, 0.0), gpus_per_node=1))])
    tb = table(row("i", "H100", 1, 10.0))
    assert optimum(sc, tb) == pytest.approx(2190.0)  # 1 on-demand × 3.0 × 730
    assert optimum(sc, tb, without("spot")) == pytest.approx(730.0)  # 1 spot × 1.0 × 730
    # The family itself (not only the mask that keeps the slots from being made) zeroes any
    # interactive spot slot that exists: built without it, then applied, on-demand again.
    data = build_program_data(sc, tb)
    program = build_program(data, families=without("spot"))
    add_no_spot_for_interactive(program.prob, data, program.v)
    assert solve(program.prob, gap=1e-9).status is SolveStatus.optimal
    assert float(pulp.value(program.prob.objective)) == pytest.approx(2190.0)


def test_without_stock_reserved_covers_everything() -> None:
    sc = scenario([workload("w", 20.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 1), on_demand=(3.0, 8), gpus_per_node=1))])
    tb = table(row("w", "H100", 1, 10.0))
    assert optimum(sc, tb) == pytest.approx(3650.0)
    assert optimum(sc, tb, without("stock")) == pytest.approx(2920.0)  # 2 reserved × 2.0 × 730


def test_without_nodes_nothing_is_paid_for() -> None:
    sc = scenario([workload("w", 20.0)], [zone("a", offer(reserved=(2.0, 8)))])
    tb = table(row("w", "H100", 1, 10.0))
    assert optimum(sc, tb) == pytest.approx(11680.0)  # 3 replicas, one 8-GPU node
    assert optimum(sc, tb, without("nodes")) == pytest.approx(0.0)


def test_without_budget_an_over_budget_scenario_plans() -> None:
    z = [zone("a", offer(reserved=(2.0, 8), gpus_per_node=1))]
    tb = table(row("w", "H100", 1, 10.0))
    sc = scenario([workload("w", 20.0, utilization=1.0)], z, budget=2000.0)
    assert optimum(sc, tb) is None  # needs 2,920
    assert optimum(sc, tb, without("budget")) == pytest.approx(2920.0)
    assert optimum(scenario([workload("w", 20.0, utilization=1.0)], z, budget=3000.0),
                   tb) == pytest.approx(2920.0)


def test_every_family_has_a_test_above() -> None:
    # n_plus_1 and zone_loss are removed in their own tests above.
    assert set(FAMILIES) == {"demand", "spot", "n_plus_1", "zone_loss", "stock", "nodes",
                             "budget"}


# --- names and determinism ------------------------------------------------------------------------


def test_labels_that_fold_to_the_same_name_stay_distinct() -> None:
    # PuLP folds "-" to "_": workloads "a-b" and "a_b" would collide without generated names.
    sc = scenario([workload("a-b", 10.0, utilization=1.0), workload("a_b", 10.0, utilization=1.0)],
                  [zone("z-1", offer(reserved=(2.0, 8), gpus_per_node=1))])
    tb = table(row("a-b", "H100", 1, 10.0), row("a_b", "H100", 1, 10.0))
    program = build_program(build_program_data(sc, tb))
    names = [v.name for v in program.prob.variables()]
    assert len(names) == len(set(names))
    rows = [c.name for c in program.prob.constraints()]
    assert len(rows) == len(set(rows))
    assert planned(sc, tb) == pytest.approx(2920.0)  # one replica each


def test_same_input_same_plan() -> None:
    z = [zone(n, offer(reserved=(2.0, 16), on_demand=(3.0, 16))) for n in ("a", "b", "c")]
    sc = scenario([workload("w", 37.0, shape=HALF_AT_NIGHT, survivability="zone_loss"),
                   workload("v", 12.0, survivability="n_plus_1")], z, time_blocks=DAY_NIGHT)
    tb = table(row("w", "H100", 1, 6.0), row("w", "H100", 2, 13.0), row("v", "H100", 1, 5.0))
    first = plan_scenario(sc, tb).model_dump_json(exclude={"solver"})
    assert plan_scenario(sc, tb).model_dump_json(exclude={"solver"}) == first
    assert verify_plan(plan_scenario(sc, tb), sc, tb) == []


def test_reserved_slots_carry_no_slice() -> None:
    sc = scenario([workload("w", 20.0, shape=HALF_AT_NIGHT)],
                  [zone("a", offer(reserved=(2.0, 8), on_demand=(3.0, 8)))],
                  time_blocks=DAY_NIGHT)
    program = build_program(build_program_data(sc, table(row("w", "H100", 1, 10.0))))
    kinds = {(k[4], k[5]) for k in program.v.replicas}
    assert kinds == {(PurchaseKind.reserved, None), (PurchaseKind.on_demand, "night"),
                     (PurchaseKind.on_demand, "day")}


def test_n_plus_1_never_rests_on_spot() -> None:
    # A batch pool asking for N+1 where only spot is sold: after losing any node spot does not
    # count, so no fleet survives (without this rule all-spot would plan at 1 × 1.0 × 730 = 730).
    sc = scenario([workload("b", 9.0, cls="batch", utilization=1.0, survivability="n_plus_1")],
                  [zone("a", offer(spot=(1.0, 8, 0.0), gpus_per_node=1))])
    tb = table(row("b", "H100", 1, 10.0))
    assert optimum(sc, tb) is None
    assert optimum(sc, tb, without("n_plus_1")) == pytest.approx(730.0)


def test_symmetry_and_cover_cuts_keep_the_optimum() -> None:
    # Three identical zones (symmetric) with survivability: the cuts may only prune, never
    # change the optimal cost.
    z = [zone(n, offer(reserved=(2.0, 16), on_demand=(3.0, 16))) for n in ("a", "b", "c")]
    sc = scenario([workload("w", 37.0, shape=HALF_AT_NIGHT, survivability="zone_loss"),
                   workload("v", 12.0, survivability="n_plus_1")], z, time_blocks=DAY_NIGHT)
    tb = table(row("w", "H100", 1, 6.0), row("w", "H100", 2, 13.0), row("v", "H100", 1, 5.0))
    data = build_program_data(sc, tb)
    plain = build_program(data, symmetry=False, cuts=False)
    solve(plain.prob, gap=1e-9)
    assert optimum(sc, tb) == pytest.approx(float(pulp.value(plain.prob.objective)))


def test_two_replicas_cut_tightens_the_relaxation_and_keeps_the_optimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two zone-loss pools, 5 req/s each; one TP8 replica (a whole 8-GPU node) carries 10 req/s,
    # so each pool needs two replicas in two zones: 4 nodes × 8 GPUs × 1.0 $/GPU-h × 730 h =
    # 23,360 $/month. Without the cut the relaxation spreads 0.25 of a replica over each of
    # three zones (Σ over two zones = 0.5 × 10 = 5 ≥ 5) and the node covers ask for 2 nodes:
    # 11,680. With it: B ≥ 2 replicas per pool, 32 GPUs, 4 nodes — the integer optimum.
    zones = [zone(z, offer(reserved=(1.0, 64))) for z in ("a", "b", "c")]
    sc = scenario([workload("p", 5.0, survivability="zone_loss"),
                   workload("q", 5.0, survivability="zone_loss")], zones)
    tb = table(row("p", "H100", 8, 10.0), row("q", "H100", 8, 10.0))
    assert_cut_tightens(monkeypatch, sc, tb, "add_two_replicas_cut", lambda *args: None,
                        relaxed_with=4 * 8 * 730.0, relaxed_without=2 * 8 * 730.0,
                        integer=4 * 8 * 730.0)


def test_two_nodes_cut_tightens_dedicated_relaxation_and_keeps_the_optimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Dedicated pools, one zone-loss pool of 5 req/s in three zones. A "big" 8-GPU node (one
    # TP8 replica, 10 req/s) costs 8 × 1.0 × 730 = 5,840 $/month; a "small" 1-GPU node (1 req/s)
    # 3.0 × 730 = 2,190. Optimum: two big nodes in two zones, 11,680 (one big node plus the 5
    # small ones its zone's loss needs: 5,840 + 10,950 = 16,790; small only: 8 nodes 17,520).
    # Without the cut the relaxation holds 0.5 of a big node in each zone (losing one leaves
    # 1 × 5 ≥ 5), 1.5 × 5,840 = 8,760; with it: B ≥ 2, the integer optimum.
    zones = [zone(z, offer("BIG", reserved=(1.0, 64)),
                  offer("SMALL", reserved=(3.0, 64), gpus_per_node=1)) for z in ("a", "b", "c")]
    sc = scenario([workload("p", 5.0, survivability="zone_loss")], zones)
    sc = sc.model_copy(update={"policy": sc.policy.model_copy(update={"share_nodes": False})})
    tb = table(row("p", "BIG", 8, 10.0), row("p", "SMALL", 1, 1.0))
    assert_cut_tightens(monkeypatch, sc, tb, "add_two_nodes_cut", lambda *args: None,
                        relaxed_with=2 * 8 * 730.0, relaxed_without=1.5 * 8 * 730.0,
                        integer=2 * 8 * 730.0)


def _relaxed(program: Program) -> float:
    """Optimal cost of ``program``'s LP relaxation (its variables made continuous)."""
    for var in program.prob.variables():
        var.cat = pulp.LpContinuous
    assert solve(program.prob).status is SolveStatus.optimal
    return float(pulp.value(program.prob.objective))


def test_two_nodes_cut_tightens_shared_relaxation_where_asked_and_keeps_the_optimum() -> None:
    # tests/plan_fixtures.shared_two_node_fleet: shared nodes, one zone-loss pool of 5 req/s in
    # three zones selling a big 8-GPU node (replicas of 2 req/s) and a small 1-GPU node (1 req/s).
    # Optimum: a big node in each of two zones, 3 replicas each (losing one zone leaves 6 ≥ 5):
    # 11,680 $/month (one big node and the small nodes its zone's loss needs: 5,840 + 5 ×
    # 2,190 = 16,790). A big node's replicas are small (q = 0.4), so the two-replicas cut asks
    # only for 3.75 of them; the zone cover rows ask for one big node outside each zone: 0.5 in
    # each, 1.5 × 5,840 = 8,760. With the two-nodes cut B ≥ 2: the integer optimum. Shared
    # nodes get it only where asked (the joint solve: test_strategy.py).
    data = build_program_data(*shared_two_node_fleet())
    assert _relaxed(build_program(data)) == pytest.approx(1.5 * 8 * 730.0)
    assert _relaxed(build_program(data, shared_two_nodes=True)) == pytest.approx(2 * 8 * 730.0)
    for asked in (False, True):
        program = build_program(data, shared_two_nodes=asked)
        assert solve(program.prob, gap=1e-9).status is SolveStatus.optimal
        assert pulp.value(program.prob.objective) == pytest.approx(2 * 8 * 730.0)


@pytest.mark.parametrize("seed", range(16))
def test_cuts_keep_the_optimum_on_random_shared_fleets(seed: int) -> None:
    # Seeded tiny shared-node fleets with big and small nodes, N+1 and zone loss (where the
    # node cover and two-replicas cuts bind): the program with every cut and the program with
    # none (itself checked against enumeration in tests/test_bruteforce*.py) have the same
    # optimum, and so has the joint solve's program (the two-nodes cut on shared nodes too).
    # A cut asking one replica or node too many fails here.
    rng = random.Random(seed)
    zones = [zone(z, offer("BIG", reserved=(rng.choice([1.0, 1.5]), 32),
                           on_demand=(rng.choice([2.0, 3.0]), 16)),
                  offer("SMALL", reserved=(rng.choice([2.0, 4.0]), 16),
                        gpus_per_node=rng.choice([1, 2])))
             for z in ("a", "b", "c")[:rng.choice([2, 3])]]
    names = ("p", "q")[:rng.choice([1, 2])]
    sc = scenario([workload(n, rng.choice([2.0, 5.0, 9.0]), shape=HALF_AT_NIGHT, utilization=0.8,
                            survivability=rng.choice(["n_plus_1", "zone_loss"]))
                   for n in names], zones, time_blocks=DAY_NIGHT)
    tb = table(*(r for n in names for r in (
        row(n, "BIG", 1, rng.choice([1.5, 2.5, 6.0])), row(n, "BIG", 2, rng.choice([4.0, 7.0])),
        row(n, "SMALL", 1, rng.choice([0.8, 1.2])))))
    data = build_program_data(sc, tb)
    costs = []
    for kwargs in ({}, {"shared_two_nodes": True}, {"symmetry": False, "cuts": False}):
        program = build_program(data, **kwargs)
        assert solve(program.prob, gap=1e-9).status is SolveStatus.optimal
        costs.append(float(pulp.value(program.prob.objective)))
    assert costs[0] == pytest.approx(costs[2], rel=1e-9)
    assert costs[1] == pytest.approx(costs[2], rel=1e-9)


def test_two_replicas_cut_weighs_a_small_replica_by_what_its_loss_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One N+1 pool of 10 req/s on one-GPU nodes (1.0 $/GPU-h), replicas of 8 req/s: q = 0.8.
    # Integer: losing a replica leaves 8(x − 1) ≥ 10 → x = 3 → 3 × 730 = 2,190 $/month.
    # Weight 2q/(1+q) = 0.8̅: 0.8̅ x ≥ 2 → x ≥ 2.25 → relaxation 2.25 × 730 = 1,642.5.
    # With the plain weight αq = 1.6 the cut asks only x ≥ 1.25; the loss row's chord binds
    # instead: ℓ ≥ 8x × 8/26 (pool bound max(10, 10 + 8) + 8 = 26), so 8x × 18/26 ≥ 10 →
    # x ≥ 260/144 → 1,318.06.
    sc = scenario([workload("w", 10.0, utilization=1.0, survivability="n_plus_1")],
                  [zone("a", offer(reserved=(1.0, 64), gpus_per_node=1))])
    tb = table(row("w", "H100", 1, 8.0))
    assert_cut_tightens(
        monkeypatch, sc, tb, "_two_cut_weight",
        lambda firm, need, alpha: 1.0 if firm >= need else alpha * firm / need,
        relaxed_with=2.25 * 730.0, relaxed_without=260 / 144 * 730.0, integer=3 * 730.0)
