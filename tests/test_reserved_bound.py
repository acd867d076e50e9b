"""benchmarks/reserved_bound.py: the bound by slice with the reserved node counts held lies
between the LP relaxation so held and the cheapest fleet with those reserved node counts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import SizeSpec, generate_scenario  # noqa: E402
from benchmarks.reserved_bound import GivenReserved, candidates  # noqa: E402
from benchmarks.slice_lagrange import _highs, lp_duals  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402

#: tests/test_slice_lagrange.py's tiny program: seed 1's LP relaxation (80,720) lies 15.5 %
#: below its optimum (95,484.58), one reserved H100 node in each of its two zones.
TINY = SizeSpec(workloads=3, gpu_types=2, zones=2)


@pytest.fixture(scope="module")
def tiny() -> tuple[GivenReserved, float, np.ndarray, float]:
    sc = generate_scenario(TINY, seed=1, scale=1)
    given = GivenReserved.of(build_program(build_program_data(sc, build_capacity_table(sc))))
    lp_value, _ = lp_duals(given.lag.model)
    h = _highs(given.lag.model.lp, False, 120.0, 0.0)
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    optimum = h.getInfo().objective_function_value
    return given, lp_value, np.array(h.getSolution().col_value), optimum


def _optimum_given(given: GivenReserved, reserved: np.ndarray) -> float:
    h = _highs(given.lag.model.lp, False, 120.0, 0.0)
    h.changeColsBounds(len(given.nodes), given.nodes, reserved, reserved)
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return float(h.getInfo().objective_function_value)


def test_the_reserved_node_counts_are_one_per_zone_and_gpu(
        tiny: tuple[GivenReserved, float, np.ndarray, float]) -> None:
    given, *_ = tiny
    assert len(given.nodes) == 4  # 2 zones × 2 GPU types
    names = [given.lag.model.variables[j].name for j in given.nodes]
    assert all(n.endswith("_reserved_all") for n in names)


def test_held_at_the_optimum_s_reserved_fleet_the_bound_reaches_the_optimum(
        tiny: tuple[GivenReserved, float, np.ndarray, float]) -> None:
    given, lp_value, x, optimum = tiny
    reserved = np.round(x[given.nodes])
    held_lp, duals = given.lp(reserved)
    bound = given.bound(reserved, duals).bound
    # 95,484.58 = the optimum itself: its reserved fleet leaves nothing to round; without the
    # reserved node counts held the same split gives 81,251 (Run K), the LP 80,720
    assert bound > lp_value * 1.15
    assert held_lp * (1 - 1e-7) <= bound <= optimum * (1 + 1e-7)


def test_at_any_reserved_fleet_the_bound_is_at_most_its_cheapest_fleet(
        tiny: tuple[GivenReserved, float, np.ndarray, float]) -> None:
    given, _, x, _ = tiny
    lp_x = x  # any point: only its reserved node counts are read, rounded three ways
    for label, reserved in list(candidates(given, x, lp_x).items())[:5]:
        held_lp, duals = given.lp(reserved)
        bound = given.bound(reserved, duals).bound
        cheapest = _optimum_given(given, reserved)
        assert held_lp * (1 - 1e-7) <= bound <= cheapest * (1 + 1e-7), label
