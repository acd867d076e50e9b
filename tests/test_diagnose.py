"""Infeasible scenarios are answered with what cannot be met and by how much."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from models.plan import SolveStatus
from models.scenario import Scenario
from solver.program.data import build_program_data
from solver.solve.backends import SolveOutcome
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import offer, row, scenario, table, workload, zone

#: chat's one configuration: 10 req/s on a 1-GPU H100 replica.
CHAT_ROW = row("chat", "H100", 1, 10.0)


def _short_in_b() -> Scenario:
    """chat: 20 req/s at 10 req/s per 1-GPU replica (utilization 1.0) must survive losing
    either zone. Zone a sells plenty; zone b sells 1 reserved GPU. Losing a leaves only b,
    which needs 2 GPUs: 1 more than its stock of 1."""
    return scenario(
        [workload("chat", 20.0, utilization=1.0, survivability="zone_loss")],
        [zone("a", offer(reserved=(2.0, 8), gpus_per_node=1)),
         zone("b", offer(reserved=(2.0, 1), gpus_per_node=1))],
    )


def test_zone_loss_short_of_stock_names_workload_zone_and_amount() -> None:
    # _short_in_b: 1 GPU beyond b's stock, to survive losing a
    sc, tb = _short_in_b(), table(CHAT_ROW)
    plan = plan_scenario(sc, tb)
    assert plan.status is SolveStatus.infeasible
    assert plan.allocations == ()
    [short] = plan.diagnosis
    assert (short.requirement, short.workload, short.zone, short.gpu, short.amount) == (
        "stock", "chat", "b", "H100", 1.0)
    assert short.message == (
        "`chat` needs 2 H100 GPUs (reserved) in b to survive losing a; stock allows 1: 1 more "
        "than stock")
    assert verify_plan(plan, sc, tb) == []  # an infeasible plan promises nothing


def test_stock_short_of_plain_demand_says_so() -> None:
    # 30 req/s needs 3 replicas of 10; the only zone sells 2 GPUs → 1 more needed for demand.
    sc = scenario([workload("w", 30.0, utilization=1.0)],
                  [zone("a", offer(on_demand=(3.0, 2), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    [short] = plan.diagnosis
    assert short.amount == 1.0
    assert short.message == (
        "`w` needs 3 H100 GPUs (on_demand) in a during day to carry its demand; "
        "stock allows 2: 1 more than stock")


def test_budget_too_small_reports_the_cheapest_cost() -> None:
    # Cheapest fleet: 2 reserved 1-GPU replicas × 2.0 × 730 = 2,920 > budget 2,000 → short 920.
    sc = scenario([workload("w", 20.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 8), gpus_per_node=1))], budget=2000.0)
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    [short] = plan.diagnosis
    assert short.requirement == "budget"
    assert short.amount == 920.0
    assert "costs about 2,920 USD/month; the budget allows 2,000 (short by 920)" in short.message


def test_budget_short_beside_stock_does_not_call_its_fleet_the_cheapest() -> None:
    # 30 req/s at 10 per 1-GPU replica: 3 GPUs, stock 2 → 1 beyond stock; 3 × 2.0 × 730 =
    # 4,380 > budget 2,000 → short 2,380. That fleet breaks the stock, so it is no fleet "that
    # meets every requirement" (the message said so, as it did of a relaxation stopped at its
    # time limit that cost 4x the cheapest fleet).
    sc = scenario([workload("w", 30.0, utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 2), gpus_per_node=1))], budget=2000.0)
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    by_kind = {s.requirement: s for s in plan.diagnosis}
    assert set(by_kind) == {"stock", "budget"}
    assert by_kind["budget"].message == (
        "the fleet of the smallest relaxation found (with the other shortfalls listed; not "
        "proven the cheapest) costs about 4,380 USD/month; the budget allows 2,000 (short by "
        "2,380)")


def test_workload_without_candidates_is_named() -> None:
    # The table has no row for `orphan`: nothing can carry its 5 req/s. `w` (10 req/s, one
    # replica of 10) is met without it, and the diagnosis says so instead of listing a line per
    # slice and failure of `orphan`.
    sc = scenario([workload("w", 10.0, utilization=1.0), workload("orphan", 5.0)],
                  [zone("a", offer(reserved=(2.0, 8), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    short, others = plan.diagnosis
    assert (short.requirement, short.workload, short.amount, short.unit) == (
        "demand", "orphan", 5.0, "req/s")
    assert "no configuration of it fits any GPU that a zone sells" in short.message
    assert others.requirement == "others"
    assert others.message.startswith("without `orphan`, the other workloads (`w`) are met")


def test_the_rest_beside_an_unservable_workload_is_diagnosed_alone() -> None:
    # `orphan` has no row; `w` needs 3 replicas of 10 req/s (30) where the zone sells 2 GPUs:
    # 1 beyond stock. The rest is diagnosed without `orphan`: its stock line, and nothing else
    # of `orphan` than its one whole-demand line.
    sc = scenario([workload("w", 30.0, utilization=1.0), workload("orphan", 5.0)],
                  [zone("a", offer(on_demand=(3.0, 2), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    assert [(s.requirement, s.workload, s.amount) for s in plan.diagnosis] == [
        ("demand", "orphan", 5.0), ("stock", "w", 1.0)]


def test_no_workload_a_plan_without_the_culprit_carries_is_listed_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fresh-clone user's case (M5): an SLO no GPU meets removes `chat`; at a short limit
    # the elastic program, weighed down by `chat`'s forced slack, stopped on a relaxation that
    # left `w` short though a fleet for it exists. Here the plan of the rest finds `w`'s fleet
    # (4 replicas of 10 req/s and one more for a node's loss), so `w` is never named, and no
    # elastic search runs.
    import solver.solve.diagnose as diagnose_module

    elastic: list[float] = []

    def counted(*args: Any, **kwargs: Any) -> SolveOutcome:
        elastic.append(1.0)
        return real_solve(*args, **kwargs)

    real_solve = diagnose_module.solve
    monkeypatch.setattr(diagnose_module, "solve", counted)
    sc = scenario([workload("chat", 8.0, survivability="zone_loss"),
                   workload("w", 40.0, utilization=1.0, survivability="n_plus_1")],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=1)),
                   zone("b", offer(reserved=(2.0, 64), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)), time_limit_s=5.0)
    assert plan.status is SolveStatus.infeasible
    assert {s.workload for s in plan.diagnosis if s.requirement != "others"} == {"chat"}
    assert elastic == []  # the rest has a fleet: no elastic search at all


def test_an_elastic_solve_without_an_answer_falls_back_on_the_greedy_fleet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 30 req/s at 10 per 1-GPU replica where the zone sells 2 GPUs. The elastic solve is made to
    # end with nothing (a limit too short for HiGHS's first solution): the greedy fleet with its
    # excess as stock slack is the answer — 3 GPUs, 1 beyond stock — said to be unproven.
    import solver.solve.diagnose as diagnose_module
    from models.plan import SolverReport

    def nothing(prob: Any, solver: str, time_limit_s: float, *args: Any,
                **kwargs: Any) -> SolveOutcome:
        return SolveOutcome(SolveStatus.time_limit,
                            SolverReport(name=solver, seconds=time_limit_s), False)

    monkeypatch.setattr(diagnose_module, "solve", nothing)
    sc = scenario([workload("w", 30.0, utilization=1.0)],
                  [zone("a", offer(on_demand=(3.0, 2), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)), time_limit_s=5.0)
    assert plan.status is SolveStatus.infeasible
    assert [(s.requirement, s.amount) for s in plan.diagnosis] == [("stock", 1.0),
                                                                    ("solver", 0.0)]
    assert plan.diagnosis[0].message.startswith("`w` needs 3 H100 GPUs (on_demand) in a")


def test_stock_short_in_several_pools_says_the_total_first_and_why_per_workload() -> None:
    # w: 40 req/s at 10 per 1-GPU replica, surviving the loss of any of 3 zones that sell 1
    # reserved GPU each. Demand alone needs 4 GPUs (1 beyond the 3 in stock, in any one zone);
    # surviving a zone's loss needs 20 req/s in each zone: 2 GPUs each, 6 in all, 3 beyond.
    # First the GPU type's line (what the offers hold, what the fleet runs, where beyond), then
    # one line per pool, each with the same reason: which pool the demand-only relaxation put
    # its 1 GPU in is arbitrary, and the per-pool reason changed from run to run with it.
    sc = scenario([workload("w", 40.0, utilization=1.0, survivability="zone_loss")],
                  [zone(z, offer(reserved=(2.0, 1), gpus_per_node=1)) for z in "abc"])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    first, *pools = plan.diagnosis
    assert (first.requirement, first.workload, first.gpu, first.amount) == (
        "stock", None, "H100", 3.0)
    assert first.message == (
        "H100: the offers hold 3 GPUs in all (3 zones; on-demand and spot at a time); the fleet "
        "found runs 6 at its peak, 3 beyond stock (a reserved +1, b reserved +1, c reserved +1)")
    assert [(p.zone, p.amount) for p in pools] == [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    assert all(p.message.endswith("to carry its demand and survive losing a zone; stock "
                                  "allows 1: 1 more than stock") for p in pools), pools


def test_zone_loss_with_a_single_zone_is_short_by_the_whole_demand() -> None:
    # One zone: after losing it nothing is left, whatever is bought → short 20 req/s.
    sc = scenario([workload("w", 20.0, utilization=1.0, survivability="zone_loss")],
                  [zone("a", offer(reserved=(2.0, 64), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    [short] = plan.diagnosis
    assert (short.requirement, short.workload, short.zone, short.amount) == (
        "zone_loss", "w", "a", 20.0)


def test_n_plus_1_on_spot_alone_says_only_non_spot_counts() -> None:
    # A batch pool of 10 req/s that must survive a node loss, in a zone that sells only spot:
    # spot never counts after a failure, so all 10 req/s are short (firm capacity 0).
    sc = scenario([workload("w", 10.0, cls="batch", utilization=1.0, survivability="n_plus_1")],
                  [zone("a", offer(spot=(1.0, 64, 0.0), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    [short] = plan.diagnosis
    assert (short.requirement, short.workload, short.zone, short.amount) == (
        "n_plus_1", "w", None, 10.0)
    assert short.message == (
        "`w` is 10 req/s short in day counting only its non-spot capacity (spot never counts "
        "after a failure)")


def test_a_shared_pool_short_of_stock_says_whose_gpus_it_runs() -> None:
    # One zone of 8-GPU nodes with 8 reserved GPUs; `big` needs 9 replicas of 10 req/s (90),
    # `small` 1 (10): 10 GPUs on 2 nodes → 16 GPUs, 8 beyond stock. Both run on the pool, so
    # each line says how much of it is whose: 9 of 10 and 1 of 10.
    sc = scenario([workload("big", 90.0, utilization=1.0), workload("small", 10.0,
                                                                    utilization=1.0)],
                  [zone("a", offer(reserved=(2.0, 8)))])
    plan = plan_scenario(sc, table(row("big", "H100", 1, 10.0), row("small", "H100", 1, 10.0)))
    assert plan.status is SolveStatus.infeasible
    assert [(s.workload, s.amount) for s in plan.diagnosis] == [("big", 8.0), ("small", 8.0)]
    # each line leads with the workload's own GPUs, then the pool's need once (fresh-s22 F7:
    # "`chat` needs 216 …", "`code` needs 216 …" read the pool's 216 as each one's need)
    assert plan.diagnosis[0].message == (
        "`big` runs 9 of the 10 H100 GPUs (reserved) the fleet would run in a, to carry its "
        "demand; the pool needs 16, in whole nodes, for the 2 workloads on it (`big`, "
        "`small`); stock allows 8: 8 more than stock")
    assert plan.diagnosis[1].message.startswith(
        "`small` runs 1 of the 10 H100 GPUs (reserved) the fleet would run in a, ")
    assert not any(s.message.startswith(f"`{s.workload}` needs") for s in plan.diagnosis)


def test_an_elastic_search_stopped_by_its_time_limit_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same shortfall as above, but the elastic solve is reported as stopped at its time
    # limit: the diagnosis keeps what it found and says it may not be the least.
    import solver.solve.diagnose as diagnose_module

    def stopped(*args: Any, **kwargs: Any) -> SolveOutcome:
        return dataclasses.replace(real_solve(*args, **kwargs), status=SolveStatus.time_limit)

    real_solve = diagnose_module.solve
    monkeypatch.setattr(diagnose_module, "solve", stopped)
    sc = scenario([workload("w", 30.0, utilization=1.0)],
                  [zone("a", offer(on_demand=(3.0, 2), gpus_per_node=1))])
    plan = plan_scenario(sc, table(row("w", "H100", 1, 10.0)), time_limit_s=5.0)
    assert plan.status is SolveStatus.infeasible
    assert [s.requirement for s in plan.diagnosis] == ["stock", "solver"]
    assert plan.diagnosis[1].message.startswith(
        "the search for the smallest relaxation stopped at its time limit (5 s)")


def test_the_elastic_solves_share_the_time_the_diagnosis_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stock shortfall runs two elastic solves (with and without the survival families, to
    # say which the stock is short for), and each was given the whole time left: a new user's
    # ~1,300-GPU scenario short of stock, infeasible after 4 s, ran 124 s on a 60-s limit.
    # Each solve here takes 0.6 s more: of a 2-s diagnosis the first may take it all, the
    # second gets what the first left, 2 − 0.6 − (the first's own time) < 1.4 s — not 2 s.
    import time

    import solver.solve.diagnose as diagnose_module

    given: list[float] = []

    def slow(prob: Any, solver: str, time_limit_s: float, *args: Any,
             **kwargs: Any) -> SolveOutcome:
        given.append(time_limit_s)
        time.sleep(0.6)
        return real_solve(prob, solver, time_limit_s, *args, **kwargs)

    real_solve = diagnose_module.solve
    monkeypatch.setattr(diagnose_module, "solve", slow)
    sc = _short_in_b()  # two elastic solves: with and without the survival families
    data = build_program_data(sc, table(CHAT_ROW))
    [short] = diagnose_module.diagnose(sc, data, time_limit_s=2.0)
    assert short.message.endswith("to survive losing a; stock allows 1: 1 more than stock")
    assert len(given) == 2 and 1.9 < given[0] <= 2.0  # less the greedy start's milliseconds
    assert given[1] < 1.4, given  # what the first left, not the whole 2 s
    assert given[1] >= diagnose_module.ELASTIC_MIN_S


def test_an_elastic_build_counts_in_its_time_and_leaves_the_second_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each elastic program's build took 0.4 s (a large scenario under load): counted from
    # after the build, the first solve had the whole 3 s and the second its floor beside its
    # own build, 3 + 0.4 + 0.4 + 1 s in all. Now the first solve has 3 − 0.4 (its build) − 0.4
    # (kept for the second's build) = 2.2 s at most, and the second what is left.
    import time

    import solver.solve.diagnose as diagnose_module

    given: list[float] = []

    def slow_build(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.4)
        return real_build(*args, **kwargs)

    def recorded(prob: Any, solver: str, time_limit_s: float, *args: Any,
                 **kwargs: Any) -> SolveOutcome:
        given.append(time_limit_s)
        return real_solve(prob, solver, time_limit_s, *args, **kwargs)

    real_build, real_solve = diagnose_module.build_program, diagnose_module.solve
    monkeypatch.setattr(diagnose_module, "build_program", slow_build)
    monkeypatch.setattr(diagnose_module, "solve", recorded)
    sc = _short_in_b()  # two elastic solves: with and without the survival families
    data = build_program_data(sc, table(CHAT_ROW))
    began = time.perf_counter()
    [short] = diagnose_module.diagnose(sc, data, time_limit_s=3.0)
    assert short.message.endswith("to survive losing a; stock allows 1: 1 more than stock")
    assert len(given) == 2 and given[0] <= 2.2, given
    assert given[1] <= 3.0 - 0.4 - 0.4, given  # after the second's build too
    assert time.perf_counter() - began < 3.0 + 0.5


def test_no_second_elastic_solve_where_its_build_does_not_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first elastic solve took all its time: what is left cannot hold the second's build
    # and a solve, so none is started and the shortfall is not said to be for survival alone.
    import solver.solve.diagnose as diagnose_module

    calls: list[tuple[str, ...]] = []
    real = diagnose_module.solve_elastic

    def first_takes_all(data: Any, families: tuple[str, ...], solver: str,
                        time_limit_s: float, keep_build: bool = False) -> Any:
        calls.append(families)
        program, proven, _ = real(data, families, solver, time_limit_s, keep_build)
        return program, proven, time_limit_s  # as if its build had taken the whole limit

    monkeypatch.setattr(diagnose_module, "solve_elastic", first_takes_all)
    sc = _short_in_b()  # two elastic solves: with and without the survival families
    data = build_program_data(sc, table(CHAT_ROW))
    [short] = diagnose_module.diagnose(sc, data, time_limit_s=2.0)
    assert len(calls) == 1
    assert short.workload == "chat" and short.amount == 1.0


def test_the_progress_lines_of_the_diagnosis_carry_its_stage() -> None:
    """s21 F3: an infeasible plan's progress lines kept the label of the last solve stage heard,
    ``[capacity]``, through the diagnosis' elastic solves and relaxation search (15 s and
    more), which are no capacity work: the diagnosis is told as its own stage, after every
    stage of the solve."""
    heard: list[str] = []
    plan = plan_scenario(_short_in_b(), table(CHAT_ROW),
                         on_progress=lambda _seen, stage: heard.append(stage))
    assert plan.status is SolveStatus.infeasible and plan.diagnosis
    assert heard and heard[-1] == "diagnosis", heard
    assert "diagnosis" not in heard[:-1]


def test_over_periods_the_diagnosis_is_told_as_its_stage_too() -> None:
    """The same over periods: a fourth quarter at 50× the demand, 2 GPUs of stock per kind."""
    from solver.solve.horizon import plan_horizon
    from tests.test_periods import TABLE, quarterly

    heard: list[str] = []
    plan = plan_horizon(quarterly([1, 1, 1, 50], on_demand_stock=2, reserved_stock=2),
                        table_for=lambda _: TABLE, time_limit_s=20, gap=1e-6,
                        on_progress=lambda _seen, stage: heard.append(stage))
    assert plan.status is SolveStatus.infeasible and plan.diagnosis
    assert heard and heard[-1] == "diagnosis", heard[-3:]
