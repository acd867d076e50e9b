"""Queueing formulas: M/G/1 waits against the M/M/1 closed forms, Poisson, length samples and
the per-request TPOT quantile against hand-computed and brute-force answers."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.workload import TokenPercentiles
from solver.capacity.queueing import (
    least_outstanding_waits_ms,
    length_samples,
    lindley_waits_ms,
    pk_mean_wait_ms,
    poisson_p95,
    tpot_quantile_ms,
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


def _cdf(samples_tokens: np.ndarray, weights: np.ndarray, x: float) -> float:
    return float(weights[samples_tokens <= x].sum())


def test_length_samples_follow_the_percentiles() -> None:
    samples = length_samples(TokenPercentiles(p50=1000, p95=4000, p99=5000), 40)
    assert len(samples.tokens) == 41  # 40 bins + the P99 atom
    assert samples.weights.sum() == pytest.approx(1.0)
    assert np.all(np.diff(samples.tokens) >= 0)
    # half the mass lies below the median, 95 % below P95 (to within one bin's weight)
    assert _cdf(samples.tokens, samples.weights, 1000) == pytest.approx(0.5, abs=0.03)
    assert _cdf(samples.tokens, samples.weights, 3999) == pytest.approx(0.95, abs=0.01)
    # σ = ln 4 / 1.6449 = 0.8428; the lognormal's share above P99: 1 − Φ(ln 5 / σ) = 1 − Φ(1.9097)
    # = 0.02809 — all of it sits at P99 (the clip), as the replay's synthetic traces put it
    atom = 1 - NormalDist().cdf(math.log(5) / (math.log(4) / 1.6448536))
    assert samples.tokens[-1] == 5000
    assert samples.weights[-1] == pytest.approx(atom, rel=1e-6)
    assert atom == pytest.approx(0.02809, abs=1e-5)


@pytest.mark.parametrize(("p50", "p95", "p99"), [(13, 90, 251), (6909, 39550, 85400),
                                                 (1020, 4083, 4142)])
def test_length_samples_cover_the_tail(p50: int, p95: int, p99: int) -> None:
    # E[L⁴] (prefill work grows up to quadratically, and its square enters the queue) against a
    # fine reference: 20,000 equally likely quantiles of the clipped lognormal. Equally likely
    # midpoints of 40 bins stop at the 98.75th percentile and miss 35 % of it for (13, 90, 251).
    sigma = math.log(p95 / p50) / 1.6448536
    normal = NormalDist()
    fine = [min(p50 * math.exp(sigma * normal.inv_cdf((i + 0.5) / 20_000)), p99)
            for i in range(20_000)]
    reference = float(np.mean(np.array(fine) ** 4))
    samples = length_samples(TokenPercentiles(p50=p50, p95=p95, p99=p99))
    assert samples.expect(samples.tokens**4) == pytest.approx(reference, rel=0.02)
    assert samples.mean == pytest.approx(float(np.mean(fine)), rel=0.005)


def test_constant_lengths_give_constant_samples() -> None:
    samples = length_samples(TokenPercentiles(p50=700, p95=700, p99=700), 10)
    assert samples.tokens.tolist() == [700.0]
    assert samples.weights.tolist() == [1.0]


# --- per-request TPOT ---------------------------------------------------------------------------


def test_tpot_quantile_poisson_hand_computed() -> None:
    # m = 10 decode steps of 20 ms, K ~ Poisson(1) prefill chunks of 40 ms:
    # P(K ≤ k) = 0.3679, 0.7358, 0.9197, 0.9810 → the P95 has K = 3 → 20 + 3 × 40 / 10 = 32 ms.
    # Grid: 256 cells over 40 + 8 × 40 + 40 = 400 ms, 1.5625 ms each; a chunk's probability is
    # split between the cells at 39.06 and 40.625 ms, so each of the 3 jumps is within a cell,
    # and the CDF is read linearly within one more: (3 + 1) × 1.5625 / 10 = 0.625 ms of TPOT.
    assert tpot_quantile_ms([10], [1.0], 20.0, [40.0], [1.0], 1.0) == pytest.approx(32.0,
                                                                                    abs=0.625)


def test_tpot_quantile_waiting_prompts_are_geometric() -> None:
    # m = 1; no Poisson part; the request waited (ρ = 1) and ν = 1 prompt of 10 ms arrived on
    # average: K is geometric, P(K = k) = 2^−(k+1): CDF 0.5, 0.75, 0.875, 0.9375, 0.96875 → K = 4
    # → 5 + 40 ms. Grid: E[K] = 1, Var K = 2 → sd of the sum √300 = 17.3 ms, span 10 + 8 × 17.3
    # + 10 = 158.6 ms, cell 0.62 ms: 4 jumps within a cell each, plus one cell read linearly:
    # within 5 × 0.62 = 3.1 ms (one jump less or more would be 10 ms off).
    assert tpot_quantile_ms([1], [1.0], 5.0, [10.0], [1.0], 0.0, 1.0, 1.0) == pytest.approx(
        45.0, abs=3.1)
    # waits half the time: CDF 0.75, 0.875, 0.9375, 0.96875 → K = 3 → 5 + 30 ms (span 125.8 ms,
    # cell 0.49 ms: within 4 × 0.49 = 1.97 ms)
    assert tpot_quantile_ms([1], [1.0], 5.0, [10.0], [1.0], 0.0, 0.5, 1.0) == pytest.approx(
        35.0, abs=1.97)
    # at most 25 ms of prefill fit in the life: the P95 is the cap
    assert tpot_quantile_ms([1], [1.0], 5.0, [10.0], [1.0], 0.0, 0.5, 1.0,
                            cap_ms=25.0) == pytest.approx(30.0, abs=0.05)


def test_tpot_quantile_without_prefill_is_the_step() -> None:
    assert tpot_quantile_ms([5, 50], [0.5, 0.5], 12.0, [30.0], [1.0], 0.0) == 12.0
    # P(K ≥ 1) = 1 − e^−0.04 = 3.9 % < 5 %: the P95 request saw no chunk
    assert tpot_quantile_ms([10], [1.0], 12.0, [30.0], [1.0], 0.04) == 12.0


def _brute_force_quantile(steps: list[int], weights: list[float], step_ms: float,
                          jumps: list[float], jump_weights: list[float], mu: list[float],
                          q: float = 0.95) -> float:
    """Enumerate K ≤ 12 chunks of each size combination: exact mixture quantile."""
    atoms: dict[float, float] = {}
    for m, w, mean in zip(steps, weights, mu, strict=True):
        # distribution of the sum of K jumps by convolution over k
        total: dict[float, float] = {0.0: 1.0}
        dist = {0.0: math.exp(-mean)}
        for k in range(1, 13):
            nxt: dict[float, float] = {}
            for a, pa in total.items():
                for j, pj in zip(jumps, jump_weights, strict=True):
                    key = round(a + j, 9)
                    nxt[key] = nxt.get(key, 0.0) + pa * pj
            total = nxt
            pk = math.exp(-mean) * mean**k / math.factorial(k)
            for a, pa in total.items():
                dist[a] = dist.get(a, 0.0) + pk * pa
        for a, p in dist.items():
            t = round(step_ms + a / m, 9)
            atoms[t] = atoms.get(t, 0.0) + w * p
    acc = 0.0
    for t in sorted(atoms):
        acc += atoms[t]
        if acc >= q:
            return t
    raise AssertionError("truncated too early")


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.integers(1, 60), min_size=1, max_size=3),
       jumps=st.lists(st.floats(5.0, 80.0), min_size=1, max_size=2),
       rate=st.floats(0.005, 0.08), seed=st.integers(0, 1000))
# the exact CDF reaches 0.949999 at the atom 10 + 5/41 ms and 0.986 at the next, 10 + 5/24: the
# P95 sits on a jump of the quantile function, so a CDF off by 10⁻⁶ moves it by a whole atom
@example(steps=[41, 24], jumps=[5.0], rate=0.005, seed=0)
def test_tpot_quantile_matches_brute_force(steps: list[int], jumps: list[float], rate: float,
                                           seed: int) -> None:
    rng = np.random.default_rng(seed)
    weights = (rng.random(len(steps)) + 0.1).tolist()
    weights = [w / sum(weights) for w in weights]
    jump_weights = (rng.random(len(jumps)) + 0.1).tolist()
    jump_weights = [w / sum(jump_weights) for w in jump_weights]
    mu = [rate * m for m in steps]
    got = tpot_quantile_ms(steps, weights, 10.0, jumps, jump_weights, mu)
    # The life is discrete (atoms at step + k jumps ÷ m), so the exact quantile is a step
    # function of q: where the CDF crosses q at an atom, any CDF error moves it a whole atom.
    # The grid puts the CDF within 10⁻⁴ of the exact one, so the answer is checked
    # against the exact quantiles at q ∓ 10⁻⁴ ...
    low = _brute_force_quantile(steps, weights, 10.0, jumps, jump_weights, mu, q=0.95 - 1e-4)
    high = _brute_force_quantile(steps, weights, 10.0, jumps, jump_weights, mu, q=0.95 + 1e-4)
    # ... widened by the grid: 256 cells over each row's mean + 8 sd + largest jump; each of
    # K ≤ 12 jumps moves by at most a cell (linear binning) and the CDF is read linearly within
    # one more
    s1 = sum(w * j for w, j in zip(jump_weights, jumps, strict=True))
    s2 = sum(w * j * j for w, j in zip(jump_weights, jumps, strict=True))
    tolerance = max((u * s1 + 8 * math.sqrt(u * s2) + max(jumps)) / 256 * 13 / m
                    for u, m in zip(mu, steps, strict=True))
    assert low - tolerance <= got <= high + tolerance


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.integers(1, 400), min_size=1, max_size=6),
       jump=st.floats(5.0, 200.0), per_step=st.floats(0.006, 0.5))
def test_tpot_quantile_is_not_below_the_mean(steps: list[int], jump: float,
                                             per_step: float) -> None:
    # every row expects μ = m × per_step ≥ 10 × 0.006 = 0.06 chunks, so a chunk lands in more
    # than 5 % of lives (1 − e^−0.06 = 5.8 %): the P95 lies at or above the mixture's mean,
    # step + Σ w μ jump / m = step + per_step × jump
    steps = [max(m, 10) for m in steps]
    weights = [1.0 / len(steps)] * len(steps)
    mean = 20.0 + per_step * jump
    got = tpot_quantile_ms(steps, weights, 20.0, [jump], [1.0], [per_step * m for m in steps])
    assert got >= mean * (1 - 1e-3)


# --- the lower tail (``p5``) ---------------------------------------------------------------------


def test_length_samples_with_p5_follow_both_tails() -> None:
    # Mooncake conversation outputs: P5 10, P50 350, P95 698, P99 1,119 — 5 % of outputs are 10
    # tokens or fewer, where a lognormal through P50 and P95 (σ = 0.42) puts 10⁻¹⁷ of them.
    with_p5 = length_samples(TokenPercentiles(p5=10, p50=350, p95=698, p99=1119), 24)
    without = length_samples(TokenPercentiles(p50=350, p95=698, p99=1119), 24)
    assert with_p5.weights.sum() == pytest.approx(1.0)
    assert np.all(np.diff(with_p5.tokens) >= 0)
    assert _cdf(with_p5.tokens, with_p5.weights, 10) == pytest.approx(0.05, abs=0.02)
    assert _cdf(with_p5.tokens, with_p5.weights, 350) == pytest.approx(0.5, abs=0.04)
    assert _cdf(with_p5.tokens, with_p5.weights, 697) == pytest.approx(0.95, abs=0.02)
    assert _cdf(without.tokens, without.weights, 100) == 0.0
    # above the median the two agree: same σ, same P99 atom
    assert with_p5.weights[-1] == pytest.approx(without.weights[-1])
    # a P5 on the lognormal through P50 and P95 changes the points, not the distribution
    on_curve = round(350 * math.exp(-math.log(698 / 350)))  # σ z₀.₀₅ below the median
    same = length_samples(TokenPercentiles(p5=on_curve, p50=350, p95=698, p99=1119), 24)
    assert same.mean == pytest.approx(without.mean, rel=0.02)


def test_p5_above_p50_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="p5 400 <= p50 350"):
        TokenPercentiles(p5=400, p50=350, p95=698, p99=1119)


def test_lindley_waits_by_hand() -> None:
    """Services 3, 1, 4, 2 ms, gaps 2, 5, 1 ms: W₁ = max(0, 0 + 3 − 2) = 1, W₂ = max(0, 1 + 1
    − 5) = 0 (the queue empties), W₃ = max(0, 0 + 4 − 1) = 3; the first finds it empty."""
    assert lindley_waits_ms([3.0, 1.0, 4.0, 2.0], [2.0, 5.0, 1.0]).tolist() == [0, 1, 0, 3]
    assert lindley_waits_ms([5.0], []).tolist() == [0.0]
    assert lindley_waits_ms([], []).size == 0
    with pytest.raises(ValueError, match="need 2 gaps"):
        lindley_waits_ms([1.0, 1.0, 1.0], [1.0])


def test_least_outstanding_routing_by_hand() -> None:
    """Two servers; each customer goes to the one with fewer customers not yet gone (ties to
    the first), and stays counted there until wait + after-wait + decode after arriving (no
    chunk share: its life is not slowed):
    - at 0 (service 1, after 1, decode 100): both empty, server 0; gone at 101;
    - at 2 (service 5, after 1, decode 0): counts 1, 0, server 1, no wait; its queue empties
      at 7; gone at 3;
    - at 4 (service 1, after 1, decode 0): the one at 2 is gone, counts 1, 0, server 1 again,
      where the queue empties at 7: waits 3 — dealt in turn it would have gone to server 0,
      whose queue emptied at 1, and not waited; gone at 4 + 3 + 1 = 8;
    - at 101 (service 1): the first is gone at that instant, before it is routed: counts 0, 0,
      server 0, no wait; gone at 102."""
    routed = least_outstanding_waits_ms(
        [0.0, 2.0, 4.0, 101.0], [1.0, 5.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0],
        [100.0, 0.0, 0.0, 0.0], 2)
    assert routed.waits_ms.tolist() == [0.0, 0.0, 3.0, 0.0]
    assert routed.servers.tolist() == [0, 1, 1, 0]
    assert routed.gone_ms.tolist() == [101.0, 3.0, 8.0, 102.0]
    # on one server it is Lindley's recursion
    one = least_outstanding_waits_ms([0.0, 2.0, 7.0, 8.0], [3.0, 1.0, 4.0, 2.0],
                                     [0.0] * 4, [0.0] * 4, 1)
    assert one.waits_ms.tolist() == lindley_waits_ms([3.0, 1.0, 4.0, 2.0],
                                                     [2.0, 5.0, 1.0]).tolist()
    with pytest.raises(ValueError, match="differ in length"):
        least_outstanding_waits_ms([0.0], [1.0, 1.0], [0.0], [0.0], 1)
    with pytest.raises(ValueError, match="chunk_share"):
        least_outstanding_waits_ms([0.0], [1.0], [0.0], [0.0], 2, chunk_share=1.0)


def test_a_life_slowed_by_its_servers_queue_keeps_it_counted_by_hand() -> None:
    """With a chunk share ``a`` = 0.5 a decode life runs at half speed while its server's
    queue is busy, so it stays counted longer and the router steers around that server:
    - at 0, A (service 4, after 4, decode 3): server 0, first token at 4;
    - at 1, B (service 1, after 1, decode 100): counts 1, 0, server 1; first token at 2;
    - at 3, C (service 4, after 4, decode 0): counts 1, 1, server 0, behind A: waits 1, the
      queue busy over [4, 8], first token and gone at 8. A's life from 4: ``g − 4 − a |[4, g]
      ∩ [4, 8]| = 3`` gives ``g = 9``, not 7;
    - at 7, D (service 1, after 1, decode 0): A and C still at server 0, B at server 1: counts
      2, 1, server 1, no wait, gone at 8; its prefill [7, 8] lies in B's life, which ends at
      ``102 + a × 1 = 102.5``.
    Without the share (``a`` = 0) A is gone at 7, the instant D arrives, so D finds counts
    1, 1 and goes to server 0, behind C: waits 1; B's server stays idle, B gone at 102. The
    one-server closed form gives A and C's
    figures alone: waits 0, 1; gone at 9 and 8."""
    arrival, service = [0.0, 1.0, 3.0, 7.0], [4.0, 1.0, 4.0, 1.0]
    after, decode = [4.0, 1.0, 4.0, 1.0], [3.0, 100.0, 0.0, 0.0]
    slowed = least_outstanding_waits_ms(arrival, service, after, decode, 2, chunk_share=0.5)
    assert slowed.servers.tolist() == [0, 1, 0, 1]
    assert slowed.waits_ms.tolist() == [0.0, 0.0, 1.0, 0.0]
    assert slowed.gone_ms.tolist() == pytest.approx([9.0, 102.5, 8.0, 8.0], abs=1e-12)
    plain = least_outstanding_waits_ms(arrival, service, after, decode, 2)
    assert plain.servers.tolist() == [0, 1, 0, 0]
    assert plain.waits_ms.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert plain.gone_ms.tolist() == [7.0, 102.0, 8.0, 9.0]
    alone = least_outstanding_waits_ms([0.0, 3.0], [4.0, 4.0], [4.0, 4.0], [3.0, 0.0], 1,
                                       chunk_share=0.5)
    assert alone.waits_ms.tolist() == [0.0, 1.0]
    assert alone.gone_ms.tolist() == pytest.approx([9.0, 8.0], abs=1e-12)


@pytest.mark.parametrize(("rho", "customers", "tolerance"),
                         [(0.5, 200_000, 0.05), (0.8, 400_000, 0.08)])
def test_lindley_waits_match_mm1(rho: float, customers: int, tolerance: float) -> None:
    """Poisson arrivals at rate ρ, exponential service of mean 1 ms (M/M/1, seed 0): the
    customers' waits have mean ρ ÷ (1 − ρ), P(W = 0) = 1 − ρ and P(W > t) = ρ e^(−(1 − ρ) t),
    so P95 = ln(ρ ÷ 0.05) ÷ (1 − ρ) (Kleinrock, *Queueing Systems* I, §3.2). Statistical: over
    seeds 0–5 the mean and the P95 came within 2.1 % (ρ = 0.5, 200,000 customers) and 3.3 %
    (ρ = 0.8, 400,000) of the closed forms, so the tolerance (5 %, 8 %) is about four standard
    deviations; P(W = 0) within 0.006."""
    rng = np.random.default_rng(0)
    service = rng.exponential(1.0, customers)
    gaps = rng.exponential(1.0 / rho, customers - 1)
    waits = lindley_waits_ms(service, gaps)
    assert waits.mean() == pytest.approx(rho / (1 - rho), rel=tolerance)
    assert float(np.percentile(waits, 95)) == pytest.approx(
        math.log(rho / 0.05) / (1 - rho), rel=tolerance)
    assert float((waits == 0).mean()) == pytest.approx(1 - rho, abs=0.006)


def test_busy_time_by_hand() -> None:
    """The union of [0, 2], [5, 6] and [1, 3] (out of order) is [0, 3] and [5, 6]: knots 0,
    3, 5, 6 with 0, 3, 3, 4 ms of busy time up to each."""
    from solver.capacity.queueing import busy_time

    knots, busy = busy_time(np.array([0.0, 5.0, 1.0]), np.array([2.0, 6.0, 3.0]))
    assert knots.tolist() == [0.0, 3.0, 5.0, 6.0]
    assert busy.tolist() == [0.0, 3.0, 3.0, 4.0]
