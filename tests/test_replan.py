"""The replay loop's cheap re-solve: the workloads that missed are re-planned on the de-rated
table with every other workload's replicas kept, the plan meets every row of the de-rated
program, reports the first solve's bound, and a workload whose replicas did not move is not
replayed twice."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from models.capacity import CapacityTable
from models.loader import load_scenario
from models.plan import Plan, SolveStatus
from models.scenario import Scenario
from solver.capacity.table import build_capacity_table
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.values import objective_of, start_from_replicas
from solver.replay import plan_replay
from solver.replay.engine import ZoneFailure, fleet_replica_groups, peak_slice
from solver.replay.plan_replay import ReplayCache, peak_window, replay_plan
from solver.replay.traces import Trace
from solver.solve.replan import (
    _fill_paid_gpus,
    _kept_program,
    _plus_one_node_start,
    _scaled_start,
    kept_replicas,
    replan_workloads,
)
from solver.solve.replay_loop import derate
from solver.solve.strategy import plan_scenario
from solver.survivability.fleet import fleet_from_plan
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import chat_8b, h100_scenario_yaml


def _scenario(tmp_path: Path, stock: int = 64) -> Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(h100_scenario_yaml(
        "two", chat_8b(),
        chat_8b(name="code", arrival={"peak_rps": 20},
                input_tokens={"p50": 2000, "p95": 2000, "p99": 2000},
                output_tokens={"p50": 30, "p95": 30, "p99": 30},
                slo={"ttft_p95_ms": 400, "tpot_p95_ms": 40}),
        gpus_per_node=2, stock_gpus=stock))
    return load_scenario(path)


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scenario, CapacityTable, Plan]:
    """The two-workload scenario at full stock, its capacity table and its first plan: built
    and solved once for the module (frozen objects; the tests that re-plan it only read them)."""
    sc = _scenario(tmp_path_factory.mktemp("two"))
    table = build_capacity_table(sc)
    return sc, table, plan_scenario(sc, table)


def _replicas(plan: Plan, workload: str) -> int:
    return sum(a.replicas for a in plan.allocations if a.workload == workload)


def _halved(table: CapacityTable, workload: str) -> CapacityTable:
    return derate(table, {(r.workload, r.gpu, r.tp): 0.5 for r in table.rows
                          if r.workload == workload}, 1)


def test_replan_keeps_the_others_and_meets_every_row(
        two: tuple[Scenario, CapacityTable, Plan]) -> None:
    sc, table, first = two
    assert first.status is SolveStatus.optimal and _replicas(first, "chat") > 0
    halved = _halved(table, "chat")
    full: list[CapacityTable] = []
    again = replan_workloads(sc, halved, first, frozenset({"chat"}),
                             lambda t: full.append(t) or plan_scenario(sc, t))
    assert not full  # the kept fleet leaves room: no full solve
    # the solve starts from the previous fleet, chat's replicas grown by its de-rating
    program = build_program(build_program_data(sc, halved))
    kept = kept_replicas(first, frozenset({"chat"}))
    start = _scaled_start(program, first, halved, kept)
    assert start is not None and objective_of(program, start) >= again.cost.per_month - 1e-6
    # code keeps exactly its replicas; chat needs about twice as many
    assert kept_replicas(again, frozenset({"chat"})) == kept_replicas(first, frozenset({"chat"}))
    assert _replicas(again, "chat") >= 2 * _replicas(first, "chat") - 1
    assert verify_plan(again, sc, halved) == []
    # its bound is the first solve's (de-rating only tightens rows), never above the cost
    assert again.solver.bound == pytest.approx(first.solver.bound)
    assert again.solver.bound <= again.cost.per_month
    assert again.solver.gap == pytest.approx(
        (again.cost.per_month - first.solver.bound) / again.cost.per_month)
    assert again.status is (SolveStatus.optimal if again.solver.gap <= 0.01
                            else SolveStatus.feasible)
    # and it costs no less than the full solve of the de-rated program
    assert again.cost.per_month >= plan_scenario(sc, halved).cost.per_month - 1e-6
    # kept means kept: a code fleet with a replica more than it needs stays as it was
    wasteful = _with_spare_code_replica(first)
    again = replan_workloads(sc, halved, wasteful, frozenset({"chat"}),
                             lambda t: full.append(t) or plan_scenario(sc, t))
    assert not full
    assert (kept_replicas(again, frozenset({"chat"}))
            == kept_replicas(wasteful, frozenset({"chat"})))


def _with_spare_code_replica(plan: Plan) -> Plan:
    """``plan`` with one more TP2 replica of code than it needs."""
    return plan.model_copy(update={"allocations": tuple(
        a.model_copy(update={"replicas": a.replicas + 1, "gpus": a.gpus + a.tp})
        if a.workload == "code" and a.tp == 2 else a for a in plan.allocations)})


def test_replan_solves_the_whole_program_when_the_kept_fleet_leaves_no_room(
        tmp_path: Path) -> None:
    sc = _scenario(tmp_path, stock=6)
    table = build_capacity_table(sc)
    first = plan_scenario(sc, table)
    # an earlier fleet that gave code one replica more than it needs: kept, it leaves too few
    # of the 6 GPUs for chat at half its rate, which the whole program still fits
    wasteful = _with_spare_code_replica(first)
    assert sum(a.gpus for a in wasteful.allocations if a.workload == "code") == 5
    halved = _halved(table, "chat")
    full: list[CapacityTable] = []

    def solve(t: CapacityTable) -> Plan:
        full.append(t)
        return plan_scenario(sc, t)

    again = replan_workloads(sc, halved, wasteful, frozenset({"chat"}), solve)
    assert full == [halved]
    assert again.allocations == plan_scenario(sc, halved).allocations
    assert verify_plan(again, sc, halved) == []


def _derated(table: CapacityTable, workload: str, factor: float) -> CapacityTable:
    return derate(table, {(r.workload, r.gpu, r.tp): factor for r in table.rows
                          if r.workload == workload}, 1)


def _starts(sc: Scenario, table: CapacityTable, first: Plan, workloads: frozenset[str]
            ) -> tuple[float | None, float | None]:
    """Monthly cost of the scaled start and of the plus-one-node start (None: no start)."""
    kept = kept_replicas(first, workloads)
    program = _kept_program(sc, table, kept, workloads)
    scaled = _scaled_start(program, first, table, kept)
    plus = _plus_one_node_start(program, _kept_program(sc, table, kept, workloads), first,
                                workloads, "highs", 10.0, 0.01)
    return (None if scaled is None else objective_of(program, scaled),
            None if plus is None else objective_of(program, plus))


def test_the_plus_one_node_start_is_the_replans_optimum_where_one_node_more_is_enough(
        two: tuple[Scenario, CapacityTable, Plan]) -> None:
    """code at 0.8 of its rate needs one more 2-GPU node: the search finds the re-plan's
    optimum, where the scaled start (every code replica grown by 1 ÷ 0.8) costs 2 nodes
    more; at half its rate one node is not enough, the search gives no start and the re-plan
    still finds its optimum from the scaled one."""
    sc, table, first = two
    nodes_before = sum(n.nodes for n in first.nodes)
    code = frozenset({"code"})
    mild = _derated(table, "code", 0.8)
    scaled, plus = _starts(sc, mild, first, code)
    again = replan_workloads(sc, mild, first, code, lambda t: plan_scenario(sc, t))
    assert sum(n.nodes for n in again.nodes) == nodes_before + 1
    assert plus == pytest.approx(again.cost.per_month)
    assert scaled is not None and scaled > plus + 1000  # 5,840 vs 4,380 USD/month
    # the same inputs give the same fleet
    assert replan_workloads(sc, mild, first, code,
                            lambda t: plan_scenario(sc, t)).allocations == again.allocations
    halved = _derated(table, "code", 0.5)
    scaled, plus = _starts(sc, halved, first, code)
    again = replan_workloads(sc, halved, first, code, lambda t: plan_scenario(sc, t))
    assert sum(n.nodes for n in again.nodes) > nodes_before + 1
    assert plus is None and scaled is not None and again.cost.per_month <= scaled
    assert verify_plan(again, sc, halved) == []


def test_gpus_a_fleet_pays_for_and_leaves_idle_serve_the_replanned_workloads(
        two: tuple[Scenario, CapacityTable, Plan]) -> None:
    """The first fleet with one more TP1 replica of code needs a third 2-GPU node and leaves
    one of its GPUs idle: the fill puts a replica of the re-planned workload there at no
    cost, and only of it."""
    sc, table, first = two
    x = kept_replicas(first, frozenset())
    tp1 = next(k for k in x if k.workload == "code" and k.tp == 1)
    x[tp1] += 1
    for workload in ("code", "chat"):
        program = _kept_program(sc, table, {}, frozenset({"chat", "code"}))
        start = start_from_replicas(program, x)
        assert start is not None
        filled = _fill_paid_gpus(program, x, start, frozenset({workload}))
        assert objective_of(program, filled) == pytest.approx(objective_of(program, start))
        added = {k: filled[v.name] - start[v.name] for k, v in program.v.replicas.items()
                 if filled[v.name] != start[v.name]}
        assert len(added) == 1
        (key, n), = added.items()
        assert key.workload == workload and key.tp == 1 and n == 1


def _trace(n: int = 1200) -> Trace:
    import numpy as np

    t = np.arange(n, dtype=np.float64) * 0.25
    return Trace(source="t", arrival_s=t, input_tokens=np.full(n, 1000, dtype=np.int64),
                 output_tokens=np.full(n, 200, dtype=np.int64))


def test_a_workload_whose_replicas_did_not_move_is_not_replayed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from models.workload import TraceLink

    sc = _scenario(tmp_path)
    link = TraceLink(path=str(tmp_path / "unused.csv"))
    sc = sc.model_copy(update={"workloads": tuple(
        w.model_copy(update={"arrival": w.arrival.model_copy(update={"trace": link})})
        for w in sc.workloads)})
    table = build_capacity_table(sc)
    first = plan_scenario(sc, table)
    halved = _halved(table, "chat")
    again = replan_workloads(sc, halved, first, frozenset({"chat"}), lambda t: plan_scenario(sc, t))
    traces = {"chat": _trace(), "code": _trace()}
    replayed: list[str] = []
    real = plan_replay._one_case

    def counting(scenario, wl, *args, **kwargs):  # type: ignore[no-untyped-def]
        replayed.append(wl.name)
        return real(scenario, wl, *args, **kwargs)

    monkeypatch.setattr(plan_replay, "_one_case", counting)
    cache: ReplayCache = {}
    replay_plan(first, sc, traces, 1, cache)
    assert set(replayed) == {"chat", "code"}
    replayed.clear()
    checks, _ = replay_plan(again, sc, traces, 2, cache)
    assert replayed and set(replayed) == {"chat"}  # code's replicas are those of round 1
    fresh, _ = replay_plan(again, sc, traces, 2)
    assert checks == fresh  # what the cache gives is what a replay gives


def test_a_replan_stopped_at_its_time_limit_says_so(
        two: tuple[Scenario, CapacityTable, Plan], monkeypatch: pytest.MonkeyPatch) -> None:
    """qa3 F7: a re-plan whose own solve stopped at its time limit was reported ``feasible``
    (its status was decided from the gap to the first solve's bound alone), so a plan whose
    fleet depended on the machine's speed said nothing of it. The solve's status is patched
    (the clock is not relied on)."""
    from solver.solve import replan as replan_module

    sc, table, first = two
    halved = _halved(table, "chat")
    finished = replan_workloads(sc, halved, first, frozenset({"chat"}),
                                lambda t: plan_scenario(sc, t))
    assert finished.solver.gap is not None and finished.solver.gap > 0.01
    assert finished.status is SolveStatus.feasible
    real = replan_module.solve

    def stopped(*args: object, **kwargs: object) -> object:
        outcome = real(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(outcome, status=SolveStatus.time_limit)

    monkeypatch.setattr(replan_module, "solve", stopped)
    cut = replan_workloads(sc, halved, first, frozenset({"chat"}),
                           lambda t: plan_scenario(sc, t))
    assert cut.status is SolveStatus.time_limit
    assert cut.allocations == finished.allocations  # the same fleet, honestly labelled
    # within the gap of the first solve's bound the fleet is proven whatever stopped it
    close = first.model_copy(update={"solver": first.solver.model_copy(
        update={"bound": 0.995 * finished.cost.per_month})})
    within = replan_module._against_full_bound(
        finished, close, SolveStatus.time_limit, finished.solver, 0.01, 1.0)
    assert within["status"] is SolveStatus.optimal


def test_a_zone_and_its_only_node_are_one_replay_reported_twice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each zone holds one node of chat's replicas: losing the zone and losing that node lose
    the same replicas at the same instant, so they are replayed once and reported under both
    names, with what a replay of each gives."""
    from models.workload import TraceLink

    path = tmp_path / "s.yaml"
    path.write_text(h100_scenario_yaml("two-zones", chat_8b(survivability="zone_loss"),
                                       zones=("zone-a", "zone-b"), gpus_per_node=8))
    sc = load_scenario(path)
    link = TraceLink(path=str(tmp_path / "unused.csv"))
    sc = sc.model_copy(update={"workloads": tuple(
        w.model_copy(update={"arrival": w.arrival.model_copy(update={"trace": link})})
        for w in sc.workloads)})
    plan = plan_scenario(sc, build_capacity_table(sc))
    assert {a.zone for a in plan.allocations} == {"zone-a", "zone-b"}
    replayed: list[str] = []
    real = plan_replay._one_case

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        check, configs = real(*args, **kwargs)
        replayed.append(check.failure)
        return check, configs

    monkeypatch.setattr(plan_replay, "_one_case", counting)
    checks, _ = replay_plan(plan, sc, {"chat": _trace()}, 1)
    failures = [c.failure for c in checks]
    assert sorted(failures) == ["node:zone-a/H100-SXM/on_demand",
                                "node:zone-b/H100-SXM/on_demand", "none",
                                "zone:zone-a", "zone:zone-b"]
    assert sorted(replayed) == ["node:zone-a/H100-SXM/on_demand",
                               "node:zone-b/H100-SXM/on_demand", "none"]
    # what each failure would get replayed on its own
    sc_wl = sc.workload("chat")
    fleet = fleet_from_plan(plan, sc)
    slice_name = peak_slice(sc, sc_wl)
    groups = fleet_replica_groups(fleet, sc, sc_wl, slice_name)
    window = peak_window(_trace(), 12.0)
    for zone in ("zone-a", "zone-b"):
        alone, _ = real(sc, sc_wl, slice_name, groups, window, f"zone:{zone}",
                        ZoneFailure(zone=zone, at_s=window.start_s), 1)
        assert next(c for c in checks if c.failure == f"zone:{zone}") == alone
