"""solver/solve/held_blocks.py: the blocks planned with the orders held, taken from the joint
program's arrays instead of being built again (issue 16), and the plan's blocks named as the
joint program names them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests/ imported as a package, as its neighbours do

from models.horizon import DemandScenario  # noqa: E402
from solver.program.periods import build_horizon_data, build_horizon_program  # noqa: E402
from solver.program.values import objective_of  # noqa: E402
from solver.program.variables import NameBook, Program, Variables  # noqa: E402
from solver.solve import block_plans, horizon  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.held_blocks import HeldBlocks  # noqa: E402
from solver.solve.highs import model_of  # noqa: E402
from solver.solve.horizon import horizon_start  # noqa: E402
from solver.solve.order_choice import choose_orders, held_block  # noqa: E402
from tests.test_horizon_start import GROWTH  # noqa: E402
from tests.test_periods import QUARTER, TABLE, quarterly  # noqa: E402

#: Two demand scenarios: low keeps the growth, high doubles it from the second quarter.
TWO = (DemandScenario(name="low", probability=0.5),
       DemandScenario(name="high", probability=0.5, growth=(1.0, 2.0, 2.0, 2.0)))


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every block program ``block_plans`` builds from here on (its data)."""
    built: list[Any] = []
    real: Callable[..., Any] = block_plans.build_program

    def counting(data: Any, *args: Any, **kw: Any) -> Any:
        built.append(data)
        return real(data, *args, **kw)

    monkeypatch.setattr(block_plans, "build_program", counting)
    return built


@pytest.mark.parametrize("from_joint", [True, False])
def test_held_blocks_are_not_built_and_plan_the_optimum(monkeypatch: pytest.MonkeyPatch,
                                                        from_joint: bool) -> None:
    """The first fleet's test case (demand 1, 1, 1, 2 nodes; optimum one 12-month reservation
    and the fourth quarter's second node on demand) with its blocks planned in shares of the
    time (the size limit set to 0): from the joint program's arrays, no held block is built
    and the joint solve is handed the copy they came from; built (the flag off), each
    distinct held block is. The same optimum either way. (The check of the orders chosen
    against the held blocks' LPs, ``horizon.nudged_choice``, builds its own LPs: off here, it
    is tests/test_order_nudge.py's.)"""
    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    monkeypatch.setattr(horizon, "HELD_FROM_JOINT", from_joint)
    monkeypatch.setattr(horizon, "ORDER_NUDGE", False)
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    built = _builds(monkeypatch)
    start, _, timed, (plans,) = horizon_start(hp, "highs", 20.0, 1e-6,
                                              deadline=Deadline(60.0))
    assert start is not None and timed
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    assert objective_of(program, start) == pytest.approx(8760 * 0.45 + QUARTER)
    # the two distinct priced blocks' LPs are built either way (Q1-Q3 alike, Q4); the held
    # blocks (Q1-Q3 hold one node alike, Q4 two) only when the flag is off
    priced = [d for d in built if all(o.price_per_gpu_hour > 0 for o in d.offers)]
    assert len(priced) == 2
    if from_joint:
        assert len(built) == 2 and plans.joint is not None
        assert plans.joint.columns_count == len(hp.prob.variables())
    else:
        assert len(built) == 4 and plans.joint is None


def test_a_held_block_from_the_joint_arrays_plans_as_the_block_built() -> None:
    """Every block of a two-scenario case with the orders held: the LP support's step on
    the joint program's arrays has the built block's bound and fleet cost (both proven at
    gap 0), and its fleet, named as the joint program names it, runs the built one's
    replicas."""
    from models.common import PurchaseKind
    from solver.program.keys import PoolKey

    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH, demands=TWO),
                                                  lambda _: TABLE))
    data = hp.data
    pool = PoolKey("a", "G", PurchaseKind.reserved)
    running = {(b.scenario, b.period, pool): 1.0 for b in data.blocks}
    chosen, _ = choose_orders(data, running, "highs")
    assert chosen
    joint = model_of(Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                             data.blocks[0].data))
    held = HeldBlocks(hp, joint, chosen)
    for i, block in enumerate(data.blocks):
        own = held_block(data, block, chosen)
        p1, v1, o1 = block_plans.lp_support_block(own, 10.0, 0.0)
        p2, v2, o2 = block_plans.lp_support_held(held.block(i), own, 10.0, 0.0)
        assert v1 is not None and v2 is not None
        assert p2 is held.program(i) and all(n.startswith(f"b{i}_") for n in v2)
        assert o2.report.bound == pytest.approx(o1.report.bound, rel=1e-9, abs=1e-6)
        assert block_plans._cost(p2, v2) == pytest.approx(block_plans._cost(p1, v1),
                                                          rel=1e-9, abs=1e-6)
        assert o2.report.objective == pytest.approx(block_plans._cost(p2, v2), abs=1e-6)


def test_another_blocks_cheaper_fleet_is_taken_across_names(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """``cheapest_of_period`` with blocks named as the joint program names them: low's second
    quarter given a dear fleet (every node on demand) takes high's fleet of that quarter
    where it holds in low (its nodes within what low's orders hold), renamed to low's
    columns; a fleet built alone (the other naming) is taken too."""
    from models.common import COMMITTED_KINDS

    monkeypatch.setattr(block_plans, "DIRECT_COLUMNS", 0)
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH, demands=TWO),
                                                  lambda _: TABLE))
    data = hp.data
    orders = {key: 2 for key in hp.orders}
    joint = model_of(Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                             data.blocks[0].data))
    held = HeldBlocks(hp, joint, orders)
    low = next(i for i, b in enumerate(data.blocks) if b.scenario == "low" and b.period == 1)
    high = next(i for i, b in enumerate(data.blocks) if b.scenario == "high" and b.period == 1)
    plans: list[block_plans.Planned] = [(None, None, block_plans.NOT_PLANNED)] * len(
        data.blocks)
    for i in (low, high):
        own = held_block(data, data.blocks[i], orders)
        plans[i] = block_plans.lp_support_held(held.block(i), own, 10.0, 0.0)
    p_low, v_low, o_low = plans[low]
    assert v_low is not None and p_low is held.program(low)
    dear = {name: 0.0 for name in v_low}  # low's fleet on demand only: as many nodes there
    program = held.program(low)
    for key, y in program.v.nodes.items():
        if key.purchase not in COMMITTED_KINDS:
            dear[y.name] = 1.0  # at most one node a slice runs low's peak of 1
    for key, x in program.v.replicas.items():
        dear[x.name] = 1.0 if key.purchase not in COMMITTED_KINDS else 0.0
    plans[low] = (p_low, dear, o_low)
    if not block_plans.holds_in(program, dear):
        pytest.skip("the hand-made dear fleet does not hold in this block")
    taken = block_plans.cheapest_of_period(data, plans, low, held)
    assert taken is not None and taken is not dear
    assert all(n.startswith(f"b{low}_") for n in taken)
    assert block_plans._cost(program, taken) < block_plans._cost(program, dear)
    # high's fleet built alone (its own names) is renamed and taken alike
    built = block_plans.lp_support_block(held_block(data, data.blocks[high], orders), 10.0, 0.0)
    plans[high] = built
    again = block_plans.cheapest_of_period(data, plans, low, held)
    assert again is not None and all(n.startswith(f"b{low}_") for n in again)
    assert block_plans._cost(program, again) == pytest.approx(block_plans._cost(program,
                                                                                taken))


def test_names_moved_between_blocks_and_back() -> None:
    """``as_named``: a fleet named as the joint program names block 3 renamed to block 7's
    columns, or to the block built alone (whose empty columns may be missing: zeros
    dropped); and back."""
    joint = {"b3_x_a": 2.0, "b3_y": 0.0, "b1_z": 5.0}
    assert block_plans.as_named(joint, 3, True, 7, True) == {"b7_x_a": 2.0, "b7_y": 0.0}
    assert block_plans.as_named(joint, 3, True, 7, False) == {"x_a": 2.0}
    assert block_plans.as_named({"x_a": 2.0}, 3, False, 7, True) == {"b7_x_a": 2.0}
    assert block_plans.as_named({"x_a": 2.0}, 3, False, 7, False) == {"x_a": 2.0}


def test_robust_plans_take_the_built_blocks() -> None:
    """With ``--robust`` the joint objective is the worst scenario's cost alone: the blocks'
    columns cost nothing there, so no held block is taken from its arrays."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE),
                               robust=True)
    joint = model_of(Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                             hp.data.blocks[0].data))
    with pytest.raises(ValueError, match="robust"):
        HeldBlocks(hp, joint, {})
