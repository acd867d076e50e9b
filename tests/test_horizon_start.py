"""The first fleet over periods and its bound: orders chosen to hold what the blocks ran
alone, or left to on-demand where a whole term costs more (solver/solve/order_choice.py); a
block that proved no bound bounded by its LP relaxation."""

from __future__ import annotations

import dataclasses

import pytest

from models.horizon import HeldNodes, InventoryKind
from models.scenario import Scenario
from solver.program.data import ProgramData
from solver.program.keys import PoolKey
from solver.program.periods import HorizonData, OrderKey, build_horizon_data, build_horizon_program
from solver.program.values import objective_of
from solver.program.variables import NameBook, Program, Variables
from solver.solve.highs import Progress
from solver.solve.horizon import BlockNews, _greedy_orders, horizon_start, plan_horizon
from solver.solve.order_choice import choose_orders, held_block
from tests.test_periods import QUARTER, TABLE, quarterly

# Demand 1, 1, 1, 2 nodes; a 12-month reservation at 0.45 costs 8,760 × 0.45 = 3,942 (985.5 a
# quarter over four), on demand 2,190 a quarter. Priced at 985.5 a quarter, every block runs
# reserved: 1 node in quarters 0-2 and 2 in quarter 3.
GROWTH = [1, 1, 1, 2]


def test_a_term_bought_for_its_last_quarter_is_left_to_on_demand() -> None:
    """Holding the second node in quarter 3 takes a term (3,942) where on demand costs 2,190:
    the choice orders one reservation from quarter 0 and leaves the rest to on-demand; buying
    what each block ran (cheapest per quarter held) orders two terms from quarter 0 (7,884)."""
    from models.common import PurchaseKind

    data = build_horizon_data(quarterly(GROWTH), lambda _: TABLE)
    pool = PoolKey("a", "G", PurchaseKind.reserved)
    running = {("base", q, pool): n for q, n in enumerate(GROWTH)}
    chosen, timed = choose_orders(data, running, "highs")
    assert chosen is not None and not timed
    assert [(k.arrival, n) for (_, k), n in chosen.items()] == [(0, 1)]
    greedy = _greedy_orders(data, running)
    assert greedy is not None
    assert sorted((k.arrival, n) for (_, k), n in greedy.items()) == [(0, 2)]
    # planned again with what the chosen orders hold, quarter 3 runs its second node on demand
    last = next(b for b in data.blocks if b.period == 3)
    held = held_block(data, last, chosen)
    reserved = next(o for o in held.offers if o.purchase is PurchaseKind.reserved)
    assert (reserved.price_per_gpu_hour, reserved.stock_gpus) == (0.0, 1)


def test_the_first_fleet_is_the_optimum_here() -> None:
    """The start the joint solve gets costs the optimum, 3,942 + 2,190 (buying what each
    block ran: 2 × 3,942)."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, bound, _, _ = horizon_start(hp, "highs", 10.0, 1e-6)
    assert start is not None and bound is not None
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(8760 * 0.45 + QUARTER)
    assert bound <= 8760 * 0.45 + QUARTER + 1e-6


def test_a_block_without_a_bound_of_its_own_is_bounded_by_its_lp_relaxation() -> None:
    """A block of 1.5 req/s on one-GPU nodes of 1 req/s: whole nodes cost 2 on-demand nodes
    a month (1,460); the relaxation runs 1.5 of them (1,095), below the optimum, above 0."""
    from solver.solve.block_plans import lp_bound

    data = build_horizon_data(quarterly([1.5], reserved=None), lambda _: TABLE)
    (block,) = data.blocks
    assert lp_bound(block.data, "highs", 10.0) == pytest.approx(1.5 * 730)


def test_a_shared_block_planned_with_dedicated_pools_holds_in_its_shared_program(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A block with shared nodes given less than ``SHARED_AFTER_S`` whose LP-support step finds
    nothing: its dedicated-pool fleet, as values of the shared program, breaks none of its rows;
    its own bound is dropped (a dedicated-pool bound does not bound shared nodes), so the LP
    relaxation bounds it."""
    from solver.program.values import violated_rows
    from solver.solve import block_plans
    from solver.solve.block_plans import NOT_PLANNED, SHARED_AFTER_S, plan_block
    from solver.solve.horizon import _priced_block

    monkeypatch.setattr(block_plans, "lp_support_block", lambda *a, **k: (None, None, NOT_PLANNED))

    data = build_horizon_data(quarterly([3.5]), lambda _: TABLE)
    priced, _ = _priced_block(data, data.blocks[0])
    assert priced.share_nodes
    program, values, outcome = plan_block(priced, "highs", SHARED_AFTER_S / 4, 1e-6)
    assert values is not None and outcome.has_solution and outcome.report.bound is None
    assert violated_rows(program, values) == []
    assert sum(values[y.name] for y in program.v.nodes.values()) == 4  # 3.5 req/s, 1 per node


def test_a_block_takes_a_cheaper_fleet_of_its_period_that_holds_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Was (qa3 F1): a block stopped at its time limit kept a dearer fleet than a block of
    the same period with more demand found, though that fleet holds it too — the low demand
    scenario then ran more on demand than base in the same quarter. Here the low block's own
    solve is made to return 3 nodes too many; it takes base's fleet."""
    from models.common import PurchaseKind
    from models.horizon import DemandScenario
    from solver.solve import block_plans
    from solver.solve.horizon import _priced_block

    demands = (DemandScenario(name="low", probability=0.5, growth=(1, 0.5, 0.5, 0.5)),
               DemandScenario(name="base", probability=0.5))
    data = build_horizon_data(quarterly([1, 1, 1, 1], peak=2, reserved=None,
                                        demands=demands), lambda _: TABLE)
    priced = [_priced_block(data, b)[0] for b in data.blocks]
    low, base = (next(i for i, b in enumerate(data.blocks) if (b.scenario, b.period) == key)
                 for key in (("low", 1), ("base", 1)))
    real = block_plans.plan_block

    def dearer(block: object, *args: object) -> object:
        program, values, outcome = real(block, *args)  # type: ignore[arg-type]
        if block is priced[low] and values is not None:
            y = next(y for k, y in program.v.nodes.items()
                     if k.purchase is PurchaseKind.on_demand)
            values = {**values, y.name: values.get(y.name, 0.0) + 3}
        return program, values, outcome

    monkeypatch.setattr(block_plans, "plan_block", dearer)
    plans = block_plans.plan_blocks(data, priced, "highs", 20.0, 1e-6)
    nodes = {i: sum(v for name, v in plans.values.items() if name.startswith(f"b{i}_y_"))
             for i in (low, base)}  # y_…: the nodes of a pool
    assert plans.complete
    assert nodes[low] == nodes[base] == 2  # base's 2 nodes, not low's own 1 + 3


def test_a_block_stopped_by_its_node_limit_is_the_same_beside_other_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A block of quarterly.yaml that HiGHS does not prove in a few nodes (its second quarter,
    where orders arrive), stopped after 3 nodes: ``feasible`` (its search limit), not
    ``time_limit``, and the same fleet alone and with two busy processes beside it. Was: a
    block's share of the time decided where its solve stopped, so the fleet changed with the
    load."""
    import subprocess
    import sys

    from inputs import scenarios_dir
    from models.loader import load_scenario
    from models.plan import SolveStatus
    from solver.capacity.table import cached_tables
    from solver.solve import block_plans
    from solver.solve.clock import Deadline
    from solver.solve.horizon import _priced_block

    monkeypatch.setattr(block_plans, "BLOCK_NODES", 3)
    sc = load_scenario(scenarios_dir() / "quarterly.yaml")
    data = build_horizon_data(sc, cached_tables(sc.gpus_sold_or_held()))
    block = next(b for b in data.blocks if b.period == 1)
    priced, _ = _priced_block(data, block)
    program = block_plans.build_program(priced, families=block_plans.BLOCK_FAMILIES)
    assert len(program.v.replicas) <= block_plans.replica_columns(priced)
    assert block_plans.is_direct(priced, "highs") and not block_plans.is_direct(priced, "cbc")
    runs = [block_plans.direct_block(priced, Deadline(600.0), 1e-6)]
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        runs.append(block_plans.direct_block(priced, Deadline(600.0), 1e-6))
    finally:
        for p in busy:
            p.kill()
            p.wait()
    for _, values, outcome in runs:
        assert outcome.status is SolveStatus.feasible and values is not None
        assert outcome.report.bound is not None and outcome.report.objective is not None
        assert outcome.report.bound < outcome.report.objective * (1 - block_plans.BLOCK_START_GAP)
    assert runs[0][1] == runs[1][1]


def test_a_plan_over_periods_stopped_by_its_time_limit_says_so() -> None:
    """The time limit is a safety stop for plans over periods: one it cuts short says
    ``time_limit`` (its fleet depends on the machine), never the work-limited ``feasible``.
    Spent before any stage ends (1 ms: the build alone takes longer), no stage runs past it
    and the plan is the fallback fleet, said so, which the verifier signs off in every period
    of every demand scenario. Was: the re-plan of quarterly_q2.yaml at ``--time-limit 20``
    under load ended "no fleet found"."""
    from inputs import scenarios_dir
    from models.common import PurchaseKind
    from models.loader import load_scenario
    from models.plan import SolveStatus
    from solver.capacity.table import cached_tables
    from solver.cli.plan import fallback_lines
    from solver.cli.signoff import period_checks
    from solver.outputs.labels import status_label
    from solver.solve.horizon import plan_horizon
    from solver.survivability.verify import verify_plan

    sc = load_scenario(scenarios_dir() / "quarterly.yaml")
    tables = cached_tables(sc.gpus_sold_or_held())
    plan = plan_horizon(sc, time_limit_s=1e-3, table_for=tables)
    assert plan.status is SolveStatus.time_limit and plan.solver.fallback
    assert len(plan.periods) == 12 and plan.orders
    # the greedy fleets keep to stock, and run the owned inventory before buying
    assert any(a.purchase is PurchaseKind.owned for p in plan.periods for a in p.allocations)
    checks = list(period_checks(plan, sc, tables))
    assert len(checks) == 12
    assert all(verify_plan(f, s, t, over_periods=True) == [] for _, f, s, t in checks)
    assert status_label(plan.status, plan.solver) == "Stopped at the time limit, fallback fleet"
    assert fallback_lines(plan) and "fallback fleet" in fallback_lines(plan)[0]


def test_a_plan_out_of_time_takes_the_fallback_fleet() -> None:
    """No stage has time (1 ms): each block's greedy fleet, priced as the blocks are (a
    reservation at 985.5 a quarter beats on demand at 2,190), runs 1, 1, 1, 2 reserved nodes.
    The orders bought to hold them would be two 12-month terms from quarter 0, 2 × 3,942 =
    7,884; the orders chosen for them are one, with quarter 3's second node run on demand:
    3,942 + 2,190 = 6,132, the cheaper. No stage proved a bound, so the plan carries the joint
    LP relaxation's, 6,132 (here the optimum itself: below), and says it stopped at its time
    limit."""
    from models.plan import SolveStatus
    from solver.solve.horizon import plan_horizon

    plan = plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=1e-3,
                        gap=1e-6)
    assert plan.status is SolveStatus.time_limit and plan.solver.fallback
    assert plan.horizon is not None
    assert plan.horizon.expected_cost == pytest.approx(3942 + 2190)
    assert [(o.usable_period, o.nodes) for o in plan.orders] == [(0, 1)]
    assert plan.solver.bound == pytest.approx(3942 + 2190)
    assert plan.solver.gap == pytest.approx(0.0, abs=1e-9)
    assert [s.name for s in plan.solver.stages][-2:] == ["lp", "fallback"]


def test_a_fleet_found_before_the_clock_stopped_gives_way_to_a_cheaper_fallback() -> None:
    """A stage cut by the clock left a fleet costing 1,000,000 (a block's solve stopped at a
    poor first fleet; quarterly.yaml at --time-limit 60, load 8: 5.84 M where the fallback
    costs 1.46–1.66 M): the fallback fleet (the case above's, 3,942 + 2,190 = 6,132) is taken,
    said to be the fallback, with the outcome's bound; one as cheap as the fallback stays."""
    from models.plan import FALLBACK_STAGE, SolverReport, SolveStatus
    from solver.solve.backends import SolveOutcome
    from solver.solve.horizon import cheaper_fallback, joint_program

    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    program = joint_program(hp)
    dear = SolveOutcome(SolveStatus.time_limit, SolverReport(
        name="highs", seconds=1.0, objective=1_000_000.0, bound=6000.0, gap_limit=0.01), True)
    kept = cheaper_fallback(program, hp, (), 0.0, dear)
    assert (kept.report.name, kept.report.gap_limit) == ("highs", 0.01)  # the outcome's
    assert kept.status is SolveStatus.time_limit and kept.has_solution
    assert kept.report.objective == pytest.approx(3942 + 2190)
    assert objective_of(program, {v.name: float(v.varValue or 0.0)
                                  for v in program.prob.variables()}) == pytest.approx(6132)
    assert kept.report.bound == 6000.0
    assert kept.report.gap == pytest.approx(132 / 6132)
    assert [s.name for s in kept.report.stages] == [FALLBACK_STAGE]
    cheap = SolveOutcome(SolveStatus.time_limit, SolverReport(
        name="highs", seconds=1.0, objective=6132.0, bound=6000.0), True)
    assert cheaper_fallback(program, hp, (), 0.0, cheap) is cheap


def test_a_fallback_where_no_stage_found_a_fleet_keeps_only_the_solvers_name() -> None:
    """No fleet in time: the fallback's (6,132, the case above's) with the best bound known,
    max(6,000 given, 5,000 the solve's) = 6,000; of the outcome's report only the solver's
    name is kept (its ``gap_limit`` is not, unlike :func:`cheaper_fallback`'s)."""
    from models.plan import FALLBACK_STAGE, SolverReport, SolveStatus
    from solver.solve.backends import SolveOutcome
    from solver.solve.horizon import fallback_outcome, joint_program

    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    program = joint_program(hp)
    none = SolveOutcome(SolveStatus.time_limit, SolverReport(
        name="highs", seconds=1.0, bound=5000.0, gap_limit=0.01), False)
    found = fallback_outcome(program, hp, (), 6000.0, 0.0, none)
    assert found.status is SolveStatus.time_limit and found.has_solution
    assert found.report.objective == pytest.approx(3942 + 2190)
    assert found.report.bound == 6000.0
    assert found.report.gap == pytest.approx(132 / 6132)
    assert [s.name for s in found.report.stages] == [FALLBACK_STAGE]
    assert (found.report.name, found.report.gap_limit) == ("highs", None)


def test_only_a_fleet_far_from_its_bound_is_checked_against_the_fallback() -> None:
    """The fallback's two builds run past the time limit: a fleet within
    ``FALLBACK_CHECK_GAP`` of its bound (every × 25 plan, 2–4 %) is not checked; one far from
    it, or without a bound, is."""
    from models.plan import SolverReport, SolveStatus
    from solver.solve.backends import SolveOutcome
    from solver.solve.horizon import FALLBACK_CHECK_GAP, fallback_may_be_cheaper

    def outcome(gap: float | None, bound: float | None) -> SolveOutcome:
        return SolveOutcome(SolveStatus.time_limit, SolverReport(
            name="highs", seconds=1.0, objective=100.0, bound=bound, gap=gap), True)

    assert not fallback_may_be_cheaper(outcome(0.03, 97.0))
    assert not fallback_may_be_cheaper(outcome(FALLBACK_CHECK_GAP, 75.0))
    assert fallback_may_be_cheaper(outcome(0.6, 40.0))
    assert fallback_may_be_cheaper(outcome(None, None))


def test_a_budget_over_periods_no_plan_was_found_within_says_what_the_periods_cost() -> None:
    """The plan above with a budget of 500 a month per period (P6): no stage has time, and the
    fallback fleet (two reserved nodes held all year, 2 × 0.45 × 730 = 657 a month in every
    quarter) breaks the budget, so there is no fleet. Before, the plan said only "no fleet
    found"; now what the periods cost without the budget, and by how much the dearest is over."""
    from models.plan import SolveStatus
    from solver.solve.horizon import plan_horizon

    sc = quarterly(GROWTH)
    sc = sc.model_copy(update={"policy": sc.policy.model_copy(
        update={"monthly_budget": 500.0})})
    plan = plan_horizon(sc, table_for=lambda _: TABLE, time_limit_s=1e-3, gap=1e-6)
    assert plan.status is SolveStatus.time_limit and not plan.allocations
    [short] = plan.diagnosis
    assert (short.requirement, short.unit) == ("budget", "currency/month")
    assert short.amount == pytest.approx(2 * 0.45 * 730 - 500)
    assert "the periods cost 657 USD/month each, 4 of 4 above the budget, the dearest period 3 " \
           "(2027-10-01) 157 over it: a budget of 657 holds that plan" in short.message


def test_blocks_too_large_to_solve_whole_are_relaxed_first_and_planned_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the blocks are too large to be solved whole under a node limit (here the size
    limit is set to 0), the first pass is each block's LP relaxation, not a plan: priced at
    985.5 a quarter the relaxations run 1, 1, 1, 2 reserved nodes (bound 3 × 985.5 + 1,971 =
    4,927.5); the orders chosen against them (one reservation from quarter 0); then the blocks
    are planned once, with what it holds: the optimum, 3,942 + 2,190."""
    from solver.solve import block_plans, horizon

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    calls: list[int] = []
    real = horizon.plan_blocks

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(horizon, "plan_blocks", counted)
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, bound, timed, _ = horizon_start(hp, "highs", 10.0, 1e-6)
    assert start is not None and timed and len(calls) == 1
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(8760 * 0.45 + QUARTER)
    assert bound == pytest.approx(5 * 8760 * 0.45 / 4)  # 5 node-quarters at 985.5


def test_blocks_solved_whole_are_not_cut_by_the_time_for_shares() -> None:
    """``share_limit_s`` is the time of what is planned in shares of the time; blocks solved
    whole under their node limits run to them, the time limit a safety stop: with no time at
    all for shares, the blocks are planned again with the orders chosen and the plan is the
    optimum, 3,942 + 2,190 (cut by the shares' clock, it was the first start's two terms,
    7,884, stopped at the time limit)."""
    from models.plan import SolveStatus
    from solver.solve.horizon import plan_horizon

    plan = plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=20,
                        share_limit_s=0.001, gap=1e-6)
    assert plan.status is SolveStatus.optimal
    assert plan.horizon is not None
    assert plan.horizon.expected_cost == pytest.approx(8760 * 0.45 + QUARTER)


def test_a_dedicated_program_of_blocks_too_large_to_solve_whole_is_solved_cold_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With no shared nodes and blocks planned in shares of the time (the size limit set to
    0), HiGHS is first given the joint program alone: here it proves the optimum, 3,942 +
    2,190, and the blocks are never planned."""
    from models.plan import SolveStatus
    from solver.solve import block_plans, horizon

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    calls: list[int] = []

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        raise AssertionError("the blocks' start ran")

    monkeypatch.setattr(horizon, "horizon_start", counted)
    plan = horizon.plan_horizon(_dedicated(), table_for=lambda _: TABLE, time_limit_s=20,
                                gap=1e-6)
    assert not calls and plan.status is SolveStatus.optimal
    assert plan.horizon is not None
    assert plan.horizon.expected_cost == pytest.approx(8760 * 0.45 + QUARTER)


def _dedicated() -> Scenario:
    """The scenario of these tests with dedicated pools (one workload: the same program)."""
    sc = quarterly(GROWTH)
    return sc.model_copy(update={"policy": sc.policy.model_copy(update={"share_nodes": False})})


def _on_demand_only() -> dict[str, float]:
    """A fleet of the joint program ordering nothing: every node on demand, 5 node-quarters
    (10,950)."""
    from solver.solve.backends import solve

    hp = build_horizon_program(build_horizon_data(_dedicated(), lambda _: TABLE))
    for var in hp.orders.values():
        var.upBound = 0
    assert solve(hp.prob, "highs", 20, 1e-6).has_solution
    return {v.name: float(v.varValue or 0.0) for v in hp.prob.variables()}


@pytest.mark.parametrize("blocks_find", [True, False])
def test_a_cold_solve_abandoned_at_its_check_is_kept_unless_something_cheaper_is_found(
        monkeypatch: pytest.MonkeyPatch, blocks_find: bool) -> None:
    """A cold joint solve abandoned at its check (far from its bound) leaves the rest of the
    time to the blocks' start and the joint solve after it; its fleet is a start too: the plan
    is the blocks' optimum (6,132) where they find it, and never dearer than the cold fleet
    (10,950 on demand) where they find nothing."""
    from models.plan import SolveStatus
    from solver.solve import block_plans, horizon

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    values = _on_demand_only()
    cold = horizon.ColdSolve(horizon.SolveOutcome(
        SolveStatus.time_limit, horizon.SolverReport(name="highs", seconds=1.0,
                                                     objective=5 * QUARTER, bound=1000.0),
        True), values, abandoned=True)
    monkeypatch.setattr(horizon, "cold_joint_solve", lambda *a, **k: cold)
    if not blocks_find:
        monkeypatch.setattr(horizon, "horizon_start",
                            lambda *a, **k: horizon.Start(None, None, True))
        monkeypatch.setattr(horizon, "JOINT_NODES", 0)
        monkeypatch.setattr(horizon, "joint_solve", lambda *a, **k: horizon.SolveOutcome(
            SolveStatus.time_limit, horizon.SolverReport(name="highs", seconds=0.0), False))
    plan = horizon.plan_horizon(_dedicated(), table_for=lambda _: TABLE, time_limit_s=20,
                                gap=1e-6)
    assert plan.horizon is not None
    expected = 8760 * 0.45 + QUARTER if blocks_find else 5 * QUARTER
    assert plan.horizon.expected_cost == pytest.approx(expected)
    assert plan.solver.bound is not None and plan.solver.bound >= 1000.0 - 1e-6


def test_a_shared_block_is_planned_on_its_lp_support_first() -> None:
    """A block of 1.5 req/s on one-GPU nodes of 1 req/s, shared nodes: the relaxation runs 1.5
    on-demand nodes (1,095, the bound); restricted to the columns it runs, the block's optimum,
    2 nodes (1,460), holds in the block's program; ``plan_block`` takes it."""
    from solver.solve.block_plans import holds_in, lp_support_block, plan_block

    data = build_horizon_data(quarterly([1.5], reserved=None), lambda _: TABLE)
    (block,) = data.blocks
    assert block.data.share_nodes
    program, values, outcome = lp_support_block(block.data, 10.0, 0.01)
    assert values is not None and holds_in(program, values)
    assert outcome.report.objective == pytest.approx(2 * 730)
    assert outcome.report.bound == pytest.approx(1.5 * 730)
    _, planned, _ = plan_block(block.data, "highs", 10.0, 0.01)
    assert planned == values


def widened_block() -> ProgramData:
    """A block whose LP support holds no fleet (the widened test's): two workloads of 0.5
    req/s, one-GPU nodes of 1 req/s per replica, shared nodes; z1 sells one node at 1 $/GPU-h,
    z2 eight at 2 $/GPU-h."""
    from models.offers import Offer, OnDemandTerms
    from solver.program.data import build_program_data
    from tests.plan_fixtures import gpu, row, scenario, table, workload, zone

    def on_demand(price: float, stock: int) -> Offer:
        return Offer(gpu="G", gpus_per_node=1,
                     on_demand=OnDemandTerms(price_per_gpu_hour=price, stock_gpus=stock))

    sc = scenario([workload("a", 0.5, utilization=1.0), workload("b", 0.5, utilization=1.0)],
                  [zone("z1", on_demand(1.0, 1)), zone("z2", on_demand(2.0, 8))],
                  gpus=[gpu("G", 1)])
    return build_program_data(sc, table(row("a", "G", 1, 1.0), row("b", "G", 1, 1.0)))


def test_a_support_without_a_fleet_is_widened_to_the_configurations_it_runs() -> None:
    """Two workloads of 0.5 req/s, one-GPU nodes of 1 req/s per replica, shared nodes; zone z1
    sells one node at 1 $/GPU-h, z2 eight at 2 $/GPU-h. The relaxation runs half a replica of
    each on z1's one node (730 a month, the bound); whole replicas need two nodes there, so its
    support holds no fleet. Widened to those configurations in every zone, the block's optimum:
    one node in each zone, 730 + 1,460 = 2,190."""
    from solver.solve.block_plans import holds_in, lp_support_block

    data = widened_block()
    assert data.share_nodes
    program, values, outcome = lp_support_block(data, 10.0, 0.01)
    assert values is not None and holds_in(program, values)
    assert outcome.report.objective == pytest.approx(730 + 2 * 730)
    assert outcome.report.bound == pytest.approx(730)
    nodes = {k.zone: round(values[y.name]) for k, y in program.v.nodes.items()}
    assert nodes == {"z1": 1, "z2": 1}


@pytest.mark.parametrize("joint_proves", [True, False])
def test_a_plan_over_periods_reports_the_best_bound_any_stage_proved(
        monkeypatch: pytest.MonkeyPatch, joint_proves: bool) -> None:
    """Blocks too large to solve whole (size limit 0): the blocks' bound is their LP
    relaxations', 5 node-quarters at 985.5 = 4,927.5; the joint solve from their fleet proves
    the optimum, 3,942 + 2,190 = 6,132, and that bound is the plan's. Where the joint solve
    proves less (stopped before its root, as HiGHS does at a time limit: bound 0), the plan
    keeps the blocks' 4,927.5. The stages say what each proved, in order."""
    from models.plan import SolveStatus
    from solver.solve import block_plans, horizon

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    real = horizon.joint_solve
    own: list[float | None] = []

    def recorded(*args: object, **kwargs: object) -> horizon.SolveOutcome:
        outcome = real(*args, **kwargs)  # type: ignore[arg-type]
        if not joint_proves:  # as if stopped before its root: nothing proven
            outcome = dataclasses.replace(outcome, report=outcome.report.model_copy(
                update={"bound": 0.0}))
        own.append(outcome.report.bound)
        return outcome

    monkeypatch.setattr(horizon, "joint_solve", recorded)
    # the joint LP relaxation's bound (the optimum here) left out: the blocks' and the joint
    # solve's are the ones compared
    monkeypatch.setattr(horizon, "early_lp_bound", lambda *_: None)
    plan = horizon.plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=20,
                                gap=1e-6)
    assert plan.horizon is not None and plan.solver.bound is not None
    optimum, relaxed = 8760 * 0.45 + QUARTER, 5 * 8760 * 0.45 / 4
    assert plan.horizon.expected_cost == pytest.approx(optimum)
    assert [s.name for s in plan.solver.stages] == [
        horizon.CAPACITY_STAGE, horizon.BUILD_STAGE, horizon.BLOCKS_STAGE, horizon.JOINT_STAGE]
    _, build, blocks, joint = plan.solver.stages
    assert build.cost_after is None and build.bound_after is None  # the build proves nothing
    assert blocks.bound_after == pytest.approx(relaxed)
    assert relaxed - 1e-6 <= plan.solver.bound <= plan.horizon.expected_cost + 1e-6
    assert len(own) == 1 and own[0] is not None
    if joint_proves:
        assert own[0] > relaxed and plan.solver.bound == pytest.approx(own[0])
        assert plan.solver.bound == pytest.approx(optimum, rel=1e-6)
        assert plan.status is SolveStatus.optimal
    else:
        assert plan.solver.bound == pytest.approx(relaxed)
        assert plan.solver.gap == pytest.approx(1 - relaxed / optimum)
        assert plan.status is SolveStatus.time_limit
    assert joint.bound_after == pytest.approx(plan.solver.bound)


def test_a_fleet_polished_slice_by_slice_rounds_each_hour_at_its_cheapest() -> None:
    """:func:`~tests.plan_fixtures.three_blocks` (10, 30 and 20 req/s in three 8-hour slices, a
    replica holds 10): one reserved replica and 3, 3, 3 on demand (1,460 + 9 × 730) re-solved
    one slice at a time with the reserved replica held: 0, 2, 1 on demand, the optimum 3,650.
    With no reserved replica held the slices can only round their own hours: 1, 3, 2 (6 × 730),
    dearer than the optimum, as it was — the reserved fleet is not the polish's to change."""
    from solver.solve.block_plans import holds_in, polish_slices
    from solver.solve.clock import Deadline
    from solver.solve.highs import model_of, run
    from tests.plan_fixtures import fleet, three_blocks

    program = three_blocks()
    model = model_of(program)
    relaxed = run(model, Deadline(10.0), 10.0, 0.0, relaxation=True)
    assert relaxed.x is not None
    start = model.vector(fleet(program, 1, {"a": 3, "b": 3, "c": 3}))
    assert float(model.cost @ start) == pytest.approx(1460 + 9 * 730)
    polished = polish_slices(program, model, start, relaxed.x, Deadline(30.0))
    assert float(model.cost @ polished) == pytest.approx(3650)
    assert holds_in(program, model.named(polished))
    no_reserved = model.vector(fleet(program, 0, {"a": 2, "b": 3, "c": 3}))
    kept = polish_slices(program, model, no_reserved, relaxed.x, Deadline(30.0))
    assert float(model.cost @ kept) == pytest.approx(6 * 730)


def test_each_slice_of_the_polish_stops_at_its_gap_of_its_own_cost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The polish of :func:`test_a_fleet_polished_slice_by_slice_rounds_each_hour_at_its_cheapest`
    with ``of_slice`` hands HiGHS each slice's gap as a share of the slice's own cost, not of
    the whole block's
    (HiGHS's relative gap counts the held columns' cost too): each slice's 3 on-demand replicas
    cost 3 × 730 = 2,190 of the fleet's 1,460 + 9 × 730 = 8,030, so the first slice stops at
    0.02 × 2,190 / 8,030; that slice re-solved to 0, the next at 0.02 × 2,190 / 5,840, the last
    at 0.02 × 2,190 / 4,380 (at 0.02 of the whole, an hour of 24 could stop ~48 % above its
    optimum)."""
    from solver.solve import block_plans
    from solver.solve.clock import Deadline
    from solver.solve.highs import model_of, run
    from tests.plan_fixtures import fleet, three_blocks

    program = three_blocks()
    model = model_of(program)
    relaxed = run(model, Deadline(10.0), 10.0, 0.0, relaxation=True)
    assert relaxed.x is not None
    gaps: list[float] = []

    def spy(*args: object, **kwargs: object) -> object:
        gaps.append(float(args[3]))  # type: ignore[arg-type]
        return run(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(block_plans, "run", spy)
    start = model.vector(fleet(program, 1, {"a": 3, "b": 3, "c": 3}))
    polished = block_plans.polish_slices(program, model, start, relaxed.x, Deadline(30.0),
                                         gap=0.02, of_slice=True)
    assert float(model.cost @ polished) == pytest.approx(3650)
    assert gaps == pytest.approx([0.02 * 2190 / 8030, 0.02 * 2190 / 5840, 0.02 * 2190 / 4380])


def polish_calls(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A list that grows by one at each call of ``block_plans.polish_slices`` (which still
    runs)."""
    from solver.solve import block_plans

    calls: list[float] = []
    real = block_plans.polish_slices

    def spy(*args: object) -> object:
        calls.append(1.0)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(block_plans, "polish_slices", spy)
    return calls


@pytest.mark.parametrize("polish", [True, False])
def test_a_shared_block_is_polished_in_what_its_share_leaves(
        monkeypatch: pytest.MonkeyPatch, polish: bool) -> None:
    """``plan_block`` gives a shared block's LP-support fleet what its share leaves to
    :func:`~solver.solve.block_plans.polish_slices` (where ``POLISH``), and keeps its fleet."""
    from solver.solve import block_plans

    calls = polish_calls(monkeypatch)
    monkeypatch.setattr(block_plans, "POLISH", polish)
    data = build_horizon_data(quarterly([1.5], reserved=None), lambda _: TABLE)
    (block,) = data.blocks
    program, values, outcome = block_plans.plan_block(block.data, "highs", 10.0, 0.01)
    assert values is not None and block_plans.holds_in(program, values)
    assert outcome.report.objective == pytest.approx(2 * 730)
    assert len(calls) == (1 if polish else 0)


@pytest.mark.parametrize("widen_pass", [True, False])
def test_a_widened_restriction_s_fleet_is_polished_only_in_its_own_time(
        monkeypatch: pytest.MonkeyPatch, widen_pass: bool) -> None:
    """The support of the widened test's block holds no fleet; the widened restriction proves
    its optimum at once and, where ``WIDEN_PASS``, the rest of its own 10 s re-solves the fleet
    hour by hour (the optimum stays); the polish's own seconds (``polish_s``) are not taken for
    it (medium × 1's blocks, all widened, were dearer with those seconds taken)."""
    from solver.solve import block_plans

    calls = polish_calls(monkeypatch)
    monkeypatch.setattr(block_plans, "WIDEN_PASS", widen_pass)
    data = widened_block()
    _, values, outcome = block_plans.lp_support_block(data, 10.0, 0.01, polish_s=10.0)
    assert values is not None and outcome.report.objective == pytest.approx(730 + 1460)
    assert len(calls) == (1 if widen_pass else 0)


def test_workers_are_capped_at_the_cores_so_one_core_plans_blocks_one_after_the_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--workers 64`` on a machine of one core: more processes would only share it (each
    block's spare seconds sized for a core of its own), so the blocks are planned here, one
    after the other (no worker pool), to the same optimum."""
    from solver.solve import block_plans, workers
    from solver.solve.clock import Deadline

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    monkeypatch.setattr(workers, "machine_cores", lambda: 1)
    pools: list[int] = []
    monkeypatch.setattr(block_plans, "in_workers",
                        lambda programs, n, *a: pools.append(n) or {})  # type: ignore[func-returns-value]
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, _, _, _ = horizon_start(hp, "highs", 20.0, 1e-6, deadline=Deadline(60.0),
                                       workers=64)
    assert pools == []
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert start is not None
    assert objective_of(program, start) == pytest.approx(8760 * 0.45 + QUARTER)


def test_blocks_planned_in_worker_processes_plan_as_one_after_the_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above's blocks (too large to solve whole: the size limit set to 0) planned in
    two worker processes (``workers=2``): the same optimum, 3,942 + 2,190; each block's plan
    is its own program's (the results are keyed by block, not by the order the workers end),
    and equal to the plan of that block alone."""
    from models.common import PurchaseKind
    from solver.solve import block_plans, workers
    from solver.solve.clock import Deadline

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    monkeypatch.setattr(workers, "machine_cores", lambda: 2)  # as on any machine of 2+ cores
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, _, timed, (plans,) = horizon_start(hp, "highs", 20.0, 1e-6,
                                              deadline=Deadline(60.0), workers=2)
    assert start is not None and timed
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(8760 * 0.45 + QUARTER)
    pool = PoolKey("a", "G", PurchaseKind.reserved)
    chosen, _ = choose_orders(hp.data, {("base", q, pool): n for q, n in enumerate(GROWTH)},
                              "highs")
    assert chosen is not None
    held = [held_block(hp.data, b, chosen) for b in hp.data.blocks]
    planned = block_plans.in_workers(held, 2, 20.0, 1e-6, Deadline(60.0))
    assert sorted(planned) == list(range(len(held)))
    for k, (own, values, _) in planned.items():
        assert own is not None and own.data == held[k] and values is not None
        alone, by_itself, _ = block_plans.plan_block(held[k], "highs", 10.0, 1e-6)
        assert block_plans._cost(own, values) == pytest.approx(
            block_plans._cost(alone, by_itself or {}))
    assert len({round(block_plans._cost(p[0], p[1] or {})) for p in planned.values()
                if p[0] is not None}) > 1  # blocks that differ: a mix-up would show
    assert plans.complete


def test_each_block_planned_is_told_to_progress_by_its_scenario_and_period() -> None:
    """A plan whose blocks take minutes says which it plans (a new user's forecast-sized plan
    printed 300 s of "no fleet yet [blocks]"): one message per distinct block each pass,
    naming its demand scenario and its period's first day. Demand 1, 1, 1, 2: quarters 0-2
    are one block, quarter 3 another; planned alone, then again with the orders chosen."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    told: list[str] = []
    horizon_start(hp, "highs", 10.0, 1e-6, on_block=told.append)
    assert told == ["block 1 of 2: base, 2027-01-01", "block 2 of 2: base, 2027-10-01"] * 2


def test_each_block_s_own_solve_is_told_to_progress() -> None:
    """A new user's one-block plan printed "no fleet yet  bound –" for 76 s while its block's
    solve had a fleet and a bound: each block's own solve reports them, per month as its
    program counts them. Demand 1, 1, 1, 2 (GROWTH), reserved priced at 985.5 a quarter
    (328.5 a month): planned alone, quarters 0-2 run one node (328.5), quarter 3 two (657);
    with the one order chosen held (free), quarters 0-2 buy nothing elastic and quarter 3 its
    second node on demand (730 a month). Several blocks: no figure bounds the whole plan. The
    orders that hold what the first pass ran (two terms, 7,884) make a fleet of the whole
    plan, told as soon as it is known."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    news: list[BlockNews] = []
    fleets: list[float] = []
    horizon_start(hp, "highs", 10.0, 1e-6, on_block_news=news.append, on_fleet=fleets.append)
    assert fleets == [pytest.approx(2 * 3942.0)]
    ended = [n for n in news if n.cost is not None]
    alone = [(n.cost, n.bound) for n in ended if not n.held]
    held = [(n.cost, n.bound) for n in ended if n.held]
    assert alone[-2:] == [pytest.approx((328.5, 328.5)), pytest.approx((657.0, 657.0))]
    assert held[-2:] == [pytest.approx((0.0, 0.0)), pytest.approx((730.0, 730.0))]
    assert all(n.plan_bound is None for n in news)
    assert ended[-2].text() == ": its own program (orders held): 0/month, bound 0"
    assert ended[-1].text() == ": its own program (orders held): 730/month, bound 730, gap 0.0%"


def test_a_block_that_is_the_whole_plan_tells_the_plan_s_bound() -> None:
    """One period, one demand scenario, an owned node held: the block is the whole plan, and
    its bound (months × its own − the inventory's credit) bounds it, as the blocks' bound the
    plan keeps does. Demand 2 nodes in one quarter: the owned one (held at no running cost)
    and one on demand (730 a month, 2,190 the quarter; a reservation's term is charged whole
    inside the horizon: 3,942)."""
    owned = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=1,
                      purchase=InventoryKind.owned, running_cost_per_node_month=0.0)
    hp = build_horizon_program(build_horizon_data(quarterly([2], inventory=[owned]),
                                                  lambda _: TABLE))
    news: list[BlockNews] = []
    _, bound, _, _ = horizon_start(hp, "highs", 10.0, 1e-6, on_block_news=news.append)
    alone = [n for n in news if not n.held and n.cost is not None]
    assert alone and (alone[-1].cost, alone[-1].plan_bound) == pytest.approx((730.0, QUARTER))
    assert bound == pytest.approx(QUARTER)  # the blocks' bound the plan keeps: the same
    # planned again with the orders chosen held (none), the same fleet; its figures bound
    # nothing of the plan
    assert (news[-1].held, news[-1].cost, news[-1].plan_bound) == (True, 730.0, None)


def test_a_plan_of_one_block_shows_its_bound_and_fleet_while_the_blocks_are_planned() -> None:
    """The plan's progress during the blocks' stage (``plan``'s lines): the block's own
    figures in the stage's label, the bound it proves as the plan's, and the first pass's
    fleet of the whole plan as the best before the blocks' stage ends (the same scenario as
    above: 2,190 both)."""
    owned = HeldNodes(zone="a", gpu="G", gpus_per_node=1, nodes=1,
                      purchase=InventoryKind.owned, running_cost_per_node_month=0.0)
    heard: list[tuple[Progress, str]] = []
    plan_horizon(quarterly([2], inventory=[owned]), table_for=lambda _: TABLE,
                 time_limit_s=20, gap=1e-6, on_progress=lambda p, s: heard.append((p, s)))
    stages = [s for _, s in heard]
    during = heard[stages.index("blocks"):stages.index("blocks done")]
    assert ("blocks — block 1 of 1: base, 2027-01-01: its own program: 730/month, bound 730, "
            "gap 0.0%") in [s for _, s in during], stages
    assert during[-1][0].bound == pytest.approx(QUARTER)
    assert during[-1][0].cost == pytest.approx(QUARTER)


# Two demand scenarios (tests/test_periods.py, TWO): low needs 1 node every quarter, high 1
# then 3. With a lead time of 4 weeks quarter 0 runs on demand in both (2,190), and the orders
# serving from quarter 1 are due 2027-03-04, before the re-plan: one decision r for both.
# low costs 3,942 r, high 3,942 r + (3 − r)(2,190 + 3,942) (on demand in quarter 1, reserved
# from quarter 2): the expected cost is least at r = 1 (12,264 with quarter 0), the worst at
# r = 3 (both 11,826, so 14,016 with quarter 0; at r = 1 high costs 16,206, 18,396 with it).
TWO_NEEDS = {"low": [1, 1, 1, 1], "high": [1, 3, 3, 3]}


def _two_scenarios(needs: dict[str, list[int]], demands: object = None
                   ) -> tuple[HorizonData, dict[tuple[str, int, PoolKey], float]]:
    """The horizon data of the two-scenario case and the reserved nodes each block runs."""
    from models.common import PurchaseKind
    from tests.test_periods import TWO

    data = build_horizon_data(quarterly([1, 1, 1, 1], lead_weeks=4,
                                        demands=demands or TWO),  # type: ignore[arg-type]
                              lambda _: TABLE)
    pool = PoolKey("a", "G", PurchaseKind.reserved)
    return data, {(s, q, pool): float(n) for s, need in needs.items() for q, n in enumerate(need)}


def _orders(chosen: dict[tuple[str, OrderKey], int] | None) -> list[tuple[str, int, int]]:
    assert chosen is not None
    return sorted((s, k.arrival, n) for (s, k), n in chosen.items())


def test_the_order_choice_of_a_robust_plan_minimises_the_worst_scenario() -> None:
    """Chosen by expected cost, r = 1 shared and high orders 2 more from quarter 2; with
    ``robust`` (the joint objective of ``--robust``), r = 3 shared and nothing later."""
    data, running = _two_scenarios(TWO_NEEDS)
    expected, _ = choose_orders(data, running, "highs")
    assert _orders(expected) == [("high", 1, 1), ("high", 2, 2), ("low", 1, 1)]
    robust, timed = choose_orders(data, running, "highs", robust=True)
    assert not timed
    assert _orders(robust) == [("high", 1, 3), ("low", 1, 3)]


def test_the_order_choice_of_a_robust_plan_is_the_cheapest_expected_at_its_worst() -> None:
    """Three scenarios needing 1, 1, 2, 2 (low), 1, 2, 2, 3 (base), 1, 3, 4, 4 (high) nodes:
    high costs 3,942 r + (3 − r)⁺ 2,190 + (4 − r)⁺ 3,942 beyond quarter 0 (a term from quarter
    2 beats 2 on-demand quarters, 4,380; from quarter 3 it does not), 15,768 at r = 3 and at r
    = 4, more at any other r: the worst is the same at both. low and base cost 11,826 at r = 3
    (nothing more to order), 15,768 at r = 4: the expected cost picks r = 3, high ordering its
    fourth node from quarter 2. The worst alone left r = 4 (every scenario at 15,768)."""
    from models.horizon import DemandScenario

    three = (DemandScenario(name="low", probability=0.3, growth=(1, 1, 2, 2)),
             DemandScenario(name="base", probability=0.4, growth=(1, 2, 2, 3)),
             DemandScenario(name="high", probability=0.3, growth=(1, 3, 4, 4)))
    data, running = _two_scenarios({"low": [1, 1, 2, 2], "base": [1, 2, 2, 3],
                                    "high": [1, 3, 4, 4]}, three)
    robust, _ = choose_orders(data, running, "highs", robust=True)
    assert _orders(robust) == [("base", 1, 3), ("high", 1, 3), ("high", 2, 1), ("low", 1, 3)]


def test_a_robust_start_of_blocks_too_large_to_solve_whole_is_the_least_worst(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks too large to be solved whole (the size limit set to 0) start from the orders
    chosen against their relaxations alone: with ``--robust`` the start's worst scenario costs
    the least worst, 14,016, where orders chosen by expected cost gave 18,396 (module
    comment above) and the joint solve of a large program may not move from its start."""
    from solver.solve import block_plans

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    data, _ = _two_scenarios(TWO_NEEDS)
    for robust, least in ((False, 12_264), (True, 14_016)):
        hp = build_horizon_program(data, robust=robust)
        start, bound, timed, _ = horizon_start(hp, "highs", 20.0, 1e-6)
        assert start is not None and timed
        program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                          data.blocks[0].data)
        assert objective_of(program, start) == pytest.approx(least)
        assert bound is not None and bound <= least + 1e-6


@pytest.mark.parametrize(("left_s", "planned"), [(60.0, True), (1.5, False)])
def test_a_pass_within_its_budget_plans_its_last_blocks_while_the_deadline_allows(
        left_s: float, planned: bool) -> None:
    """The second pass (``within``) past its budget: where the plan's deadline still leaves
    ``BLOCK_RESERVE_S`` for each block left it plans them all; where it does not (1.5 s for
    two distinct blocks) the first block is left unplanned, and so is the second (the pass is
    incomplete once one is dropped). A forecast-sized plan whose last block began a few ms past
    its budget lost the whole pass and came out 83 % dearer. Demand 1, 1, 1, 2: two distinct
    blocks; a budget of 0 s is spent before the first."""
    from solver.solve import block_plans
    from solver.solve.clock import Deadline
    from solver.solve.horizon import _priced_block

    data = build_horizon_data(quarterly(GROWTH), lambda _: TABLE)
    priced = [_priced_block(data, b)[0] for b in data.blocks]
    assert priced[0] != priced[-1]
    deadline = Deadline(left_s, clock=lambda: 0.0)  # a clock that does not move
    deadline.reserve_s = 0.0
    plans = block_plans.plan_blocks(data, priced, "highs", 0.0, 1e-6, within=True,
                                    deadline=deadline)
    assert plans.complete is planned
    assert [o.has_solution for o in plans.outcomes] == [planned] * len(data.blocks)


@pytest.mark.parametrize(("growth", "on_demand_stock", "least"), [
    (GROWTH, 8, 8760 * 0.45 + QUARTER),
    ([1, 1, 1, 3], 1, 2 * 8760 * 0.45 + QUARTER),
])
def test_a_first_pass_that_leaves_the_second_none_runs_on_demand_what_the_orders_leave(
        growth: list[int], on_demand_stock: int, least: float) -> None:
    """A budget spent before the second pass (0 s: every block of it left unplanned): the
    start is the first pass's fleets with the committed nodes beyond the chosen orders run on
    demand. Demand 1, 1, 1, 2 (the case above): one reservation from quarter 0 and quarter 3's
    second node on demand, 3,942 + 2,190 = 6,132; the orders bought to hold every node each
    block ran cost 2 × 3,942 = 7,884. Demand 1, 1, 1, 3 with one on-demand GPU of stock: the
    choice leaves quarter 3's two extra nodes to on-demand, but only one may move; the other
    stays reserved and is held by a second order: 2 × 3,942 + 2,190 = 10,074 (all held: 3 ×
    3,942 = 11,826; moving both breaks the stock row, and that start would be dropped)."""
    hp = build_horizon_program(build_horizon_data(quarterly(growth,
                                                            on_demand_stock=on_demand_stock),
                                                  lambda _: TABLE))
    start, bound, _, tried = horizon_start(hp, "highs", 0.0, 1e-6)
    assert [p.complete for p in tried] == [True, False]  # the second pass planned nothing
    assert start is not None and bound is not None
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(least)
    assert bound <= least + 1e-6


def test_the_orders_chosen_leave_to_on_demand_no_more_than_its_stock_holds() -> None:
    """Demand 1, 1, 1, 3 with one on-demand GPU of stock: quarter 3 runs 3 reserved nodes.
    Left to on demand without limit, the choice held one (3,942 + 2 × 2,190 < 2 × 3,942 +
    2,190) and the blocks planned again with what it holds had no fleet for quarter 3 (1 held
    + 1 on demand < 3): the pass was dropped, its start with it (the finding's
    ``lead_long.yaml``: a start of 11.99 M where the pass planned again gives 6.58 M). With the
    on-demand room the blocks' fleets leave (1 node), the choice holds 2 nodes in quarter 3
    and the pass plans every block."""
    from models.common import PurchaseKind
    from solver.solve.order_choice import on_demand_room

    hp = build_horizon_program(build_horizon_data(quarterly([1, 1, 1, 3], on_demand_stock=1),
                                                  lambda _: TABLE))
    data = hp.data
    pool = PoolKey("a", "G", PurchaseKind.reserved)
    running = {("base", q, pool): n for q, n in enumerate([1, 1, 1, 3])}
    room = on_demand_room(data, [None] * len(data.blocks))  # nothing run on demand yet
    assert room[("base", 3, "a", "G")] == 1
    chosen, _ = choose_orders(data, running, "highs", room=room)
    assert chosen is not None
    assert sum(n for (_, k), n in chosen.items() if 3 in data.held_periods(k)) == 2
    start, _, _, tried = horizon_start(hp, "highs", 10.0, 1e-6)
    assert [p.complete for p in tried] == [True, True]
    assert start is not None
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(2 * 8760 * 0.45 + QUARTER)


def test_a_replica_moves_to_on_demand_only_as_far_as_its_stock_allows() -> None:
    """Quarter 3 of demand 1, 1, 1, 3 runs 3 reserved one-GPU nodes; with 1 held, 2 are beyond
    what is held: with 8 on-demand GPUs both move to on demand (in each slice); with 1, one
    moves and two stay reserved; with none, all three stay."""
    from models.common import PurchaseKind
    from solver.solve.order_choice import on_demand_beyond

    for stock, reserved in ((8, 1), (1, 2), (0, 3)):
        hp = build_horizon_program(build_horizon_data(quarterly([1, 1, 1, 3],
                                                                on_demand_stock=stock),
                                                      lambda _: TABLE))
        last = next(b for b in hp.data.blocks if b.period == 3)
        program = hp.blocks[(last.scenario, last.period)]
        pool = PoolKey("a", "G", PurchaseKind.reserved)
        (key,) = [k for k in program.v.replicas if k.pool == pool]
        moved = on_demand_beyond(program, {key: 3}, {pool: 1})
        assert moved.get(key, 0) == reserved
        slices = {k.slice for k in moved if k.purchase is PurchaseKind.on_demand}
        assert all(moved[k] == 3 - reserved for k in moved if k != key)
        assert len(slices) == (len(program.data.slices) if reserved < 3 else 0)


def test_a_first_pass_that_ends_past_the_limit_still_starts_from_the_orders_chosen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's clock runs out as the first pass plans its last block (demand 1, 1, 1, 2:
    two distinct blocks, solved whole): the orders are still chosen, and the start is the
    first fleets with quarter 3's second node on demand, 3,942 + 2,190 = 6,132. Was: no
    order choice past the limit, and the start bought a term for every node a block ran,
    2 × 3,942 = 7,884 (quarterly.yaml at --time-limit 60 under load: 2.1 M)."""
    from solver.solve import block_plans
    from solver.solve.clock import Deadline

    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    solved: list[object] = []
    real = block_plans.direct_block

    def counted(*args: object, **kw: object) -> object:
        out = real(*args, **kw)  # type: ignore[arg-type]
        solved.append(out)
        return out

    monkeypatch.setattr(block_plans, "direct_block", counted)
    deadline = Deadline(60.0, clock=lambda: 1e6 if len(solved) >= 2 else 0.0)
    start, _, timed, tried = horizon_start(hp, "highs", 60.0, 1e-6, deadline=deadline)
    assert len(solved) == 2 and deadline.expired() and timed
    assert [p.complete for p in tried] == [True, False]
    assert start is not None
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(8760 * 0.45 + QUARTER)


def test_a_plan_over_periods_carries_a_bound_when_no_lp_ends_in_its_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No stage has time (1 ms) and the joint program's LP relaxation is given less than it
    needs (``LP_BOUND_S`` as a loaded machine leaves it: at load 18 a plan of quarterly.yaml
    came out with no bound). A plan always carries a bound: the LP relaxation is solved to its
    end after the stages, 6,132 here (the optimum itself, as in the plan above)."""
    from models.plan import SolveStatus
    from solver.solve import horizon

    monkeypatch.setattr(horizon, "LP_BOUND_S", 1e-9)
    plan = horizon.plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=1e-3,
                                gap=1e-6)
    assert plan.status is SolveStatus.time_limit and plan.solver.fallback
    assert plan.solver.bound == pytest.approx(3942 + 2190)
    assert [s.name for s in plan.solver.stages][-2:] == ["lp", "fallback"]


def test_a_plan_over_periods_stages_cover_its_clock_from_the_start_up() -> None:
    """A plan whose clock began 2 s before it (``fleetplan plan``'s: the start-up and reading
    the scenario) records those seconds as its first stage, then the capacity tables and the
    program's build, the LP relaxation's bound before the search (inside the time limit), and
    its ``seconds`` are on that clock: the stages add up to them. Before, the stages began at
    the build and ``seconds`` counted from it (15.6 s of a 29.8-s plan were in a stage)."""
    import time

    from models.plan import BUILD_STAGE, CAPACITY_STAGE, READ_STAGE
    from solver.solve.clock import Deadline
    from solver.solve.horizon import BLOCKS_STAGE, LP_STAGE

    stop = Deadline(30.0, started=time.perf_counter() - 2.0)
    plan = plan_horizon(quarterly(GROWTH), table_for=lambda _: TABLE, time_limit_s=30.0,
                        gap=1e-6, stop=stop)
    names = [s.name for s in plan.solver.stages]
    assert names[:4] == [READ_STAGE, CAPACITY_STAGE, BUILD_STAGE, LP_STAGE]
    assert plan.solver.stages[0].seconds >= 2.0
    assert plan.solver.stages[3].bound_after == pytest.approx(3942 + 2190)  # the optimum
    assert BLOCKS_STAGE not in names[:4]
    covered = sum(s.seconds for s in plan.solver.stages)
    assert plan.solver.seconds >= 2.0
    assert covered == pytest.approx(plan.solver.seconds, abs=0.5)
