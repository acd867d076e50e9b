r"""The second stage of a ``--robust`` plan over periods: the least expected cost among the
fleets at the robust fleet's worst cost (docs/program.md, "P7 robust").

P7 minimises :math:`\theta \ge c_\xi` alone, so every demand scenario but the worst is free up
to :math:`\theta` and a search stopped at its gap keeps whatever it holds there: a user's
``plan --robust`` (fresh-s22 F2) paid 10,687,993 in its worst scenario — the expected plan's
worst too — and 5,803,081 in low and in base, where the expected plan pays 2,515,629 and
3,807,553, ordering 11 reserved nodes now where 3 do. An :math:`\varepsilon` weight on the
expected cost sits far below the 1 % stop gap and would not be searched.

:func:`robust_polish` solves the joint program again with :math:`c_\xi \le \theta^*` for
every :math:`\xi` (:math:`\theta^*`: the worst cost of the robust fleet; the rows
:math:`\theta \ge c_\xi` with :math:`\theta` bounded above by it), minimising
:math:`\sum_\xi p_\xi c_\xi`, from the robust fleet. That fleet meets every row, so the
stage never returns a dearer worst case nor a dearer expected one; it returns a cheaper
expected one where its search finds it in its time, proven the least at that worst only
where HiGHS closes its own gap. The plan's bound stays the one the robust search proved on
:math:`\theta`: this stage proves none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.program.periods import HorizonProgram
from solver.program.variables import BuildStopped, Program
from solver.solve.clock import Deadline
from solver.solve.highs import Model, Restriction, Vector, model_of, run

#: The stage a ``--robust`` plan over periods records after its robust search (``solver.stages``).
POLISH_STAGE = "robust-polish"
#: Share of the time left after the robust search the polish may take: it is the last stage
#: that solves, and the clock has already kept back the assembly's and the writing's time.
#: With half of it, base.yaml of fresh-s22 at load 13–15 left the polish 1.7 s of a 60-s limit
#: (15 s building, 15 s of blocks, the writing kept back) where it needed 1.74 s [1].
POLISH_SHARE = 1.0
#: Less time left than this and the polish is not tried: a copy of the joint program into
#: HiGHS and its presolve take about that on the harness's smaller cases [s].
POLISH_MIN_S = 1.0
#: Relative slack on the costs of a polished fleet: HiGHS holds ``θ ≤ θ*`` within its
#: feasibility tolerance; a fleet whose worst is dearer than the robust one's by more, or whose
#: expected cost is not lower by more, is not kept [1].
WORST_TOL = 1e-9


@dataclass(frozen=True)
class Polished:
    """What :func:`robust_polish` did: the worst and expected cost of the fleet before it and
    of the fleet it leaves in the variables (the same where it kept the robust one)."""

    worst_before: float
    expected_before: float
    worst: float
    expected: float

    @property
    def improved(self) -> bool:
        return self.expected < self.expected_before


def _scenario_vectors(hp: HorizonProgram, model: Model) -> list[tuple[float, Vector, float]]:
    """Per demand scenario: its probability, its cost :math:`c_\\xi` as a vector over the
    model's columns, and its constant."""
    out = []
    for s in hp.data.scenarios:
        expr = hp.cost[s.name]
        vec = np.zeros(model.columns_count)
        for var, coef in expr.items():
            vec[model.index[var.name]] += float(coef)
        out.append((s.probability, vec, float(expr.constant)))
    return out


def robust_polish(hp: HorizonProgram, program: Program, clock: Deadline, time_limit_s: float,
                  gap: float, nodes: int | None = None, model: Model | None = None
                  ) -> Polished | None:
    """The fleet in ``program``'s variables (the robust search's, ``hp.worst`` set) replaced
    by the cheapest in expected cost HiGHS finds whose every scenario costs at most that
    fleet's worst, in ``time_limit_s`` on ``clock`` (stopped by its ``gap`` on the expected
    cost, or after ``nodes`` branch-and-bound nodes: the same fleet on every run); kept only
    where it meets every row of the joint program, its worst is no dearer (``WORST_TOL``) and
    its expected cost is lower. ``model``: ``program``'s HiGHS model where the plan built one
    (each solve copies it afresh); ``None`` where the program could not be copied in time."""
    assert hp.worst is not None, "the polish is the second stage of a robust plan"
    if model is None:
        try:
            model = model_of(program, stop=clock.expired)
        except BuildStopped:
            return None
    scenarios = _scenario_vectors(hp, model)
    theta = model.index[hp.worst.name]

    def worst_of(x: Vector) -> float:
        return max(float(vec @ x) + k for _, vec, k in scenarios)

    def expected_of(x: Vector) -> float:
        return sum(p * (float(vec @ x) + k) for p, vec, k in scenarios)

    x0 = model.vector({v.name: float(v.varValue or 0.0) for v in model.variables})
    worst0 = worst_of(x0)
    x0[theta] = worst0
    expected0 = expected_of(x0)
    before = Polished(worst0, expected0, worst0, expected0)
    objective = sum(p * vec for p, vec, _ in scenarios)
    cap = Restriction(np.array([theta], dtype=np.int32), np.array([model.lower[theta]]),
                      np.array([worst0]))
    result = run(model, clock, time_limit_s, gap, restriction=cap, start=x0,
                 objective=np.asarray(objective, dtype=np.float64), nodes=nodes)
    if result.x is None:
        return before
    x = np.where(model.integer, np.round(result.x), result.x)
    worst = worst_of(x)
    x[theta] = worst
    expected = expected_of(x)
    if (model.broken_rows(x) or worst > worst0 + WORST_TOL * max(abs(worst0), 1.0)
            or expected >= expected0 - WORST_TOL * max(abs(expected0), 1.0)):
        return before
    model.load(x)
    return Polished(worst0, expected0, worst, expected)
