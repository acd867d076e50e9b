"""Rule-of-thumb baselines: replicas at peak × 1.3, cheapest zone first, whole on-demand nodes.

Every cost below is worked by hand with the policy's 730 hours a month.
"""

from __future__ import annotations

import pytest
from plan_fixtures import offer, row, scenario, table, workload, zone

from models.common import PurchaseKind
from models.offers import Offer
from models.scenario import Scenario
from solver.studies.baselines import (
    baseline_fleet,
    baselines,
    best_type_baseline,
    rule_of_thumb_replicas,
    single_type_baseline,
)
from solver.survivability.check import check_fleet


def small(price: float, stock_gpus: int) -> Offer:
    """An on-demand offer of the 4-GPU-node type "small"."""
    return offer("small", on_demand=(price, stock_gpus), gpus_per_node=4)


# "big": 8-GPU nodes, cheaper in z2 ($9, 1 node of stock) than z1 ($10, 2 nodes).
# "small": 4-GPU nodes, $2 in z1 (2 nodes of stock), $2.5 in z2 (16 nodes).
ZONES = (
    zone("z1", offer("big", on_demand=(10.0, 16)), small(2.0, 8)),
    zone("z2", offer("big", on_demand=(9.0, 8)), small(2.5, 64)),
)
# chat at 30 rps: big TP2 needs ⌈30 × 1.3 / 10⌉ = ⌈3.9⌉ = 4 replicas = 8 GPUs (TP1 would need
# ⌈39 / 4⌉ = 10 GPUs); small TP4 needs ⌈39 / 3⌉ = 13 replicas = 52 GPUs.
# code at 6 rps: big TP1 ⌈7.8 / 6⌉ = 2 replicas = 2 GPUs; small TP1 ⌈7.8 / 1⌉ = 8 replicas.
TABLE = table(
    row("chat", "big", 1, 4.0), row("chat", "big", 2, 10.0), row("chat", "small", 4, 3.0),
    row("code", "big", 1, 6.0), row("code", "small", 1, 1.0),
)


def two_pools() -> Scenario:
    return scenario([workload("chat", peak_rps=30.0), workload("code", peak_rps=6.0)], ZONES)


def test_replicas_are_peak_times_headroom_over_rate_rounded_up() -> None:
    assert rule_of_thumb_replicas(30.0, 10.0) == 4  # 39 / 10 = 3.9 → 4
    assert rule_of_thumb_replicas(6.0, 1.0) == 8  # 7.8 → 8
    # 3 × 1.3 / 3.9 is 1.0000000000000002 in floating point: still one replica.
    assert rule_of_thumb_replicas(3.0, 3.9) == 1
    assert rule_of_thumb_replicas(0.01, 100.0) == 1  # never zero


def test_single_type_picks_the_type_whose_whole_fleet_is_cheapest() -> None:
    # big: chat's 4 × TP2 fill z2's only node; code's 2 × TP1 open a z1 node:
    #      8 × 9 × 730 + 8 × 10 × 730 = 52,560 + 58,400 = 110,960.
    # small: chat's 13 × TP4 take z1's 2 nodes then 11 in z2; code's 8 × TP1 need 2 more nodes,
    #      z1 is out of stock, so z2: 2 × 4 × 2 × 730 + 13 × 4 × 2.5 × 730
    #      = 11,680 + 94,900 = 106,580  → small wins.
    base = single_type_baseline(two_pools(), TABLE)
    assert base is not None
    assert base.cost_per_month == pytest.approx(106_580.0)
    assert {(p.workload, p.gpu, p.tp, p.replicas) for p in base.pools} == {
        ("chat", "small", 4, 13), ("code", "small", 1, 8)}
    assert {(n.zone, n.gpu, n.nodes) for n in base.nodes} == {("z1", "small", 2),
                                                               ("z2", "small", 13)}


def test_best_type_per_workload_adds_the_least_cost_to_the_fleet_so_far() -> None:
    # chat first (8 GPUs on big vs code's 2): big costs 52,560 (z2's node), small 11,680 +
    # 11 × 4 × 2.5 × 730 = 91,980 → big. code: big must open a z1 node (+58,400); small takes
    # z1's two nodes (+2 × 4 × 2 × 730 = 11,680) → small. Total 52,560 + 11,680 = 64,240.
    base = best_type_baseline(two_pools(), TABLE)
    assert base is not None
    assert base.cost_per_month == pytest.approx(64_240.0)
    assert {(p.workload, p.gpu, p.tp, p.replicas) for p in base.pools} == {
        ("chat", "big", 2, 4), ("code", "small", 1, 8)}
    assert {(n.zone, n.gpu, n.nodes, n.gpus) for n in base.nodes} == {("z2", "big", 1, 8),
                                                                       ("z1", "small", 2, 8)}


def test_pools_share_an_open_node_at_no_extra_cost() -> None:
    # chat at 20 rps: big TP2 ⌈26 / 10⌉ = 3 replicas (6 GPUs) leave 2 GPUs of z2's node free;
    # code's 2 × TP1 fill them: one node, 8 × 9 × 730 = 52,560.
    scen = scenario([workload("chat", peak_rps=20.0), workload("code", peak_rps=6.0)], ZONES)
    base = best_type_baseline(scen, TABLE)
    assert base is not None
    assert base.cost_per_month == pytest.approx(52_560.0)
    assert [(n.zone, n.gpu, n.nodes) for n in base.nodes] == [("z2", "big", 1)]


def test_a_batch_volume_pool_runs_and_pays_only_its_window() -> None:
    # 36,000 requests in 6 hours = 36,000 / 21,600 s = 1.667 rps; ⌈1.667 × 1.3 / 1⌉ = ⌈2.17⌉ = 3
    # replicas of small TP1 → one 4-GPU node paid 730 × 6 / 24 = 182.5 h: 4 × 2 × 182.5 = 1,460.
    scen = scenario([workload("night", cls="batch", batch=(36_000, range(2, 8)))],
                    [zone("z1", small(2.0, 8))])
    base = single_type_baseline(scen, table(row("night", "small", 1, 1.0)))
    assert base is not None
    assert base.cost_per_month == pytest.approx(1_460.0)
    (nodes,) = base.nodes
    assert (nodes.pool, nodes.hours_per_month) == ("night", pytest.approx(182.5))


def test_a_type_some_workload_cannot_use_is_not_a_single_type_candidate() -> None:
    # code has no row on "big2": only "small" serves both (chat 13 × TP4 + code 8 × TP1 as above).
    zones = (zone("z1", small(2.0, 256), offer("big2", on_demand=(1.0, 64))),)
    scen = scenario([workload("chat", peak_rps=30.0), workload("code", peak_rps=6.0)], zones)
    tab = table(row("chat", "small", 4, 3.0), row("code", "small", 1, 1.0),
                row("chat", "big2", 2, 10.0))
    base = single_type_baseline(scen, tab)
    assert base is not None
    # 13 nodes for chat + 2 for code = 15 nodes × 4 × 2 × 730 = 87,600.
    assert base.cost_per_month == pytest.approx(87_600.0)
    assert {p.gpu for p in base.pools} == {"small"}


def test_no_baseline_when_stock_cannot_hold_the_rule_of_thumb_fleet() -> None:
    # chat needs 52 GPUs of small or 8 of big; the zones sell 8 small and no big.
    scen = scenario([workload("chat", peak_rps=30.0)],
                    [zone("z1", small(2.0, 8))])
    tab = table(row("chat", "small", 4, 3.0))
    assert baselines(scen, tab) == {"single_type": None, "best_type_per_workload": None}


def test_replicas_never_exceed_the_node_size() -> None:
    # TP8 does not fit a 4-GPU node: the only row cannot be placed.
    scen = scenario([workload("chat", peak_rps=1.0)],
                    [zone("z1", small(2.0, 64))])
    assert single_type_baseline(scen, table(row("chat", "small", 8, 5.0))) is None


def test_placements_say_where_each_workloads_replicas_went() -> None:
    base = best_type_baseline(two_pools(), TABLE)
    assert base is not None
    assert {(p.workload, p.zone, p.gpu, p.tp, p.replicas) for p in base.placements} == {
        ("chat", "z2", "big", 2, 4), ("code", "z1", "small", 1, 8)}


def test_the_check_shows_what_the_rule_of_thumb_fleet_breaks() -> None:
    # chat must survive a zone loss; the rule of thumb puts its 4 × big TP2 in z2 (cheapest).
    # Steady state: 4 × 10 rps × 0.7 (interactive target utilization) = 28 < 30 rps: broken —
    # 1.3 × peak is less headroom than the planner's 1 / 0.7 = 1.43.
    # Losing z2 leaves nothing: broken. code (no survivability): 8 × 1 × 0.7 = 5.6 < 6: broken.
    scen = scenario([workload("chat", peak_rps=30.0, survivability="zone_loss"),
                     workload("code", peak_rps=6.0)], ZONES)
    base = best_type_baseline(scen, TABLE)
    assert base is not None
    fleet = baseline_fleet(base, scen)
    assert {(g.workload, g.zone, g.purchase, g.replicas) for g in fleet.replicas} == {
        ("chat", "z2", PurchaseKind.on_demand, 4), ("code", "z1", PurchaseKind.on_demand, 8)}
    assert {(n.zone, n.gpu, n.nodes, n.gpus) for n in fleet.nodes} == {("z2", "big", 1, 8),
                                                                        ("z1", "small", 2, 8)}
    report = check_fleet(fleet, scen, TABLE)
    broken = {(r.workload, r.failure) for r in report.broken}
    assert broken == {("chat", "none"), ("chat", "zone:z2"), ("chat", "node:z2/big/on_demand"),
                      ("code", "none")}
    steady = next(r for r in report.rows if (r.workload, r.failure) == ("chat", "none"))
    assert steady.capacity_rps == pytest.approx(28.0)
