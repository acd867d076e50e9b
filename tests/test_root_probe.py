"""benchmarks/root_probe.py: the aggregated node cover rows are valid — every fleet of the
program meets them, whatever it costs and whatever the weights — and implied by the LP
relaxation."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cache, partial
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import SizeSpec, generate_scenario  # noqa: E402
from benchmarks.root_probe import Row, aggregated_covers  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402
from tests.probe_solve import solve_with_rows  # noqa: E402

#: tests/test_slice_lagrange.py's tiny programs (3 workloads, 2 GPU types, 2 zones, 24 slices),
#: at ×25 so that their fleets hold many replicas per node group, as the probe's cases do.
TINY = SizeSpec(workloads=3, gpu_types=2, zones=2)


@cache
def _program(seed: int) -> tuple[Program, Model]:
    """Built once per seed for the whole module: the tests only read it."""
    sc = generate_scenario(TINY, seed=seed, scale=25)
    program = build_program(build_program_data(sc, build_capacity_table(sc)),
                            shared_two_nodes=True)
    return program, model_of(program)


def _weights(program: Program, rng: np.random.Generator) -> list[dict[tuple[str, str], float]]:
    """λ by (workload, slice): all ones, random, and each demand's inverse (any λ ≥ 0 gives a
    valid row)."""
    keys = [k for k in program.data.demand_rps if k[0] not in program.data.volume_requests]
    return [{k: 1.0 for k in keys},
            {k: float(rng.uniform(0.0, 1.0)) for k in keys},
            {k: 1.0 / program.data.demand_rps[k] for k in keys}]


_solve = partial(solve_with_rows, limit_s=5.0)  # any feasible fleet: 5 s, 5 % gap


@cache
def _weights_and_fleets(seed: int) -> tuple[list[dict[tuple[str, str], float]],
                                           list[np.ndarray]]:
    """``seed``'s three weightings and three integer fleets, each cheap at its own prices (the
    program's, then two random re-pricings), drawn from one generator in that order. Both
    ``lost_zones`` cases check their rows against the same fleets: solved once per module."""
    program, model = _program(seed)
    rng = np.random.default_rng(seed)
    weights = _weights(program, rng)
    costs = [model.cost] + [model.cost * rng.uniform(0.1, 10.0, model.columns_count)
                            for _ in range(2)]
    return weights, [_solve(model, cost)[1] for cost in costs]


def _least_activity(rows: Sequence[Row], x: np.ndarray) -> float:
    return min(float(coefs @ x[cols]) for cols, coefs, _ in rows)


@pytest.mark.parametrize("lost_zones", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_fleet_meets_the_rows_whatever_it_costs(seed: int, lost_zones: bool) -> None:
    program, model = _program(seed)
    weights, fleets = _weights_and_fleets(seed)
    rows = [row for lam in weights
            for row in aggregated_covers(program, model, lam, lost_zones=lost_zones)]
    # one a slice with fixed demand (and zone lost: chat asks for zone loss), for each λ
    assert len(rows) == 3 * 24 * (len(program.data.zones) if lost_zones else 1)
    for x in fleets:  # integer fleets, each cheap at its own prices
        assert not model.broken_rows(x)
        assert _least_activity(rows, x) >= 1.0 - 1e-7


def test_the_rows_at_the_lp_duals_leave_the_lp_relaxation_as_it_is() -> None:
    program, model = _program(0)
    rows = aggregated_covers(program, model)  # λ: the LP's duals of the demand rows
    assert rows
    lp, _ = _solve(model, model.cost, relax=True)
    lp_rows, _ = _solve(model, model.cost, rows, relax=True)
    assert lp_rows == pytest.approx(lp, rel=1e-9)


def test_rows_counting_gpus_as_nodes_are_broken_by_a_fleet() -> None:
    # the check above can fail: the same rows without the GPUs per node in the coefficients
    # (a node counted as one GPU) are broken by the program's own fleet
    program, model = _program(0)
    lam = _weights(program, np.random.default_rng(0))[0]
    per_gpu = []
    for cols, coefs, lower in aggregated_covers(program, model, lam):
        gpus = np.array([program.v.offer[k.pool].gpus_per_node for k in
                         (next(key for key, y in program.v.nodes.items()
                               if model.index[y.name] == j) for j in cols)])
        per_gpu.append((cols, coefs / gpus, lower))
    x = _weights_and_fleets(0)[1][0]  # the program's own fleet, at its own prices
    assert _least_activity(per_gpu, x) < 1.0
