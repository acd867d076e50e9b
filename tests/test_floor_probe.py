"""benchmarks/floor_probe.py: the per-workload cost floors are valid — every fleet of the
program meets them, whatever it was chosen for — and they cut the LP relaxation of a small case."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.floor_probe import floors  # noqa: E402
from benchmarks.generate import SizeSpec, generate_scenario  # noqa: E402
from benchmarks.root_probe import Row  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.backends import THREADS  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402

#: tests/test_root_probe.py's tiny programs (3 workloads, 2 GPU types, 2 zones, 24 slices).
TINY = SizeSpec(workloads=3, gpu_types=2, zones=2)


def _program(seed: int, scale: int) -> tuple[Program, Model]:
    sc = generate_scenario(TINY, seed=seed, scale=scale)
    program = build_program(build_program_data(sc, build_capacity_table(sc)),
                            shared_two_nodes=True)
    return program, model_of(program)


def _solve(model: Model, cost: np.ndarray, rows: Sequence[Row] = (), relax: bool = False,
           gap: float = 0.05) -> tuple[float, np.ndarray]:
    """A fleet of the program (any feasible one: 10 s, ``gap``), or its LP relaxation."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    # the planner's thread count: HiGHS refuses another once its pool exists in the process
    for option, value in (("threads", THREADS.get()), ("time_limit", 10.0), ("mip_rel_gap", gap),
                          ("random_seed", 0), ("solve_relaxation", relax)):
        h.setOptionValue(option, value)
    h.changeColsCost(model.columns_count, np.arange(model.columns_count, dtype=np.int32), cost)
    for cols, coefs, lower in rows:
        h.addRow(lower, highspy.kHighsInf, len(cols), cols, coefs)
    h.run()
    assert h.getInfo().primal_solution_status == 2  # a feasible point
    return h.getInfo().objective_function_value, np.array(h.getSolution().col_value)


@pytest.mark.parametrize("per_slice", [False, True])
@pytest.mark.parametrize(("seed", "scale"), [(0, 1), (1, 1), (0, 25)])
def test_every_fleet_meets_the_floors_whatever_it_was_chosen_for(
        seed: int, scale: int, per_slice: bool) -> None:
    program, model = _program(seed, scale)
    rows = floors(program, model, limit_s=10.0, per_slice=per_slice)
    workloads = len(program.data.workloads)
    assert len(rows) == (workloads if not per_slice else len(
        [k for k in program.data.demand_rps if k[0] not in program.data.volume_requests]))
    rng = np.random.default_rng(seed)
    for cost in [model.cost] + [model.cost * rng.uniform(0.1, 10.0, model.columns_count)
                                for _ in range(2)]:
        _, x = _solve(model, cost)  # an integer fleet, cheap at its own prices
        assert not model.broken_rows(x)
        for cols, coefs, lower in rows:
            assert float(coefs @ x[cols]) >= lower * (1 - 1e-9) - 1e-6


def test_the_floors_cut_the_lp_relaxation_at_scale() -> None:
    # at ×25 each workload's replicas round: the rows lift the LP relaxation (by 0.9 % here,
    # measured 2026-12-04), where at ×1 the tiny programs' LP loses in the nodes instead
    program, model = _program(0, 25)
    rows = floors(program, model, limit_s=10.0)
    lp, _ = _solve(model, model.cost, relax=True)
    lp_rows, _ = _solve(model, model.cost, rows, relax=True)
    assert lp_rows > lp * 1.005


def test_the_floors_keep_the_optimum() -> None:
    program, model = _program(1, 1)
    rows = floors(program, model, limit_s=10.0)
    best, _ = _solve(model, model.cost, gap=1e-6)
    best_rows, _ = _solve(model, model.cost, rows, gap=1e-6)
    assert best_rows == pytest.approx(best, rel=1e-6)
    assert sum(lower for _, _, lower in rows) <= best * (1 + 1e-9)


def test_floors_priced_by_node_instead_of_by_gpu_are_broken_by_a_fleet() -> None:
    # the check above can fail: a floor whose bound is each workload's cost on whole nodes
    # of its own (the price of a node for every GPU a replica uses: as if no node were shared)
    # is more than the optimum pays, so the optimum breaks at least one such row
    program, model = _program(1, 1)
    rows = floors(program, model, limit_s=10.0)
    _, x = _solve(model, model.cost, gap=1e-6)
    gpus_per_node = min(o.gpus_per_node for o in program.data.offers)
    inflated = [(cols, coefs, lower * gpus_per_node) for cols, coefs, lower in rows]
    assert any(float(coefs @ x[cols]) < lower for cols, coefs, lower in inflated)
