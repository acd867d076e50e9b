"""benchmarks/slice_lagrange.py: the Lagrangian bound by slice is a valid bound at any
multipliers — at or above the LP relaxation at its duals, never above the integer optimum."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import SizeSpec, generate_scenario  # noqa: E402
from benchmarks.slice_lagrange import SliceLagrangian, _highs, lp_duals, maximise  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402

#: A generated program HiGHS proves optimal in a second or two: 3 workloads (one batch with a
#: daily volume spanning the slices), 2 GPU types, 2 zones, 24 slices, ~1,000 columns. Seed 1's
#: LP relaxation lies well below its integer optimum (the rounding the bound is after).
TINY = SizeSpec(workloads=3, gpu_types=2, zones=2)


@pytest.fixture(scope="module")
def tiny() -> tuple[SliceLagrangian, float, Any, float]:
    sc = generate_scenario(TINY, seed=1, scale=1)
    lag = SliceLagrangian.of(build_program(build_program_data(sc, build_capacity_table(sc))))
    lp_value, duals = lp_duals(lag.model)
    h = _highs(lag.model.lp, False, 120.0, 0.0)
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return lag, lp_value, duals, h.getInfo().objective_function_value


def test_the_split_has_what_links_the_slices(tiny: tuple[SliceLagrangian, float, Any, float]
                                            ) -> None:
    lag, *_ = tiny
    assert lag.slices == 24
    assert len(lag.all_day) > 0 and len(lag.spanning) == 1  # nightly summaries' daily volume
    # every column is a slice's own or all-day, once
    cols = np.concatenate([*lag.own, lag.all_day])
    assert sorted(cols.tolist()) == list(range(lag.model.columns_count))


def test_slices_as_lps_at_the_duals_give_back_the_lp(
        tiny: tuple[SliceLagrangian, float, Any, float]) -> None:
    lag, lp_value, duals, _ = tiny
    check = SliceLagrangian(lag.model, relax=True)
    check.split(lag.column_slice)
    assert check.evaluate(*check.from_duals(duals)).bound == pytest.approx(lp_value, rel=1e-7)


def test_integer_slices_lie_between_the_lp_and_the_optimum(
        tiny: tuple[SliceLagrangian, float, Any, float]) -> None:
    lag, lp_value, duals, optimum = tiny
    assert optimum > lp_value * 1.05  # the instance has a gap to close
    bound = lag.evaluate(*lag.from_duals(duals)).bound
    assert lp_value * (1 - 1e-7) <= bound <= optimum * (1 + 1e-7)


def test_any_multipliers_give_a_bound_below_the_optimum(
        tiny: tuple[SliceLagrangian, float, Any, float]) -> None:
    lag, _, duals, optimum = tiny
    lam, mu = lag.from_duals(duals)
    rng = np.random.default_rng(0)
    for _ in range(2):
        noisy_lam = lam + rng.normal(0.0, 1.0 + np.abs(lam))
        noisy_mu = lag.signed(mu + rng.normal(0.0, 1.0 + np.abs(mu)))
        assert lag.evaluate(noisy_lam, noisy_mu).bound <= optimum * (1 + 1e-7)


def test_subgradient_steps_keep_the_best_bound_valid(
        tiny: tuple[SliceLagrangian, float, Any, float]) -> None:
    lag, _, duals, optimum = tiny
    lam, mu = lag.from_duals(duals)
    start = lag.evaluate(lam, mu).bound
    best, log = maximise(lag, lam, mu, optimum, steps=2, theta=0.5)
    assert len(log) == 3 and log[0].bound == pytest.approx(start)
    assert start <= best <= optimum * (1 + 1e-7)
    assert all(step.bound <= optimum * (1 + 1e-7) for step in log)
