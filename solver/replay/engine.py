"""Discrete-event replay of a request trace on a set of replicas (continuous batching).

Requests arrive at their trace times and are routed in two levels, as a mixed fleet is deployed
(one deployment per configuration behind a weighted traffic split, least-request inside each):

- a **configuration** (replicas whose performance models are equal: same GPU, TP and precision,
  whatever the zone) is picked in proportion to its live capacity, the sum of its live replicas'
  ``weight`` (their SLO-holding rates when replaying a plan, the split the plan assumes), by smooth
  weighted round-robin (deterministic, no RNG) among the configurations whose KV cache can hold
  the request; the counters restart when a failure changes the live replicas;
- within it, the replica with the fewest requests routed there and not finished, per unit of its
  ``weight``; ties to the lowest index. With one configuration this is the whole router.

A replica runs iterations as a continuous-batching engine with chunked prefill does (vLLM's
scheduler):

- Admission: a request is admitted when its prompt's KV fits beside the KV in use and the one
  token each decoding request writes next, and fewer than ``max_seqs`` are running; else it
  waits, first in first out. A request longer than the model's context (``max_context_tokens``)
  or whose input + output exceeds every replica's KV capacity is rejected, never truncated
  (``rejected_over_context`` and ``rejected_too_long``: both counted in ``rejected_too_long``).
- Preemption (as vLLM does it): when a step cannot get a KV slot for every decoding request,
  the newest running request (latest arrival) is preempted, again until the step fits, and goes
  back to the front of the waiting queue. ``recompute`` (the default) frees its KV and prefills
  its prompt and the tokens it has generated again when readmitted; ``swap`` moves its KV to host
  memory and back, stalling the replica for the transfer (``swap_gb_per_s``), and resumes
  decoding. Each preemption is counted (``preempted``).
- An iteration decodes one token for every decoding request and prefills up to
  ``max_batched_tokens`` − (decoding requests) prompt tokens, taken from admitted prompts in
  order (chunked prefill). Its time is ``step_time_ms(prefill_tokens, decode_seqs, kv_tokens,
  prefill_seqs, prefill_context_tokens)`` of the replica's performance model.
- The iteration that finishes a prompt emits its first token (TTFT = end of that iteration −
  arrival); the request then decodes one token per iteration and finishes after ``output − 1``
  more. TPOT = (finish − first token) ÷ (output − 1).

Speed: the batch only changes when a request is admitted, finishes a prefill chunk or
completes. Between those events a replica runs identical decode steps whose KV grows by
``decode_seqs`` tokens a step, so a whole run is advanced at once: the step time is taken as
affine in the KV tokens over the run (the chord between its first and last step — exact for
affine step times, and within the kink of a roofline ``max`` otherwise), and the run's duration
is the arithmetic series ``S(j) = j t₀ + s j (j − 1) / 2``. An admission mid-run cuts the run at
the first iteration boundary after it (the quadratic solved for j).

Failures: at a failure's ``at_s`` the replicas it hits vanish — every replica of a zone
(:class:`ZoneFailure`) or the named replicas one node held (:class:`ReplicaLoss`); several
failures happen in time order. Requests that have not yet received their first token (waiting
or in prefill) are re-routed to the surviving replicas, keeping their arrival time; requests
already streaming tokens are counted as failed (their stream broke). Every formula and
assumption is in docs/replay.md.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Protocol

import numpy as np
import numpy.typing as npt

from models.inventory import Fleet, FleetReplicaGroup
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.perf import replica_perf
from solver.replay.traces import Trace

MS_PER_S = 1000.0
SECONDS_PER_MINUTE = 60.0

#: vLLM's default token budget per iteration with chunked prefill, and maximum running sequences.
DEFAULT_MAX_BATCHED_TOKENS = 2048
DEFAULT_MAX_SEQS = 256
#: KV use is sampled at the first arrival of each interval this long [ms].
KV_SAMPLE_MS = 6000.0
#: An iteration ending this close after a failure counts as ending at it, so its tokens are
#: delivered: a decode run's closed-form end and the same steps summed one by one differ by
#: float rounding (a ulp or two), and the tie must not decide a stream's fate [ms].
FAILURE_TIE_MS = 1e-6
#: Host-to-GPU bandwidth a swapped KV cache moves at: PCIe Gen4 x16 in practice [GB/s].
DEFAULT_SWAP_GB_PER_S = 25.0


class PreemptMode(StrEnum):
    """What a preempted request's KV cache becomes (vLLM's two modes)."""

    recompute = "recompute"
    """Freed; the prompt and the tokens generated so far are prefilled again on readmission."""
    swap = "swap"
    """Copied to host memory and back on readmission; decoding resumes where it stopped."""


class StepModel(Protocol):
    """What the replay needs of a replica's performance model (solver.capacity.perf.ReplicaPerf)."""

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the replica holds [tokens]."""
        ...

    def step_time_ms(
        self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
        prefill_seqs: int = 1, prefill_context_tokens: int = 0,
    ) -> float:
        """One iteration: prefill ``prefill_tokens`` (over ``prefill_seqs`` prompts already
        holding ``prefill_context_tokens`` cached tokens) and decode one token for each of
        ``decode_seqs`` sequences whose KV totals ``kv_tokens`` [ms]."""
        ...


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica taking part in the replay."""

    name: str
    zone: str
    perf: StepModel
    weight: float = 1.0
    """Routing weight: the replica's capacity (the SLO-holding rate in a plan replay). A
    configuration (replicas of equal ``perf``) gets arrivals in proportion to its live replicas'
    summed weights; inside it a replica of twice the weight is sent twice the outstanding
    requests [req/s, or any unit shared by all replicas]."""

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"replica {self.name}: routing weight must be positive")


@dataclass(frozen=True)
class EngineConfig:
    """Scheduler settings of every replica (vLLM's defaults)."""

    max_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    """Tokens per iteration: decode tokens first, prompt chunks fill the rest [tokens]."""
    max_seqs: int = DEFAULT_MAX_SEQS
    """Running requests per replica [requests]."""
    prefix_cache_hit_rate: float = 0.0
    """Share of each prompt already in the prefix cache: held in KV, not prefilled [1]."""
    preempt: PreemptMode = PreemptMode.recompute
    """What a preempted request's KV becomes."""
    swap_gb_per_s: float = DEFAULT_SWAP_GB_PER_S
    """Host link bandwidth of a swap, each way [GB/s]."""
    max_context_tokens: int | None = None
    """The model's context: a longer request (input + output) is rejected [tokens]."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_seqs < self.max_batched_tokens:
            raise ValueError("need 1 <= max_seqs < max_batched_tokens (a prompt must progress)")
        if not 0.0 <= self.prefix_cache_hit_rate < 1.0:
            raise ValueError("prefix_cache_hit_rate must lie in [0, 1)")
        if not self.swap_gb_per_s > 0:
            raise ValueError("swap_gb_per_s must be positive")


@dataclass(frozen=True)
class ZoneFailure:
    """Every replica of ``zone`` vanishes at ``at_s`` seconds into the (scaled) trace."""

    zone: str
    at_s: float

    @property
    def label(self) -> str:
        """``zone:<zone>``."""
        return f"zone:{self.zone}"

    def hits(self, spec: ReplicaSpec) -> bool:
        """Whether the replica vanishes in this failure."""
        return spec.zone == self.zone


@dataclass(frozen=True)
class ReplicaLoss:
    """The named replicas (those one node held) vanish at ``at_s`` seconds into the trace."""

    names: frozenset[str]
    at_s: float
    label: str = "node"
    """What was lost, for the outputs (``node:<zone>/<gpu>``)."""

    def hits(self, spec: ReplicaSpec) -> bool:
        """Whether the replica vanishes in this failure."""
        return spec.name in self.names


#: A failure the replay can inject.
Outage = ZoneFailure | ReplicaLoss


def as_outages(failure: Outage | Sequence[Outage] | None) -> list[Outage]:
    """One failure, several or none, as a list in time order (stable on ties)."""
    if failure is None:
        return []
    items = [failure] if isinstance(failure, ZoneFailure | ReplicaLoss) else list(failure)
    return sorted(items, key=lambda f: f.at_s)


class Status(IntEnum):
    """What became of a request."""

    completed = 0
    rejected_too_long = 1
    """Input + output exceed the KV capacity of every live replica (the model's context is
    :attr:`rejected_over_context`)."""
    rejected_no_replica = 2
    """No replica of the workload was alive."""
    failed = 3
    """Its replica vanished while it was streaming tokens."""
    rejected_over_context = 4
    """Input + output exceed the model's context (``max_context_tokens``): no replica of any
    fleet serves it, so it is counted apart from the fleet's late and unanswered requests."""


@dataclass(frozen=True, eq=False)
class ReplayResult:
    """Per-request outcomes and per-minute state of one replay."""

    arrival_s: npt.NDArray[np.float64]
    output_tokens: npt.NDArray[np.int64]
    status: npt.NDArray[np.int8]
    ttft_ms: npt.NDArray[np.float64]
    """NaN unless completed."""
    e2e_ms: npt.NDArray[np.float64]
    """Arrival to last token [ms]; NaN unless completed."""
    tpot_ms: npt.NDArray[np.float64]
    """(finish − first token) ÷ (output − 1) [ms]; NaN unless completed with output > 1."""
    queue_depth_max: npt.NDArray[np.int64]
    """Per minute: most requests routed and still without a first token, seen by an arrival."""
    kv_use: npt.NDArray[np.float64]
    """Per minute: the largest share of live replicas' KV capacity in use, sampled at the first
    arrival of every 6 s (NaN in a minute without arrivals)."""
    requeued: int
    """Requests moved off failed replicas before their first token."""
    preemptions: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    """Per request: times it was preempted."""


def replay(trace: Trace, replicas: Sequence[ReplicaSpec], config: EngineConfig = EngineConfig(),
           failure: Outage | Sequence[Outage] | None = None) -> ReplayResult:
    """Replay ``trace`` on ``replicas``, with one failure, several (in time order) or none
    (see the module docstring for the rules)."""
    return _Engine(trace, replicas, config, as_outages(failure)).run()


@dataclass(frozen=True)
class LatencyPercentiles:
    """P50/P95/P99 of one latency over completed requests [ms] (NaN when none)."""

    p50: float
    p95: float
    p99: float

    def as_dict(self) -> dict[str, float | None]:
        """JSON form, NaN as null."""
        return {k: (None if math.isnan(v) else v)
                for k, v in (("p50", self.p50), ("p95", self.p95), ("p99", self.p99))}


@dataclass(frozen=True)
class ReplaySummary:
    """Figures of a set of requests of a replay."""

    requests: int
    completed: int
    rejected: int
    failed: int
    rejected_too_long: int
    """Of :attr:`rejected`: longer than the model's context or every replica's KV cache."""
    preempted: int
    """Requests preempted at least once."""
    preemptions: int
    """Preemptions, all told (a request may be preempted more than once)."""
    ttft_ms: LatencyPercentiles
    tpot_ms: LatencyPercentiles
    e2e_ms: LatencyPercentiles
    slo_attainment: float | None
    """Share of the requests :func:`judged` completed within both the TTFT and the TPOT SLO,
    and the end-to-end one where it is given (requests left without an answer count as misses;
    those longer than the model's context and those cut off by a failure are left out, as a
    verdict's P95 leaves them out: :mod:`solver.replay.verdict`; a one-token output has no
    TPOT and meets it). ``None`` when none was judged."""
    per_minute_attainment: tuple[float | None, ...] = field(default=())
    rejected_over_context: int = 0
    """Of :attr:`rejected_too_long`: longer than the model's context (no fleet serves them)."""


def judged(status: npt.NDArray[np.int8]) -> npt.NDArray[np.bool_]:
    """The requests a P95 verdict and an SLO attainment are over: all but those longer than
    the model's context (no fleet of that model serves them) and those cut off by a failure
    (no fleet saves a stream on a lost replica), which are counted and named apart
    (docs/replay.md, "Requests no replica can serve: one rule")."""
    return (status != Status.rejected_over_context) & (status != Status.failed)


def summarize(result: ReplayResult, ttft_slo_ms: float, tpot_slo_ms: float,
              since_s: float = 0.0, until_s: float = math.inf,
              e2e_slo_ms: float | None = None) -> ReplaySummary:
    """Summarize requests arriving in [since_s, until_s); ``e2e_slo_ms``: the workload's
    ``slo.e2e_p95_ms``, which a request within the SLOs meets too (``None``: none stated)."""
    mask = (result.arrival_s >= since_s) & (result.arrival_s < until_s)
    status = result.status[mask]
    done = status == Status.completed
    ttft = result.ttft_ms[mask]
    tpot = result.tpot_ms[mask]
    e2e = result.e2e_ms[mask]
    ok = done & (ttft <= ttft_slo_ms) & (np.isnan(tpot) | (tpot <= tpot_slo_ms))
    if e2e_slo_ms is not None:
        ok &= e2e <= e2e_slo_ms
    n = int(mask.sum())
    counted = judged(status)
    minute = (result.arrival_s[mask] // SECONDS_PER_MINUTE).astype(np.int64)
    per_minute: tuple[float | None, ...] = ()
    if n:
        first, last = int(minute.min()), int(minute.max())
        counts = np.bincount(minute - first, weights=counted, minlength=last - first + 1)
        hits = np.bincount(minute - first, weights=ok, minlength=last - first + 1)
        per_minute = tuple(None if c == 0 else float(h / c) for h, c in zip(hits, counts,
                                                                             strict=True))
    preemptions = (result.preemptions[mask] if result.preemptions.size
                   else np.zeros(n, dtype=np.int64))
    return ReplaySummary(
        requests=n,
        completed=int(done.sum()),
        rejected=int(((status == Status.rejected_too_long)
                      | (status == Status.rejected_over_context)
                      | (status == Status.rejected_no_replica)).sum()),
        failed=int((status == Status.failed).sum()),
        rejected_too_long=int(((status == Status.rejected_too_long)
                               | (status == Status.rejected_over_context)).sum()),
        rejected_over_context=int((status == Status.rejected_over_context).sum()),
        preempted=int((preemptions > 0).sum()),
        preemptions=int(preemptions.sum()),
        ttft_ms=_percentiles(ttft[done]),
        tpot_ms=_percentiles(tpot[done & ~np.isnan(tpot)]),
        e2e_ms=_percentiles(e2e[done]),
        slo_attainment=float(ok[counted].mean()) if counted.any() else None,
        per_minute_attainment=per_minute,
    )


def _percentiles(values: npt.NDArray[np.float64]) -> LatencyPercentiles:
    if values.size == 0:
        return LatencyPercentiles(math.nan, math.nan, math.nan)
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return LatencyPercentiles(float(p50), float(p95), float(p99))


# --- the engine ----------------------------------------------------------------------------------

_IDLE, _MIXED, _DECODE = 0, 1, 2


class _Replica:
    """Mutable state of one replica during a replay."""

    __slots__ = (
        "alive",
        "alloc_pre",
        "cap",
        "chunk",
        "dec_heap",
        "index",
        "iters",
        "k_dec",
        "k_pre",
        "perf",
        "prefill_q",
        "seg_end",
        "seg_kind",
        "seg_s",
        "seg_start",
        "seg_steps",
        "seg_t0",
        "spec",
        "stall_ms",
        "swap_ms_per_token",
        "version",
        "wait_q",
        "zone",
    )

    def __init__(self, index: int, spec: ReplicaSpec, swap_gb_per_s: float) -> None:
        self.index = index
        self.zone = spec.zone
        self.spec = spec
        self.perf = spec.perf
        self.cap = int(spec.perf.kv_capacity_tokens)
        self.alive = True
        self.version = 0
        self.iters = 0  # iterations run; every iteration adds a token to each decoder
        self.k_dec = 0  # KV tokens of decoding requests [tokens]
        self.k_pre = 0  # KV tokens of prompts in prefill (cached + prefilled so far) [tokens]
        self.alloc_pre = 0  # KV allocated to prompts in prefill: their whole length [tokens]
        self.dec_heap: list[tuple[int, int]] = []  # (iteration it finishes at, request)
        # [request, tokens left, tokens in KV, prompt length]
        self.prefill_q: deque[list[int]] = deque()
        self.stall_ms = 0.0  # swap transfers the next iteration waits for [ms]
        kv_bytes = float(getattr(spec.perf, "kv_bytes_per_token_per_gpu", 0.0))
        self.swap_ms_per_token = kv_bytes / (swap_gb_per_s * 1e6)  # [ms/token]
        self.wait_q: deque[int] = deque()  # requests waiting for KV room
        self.seg_kind = _IDLE
        self.seg_start = 0.0  # [ms]
        self.seg_end = 0.0  # [ms]
        self.seg_steps = 0
        self.seg_t0 = 0.0  # first step of a decode run [ms]
        self.seg_s = 0.0  # growth of the step time per step in a decode run [ms]
        self.chunk: list[tuple[list[int], int]] = []  # prompt chunks of a mixed iteration


class _Engine:
    def __init__(self, trace: Trace, replicas: Sequence[ReplicaSpec], config: EngineConfig,
                 failures: list[Outage]) -> None:
        self.arrival_ms: list[float] = (trace.arrival_s * MS_PER_S).tolist()
        self.inputs: list[int] = trace.input_tokens.tolist()
        self.outputs: list[int] = trace.output_tokens.tolist()
        n = len(self.arrival_ms)
        self.first_ms: list[float] = [math.nan] * n
        self.finish_ms: list[float] = [math.nan] * n
        self.status: list[int] = [Status.completed] * n
        self.gen: list[int] = [0] * n  # tokens generated before a preemption
        self.swapped: list[bool] = [False] * n  # preempted with its KV on the host
        self.preemptions: list[int] = [0] * n
        self.preempt = config.preempt
        self.max_context = config.max_context_tokens
        self.reps = [_Replica(i, spec, config.swap_gb_per_s) for i, spec in enumerate(replicas)]
        self.budget = config.max_batched_tokens
        self.max_seqs = config.max_seqs
        self.hit = config.prefix_cache_hit_rate
        self.failures = deque(failures)
        self.heap: list[tuple[float, int, int]] = []
        self.queued = 0  # routed, no first token yet (all replicas)
        self.requeued = 0
        self.trace = trace
        self.loads = [0] * len(self.reps)  # requests routed to each replica and not finished
        self.weights = [spec.weight for spec in replicas]  # routing weight of each replica
        # configuration of each replica: the first replica (in order) with an equal perf model
        perfs: list[StepModel] = []
        self.config_of: list[int] = []
        for spec in replicas:
            c = next((k for k, p in enumerate(perfs) if p == spec.perf), len(perfs))
            if c == len(perfs):
                perfs.append(spec.perf)
            self.config_of.append(c)
        self.n_configs = len(perfs)
        self.members: list[list[int]] = []  # live replicas of each configuration, in order
        self.config_weight: list[float] = []  # their summed weights: live capacity [req/s]
        self.config_cap: list[int] = []  # KV capacity of a replica of each configuration
        self.live_configs: list[int] = []  # configurations with a live replica, in order
        self.swrr: list[float] = []  # smooth weighted round-robin counters [req/s]
        self.alive: list[int] = []
        self.min_cap = self.max_cap = -1
        self._set_alive()

    # -- main loop --

    def run(self) -> ReplayResult:
        arrival_ms = self.arrival_ms
        heap = self.heap
        reps = self.reps
        n = len(arrival_ms)
        minutes = int(arrival_ms[-1] // (SECONDS_PER_MINUTE * MS_PER_S)) + 1 if n else 0
        queue_max = [0] * minutes
        kv_use = [math.nan] * minutes
        failures = self.failures
        fail_ms = failures[0].at_s * MS_PER_S if failures else math.inf
        minute_ms = SECONDS_PER_MINUTE * MS_PER_S
        next_sample_ms = 0.0
        for i in range(n):
            t = arrival_ms[i]
            while t >= fail_ms:
                self._advance(fail_ms + FAILURE_TIE_MS)
                self._fail(fail_ms, failures.popleft())
                fail_ms = failures[0].at_s * MS_PER_S if failures else math.inf
            while heap and heap[0][0] <= t:
                _, r, ver = heapq.heappop(heap)
                rep = reps[r]
                if ver == rep.version:
                    self._end_segment(rep)
            if t >= next_sample_ms:
                m = int(t // minute_ms)
                share = self._kv_share(t)
                if not share <= kv_use[m]:  # the larger, NaN-aware
                    kv_use[m] = share
                next_sample_ms = (t // KV_SAMPLE_MS + 1) * KV_SAMPLE_MS
            self._route(i, t)
            m = int(t // minute_ms)
            if self.queued > queue_max[m]:
                queue_max[m] = self.queued
        while failures:
            fail_ms = failures[0].at_s * MS_PER_S
            self._advance(fail_ms + FAILURE_TIE_MS)
            self._fail(fail_ms, failures.popleft())
        self._advance(math.inf)
        return self._result(queue_max, kv_use)

    def _advance(self, until_ms: float) -> None:
        heap, reps = self.heap, self.reps
        while heap and heap[0][0] <= until_ms:
            _, r, ver = heapq.heappop(heap)
            rep = reps[r]
            if ver == rep.version:
                self._end_segment(rep)

    def _kv_share(self, t: float) -> float:
        """KV tokens in use ÷ KV capacity over live replicas at ``t`` (decode runs included up
        to their last step finished by ``t``)."""
        used = cap = 0
        for rep in self.reps:
            if not rep.alive:
                continue
            used += rep.k_dec + rep.k_pre + self._run_kv(rep, t)
            cap += rep.cap
        return used / cap if cap else math.nan

    def _run_kv(self, rep: _Replica, t: float) -> int:
        """KV tokens the decode run in progress on ``rep`` has written by ``t`` (its steps
        finished by then; ``k_dec`` counts them only when the run ends) [tokens]."""
        if rep.seg_kind != _DECODE or t <= rep.seg_start:
            return 0
        j = self._steps_until(rep, t - rep.seg_start)
        if rep.seg_start + j * rep.seg_t0 + rep.seg_s * j * (j - 1) / 2 > t:
            j -= 1  # the step in progress has not written its tokens yet
        return len(rep.dec_heap) * min(j, rep.seg_steps)

    # -- routing and admission --

    def _route(self, i: int, t: float) -> None:
        need = self.inputs[i] + self.outputs[i]
        loads, alive, weights = self.loads, self.alive, self.weights

        def load_after(j: int) -> float:
            return (loads[j] + 1) / weights[j]

        if self.max_context is not None and need > self.max_context:
            self.status[i] = Status.rejected_over_context
            return
        if need > self.max_cap:
            self.status[i] = Status.rejected_too_long if alive else Status.rejected_no_replica
            return
        if self.n_configs == 1:  # one configuration: its live replicas are ``alive``
            members = alive
        else:
            configs = self.live_configs
            if need > self.min_cap:
                configs = [c for c in configs if self.config_cap[c] >= need]
            members = self.members[self._pick_config(configs)]
        r = min(members, key=load_after)  # first of the least loaded per unit of weight
        best = self.reps[r]
        loads[r] += 1
        self.queued += 1
        if not best.wait_q and self._admit(best, i, self._run_kv(best, t)):
            self._on_admitted(best, t)
        else:
            best.wait_q.append(i)

    def _pick_config(self, configs: list[int]) -> int:
        """Smooth weighted round-robin (nginx's): each candidate configuration's counter gains its
        live capacity, the largest counter wins (the first on ties) and gives back the candidates'
        total, so over any run of arrivals each gets its share of capacity, evenly interleaved."""
        cur, w = self.swrr, self.config_weight
        best, total = configs[0], 0.0
        for c in configs:
            cur[c] += w[c]
            total += w[c]
            if cur[c] > cur[best]:
                best = c
        cur[best] -= total
        return best

    def _set_alive(self) -> None:
        """Indices of live replicas and the smallest and largest KV capacity among them; each
        configuration's live replicas and capacity, and the round-robin counters restarted."""
        self.alive = [r.index for r in self.reps if r.alive]
        caps = [self.reps[j].cap for j in self.alive]
        self.min_cap = min(caps, default=-1)
        self.max_cap = max(caps, default=-1)
        self.members = [[] for _ in range(self.n_configs)]
        for j in self.alive:
            self.members[self.config_of[j]].append(j)
        self.config_weight = [sum(self.weights[j] for j in m) for m in self.members]
        self.config_cap = [self.reps[m[0]].cap if m else -1 for m in self.members]
        self.live_configs = [c for c in range(self.n_configs) if self.members[c]]
        self.swrr = [0.0] * self.n_configs

    def _admit(self, rep: _Replica, i: int, run_kv: int = 0) -> bool:
        """Admit request ``i`` if its prompt's KV fits beside the KV in use and the next token of
        every decoding request, and a sequence slot is free; ``run_kv``: the KV a decode run in
        progress has written so far (an arrival mid-run sees it; a run's end has counted it).

        A request preempted by recomputation prefills its prompt and the tokens it had
        generated; one swapped out resumes decoding once its KV is copied back.
        """
        n_dec = len(rep.dec_heap)
        if n_dec + len(rep.prefill_q) >= self.max_seqs:
            return False
        n_in, gen = self.inputs[i], self.gen[i]
        if self.swapped[i]:  # its KV comes back from the host: decode resumes
            context = n_in + gen - 1  # [tokens]
            if rep.k_dec + run_kv + rep.alloc_pre + context + n_dec + 1 > rep.cap:
                return False
            self.swapped[i] = False
            rep.k_dec += context
            rep.stall_ms += context * rep.swap_ms_per_token
            heapq.heappush(rep.dec_heap, (rep.iters + self.outputs[i] - gen, i))
            return True
        prompt = n_in + gen  # [tokens]
        if rep.k_dec + run_kv + rep.alloc_pre + prompt + n_dec > rep.cap:
            return False
        cached = min(int(n_in * self.hit), prompt - 1)  # the last prompt token is always computed
        rep.prefill_q.append([i, prompt - cached, cached, prompt])
        rep.k_pre += cached
        rep.alloc_pre += prompt
        return True

    def _on_admitted(self, rep: _Replica, t: float) -> None:
        """A new prompt joins at the next iteration boundary at or after ``t``."""
        if rep.seg_kind == _IDLE:
            self._plan(rep, t)
        elif rep.seg_kind == _DECODE:
            j = self._steps_until(rep, t - rep.seg_start)
            if j < rep.seg_steps:
                rep.version += 1
                if j == 0:
                    self._plan(rep, rep.seg_start)
                    return
                rep.seg_steps = j
                rep.seg_end = rep.seg_start + j * rep.seg_t0 + rep.seg_s * j * (j - 1) / 2
                heapq.heappush(self.heap, (rep.seg_end, rep.index, rep.version))
        elif t <= rep.seg_start:  # a mixed iteration starting now: include the new prompt
            rep.version += 1
            self._plan(rep, rep.seg_start)
        # else a mixed iteration is in progress: the prompt is picked up when it ends

    @staticmethod
    def _steps_until(rep: _Replica, tau: float) -> int:
        """Fewest steps of the decode run whose total time reaches ``tau`` [ms]."""
        if tau <= 0:
            return 0
        t0, s = rep.seg_t0, rep.seg_s
        if s == 0.0:
            j = math.ceil(tau / t0)
        else:
            b = t0 - s / 2
            disc = b * b + 2 * s * tau
            if disc < 0:
                return rep.seg_steps
            j = max(1, math.ceil((math.sqrt(disc) - b) / s - 1e-9))
        while j * t0 + s * j * (j - 1) / 2 < tau:
            j += 1
        while j > 1 and (j - 1) * t0 + s * (j - 1) * (j - 2) / 2 >= tau:
            j -= 1
        return j

    # -- iterations --

    def _plan(self, rep: _Replica, t: float) -> None:
        """Start the next segment of ``rep`` at ``t``: a mixed iteration or a decode run.

        First, while the decoding requests' next tokens do not fit the KV cache, the newest
        running request is preempted; a swap's transfer stalls the replica before it starts.
        """
        while rep.dec_heap and rep.k_dec + rep.alloc_pre + len(rep.dec_heap) > rep.cap:
            self._preempt_newest(rep)
        if rep.stall_ms:
            t += rep.stall_ms
            rep.stall_ms = 0.0
        n_dec = len(rep.dec_heap)
        rep.seg_start = t
        if rep.prefill_q:
            room = self.budget - n_dec
            chunk: list[tuple[list[int], int]] = []
            tokens = ctx = 0
            for entry in rep.prefill_q:
                take = min(entry[1], room - tokens)
                chunk.append((entry, take))
                tokens += take
                ctx += entry[2]
                if tokens >= room:
                    break
            rep.chunk = chunk
            rep.seg_kind = _MIXED
            rep.seg_end = t + rep.perf.step_time_ms(tokens, n_dec, rep.k_dec, len(chunk), ctx)
        elif n_dec:
            room = (rep.cap - rep.k_dec - rep.alloc_pre) // n_dec  # steps the KV cache holds
            steps = min(rep.dec_heap[0][0] - rep.iters, room)
            t0 = rep.perf.step_time_ms(0, n_dec, rep.k_dec)
            s = 0.0
            if steps > 1:
                t_last = rep.perf.step_time_ms(0, n_dec, rep.k_dec + n_dec * (steps - 1))
                s = (t_last - t0) / (steps - 1)
            rep.seg_kind = _DECODE
            rep.seg_steps = steps
            rep.seg_t0 = t0
            rep.seg_s = s
            rep.seg_end = t + steps * t0 + s * steps * (steps - 1) / 2
        else:
            rep.seg_kind = _IDLE
            return
        rep.version += 1
        heapq.heappush(self.heap, (rep.seg_end, rep.index, rep.version))

    def _end_segment(self, rep: _Replica) -> None:
        t = rep.seg_end
        n_dec = len(rep.dec_heap)
        if rep.seg_kind == _MIXED:
            rep.iters += 1
            rep.k_dec += n_dec
            outputs, first_ms = self.outputs, self.first_ms
            for entry, take in rep.chunk:
                entry[1] -= take
                entry[2] += take
                rep.k_pre += take
                if entry[1] == 0:
                    rep.prefill_q.popleft()
                    i = entry[0]
                    if math.isnan(first_ms[i]):  # not a prompt recomputed after a preemption
                        first_ms[i] = t
                        self.queued -= 1
                    rep.k_pre -= entry[2]
                    rep.alloc_pre -= entry[3]
                    rep.k_dec += entry[2]
                    heapq.heappush(rep.dec_heap, (rep.iters + outputs[i] - self.gen[i] - 1, i))
            rep.chunk = []
        else:
            steps = rep.seg_steps
            rep.iters += steps
            rep.k_dec += n_dec * steps
        self._complete(rep, t)
        self._plan(rep, t)

    def _complete(self, rep: _Replica, t: float) -> None:
        dec_heap = rep.dec_heap
        freed = False
        while dec_heap and dec_heap[0][0] <= rep.iters:
            _, i = heapq.heappop(dec_heap)
            self.finish_ms[i] = t
            rep.k_dec -= self.inputs[i] + self.outputs[i] - 1
            self.loads[rep.index] -= 1
            freed = True
        if freed:
            wait_q = rep.wait_q
            while wait_q and self._admit(rep, wait_q[0]):
                wait_q.popleft()

    def _preempt_newest(self, rep: _Replica) -> None:
        """Preempt the running request of ``rep`` that arrived last (prefilling or decoding):
        its KV is freed (recompute) or moved to the host (swap), and it waits at the front."""
        newest_dec = max((i for _, i in rep.dec_heap), default=-1)
        newest_pre = max((e[0] for e in rep.prefill_q), default=-1)
        if newest_pre > newest_dec:
            entry = next(e for e in rep.prefill_q if e[0] == newest_pre)
            rep.prefill_q.remove(entry)
            rep.k_pre -= entry[2]
            rep.alloc_pre -= entry[3]
            i = newest_pre
        else:
            i = newest_dec
            finish = next(f for f, j in rep.dec_heap if j == i)
            rep.dec_heap.remove((finish, i))
            heapq.heapify(rep.dec_heap)
            gen = self.outputs[i] - (finish - rep.iters)  # tokens it has generated
            context = self.inputs[i] + gen - 1  # [tokens]
            rep.k_dec -= context
            self.gen[i] = gen
            if self.preempt is PreemptMode.swap:
                self.swapped[i] = True
                rep.stall_ms += context * rep.swap_ms_per_token
        self.preemptions[i] += 1
        rep.wait_q.appendleft(i)

    # -- failure --

    def _fail(self, t: float, failure: Outage) -> None:
        orphans: list[int] = []
        for rep in self.reps:
            if not rep.alive or not failure.hits(rep.spec):
                continue
            rep.alive = False
            rep.version += 1
            streaming = [i for _, i in rep.dec_heap]
            for i in [entry[0] for entry in rep.prefill_q] + list(rep.wait_q):
                # a request preempted after its first token was streaming too
                (streaming if self.gen[i] else orphans).append(i)
            for i in streaming:
                self.status[i] = Status.failed
                self.first_ms[i] = math.nan
            rep.dec_heap.clear()
            rep.prefill_q.clear()
            rep.wait_q.clear()
            rep.chunk = []
            rep.seg_kind = _IDLE
            rep.stall_ms = 0.0
            rep.k_dec = rep.k_pre = rep.alloc_pre = self.loads[rep.index] = 0
        self._set_alive()
        self.queued -= len(orphans)
        self.requeued += len(orphans)
        for i in sorted(orphans):
            self._route(i, t)

    def _result(self, queue_max: list[int], kv_use: list[float]) -> ReplayResult:
        arrival = np.asarray(self.arrival_ms)
        first = np.asarray(self.first_ms)
        finish = np.asarray(self.finish_ms)
        status = np.asarray(self.status, dtype=np.int8)
        done = status == Status.completed
        first[~done] = np.nan
        finish[~done] = np.nan
        outputs = self.trace.output_tokens
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(outputs > 1, (finish - first) / (outputs - 1), np.nan)
        return ReplayResult(
            arrival_s=self.trace.arrival_s,
            output_tokens=outputs,
            status=status,
            ttft_ms=first - arrival,
            e2e_ms=finish - arrival,
            tpot_ms=tpot,
            queue_depth_max=np.asarray(queue_max, dtype=np.int64),
            kv_use=np.asarray(kv_use, dtype=np.float64),
            requeued=self.requeued,
            preemptions=np.asarray(self.preemptions, dtype=np.int64),
        )


# --- a fleet's replicas ------------------------------------------------------------------------


def peak_slice(scenario: Scenario, workload: Workload) -> str:
    """Name of the time block holding the workload's busiest hour (the first, on ties)."""
    hourly = workload.hourly_demand_rps()
    peak_hour = hourly.index(max(hourly))
    return next(b.name for b in scenario.policy.time_blocks if peak_hour in b.hours)


def fleet_replicas(fleet: Fleet, scenario: Scenario, workload: Workload, slice_name: str
                   ) -> list[ReplicaSpec]:
    """Replicas of ``workload`` running in ``slice_name``: reserved ones (every slice) plus the
    elastic ones of that slice, each with its performance model (solver.capacity.perf.replica_perf).

    Raises
    ------
    ValueError
        When a replica's configuration cannot serve (its reason).
    """
    return [spec for _, specs in fleet_replica_groups(fleet, scenario, workload, slice_name)
            for spec in specs]


def fleet_replica_groups(fleet: Fleet, scenario: Scenario, workload: Workload, slice_name: str
                         ) -> list[tuple[FleetReplicaGroup, list[ReplicaSpec]]]:
    """:func:`fleet_replicas` by the fleet's replica group they come from, in fleet order.

    Each replica is named ``<zone>/<gpu>/tp<tp>/<purchase>#<k>``; a group repeating another's
    name (same pool and TP in two rows) continues its numbering, so names are unique.
    """
    out: list[tuple[FleetReplicaGroup, list[ReplicaSpec]]] = []
    taken: dict[str, int] = {}
    for g in fleet.replicas:
        if g.workload != workload.name or not (g.slice is None or g.slice == slice_name):
            continue
        perf = replica_perf(scenario, workload.model, g.gpu, g.precision, g.tp,
                            workload.runtime)
        stem = f"{g.zone}/{g.gpu}/tp{g.tp}/{g.purchase}"
        first = taken.get(stem, 0)
        taken[stem] = first + g.replicas
        out.append((g, [ReplicaSpec(name=f"{stem}#{k}", zone=g.zone, perf=perf, weight=g.slo_rps)
                        for k in range(first, first + g.replicas)]))
    return out
