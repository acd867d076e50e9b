"""Queueing formulas: the wait before a prompt's prefill, and the spread of per-token latency.

The prefill side of a replica is modelled as an M/G/1 queue: Poisson arrivals, one server (the
replica's GPUs, which run one prompt's prefill at a time in arrival order), general service
times (prompt lengths vary). The Pollaczek–Khinchine formula gives the mean wait; the 95th
percentile uses the standard exponential-tail approximation of the M/G/1 waiting time.

A request's time per output token is the mean of the iterations of its decode life; the
iterations that carry a prefill chunk are slower, and their number in a life is Poisson, so the
per-request TPOT is a Poisson mixture over the output-length distribution
(:func:`tpot_quantile_ms`). With a trace's followers, a request's TTFT counts its burst-mates
(:func:`ttft_quantile_ms`) and the backlog as the supremum over windows of the work beyond the
replica's drain (:func:`sup_backlog_ttft_ms`, its tail the smaller of the largest Chernoff
bound and the expected upcrossings, :func:`upcrossings`; the wait it implies for an arriving
request, :func:`sup_backlog_wait_ms`). On a given sequence of arrivals and service times the
waits are exact by Lindley's recursion (:func:`lindley_waits_ms`; the TTFT on a trace's own
arrivals). The reasons and assumptions are in docs/capacity-model.md ("Queueing model", "TPOT
P95", "The TTFT P95 on the trace's own arrivals"). Pure functions.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from models.workload import TokenPercentiles

FloatArray = npt.NDArray[np.float64]
ComplexArray = npt.NDArray[np.complex128]

#: Standard normal quantile of 0.95 [1].
Z_95 = NormalDist().inv_cdf(0.95)

#: Bins of the continuous part of a length distribution (the P99 atom comes on top) [points].
LENGTH_SAMPLES = 40
#: Cells of the grid the prefill time in a request's life is computed on [cells].
GRID_CELLS = 256
#: The grid spans the mean + this many standard deviations + the largest prompt [1].
GRID_SDS = 8.0
#: Candidate latencies evaluated per refinement pass of :func:`tpot_quantile_ms` [points].
QUANTILE_GRID = 128
#: Refinement passes of :func:`tpot_quantile_ms` (resolution 127⁻² of the bracket) [1].
QUANTILE_PASSES = 2
#: Cells of the grid the TTFT of a request and its burst-mates is computed on [cells].
TTFT_GRID_CELLS = 1024
#: A follower count is summed to its mean + this many standard deviations (+ 10) [1].
COUNT_SDS = 12.0
#: Probability of the counts left off the end of a burst-mate distribution [1].
COUNT_TAIL = 1e-12
#: Exponents θ each window's Chernoff bound is minimised over in :func:`sup_backlog_ttft_ms`
#: [points], log-spaced so that θ × E[S] runs over :data:`CHERNOFF_RANGE`.
CHERNOFF_THETAS = 256
#: The range of θ × E[S] (E[S] the mean prefill work of a prompt) [1].
CHERNOFF_RANGE = (1e-4, 20.0)
#: Backlogs the Chernoff exponent of :func:`sup_backlog_ttft_ms` is computed at, evenly
#: spaced over its grid (read linearly between them) [points].
CHERNOFF_POINTS = 128
#: Slices each interval between the profile's windows is cut into for the expected
#: upcrossings of :func:`upcrossings` (the followers read linearly between windows) [1].
UPCROSSING_SLICES = 4
#: Cells of each slice's grid in :func:`upcrossings` [cells].
UPCROSSING_CELLS = 1024


def lindley_waits_ms(service_ms: npt.ArrayLike, gaps_ms: npt.ArrayLike) -> FloatArray:
    """Each customer's wait in a single-server FIFO queue [ms], by Lindley's recursion
    ``W₀ = 0``, ``W_(n+1) = max(0, W_n + S_n − A_(n+1))`` (D. V. Lindley, "The theory of queues
    with a single server", *Proc. Cambridge Philosophical Society* 48(2), 1952): ``service_ms``
    the customers' service times ``S_n`` in arrival order, ``gaps_ms`` the ``n − 1`` gaps
    ``A_(n+1)`` between consecutive arrivals (the first customer finds the queue empty). Exact
    for the given sequence; no distribution assumed. Computed in closed form: with the partial
    sums ``P_0 = 0``, ``P_n = Σ_(i ≤ n) (S_(i−1) − A_i)``, the recursion unrolls to
    ``W_n = P_n − min_(j ≤ n) P_j`` (the reflection of the random walk at 0)."""
    service = np.asarray(service_ms, dtype=np.float64)
    gaps = np.asarray(gaps_ms, dtype=np.float64)
    if gaps.size != max(service.size - 1, 0):
        raise ValueError(f"{service.size} service times need {max(service.size - 1, 0)} gaps, "
                         f"got {gaps.size}")
    if service.size == 0:
        return np.zeros(0)
    walk = np.concatenate(([0.0], np.cumsum(service[:-1] - gaps)))  # P_n [ms]
    return np.maximum(walk - np.minimum.accumulate(walk), 0.0)


class Routed(NamedTuple):
    """What :func:`least_outstanding_waits_ms` gives for each customer."""

    waits_ms: FloatArray
    """Its wait in its server's queue [ms]."""
    servers: npt.NDArray[np.int64]
    """The server it went to."""
    gone_ms: FloatArray
    """The instant it stops being counted at its server: the end of its decode life [ms]."""


def least_outstanding_waits_ms(arrival_ms: npt.ArrayLike, service_ms: npt.ArrayLike,
                               after_wait_ms: npt.ArrayLike, decode_ms: npt.ArrayLike,
                               servers: int, chunk_share: float = 0.0) -> Routed:
    """Each customer's wait [ms], server and end when each goes, on arrival, to the server
    with the fewest customers sent there and not yet gone (ties to the lowest index), each
    server a FIFO queue: the router of the replay (``solver.replay.engine``, least outstanding
    requests), with each replica's prefill as one server.

    Customer ``n`` arrives at ``arrival_ms[n]`` (rising) and occupies its server's queue for
    ``service_ms[n]``; on its server ``s`` the wait is Lindley's, ``W = max(0, F_s − t)`` with
    ``F_s`` the instant the server's queue empties, which then becomes ``max(F_s, t) + S``.
    Its first token comes ``after_wait_ms[n]`` after its wait, at ``f``; it then stays
    counted for its decode life: ``decode_ms[n]`` of decode steps, slowed while its server's
    queue is busy, where every iteration carries a prefill chunk and the decode step is only
    ``1 − chunk_share`` of it. So it is gone at the ``g`` where ``g − f − chunk_share ×
    |busy ∩ [f, g]| = decode_ms[n]`` (``busy`` the server's queue busy, ``[start, start + S]``
    of each customer sent there; ``chunk_share`` 0: gone ``decode_ms`` after its first token).
    Exact and causal: the busy time up to any instant is known once the customers arriving
    before it are routed. A customer that leaves at the instant another arrives is gone before
    it is routed (as the replay completes a step before routing). Deterministic; sequential
    (the route depends on earlier waits and lives), computed on each server's clock
    ``V(τ) = τ − chunk_share × busy(τ)``: a life ends where ``V`` has advanced by
    ``decode_ms`` from ``V(f)``."""
    arrival = np.asarray(arrival_ms, dtype=np.float64)
    service = np.asarray(service_ms, dtype=np.float64)
    after = np.asarray(after_wait_ms, dtype=np.float64)
    decode = np.asarray(decode_ms, dtype=np.float64)
    if not arrival.size == service.size == after.size == decode.size:
        raise ValueError("arrival, service, after-wait and decode times differ in length")
    if servers < 1:
        raise ValueError(f"servers must be at least 1, got {servers}")
    if not 0.0 <= chunk_share < 1.0:
        raise ValueError(f"chunk_share must lie in [0, 1), got {chunk_share}")
    if servers == 1:  # no choice to make: Lindley's recursion and the clock, in closed form
        waits = lindley_waits_ms(service, np.diff(arrival))
        start = arrival + waits
        gone = _gone_ms(start, start + service, start + after, decode, chunk_share)
        return Routed(waits, np.zeros(arrival.size, dtype=np.int64), gone)
    return _routed(arrival.tolist(), service.tolist(), after.tolist(), decode.tolist(),
                   servers, chunk_share)


def _routed(arrival: list[float], service: list[float], after: list[float],
            decode: list[float], servers: int, share: float) -> Routed:
    """:func:`least_outstanding_waits_ms` on two or more servers, one customer at a time.

    Each server keeps its queue's busy time as its current busy period ``[P_s, F_s]`` and
    the busy time of the periods before, ``D_s``: its clock is ``V_s(τ) = τ − share (D_s +
    min(τ, F_s) − P_s)`` for ``τ ≥ P_s``, which reaches ``K`` at ``(K + share (D_s − P_s)) ÷
    (1 − share)`` within the period and at ``K + share (D_s + F_s − P_s)`` after it. A
    customer sent there waits for its first token ``f`` (a heap by ``f``); once ``f`` has
    passed, ``V_s(f)`` is final and its life ends at ``K = V_s(f) + decode`` on that clock (a
    heap by ``K``). A heap of instants holds, for each server, the next at which one of its
    customers moves on as things stand (``nexts``; an entry that is not its server's is
    stale): a customer routed there can only delay its lives, so the instant is recomputed."""
    first = arrival[0] if arrival else 0.0
    empties = [first] * servers  # F_s: when each server's queue empties [ms]
    period = [first] * servers  # P_s: when its current busy period began [ms]
    earlier = [0.0] * servers  # D_s: busy time of its earlier periods [ms]
    counts = [0] * servers  # customers at each server, not yet gone [1]
    coming: list[list[tuple[float, int]]] = [[] for _ in range(servers)]  # (f, customer)
    lives: list[list[tuple[float, int]]] = [[] for _ in range(servers)]  # (K, customer)
    nexts = [math.inf] * servers  # the instant server s has something to do [ms]
    events: list[tuple[float, int]] = []  # (instant, s)
    waits = [0.0] * len(arrival)
    chosen = [0] * len(arrival)
    gone = [0.0] * len(arrival)
    keep = 1.0 - share
    inf = math.inf
    pop, push, index = heapq.heappop, heapq.heappush, counts.index

    def settle(s: int, t: float) -> None:
        """Server ``s`` at ``t``: first tokens passed start their lives, ended lives leave,
        and its next instant is queued."""
        soon, mine = coming[s], lives[s]
        e, p, d = empties[s], period[s], earlier[s]
        while soon and soon[0][0] <= t:
            f, n = pop(soon)
            push(mine, (f - share * (d + (f if f < e else e) - p) + decode[n], n))
        end = inf
        if mine:
            busy = d + e - p  # [ms]
            last = e - share * busy  # V_s(F_s) [ms]
            while mine:
                key = mine[0][0]
                end = (key + share * (d - p)) / keep if key <= last else key + share * busy
                if end > t:
                    break
                gone[pop(mine)[1]] = end
                counts[s] -= 1
                end = inf
        nxt = soon[0][0] if soon and soon[0][0] < end else end
        nexts[s] = nxt
        if nxt < inf:
            push(events, (nxt, s))

    for n, t in enumerate(arrival):
        while events and events[0][0] <= t:
            at, s = pop(events)
            if at == nexts[s]:
                settle(s, t)
        s = index(min(counts))
        e = empties[s]
        if e > t:
            start = e
        else:
            earlier[s] += e - period[s]
            start = period[s] = t
        e = empties[s] = start + service[n]
        counts[s] += 1
        waits[n] = start - t
        chosen[n] = s
        soon = coming[s]
        push(soon, (start + after[n], n))
        nxt = soon[0][0]
        mine = lives[s]
        if mine:  # its first life ends later now: the busy period grew
            key, p, d = mine[0][0], period[s], earlier[s]
            busy = d + e - p  # [ms]
            end = ((key + share * (d - p)) / keep if key <= e - share * busy
                   else key + share * busy)
            nxt = end if end < nxt else nxt
        nexts[s] = nxt
        push(events, (nxt, s))
    for s in range(servers):  # the lives that end after the last arrival
        settle(s, inf)
    return Routed(np.asarray(waits, dtype=np.float64), np.asarray(chosen, dtype=np.int64),
                  np.asarray(gone, dtype=np.float64))


def _gone_ms(start: FloatArray, end: FloatArray, first: FloatArray, decode: FloatArray,
             share: float) -> FloatArray:
    """On one server whose queue is busy over the union of ``[start, end]``: the instant each
    life of ``decode`` [ms] beginning at ``first`` ends on the clock ``V(τ) = τ − share ×
    busy(τ)`` (:func:`least_outstanding_waits_ms`) [ms]."""
    if start.size == 0:
        return np.zeros(0)
    knots, busy = busy_time(start, end)
    clock = knots - share * busy  # V at the knots, rising [ms]
    key = first - share * np.interp(first, knots, busy) + decode
    return np.where(key >= clock[-1], key + share * busy[-1],
                    np.interp(key, clock, knots))


def busy_time(starts: FloatArray, ends: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The union of the intervals ``[starts, ends]`` as a piecewise-linear cumulative busy
    time: knots [ms] and the busy time up to each [ms] (read with ``numpy.interp``; flat before
    the first knot and after the last). In start order, an interval opens a new span where it
    starts after every earlier one has ended."""
    order = np.argsort(starts, kind="stable")
    start, end = starts[order], np.maximum.accumulate(ends[order])
    opens = np.concatenate(([True], start[1:] > end[:-1]))  # a span begins
    closes = np.concatenate((opens[1:], [True]))  # a span ends
    spans = np.column_stack((start[opens], end[closes]))
    knots = spans.reshape(-1)
    busy = np.zeros(knots.size)
    busy[1::2] = np.cumsum(spans[:, 1] - spans[:, 0])
    busy[2::2] = busy[1:-1:2]
    return knots, busy


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


def arrivals_label(arrival_scv: float | None, followers: bool = False,
                   measured_from: str | None = None) -> str:
    """How the capacity model takes a workload's arrivals, for the outputs: ``Poisson
    (default)`` without ``arrival.burst``, else the SCV it uses, whether it divides the
    trace's bursts over the replicas (``followers``), and the trace the planner measured the
    block from (``measured_from``, its file name; ``None``: stated)."""
    if arrival_scv is None:
        return "Poisson (default)"
    divided = ", bursts divided over replicas" if followers else ""
    measured = f", measured from {Path(measured_from).name}" if measured_from else ""
    return f"bursty, inter-arrival SCV {arrival_scv:.3g}{divided}{measured}"


def kingman_factor(arrival_scv: float, service_scv: float) -> float:
    """Allen–Cunneen / Kingman correction of the M/G/1 mean wait for non-Poisson arrivals [1].

    The G/G/1 mean wait is approximately ``(c_a² + c_s²) ÷ 2 × ρ ÷ (1 − ρ) × E[S]`` (Kingman
    1961, heavy traffic; Allen & Cunneen's approximation at any load), and the
    Pollaczek–Khinchine wait is the same with ``c_a² = 1``; so the G/G/1 wait is the M/G/1 wait
    × ``(c_a² + c_s²) ÷ (1 + c_s²)`` — exactly 1 for Poisson arrivals.
    """
    return (arrival_scv + service_scv) / (1.0 + service_scv)


def qna_factor(arrival_scv: float, service_scv: float, rho: float) -> float:
    """The GI/G/1 mean wait ÷ the M/G/1 (Pollaczek–Khinchine) one, by the Queueing Network
    Analyzer's approximation (W. Whitt, "The Queueing Network Analyzer", Bell System Technical
    Journal 62(9), 1983, §4; due to W. Krämer and M. Langenbach-Belz, "Approximate formulae for
    the delay in the queueing system GI/G/1", 8th International Teletraffic Congress, 1976)
    [1]: :func:`kingman_factor` × ``g``, with ``g = exp(−2 (1 − ρ)(1 − c_a²)² ÷ (3 ρ (c_a² +
    c_s²)))`` for arrivals more regular than Poisson (``c_a² < 1``), else 1. Allen–Cunneen
    alone keeps ``(c_a² + c_s²) ÷ 2`` of the wait however regular the arrivals are; at a light
    load a regular stream seldom finds the server busy, which ``g`` carries (it tends to 1 as
    ``ρ → 1``, where Kingman's formula is exact)."""
    g = 1.0
    if arrival_scv < 1.0 and rho > 0:
        g = math.exp(-2 * (1 - rho) * (1 - arrival_scv) ** 2
                     / (3 * rho * (arrival_scv + service_scv)))
    return kingman_factor(arrival_scv, service_scv) * g


def cyclic_split_scv(arrival_scv: float, replicas: float) -> float:
    """SCV of the gaps one of ``replicas`` sees when a renewal stream of gap SCV
    ``arrival_scv`` is dealt to them in turn [1]: its gap is the sum of ``n`` of the stream's,
    independent, so ``c_a² ÷ n`` (a Poisson stream dealt over ``n`` gives each an Erlang-n
    stream). Least-loaded routing of equal replicas deals in turn; :func:`split_scv` is the
    rule for a random split (each arrival to a replica with its share's probability)."""
    return arrival_scv / max(replicas, 1.0)


def split_scv(arrival_scv: float, share: float) -> float:
    """SCV of the arrivals one replica sees when it gets ``share`` of a stream of SCV
    ``arrival_scv`` [1]: ``1 + share × (c_a² − 1)`` (Whitt's QNA splitting rule, 1983): a
    burst spread over many replicas is a small burst at each."""
    return 1.0 + min(max(share, 0.0), 1.0) * (arrival_scv - 1.0)


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


@dataclass(frozen=True, eq=False)
class LengthSamples:
    """A length distribution as weighted points: ``E[f(L)] ≈ Σ weights × f(tokens)``."""

    tokens: FloatArray
    """Lengths, rising [tokens]."""
    weights: FloatArray
    """Probability of each point; they sum to 1 [1]."""

    @property
    def mean(self) -> float:
        """Mean length [tokens]."""
        return float(self.weights @ self.tokens)

    def expect(self, values: npt.ArrayLike) -> float:
        """Expectation of per-point ``values`` (one per length) over the distribution."""
        return float(self.weights @ np.asarray(values, dtype=np.float64))


def length_samples(tokens: TokenPercentiles, n: int = LENGTH_SAMPLES) -> LengthSamples:
    """A lognormal fitted to P50 and P95, clipped at P99, as ``n + 1`` weighted points [tokens].

    ``ln L ~ N(ln p50, σ²)`` with ``σ = ln(p95 / p50) / z₀.₉₅`` — the distribution the replay's
    synthetic traces draw (``solver.replay.traces.synthetic_trace``). Everything above P99 is
    clipped to
    P99: an atom of probability ``1 − u_c`` at P99, ``u_c = Φ(ln(p99 / p50) / σ)``. The part
    below is cut into ``n`` bins of the quantile ``u ∈ [0, u_c]`` with edges
    ``u_c (1 − (1 − i/n)²)`` — narrower towards the tail, where the prefill work (quadratic in
    the length) and long decode lives weigh most — each represented by the length at its middle
    quantile. (Equally likely midpoints stop at the 98.75th percentile and under-count
    ``E[L⁴]`` of a short-output workload by a third; this scheme is within 1 %.)

    With a ``p5`` the part below the median has its own spread, ``σ₋ = ln(p50 / p5) / z₀.₉₅``
    (a two-piece lognormal: real output lengths often have a lower tail the upper percentiles
    do not predict, and the short outputs set the per-token P95), and the bins narrow towards
    both ends, edges ``u_c (x − sin(2πx) ÷ 2π)``.
    """
    p50, p99 = float(tokens.p50), float(tokens.p99)
    sigma = math.log(tokens.p95 / tokens.p50) / Z_95
    below = None if tokens.p5 is None else math.log(p50 / tokens.p5) / Z_95
    if sigma == 0.0 and not below:
        return LengthSamples(np.array([p50]), np.array([1.0]))
    normal = NormalDist()
    # share of the lognormal below P99 [1]
    u_clip = normal.cdf(math.log(p99 / p50) / sigma) if sigma > 0 else 1.0
    x = np.arange(n + 1) / n
    if below is None:
        edges = u_clip * (1 - (1 - x) ** 2)
    else:  # narrow bins at both tails: the short outputs weigh in the per-token P95
        edges = u_clip * (x - np.sin(2 * np.pi * x) / (2 * np.pi))
    mids = (edges[1:] + edges[:-1]) / 2
    z = np.array([normal.inv_cdf(u) for u in mids])
    spread = np.where(z < 0, sigma if below is None else below, sigma)
    lengths = np.minimum(p50 * np.exp(spread * z), p99)
    weights = np.diff(edges)
    if u_clip < 1.0:
        lengths = np.append(lengths, p99)
        weights = np.append(weights, 1.0 - u_clip)
    return LengthSamples(lengths, weights / weights.sum())


def tpot_quantile_ms(
    decode_steps: npt.ArrayLike, weights: npt.ArrayLike, step_ms: float,
    jump_ms: npt.ArrayLike, jump_weights: npt.ArrayLike, expected_jumps: npt.ArrayLike,
    waiting_share: float = 0.0, jumps_per_wait: float = 0.0, cap_ms: npt.ArrayLike = math.inf,
    q: float = 0.95, dispersion: float = 1.0,
) -> float:
    """``q``-quantile of per-request time per output token under chunked prefill [ms].

    A request of ``m`` decode steps (output tokens − 1; probability ``weights``) shares its life
    with the prefill of a random number of prompts, each adding ``S`` ms (a value of
    ``jump_ms`` with probability ``jump_weights``): Poisson with mean ``expected_jumps``, plus,
    with probability ``waiting_share``, a geometric number with mean ``jumps_per_wait`` (the
    prompts that arrive while the request waits an exponential time for its prefill). The sum
    ``A`` is capped at ``cap_ms``; the request's TPOT is ``step_ms + min(A, cap) ÷ m``. Returns
    the smallest ``t`` with ``Σ_m w_m P(TPOT_m ≤ t) ≥ q``: the quantile of the mixture over the
    length distribution.

    Each row's ``A`` is computed on a grid of :data:`GRID_CELLS` cells spanning its mean +
    :data:`GRID_SDS` standard deviations + the largest jump, from its characteristic function
    ``exp(μ (φ_S − 1)) × (1 − ρ_w + ρ_w ÷ (1 − ν (φ_S − 1)))`` — compound Poisson times the
    compound zero-inflated geometric — by one FFT. Each jump's probability is split between the
    two cells around it so that its mean is kept (linear binning), and the CDF is read linearly
    between cells: each jump is placed within a cell, and the result moves continuously with the
    inputs (:func:`binned_jumps`). The quantile is the upper end of the bracket left by
    :data:`QUANTILE_PASSES` passes of a :data:`QUANTILE_GRID`-point grid
    (:func:`mixture_quantile_ms`).

    Parameters
    ----------
    decode_steps
        Decode steps of each length point (≥ 1; points of one output token have no TPOT and are
        left out by the caller), shape (M,) [steps].
    weights
        Probability of each length point (renormalised here), shape (M,) [1].
    step_ms
        Decode iteration time without prefill [ms].
    jump_ms
        Time each kind of prompt adds to the life of a request of each length point, shape
        (M, J) or (J,) [ms].
    jump_weights
        Probability of each kind of prompt, shape (J,) [1].
    expected_jumps
        Mean number of prompts prefilled in the life in any case, shape (M,) or scalar [1].
    dispersion
        Variance ÷ mean of that number [1]: 1 is Poisson; above 1 (bursty arrivals) it is
        negative binomial, a Poisson whose mean is gamma-distributed, with characteristic
        function ``(1 − (d − 1)(φ_S − 1))^(−μ ÷ (d − 1))``.
    waiting_share, jumps_per_wait
        ρ_w: probability that the request waited; ν: mean prompts arriving in a wait [1].
    cap_ms
        The most the prefill can add to one life, shape (M,) or scalar [ms].
    """
    m, w, jumps, jw, cap = _life_arrays(decode_steps, weights, jump_ms, jump_weights, cap_ms)
    mu = np.broadcast_to(np.asarray(expected_jumps, dtype=np.float64), m.shape)
    rho, nu = (waiting_share, jumps_per_wait) if jumps_per_wait > 0 else (0.0, 0.0)
    # moments of A per row: K₀ ~ Poisson(μ); K_w = 0 w.p. 1 − ρ, else geometric with mean ν
    s1, s2 = jumps @ jw, (jumps * jumps) @ jw  # E[S], E[S²] [ms, ms²]
    mean_k_w, var_k_w = rho * nu, rho * (nu + 2 * nu * nu) - (rho * nu) ** 2
    d = max(dispersion, 1.0)
    mean_a = (mu + mean_k_w) * s1
    var_a = (mu + mean_k_w) * s2 + var_k_w * s1 * s1 + (d - 1.0) * mu * s1 * s1

    def life(phi_s: ComplexArray) -> ComplexArray:
        psi = phi_s - 1.0  # φ_S − 1
        if d > 1.0:  # negative binomial count: a gamma mixture of Poissons of mean μ
            counts = np.exp(-(mu[:, None] / (d - 1.0)) * np.log(1 - (d - 1.0) * psi))
        else:
            counts = np.exp(mu[:, None] * psi)
        return np.asarray(counts * (1 - rho + rho / (1 - nu * psi)), dtype=np.complex128)

    return _life_quantile_ms(life, mean_a, var_a, jumps, jw, w, m, cap, step_ms, q)



def _life_quantile_ms(
    life: Callable[[ComplexArray], ComplexArray], mean_ms: FloatArray, variance_ms2: FloatArray,
    jumps: FloatArray, jump_weights: FloatArray, weights: FloatArray, decode_steps: FloatArray,
    cap: FloatArray, step_ms: float, q: float,
) -> float:
    """The TPOT quantiles' common end [ms]: each row's grid spans the mean prefill time in a
    life (``mean_ms``) + :data:`GRID_SDS` standard deviations + the largest jump; the jumps
    are binned on it (:func:`binned_jumps`) and transformed (``φ_S``); ``life`` turns ``φ_S``
    into the characteristic function of the prefill time in a life; the quantile of the mixture
    over the length points is :func:`mixture_quantile_ms`'s. ``step_ms`` when no row has a
    grid or a cap above 0."""
    span = mean_ms + GRID_SDS * np.sqrt(np.maximum(variance_ms2, 0.0)) + jumps.max(axis=1)
    if not (span > 0).any() or not (cap > 0).any():
        return step_ms
    cell = np.where(span > 0, span, 1.0) / GRID_CELLS  # [ms]
    phi_s = np.asarray(np.fft.rfft(binned_jumps(jumps, jump_weights, cell), axis=1),
                       dtype=np.complex128)
    return mixture_quantile_ms(life(phi_s), weights, decode_steps, cell, step_ms,
                               np.minimum(cap, span), q)

def _life_arrays(
    decode_steps: npt.ArrayLike, weights: npt.ArrayLike, jump_ms: npt.ArrayLike,
    jump_weights: npt.ArrayLike, cap_ms: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """The TPOT quantiles' inputs as arrays: length points, their weights and the jump
    weights normalised to 1, jumps (M, J) and caps (M,) broadcast to the length points."""
    m = np.asarray(decode_steps, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    jw = np.asarray(jump_weights, dtype=np.float64)
    jumps = np.broadcast_to(np.asarray(jump_ms, dtype=np.float64), (m.size, np.size(jump_weights)))
    cap = np.broadcast_to(np.asarray(cap_ms, dtype=np.float64), m.shape)
    return m, w / w.sum(), jumps, jw / jw.sum(), cap


def binned_jumps(jumps: FloatArray, jump_weights: FloatArray, cell: FloatArray,
                 cells: int = GRID_CELLS) -> FloatArray:
    """Each row's jump distribution on its grid of ``cells`` cells of ``cell`` ms, shape
    (M, cells) [1].

    Linear binning: a jump between two cells splits its probability between them so that its
    mean is kept, and the distribution moves continuously with the inputs. ``jumps`` has
    shape (M, J), ``jump_weights`` (J,) summing to 1, ``cell`` (M,)."""
    rows = jumps.shape[0]
    position = np.minimum(jumps / cell[:, None], cells - 1.0)
    index = np.minimum(np.floor(position), cells - 2).astype(np.int64)
    upper = (position - index) * jump_weights  # probability moved to the next cell
    flat = (index + cells * np.arange(rows)[:, None]).ravel()
    pmf = (np.bincount(flat, weights=(jump_weights - upper).ravel(), minlength=rows * cells)
           + np.bincount(flat + 1, weights=upper.ravel(), minlength=rows * cells))
    return np.asarray(pmf.reshape(rows, cells), dtype=np.float64)


def mixture_quantile_ms(phi: npt.NDArray[np.complex128], weights: FloatArray,
                        decode_steps: FloatArray, cell: FloatArray, step_ms: float,
                        top_ms: FloatArray, q: float) -> float:
    """``q``-quantile of the TPOT mixture ``step_ms + A_m ÷ m`` over the length points [ms].

    ``phi`` is each row's characteristic function of the prefill time ``A`` in a life on its
    grid (``rfft`` of :func:`binned_jumps`' cells of ``cell`` ms), ``weights`` the length
    points' probabilities (summing to 1), ``top_ms`` where each row's ``A`` is certainly below
    (its cap or its grid's span). The CDF is read linearly between cells; the quantile is the
    upper end of the bracket left by :data:`QUANTILE_PASSES` passes of a
    :data:`QUANTILE_GRID`-point grid."""
    cdf = np.minimum(np.cumsum(np.maximum(np.fft.irfft(phi, n=GRID_CELLS, axis=1), 0.0),
                               axis=1), 1.0)  # P(A ≤ k × cell)
    rows = np.arange(decode_steps.size)[:, None]
    per_ms = (decode_steps / cell)[:, None]  # cells per ms of TPOT above step_ms [1/ms]
    top_tpot = (step_ms + top_ms / decode_steps)[:, None]  # where each row's CDF is 1 [ms]

    def mixture_cdf(t: FloatArray) -> FloatArray:
        x = np.clip((t[None, :] - step_ms) * per_ms, 0.0, GRID_CELLS - 1.0)  # [cells]
        k = np.minimum(np.floor(x), GRID_CELLS - 2).astype(np.int64)
        at = cdf[rows, k] + (x - k) * (cdf[rows, k + 1] - cdf[rows, k])  # linear between cells
        below = np.where(t[None, :] >= step_ms, at, 0.0)
        return np.asarray(weights @ np.where(t[None, :] >= top_tpot - 1e-12, 1.0, below))

    low, high = step_ms, float(top_tpot.max())
    if mixture_cdf(np.array([low]))[0] >= q:
        return step_ms
    for _ in range(QUANTILE_PASSES):
        grid = np.linspace(low, high, QUANTILE_GRID)
        first = int(np.argmax(mixture_cdf(grid) >= q))
        low, high = float(grid[first - 1]), float(grid[first])
    return high


Result = TypeVar("Result", FloatArray, tuple[FloatArray, FloatArray])


def kept_by_value(maxsize: int, compute: Callable[..., Result]
                  ) -> Callable[..., Result]:
    """``compute(*arrays, *numbers)`` with its last ``maxsize`` results kept (``lru_cache``),
    called as ``kept(arrays, *numbers)``: arrays are not hashable, so the key is each float64
    array's bytes and shape (contiguous arrays: the caller makes them so). ``compute`` gets the
    arrays back read-only; its results are made read-only, as they are shared by every caller
    that gives the same inputs."""

    @lru_cache(maxsize=maxsize)
    def by_key(key: tuple[tuple[bytes, tuple[int, ...]], ...],
               numbers: tuple[float, ...]) -> Result:
        out = compute(*(np.frombuffer(b, dtype=np.float64).reshape(shape) for b, shape in key),
                      *numbers)
        for array in out if isinstance(out, tuple) else (out,):
            array.flags.writeable = False
        return out

    def kept(arrays: tuple[FloatArray, ...], *numbers: float) -> Result:
        return by_key(tuple((a.tobytes(), a.shape) for a in arrays), numbers)

    return kept


#: :func:`burst_share_pmf` results kept, the most recently used [results]: the batch
#: position's instant burst (``replica._behind_in_batch``) is the same at every load point of a
#: workload; on the Azure code trace's table 204 of 702 calls repeated an input among the last
#: 64, 199 among the last 16 (trust-s23).
SHARE_CACHE_SIZE = 32


def burst_share_pmf(mean: npt.ArrayLike, variance: npt.ArrayLike, replicas: float) -> FloatArray:
    """Distribution of ``⌊F ÷ n⌋`` for each row: the burst-mates one of ``n`` replicas gets of
    ``F`` arrivals, shape (rows, counts) [1].

    ``F`` is negative binomial with the row's ``mean`` and ``variance`` (Poisson where the
    variance is not above the mean): a gamma mixture of Poissons, the over-dispersed count of a
    bursty stream. ``⌊F ÷ n⌋``: least-loaded routing over ``n`` equal replicas sends the
    arrivals of a burst to each replica in turn, so one replica gets every n-th of them
    (docs/capacity-model.md, "Bursts divided over replicas"). The same inputs give the same
    array, read-only, from the last :data:`SHARE_CACHE_SIZE` results."""
    m = np.ascontiguousarray(np.atleast_1d(np.asarray(mean, dtype=np.float64)))
    v = np.ascontiguousarray(np.broadcast_to(np.asarray(variance, dtype=np.float64), m.shape))
    return _burst_share_pmf((m, v), float(replicas))


def computed_burst_share_pmf(mean: npt.ArrayLike, variance: npt.ArrayLike, replicas: float
                             ) -> FloatArray:
    """:func:`burst_share_pmf` computed, never from the kept results (a writable array)."""
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    v = np.maximum(np.broadcast_to(np.asarray(variance, dtype=np.float64), m.shape), m)
    n = max(float(replicas), 1.0)
    most = math.ceil(float(np.max(m + COUNT_SDS * np.sqrt(v)))) + 10
    k = np.arange(most, dtype=np.float64)
    log_pmf = np.full((m.size, most), -np.inf)
    log_pmf[m <= 0, 0] = 0.0
    poisson = (m > 0) & (v <= m * (1 + 1e-9))
    if poisson.any():
        mu = m[poisson][:, None]
        log_pmf[poisson] = k * np.log(mu) - mu - np.cumsum(np.log(np.maximum(k, 1.0)))
    mixed = (m > 0) & ~poisson
    if mixed.any():  # negative binomial of size r = μ² ÷ (σ² − μ)
        mu, var = m[mixed][:, None], v[mixed][:, None]
        r = mu * mu / (var - mu)
        step = np.log((k[:-1] + r) / (k[:-1] + 1.0)) + np.log(mu / (r + mu))
        log_pmf[mixed] = r * np.log(r / (r + mu)) + np.concatenate(
            (np.zeros((r.size, 1)), np.cumsum(step, axis=1)), axis=1)
    return dealt_pmf(np.exp(log_pmf), n)


#: :func:`burst_share_pmf`'s kept results.
_burst_share_pmf = kept_by_value(SHARE_CACHE_SIZE, computed_burst_share_pmf)


def dealt_pmf(pmf: npt.ArrayLike, replicas: float) -> FloatArray:
    """Distribution of ``⌊F ÷ n⌋`` for each row of ``F``'s distribution ``pmf`` (rows,
    counts from 0), renormalised, with the counts no row reaches (beyond
    :data:`COUNT_TAIL`) dropped [1]: what one of ``n`` replicas gets of ``F`` arrivals dealt
    in turn (:func:`burst_share_pmf`)."""
    p = np.atleast_2d(np.asarray(pmf, dtype=np.float64))
    share = np.floor(np.arange(p.shape[1]) / max(float(replicas), 1.0)).astype(np.int64)
    starts = np.searchsorted(share, np.arange(share[-1] + 1))
    out = np.add.reduceat(p, starts, axis=1)
    out /= out.sum(axis=1, keepdims=True)
    # drop the counts no row reaches (a longer distribution costs every Horner step)
    reached = int(np.max(np.argmax(np.cumsum(out, axis=1) >= 1.0 - COUNT_TAIL, axis=1))) + 1
    return np.asarray(out[:, :reached], dtype=np.float64)


def quantile_band_pmf(pmf: npt.ArrayLike, low: npt.ArrayLike, high: npt.ArrayLike
                      ) -> FloatArray:
    """Distribution of a count ``F = Q(U)`` (``Q`` the quantile function of ``pmf``, counts
    from 0) given its level ``U`` in ``[low, high)``, one row per band [1]: each count's
    probability within the band, ÷ the band's width (the bands of a partition of [0, 1]
    mix back to ``pmf`` with their widths as weights)."""
    p = np.asarray(pmf, dtype=np.float64)
    lo = np.atleast_1d(np.asarray(low, dtype=np.float64))[:, None]
    hi = np.atleast_1d(np.asarray(high, dtype=np.float64))[:, None]
    cdf = np.cumsum(p)
    inside = np.maximum(np.minimum(cdf, hi) - np.maximum(cdf - p, lo), 0.0)
    return np.asarray(inside / (hi - lo), dtype=np.float64)


def tpot_quantile_counts_ms(
    decode_steps: npt.ArrayLike, weights: npt.ArrayLike, step_ms: float, jump_ms: npt.ArrayLike,
    jump_weights: npt.ArrayLike, count_pmf: npt.ArrayLike, cap_ms: npt.ArrayLike = math.inf,
    q: float = 0.95,
) -> float:
    """:func:`tpot_quantile_ms` with each row's number of prompts in the life given as a
    distribution ``count_pmf`` (shape (M, K): ``P(K_m = k)``) instead of Poisson / negative
    binomial + geometric; the same grid, binning and quantile [ms]."""
    m, w, jumps, jw, cap = _life_arrays(decode_steps, weights, jump_ms, jump_weights, cap_ms)
    counts = np.broadcast_to(np.asarray(count_pmf, dtype=np.float64),
                             (m.size, np.shape(count_pmf)[-1]))
    k = np.arange(counts.shape[1])
    mean_k, second_k = counts @ k, counts @ (k * k)
    s1, s2 = jumps @ jw, (jumps * jumps) @ jw
    var_a = mean_k * (s2 - s1 * s1) + (second_k - mean_k * mean_k) * s1 * s1

    def life(phi_s: ComplexArray) -> ComplexArray:
        phi = np.zeros_like(phi_s)
        for j in range(counts.shape[1] - 1, -1, -1):  # Σ_k P(K = k) φ_S^k (Horner)
            phi = phi * phi_s + counts[:, j][:, None]
        return phi

    return _life_quantile_ms(life, mean_k * s1, var_a, jumps, jw, w, m, cap, step_ms, q)


#: :func:`prefill_parts` results kept, the most recently used [results]. A bursty workload's
#: rate search computes a load point's TTFT quantile and its backlog bounds from the same
#: parts: on the Azure code trace's capacity table (8B, H100-SXM and L40S) 1,729 of its 2,772
#: calls repeated an input among the last 64 (none further back), each a 1,024-cell FFT
#: convolution; 64 results of two 1,024-float arrays hold 1 MiB (trust-s23).
PARTS_CACHE_SIZE = 64


def prefill_parts(own_ms: npt.ArrayLike, own_weights: npt.ArrayLike, ahead_ms: npt.ArrayLike,
                  ahead_pmf: npt.ArrayLike, extra_ms: float = 0.0,
                  ) -> tuple[FloatArray, FloatArray]:
    """Distribution of a request's own prefill + the prefill work of its burst-mates ahead,
    on :data:`TTFT_GRID_CELLS` cells from 0: (cell starts [ms], probabilities [1]).

    ``own_ms`` (probability ``own_weights``): a prompt's own prefill; each burst-mate adds a
    prompt's work ``ahead_ms`` (same probabilities), their number distributed as
    ``ahead_pmf``. Linear binning, one FFT for the compound sum. The grid spans the largest
    prompt + the mean work ahead + :data:`GRID_SDS` standard deviations + the largest work
    (+ ``extra_ms``, room for a term added to it). The same inputs give the same arrays,
    read-only, from the last :data:`PARTS_CACHE_SIZE` results."""
    arrays = tuple(np.ascontiguousarray(a, dtype=np.float64)
                   for a in (own_ms, own_weights, ahead_ms, ahead_pmf))
    return _prefill_parts(arrays, float(extra_ms))


def computed_prefill_parts(own_ms: npt.ArrayLike, own_weights: npt.ArrayLike,
                           ahead_ms: npt.ArrayLike, ahead_pmf: npt.ArrayLike,
                           extra_ms: float = 0.0) -> tuple[FloatArray, FloatArray]:
    """:func:`prefill_parts` computed, never from the kept results (writable arrays)."""
    own = np.asarray(own_ms, dtype=np.float64)[None, :]
    ow = np.asarray(own_weights, dtype=np.float64)
    ow = ow / ow.sum()
    ahead = np.asarray(ahead_ms, dtype=np.float64)[None, :]
    counts = np.asarray(ahead_pmf, dtype=np.float64).ravel()
    counts = counts[:int(np.argmax(np.cumsum(counts) >= counts.sum() - COUNT_TAIL)) + 1]
    k = np.arange(counts.size)
    mean_k = float(counts @ k)
    var_k = float(counts @ (k * k)) - mean_k ** 2
    s1, s2 = float((ahead @ ow)[0]), float(((ahead * ahead) @ ow)[0])
    sd = math.sqrt(max(mean_k * (s2 - s1 * s1) + var_k * s1 * s1, 0.0))
    span_ms = float(own.max()) + mean_k * s1 + GRID_SDS * sd + float(ahead.max()) + extra_ms
    cells = TTFT_GRID_CELLS
    cell = np.array([span_ms / cells])

    def spectrum(points: FloatArray) -> npt.NDArray[np.complex128]:
        position = np.minimum(points / cell[:, None], cells - 1.0)
        index = np.minimum(np.floor(position), cells - 2).astype(np.int64)
        upper = (position - index) * ow
        pmf = (np.bincount(index.ravel(), weights=(ow - upper).ravel(), minlength=cells)
               + np.bincount(index.ravel() + 1, weights=upper.ravel(), minlength=cells))
        return np.fft.rfft(pmf)

    phi_s, phi = spectrum(ahead), np.zeros(cells // 2 + 1, dtype=np.complex128)
    for j in range(counts.size - 1, -1, -1):  # Σ_k P(K = k) φ_S^k (Horner)
        phi = phi * phi_s + counts[j]
    x_pmf = np.maximum(np.fft.irfft(phi * spectrum(own), n=cells), 0.0)
    return np.arange(cells) * cell[0], x_pmf / x_pmf.sum()


#: :func:`prefill_parts`'s kept results.
_prefill_parts = kept_by_value(PARTS_CACHE_SIZE, computed_prefill_parts)


def ttft_quantile_ms(
    own_ms: npt.ArrayLike, own_weights: npt.ArrayLike, ahead_ms: npt.ArrayLike,
    ahead_pmf: npt.ArrayLike, mean_wait_ms: float, rho: float, step_ms: float, q: float = 0.95,
) -> float:
    """``q``-quantile of a request's TTFT = the iteration in flight + its wait behind earlier
    traffic + the prefill of its burst-mates ahead of it + its own prefill [ms].

    ``own_ms`` (probability ``own_weights``): a prompt's own prefill; each burst-mate ahead adds
    a prompt's prefill work ``ahead_ms`` (same probabilities), their number distributed as
    ``ahead_pmf``; the wait is the M/G/1 tail ``P(W > x) = ρ exp(−ρ x ÷ E[W])``. The prefill
    parts are put on a grid of :data:`TTFT_GRID_CELLS` cells (linear binning, one FFT for
    the compound sum), and the quantile of the sum is found by bisection on
    ``P(TTFT ≤ t) = Σ_x P(X = x) F_W(t − step − x)`` — the quantile of the sum, not the sum of
    quantiles."""
    x_ms, x_pmf = prefill_parts(own_ms, own_weights, ahead_ms, ahead_pmf)
    cells = x_ms.size
    below = np.cumsum(x_pmf)  # C_k = P(X ≤ x_k)
    theta = mean_wait_ms / rho if rho > 0 and mean_wait_ms > 0 else 0.0
    if theta == 0.0:  # no wait: the quantile of X
        return step_ms + float(x_ms[min(int(np.argmax(below >= q)), cells - 1)])
    # On [x_k, x_k+1): P(TTFT − t_d ≤ y) = C_k − ρ G_k exp(−(y − x_k) ÷ θ), with
    # G_k = Σ_{j ≤ k} P(X = x_j) exp(−(x_k − x_j) ÷ θ) (a convolution: one FFT each way).
    decay = np.exp(-x_ms / theta)
    size = 2 * cells
    tail = np.maximum(np.fft.irfft(np.fft.rfft(x_pmf, size) * np.fft.rfft(decay, size),
                                   size)[:cells], 0.0)
    at_start = below - rho * tail  # P at each x_k
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = x_ms + theta * np.log(rho * tail / (below - q))
    candidate = np.where(at_start >= q, x_ms, np.where(below > q, inside, np.inf))
    ends = np.append(x_ms[1:], np.inf)
    return step_ms + float(np.min(np.where(candidate < ends, candidate, np.inf)))


def ttft_below(
    own_ms: npt.ArrayLike, own_weights: npt.ArrayLike, ahead_ms: npt.ArrayLike,
    ahead_pmf: npt.ArrayLike, mean_wait_ms: float, rho: float, step_ms: float,
    t_ms: npt.ArrayLike,
) -> FloatArray:
    """``P(TTFT ≤ t)`` at each ``t_ms`` of the TTFT whose quantile :func:`ttft_quantile_ms`
    returns (same arguments) [1]: on each cell ``[x_k, x_k+1)`` of the prefill parts' grid,
    ``P(TTFT − t_d ≤ y) = C_k − ρ G_k exp(−(y − x_k) ÷ θ)``."""
    x_ms, x_pmf = prefill_parts(own_ms, own_weights, ahead_ms, ahead_pmf)
    below = np.cumsum(x_pmf)
    y = np.asarray(t_ms, dtype=np.float64) - step_ms
    k = np.searchsorted(x_ms, y, side="right") - 1
    inside = k >= 0
    k = np.maximum(k, 0)
    theta = mean_wait_ms / rho if rho > 0 and mean_wait_ms > 0 else 0.0
    if theta == 0.0:
        return np.asarray(np.where(inside, below[k], 0.0), dtype=np.float64)
    decay = np.exp(-x_ms / theta)
    size = 2 * x_ms.size
    tail = np.maximum(np.fft.irfft(np.fft.rfft(x_pmf, size) * np.fft.rfft(decay, size),
                                   size)[:x_ms.size], 0.0)
    at = below[k] - rho * tail[k] * np.exp(-np.maximum(y - x_ms[k], 0.0) / theta)
    return np.asarray(np.where(inside, np.clip(at, 0.0, 1.0), 0.0), dtype=np.float64)


def cdf_mixture_quantile_ms(t_ms: npt.ArrayLike, below: npt.ArrayLike, weights: npt.ArrayLike,
                            q: float = 0.95) -> float:
    """``q``-quantile of a mixture of distributions given on one grid [ms]: ``below[j, i] =
    P(X_j ≤ t_i)`` (``t_ms`` increasing), component ``j`` with weight ``weights[j]``; the
    mixture's CDF ``Σ_j w_j P(X_j ≤ t) ÷ Σ_j w_j`` is read linearly between the grid's points
    (``inf`` where it stays below ``q`` on the grid)."""
    t = np.asarray(t_ms, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    mixed = (w / w.sum()) @ np.atleast_2d(np.asarray(below, dtype=np.float64))
    mixed = np.maximum.accumulate(mixed)
    if mixed[-1] < q:
        return math.inf
    k = int(np.argmax(mixed >= q))
    if k == 0:
        return float(t[0])
    share = (q - mixed[k - 1]) / (mixed[k] - mixed[k - 1])
    return float(t[k - 1] + share * (t[k] - t[k - 1]))


def _log_sum_exp(values: FloatArray, axis: int) -> FloatArray:
    """``ln Σ exp(values)`` along ``axis``, shifted by the largest term (no overflow)."""
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.asarray(np.log(np.sum(np.exp(values - top), axis=axis)) + np.squeeze(top, axis),
                      dtype=np.float64)


def sup_backlog_ttft_ms(
    own_ms: npt.ArrayLike, work_ms: npt.ArrayLike, weights: npt.ArrayLike,
    instant_pmf: npt.ArrayLike, before_mean: npt.ArrayLike, before_variance: npt.ArrayLike,
    replicas: float, drained_ms: npt.ArrayLike, step_ms: float, q: float = 0.95,
    crossings: bool = True, chernoff_within_ms: float | None = None,
) -> float:
    """``q``-quantile of a request's TTFT with the backlog it finds taken as the supremum over
    windows of the prefill work that arrived in a window before it less what the replica
    drained in it [ms].

    TTFT = the iteration in flight ``step_ms`` + ``X₀`` + ``V``. ``X₀``: its own prefill
    (``own_ms``) + the work of the burst-mates arriving at its own instant (their number
    distributed as ``instant_pmf``, each a prompt's work ``work_ms``; the points' probabilities
    ``weights``), exact on a grid (:func:`prefill_parts`). ``V = sup_T (A(T) − c T)`` over the
    windows ``T > 0`` before it (Lindley's recursion unrolled): ``A(T)`` the work of the
    ``K_T`` burst-mates in the window beyond those at its instant that reach its replica, ``c T``
    the work drained in it (``drained_ms``); ``K_T = F_T ÷ replicas``, ``F_T`` negative
    binomial with mean ``before_mean`` and variance ``before_variance`` (Poisson where the
    variance is not above the mean), one per window.

    The tail of ``V`` is the largest over the windows of the window's Chernoff bound,
    ``P(V > y) ≈ max_T min_θ exp(κ_T(θ) − θ y)`` with ``κ_T(θ) = ln E[M_S(θ)^{K_T}] − θ c T``
    (``M_S`` the moment generating function of a prompt's work): the large-deviation
    (effective-bandwidth) approximation of a queue's tail, whose decay for y → ∞ is the
    Cramér–Lundberg exponent (docs/capacity-model.md, "The backlog's supremum over windows");
    where smaller, the expected upcrossings of ``y`` take its place (:func:`upcrossings`: the
    bound's looseness on one window stood in for the union over windows; ``crossings=False``
    keeps the Chernoff bound alone).
    ``E[M_S^{F/n}] = G_F(M_S^{1/n})`` in closed form (``G_F`` the negative binomial's
    generating function): with ``M_S ≥ 1`` it bounds the ``⌊F ÷ n⌋`` of the model's burst
    share from above, so each window's bound stays a bound. θ runs over
    :data:`CHERNOFF_THETAS` log-spaced values of :data:`CHERNOFF_RANGE` ÷ E[S] (a grid only
    raises the bound); the exponent is computed at :data:`CHERNOFF_POINTS` backlogs and read
    linearly between them. ``X₀ + V`` is one convolution on the grid; the quantile is read
    linearly between cells.

    ``chernoff_within_ms`` (with ``crossings``): the quantile by the Chernoff bound alone
    (``crossings=False``) is taken first, and returned where it is not above it — the same
    figure as that call's, the upcrossings not computed (a caller taking the larger of it and
    another term of that many ms: the upcrossings only lower the tail); the quantile with
    them where it is above, on the same grid and bound (the figure of this call without it).
    """
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    if float(w @ np.asarray(work_ms, dtype=np.float64)) <= 0:
        return step_ms + float(np.max(own_ms))
    below_v, top_ms = _backlog_below(work_ms, w, before_mean, before_variance, replicas,
                                     drained_ms, q, crossings)
    x_ms, x_pmf = prefill_parts(own_ms, w, work_ms, instant_pmf, extra_ms=top_ms)

    def quantile_ms(crossed: bool) -> float:
        below = _with_backlog(x_pmf, below_v(x_ms, crossed))  # P(X₀ + V ≤ x_k)
        k = int(np.argmax(below >= q))
        if below[k] < q:
            return step_ms + float(x_ms[-1])
        if k == 0:
            return step_ms
        share = (q - below[k - 1]) / (below[k] - below[k - 1])
        return step_ms + float(x_ms[k - 1] + share * (x_ms[k] - x_ms[k - 1]))

    if crossings and chernoff_within_ms is not None:
        chernoff_ms = quantile_ms(False)
        if chernoff_ms <= chernoff_within_ms:
            return chernoff_ms
    return quantile_ms(crossings)


def sup_backlog_ttft_below(
    own_ms: npt.ArrayLike, work_ms: npt.ArrayLike, weights: npt.ArrayLike,
    instant_pmf: npt.ArrayLike, before_mean: npt.ArrayLike, before_variance: npt.ArrayLike,
    replicas: float, drained_ms: npt.ArrayLike, step_ms: float, q: float = 0.95,
    crossings: bool = True,
) -> tuple[FloatArray, FloatArray]:
    """The distribution whose ``q``-quantile :func:`sup_backlog_ttft_ms` returns (same
    arguments): the grid's points [ms] and ``P(TTFT ≤ t)`` at each [1], read linearly between
    them; the grid runs to where the backlog's tail is below ``(1 − q) × 10⁻³``."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    if float(w @ np.asarray(work_ms, dtype=np.float64)) <= 0:
        x_ms, x_pmf = prefill_parts(own_ms, w, work_ms, np.array([1.0]))
        return step_ms + x_ms, np.cumsum(x_pmf)
    below_v, top_ms = _backlog_below(work_ms, w, before_mean, before_variance, replicas,
                                     drained_ms, q, crossings)
    x_ms, x_pmf = prefill_parts(own_ms, w, work_ms, instant_pmf, extra_ms=top_ms)
    return step_ms + x_ms, _with_backlog(x_pmf, below_v(x_ms))


def _with_backlog(x_pmf: FloatArray, below_v: FloatArray) -> FloatArray:
    """``P(X + V ≤ x_k)`` on a grid from ``X``'s probabilities and ``P(V ≤ x_k)`` on the same
    grid (one convolution)."""
    size = 2 * x_pmf.size
    return np.asarray(np.cumsum(np.fft.irfft(np.fft.rfft(x_pmf, size) * np.fft.rfft(np.diff(
        below_v, prepend=0.0), size), size)[:x_pmf.size]), dtype=np.float64)


def _backlog_below(
    work_ms: npt.ArrayLike, weights: FloatArray, before_mean: npt.ArrayLike,
    before_variance: npt.ArrayLike, replicas: float, drained_ms: npt.ArrayLike, q: float,
    crossings: bool = True,
) -> tuple[Callable[..., FloatArray], float]:
    """``y ↦ P(V ≤ y)`` of the backlog's supremum over windows, by the largest Chernoff
    bound over the windows (:func:`sup_backlog_ttft_ms`) or, where smaller, the expected
    upcrossings of ``y`` (:func:`upcrossings`; ``crossings=False``: the Chernoff bound
    alone, the model before them), and the backlog beyond which it is below ``(1 − q) ×
    10⁻³`` by every window's bound [ms]. The function's second argument, where given,
    stands for ``crossings``; asked again on the same grid, it keeps the bound's tail."""
    w = weights
    work = np.asarray(work_ms, dtype=np.float64)
    mean = np.atleast_1d(np.asarray(before_mean, dtype=np.float64))
    dispersion = np.maximum(np.asarray(before_variance, dtype=np.float64)
                            / np.maximum(mean, 1e-300), 1.0)  # variance ÷ mean of F_T [1]
    drained = np.broadcast_to(np.asarray(drained_ms, dtype=np.float64), mean.shape)
    mean_work = float(w @ work)
    low_theta, high_theta = CHERNOFF_RANGE
    theta = np.geomspace(low_theta, high_theta, CHERNOFF_THETAS) / mean_work  # [1/ms]
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    log_mgf = _log_sum_exp(theta[:, None] * work[None, :] + log_w[None, :], axis=1)
    z_minus_1 = np.expm1(log_mgf / max(replicas, 1.0))  # M_S^{1/n} − 1 ≥ 0
    excess = (dispersion - 1.0)[:, None]  # (T, 1)
    inside = 1.0 - excess * z_minus_1[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pgf = np.where(
            excess > 1e-9,
            -(mean[:, None] / np.where(excess > 1e-9, excess, 1.0))
            * np.log(np.where(inside > 0, inside, 1.0)),
            mean[:, None] * z_minus_1[None, :])
    log_pgf = np.where((excess > 1e-9) & (inside <= 0), np.inf, log_pgf)
    kappa = log_pgf - theta[None, :] * drained[:, None]  # (T, θ)
    # V beyond this is below (1 − q) × 1e-3 by every window's bound at some θ
    top_ms = max(float(np.min((np.max(kappa, axis=0) + math.log(1e3 / (1 - q))) / theta)), 0.0)

    kept: list[tuple[FloatArray, FloatArray]] = []  # (grid, the bound's tail on it)

    def chernoff_tail(x_ms: FloatArray) -> FloatArray:
        if kept and kept[0][0] is x_ms:
            return kept[0][1]
        y_ms = np.linspace(0.0, float(x_ms[-1]), CHERNOFF_POINTS)
        exponent = np.max(np.min(kappa[:, :, None] - theta[None, :, None] * y_ms[None, None, :],
                                 axis=1), axis=0)
        kept[:] = [(x_ms, np.exp(np.minimum(np.interp(x_ms, y_ms, exponent), 0.0)))]
        return kept[0][1]

    def below(x_ms: FloatArray, crossed: bool = crossings) -> FloatArray:
        chernoff = chernoff_tail(x_ms)
        if not crossed:
            return np.asarray(1.0 - chernoff, dtype=np.float64)
        # the smaller of the two over-estimates of the tail (docs/capacity-model.md)
        crossing = np.minimum.accumulate(np.minimum(upcrossings(
            work, w, mean, np.asarray(before_variance, dtype=np.float64), replicas, drained,
            x_ms), 1.0))
        return np.asarray(1.0 - np.minimum(chernoff, crossing), dtype=np.float64)

    return below, top_ms


def upcrossings(
    work_ms: npt.ArrayLike, weights: npt.ArrayLike, before_mean: npt.ArrayLike,
    before_variance: npt.ArrayLike, replicas: float, drained_ms: npt.ArrayLike,
    y_ms: npt.ArrayLike,
) -> FloatArray:
    """Expected number of times, looking back from an arriving request, that the work which
    arrived in the window before it less what the replica drained, ``X(T) = A(T) − c T``,
    crosses each backlog ``y_ms`` upwards — an upper bound of ``P(V > y)``, ``V = sup_T X(T)``
    the backlog it finds (``X(0) = 0``: a path above ``y`` crossed it at least once) [1].

    ``X`` falls between arrivals and jumps at each, so it crosses ``y`` only at an arrival
    of age ``T`` whose prompt's work ``S`` lifts it from ``(y − S, y]``:
    ``U(y) = ∫ dm(T) ÷ n × P(y − S < A(T) − c T ≤ y | an arrival at T)`` — Rice's formula
    for the crossings of a process with jumps (P. H. Brill, *Level Crossing Methods in
    Stochastic Models*, Springer, 2008). ``m(T)``: the followers beyond the request's
    instant within ``T`` (``before_mean``, ``before_variance`` at each of the profile's
    windows, whose drained work is ``drained_ms`` = ``c T``), read linearly between windows
    and taken on :data:`UPCROSSING_SLICES` slices of each interval, each at its middle.
    The arrival at ``T`` is a second arrival of the same burst: the count before it is
    conditioned on it (Palm), for a negative binomial count — a Poisson of gamma-distributed
    mean, shape ``r = m² ÷ (v − m)`` — the gamma size-biased to shape ``r + 1``, mean ``m
    (r + 1) ÷ r`` (J. Grandell, *Mixed Poisson Processes*, Chapman & Hall, 1997). The
    stream is dealt in turn over ``replicas``: the crossing arrival reaches the request's
    replica as the ``n i``-th before it, so the count on the replica is ``⌊F ÷ n⌋`` of that
    count ``F`` (:func:`burst_share_pmf`; its characteristic function ``Σ_k P(K = k) φ_S^k``
    by Horner, the negative binomial's closed form on one replica). Each slice has its own grid of
    :data:`UPCROSSING_CELLS` cells up to ``c T + max y + 2 max S``, so that what the FFT wraps
    round is the chance of a backlog beyond the largest ``y`` (aliasing: R. Grübel and R.
    Hermesmeier, "Computation of compound distributions I: aliasing errors and exponential
    tilting", ASTIN Bulletin 29(2), 1999) — on the model's grid, which runs to where every
    window's Chernoff bound is below ``(1 − q) × 10⁻³``, negligible;
    ``P(A ≤ y) − P(A + S ≤ y)`` is one inverse FFT of ``φ_A (1 − φ_S)``, read linearly
    between cells."""
    work = np.asarray(work_ms, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    y = np.asarray(y_ms, dtype=np.float64)
    n = max(float(replicas), 1.0)
    mean = np.concatenate(([0.0], np.atleast_1d(np.asarray(before_mean, dtype=np.float64))))
    var = np.concatenate(([0.0], np.broadcast_to(np.asarray(before_variance, dtype=np.float64),
                                                 mean.size - 1)))
    drained = np.concatenate(([0.0], np.broadcast_to(np.asarray(drained_ms, dtype=np.float64),
                                                     mean.size - 1)))
    cuts = np.arange(UPCROSSING_SLICES) / UPCROSSING_SLICES
    edges = np.append((drained[:-1, None] + cuts[None, :] * np.diff(drained)[:, None]).ravel(),
                      drained[-1])  # c T at the slices' edges [ms]
    at = (edges[1:] + edges[:-1]) / 2  # c T at their middles [ms]
    arriving = np.diff(np.interp(edges, drained, mean)) / n  # arrivals in each slice [1]
    m = np.interp(at, drained, mean)
    v = np.maximum(np.interp(at, drained, var), m)
    clustered = v > m * (1 + 1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(clustered, m * m / np.where(clustered, v - m, 1.0), 1.0)
    m = np.where(clustered, m * (r + 1) / r, m)  # given a second arrival at T (Palm)
    v = np.where(clustered, m + m * m / (r + 1), m)
    cells = UPCROSSING_CELLS
    cell = (at + float(y[-1]) + 2 * float(work.max())) / cells  # each slice's [ms]
    s_pmf = binned_jumps(np.broadcast_to(work, (at.size, work.size)), w, cell, cells)
    psi = np.fft.rfft(s_pmf, axis=1) - 1.0  # φ_S − 1
    if n > 1:  # ⌊F ÷ n⌋ of the count F before the crossing arrival, as the router deals it
        dealt = burst_share_pmf(m, v, n)
        # Σ_k P(K = k) φ_S^k by Horner, the slices with the longest counts first: a slice
        # joins at its last count above COUNT_TAIL (the rows beyond it are 0 until then)
        last = np.argmax(np.cumsum(dealt, axis=1) >= 1.0 - COUNT_TAIL, axis=1)
        order = np.argsort(-last, kind="stable")
        phi_s, last = psi[order] + 1.0, last[order]
        # each count's column as complex, contiguous (the sums as adding the real column),
        # and the rows with last ≥ k for every k at once
        terms = np.ascontiguousarray(dealt[order].T, dtype=np.complex128)[:, :, None]
        actives = np.searchsorted(-last, -np.arange(int(last[0]) + 1), side="right").tolist()
        phi = np.zeros_like(psi)
        for k in range(int(last[0]), -1, -1):
            active = actives[k]
            head = phi[:active]
            head *= phi_s[:active]
            head += terms[k, :active]
        phi[order] = phi.copy()
    else:  # Poisson, or the negative binomial where over-dispersed
        excess = v / np.maximum(m, 1e-300) - 1.0  # dispersion − 1
        phi = np.exp(m[:, None] * psi)
        mixed = excess > 1e-9
        if mixed.any():
            e = excess[mixed, None]
            phi[mixed] = np.exp(-(m[mixed, None] / e) * np.log(1.0 - e * psi[mixed]))
    band = np.cumsum(np.fft.irfft(-phi * psi, cells, axis=1), axis=1)  # P(y − S < A ≤ y)
    position = np.minimum((y[None, :] + at[:, None]) / cell[:, None], cells - 1.0)
    index = np.minimum(np.floor(position), cells - 2).astype(np.int64)
    share = position - index
    row = np.arange(at.size)[:, None]
    crossing = np.maximum(band[row, index] * (1 - share) + band[row, index + 1] * share, 0.0)
    return np.asarray(arriving @ crossing, dtype=np.float64)


def sup_backlog_wait_ms(
    work_ms: npt.ArrayLike, weights: npt.ArrayLike, instant_pmf: npt.ArrayLike,
    before_mean: npt.ArrayLike, before_variance: npt.ArrayLike, replicas: float,
    drained_ms: npt.ArrayLike, levels: npt.ArrayLike, q: float = 0.95, crossings: bool = True,
) -> FloatArray:
    """Quantiles at ``levels`` of the wait an arriving request has before its own prefill:
    the work of its burst-mates at its own instant + the backlog's supremum over windows,
    ``X₀ − P + V`` of :func:`sup_backlog_ttft_ms` (same arguments, its own prefill left out)
    [ms]. The distribution an arrival sees (Palm), which the per-token P95 uses for the
    prompts queued behind a request while it waits."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    u = np.asarray(levels, dtype=np.float64)
    if float(w @ np.asarray(work_ms, dtype=np.float64)) <= 0:
        return np.zeros_like(u)
    below_v, top_ms = _backlog_below(work_ms, w, before_mean, before_variance, replicas,
                                     drained_ms, q, crossings)
    zero = np.zeros_like(np.asarray(work_ms, dtype=np.float64))  # no own prefill
    x_ms, x_pmf = prefill_parts(zero, w, work_ms, instant_pmf, extra_ms=top_ms)
    below = np.maximum.accumulate(_with_backlog(x_pmf, below_v(x_ms)))
    # linear between cells; levels beyond the grid's last cell take its end
    return np.asarray(np.interp(u, below, x_ms, right=float(x_ms[-1])), dtype=np.float64)
