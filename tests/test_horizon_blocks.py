"""benchmarks/horizon_blocks.py: each distinct block held at a plan's orders, its fleet against
its relaxation, weighted by the probability and months of the blocks it stands for."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.horizon_blocks import held_rows, markdown
from solver.program.periods import build_horizon_data, build_horizon_program
from solver.solve.horizon import horizon_start
from tests.test_horizon_start import GROWTH
from tests.test_periods import QUARTER, TABLE, quarterly


def test_blocks_held_at_the_orders_of_the_optimum() -> None:
    """Demand 1, 1, 1, 2 nodes; the optimum holds one 12-month reservation: the first three
    quarters are one held program (the node held runs free: 0 a month, weight 9 months) and
    the last runs its second node on demand (730 a month, its LP too); the expected elastic cost
    is the quarter's 2,190, as the plan's split says."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, _, _, _ = horizon_start(hp, "highs", 10.0, 1e-6)
    assert start is not None
    rows = held_rows(hp, start, 0.0, [(1.0, 1e-4)])
    assert [(r.blocks, r.weight) for r in rows] == [("base Q1, base Q2, base Q3", 9.0),
                                                   ("base Q4", 3.0)]
    assert [r.fleet for r in rows] == pytest.approx([0.0, 730.0])
    assert [r.lp for r in rows] == pytest.approx([0.0, 730.0])
    assert [r.polished[0][0] for r in rows] == pytest.approx([0.0, 730.0])
    total = markdown(rows, [(1.0, 1e-4)])[-1]
    assert total.startswith(f"| expected elastic | {QUARTER:,.0f} | {QUARTER:,.0f} |")


@pytest.mark.parametrize("left_s", [12.0, 60.0, 95.0])
def test_a_short_deadline_leaves_every_block_its_part(left_s: float) -> None:
    """Ten blocks each running to the limit they are given (a loaded machine: the LP support's
    floor and the polish each stopped by the clock alone) share what the deadline leaves: none
    is left without time, the first no more than its part. The floors added on top gave the
    blocks 10–15 s each until the deadline, and the last of the harness's × 25 blocks 0.6 s
    and no fleet (a plan of 35.8 M from the fallback, 22 M otherwise)."""
    from solver.solve.block_plans import LP_SUPPORT_MIN_S, block_limit_s

    blocks, left, given = 10, left_s, []
    for k in range(blocks, 0, -1):
        own = block_limit_s(left, k)
        given.append(own)
        left -= own  # it ran to its limit
    part = min(LP_SUPPORT_MIN_S, left_s / blocks)
    assert all(g >= part - 1e-9 for g in given)
    assert sum(given) <= left_s + 1e-9
    assert given[0] <= max(part, left_s - (blocks - 1) * part) + 1e-9


def test_an_ample_deadline_leaves_a_block_its_floors() -> None:
    """With time for every block's floor, a block's own limit passes its LP support's floor
    and its polish: the schedule of an unloaded machine is as before."""
    from solver.solve.block_plans import LP_SUPPORT_MIN_S, POLISH_EXTRA_S, block_limit_s

    assert block_limit_s(200.0, 10) >= LP_SUPPORT_MIN_S + POLISH_EXTRA_S
    assert block_limit_s(3.0, 1) == 3.0


def test_blocks_planned_after_a_slow_start_each_have_time(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """``plan_blocks`` with 40 s left for four distinct blocks planned in shares of the time,
    each spending what its floors ask (``LP_SUPPORT_MIN_S`` and ``POLISH_EXTRA_S``) or what its
    clock allows, on a clock that moves only as they spend: every block is planned, each with
    about an equal part of the 40 s. With the floors drawn on the plan's deadline alone the
    first three took 15, 15 and 10 s and the fourth was left unplanned."""
    import solver.solve.block_plans as bp
    from solver.solve.clock import Deadline

    now = [0.0]
    given: list[float] = []

    def spending(data: object, solver: str, share_s: float, gap: float,
                 deadline: Deadline | None = None) -> bp.Planned:
        assert deadline is not None
        given.append(deadline.left())
        now[0] += min(max(share_s, bp.LP_SUPPORT_MIN_S) + bp.POLISH_EXTRA_S, deadline.left())
        return bp.NOT_PLANNED_BLOCK

    monkeypatch.setattr(bp, "plan_block", spending)
    monkeypatch.setattr(bp, "is_direct", lambda *_: False)
    data = build_horizon_data(quarterly([1, 2, 3, 4]), lambda _: TABLE)
    deadline = Deadline(40.0, clock=lambda: now[0])
    deadline.reserve_s = 0.0
    bp.plan_blocks(data, [b.data for b in data.blocks], "highs", 1.0, 0.01, deadline=deadline)
    assert len(given) == 4
    assert min(given) >= 0.95 * 40.0 / 4  # less its own clock's assembly reserve (3 %)


def test_blocks_in_workers_after_a_slow_start_each_have_time(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """``in_workers`` (``--workers 2``) with 40 s left for ten distinct blocks, each spending
    what its floors ask or what its clock allows, two workers taking the jobs in turn, each on
    a clock that moves only as its own blocks spend: every block has time, about an equal
    part of its worker's 40 s. With the floors capped by the plan's deadline alone (as before
    ``block_limit_s`` reached the workers) each worker's first blocks took 15, 15 and 10 s and
    its last two nothing."""
    import solver.solve.block_plans as bp
    import solver.solve.workers as workers_module
    from solver.solve.clock import Deadline

    given: list[tuple[int, float]] = []
    now = [0.0]

    def spending(data: object, solver: str, share_s: float, gap: float,
                 deadline: Deadline | None = None, **_: object) -> bp.Planned:
        assert deadline is not None
        given.append((len(given), deadline.left()))
        now[0] += min(max(share_s, bp.LP_SUPPORT_MIN_S) + bp.POLISH_EXTRA_S, deadline.left())
        return bp.NOT_PLANNED_BLOCK

    class TwoInTurn:
        """Two workers, job k on worker k % 2, each with a clock of its own from 0 to 40 s."""

        def __init__(self, count: int) -> None:
            assert count == 2

        def __enter__(self) -> TwoInTurn:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def map(self, fn: Any, jobs: list[tuple[Any, ...]], deadline: Deadline) -> list[Any]:
            spent = [0.0, 0.0]
            out = []
            for k, job in enumerate(jobs):
                now[0] = 0.0
                clock = Deadline(40.0, clock=lambda: now[0])  # from the start of the blocks
                clock.reserve_s = 0.0
                now[0] = spent[k % 2]
                out.append(fn(clock, *job))
                spent[k % 2] = now[0]
            return out

    monkeypatch.setattr(bp, "plan_block", spending)
    monkeypatch.setattr(workers_module, "Workers", TwoInTurn)
    data = build_horizon_data(quarterly([1, 2, 3, 4]), lambda _: TABLE)
    programs = [data.blocks[0].data] * 10
    bp.in_workers(programs, 2, 1.0, 0.01, Deadline(40.0))
    assert len(given) == 10
    assert min(left for _, left in given) >= 0.95 * 40.0 / 5  # five blocks a worker


def test_a_block_whose_widened_restriction_finds_no_fleet_keeps_its_greedy_fleet(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A block whose LP support holds no fleet and whose widened restriction ends its time
    without one (medium × 1 under load: its first fleets cost 2–3 times the block's greedy
    fleet, or none was found and the plan fell back to greedy fleets of the priced blocks
    with orders bought for them) keeps the greedy fleet of its own program within its stock:
    a fleet that holds, said to be the greedy one, its bound the relaxation's."""
    import solver.solve.block_plans as bp
    from models.plan import SolveStatus
    from solver.solve.highs import RunResult

    data = build_horizon_data(quarterly([1, 2, 3, 4]), lambda _: TABLE)
    calls: list[int] = []

    def no_fleet(model: object, deadline: object, time_limit_s: float, gap: float,
                 empty: object, **watch: object) -> RunResult:
        calls.append(1)  # the support infeasible, then the widened restriction out of time
        status = SolveStatus.infeasible if len(calls) == 1 else SolveStatus.time_limit
        return RunResult(status, None, None, None, 0.0)

    monkeypatch.setattr(bp, "_restricted", no_fleet)
    program, values, outcome = bp.lp_support_block(data.blocks[3].data, 5.0, 0.01)
    assert len(calls) == 2
    assert values is not None and bp.holds_in(program, values)
    assert outcome.has_solution and outcome.report.name == bp.GREEDY_FLOOR
    assert outcome.report.objective == pytest.approx(bp._cost(program, values))
    assert outcome.report.bound is not None
    assert outcome.report.bound <= outcome.report.objective + 1e-6
