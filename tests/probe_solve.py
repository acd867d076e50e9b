"""One HiGHS solve of a program's model with its cost replaced and rows added, for the tests of
benchmarks/root_probe.py and floor_probe.py: a fleet found under some other cost must still
meet the rows, and the rows must not cut off the optimum."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.root_probe import Row  # noqa: E402
from solver.solve.backends import THREADS  # noqa: E402
from solver.solve.highs import Model  # noqa: E402


def solve_with_rows(model: Model, cost: np.ndarray, rows: Sequence[Row] = (),
                    relax: bool = False, gap: float = 0.05, limit_s: float = 10.0
                    ) -> tuple[float, np.ndarray]:
    """A fleet of ``model`` under ``cost`` with ``rows`` added (any feasible one within
    ``limit_s`` and ``gap``), or its LP relaxation: the objective and the column values."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    # the planner's thread count: HiGHS refuses another once its pool exists in the process
    for option, value in (("threads", THREADS.get()), ("time_limit", limit_s), ("mip_rel_gap", gap),
                          ("random_seed", 0), ("solve_relaxation", relax)):
        h.setOptionValue(option, value)
    h.changeColsCost(model.columns_count, np.arange(model.columns_count, dtype=np.int32), cost)
    for cols, coefs, lower in rows:
        h.addRow(lower, highspy.kHighsInf, len(cols), cols, coefs)
    h.run()
    assert h.getInfo().primal_solution_status == 2  # a feasible point
    return h.getInfo().objective_function_value, np.array(h.getSolution().col_value)
