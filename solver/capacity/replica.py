"""One replica under load: the analytic model of TTFT and per-token latency at a request rate.

For a workload and a configuration (GPU, TP; the precision is the workload's) the analytic model
evaluates a replica at a request rate λ (docs/capacity-model.md, "Replica capacity under SLO"):

* prefill is an M/G/1 queue (:mod:`solver.capacity.queueing`) whose service is one prompt's
  prefill; it
  takes the share ``ρ = λ E[S]`` of the GPUs' time;
* decode runs the sequences in flight, ``B = λ × output tokens × TPOT`` (Little's law), taken at
  its Poisson P95; the mean per-token time is the decode step stretched by the prefill share,
  ``TPOT = t_decode(B₉₅, KV) ÷ (1 − ρ)`` (prefill chunks interleave with decode steps);
* the TPOT P95 is that of a request: its decode life of ``m = n − 1`` iterations carries the
  prefill chunks of a Poisson number of prompts (those arriving from its last prefill iteration
  to its last token, plus a geometric number queued behind it during its wait), each adding its
  chunks' time, spread over ``m`` tokens; the 95th percentile of that mixture over the
  output-length distribution (:func:`tpot_p95_ms`,
  :func:`solver.capacity.queueing.tpot_quantile_ms`);
* TTFT P95 = prefill of a P95 prompt + P95 queueing wait + one decode step (the iteration in
  flight when the prompt arrives);
* the batch must fit the KV cache: ``B₉₅ ≤`` max stable sequences at the P95 context;
* with the trace's followers (``arrival.burst.followers``) a burst is divided over the replicas
  and counted explicitly: the prompts in a life are the request's followers within its wait
  and its life that reach its replica — the wait an arrival has, with the intensity of its
  burst (:func:`burst_wait_ms`, :func:`burst_intensity`) — and the TTFT adds the burst-mates
  ahead of it (:func:`burst_ttft_ms`); the wait behind earlier traffic is the GI/G/1 wait of
  the stream dealt in turn over the replicas (:meth:`LoadProfile.wait_scv`);
* with a trace's own arrivals (:func:`with_trace`: the window of a workload's
  ``arrival.trace`` that the plan's replay replays, warm-up included, where the scenario's
  loader cut it, :data:`TRACE_WINDOW_TTFT`; or the busiest minute alone, an option), the TTFT
  P95 by Lindley's recursion over those arrivals, each sent to the replica with the fewest
  requests outstanding as the replay's router sends it, over the window's requests, and
  from the same routing pass the per-token P95, each request's decode life on its replica
  (:func:`trace_p95_ms`, :attr:`LoadProfile.trace_wait`);
* the TTFT's whole distribution at a rate (:func:`ttft_distribution`), and the quantile over
  the requests of a window whose rate changes from minute to minute as the mixture of the
  minutes' distributions (:func:`window_ttft_quantile_ms`; ``benchmarks/burst_agreement.py``).

Everything rises with λ, so the SLO-holding rate is found by search (deterministic): 60 halvings
for the TTFT, the KV cache and the mean TPOT, then regula falsi for the TPOT P95 (on a trace's
window the halvings alone, each point's routing pass giving both P95s).
A fresh measured row for the same configuration overrides the analytic figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from models.common import CapacitySource, Precision
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.memory import check_fit, max_stable_sequences
from solver.capacity.perf import ReplicaPerf, perf_model, scenario_efficiency
from solver.capacity.queueing import (
    TTFT_GRID_CELLS,
    Routed,
    burst_share_pmf,
    cdf_mixture_quantile_ms,
    cyclic_split_scv,
    dealt_pmf,
    kingman_factor,
    least_outstanding_waits_ms,
    length_samples,
    pk_mean_wait_ms,
    poisson_p95,
    qna_factor,
    quantile_band_pmf,
    split_scv,
    sup_backlog_ttft_below,
    sup_backlog_ttft_ms,
    sup_backlog_wait_ms,
    tpot_quantile_counts_ms,
    tpot_quantile_ms,
    ttft_below,
    ttft_quantile_ms,
    wait_quantile_ms,
)

if TYPE_CHECKING:  # a row's type only: validate's SLO check imports this module at start-up
    from models.capacity import CapacityRow
    from models.measured import MeasuredCapacity

#: Halvings of the rate interval when searching the SLO-holding rate, at most [1].
BISECTION_STEPS = 60
#: Relative width of the rate interval at which the SLO-holding rate's halvings stop where
#: the TTFT is a traced window's routed recursion [1]: far below any figure the rate is read
#: to, and each halving beyond it costs a recursion over the window (about half the linked
#: demo's capacity table went into halvings past this width). Without a traced window the
#: halvings run all :data:`BISECTION_STEPS` (cheap; a plan's rows as before, to the bit).
BISECTION_TOLERANCE = 1e-9
#: Relative width of the rate interval at which the TPOT P95 search stops [1].
RATE_TOLERANCE = 1e-4
#: Fixed-point iterations allowed for the decode batch at one rate [1].
MAX_BATCH_ITERATIONS = 500
#: Prompt tokens one iteration may prefill under chunked prefill: vLLM's default
#: ``max_num_batched_tokens``, as the replay's ``solver.replay.engine.DEFAULT_MAX_BATCHED_TOKENS``
#: [tokens].
MAX_BATCHED_TOKENS = 2048
#: Output-length points the TPOT P95 mixes over (fewer than the prompt's: each costs an FFT)
#: [points].
TPOT_LENGTH_SAMPLES = 24
#: Times the TPOT P95 is recomputed with the life it implies [1].
TPOT_FIXED_POINT_ITERATIONS = 3
#: Edges of the quantile bins the wait an arriving request has (with the trace's followers)
#: is represented by in the per-token P95, one point at each bin's middle level, narrower
#: towards the tail, whose long waits set it [1].
WAIT_LEVEL_EDGES = (0.0, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 1.0)
#: Each bin's probability and middle level (the points the wait is taken at).
WAIT_LEVEL_SHARES = np.diff(WAIT_LEVEL_EDGES)
WAIT_LEVELS = (np.asarray(WAIT_LEVEL_EDGES[1:]) + np.asarray(WAIT_LEVEL_EDGES[:-1])) / 2


@dataclass(frozen=True)
class LatencyPrediction:
    """Latency of one replica carrying a given rate."""

    ttft_p95_ms: float
    tpot_p95_ms: float
    utilization: float
    """Rate carried ÷ the row's SLO-holding rate [1]."""
    holds: bool
    """Every P95 SLO the workload states holds (TTFT, per-token and, where stated,
    end-to-end) and the batch fits the KV cache."""
    e2e_p95_ms: float = math.nan
    """End-to-end P95 of an answer of the workload's P95 output length (:func:`e2e_p95_ms`)
    [ms]."""
    basis: str = ""
    """Where a measured configuration's figures come from when its row keeps its load test's
    points (``measured: interpolated between … req/s``, or extrapolated and from what); empty
    otherwise."""


@dataclass(frozen=True)
class LoadProfile:
    """A workload as seen by one replica configuration (precomputed for speed)."""

    perf: ReplicaPerf
    prefill_mean_ms: float
    """E[S]: mean marginal prefill work over the input-length distribution [ms]."""
    prefill_second_moment_ms2: float
    """E[S²] [ms²]."""
    prefill_p95_ms: float
    """Prefill of a P95 prompt [ms]."""
    output_tokens: float
    """Typical output length (mean, else P50) [tokens]."""
    decode_context_tokens: float
    """Mean KV cache of a decoding sequence: typical input + half the typical output [tokens]."""
    max_sequences: int
    """Max stable sequences at the P95 context [sequences]."""
    decode_steps: npt.NDArray[np.float64]
    """Decode iterations of a request (output tokens − 1) at each output-length point with more
    than one token [steps]."""
    decode_weights: npt.NDArray[np.float64]
    """Probability of each of those points (renormalised) [1]."""
    prompt_weights: npt.NDArray[np.float64]
    """Probability of each input-length point [1]."""
    chunk_tokens: npt.NDArray[np.float64]
    """Tokens of each prefill chunk of each input-length point (rows; 0 past its last chunk)
    [tokens]."""
    chunk_context_tokens: npt.NDArray[np.float64]
    """Tokens of the prompt already in the KV cache when each chunk runs [tokens]."""
    arrival_scv: float = 1.0
    """SCV of the workload's inter-arrival times (``arrival.burst``; 1: Poisson) [1]."""
    output_p95_tokens: int = 1
    """The workload's P95 output length, whose end-to-end time :attr:`LoadPoint.e2e_p95_ms`
    is [tokens]."""
    workload_rps: float = math.inf
    """The workload's peak rate, of which one replica gets its share [1/s]."""
    prefill_work_ms: npt.NDArray[np.float64] | None = None
    """Marginal prefill work S of each input-length point [ms]."""
    prefill_own_ms: npt.NDArray[np.float64] | None = None
    """Prefill time of each input-length point's prompt alone [ms]."""
    followers: npt.NDArray[np.float64] | None = None
    """``arrival.burst.followers`` as rows (window in mean gaps at the peak, mean, variance);
    ``None``: the SCV alone describes the burst."""
    backlog_sup: bool = True
    """With followers, the TTFT also takes the backlog as the supremum over windows
    (:func:`~solver.capacity.queueing.sup_backlog_ttft_ms`); ``False`` keeps the largest
    single window's quantile alone (the model before it, for ``benchmarks/burst_agreement.py``)."""
    palm_wait: bool = True
    """With followers and the supremum, the per-token P95 counts the prompts queued behind a
    request while it waits over the wait an arrival has (:func:`burst_wait_ms`); ``False``
    keeps the time-average term (with probability ρ, the mean wait of a request that waits),
    the model before it."""
    coupled_burst: bool = True
    """With :attr:`palm_wait`, a request's wait and the intensity of the burst it decodes in
    are taken together (:func:`burst_intensity`); ``False``: independent."""
    batch_position: bool = True
    """With :attr:`palm_wait`, the burst-mates at a request's own instant that queue behind it
    are taken counter-monotone with its wait (:func:`_behind_in_batch`: in a batch, those
    ahead make the wait and those behind land in the life, together one fewer than the
    batch); ``False``: independent of it (the model before, for
    ``benchmarks/burst_agreement.py``)."""
    ttft_slo_ms: float = math.inf
    """The workload's TTFT SLO [ms]: the time scale of the arrivals' variability in the wait
    behind earlier traffic (:meth:`wait_scv`)."""
    wait_dispersion: bool = False
    """``True``: with followers, the wait behind earlier traffic takes the arrivals' variability
    over a window of the TTFT SLO (:meth:`wait_scv`) — measured in
    ``benchmarks/burst_agreement.py`` and not the default: closer to the replay of the busiest
    minute, but the linked demo's first plan then misses its agent's 600-s replay
    (docs/capacity-model.md, "The arrivals' variability in the wait, at the SLO's time
    scale"); ``False``: the trace-wide SCV of the gaps."""
    trace_arrival_ms: npt.NDArray[np.float64] | None = None
    """Arrival times of a trace's requests scaled so its busiest minute's rate is
    :attr:`trace_peak_rps`, from the first [ms] (:func:`with_trace`); ``None``: no trace."""
    trace_since_ms: float = 0.0
    """The TTFT P95 is over the requests arriving from this time on (the window; those
    before it are the warm-up, whose queue the window inherits) [ms, as
    :attr:`trace_arrival_ms`]."""
    trace_peak_rps: float = math.inf
    """The rate the trace's times were scaled to [1/s]; not finite: :attr:`workload_rps`."""
    trace_work_ms: npt.NDArray[np.float64] | None = None
    """Marginal prefill work of each of those requests [ms]."""
    trace_prompt: npt.NDArray[np.int64] | None = None
    """Each of those requests' prompt: its row of :attr:`trace_chunk_tokens`."""
    trace_chunk_tokens: npt.NDArray[np.float64] | None = None
    """The chunks of the trace's distinct prompts (:func:`prompt_chunks`) [tokens]."""
    trace_chunk_context_tokens: npt.NDArray[np.float64] | None = None
    """The tokens before each of those chunks in the KV cache [tokens]."""
    trace_least_outstanding: bool = True
    """With :attr:`trace_wait`, the trace's requests go to the replica with the fewest
    requests routed there and not finished, as the replay's router sends them
    (:func:`~solver.capacity.queueing.least_outstanding_waits_ms`); ``False``: dealt in turn
    over the replicas (the model before, for ``benchmarks/burst_agreement.py``)."""
    trace_decode_steps: npt.NDArray[np.float64] | None = None
    """Each of those requests' decode iterations after its first token, output − 1 (at least
    0) [steps]: how long it stays counted at its replica by the router
    (:func:`trace_p95_ms`)."""
    trace_wait: bool = False
    """``True`` (with the trace's arrays): the TTFT P95 is Lindley's recursion over the trace's
    requests and the per-token P95 their decode lives, from one routing pass
    (:func:`trace_p95_ms`; docs/capacity-model.md, "The TTFT P95 on the trace's own
    arrivals", "The per-token P95 on the routed window"); ``False``: the queueing model's.
    :func:`load_profile` sets it for a workload whose ``arrival.trace`` carries the replayed
    window, as :data:`TRACE_WINDOW_TTFT` says."""
    backlog_crossings: bool = True
    """With :attr:`backlog_sup`, the backlog's tail is also bounded by its expected upcrossings
    (:func:`~solver.capacity.queueing.upcrossings`), the smaller taken; ``False``: the
    largest Chernoff bound over the windows alone (the model before it, for
    ``benchmarks/burst_agreement.py``)."""

    def replica_scv(self, rate_rps: float) -> float:
        """SCV of the arrivals at a replica carrying ``rate_rps`` of the workload [1]
        (:func:`~solver.capacity.queueing.split_scv`)."""
        return split_scv(self.arrival_scv, rate_rps / self.workload_rps)

    def wait_scv(self, stream_share: float = 1.0) -> float:
        """The arrivals' SCV in the wait behind earlier traffic (before it is dealt over the
        replicas) [1]: ``arrival_scv``, the trace-wide SCV of the gaps; with followers and
        :attr:`wait_dispersion`, their variance ÷ mean over a window of the TTFT SLO at the
        rate evaluated (:meth:`follower_moments`) — the index of dispersion of the stream's
        counts at the time scale the P95 is judged on, where the SCV of the gaps is its limit
        over ever longer windows (docs/capacity-model.md, "The arrivals' variability in the
        wait, at the SLO's time scale")."""
        if (self.followers is None or not self.wait_dispersion
                or not math.isfinite(self.ttft_slo_ms)):
            return self.arrival_scv
        mean, var = self.follower_moments([self.ttft_slo_ms], stream_share)
        return float(var[0] / mean[0]) if mean[0] > 0 else self.arrival_scv

    def follower_moments(self, window_ms: npt.ArrayLike, stream_share: float = 1.0,
                         ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Mean and variance of the arrivals following one within each window [1].

        The window in mean gaps at the peak is ``workload_rps × window``; the followers' mean
        and variance are read linearly between the profile's windows, flat below the first
        (a burst's own instant), and beyond the last the mean grows at the rate of the longest
        window (a steady stream's) with the variance ÷ mean kept. ``stream_share``: the rate
        the workload's stream is evaluated at ÷ its peak (1 in planning: each replica at its
        share of the peak). Where the profile's followers run slower than that over its
        longest window (``m(u) ÷ u`` there is the trace's typical rate ÷ its busiest minute's:
        0.69 on the Azure conversation trace), the stream is taken at the evaluated rate with
        the trace's shape: its clock runs faster by their ratio, each window read at that many
        more gaps (as a replay's ``--rate-scale`` does to a trace)."""
        assert self.followers is not None
        u, mean, var = self.followers.T
        faster = max(1.0, stream_share * u[-1] / max(mean[-1], 1e-12))  # [1]
        gaps = (faster * self.workload_rps / 1000
                * np.atleast_1d(np.asarray(window_ms, dtype=np.float64)))
        last = gaps > u[-1]
        beyond = mean[-1] / u[-1] * gaps
        m = np.where(last, beyond, np.interp(gaps, u, mean))
        v = np.where(last, var[-1] / max(mean[-1], 1e-12) * beyond, np.interp(gaps, u, var))
        return m, v

    def burst_mates(self, window_ms: npt.ArrayLike, replicas: float, stream_share: float = 1.0
                    ) -> npt.NDArray[np.float64]:
        """Distribution of the arrivals following one within each window that reach its
        replica, one of ``replicas``, shape (windows, counts) [1]
        (:meth:`follower_moments`, :func:`~solver.capacity.queueing.burst_share_pmf`)."""
        return burst_share_pmf(*self.follower_moments(window_ms, stream_share), replicas)

    def stream_share(self, rate_rps: float, replicas: float) -> float:
        """The rate of the workload's stream, ``replicas`` × ``rate_rps``, ÷ its peak [1];
        1 where ``replicas`` is not finite (as many as carry the peak)."""
        if not math.isfinite(replicas) or not math.isfinite(self.workload_rps):
            return 1.0
        return rate_rps * replicas / self.workload_rps


@dataclass(frozen=True)
class LoadPoint:
    """State of one replica at one request rate (P95 figures)."""

    rate_rps: float
    ttft_p95_ms: float
    tpot_p95_ms: float
    prefill_share: float
    """ρ: share of GPU time spent on prefill [1]."""
    decode_seqs_p95: int
    """Sequences in decode, Poisson P95 [sequences]."""
    kv_fits: bool
    tpot_mean_ms: float
    """Mean time per output token over the tokens decoded [ms]."""
    e2e_p95_ms: float = math.nan
    """End-to-end time of an answer of the P95 output length, both P95s at once
    (:func:`e2e_p95_ms`; NaN where the TTFT was skipped) [ms]."""

    @property
    def stable(self) -> bool:
        """The replica's prefill keeps up (``ρ < 1``): its queue does not grow without bound.
        Past it a traced window's P95s are finite (the window's overload, :func:`load_point`)
        but grow with the window's length, so such a point never holds."""
        return self.prefill_share < 1

    def holds(self, ttft_slo_ms: float, tpot_slo_ms: float,
              e2e_slo_ms: float | None = None) -> bool:
        """The point is stable, fits the KV cache and holds the TTFT and per-token SLOs, and
        the end-to-end SLO where one is given (``None``: the workload states none)."""
        return (self.stable and self.kv_fits and self.ttft_p95_ms <= ttft_slo_ms
                and self.tpot_p95_ms <= tpot_slo_ms
                and (e2e_slo_ms is None or self.e2e_p95_ms <= e2e_slo_ms))

    def limit(self, ttft_slo_ms: float, tpot_slo_ms: float,
              e2e_slo_ms: float | None = None) -> str:
        """The first limit this point breaks (``none`` when it holds): ``e2e`` where only the
        end-to-end SLO breaks."""
        if not self.stable or math.isinf(self.ttft_p95_ms) or math.isinf(self.tpot_p95_ms):
            return "saturation"
        if not self.kv_fits:
            return "kv_cache"
        if self.tpot_p95_ms > tpot_slo_ms:
            return "tpot"
        if self.ttft_p95_ms > ttft_slo_ms:
            return "ttft"
        if e2e_slo_ms is not None and self.e2e_p95_ms > e2e_slo_ms:
            return "e2e"
        return "none"


def e2e_p95_ms(ttft_p95_ms: float, tpot_p95_ms: float, output_p95_tokens: int) -> float:
    """End-to-end time of an answer of the P95 output length [ms]: its queue wait and first
    token, then a per-token time for each token after the first, both at their P95
    (docs/capacity-model.md, "The end-to-end SLO"). Conservative as a rule: it puts each
    part's P95 on one request at once, which the P95 of the sum equals where the parts rise
    together (comonotone) and lies below where they are not aligned — usually, not always
    (a quantile is not subadditive in general: a heavy tail in one part can lift the sum's
    P95 above the sum of P95s). ``simulate`` and the plan's replay measure the real one."""
    return ttft_p95_ms + (output_p95_tokens - 1) * tpot_p95_ms  # ms + tokens × ms/token


def latency_slack(workload: Workload, ttft_p95_ms: float, tpot_p95_ms: float) -> float:
    """The smallest share of an SLO left unused: ``min(1 − TTFT₉₅ ÷ TTFT*, 1 − TPOT₉₅ ÷
    TPOT*, 1 − E2E₉₅ ÷ E2E*)``, the last where the workload states ``slo.e2e_p95_ms``, its
    E2E₉₅ by :func:`e2e_p95_ms` [1]."""
    slo = workload.slo
    shares = [1 - ttft_p95_ms / slo.ttft_p95_ms, 1 - tpot_p95_ms / workload.tpot_slo_ms]
    if slo.e2e_p95_ms is not None:
        e2e_ms = e2e_p95_ms(ttft_p95_ms, tpot_p95_ms, workload.output_tokens.p95)
        shares.append(1 - e2e_ms / slo.e2e_p95_ms)
    return min(shares)


def cache_split(input_tokens: float, cache_hit_rate: float) -> tuple[int, int]:
    """(tokens to prefill, tokens read from the prefix cache) of one prompt [tokens]."""
    new = max(round(input_tokens * (1 - cache_hit_rate)), 1)
    return new, max(round(input_tokens) - new, 0)


def prompt_chunks(splits: list[tuple[int, int]], max_batched_tokens: int = MAX_BATCHED_TOKENS
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each prompt's prefill chunks, one row per (new, cached) split of :func:`cache_split`:
    the new tokens of each chunk of at most ``max_batched_tokens`` [tokens] and the tokens
    before it in the KV cache [tokens]; 0 past a prompt's last chunk."""
    most = max((math.ceil(new / max_batched_tokens) for new, _ in splits), default=1)
    chunk_tokens = np.zeros((len(splits), most))
    chunk_context = np.zeros((len(splits), most))
    for row, (new, cached) in enumerate(splits):
        starts = np.arange(0, new, max_batched_tokens)
        chunk_tokens[row, :starts.size] = np.minimum(max_batched_tokens, new - starts)
        chunk_context[row, :starts.size] = cached + starts
    return chunk_tokens, chunk_context


def load_profile(
    perf: ReplicaPerf, workload: Workload, max_batched_tokens: int = MAX_BATCHED_TOKENS,
    trace_window: bool | None = None,
) -> LoadProfile:
    """Prefill moments and decode figures of ``workload`` on the replica ``perf``.

    The queue's service time is a prompt's marginal prefill work (it shares iterations, and so
    the weight read and step overhead, with decode); a prompt's own latency is its full prefill.
    Prompts are prefilled in chunks of ``max_batched_tokens`` [tokens]; the chunk moments feed
    the TPOT P95. ``trace_window`` (default :data:`TRACE_WINDOW_TTFT`): where the workload's
    ``arrival.trace`` carries the window the plan's replay replays (``TraceLink.window``), the
    TTFT P95 is Lindley's recursion over it (:func:`with_trace`, :func:`trace_p95_ms`).
    """
    hit = workload.prefix_cache_hit_rate
    inputs = length_samples(workload.input_tokens)
    splits = [cache_split(float(x), hit) for x in inputs.tokens]
    work = np.array([perf.prefill_marginal_ms(*split) for split in splits])
    chunk_tokens, chunk_context = prompt_chunks(splits, max_batched_tokens)
    outputs = length_samples(workload.output_tokens, TPOT_LENGTH_SAMPLES)
    steps = np.rint(outputs.tokens) - 1  # decode iterations after the first token [steps]
    decoding = steps >= 1  # a one-token output has no TPOT (the replay leaves it out too)
    steps, step_weights = steps[decoding], outputs.weights[decoding]
    if steps.size == 0:  # every output is one token: no TPOT; say one step
        steps, step_weights = np.ones(1), np.ones(1)
    p95_context = workload.input_tokens.p95 + workload.output_tokens.p95
    burst = None if workload.arrival is None else workload.arrival.burst
    followers = (None if burst is None or not burst.followers else
                 np.array([(p.window_gaps, p.followers_mean, p.followers_variance)
                           for p in burst.followers]))
    profile = LoadProfile(
        perf=perf,
        prefill_mean_ms=inputs.expect(work),
        prefill_second_moment_ms2=inputs.expect(work * work),
        prefill_p95_ms=perf.prefill_time_ms(*cache_split(workload.input_tokens.p95, hit)),
        output_tokens=workload.output_tokens.typical,
        decode_context_tokens=workload.input_tokens.typical + workload.output_tokens.typical / 2,
        max_sequences=max_stable_sequences(perf.kv_capacity_tokens, p95_context),
        decode_steps=steps,
        decode_weights=step_weights / step_weights.sum(),
        prompt_weights=inputs.weights,
        chunk_tokens=chunk_tokens,
        chunk_context_tokens=chunk_context,
        arrival_scv=1.0 if workload.arrival is None else workload.arrival.interarrival_scv,
        output_p95_tokens=workload.output_tokens.p95,
        workload_rps=(math.inf if workload.arrival is None else
                      max(workload.hourly_demand_rps())),
        prefill_work_ms=work,
        prefill_own_ms=np.array([perf.prefill_time_ms(*split) for split in splits]),
        followers=followers,
        ttft_slo_ms=workload.slo.ttft_p95_ms,
    )
    window = None if workload.arrival is None or workload.arrival.trace is None else (
        workload.arrival.trace.window)
    if window is None or not (TRACE_WINDOW_TTFT if trace_window is None else trace_window):
        return profile
    return with_trace(profile, window.arrival_s, window.input_tokens, hit,
                      since_s=window.since_s, peak_rps=window.peak_rps,
                      output_tokens=window.output_tokens)


def chunk_extra_ms(profile: LoadProfile, batch: int, kv_tokens: int) -> npt.NDArray[np.float64]:
    """Time each prefill chunk adds to a decode iteration of ``batch`` sequences [ms].

    ``step_time_ms(P, B, K, 1, C) − step_time_ms(0, B, K)``: its compute, all-reduce and
    per-sequence cost, less what the decode step's memory time already covers (roofline).
    Shape of ``profile.chunk_tokens``; 0 past a prompt's last chunk.
    """
    return _extra_ms(profile.perf, profile.chunk_tokens, profile.chunk_context_tokens, batch,
                     kv_tokens)


def _extra_ms(perf: ReplicaPerf, chunk_tokens: npt.NDArray[np.float64],
              chunk_context: npt.NDArray[np.float64], batch: int, kv_tokens: int
              ) -> npt.NDArray[np.float64]:
    """:func:`chunk_extra_ms` of the chunks ``chunk_tokens`` after ``chunk_context`` [ms]."""
    mixed = perf.step_times_ms(chunk_tokens, batch, kv_tokens, 1, chunk_context)
    extra = mixed - perf.decode_step_time_ms(batch, kv_tokens)
    return np.where(chunk_tokens > 0, np.maximum(extra, 0.0), 0.0)


def chunked_prefill_ms(profile: LoadProfile, batch: int) -> npt.NDArray[np.float64]:
    """Time each input-length point's prompt takes to prefill on a replica decoding ``batch``
    sequences, under chunked prefill [ms]: one iteration per chunk of
    :data:`MAX_BATCHED_TOKENS`, each the decode step ``t_d`` and what the chunk adds to it
    (:func:`chunk_extra_ms`), ``k t_d + Σ e``. A prompt of one chunk takes about its prefill
    alone; each further chunk adds a decode step (the engine and the replay run each chunk in
    an iteration with the decoding sequences)."""
    kv_tokens = round(batch * profile.decode_context_tokens)
    return _in_chunks_ms(profile, profile.perf.decode_step_time_ms(batch, kv_tokens),
                         chunk_extra_ms(profile, batch, kv_tokens))


def _in_chunks_ms(profile: LoadProfile, step_ms: float, extra: npt.NDArray[np.float64]
                  ) -> npt.NDArray[np.float64]:
    """:func:`chunked_prefill_ms` from the decode step and the chunks' extra times [ms]."""
    return _chunks_ms(profile.chunk_tokens, step_ms, extra)


def _chunks_ms(chunk_tokens: npt.NDArray[np.float64], step_ms: float,
               extra: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each prompt's chunked prefill, ``k t_d + Σ e`` [ms] (:func:`chunked_prefill_ms`)."""
    chunks = (chunk_tokens > 0).sum(axis=1)  # each prompt's chunks [iterations]
    return np.asarray(chunks * step_ms + extra.sum(axis=1), dtype=np.float64)


def tpot_p95_ms(
    profile: LoadProfile, rate_rps: float, batch: int, tpot_mean_ms: float, wait_mean_ms: float,
    prefill_share: float, arrival_scv: float = 1.0, replicas: float = math.inf,
    waits_ms: npt.NDArray[np.float64] | None = None,
) -> float:
    """95th percentile of per-request TPOT at ``rate_rps`` [ms] (docs/capacity-model.md).

    The prompts prefilled during the life of a request of ``m`` decode steps are those that
    arrive from its last prefill iteration (earlier ones share that iteration's token budget;
    later ones queue behind it, first come first served) to its last-but-one decode iteration:
    Poisson at λ over ``t_d + E[e_last] + (m − 1) × TPOT`` ms, plus those that arrived in its
    wait — positive with probability ρ, then about exponential with mean ``E[W] ÷ ρ``. Each
    adds the time of its first ``m`` chunks (:func:`chunk_extra_ms`); at most ``m`` chunks
    land in all (one per iteration). A slow request lives longer and so collects more prompts:
    the life is taken at the quantile itself, by fixed-point iteration from the mean
    (:data:`TPOT_FIXED_POINT_ITERATIONS` iterates, then :func:`aitken_limit`). Bursty
    arrivals (``arrival_scv`` > 1, the replica's own) make the number of prompts in a life
    over-dispersed: its variance is ``arrival_scv`` × its mean (the index of dispersion of a
    renewal count over a long window is the SCV of its gaps). With the trace's followers
    (``arrival.burst.followers``) the number is instead the arrivals following the request
    within its life that reach its replica, one of ``replicas`` (:meth:`LoadProfile.burst_mates`),
    and with probability ρ within its life plus the mean wait of a request that waits (in place
    of the geometric term) — or, given ``waits_ms`` (the wait an arrival has at the middle levels
    of :data:`WAIT_LEVEL_EDGES`' bins, :func:`burst_wait_ms`), within its life plus each of them
    with its bin's probability.
    """
    kv_tokens = round(batch * profile.decode_context_tokens)
    step_ms = profile.perf.decode_step_time_ms(batch, kv_tokens)
    extra = chunk_extra_ms(profile, batch, kv_tokens)  # prompts × chunks [ms]
    steps = profile.decode_steps
    first_m = np.minimum(steps, extra.shape[1]).astype(np.int64) - 1
    prompt_ms = np.cumsum(extra, axis=1)[:, first_m].T  # decode lengths × prompts [ms]
    cap_ms = steps * extra.max()
    rate_per_ms = rate_rps / 1000.0
    # prompts arriving while the request's own prompt is prefilled queue behind it (first come,
    # first served) and are prefilled in its decode life: the window opens when its prefill does
    own_prefill_ms = profile.prompt_weights @ _in_chunks_ms(profile, step_ms, extra)
    per_wait = rate_per_ms * wait_mean_ms / prefill_share if prefill_share > 0 else 0.0
    iterates = [tpot_mean_ms]
    for _ in range(TPOT_FIXED_POINT_ITERATIONS):
        window_ms = own_prefill_ms + (steps - 1) * max(iterates[-1], tpot_mean_ms)
        if profile.followers is not None:
            counts = _life_counts(profile, window_ms, replicas, wait_mean_ms, prefill_share,
                                  profile.stream_share(rate_rps, replicas), waits_ms)
            iterates.append(tpot_quantile_counts_ms(steps, profile.decode_weights, step_ms,
                                                    prompt_ms, profile.prompt_weights, counts,
                                                    cap_ms))
            continue
        iterates.append(tpot_quantile_ms(steps, profile.decode_weights, step_ms, prompt_ms,
                                         profile.prompt_weights, rate_per_ms * window_ms,
                                         prefill_share, per_wait, cap_ms,
                                         dispersion=arrival_scv))
    # no request's TPOT passes step + the largest chunk (every iteration of its life carrying
    # one, ``cap_ms``): the extrapolation from iterates just under it must not either
    most_ms = max(step_ms + float(extra.max(initial=0.0)), iterates[-1])
    return min(aitken_limit(iterates[-3], iterates[-2], iterates[-1]), most_ms)


def _life_counts(profile: LoadProfile, window_ms: npt.NDArray[np.float64], replicas: float,
                 wait_mean_ms: float, prefill_share: float, stream_share: float = 1.0,
                 waits_ms: npt.NDArray[np.float64] | None = None,
                 ) -> npt.NDArray[np.float64]:
    """Distribution of the prompts reaching a request's replica in its life, per window: its
    burst-mates after it within the window plus its wait — each of ``waits_ms`` with its
    bin's probability (:data:`WAIT_LEVEL_EDGES`), or else, with probability ρ (it waited),
    the mean wait of a request that waits, ``E[W] ÷ ρ``, and 0 otherwise [1]."""
    if waits_ms is not None and profile.followers is not None:
        shares, levels = WAIT_LEVEL_SHARES, WAIT_LEVELS
        mean, var = profile.follower_moments(
            (waits_ms[:, None] + window_ms[None, :]).ravel(), stream_share)
        if profile.coupled_burst:
            # the dispersion of the followers at a burst's own instant is its clustering's
            # (batches); what longer windows add beyond it is the burst's intensity's
            _, m0, v0 = profile.followers[0]
            with np.errstate(divide="ignore", invalid="ignore"):
                clustered = np.clip(var / mean, 1.0, max(v0 / m0, 1.0) if m0 > 0 else 1.0)
            clustered = np.where(mean > 0, clustered, 1.0)  # variance ÷ mean of a burst [1]
            intensity = burst_intensity(mean, var - (clustered - 1.0) * mean,
                                        np.repeat(levels, window_ms.size), shares)
            mean = mean * intensity
            var = clustered * mean
        both = (_behind_in_batch(profile, mean, var, replicas, stream_share)
                if profile.batch_position else burst_share_pmf(mean, var, replicas))
        return np.asarray(np.einsum("j,jmk->mk", shares,
                                    both.reshape(waits_ms.size, window_ms.size, -1)),
                          dtype=np.float64)
    counts = profile.burst_mates(window_ms, replicas, stream_share)
    if prefill_share <= 0 or wait_mean_ms <= 0:
        return counts
    waited = profile.burst_mates(window_ms + wait_mean_ms / prefill_share, replicas,
                                 stream_share)
    most = max(counts.shape[1], waited.shape[1])
    return ((1 - prefill_share) * np.pad(counts, ((0, 0), (0, most - counts.shape[1])))
            + prefill_share * np.pad(waited, ((0, 0), (0, most - waited.shape[1]))))


def _behind_in_batch(profile: LoadProfile, mean: npt.NDArray[np.float64],
                     variance: npt.NDArray[np.float64], replicas: float, stream_share: float
                     ) -> npt.NDArray[np.float64]:
    """Distribution of the prompts reaching a request's replica in its life, with the
    burst-mates at its own instant counter-monotone with its wait: rows as ``mean`` and
    ``variance`` (the followers within each wait level's window, one group of rows per level of
    :data:`WAIT_LEVEL_EDGES`), shape (rows, counts) [1].

    The followers ``F`` are those at its instant ``F₀`` (the profile's first window: negative
    binomial) + those after it ``F − F₀`` (negative binomial of the rest of the moments). In a
    batch of ``B`` arriving at once the request's place sets both its wait — the ``A₀`` ahead
    of it, prefilled first — and the ``F₀ = B − 1 − A₀`` behind it, prefilled in its life: the
    longer it waits, the fewer land in its life. So ``F₀`` is taken at the level opposite its
    wait's: a request in the wait's bin ``[a, b)`` has ``F₀`` given its level in ``[1 − b, 1 −
    a)`` (:func:`~solver.capacity.queueing.quantile_band_pmf`), the Fréchet–Hoeffding lower
    bound (the strongest negative dependence the two marginals allow; exact for batches of one
    size whose waits are their members'), where :func:`burst_intensity` takes the upper bound
    for the burst's intensity beyond the instant. Mixed over the levels ``F₀`` keeps its
    distribution. Then ``⌊F ÷ n⌋`` reach the replica
    (:func:`~solver.capacity.queueing.dealt_pmf`)."""
    instant_mean, instant_var = (float(x[0]) for x in profile.follower_moments(0.0, stream_share))
    edges = np.asarray(WAIT_LEVEL_EDGES)
    instant = burst_share_pmf(instant_mean, instant_var, 1.0)[0]
    bands = quantile_band_pmf(instant, 1.0 - edges[1:], 1.0 - edges[:-1])  # (levels, counts)
    after = burst_share_pmf(np.maximum(mean - instant_mean, 0.0),
                            np.maximum(variance - instant_var, 0.0), 1.0)  # (rows, counts)
    levels, counts = bands.shape[0], after.shape[1]
    per_level = after.reshape(levels, -1, counts)
    both = np.zeros((levels, per_level.shape[1], counts + bands.shape[1] - 1))
    if np.isfinite(per_level).all():  # a level adds 0 where its band holds no such count
        for level, k in zip(*np.nonzero(bands), strict=True):  # F₀'s counts: shifted copies
            both[level, :, k:k + counts] += bands[level, k] * per_level[level]
    else:  # 0 × inf is not 0: every level, as the sum is
        for k in np.flatnonzero(bands.any(axis=0)):
            both[:, :, k:k + counts] += bands[:, k, None, None] * per_level
    return dealt_pmf(both.reshape(after.shape[0], -1), replicas)


def aitken_limit(t0: float, t1: float, t2: float) -> float:
    """Limit of a fixed-point iteration rising as t0, t1, t2 (Aitken's Δ²) [same unit].

    ``t2 + Δ₂² ÷ (Δ₁ − Δ₂)`` with ``Δ₁ = t1 − t0``, ``Δ₂ = t2 − t1``: exact for a geometric
    approach. Kept within ``[t2, t2 + 2 Δ₂]`` (the limit of a contraction of ratio 2/3); steps
    that do not shrink give ``t2 + 2 Δ₂``; a last step that does not rise gives ``max(t1, t2)``.
    """
    d1, d2 = t1 - t0, t2 - t1
    if d2 <= 0:
        return max(t1, t2)
    if d1 <= d2:
        return t2 + 2 * d2
    return min(t2 + d2 * d2 / (d1 - d2), t2 + 2 * d2)


#: Whether :func:`load_profile` takes a traced workload's TTFT P95 from Lindley's recursion
#: over the window the plan's replay replays (where the scenario's loader cut it,
#: ``TraceLink.window``) in place of the queueing model's (docs/capacity-model.md, "The TTFT
#: P95 on the replayed window"; measured in ``benchmarks/burst_agreement.py``).
TRACE_WINDOW_TTFT = True


def trace_window_sizing(workload: Workload) -> str | None:
    """What the capacity model sizes ``workload`` on, in words for the outputs, where it is
    its trace's replayed window (:func:`load_profile`: the trace carries the window ``plan``
    replays and :data:`TRACE_WINDOW_TTFT` is on): the trace's file, the window and warm-up
    [s] and ``scale_to``. Both P95s are the window's; the decode batch, and so the KV cache
    check, are still Little's law on Poisson arrivals at the replica's rate
    (:func:`_decode_batch`), which the words say too. ``None``: sized on the queueing model
    (its ``arrival.burst``, else Poisson)."""
    trace = workload.arrival.trace if workload.arrival is not None else None
    window = trace.window if trace is not None else None
    if trace is None or window is None or not TRACE_WINDOW_TTFT:
        return None
    span_s = window.arrival_s[-1] - window.since_s if window.arrival_s else 0.0  # [s]
    return (f"trace window: {Path(trace.path).name}, {span_s:.0f} s at its busiest minute "
            f"after a {window.since_s:.0f}-s warm-up, scale_to {trace.scale_to} (TTFT and "
            f"per-token P95); decode batch and KV check: Poisson at the rate")

def load_point(profile: LoadProfile, rate_rps: float, with_tpot_p95: bool = True,
               replicas: float | None = None, with_ttft: bool = True) -> LoadPoint:
    """Evaluate one replica carrying ``rate_rps`` requests/s (see the module docstring).

    ``with_tpot_p95=False`` skips the TPOT P95 (the costly part) and puts the mean in its place.
    ``with_ttft=False`` skips the TTFT P95 (NaN in its place; the TPOT does not read it): the
    TPOT P95 search's steps, whose TTFT no one reads (:func:`_tpot_edge`). On a trace's
    window (:attr:`LoadProfile.trace_wait`) both P95s come from one routing pass
    (:func:`trace_p95_ms`) and neither flag skips anything: the pass is the cost, and it
    gives both.
    ``replicas``: the replicas the workload is divided over (default: the workload's peak ÷
    ``rate_rps``, as many as carry the peak at this rate); used with the trace's followers
    and window.
    The point's end-to-end time is :func:`e2e_p95_ms` of its two P95s (of the mean TPOT
    where ``with_tpot_p95=False``: a figure below the P95's, as the mean TPOT is).
    """
    return _with_e2e(profile, _load_point(profile, rate_rps, with_tpot_p95, replicas, with_ttft))


def _with_e2e(profile: LoadProfile, point: LoadPoint) -> LoadPoint:
    """``point`` with its end-to-end time, :func:`e2e_p95_ms` of its two P95s."""
    return replace(point, e2e_p95_ms=e2e_p95_ms(point.ttft_p95_ms, point.tpot_p95_ms,
                                                profile.output_p95_tokens))


#: What :func:`_decode_batch` returns: the batch [sequences], its decode step [ms], the mean
#: TPOT [ms] and whether the iteration settled.
Decoded = tuple[int, float, float, bool]


def _load_point(profile: LoadProfile, rate_rps: float, with_tpot_p95: bool,
                replicas: float | None, with_ttft: bool, decoded: Decoded | None = None,
                ttft_enough_ms: float = math.inf) -> LoadPoint:
    """:func:`load_point` before its end-to-end time. ``decoded``: :func:`_decode_batch` at
    ``rate_rps`` where the caller has it already (the same figures, not computed twice).
    ``ttft_enough_ms``: with the trace's followers, the TTFT may stop at a figure above it
    once one part of it is (:func:`burst_ttft_ms`): for a caller that only asks whether the
    point holds a TTFT SLO of that many ms."""
    rate_per_ms = rate_rps / 1000.0
    rho = rate_per_ms * profile.prefill_mean_ms
    on_trace = profile.trace_wait and profile.trace_arrival_ms is not None
    if replicas is None:
        replicas = profile.workload_rps / rate_rps if rate_rps > 0 else math.inf
    if rho >= 1:
        if not on_trace:  # a stream without end: the queue grows without bound
            return LoadPoint(rate_rps, math.inf, math.inf, rho, profile.max_sequences + 1,
                             False, math.inf)
        # a finite window: the decode batch's fixed point has no solution, and the overloaded
        # replica decodes the most its KV cache holds while its queue grows over the window,
        # which the routing pass follows; finite, but never holding (LoadPoint.stable)
        full = max(profile.max_sequences, 1)  # [sequences]
        ttft_ms, tpot_p95 = trace_p95_ms(profile, rate_rps, replicas, full)
        return LoadPoint(rate_rps, ttft_ms, tpot_p95, rho, full, profile.max_sequences >= 1,
                         math.inf)
    batch, step_ms, tpot_ms, converged = (_decode_batch(profile, rate_rps) if decoded is None
                                          else decoded)
    if not converged:
        return LoadPoint(rate_rps, math.inf, math.inf, rho, batch, False, math.inf)
    if on_trace:
        # the trace's own arrivals in place of the model's: one routed pass gives both P95s
        ttft_ms, tpot_p95 = trace_p95_ms(profile, rate_rps, replicas, batch)
        return LoadPoint(rate_rps, ttft_ms, tpot_p95, rho, batch,
                         batch <= profile.max_sequences, tpot_ms)
    scv = profile.replica_scv(rate_rps)
    waits = None  # the wait an arrival has, with followers (burst_wait_ms)
    service_scv = profile.prefill_second_moment_ms2 / profile.prefill_mean_ms ** 2 - 1.0
    wait_ms = pk_mean_wait_ms(rate_per_ms, profile.prefill_mean_ms,
                              profile.prefill_second_moment_ms2)
    if profile.followers is None:
        wait_ms *= kingman_factor(scv, service_scv)
        ttft_ms = profile.prefill_p95_ms + wait_quantile_ms(wait_ms, rho) + step_ms
    else:
        # the follower model drains its backlog at the chunk's share of an iteration, as it was
        # measured (docs/capacity-model.md, "The prefill drain in work": not moved to work)
        drain, share = chunk_share(profile, batch), profile.stream_share(rate_rps, replicas)
        # the stream dealt in turn over the replicas (least-loaded routing): the QNA wait
        wait_ms *= qna_factor(cyclic_split_scv(profile.wait_scv(share), replicas),
                              service_scv, rho)
        # its own prompt prefilled chunk by chunk with the decoding batch (chunked_prefill_ms)
        ttft_ms = math.nan if not with_ttft else burst_ttft_ms(
            profile, wait_ms, rho, step_ms, replicas, drain, share,
            chunked_prefill_ms(profile, batch), enough_ms=ttft_enough_ms)
        if with_tpot_p95 and profile.backlog_sup and profile.palm_wait:
            waits = burst_wait_ms(profile, replicas, drain, share)
    if not with_ttft:
        ttft_ms = math.nan
    # the P95 is never taken below the mean of the P95 batch (a floor: the batch may be larger)
    tpot_p95 = (max(tpot_p95_ms(profile, rate_rps, batch, tpot_ms, wait_ms, rho, scv,
                                replicas, waits), tpot_ms)
                if with_tpot_p95 else tpot_ms)
    return LoadPoint(rate_rps, ttft_ms, tpot_p95, rho, batch, batch <= profile.max_sequences,
                     tpot_ms)


def with_trace(profile: LoadProfile, arrival_s: npt.ArrayLike,
               input_tokens: npt.ArrayLike | None, cache_hit_rate: float,
               trace_wait: bool = True, since_s: float | None = None,
               peak_rps: float = math.inf, output_tokens: npt.ArrayLike | None = None
               ) -> LoadProfile:
    """``profile`` with a trace's requests for :func:`trace_p95_ms`: their arrivals
    ``arrival_s`` [s], scaled so that the trace's busiest minute's rate is ``peak_rps`` (not
    finite: the workload's peak) as the replay scales it (``scale_to: peak_minute``;
    ``solver.replay.plan_replay.peak_window``), and each request's prefill (marginal work and
    own time, :func:`cache_split` at ``cache_hit_rate``) from its ``input_tokens``; ``None`` (a
    trace without lengths): the workload's input-length points, drawn by their probabilities
    with a fixed seed (0). ``since_s``: the P95 is over the requests arriving from then on,
    those before it a warm-up whose queue they inherit (the plan's replay window,
    ``TraceLink.window``); ``None``: over all of them (the busiest minute alone,
    ``solver.replay.plan_replay.busiest_minute``). ``output_tokens``: each request's output
    [tokens], how long it decodes (and so stays counted by the router) after its first
    token; ``None``: the workload's typical output for every request."""
    arrival = np.asarray(arrival_s, dtype=np.float64)
    first_s = arrival[0] if arrival.size else 0.0
    arrival_ms = (arrival - first_s) * 1000.0
    since_ms = 0.0 if since_s is None else (since_s - first_s) * 1000.0
    perf = profile.perf
    if input_tokens is None:
        assert profile.prefill_work_ms is not None
        rng = np.random.default_rng(0)
        where = rng.choice(profile.prompt_weights.size, arrival.size, p=profile.prompt_weights)
        work = profile.prefill_work_ms[where]
        tokens, context = profile.chunk_tokens, profile.chunk_context_tokens
    else:
        lengths, where = np.unique(np.asarray(input_tokens), return_inverse=True)
        splits = [cache_split(float(x), cache_hit_rate) for x in lengths]
        work = np.array([perf.prefill_marginal_ms(*split) for split in splits])[where]
        tokens, context = prompt_chunks(splits)
    outputs = (np.full(arrival.size, profile.output_tokens) if output_tokens is None
               else np.asarray(output_tokens, dtype=np.float64).reshape(-1))
    if outputs.size != arrival.size:
        raise ValueError(f"{arrival.size} arrivals need {arrival.size} output lengths, "
                         f"got {outputs.size}")
    return replace(profile, trace_arrival_ms=arrival_ms, trace_work_ms=work,
                   trace_decode_steps=np.maximum(np.rint(outputs) - 1, 0.0),
                   trace_prompt=np.asarray(where, dtype=np.int64).reshape(-1),
                   trace_chunk_tokens=tokens, trace_chunk_context_tokens=context,
                   trace_wait=trace_wait, trace_since_ms=since_ms, trace_peak_rps=peak_rps)


class TraceP95(NamedTuple):
    """The P95s of a traced window's requests at one replica rate, from one routing pass
    (:func:`trace_p95_ms`) [ms]."""

    ttft_ms: float
    """TTFT P95 over the window's requests [ms]."""
    tpot_ms: float
    """Per-token P95 over the window's requests with at least one decode iteration after
    the first token (the decode step where none has) [ms]."""


def trace_p95_ms(profile: LoadProfile, rate_rps: float, replicas: float, batch: int,
                 q: float = 0.95) -> TraceP95:
    """TTFT and per-token P95 of the trace's requests at one replica carrying ``rate_rps``
    [ms], both from one routing pass: what :func:`load_point` gives for a traced window
    (docs/capacity-model.md, "The TTFT P95 on the replayed window" and "The per-token P95 on
    the routed window").

    **Routing.** The requests' arrivals (:func:`with_trace`) are rescaled so each of ``k``
    replicas gets ``rate_rps`` at the trace's busiest minute (times × ``peak ÷ (rate_rps ×
    k)``, ``peak`` the rate the times were scaled to), and each is sent, as it arrives, to
    the replica with the fewest requests routed there and not finished (the replay's router;
    ties to the first), counted there until its first token and then for its decode life
    (:attr:`LoadProfile.trace_least_outstanding`; ``False``: dealt in turn over the replicas).

    **TTFT.** On each replica Lindley's recursion in prefill work from its first request on
    (the warm-up included, so the window inherits its queue): the service ``S_n`` the
    request's marginal prefill work, drained at ``c`` per ms (:func:`prefill_drain` of the
    decoding ``batch``); the backlog ``W_n`` takes ``W_n ÷ c`` to drain, the request's wait.
    Its TTFT is that wait + its own prefill in chunks beside the decoding batch
    (:func:`chunked_prefill_ms`) + one decode step (the iteration in flight).

    **Per-token.** Its decode life, the one the router counts it for: ``m = output − 1``
    decode steps ``t_d`` at the decoding ``batch``, each stretched to ``t_d + e`` while its
    replica's prefill queue is busy (``[start_n, start_n + S_n ÷ c]`` of each request sent
    there), so from its first token ``f`` it lives ``L = m t_d + s |busy ∩ [f, f + L]|``
    (``s`` :func:`chunk_share`); its per-token time is ``L ÷ m``.

    The P95s are over the requests arriving from :attr:`LoadProfile.trace_since_ms` on (the
    per-token one over those with ``m ≥ 1``; ``numpy.percentile``, linear). ``replicas``
    ``x`` need not be whole: each P95 is read linearly between ``k = ⌊x⌋`` and ``⌈x⌉`` (at
    least 1), so it moves continuously with the rate. At no load (``rate_rps`` 0) none waits
    and each decode step is ``t_d``. There is no refusal here: past ``ρ ≥ 1`` the recursion
    is the window's overload (:func:`load_point` runs it there at the most sequences the KV
    cache holds, a point that never holds). Deterministic."""
    assert (profile.trace_arrival_ms is not None and profile.trace_work_ms is not None
            and profile.trace_prompt is not None and profile.trace_chunk_tokens is not None
            and profile.trace_chunk_context_tokens is not None)
    arrival, since_ms = profile.trace_arrival_ms, profile.trace_since_ms
    counted = arrival >= since_ms
    step_ms, after_ms = _trace_after_wait_ms(profile, batch)
    if not counted.any():
        return TraceP95(0.0, step_ms)
    if rate_rps <= 0 or not math.isfinite(replicas):  # no load: every request finds it empty
        return TraceP95(float(np.percentile(after_ms[counted], 100 * q)), step_ms)
    low = max(1, math.floor(replicas))  # [replicas]
    share = min(max(replicas - low, 0.0), 1.0)  # of the next replica [1]
    below = _trace_on_ms(profile, rate_rps, low, batch, step_ms, after_ms, q)
    if share <= 0:
        return below
    above = _trace_on_ms(profile, rate_rps, low + 1, batch, step_ms, after_ms, q)
    return TraceP95((1 - share) * below.ttft_ms + share * above.ttft_ms,
                    (1 - share) * below.tpot_ms + share * above.tpot_ms)


def _trace_after_wait_ms(profile: LoadProfile, batch: int
                         ) -> tuple[float, npt.NDArray[np.float64]]:
    """The decode step at ``batch`` [ms] and each trace request's TTFT after its wait: its
    own prefill in chunks beside the batch + one step [ms]."""
    assert (profile.trace_prompt is not None and profile.trace_chunk_tokens is not None
            and profile.trace_chunk_context_tokens is not None)
    kv_tokens = round(batch * profile.decode_context_tokens)
    step_ms = profile.perf.decode_step_time_ms(batch, kv_tokens)
    tokens = profile.trace_chunk_tokens
    own_ms = _chunks_ms(tokens, step_ms, _extra_ms(
        profile.perf, tokens, profile.trace_chunk_context_tokens, batch, kv_tokens)
                        )[profile.trace_prompt]
    return step_ms, own_ms + step_ms


def _trace_steps(profile: LoadProfile) -> npt.NDArray[np.float64]:
    """Each trace request's decode iterations after its first token [steps]."""
    assert profile.trace_arrival_ms is not None
    if profile.trace_decode_steps is not None:
        return profile.trace_decode_steps
    return np.full(profile.trace_arrival_ms.size, max(round(profile.output_tokens) - 1, 0),
                   dtype=np.float64)


def _trace_arrival_on_ms(profile: LoadProfile, rate_rps: float, k: int
                         ) -> npt.NDArray[np.float64]:
    """The trace's arrivals [ms] rescaled so each of ``k`` replicas gets ``rate_rps`` at the
    busiest minute (:func:`trace_p95_ms`)."""
    assert profile.trace_arrival_ms is not None
    peak = (profile.trace_peak_rps if math.isfinite(profile.trace_peak_rps)
            else profile.workload_rps)
    if not math.isfinite(peak):
        return profile.trace_arrival_ms
    return profile.trace_arrival_ms * (peak / (rate_rps * k))  # the window's instant too


def _trace_routed(profile: LoadProfile, rate_rps: float, k: int, batch: int, step_ms: float,
                  after_wait_ms: npt.NDArray[np.float64]
                  ) -> tuple[npt.NDArray[np.float64], Routed]:
    """The trace's arrivals scaled to ``k`` replicas at ``rate_rps`` [ms], and each request's
    wait, replica and the end of its decode life, routed to the fewest outstanding
    (:func:`trace_p95_ms`)."""
    assert profile.trace_work_ms is not None
    arrival = _trace_arrival_on_ms(profile, rate_rps, k)
    drain = max(prefill_drain(profile, batch), 1e-12)  # [1]
    return arrival, least_outstanding_waits_ms(
        arrival, profile.trace_work_ms / drain, after_wait_ms, _trace_steps(profile) * step_ms,
        k, chunk_share(profile, batch))


def _trace_on_ms(profile: LoadProfile, rate_rps: float, k: int, batch: int, step_ms: float,
                 after_wait_ms: npt.NDArray[np.float64], q: float) -> TraceP95:
    """:func:`trace_p95_ms` on ``k`` replicas, each at ``rate_rps`` [ms]: a request's TTFT its
    wait + ``after_wait_ms`` (its own prefill and the step), its per-token time its decode
    life ÷ its decode steps."""
    assert profile.trace_arrival_ms is not None and profile.trace_work_ms is not None
    counted = profile.trace_arrival_ms >= profile.trace_since_ms
    steps = _trace_steps(profile)
    if profile.trace_least_outstanding:
        arrival, routed = _trace_routed(profile, rate_rps, k, batch, step_ms, after_wait_ms)
        waits, gone = routed.waits_ms, routed.gone_ms
    else:  # dealt in turn: each replica its own queue, the same recursion and lives on it
        arrival = _trace_arrival_on_ms(profile, rate_rps, k)
        service = profile.trace_work_ms / max(prefill_drain(profile, batch), 1e-12)  # [ms]
        share = chunk_share(profile, batch)
        waits, gone = np.zeros(arrival.size), np.zeros(arrival.size)
        for first in range(min(k, arrival.size)):
            mine = np.arange(first, arrival.size, k)
            alone = least_outstanding_waits_ms(arrival[mine], service[mine],
                                               after_wait_ms[mine], steps[mine] * step_ms,
                                               1, share)
            waits[mine], gone[mine] = alone.waits_ms, alone.gone_ms
    ttft = waits + after_wait_ms  # [ms]
    decoding = counted & (steps >= 1)
    tpot = ((gone - (arrival + ttft))[decoding] / steps[decoding]  # [ms per token]
            if decoding.any() else np.array([step_ms]))
    return TraceP95(float(np.percentile(ttft[counted], 100 * q)),
                    float(np.percentile(tpot, 100 * q)))


def _decode_batch(profile: LoadProfile, rate_rps: float) -> tuple[int, float, float, bool]:
    """The decode batch at ``rate_rps`` (``ρ < 1``): its Poisson P95 by fixed-point iteration
    from 1 [sequences], its decode step [ms], the mean TPOT [ms], and whether the iteration
    settled (or passed the KV cache)."""
    perf = profile.perf
    rate_per_ms = rate_rps / 1000.0
    rho = rate_per_ms * profile.prefill_mean_ms
    batch = 1  # sequences in decode, P95 [sequences]
    step_ms = perf.decode_step_time_ms(1, round(profile.decode_context_tokens))
    tpot_ms = step_ms / (1 - rho)
    for _ in range(MAX_BATCH_ITERATIONS):
        tpot_ms = step_ms / (1 - rho)  # decode step stretched by the interleaved prefill share
        in_decode = rate_per_ms * profile.output_tokens * tpot_ms  # Little's law [sequences]
        next_batch = max(math.ceil(poisson_p95(in_decode)), 1)
        if next_batch == batch:
            return batch, step_ms, tpot_ms, True
        batch = next_batch  # rises monotonically from below to the least fixed point
        if batch > profile.max_sequences:
            return batch, step_ms, tpot_ms, True  # the KV cache is already exceeded
        step_ms = perf.decode_step_time_ms(batch, round(batch * profile.decode_context_tokens))
    return batch, step_ms, tpot_ms, False


def prefill_drain(profile: LoadProfile, batch: int) -> float:
    """Prefill work a replica decoding ``batch`` sequences does per ms while prompts queue [1]:
    ``S_c ÷ (t_d + e)``, each iteration then the decode step ``t_d`` and a full chunk of
    :data:`MAX_BATCHED_TOKENS` that adds ``e`` to it, and carries the chunk's marginal prefill
    work ``S_c`` (:meth:`~solver.capacity.perf.ReplicaPerf.prefill_marginal_ms`: the unit a
    prompt's work ``S`` is counted in): the drain of the trace's recursion
    (:func:`trace_p95_ms`). Until 2026-12-04 that took ``e ÷ (t_d + e)``, the share of
    the iteration's time the chunk adds (:func:`chunk_share`), which is not work: where the
    decode step's memory time hides under the chunk's compute (the L40S) ``e`` is well below
    ``S_c`` and the backlog was drained up to 20 % too slowly. The follower model
    (:func:`burst_ttft_ms`, :func:`burst_wait_ms`) still drains at :func:`chunk_share`, as it
    was measured (docs/capacity-model.md, "The prefill drain in work")."""
    kv_tokens = round(batch * profile.decode_context_tokens)
    return (profile.perf.prefill_marginal_ms(MAX_BATCHED_TOKENS)
            / profile.perf.step_time_ms(MAX_BATCHED_TOKENS, batch, kv_tokens))


def chunk_share(profile: LoadProfile, batch: int) -> float:
    """Share of an iteration's time a full prefill chunk adds to the decode step of ``batch``
    sequences [1]: ``e ÷ (t_d + e)``, ``e`` what a chunk of :data:`MAX_BATCHED_TOKENS` adds to
    the decode step ``t_d``. While prompts queue every iteration carries a chunk, so a
    decoding request advances ``1 − chunk_share`` as fast as between them."""
    kv_tokens = round(batch * profile.decode_context_tokens)
    step_ms = profile.perf.decode_step_time_ms(batch, kv_tokens)
    chunk_ms = profile.perf.step_time_ms(MAX_BATCHED_TOKENS, batch, kv_tokens) - step_ms
    return chunk_ms / (chunk_ms + step_ms)


def burst_ttft_ms(profile: LoadProfile, wait_mean_ms: float, rho: float, step_ms: float,
                  replicas: float, drain: float, stream_share: float = 1.0,
                  own_ms: npt.NDArray[np.float64] | None = None,
                  enough_ms: float = math.inf) -> float:
    """TTFT P95 with the trace's followers [ms]: the largest, over windows ``T`` before the
    request (0 and each of the profile's windows), of the P95 of the iteration in flight + the
    M/G/1 wait + the prefill work of the burst-mates that arrived within ``T`` and reached its
    replica + its own prefill (:func:`~solver.capacity.queueing.ttft_quantile_ms`), less the
    work the replica drained in ``T`` (``drain × T``; ``drain``: prefill work done per ms while
    prompts queue). The backlog a request meets is the most that arrived in any window before
    it beyond what the server did in it (Lindley's recursion unrolled); burst-mates before a
    request number as its followers do (every pair within ``T`` is one arrival's follower and
    the other's predecessor). ``own_ms``: each input-length point's own prefill (default: the
    prompt alone, ``prefill_own_ms``; :func:`load_point` gives it in chunks,
    :func:`chunked_prefill_ms`). ``enough_ms``: once a window's term passes it, that term is
    returned (the P95, the largest term, passes it too; the SLO search's halvings above the
    TTFT's limit then skip the other windows and the backlog's supremum): a figure that only
    says the P95 is above ``enough_ms``; not finite (the default): the P95."""
    assert profile.prefill_own_ms is not None and profile.prefill_work_ms is not None
    own = profile.prefill_own_ms if own_ms is None else own_ms
    windows_ms, ahead, before = _burst_windows(profile, replicas, stream_share)
    # Cantelli's bound, P95 ≤ mean + √19 sd, skips windows that cannot give the largest term
    w = profile.prompt_weights
    own_mean = float(w @ own)
    own_var = float(w @ own ** 2) - own_mean ** 2
    s1, s2 = profile.prefill_mean_ms, profile.prefill_second_moment_ms2
    theta = wait_mean_ms / rho if rho > 0 else 0.0
    fixed_mean = step_ms + own_mean + wait_mean_ms
    fixed_var = own_var + 2 * rho * theta * theta - wait_mean_ms ** 2
    k = np.arange(ahead.shape[1])
    k_mean, k_second = ahead @ k, ahead @ (k * k)
    sums_var = k_mean * (s2 - s1 * s1) + (k_second - k_mean ** 2) * s1 * s1
    bound = (fixed_mean + k_mean * s1 + math.sqrt(19.0) * np.sqrt(np.maximum(
        fixed_var + sums_var, 0.0)) - drain * windows_ms)
    best = -math.inf
    for counts, window, most in zip(ahead, windows_ms, bound, strict=True):
        if most > best:
            best = max(best, ttft_quantile_ms(own, w, profile.prefill_work_ms,
                                              counts, wait_mean_ms, rho, step_ms)
                       - drain * window)
            if best > enough_ms:
                return best
    if not profile.backlog_sup:
        return best
    sup = (own, profile.prefill_work_ms, w, ahead[0], *before, replicas, drain * windows_ms[1:],
           step_ms)
    # the Chernoff tail alone is at least the tail with the upcrossings, so where its P95 does
    # not pass the largest window's neither does theirs (same figures, the FFTs saved)
    if not profile.backlog_crossings:
        return max(best, sup_backlog_ttft_ms(*sup, crossings=False))
    return max(best, sup_backlog_ttft_ms(*sup, crossings=True, chernoff_within_ms=best))


def ttft_distribution(profile: LoadProfile, rate_rps: float, replicas: float | None = None
                      ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The model's TTFT distribution at one replica carrying ``rate_rps``: points [ms] and
    ``P(TTFT ≤ t)`` at each [1], read linearly between them; its 0.95-quantile is
    :func:`load_point`'s TTFT P95 (``replicas`` as there).

    With the trace's followers, the TTFT's quantile is the largest of each window's and the
    backlog's supremum's (:func:`burst_ttft_ms`), so its distribution is the smallest of
    theirs at each ``t``: ``min(min_T P(TTFT_T ≤ t + drain × T), P(TTFT_sup ≤ t))``, on the
    supremum's grid (or, without it, on :data:`~solver.capacity.queueing.TTFT_GRID_CELLS`
    points up to eight times the P95). Without followers, the P95 prompt's prefill + the
    decode step + the wait's exponential tail ``P(W > x) = ρ exp(−ρ x ÷ E[W])``. Above what
    the replica carries (``ρ ≥ 1`` or no settled batch) every TTFT is infinite: the
    distribution is 0 everywhere."""
    if replicas is None:
        replicas = profile.workload_rps / rate_rps if rate_rps > 0 else math.inf
    rate_per_ms = rate_rps / 1000.0
    rho = rate_per_ms * profile.prefill_mean_ms
    if rho >= 1:
        return np.array([0.0]), np.array([0.0])
    batch, step_ms, _, converged = _decode_batch(profile, rate_rps)
    if not converged:
        return np.array([0.0]), np.array([0.0])
    service_scv = profile.prefill_second_moment_ms2 / profile.prefill_mean_ms ** 2 - 1.0
    wait_ms = pk_mean_wait_ms(rate_per_ms, profile.prefill_mean_ms,
                              profile.prefill_second_moment_ms2)
    if profile.followers is None:
        wait_ms *= kingman_factor(profile.replica_scv(rate_rps), service_scv)
        shift_ms = profile.prefill_p95_ms + step_ms
        top_ms = shift_ms + wait_quantile_ms(wait_ms, rho, 1.0 - 1e-6) + 1.0
        t_ms = np.linspace(0.0, top_ms, TTFT_GRID_CELLS)
        wait_tail = (rho * np.exp(-rho * np.maximum(t_ms - shift_ms, 0.0) / wait_ms)
                     if wait_ms > 0 else np.zeros_like(t_ms))
        return t_ms, np.where(t_ms >= shift_ms, 1.0 - wait_tail, 0.0)
    assert profile.prefill_own_ms is not None and profile.prefill_work_ms is not None
    drain, share = chunk_share(profile, batch), profile.stream_share(rate_rps, replicas)
    wait_ms *= qna_factor(cyclic_split_scv(profile.wait_scv(share), replicas), service_scv, rho)
    own = chunked_prefill_ms(profile, batch)
    windows_ms, ahead, before = _burst_windows(profile, replicas, share)
    w, work = profile.prompt_weights, profile.prefill_work_ms
    if profile.backlog_sup:
        t_ms, below = sup_backlog_ttft_below(own, work, w, ahead[0], *before, replicas,
                                             drain * windows_ms[1:], step_ms,
                                             crossings=profile.backlog_crossings)
    else:
        p95 = burst_ttft_ms(profile, wait_ms, rho, step_ms, replicas, drain, share, own)
        t_ms = np.linspace(0.0, 8.0 * p95, TTFT_GRID_CELLS)
        below = np.ones_like(t_ms)
    for counts, window in zip(ahead, windows_ms, strict=True):
        below = np.minimum(below, ttft_below(own, w, work, counts, wait_ms, rho, step_ms,
                                             t_ms + drain * window))
    return t_ms, below


def window_ttft_quantile_ms(profile: LoadProfile, rates_rps: npt.ArrayLike,
                            requests: npt.ArrayLike, replicas: float, q: float = 0.95) -> float:
    """TTFT ``q``-quantile over the requests of a window whose arrival rate changes from one
    part to the next [ms]: part ``k`` brings ``requests[k]`` requests at ``rates_rps[k]``,
    divided over ``replicas`` equal replicas (each carries ``rates_rps[k] ÷ replicas``). A
    request is a draw from the window's requests, so its TTFT's distribution is the mixture,
    weighted by requests, of the model's at each part's rate (:func:`ttft_distribution`):
    the quantile of ``Σ_k n_k P(TTFT_k ≤ t) ÷ Σ_k n_k`` (docs/capacity-model.md, "The P95
    over a window's requests as a mixture over its minutes"). Each part is taken in its own
    steady state, no backlog carried from one to the next: a part above what the replicas
    carry counts as infinite TTFTs (``inf`` if they are more than ``1 − q`` of the
    requests)."""
    rates = np.asarray(rates_rps, dtype=np.float64)
    weights = np.asarray(requests, dtype=np.float64)
    keep = weights > 0
    rates, weights = rates[keep], weights[keep]
    unique, at = np.unique(rates, return_inverse=True)
    parts = [ttft_distribution(profile, float(r) / replicas, replicas) for r in unique]
    t_ms = np.unique(np.concatenate([t for t, _ in parts]))
    below = np.array([np.interp(t_ms, t, f, left=0.0, right=float(f[-1])) for t, f in parts])
    return cdf_mixture_quantile_ms(t_ms, below[at.ravel()], weights, q)


def _burst_windows(profile: LoadProfile, replicas: float, stream_share: float
                   ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64],
                              tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    """The windows before a request the TTFT looks at (0 and each of the profile's) [ms], the
    burst-mates in each that reach its replica (rows), and, for the backlog's supremum, the
    mean and variance of the followers in each window beyond those at its instant (the
    burst-mates at the instant exactly, those before them as independent counts with the rest
    of the moments)."""
    assert profile.followers is not None
    windows_ms = np.concatenate(([0.0], 1000.0 * profile.followers[1:, 0] / profile.workload_rps))
    mean, var = profile.follower_moments(windows_ms, stream_share)
    return (windows_ms, profile.burst_mates(windows_ms, replicas, stream_share),
            (np.maximum(mean[1:] - mean[0], 0.0), np.maximum(var[1:] - var[0], 0.0)))


def burst_intensity(mean: npt.NDArray[np.float64], variance: npt.NDArray[np.float64],
                    levels: npt.NDArray[np.float64], shares: npt.NDArray[np.float64]
                    ) -> npt.NDArray[np.float64]:
    """Intensity of the burst a request at each wait level is in, ÷ the mean [1].

    A negative binomial count of mean ``μ`` and variance ``σ²`` is a Poisson count whose mean
    is ``μ Γ``, ``Γ`` gamma-distributed with mean 1 and shape ``r = μ² ÷ (σ² − μ)`` (the burst's
    intensity). The requests that wait long are those in dense bursts, so ``Γ`` is taken at
    the request's wait level ``u`` (comonotone): its ``u``-quantile by the Wilson–Hilferty
    cube-root normal approximation (E. B. Wilson and M. M. Hilferty, "The distribution of
    chi-square", PNAS 17(12), 1931), ``(1 − 1 ÷ 9r + z_u ÷ √(9r))³`` floored at 0, scaled so
    that its mean over the levels (``shares``, one group of rows per level, rows in the order
    of ``levels``) is 1 — the count's mean over all requests is kept. Poisson where ``σ² ≤
    μ``: 1. Arrays of one shape: the rows of each level, then the next level's."""
    normal = NormalDist()
    unique, at = np.unique(levels, return_inverse=True)  # a few levels, each over many windows
    z = np.array([normal.inv_cdf(float(u)) for u in unique])[at.ravel()].reshape(np.shape(levels))
    excess = np.maximum(variance - mean, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ninth = np.where(excess > 1e-9 * mean, excess / np.maximum(9.0 * mean * mean, 1e-300),
                         0.0)  # 1 ÷ 9r
    g = np.maximum(1.0 - ninth + z * np.sqrt(ninth), 0.0) ** 3
    rows = g.reshape(shares.size, -1)
    scale = shares @ rows
    return np.asarray(np.where(scale > 0, rows / np.where(scale > 0, scale, 1.0), 1.0)
                      .ravel(), dtype=np.float64)


def burst_wait_ms(profile: LoadProfile, replicas: float, drain: float, stream_share: float = 1.0
                  ) -> npt.NDArray[np.float64]:
    """The wait an arriving request has before its prefill, with the trace's followers, at the
    middle level of each of :data:`WAIT_LEVEL_EDGES`' bins [ms]: the work of its burst-mates at
    its own instant + the backlog's supremum over windows, the TTFT's
    (:func:`~solver.capacity.queueing.sup_backlog_wait_ms`) — the distribution an arrival
    sees, not time's: in a burst a request waits far more often than the replica is busy."""
    assert profile.prefill_work_ms is not None
    windows_ms, ahead, before = _burst_windows(profile, replicas, stream_share)
    return sup_backlog_wait_ms(profile.prefill_work_ms, profile.prompt_weights, ahead[0],
                               *before, replicas, drain * windows_ms[1:], WAIT_LEVELS,
                               crossings=profile.backlog_crossings)


def slo_holding_point(
    profile: LoadProfile, ttft_slo_ms: float, tpot_slo_ms: float,
    e2e_slo_ms: float | None = None,
) -> tuple[LoadPoint | None, str]:
    """Largest rate holding the SLOs and the KV cache, and the limit that stops it.

    ``e2e_slo_ms``: the workload's ``slo.e2e_p95_ms`` (``None``: it states none), held by the
    point's :attr:`LoadPoint.e2e_p95_ms`. Returns ``(None, reason)`` when even a vanishing
    rate breaks an SLO. Two searches, as each limit rises with the rate:
    :data:`BISECTION_STEPS` halvings (with a traced window's TTFT, until the interval is
    within :data:`BISECTION_TOLERANCE` of its top) find the largest rate holding the TTFT, the
    KV cache, the mean TPOT and the end-to-end time with the mean TPOT (cheap; the P95 is never
    below the mean), then, if the TPOT P95 or the end-to-end time with it breaks there, regula
    falsi (Illinois) narrows the rate holding them to :data:`RATE_TOLERANCE` (each step
    computes a P95, and with an end-to-end SLO the TTFT). On a traced window the halvings alone
    find it: each point's routing pass gives its TTFT and per-token P95 together
    (:func:`trace_p95_ms`), and the mean TPOT is not a limit there.
    """
    idle = load_point(profile, 0.0)
    if not idle.holds(ttft_slo_ms, tpot_slo_ms, e2e_slo_ms):
        limit = idle.limit(ttft_slo_ms, tpot_slo_ms, e2e_slo_ms)
        if limit == "kv_cache":
            return None, "the KV cache cannot hold one sequence of the P95 context"
        if limit == "tpot":
            return None, (f"one decode step takes {idle.tpot_p95_ms:.1f} ms > TPOT SLO "
                          f"{tpot_slo_ms:g} ms even at no load")
        if limit == "e2e":
            assert e2e_slo_ms is not None
            return None, unloaded_e2e_text(idle, profile.output_p95_tokens, e2e_slo_ms)
        return None, (f"TTFT of a P95 prompt is {idle.ttft_p95_ms:.0f} ms > SLO "
                      f"{ttft_slo_ms:g} ms even at no load")
    low, high = 0.0, 1000.0 / profile.prefill_mean_ms  # prefill saturates at ρ = 1
    tolerance = (BISECTION_TOLERANCE
                 if profile.trace_wait and profile.trace_arrival_ms is not None else 0.0)
    asked_low = asked_high = False  # low, high: rates the halvings found to hold, to break
    for _ in range(BISECTION_STEPS):
        if high - low <= tolerance * high:
            break
        mid = (low + high) / 2
        if (mid == low and asked_low) or (mid == high and asked_high):
            # one ulp apart: every halving left would ask again at low or high and get the
            # answer it got there (the search is deterministic): the interval stays
            break
        if _holds_without_p95(profile, mid, ttft_slo_ms, tpot_slo_ms, e2e_slo_ms):
            low, asked_low = mid, True
        else:
            high, asked_high = mid, True
    best = load_point(profile, low) if asked_low else idle  # low 0: that very point
    if best.holds(ttft_slo_ms, tpot_slo_ms, e2e_slo_ms):
        limit = load_point(profile, high, with_tpot_p95=False).limit(ttft_slo_ms, tpot_slo_ms,
                                                                      e2e_slo_ms)
    else:
        best, limit = _tpot_edge(profile, idle, best, tpot_slo_ms, e2e_slo_ms)
    return (best if best.rate_rps > 0 else None), limit


def unloaded_e2e_text(idle: LoadPoint, output_p95_tokens: int, e2e_slo_ms: float) -> str:
    """Why a replica cannot hold an end-to-end SLO even at no load: its end-to-end time of a
    P95 answer, its parts, and by how much it is over [words]."""
    return (f"end-to-end time of a P95 answer ({output_p95_tokens:,} tokens) is "
            f"{idle.e2e_p95_ms:,.0f} ms (TTFT {idle.ttft_p95_ms:,.0f} ms + "
            f"{output_p95_tokens - 1:,} × {idle.tpot_p95_ms:.1f} ms per token) > SLO "
            f"{e2e_slo_ms:,g} ms even at no load, {idle.e2e_p95_ms - e2e_slo_ms:,.0f} ms over")


def _holds_without_p95(profile: LoadProfile, rate_rps: float, ttft_slo_ms: float,
                       tpot_slo_ms: float, e2e_slo_ms: float | None = None) -> bool:
    """``load_point(profile, rate_rps, with_tpot_p95=False).holds(...)``, its TTFT (the costly
    part with a trace's window or followers) computed only where the KV cache and the mean
    TPOT hold: the same answer, the SLO search's halvings above the mean TPOT's limit cheap.
    On a trace's window the per-token P95 is the routing pass's, not the mean's (it may lie
    below the model's mean at the P95 batch), so there the mean is not read and only the KV
    cache is checked before the pass."""
    rho = rate_rps / 1000.0 * profile.prefill_mean_ms
    if rho >= 1:
        return False
    decoded = _decode_batch(profile, rate_rps)
    batch, _, tpot_ms, converged = decoded
    on_trace = profile.trace_wait and profile.trace_arrival_ms is not None
    if (not converged or batch > profile.max_sequences
            or not (on_trace or tpot_ms <= tpot_slo_ms)):
        return False
    # the batch once; a TTFT of followers stops once a part of it passes the SLO
    point = _load_point(profile, rate_rps, False, None, True, decoded, ttft_slo_ms)
    return _with_e2e(profile, point).holds(ttft_slo_ms, tpot_slo_ms, e2e_slo_ms)


def _tpot_edge(profile: LoadProfile, holds: LoadPoint, breaks: LoadPoint, tpot_slo_ms: float,
               e2e_slo_ms: float | None = None) -> tuple[LoadPoint, str]:
    """The point of largest rate whose TPOT P95 holds, and with ``e2e_slo_ms`` its end-to-end
    time too, between two points (Illinois), and the limit that breaks past it (``tpot`` or
    ``e2e``). The excess is the TPOT P95's over its SLO [ms]; with an end-to-end SLO the larger
    of it and the end-to-end time's excess scaled to the TPOT SLO's ms (a continuous function
    rising with the rate, zero where the tighter of the two binds)."""
    with_ttft = e2e_slo_ms is not None

    def excess(point: LoadPoint) -> float:
        over = point.tpot_p95_ms - tpot_slo_ms
        if e2e_slo_ms is None:
            return over
        return max(over, (point.e2e_p95_ms - e2e_slo_ms) * tpot_slo_ms / e2e_slo_ms)

    excess_low = excess(holds)  # ≤ 0
    excess_high = excess(breaks)  # > 0
    side = 0
    for _ in range(BISECTION_STEPS):
        width = breaks.rate_rps - holds.rate_rps
        if width <= RATE_TOLERANCE * breaks.rate_rps:
            break
        rate = breaks.rate_rps - excess_high * width / (excess_high - excess_low)
        if not holds.rate_rps < rate < breaks.rate_rps or math.isinf(excess_high):
            rate = holds.rate_rps + width / 2
        point = load_point(profile, rate, with_ttft=with_ttft)
        over = excess(point)
        if over <= 0:
            holds, excess_low = point, over
            excess_high = excess_high / 2 if side == -1 else excess_high  # Illinois
            side = -1
        else:
            breaks, excess_high = point, over
            excess_low = excess_low / 2 if side == 1 else excess_low
            side = 1
    limit = ("e2e" if e2e_slo_ms is not None and breaks.tpot_p95_ms <= tpot_slo_ms
             else "tpot")
    if math.isnan(holds.ttft_p95_ms):  # the steps skipped the TTFT: the point returned has it
        # load_point(profile, holds.rate_rps), its per-token P95 (the same) not computed again
        ttft_ms = load_point(profile, holds.rate_rps, with_tpot_p95=False).ttft_p95_ms
        holds = _with_e2e(profile, replace(holds, ttft_p95_ms=ttft_ms))
    return holds, limit


# --- predictions at a given rate -----------------------------------------------------------


def _profile_for(scenario: Scenario, workload: Workload, row: CapacityRow) -> LoadProfile | None:
    spec, gpu = scenario.model(row.model), scenario.gpu(row.gpu)
    longest = workload.input_tokens.p99 + workload.output_tokens.p99
    if check_fit(spec, gpu, row.precision, row.tp, scenario.policy, longest) is not None:
        return None
    perf = perf_model(spec, gpu, row.precision, row.tp,
                      scenario_efficiency(scenario, gpu, workload.runtime, row.tp),
                      memory_margin_fraction=scenario.policy.memory_margin_fraction)
    return load_profile(perf, workload)


#: What :func:`predict_at_rate` keeps between calls on one scenario (``memo``): per workload and
#: configuration, its load profile, whether its SLO-holding point was looked for, and that point.
PredictMemo = dict[tuple[Workload, str, str, Precision, int],
                   tuple["LoadProfile | None", bool, "LoadPoint | None"]]


def predict_at_rate(
    scenario: Scenario, workload: Workload, row: CapacityRow, rate_rps: float,
    memo: PredictMemo | None = None,
) -> LatencyPrediction:
    """P95 latencies of one replica of ``row`` carrying ``rate_rps`` requests/s.

    Analytic rows: the model at that rate. Measured rows that keep their load test's points:
    the points (:func:`_on_sweep`). Other measured rows: the analytic curve at the same share of
    the SLO-holding rate, scaled so that at ``row.slo_rps`` it gives the measured latencies (if
    the model cannot place the configuration, the measured latencies hold up to the tested rate
    and nothing holds beyond it). ``memo`` (one per scenario): the profile and the SLO-holding
    point of a workload's configuration, built once for the many rates a check asks about
    (each failure and period of ``check`` asks again).
    """
    ttft_slo, tpot_slo = workload.slo.ttft_p95_ms, workload.tpot_slo_ms
    e2e_slo, out_p95 = workload.slo.e2e_p95_ms, workload.output_tokens.p95
    utilization = rate_rps / row.slo_rps
    if row.source is CapacitySource.measured:
        from solver.capacity.measured import fresh_measurement

        measured = fresh_measurement(scenario, workload, row.gpu, row.tp)
        if measured is not None and measured.points:
            return _on_sweep(scenario, workload, row, rate_rps, measured, memo)
    analytic = row.source is CapacitySource.analytic
    profile, reference = _model_of(scenario, workload, row, memo, search=not analytic)
    if analytic and profile is not None:
        point = load_point(profile, rate_rps)
        return LatencyPrediction(point.ttft_p95_ms, point.tpot_p95_ms, utilization,
                                 point.holds(ttft_slo, tpot_slo, e2e_slo), point.e2e_p95_ms)
    if analytic:  # no profile: nothing to search either
        profile, reference = _model_of(scenario, workload, row, memo, search=True)
    if profile is None or reference is None:
        within = utilization <= 1
        ttft = row.ttft_p95_ms if within else math.inf
        tpot = row.tpot_p95_ms if within else math.inf
        e2e = e2e_p95_ms(ttft, tpot, out_p95)
        return LatencyPrediction(ttft, tpot, utilization,
                                 within and (e2e_slo is None or e2e <= e2e_slo), e2e)
    point = load_point(profile, utilization * reference.rate_rps)
    ttft = point.ttft_p95_ms * row.ttft_p95_ms / reference.ttft_p95_ms
    tpot = point.tpot_p95_ms * row.tpot_p95_ms / reference.tpot_p95_ms
    e2e = e2e_p95_ms(ttft, tpot, out_p95)
    return LatencyPrediction(ttft, tpot, utilization, point.stable and point.kv_fits
                             and ttft <= ttft_slo and tpot <= tpot_slo
                             and (e2e_slo is None or e2e <= e2e_slo), e2e)


def _model_of(scenario: Scenario, workload: Workload, row: CapacityRow,
              memo: PredictMemo | None, *, search: bool
              ) -> tuple[LoadProfile | None, LoadPoint | None]:
    """The configuration's analytic profile (``None``: the model cannot place it) and, with
    ``search``, its SLO-holding point (``None`` without ``search`` or where none holds); each
    built once per ``memo``."""
    key = (workload, row.model, row.gpu, row.precision, row.tp)
    profile, looked, reference = (memo[key] if memo is not None and key in memo
                                  else (_profile_for(scenario, workload, row), False, None))
    if search and not looked:
        reference = (None if profile is None else slo_holding_point(
            profile, workload.slo.ttft_p95_ms, workload.tpot_slo_ms, workload.slo.e2e_p95_ms)[0])
        looked = True
    if memo is not None:
        memo[key] = (profile, looked, reference)
    return profile, reference


def _on_sweep(scenario: Scenario, workload: Workload, row: CapacityRow, rate_rps: float,
              measured: MeasuredCapacity, memo: PredictMemo | None) -> LatencyPrediction:
    """:func:`predict_at_rate` of a measured row that keeps its load test's points: inside the
    sweep (and below it) the points (:func:`~solver.capacity.sweep_latency.latency_on_sweep`);
    above its heaviest load the heaviest load's P95s times the analytic model's rise from that
    load to this rate (each measured rate mapped to the analytic one at the same share of the
    SLO-holding rate, as for rows without points), never below them; where the model cannot
    place the configuration, nothing above the heaviest load. Holds: at most the row's tested
    rate, and every P95 SLO the workload states."""
    from solver.capacity.measured import SLO_TOLERANCE
    from solver.capacity.sweep_latency import latency_on_sweep, rising

    ttft_slo, tpot_slo = workload.slo.ttft_p95_ms, workload.tpot_slo_ms
    e2e_slo, out_p95 = workload.slo.e2e_p95_ms, workload.output_tokens.p95
    on = latency_on_sweep(measured.points, rate_rps)
    if on is not None:
        ttft, tpot, basis = on.ttft_p95_ms, on.tpot_p95_ms, on.basis
    else:
        last = rising(measured.points)[-1]
        heaviest = f"the heaviest tested load ({last.achieved_rps:.3g} req/s, {last.load_text()})"
        profile, ref = _model_of(scenario, workload, row, memo, search=True)
        if profile is None or ref is None:
            ttft = tpot = math.inf
            basis = f"above {heaviest}: not predicted (the model cannot place the configuration)"
        else:
            to_model = ref.rate_rps / measured.tested_peak_rps  # analytic ÷ measured rate [1]
            at = load_point(profile, rate_rps * to_model)
            anchor = load_point(profile, last.achieved_rps * to_model)
            ttft = max(last.ttft_p95_ms, at.ttft_p95_ms * last.ttft_p95_ms / anchor.ttft_p95_ms)
            tpot = max(last.tpot_p95_ms, at.tpot_p95_ms * last.tpot_p95_ms / anchor.tpot_p95_ms)
            if not (at.stable and math.isfinite(anchor.ttft_p95_ms * anchor.tpot_p95_ms)):
                ttft = tpot = math.inf
            basis = (f"extrapolated above {heaviest}: its P95s × the analytic model's rise "
                     "from it")
    e2e = e2e_p95_ms(ttft, tpot, out_p95)
    within = 1 + SLO_TOLERANCE  # the row's rate and P95s were interpolated to the limits [1]
    holds = (rate_rps <= measured.tested_peak_rps * within and ttft <= ttft_slo * within
             and tpot <= tpot_slo * within and (e2e_slo is None or e2e <= e2e_slo * within))
    return LatencyPrediction(ttft, tpot, rate_rps / row.slo_rps, holds, e2e, basis)


# --- closed loop (fleetplan estimate) ------------------------------------------------------


@dataclass(frozen=True)
class ClosedLoop:
    """Mean figures of a replica kept at a fixed number of requests in flight."""

    concurrency: int
    ttft_ms: float
    tpot_ms: float
    requests_per_s: float
    output_tokens_per_s: float


def closed_loop(
    perf: ReplicaPerf, input_tokens: int, output_tokens: int, concurrency: int
) -> ClosedLoop:
    """A replica serving ``concurrency`` clients that each send the next request on completion.

    With throughput X [req/ms] and the marginal prefill work S of a prompt: prefill share
    ρ = X·S; TPOT = decode step of all ``concurrency`` sequences ÷ (1 − ρ); TTFT = the
    prompt's prefill iteration (with the other C − 1 sequences decoding in it) + the M/D/1 wait
    behind the other clients' prompts + the decode iteration in flight. X solves
    X = C ÷ (TTFT + output × TPOT) (the right side falls as X rises, so bisection finds the one
    root). What a client's request meets (docs/capacity-model.md, "`fleetplan estimate`:
    closed loop"):

    * only the other C − 1 clients' prompts (a client never waits behind itself; the arrival
      theorem of closed queueing networks): they arrive at X (C − 1) ÷ C, so one client waits
      for no prompt at all;
    * the iteration the engine runs for the other sequences when the prompt arrives: a client
      sends its next request when its last token comes back, at the end of an iteration, and
      the engine starts the next one for the C − 1 others at once, so the prompt waits for
      that whole decode step — unless a prompt's prefill is running (share ρ of the others'),
      which the M/D/1 wait counts.
    """
    service_ms = perf.prefill_marginal_ms(input_tokens)
    others = concurrency - 1
    tokens_per_seq = input_tokens + output_tokens / 2  # mean KV of a decoding sequence
    step_ms = perf.decode_step_time_ms(concurrency, round(concurrency * tokens_per_seq))
    others_kv = round(others * tokens_per_seq)
    prefill_ms = perf.step_time_ms(input_tokens, others, others_kv)
    in_flight_ms = perf.decode_step_time_ms(others, others_kv) if others else 0.0
    share = others / concurrency  # of the arrivals, those of the other clients

    def latencies(x_per_ms: float) -> tuple[float, float]:
        rho = x_per_ms * service_ms
        if rho >= 1:
            return math.inf, math.inf
        others_rate = x_per_ms * share
        ttft = (prefill_ms + pk_mean_wait_ms(others_rate, service_ms, service_ms**2)
                + in_flight_ms * (1 - others_rate * service_ms))
        return ttft, step_ms / (1 - rho)

    low, high = 0.0, 1.0 / service_ms
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2
        ttft, tpot = latencies(mid)
        if concurrency / (ttft + output_tokens * tpot) > mid:
            low = mid
        else:
            high = mid
    ttft, tpot = latencies(low)
    rps = low * 1000.0
    return ClosedLoop(concurrency, ttft, tpot, rps, rps * output_tokens)
