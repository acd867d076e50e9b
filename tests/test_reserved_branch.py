"""benchmarks/reserved_branch.py: the box of reserved fleets a disjunction over the reserved
fleet must cover — every fleet as cheap as the target lies in it, and it ends where the LP
relaxation passes the target."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import SizeSpec, generate_scenario  # noqa: E402
from benchmarks.reserved_branch import (  # noqa: E402
    Range,
    _highs,
    reserved_columns,
    reserved_ranges,
)
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402

#: tests/test_slice_lagrange.py's tiny program whose LP lies 15.5 % below its optimum.
TINY = SizeSpec(workloads=3, gpu_types=2, zones=2)


@pytest.fixture(scope="module")
def tiny() -> tuple[Program, Model, np.ndarray, float]:
    sc = generate_scenario(TINY, seed=1, scale=1)
    program = build_program(build_program_data(sc, build_capacity_table(sc)),
                            shared_two_nodes=True)
    model = model_of(program)
    h = _highs(model)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return program, model, np.array(h.getSolution().col_value), h.getInfo().objective_function_value


def _lp(model: Model, column: int, lower: float, upper: float, target: float) -> float | None:
    """The LP relaxation's value with one column (-1: the reserved nodes' sum, ``cols``) in
    [lower, upper] and the cost at most ``target``; ``None`` where no point has it."""
    import highspy

    h = _highs(model, relax=True)
    h.changeColsBounds(1, np.array([column], dtype=np.int32), np.array([lower]),
                       np.array([upper]))
    paid = np.flatnonzero(model.cost).astype(np.int32)
    h.addRow(-highspy.kHighsInf, target, len(paid), paid, model.cost[paid])
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(h.getInfo().objective_function_value)


def test_the_optimums_reserved_fleet_lies_in_the_box(
        tiny: tuple[Program, Model, np.ndarray, float]) -> None:
    program, model, x, optimum = tiny
    cols = reserved_columns(program, model)
    assert len(cols) == 4  # 2 zones × 2 GPU types
    box = reserved_ranges(program, model, optimum * (1 + 1e-7))
    r = np.round(x[cols])
    assert r.sum() > 0  # the optimum reserves nodes: the box is not trivially {0}
    for j, value in zip(cols, r, strict=True):
        (rng,) = [b for b in box if b.column == j]
        assert int(value) in rng.values
    assert int(r.sum()) in box[-1].values
    # at the LP relaxation's own value the box is narrower: the cost row is what bounds it
    h = _highs(model, relax=True)
    h.run()
    lp = h.getInfo().objective_function_value
    assert lp < optimum * 0.99
    tight = reserved_ranges(program, model, lp * (1 + 1e-7))
    assert sum(len(b.values) for b in tight) < sum(len(b.values) for b in box)


def test_the_box_ends_where_the_lp_passes_the_target(
        tiny: tuple[Program, Model, np.ndarray, float]) -> None:
    program, model, _, optimum = tiny
    target = optimum * 1.02
    box: list[Range] = reserved_ranges(program, model, target)
    upper = dict(zip(reserved_columns(program, model).tolist(),
                     model.upper[reserved_columns(program, model)], strict=True))
    checked = 0
    for b in box[:-1]:
        if not b.values:
            continue
        hi, lo = b.values[-1], b.values[0]
        # a point with the count at its largest value costs at most the target ...
        assert _lp(model, b.column, hi, upper[b.column], target) is not None
        assert _lp(model, b.column, 0.0, lo, target) is not None
        # ... and none with one node more (or less) does
        assert _lp(model, b.column, hi + 1, max(hi + 1, upper[b.column]), target) is None
        if lo >= 1:
            assert _lp(model, b.column, 0.0, lo - 1, target) is None
        checked += 1
    assert checked >= 1
