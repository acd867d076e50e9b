"""A start handed to HiGHS before its presolve: the fleet and the proof HiGHS returns are
checked against the fleet's own cost (solver/solve/highs.py, ``start_misread``)."""

from __future__ import annotations

import pulp

from models.plan import SolveStatus
from solver.program.variables import NameBook, Program, Variables
from solver.solve.clock import Deadline
from solver.solve.highs import model_of, run


def _program() -> tuple[Program, dict[str, float]]:
    """Three integer columns, two rows: ``a`` and ``b`` free of cost, bound by the rows;
    ``c`` costs 155,577.6 and is in no row (an order no block holds). The optimum is 0
    (``c`` = 0; ``a`` = 0, ``b`` = 9: 0.237 × 9 = 2.13 ≥ 1.9068, 4 × 9 = 36 ≤ 42). The start
    holds ``c`` = 10, 1,555,776, and meets both rows (2 + 40 = 42; 0.0932 + 2.37 ≥ 1.9068).
    The shape cut down (rows and columns dropped while HiGHS still misread it) from the joint
    program of the finding's ``asof_after.yaml``, the start its blocks' fleet."""
    prob = pulp.LpProblem("start_misread", pulp.LpMinimize)
    a, b, c = (prob.add_variable(n, 0, cat="Integer") for n in ("a", "b", "c"))
    prob += 155577.6 * c
    prob += 2 * a + 4 * b <= 42, "room"
    prob += 0.0932 * a + 0.237 * b >= 1.9068, "need"
    program = Program(prob, Variables(names=NameBook()), None)  # type: ignore[arg-type]
    return program, {"a": 1.0, "b": 10.0, "c": 10.0}


def test_a_start_highs_misreads_is_not_returned_as_proven_optimal() -> None:
    program, start = _program()
    model = model_of(program)
    x0 = model.vector(start)
    assert not model.broken_rows(x0)
    result = run(model, Deadline(30.0), 30.0, 0.01, start=x0, nodes=50)
    # HiGHS 1.16 alone: "optimal", the start returned at 1,555,776 with a bound of 0
    assert result.status is SolveStatus.optimal
    assert result.objective == 0.0  # c = 0
    assert result.x is not None and not model.broken_rows(result.x)
    assert result.bound is not None and result.bound <= result.objective + 1e-6



def test_a_restriction_with_held_cost_is_solved_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A restriction (:func:`held_model`) carries its held columns' cost as HiGHS's offset:
    HiGHS's objective of a fleet counts it, so it is no sign of a misread start. Counted
    without it, every hour of the ``hours`` pass was solved twice (medium × 25 over periods
    at 120 s: 21.81 M at 3.8 % where it had been 21.54 M at 2.6 %)."""
    import numpy as np

    from solver.solve import highs
    from solver.solve.highs import held_model

    program, start = _program()
    model = model_of(program)
    x0 = model.vector(start)
    part = held_model(model, np.array([model.index["a"], model.index["b"]], dtype=np.int32), x0)
    assert part.model.lp.offset_ > 0.0  # c held at 10: 1,555,776
    calls = []
    solve = highs.run

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(kwargs.get("start_after_root", False))
        return solve(*args, **kwargs)

    monkeypatch.setattr(highs, "run", counted)
    result = highs.run(part.model, Deadline(30.0), 30.0, 0.01, start=x0[part.columns])
    assert result.x is not None
    assert calls == [False]  # no second solve with the start after the root
