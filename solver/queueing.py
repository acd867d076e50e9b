"""Queueing formulas for the time a prompt waits before its prefill starts.

The prefill side of a replica is modelled as an M/G/1 queue: Poisson arrivals, one server (the
replica's GPUs, which run one prompt's prefill at a time in arrival order), general service
times (prompt lengths vary). The Pollaczek–Khinchine formula gives the mean wait; the 95th
percentile uses the standard exponential-tail approximation of the M/G/1 waiting time. The
reasons for this choice are in docs/capacity-model.md ("Queueing model"). Pure functions.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from models.workload import TokenPercentiles

#: Standard normal quantile of 0.95 [1].
Z_95 = NormalDist().inv_cdf(0.95)

#: Quantile points used to integrate over a length distribution [points].
LENGTH_SAMPLES = 40


def pk_mean_wait_ms(
    rate_per_ms: float, mean_service_ms: float, second_moment_service_ms2: float
) -> float:
    """Pollaczek–Khinchine mean wait of an M/G/1 queue [ms].

    ``W = λ E[S²] / (2 (1 − ρ))`` with ``ρ = λ E[S]``; infinite when ``ρ ≥ 1``.
    """
    rho = rate_per_ms * mean_service_ms
    if rho >= 1:
        return math.inf
    return rate_per_ms * second_moment_service_ms2 / (2 * (1 - rho))


def wait_quantile_ms(mean_wait_ms: float, rho: float, q: float = 0.95) -> float:
    """``q``-quantile of the M/G/1 wait from its mean (exponential-tail approximation) [ms].

    ``P(W > t) ≈ ρ exp(−ρ t / E[W])`` (exact for M/M/1): an arrival waits with probability ρ,
    and a waiting time is about exponential with mean ``E[W] / ρ``. So
    ``t_q = E[W] / ρ × ln(ρ / (1 − q))`` when ``ρ > 1 − q``, else 0.
    """
    if rho >= 1 or math.isinf(mean_wait_ms):
        return math.inf
    if rho <= 1 - q or mean_wait_ms <= 0:
        return 0.0
    return mean_wait_ms / rho * math.log(rho / (1 - q))


def poisson_p95(mean: float) -> float:
    """95th percentile of a Poisson count with mean ``mean`` (normal approximation) [count].

    The number of requests in decode is the occupancy of an M/G/∞ system, which is Poisson.
    """
    return mean + Z_95 * math.sqrt(max(mean, 0.0))


def length_samples(tokens: TokenPercentiles, n: int = LENGTH_SAMPLES) -> tuple[float, ...]:
    """Equally likely lengths of a lognormal fitted to P50 and P95, capped at P99 [tokens].

    ``ln L ~ N(ln p50, σ²)`` with ``σ = ln(p95 / p50) / z₀.₉₅``; the samples are the quantiles at
    ``(i + ½) / n``, so averaging a function over them integrates it over the distribution.
    """
    sigma = math.log(tokens.p95 / tokens.p50) / Z_95
    normal = NormalDist()
    out = []
    for i in range(n):
        z = normal.inv_cdf((i + 0.5) / n)
        out.append(min(tokens.p50 * math.exp(sigma * z), float(tokens.p99)))
    return tuple(out)
