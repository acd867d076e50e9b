"""benchmarks/floor_probe.py: the per-workload cost floors are valid — every fleet of the
program meets them, whatever it was chosen for — and they cut the LP relaxation of a small case."""

from __future__ import annotations

import sys
from functools import cache
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
from solver.solve.highs import Model, model_of  # noqa: E402
from tests.probe_solve import solve_with_rows  # noqa: E402

#: Wall-clock limit of the solves that must reach the optimum (1e-6 gap) [s]: they end by
#: their gap in seconds, but at 10 s the optimum without rows stopped short under a load of
#: 12-17 (2026-12-04: 95,485 with the rows against 96,978 without; failed on main too).
EXACT_S = 120.0
#: tests/test_root_probe.py's tiny programs (3 workloads, 2 GPU types, 2 zones, 24 slices).
TINY = SizeSpec(workloads=3, gpu_types=2, zones=2)


@cache
def _program(seed: int, scale: int) -> tuple[Program, Model]:
    """Built once per (seed, scale) for the whole module: the tests only read it."""
    sc = generate_scenario(TINY, seed=seed, scale=scale)
    program = build_program(build_program_data(sc, build_capacity_table(sc)),
                            shared_two_nodes=True)
    return program, model_of(program)


@cache
def _floors(seed: int, scale: int, per_slice: bool) -> list[Row]:
    """The floor rows of (seed, scale), computed once per module (each is a run of HiGHS per
    workload or slice): the validity test and the LP-cut, optimum and node-priced tests read
    the same rows."""
    program, model = _program(seed, scale)
    return floors(program, model, limit_s=10.0, per_slice=per_slice)


@cache
def _fleets(seed: int, scale: int) -> list[np.ndarray]:
    """Integer fleets of (seed, scale), each cheap at its own prices (the program's, then two
    random re-pricings of ``seed``'s generator): both ``per_slice`` cases check their rows
    against the same fleets, so each is solved once."""
    _, model = _program(seed, scale)
    rng = np.random.default_rng(seed)
    costs = [model.cost] + [model.cost * rng.uniform(0.1, 10.0, model.columns_count)
                            for _ in range(2)]
    return [_solve(model, cost)[1] for cost in costs]


@cache
def _optimum(seed: int, scale: int) -> tuple[float, np.ndarray]:
    """The program's optimum without floor rows (1e-6 gap), solved once per module."""
    _, model = _program(seed, scale)
    return _solve(model, model.cost, gap=1e-6, limit_s=EXACT_S)


_solve = solve_with_rows  # 10 s, 5 % gap unless told


@pytest.mark.parametrize("per_slice", [False, True])
@pytest.mark.parametrize(("seed", "scale"), [(0, 1), (1, 1), (0, 25)])
def test_every_fleet_meets_the_floors_whatever_it_was_chosen_for(
        seed: int, scale: int, per_slice: bool) -> None:
    program, model = _program(seed, scale)
    rows = _floors(seed, scale, per_slice)
    workloads = len(program.data.workloads)
    assert len(rows) == (workloads if not per_slice else len(
        [k for k in program.data.demand_rps if k[0] not in program.data.volume_requests]))
    for x in _fleets(seed, scale):  # integer fleets, each cheap at its own prices
        assert not model.broken_rows(x)
        for cols, coefs, lower in rows:
            assert float(coefs @ x[cols]) >= lower * (1 - 1e-9) - 1e-6


def test_the_floors_cut_the_lp_relaxation_at_scale() -> None:
    # at ×25 each workload's replicas round: the rows lift the LP relaxation (by 0.9 % here,
    # measured 2026-12-04), where at ×1 the tiny programs' LP loses in the nodes instead
    _, model = _program(0, 25)
    rows = _floors(0, 25, False)
    lp, _ = _solve(model, model.cost, relax=True)
    lp_rows, _ = _solve(model, model.cost, rows, relax=True)
    assert lp_rows > lp * 1.005


def test_the_floors_keep_the_optimum() -> None:
    _, model = _program(1, 1)
    rows = _floors(1, 1, False)
    best, _ = _optimum(1, 1)
    best_rows, _ = _solve(model, model.cost, rows, gap=1e-6, limit_s=EXACT_S)
    assert best_rows == pytest.approx(best, rel=1e-6)
    assert sum(lower for _, _, lower in rows) <= best * (1 + 1e-9)


def test_floors_priced_by_node_instead_of_by_gpu_are_broken_by_a_fleet() -> None:
    # the check above can fail: a floor whose bound is each workload's cost on whole nodes
    # of its own (the price of a node for every GPU a replica uses: as if no node were shared)
    # is more than the optimum pays, so the optimum breaks at least one such row
    program, _ = _program(1, 1)
    rows = _floors(1, 1, False)
    _, x = _optimum(1, 1)
    gpus_per_node = min(o.gpus_per_node for o in program.data.offers)
    inflated = [(cols, coefs, lower * gpus_per_node) for cols, coefs, lower in rows]
    assert any(float(coefs @ x[cols]) < lower for cols, coefs, lower in inflated)
