"""solver/program/values.py: a start's cost and rows read a column it leaves out as zero."""

from __future__ import annotations

import pytest

from solver.program.periods import build_horizon_data, build_horizon_program
from solver.program.values import objective_of, violated_rows
from solver.program.variables import NameBook, Program, Variables
from solver.solve.horizon import horizon_start
from tests.test_horizon_start import GROWTH
from tests.test_periods import QUARTER, TABLE, quarterly


def test_a_start_without_its_zero_columns_costs_what_it_costs_with_them() -> None:
    """Demand 1, 1, 1, 2 nodes: the first fleet, 3,942 + 2,190, holds every row and costs the
    same once every column it sets to zero is left out (a block's fleet named only where it
    runs something), where a lookup of each cost column raised ``KeyError``."""
    hp = build_horizon_program(build_horizon_data(quarterly(GROWTH), lambda _: TABLE))
    start, _, _, _ = horizon_start(hp, "highs", 10.0, 1e-6)
    assert start is not None
    program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                      hp.data.blocks[0].data)
    sparse = {name: x for name, x in start.items() if x != 0.0}
    zero_cost = [v for v in program.v.cost if v.name not in sparse]
    assert zero_cost  # some priced column is left out
    assert violated_rows(program, sparse) == []
    assert objective_of(program, sparse) == pytest.approx(8760 * 0.45 + QUARTER)
