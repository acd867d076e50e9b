"""Queueing formulas: M/G/1 waits against the M/M/1 closed forms, Poisson and length samples."""

from __future__ import annotations

import math

import pytest

from models.workload import TokenPercentiles
from solver.queueing import (
    length_samples,
    pk_mean_wait_ms,
    poisson_p95,
    wait_quantile_ms,
)


def test_pk_mean_wait_equals_mm1_for_exponential_service() -> None:
    # λ = 0.5/ms, E[S] = 1 ms, E[S²] = 2 ms² (exponential): W = 0.5 × 2 / (2 × 0.5) = 1 ms,
    # the M/M/1 wait ρ / (μ − λ) = 0.5 / 0.5 = 1 ms.
    assert pk_mean_wait_ms(0.5, 1.0, 2.0) == pytest.approx(1.0)


def test_pk_mean_wait_deterministic_is_half_of_exponential() -> None:
    # M/D/1: E[S²] = 1 → W = 0.5 × 1 / (2 × 0.5) = 0.5 ms
    assert pk_mean_wait_ms(0.5, 1.0, 1.0) == pytest.approx(0.5)


def test_saturated_queue_waits_forever() -> None:
    assert math.isinf(pk_mean_wait_ms(1.0, 1.0, 1.0))
    assert math.isinf(wait_quantile_ms(math.inf, 1.0))


def test_wait_quantile_is_exact_for_mm1() -> None:
    # M/M/1, ρ = 0.5, μ = 1/ms: P(W > t) = ρ e^{−(μ−λ) t} → t₉₅ = ln(0.5/0.05) / 0.5 = 4.6052 ms
    assert wait_quantile_ms(1.0, 0.5) == pytest.approx(2 * math.log(10))


def test_light_load_p95_wait_is_zero() -> None:
    # fewer than 5 % of arrivals wait at all when ρ ≤ 0.05
    assert wait_quantile_ms(0.01, 0.05) == 0.0


def test_poisson_p95() -> None:
    # 100 + 1.6449 × √100 = 116.449
    assert poisson_p95(100.0) == pytest.approx(116.449, abs=1e-3)
    assert poisson_p95(0.0) == 0.0


def test_length_samples_follow_the_percentiles() -> None:
    samples = sorted(length_samples(TokenPercentiles(p50=1000, p95=4000, p99=5000), 40))
    assert len(samples) == 40
    # the middle of 40 equally likely samples straddles the median
    assert samples[19] < 1000 < samples[20]
    # 95 % of the mass lies below P95: the 38th sample (quantile 0.9375) is below 4000,
    # the 39th (0.9625) above
    assert samples[37] < 4000 < samples[38]
    assert max(samples) <= 5000  # capped at P99


def test_constant_lengths_give_constant_samples() -> None:
    assert set(length_samples(TokenPercentiles(p50=700, p95=700, p99=700), 10)) == {700.0}
