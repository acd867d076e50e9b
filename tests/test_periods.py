"""The program over periods: hand-computed optima, one test per coupling that fails when the
coupling is removed, and scenario sharing.

Every case has one zone selling one-GPU nodes of ``G``; a replica carries 1 req/s at target
utilization 1, so a demand of ``d`` req/s needs ``d`` nodes. Prices: on-demand 1.00 $/GPU-h,
i.e. 730 $ a node-month and 2,190 $ a quarter (3 × 730 h); a reservation at ``p`` $/GPU-h
costs 730 p a month, 8,760 p for a 12-month term.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from models.horizon import DemandScenario, HeldNodes, Horizon
from models.loader import load_scenario
from models.offers import Offer, OnDemandTerms, OwnedTerms, ReservedTerms
from models.plan import Plan, SolveStatus
from models.scenario import Scenario
from models.workload import DemandEvent
from solver.program.periods import COUPLINGS, build_horizon_data, build_horizon_program
from solver.solve.backends import solve
from solver.solve.horizon import plan_horizon
from tests.plan_fixtures import gpu, row, scenario, table, workload, zone

QUARTER = 3 * 730.0  # on-demand node-quarter at 1 $/GPU-h
START = dt.date(2027, 1, 1)
TABLE = table(row("chat", "G", 1, 1.0))
ALL = (*COUPLINGS, "terms", "inventory")


def quarterly(
    growth: Sequence[float], peak: float = 1.0, reserved: float | None = 0.45,
    lead_weeks: float = 0.0, owned: OwnedTerms | None = None,
    inventory: Iterable[HeldNodes] = (), demands: Sequence[DemandScenario] = (),
    on_demand_stock: int = 8, reserved_stock: int = 8, commitments: str = "whole_term",
) -> Scenario:
    """One workload over four quarters (``len(growth)``) from 2027-01-01."""
    offer = Offer(
        gpu="G", gpus_per_node=1,
        on_demand=OnDemandTerms(price_per_gpu_hour=1.0, stock_gpus=on_demand_stock),
        reserved=None if reserved is None else ReservedTerms(
            price_per_gpu_hour=reserved, stock_gpus=reserved_stock, commitment_months=12,
            lead_time_weeks=lead_weeks),
        owned=owned)
    wl = workload("chat", peak, utilization=1.0).model_copy(update={"growth": tuple(growth)})
    sc = scenario([wl], [zone("a", offer)], gpus=[gpu("G", 1)])
    return sc.model_copy(update={
        "horizon": Horizon(start=START, period_months=3, count=len(growth),
                           commitments=commitments),
        "inventory": tuple(inventory), "demand_scenarios": tuple(demands)})


def plan(sc: Scenario, **kw: Any) -> Plan:
    out = plan_horizon(sc, table_for=lambda _: TABLE, time_limit_s=20, gap=1e-6, **kw)
    assert out.status is SolveStatus.optimal
    return out


def objective(sc: Scenario, couplings: Iterable[str] = ALL, robust: bool = False) -> float:
    """The optimum of the program with only the named couplings."""
    hp = build_horizon_program(build_horizon_data(sc, lambda _: TABLE), couplings, robust)
    outcome = solve(hp.prob, "highs", 20, 1e-6)
    assert outcome.status is SolveStatus.optimal
    assert outcome.report.objective is not None
    return outcome.report.objective


def orders(p: Plan) -> list[tuple[int, int, int]]:
    """(usable period, order period, nodes) of each order."""
    return [(o.usable_period, o.order_period, o.nodes) for o in p.orders]


def test_a_term_over_a_dip_is_bought_only_when_it_pays_over_the_term() -> None:
    """Demand 2, 1, 1, 2 nodes. The node needed all year is reserved whatever the price below
    on-demand. The second is needed in two quarters only: on demand 2 × 2,190 = 4,380, or a
    12-month term 8,760 p through the dip — bought only when p < 0.5."""
    dear = plan(quarterly([2, 1, 1, 2], reserved=0.55))
    assert orders(dear) == [(0, 0, 1)]
    assert dear.horizon is not None
    assert dear.horizon.expected_cost == pytest.approx(8760 * 0.55 + 2 * QUARTER)
    cheap = plan(quarterly([2, 1, 1, 2], reserved=0.45))
    assert orders(cheap) == [(0, 0, 2)]
    assert cheap.horizon is not None
    assert cheap.horizon.expected_cost == pytest.approx(2 * 8760 * 0.45)
    # the idle quarters show: period 1 holds 2 nodes where 1 is needed
    held = next(g for p in cheap.periods if p.period == 1 for g in p.gpus)
    assert (held.gpus, held.busy_gpus, held.idle_nodes) == (2, 1, 1)


def test_terms_coupling_fails_when_removed() -> None:
    """Without whole terms an order is held and paid for one quarter (730 p × 3 each): the
    reservation then wins every quarter, 6 node-quarters × 730 × 3 × 0.55 = 7,227 < 9,198."""
    sc = quarterly([2, 1, 1, 2], reserved=0.55)
    assert objective(sc) == pytest.approx(8760 * 0.55 + 2 * QUARTER)
    dropped = objective(sc, [c for c in ALL if c != "terms"])
    assert dropped == pytest.approx(6 * 3 * 730 * 0.55)


def test_inside_horizon_counts_only_the_months_inside() -> None:
    """``commitments: inside_horizon``: a term starting in the last quarter is charged its 3
    months there (3 × 730 × 0.55 = 1,204.5 < 2,190 on demand), so it is bought."""
    p = plan(quarterly([2, 1, 1, 2], reserved=0.55, commitments="inside_horizon"))
    assert sorted(orders(p)) == [(0, 0, 1), (3, 3, 1)]
    assert p.horizon is not None
    assert p.horizon.expected_cost == pytest.approx(8760 * 0.55 + QUARTER + 3 * 730 * 0.55)


def test_a_lead_time_pushes_the_order_a_period_earlier() -> None:
    """Four weeks of lead time: nothing reserved can serve from 2027-01-01 (it had to be
    ordered by 2026-12-04), so quarter 0 runs on demand (2,190) and a reservation serving
    from 2027-04-01 is ordered by 2027-03-04, in quarter 0: 2,190 + 8,760 × 0.45 = 6,132."""
    sc = quarterly([1, 1, 1, 1], lead_weeks=4)
    p = plan(sc)
    assert orders(p) == [(1, 0, 1)]
    assert p.orders[0].order_by == dt.date(2027, 3, 4)
    assert p.horizon is not None
    assert p.horizon.expected_cost == pytest.approx(QUARTER + 8760 * 0.45)
    assert objective(sc, [c for c in ALL if c != "lead_time"]) == pytest.approx(8760 * 0.45)


def test_owned_nodes_are_used_before_anything_is_bought() -> None:
    """One owned node held all year carries 1 of the 2 req/s: one reservation (8,760 × 0.45)
    is bought, not two; its running cost (50 $/month) is reported, not optimised."""
    held = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=1,
                     running_cost_per_node_month=50)
    sc = quarterly([2, 2, 2, 2], inventory=[held])
    p = plan(sc)
    assert orders(p) == [(0, 0, 1)]
    assert p.horizon is not None
    assert p.horizon.expected_cost == pytest.approx(8760 * 0.45)
    assert p.horizon.scenarios[0].cost_in_horizon == pytest.approx(8760 * 0.45 + 12 * 50)
    owned = next(n for n in p.nodes if n.purchase.value == "owned")
    assert (owned.nodes, owned.cost_per_month) == (1, 50)
    assert objective(sc, [c for c in ALL if c != "inventory"]) == pytest.approx(
        2 * 8760 * 0.45)


def test_a_launch_runs_replicas_only_from_its_period() -> None:
    """F4: `launch` (2 req/s, 2 nodes) from quarter 2 beside chat (1 node), on demand only:
    GPUs per quarter 1, 1, 3, 3, cost 8 × 2,190 = 17,520 (chat 4 node-quarters + launch 2 ×
    2). From quarter 0 it is 12 × 2,190. The workaround it replaces (a 0.001 req/s peak, the
    launch's 2 req/s an event) holds a node for the token in quarters 0 and 1 and, with 2.001
    req/s, three from quarter 2: 2 + 2 + 4 + 4 = 12 node-quarters."""
    def two(from_period: int, before_rps: float | None = None) -> Scenario:
        sc = quarterly([1, 1, 1, 1], reserved=None)
        launch = workload("launch", 2.0, utilization=1.0).model_copy(update={
            "from_period": from_period})
        if before_rps is not None:  # the workaround: a token peak, the launch as an event
            launch = workload("launch", before_rps, utilization=1.0).model_copy(update={
                "events": (DemandEvent(name="go", from_period=2, add_peak_rps=2.0),)})
        return sc.model_copy(update={"workloads": (*sc.workloads, launch)})

    rows = table(row("chat", "G", 1, 1.0), row("launch", "G", 1, 1.0))
    by_period = {}
    for case, sc in {"launch": two(2), "always": two(0), "token": two(0, 0.001)}.items():
        p = plan_horizon(sc, table_for=lambda _: rows, time_limit_s=20, gap=1e-6)
        assert p.status is SolveStatus.optimal and p.horizon is not None
        by_period[case] = ([sum(g.gpus for g in q.gpus) for q in p.periods],
                           round(p.horizon.expected_cost))
        if case == "launch":
            assert [[w.workload for w in q.workloads] for q in p.periods] == [
                ["chat"], ["chat"], ["chat", "launch"], ["chat", "launch"]]
    assert by_period == {"launch": ([1, 1, 3, 3], 8 * QUARTER),
                         "always": ([3, 3, 3, 3], 12 * QUARTER),
                         "token": ([2, 2, 4, 4], 12 * QUARTER)}


def test_a_plan_over_periods_that_orders_nothing_writes_empty_orders() -> None:
    """Two owned nodes carry the 2 req/s all year: nothing is ordered, and plan.json still has
    ``orders: []`` and ``periods`` (a new user's re-plan with no new orders lost the key and
    their script's ``p['orders']`` raised KeyError). A single-period plan leaves both out
    (test_a_single_period_scenario_plans_exactly_as_before)."""
    held = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=2,
                     running_cost_per_node_month=50)
    p = plan(quarterly([2, 2, 2, 2], inventory=[held]))
    assert p.orders == ()
    dumped = json.loads(p.model_dump_json())
    assert dumped["orders"] == []
    assert len(dumped["periods"]) == 4
    assert dumped["horizon"]["start_from"] == "horizon"  # the scenario's own horizon.start
    assert Plan.model_validate(dumped) == p


def test_a_reservation_held_cannot_be_released() -> None:
    """Three nodes reserved until 2027-06-30 are held in quarters 0 and 1 whatever the demand
    (1 node): the plan reports two of them idle there and buys nothing until they end."""
    held = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=3, purchase="reserved",
                     ends=dt.date(2027, 6, 30), price_per_gpu_hour=0.5)
    p = plan(quarterly([1, 1, 1, 1], inventory=[held], reserved=0.3))
    assert orders(p) == [(2, 2, 1)]
    first = [g for pp in p.periods if pp.period == 0 for g in pp.gpus]
    assert [(g.gpus, g.idle_nodes) for g in first] == [(3, 2)]
    assert p.cost.per_month == pytest.approx(3 * 730 * 0.5)


def test_owned_hardware_as_a_purchase_kind() -> None:
    """An owned node: 36,000 capital over 36 months (1,000 $/month) + power (700 W × 0.5 ×
    0.1 $/kWh × 1.0 PUE × 730 h = 25.55) + hosting 100 = 1,125.55 a month, charged for the
    12 months from its arrival to the horizon's end; against on demand 730 a month it loses,
    against 1,200 it wins."""
    owned = OwnedTerms(capex_per_node=36_000, life_months=36, gpu_tdp_w=700,
                       average_utilization=0.5, price_per_kwh=0.1, pue=1.0,
                       hosting_per_node_month=100, stock_gpus=4)
    monthly = 1000 + 25.55 + 100
    assert objective(quarterly([1, 1, 1, 1], reserved=None, owned=owned)) == pytest.approx(
        4 * QUARTER)
    sc = quarterly([1, 1, 1, 1], reserved=None, owned=owned)
    dear_cloud = sc.model_copy(update={"zones": tuple(
        z.model_copy(update={"offers": tuple(o.model_copy(update={
            "on_demand": OnDemandTerms(price_per_gpu_hour=1.2 * 1000 / 730 * 1.2,
                                       stock_gpus=8)}) for o in z.offers)})
        for z in sc.zones)})
    p = plan(dear_cloud)
    (order,) = p.orders
    assert (order.purchase.value, order.nodes, order.committed_total) == ("owned", 1, 36_000)
    assert p.horizon is not None
    assert p.horizon.expected_cost == pytest.approx(12 * monthly)
    # paid inside the horizon: all the capital at the start, then 12 months of power+hosting
    assert order.cost_in_horizon == pytest.approx(36_000 + 12 * 125.55)


TWO = (DemandScenario(name="low", probability=0.5),
       DemandScenario(name="high", probability=0.5, growth=(1, 3, 3, 3)))


def test_orders_due_before_the_next_replan_are_shared() -> None:
    """Lead 4 weeks, so quarter 0 runs on demand in both scenarios (2,190). Orders serving from
    quarter 1 are due 2027-03-04, before the re-plan of 2027-04-01: one decision r for both.
    low needs 1 node, high 3, from quarter 1. With r shared: low 3,942 r (r ≥ 1), high 3,942 r
    + (3 − r)(2,190 + 3,942) (on demand in quarter 1, reserved from quarter 2). r = 1 gives
    (3,942 + 16,206) / 2 + 2,190 = 12,264, the least over r = 0..3."""
    sc = quarterly([1, 1, 1, 1], lead_weeks=4, demands=TWO)
    p = plan(sc)
    assert p.horizon is not None
    assert p.horizon.expected_cost == pytest.approx(12_264)
    shared = [o for o in p.orders if o.scenario is None]
    assert [(o.usable_period, o.nodes) for o in shared] == [(1, 1)]
    assert [(o.scenario, o.usable_period, o.nodes) for o in p.orders if o.scenario] == [
        ("high", 2, 2)]
    # each scenario on its own: low reserves 1, high 3 from quarter 1: (3,942 + 11,826)/2
    assert objective(sc, [c for c in ALL if c != "here_and_now"]) == pytest.approx(
        (3942 + 11826) / 2 + QUARTER)


def test_robust_minimises_the_worst_scenario() -> None:
    """Worst case: r = 3 shared reservations make both scenarios cost 11,826 + 2,190."""
    sc = quarterly([1, 1, 1, 1], lead_weeks=4, demands=TWO)
    p = plan(sc, robust=True)
    assert p.horizon is not None
    assert p.horizon.worst_cost == pytest.approx(11_826 + QUARTER)
    assert p.horizon.objective == "worst_case"
    assert [o.nodes for o in p.orders if o.scenario is None] == [3]


def test_order_stock_limits_only_what_is_added() -> None:
    """Two owned nodes and demand 4; the 0.45 quote may add 1 GPU, a 0.50 quote (partial
    upfront) 8: 2 owned + 1 at 0.45 + 1 at 0.50 = 8,760 × 0.95. Without the order-stock row
    the block's pool stock (held + every quote's stock) lets the cheap quote take both."""
    held = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=2,
                     running_cost_per_node_month=10)
    sc = quarterly([4, 4, 4, 4], inventory=[held])
    quotes = (ReservedTerms(price_per_gpu_hour=0.45, stock_gpus=1, commitment_months=12),
              ReservedTerms(price_per_gpu_hour=0.5, stock_gpus=8, commitment_months=12,
                            upfront="partial"))
    sc = sc.model_copy(update={"zones": tuple(z.model_copy(update={"offers": tuple(
        o.model_copy(update={"reserved": quotes}) for o in z.offers)}) for z in sc.zones)})
    assert objective(sc) == pytest.approx(8760 * 0.95)
    assert objective(sc, [c for c in ALL if c != "order_stock"]) == pytest.approx(
        2 * 8760 * 0.45)


def test_holdings_and_budget_couplings_bind() -> None:
    """Without holdings committed pools are free; a budget of 1,000 $/month per period rules
    out on demand for the second node (730 + 328.5 > 1,000) so the term is bought at 0.55."""
    sc = quarterly([2, 1, 1, 2], reserved=0.55)
    assert objective(sc, [c for c in ALL if c != "holdings"]) == pytest.approx(0)
    budget = sc.model_copy(update={"policy": sc.policy.model_copy(
        update={"monthly_budget": 900.0})})
    assert objective(budget) == pytest.approx(2 * 8760 * 0.55)
    assert objective(budget, [c for c in ALL if c != "period_budget"]) == pytest.approx(
        8760 * 0.55 + 2 * QUARTER)


MIGRATION = """
name: migrate
zones:
  - id: a
    region: r
    offers:
      - gpu: L4
        gpus_per_node: 4
        on_demand: {price_per_gpu_hour: 1.0, stock_gpus: 64}
workloads:
  - name: chat
    model: Llama-3.1-8B
    arrival: {peak_rps: 4}
    runtime: vllm-0.6
    input_tokens: {p50: 1000, p95: 1500, p99: 2000}
    output_tokens: {p50: 200, p95: 300, p99: 400}
    slo: {ttft_p95_ms: 1000, tpot_p95_ms: 50}
    allowed_gpus: [L4]
    migrations: [{from_period: 2, runtime: vllm-0.7}]
measured:
  - {model: Llama-3.1-8B, gpu: L4, runtime: vllm-0.6, precision: bf16, tp: 4, workload: chat,
     max_stable_sequences: 200, tested_peak_rps: 9.0, ttft_p95_ms: 400,
     decode_p95_ms_per_token: 30, measured_on: 2027-01-01}
horizon: {start: 2027-01-01, period_months: 3, count: 4}
policy: {measured_max_age_days: %d}
"""


def test_a_migration_expires_the_measured_row(tmp_path: Path) -> None:
    """The load test of vllm-0.6 (9 req/s per L4 TP4 replica) sizes quarters 0 and 1; from
    quarter 2 the workload runs vllm-0.7, the row no longer describes it and the analytic
    rate (lower) sizes the fleet; with a 100-day age limit the row also expires by age (in
    quarter 2, 181 days after it was measured)."""
    path = tmp_path / "m.yaml"
    path.write_text(MIGRATION % 400)
    p = plan_horizon(load_scenario(path), time_limit_s=20)
    sources = {pp.period: {a.capacity_source.value for a in pp.allocations} for pp in p.periods}
    assert sources == {0: {"measured"}, 1: {"measured"}, 2: {"analytic"}, 3: {"analytic"}}
    rates = {pp.period: {a.replica_capacity_rps for a in pp.allocations} for pp in p.periods}
    assert rates[1] == {9.0} and max(rates[2]) < 9.0
    runtime = {pp.period: pp.workloads[0].runtime for pp in p.periods}
    assert runtime == {0: "vllm-0.6", 1: "vllm-0.6", 2: "vllm-0.7", 3: "vllm-0.7"}
    path.write_text((MIGRATION % 100).replace("migrations: [{from_period: 2, runtime: "
                                              "vllm-0.7}]", "growth: [1, 1, 1, 1]"))
    aged = plan_horizon(load_scenario(path), time_limit_s=20)
    sources = {pp.period: {a.capacity_source.value for a in pp.allocations}
               for pp in aged.periods}
    assert sources[0] == {"measured"} and sources[2] == {"analytic"}


def test_a_period_under_way_ages_its_measured_rows_to_as_of(tmp_path: Path) -> None:
    """A plan made on 2027-04-20 (``policy.as_of``) over quarters from 2027-01-01: the row
    measured 2027-01-01 is 109 days old that day, past a 100-day limit, so the quarters under
    way (0 and 1) are sized by the analytic rate, as ``check --contract`` ages rows to the
    later of ``as_of`` and a period's start. Aged to the periods' starts instead (0 and 90
    days), both kept a row that had expired on the day the plan was made."""
    path = tmp_path / "m.yaml"
    path.write_text((MIGRATION % 100).replace(
        "migrations: [{from_period: 2, runtime: vllm-0.7}]", "growth: [1, 1, 1, 1]").replace(
        "policy: {measured_max_age_days: 100}",
        "policy: {measured_max_age_days: 100, as_of: 2027-04-20}"))
    sc = load_scenario(path)
    p = plan_horizon(sc, time_limit_s=20)
    sources = {pp.period: {a.capacity_source.value for a in pp.allocations} for pp in p.periods}
    assert sources == {0: {"analytic"}, 1: {"analytic"}, 2: {"analytic"}, 3: {"analytic"}}
    assert sc.rows_aged_to(dt.date(2027, 7, 1)) == dt.date(2027, 7, 1)
    assert sc.rows_aged_to(dt.date(2027, 1, 1)) == dt.date(2027, 4, 20)


def test_a_single_period_scenario_plans_exactly_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scenario without horizon, inventory or demand scenarios never reaches the planner
    over periods: ``fleetplan plan`` writes the single-period planner's plan (solve seconds
    apart), signed off by the verifier, with no ``horizon``, ``periods`` or ``orders`` key."""
    from click.testing import CliRunner

    import solver.cli.plan as plan_cli
    from inputs import scenarios_dir
    from models.plan import with_gap_limit
    from solver.capacity.table import build_capacity_table
    from solver.cli import main
    from solver.solve.strategy import plan_scenario

    def refuse(*_: object, **__: object) -> Plan:
        raise AssertionError("a single-period scenario reached the planner over periods")

    monkeypatch.setattr(plan_cli, "plan_horizon", refuse)
    path = scenarios_dir() / "tiny.yaml"
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "plan.json").read_text()
    assert all(f'"{key}"' not in text for key in ("horizon", "periods", "orders"))
    sc = load_scenario(path)
    alone = plan_scenario(sc, build_capacity_table(sc))

    def without_seconds(p: Plan) -> dict[str, Any]:
        """The plan without the wall-clock record of its solve: its seconds, each stage's."""
        dumped = p.model_dump(mode="json")
        dumped["solver"].pop("seconds")
        for stage in dumped["solver"].get("stages", []):
            stage.pop("seconds")
        return dumped

    # signed off, and recording the gap it was asked to stop at (``plan --gap``, 0.01)
    signed = with_gap_limit(alone, 0.01).model_copy(update={"verified": True})
    written = without_seconds(Plan.model_validate_json(text))
    # the command's stages before the planner's: its start-up and the capacity table
    assert [s["name"] for s in written["solver"]["stages"][:2]] == ["read", "capacity"]
    del written["solver"]["stages"][:2]
    assert written == without_seconds(signed)


DAY_NIGHT = table(row("chat", "G", 1, 1.0))


@pytest.mark.parametrize("name", ["tiny.yaml", "twenty_rps.yaml", "day_night"])
def test_the_program_over_periods_of_a_single_period_scenario_is_the_single_period_program(
        name: str) -> None:
    """Given a scenario of one peak day (one block of one month, reservations paid monthly,
    nothing held), the program over periods finds the single-period optimum: the same cost
    and the same nodes. ``day_night``: 4 req/s by day, 1 at night on one-GPU nodes, reserved
    0.6, on demand 1.0: reserved all day, on demand by day."""
    from inputs import scenarios_dir
    from solver.capacity.table import build_capacity_table
    from solver.solve.strategy import plan_scenario
    from tests.plan_fixtures import blocks, offer

    if name == "day_night":
        shape = [1.0 if 8 <= h < 20 else 0.25 for h in range(24)]
        sc = scenario([workload("chat", 4.0, shape=shape, utilization=1.0)],
                      [zone("a", offer("G", reserved=(0.6, 8), on_demand=(1.0, 8),
                                       gpus_per_node=1))],
                      gpus=[gpu("G", 1)],
                      time_blocks=blocks(("night", [*range(8), *range(20, 24)]),
                                         ("day", range(8, 20))))
        tables = DAY_NIGHT
    else:
        sc = load_scenario(scenarios_dir() / name)
        tables = build_capacity_table(sc)
    assert not sc.multi_period
    alone = plan_scenario(sc, tables, time_limit_s=20, gap=1e-6)
    over = plan_horizon(sc, table_for=lambda _: tables, time_limit_s=20, gap=1e-6)
    assert alone.status is over.status is SolveStatus.optimal
    assert over.cost.per_month == pytest.approx(alone.cost.per_month, rel=1e-9)

    def nodes(p: Plan) -> list[tuple[str, str, str, str | None, int]]:
        return sorted((n.zone, n.gpu, n.purchase.value, n.slice, n.nodes) for n in p.nodes)

    assert nodes(over) == nodes(alone)
    if name == "day_night":  # both kinds bought: elastic capacity per slice is compared too
        assert {n.purchase.value for n in alone.nodes} == {"reserved", "on_demand"}


def test_a_replan_keeps_the_orders_already_placed(tmp_path: Path) -> None:
    """Planned on 2027-01-01, the reservation serving from 2027-04-01 is due 2027-03-04. The
    re-plan on 2027-04-01 (the next quarter's horizon, demand flat at 1 node) keeps it, held
    until 2028-03-31, and orders nothing; without the earlier plan it must run quarter 0 on
    demand (too late to reserve) and reserve from the next."""
    from click.testing import CliRunner

    from models.loader import read_document, validate_as
    from solver.solve.horizon import keep_orders

    first = plan(quarterly([1, 1, 1, 1], lead_weeks=4))
    assert [(o.usable_from, o.order_by) for o in first.orders] == [
        (dt.date(2027, 4, 1), dt.date(2027, 3, 4))]
    earlier = tmp_path / "plan.json"
    earlier.write_text(first.model_dump_json())
    again = quarterly([1, 1, 1, 1], lead_weeks=4)
    again = again.model_copy(update={"horizon": Horizon(start=dt.date(2027, 4, 1),
                                                        period_months=3, count=4)})
    kept = keep_orders(again, validate_as(Plan, read_document(earlier), str(earlier)),
                       str(earlier))
    (held,) = kept.inventory
    assert (held.purchase.value, held.available_from, held.ends) == (
        "reserved", dt.date(2027, 4, 1), dt.date(2028, 3, 31))
    replanned = plan(kept)
    assert replanned.orders == ()
    assert replanned.horizon is not None and replanned.horizon.expected_cost == 0
    assert plan(again).horizon.expected_cost == pytest.approx(  # type: ignore[union-attr]
        QUARTER + 8760 * 0.45)
    # the command: a plan.json of one peak day has no orders to keep
    single = tmp_path / "single.json"
    single.write_text(first.model_copy(update={"horizon": None}).model_dump_json())
    from inputs import scenarios_dir
    from solver.cli import main

    result = CliRunner().invoke(main, ["plan", str(scenarios_dir() / "tiny.yaml"),
                                       "--existing", str(single), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "not a plan over periods" in result.output


def test_owned_nodes_run_all_day() -> None:
    """Owned capacity runs in every slice, as reserved does: one owned node held carries a
    flat demand of 1 req/s through both halves of the day, so nothing is bought (were owned
    pools planned per slice, the two halves would each need a node of the one held)."""
    from tests.plan_fixtures import blocks

    held = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=1,
                     running_cost_per_node_month=50)
    sc = quarterly([1, 1, 1, 1], inventory=[held], reserved=None)
    halves = sc.model_copy(update={"policy": sc.policy.model_copy(update={
        "time_blocks": blocks(("am", range(12)), ("pm", range(12, 24)))})})
    p = plan(halves)
    assert p.orders == () and p.horizon is not None and p.horizon.expected_cost == 0
    assert [(a.purchase.value, a.slice) for a in p.allocations] == [("owned", None)]


def test_blocks_of_equal_demand_and_holdings_run_one_fleet() -> None:
    """low and base have the same demand every quarter (2 nodes), no lead time. Orders serving
    quarter 0 are due before the re-plan of 2027-04-01, so shared (P5): quarter 0's two blocks
    are one program holding the same nodes, and the program ties their columns (no later
    quarter: an order serving from quarter 1 is each scenario's own). With low's quarter-0 block
    made to run 3 on-demand nodes, base's runs the same 3 (without the ties, none: its 2
    reserved nodes are held anyway)."""
    from models.common import PurchaseKind

    demands = (DemandScenario(name="low", probability=0.5), DemandScenario(name="base",
                                                                           probability=0.5))
    sc = quarterly([1, 1, 1, 1], peak=2, demands=demands)
    data = build_horizon_data(sc, lambda _: TABLE)
    low, base = (next(i for i, b in enumerate(data.blocks) if (b.scenario, b.period) == key)
                 for key in (("low", 0), ("base", 0)))

    def on_demand(hp: Any, name: str) -> list[Any]:
        return [y for key, y in hp.blocks[(name, 0)].v.nodes.items()
                if key.purchase is PurchaseKind.on_demand]

    def base_on_demand(ties: bool) -> float:
        hp = build_horizon_program(data, ties=ties)
        assert hp.ties == ([[low, base]] if ties else [])
        for y in on_demand(hp, "low"):
            y.lowBound = 3
        assert solve(hp.prob, "highs", 20, 1e-6).status is SolveStatus.optimal
        return sum(y.varValue for y in on_demand(hp, "base"))

    assert base_on_demand(ties=True) == 3
    assert base_on_demand(ties=False) == 0
    # the optimum is the same with them: 2 nodes reserved all year in each scenario
    assert objective(sc) == pytest.approx(2 * 8760 * 0.45)
    p = plan(sc)
    q0 = {pp.scenario: pp.allocations for pp in p.periods if pp.period == 0}
    assert q0["low"] == q0["base"]
