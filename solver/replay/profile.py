"""Workload profile of a request trace: rates, length percentiles, prefix reuse, daily shape.

Pure functions over a :class:`~solver.replay.traces.Trace`. Definitions (docs/replay.md):

- ``duration_s``: first to last arrival [s]; ``mean_rps`` = requests ÷ duration_s.
- Per-minute rate: arrivals counted in whole minutes from the first arrival, ÷ 60 [1/s]. A last
  partial minute is left out (its count would understate the rate); a trace shorter than a
  minute has its mean rate as peak and P95 minute. Empty minutes count (they are part of the
  distribution). ``peak_minute_rps`` is the largest, ``p95_minute_rps`` the 95th percentile.
- Length percentiles: numpy's linear interpolation; the means are plain means [tokens].
- ``prefix_reuse``: share of all 512-token prefix blocks (Mooncake ``hash_ids``, in arrival
  order) whose id was seen earlier in the trace = 1 − distinct ids ÷ blocks; ``None`` when the
  trace carries no block ids. It stands in for the workload's ``prefix_cache_hit_rate`` (an
  upper bound: an unbounded cache that never evicts).
- ``hourly_shape``: only for traces spanning at least a day: arrivals per hour of the busiest
  day (wall-clock hours where the trace has datetimes, else hours from its start) ÷ the busiest
  hour's count, so the peak hour is 1.0 as the schema requires.
- Burstiness (:class:`Burstiness`): for windows of 1, 10 and 60 s (whole windows from the first
  arrival), the busiest window's rate ÷ the mean rate of its hour (whole hours from the first
  arrival; the hour's arrivals ÷ the part of it the trace covers); and the squared coefficient
  of variation (variance ÷ mean²) of the times between consecutive arrivals — 1 for a Poisson
  stream, whatever its rate; and the **followers** of an arrival: for windows of ``u`` mean
  gaps at the busiest minute's rate (``u ÷ peak_minute_rps`` s, ``u`` in
  :data:`FOLLOWER_WINDOWS_GAPS`), the mean and variance over arrivals of the number of arrivals
  following one within the window (arrivals whose window ends after the last arrival are left
  out) — ``u`` for a Poisson stream at the peak rate, more when requests come in bursts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.workload import HOURS_PER_DAY, SECONDS_PER_HOUR
from solver.replay.traces import IntArray, Trace

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_DAY = 86400.0
#: Whole minutes a trace needs before its busiest minute is offered as the planning peak: the
#: busiest of fewer minutes is the largest of a handful of samples (docs/replay.md).
MIN_PEAK_MINUTES = 10
#: Share of arrivals with the previous arrival's very timestamp from which a trace is taken to
#: record its arrivals in batches (Mooncake's conversation trace: 90 % of gaps are 0 ms, the
#: rest about 3 s; the Azure traces and Mooncake's synthetic one: at most 0.3 %).
BATCHED_SHARE = 0.5


@dataclass(frozen=True)
class LengthStats:
    """Distribution of one direction's token lengths [tokens]."""

    mean: float
    p50: float
    p95: float
    p99: float
    p5: float | None = None
    """Where the source has it (a trace; not a Prometheus histogram)."""

    def as_dict(self) -> dict[str, float]:
        """JSON form: ``{mean, p50, p95, p99, p5}`` (``p5`` where known)."""
        lower = {} if self.p5 is None else {"p5": self.p5}
        return {"mean": self.mean, "p50": self.p50, "p95": self.p95, "p99": self.p99, **lower}


#: Windows the burstiness is measured over [s]: what a TTFT SLO sees (1 s), a queue drains
#: over (10 s), and the planning peak (60 s).
BURST_WINDOWS_S = (1, 10, 60)
#: Windows the followers of an arrival are counted over, in mean gaps at the busiest minute's
#: rate [1]: from a burst's own instant (0.01) to a long decode life (300).
FOLLOWER_WINDOWS_GAPS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
#: Arrivals whose window fits in the trace needed to report a window's followers [requests].
MIN_FOLLOWER_SAMPLES = 100


@dataclass(frozen=True)
class Burstiness:
    """How far a trace's arrivals are from a Poisson stream (None: too short to tell)."""

    peak_ratio: dict[int, float | None]
    """Per window [s]: the busiest window's rate ÷ the mean rate of its hour [1]."""
    interarrival_scv: float | None
    """Variance ÷ mean² of the times between arrivals [1]."""
    followers: tuple[tuple[float, float, float], ...] = ()
    """Per window: (window in mean gaps at the peak rate, mean followers, their variance);
    empty when the trace is too short to tell."""

    def as_dict(self) -> dict[str, Any]:
        """JSON form: ``interarrival_scv``, ``peak_<w>s_ratio`` and ``followers``."""
        out: dict[str, Any] = {"interarrival_scv": self.interarrival_scv}
        out |= {f"peak_{w}s_ratio": r for w, r in self.peak_ratio.items()}
        out["followers"] = [{"window_gaps": u, "followers_mean": m, "followers_variance": v}
                            for u, m, v in self.followers] or None
        return out


@dataclass(frozen=True)
class TraceProfile:
    """What a trace says about its workload."""

    source: str
    requests: int
    duration_s: float
    mean_rps: float
    peak_minute_rps: float
    p95_minute_rps: float
    input_tokens: LengthStats
    output_tokens: LengthStats
    prefix_reuse: float | None
    hourly_shape: tuple[float, ...] | None
    burstiness: Burstiness | None = None
    """``None`` where the source has no arrival times (a metrics export)."""
    tied_share: float | None = None
    """Share of the gaps between consecutive arrivals that are zero: arrivals stamped with the
    previous one's time [1] (``None`` without arrival times)."""
    batch_gap_s: float | None = None
    """Median of the gaps that are not zero [s] (``None`` where there is none)."""

    def batched_arrivals(self, what: str = "trace") -> str | None:
        """That the trace records its arrivals in batches, in words (else ``None``): at least
        :data:`BATCHED_SHARE` of its arrivals share the previous arrival's timestamp. The one
        test and wording of it, which ``profile``'s warning (:meth:`batching_warning`) and
        ``validate``'s and ``plan``'s for a linked trace
        (:func:`solver.replay.trace_burst.batched_trace_warnings`) begin with."""
        if self.tied_share is None or self.tied_share < BATCHED_SHARE:
            return None
        apart = ("" if self.batch_gap_s is None
                 else f", the batches {self.batch_gap_s:,.3g} s apart at the median")
        return (f"{self.tied_share:.0%} of the {what}'s arrivals have the previous arrival's "
                f"very timestamp (it records arrivals in batches{apart})")

    def batching_warning(self, what: str = "trace") -> str | None:
        """Why the burst figures measure the trace's recording, not its traffic (else
        ``None``): arrivals come in recorded batches (:meth:`batched_arrivals`), so every burst
        figure — the busiest second, the inter-arrival SCV, the followers within a batch's
        span — is the batching."""
        batched = self.batched_arrivals(what)
        if batched is None:
            return None
        return (f"{batched}: its burst figures "
                "(busiest 1 s, inter-arrival SCV, followers) measure that batching, not "
                "necessarily the traffic, and the capacity model would size replicas for it; "
                "leave arrival.burst out of the block (Poisson) or take it from a trace with "
                "finer timestamps")

    @property
    def whole_minutes(self) -> int:
        """Whole minutes from the first arrival the per-minute rates are counted over."""
        return int(self.duration_s // SECONDS_PER_MINUTE)

    @property
    def suggested_peak_rps(self) -> float:
        """The workload block's ``arrival.peak_rps``: the busiest minute, never below the mean
        rate (a short trace's last partial minute, left out of the minutes, can hold its
        busiest arrivals) [1/s]."""
        return max(self.peak_minute_rps, self.mean_rps)

    def peak_warning(self, what: str = "trace") -> str | None:
        """Why ``suggested_peak_rps`` is no busiest-minute figure to plan on (else ``None``):
        fewer than :data:`MIN_PEAK_MINUTES` whole minutes, or a busiest minute below the mean."""
        minutes = self.whole_minutes
        below = self.peak_minute_rps < self.mean_rps
        if minutes >= MIN_PEAK_MINUTES and not below:
            return None
        span = (f"the {what} spans {self.duration_s / SECONDS_PER_MINUTE:,.1f} min "
                f"({minutes} whole minute{'' if minutes == 1 else 's'})")
        if minutes == 0:
            what_it_is = "the suggested arrival.peak_rps is its mean rate"
        elif below:
            what_it_is = (f"its busiest whole minute ({self.peak_minute_rps:,.2f} req/s) is "
                          f"below its mean rate ({self.mean_rps:,.2f}), so the suggested "
                          f"arrival.peak_rps is the mean rate")
        else:
            what_it_is = (f"the suggested arrival.peak_rps is the busiest of "
                          f"{minutes} minute{'' if minutes == 1 else 's'}")
        return (f"{span}: too short for a busiest-minute rate (at least {MIN_PEAK_MINUTES} "
                f"whole minutes); {what_it_is}, a floor rather than a peak: set "
                f"arrival.peak_rps from the busiest minute of a longer {what} or of your "
                f"traffic")

    def as_json(self) -> dict[str, Any]:
        """The ``profile --json`` object (keys fixed by the CLI contract; later keys added at
        the end)."""
        warnings = [w for w in (self.peak_warning(), self.batching_warning()) if w is not None]
        return {
            "requests": self.requests,
            "duration_s": self.duration_s,
            "mean_rps": self.mean_rps,
            "peak_minute_rps": self.peak_minute_rps,
            "p95_minute_rps": self.p95_minute_rps,
            "input_tokens": self.input_tokens.as_dict(),
            "output_tokens": self.output_tokens.as_dict(),
            "prefix_reuse": self.prefix_reuse,
            "burstiness": None if self.burstiness is None else self.burstiness.as_dict(),
            "peak_rps": self.suggested_peak_rps,
            "warnings": warnings,
        }


def profile_trace(trace: Trace) -> TraceProfile:
    """Profile a trace (see the module docstring for every definition)."""
    n = len(trace)
    duration_s = trace.duration_s
    mean_rps = n / duration_s if duration_s > 0 else float(n)
    per_minute_rps = minute_rates_rps(trace)
    if per_minute_rps.size:
        peak, p95 = float(per_minute_rps.max()), float(np.percentile(per_minute_rps, 95))
    else:
        peak = p95 = mean_rps
    return TraceProfile(
        source=trace.source,
        requests=n,
        duration_s=duration_s,
        mean_rps=mean_rps,
        peak_minute_rps=peak,
        p95_minute_rps=p95,
        input_tokens=length_stats(trace.input_tokens),
        output_tokens=length_stats(trace.output_tokens),
        prefix_reuse=prefix_reuse(trace.prefix_block_ids),
        hourly_shape=hourly_shape(trace),
        burstiness=burstiness(trace, peak),
        **_ties(trace.arrival_s),
    )


def _ties(arrival_s: np.ndarray) -> dict[str, float | None]:
    """``tied_share`` and ``batch_gap_s`` of arrival times (seconds, in order)."""
    gaps = np.diff(arrival_s)
    if not gaps.size:
        return {"tied_share": None, "batch_gap_s": None}
    apart = gaps[gaps > 0]
    return {"tied_share": float((gaps == 0).mean()),
            "batch_gap_s": float(np.median(apart)) if apart.size else None}


def burstiness(trace: Trace, peak_rps: float | None = None) -> Burstiness:
    """Busiest 1-, 10- and 60-s rates against the mean of their hour, the SCV of the times
    between arrivals, and the followers of an arrival at ``peak_rps`` (the busiest minute's
    rate; default the trace's) (module docstring)."""
    arrival_s = trace.arrival_s
    duration_s = trace.duration_s
    gaps = np.diff(arrival_s)
    scv = (float(gaps.var() / gaps.mean() ** 2)
           if gaps.size >= 2 and gaps.mean() > 0 else None)
    hour = (arrival_s // SECONDS_PER_HOUR).astype(np.int64)
    per_hour = np.bincount(hour)
    ratios: dict[int, float | None] = {}
    for window_s in BURST_WINDOWS_S:
        whole = int(duration_s // window_s)
        if whole == 0:
            ratios[window_s] = None
            continue
        index = (arrival_s // window_s).astype(np.int64)
        counts = np.bincount(index[index < whole], minlength=whole)
        busiest = int(counts.argmax())
        h = int(busiest * window_s // SECONDS_PER_HOUR)
        covered_s = min(SECONDS_PER_HOUR, duration_s - h * SECONDS_PER_HOUR)
        mean_rps = per_hour[h] / covered_s if covered_s > 0 else 0.0
        ratios[window_s] = (float(counts[busiest] / window_s / mean_rps) if mean_rps > 0
                            else None)
    if peak_rps is None:
        minutes = minute_rates_rps(trace)
        peak_rps = (float(minutes.max()) if minutes.size else
                    len(trace) / duration_s if duration_s > 0 else 0.0)
    return Burstiness(peak_ratio=ratios, interarrival_scv=scv,
                      followers=followers(arrival_s, peak_rps))


def followers(arrival_s: np.ndarray, peak_rps: float) -> tuple[tuple[float, float, float], ...]:
    """(window in mean gaps at ``peak_rps``, mean, variance) of the arrivals following an
    arrival within the window, for each of :data:`FOLLOWER_WINDOWS_GAPS` with at least
    :data:`MIN_FOLLOWER_SAMPLES` arrivals whose window ends by the last arrival."""
    if peak_rps <= 0 or arrival_s.size < 2:
        return ()
    after = np.arange(arrival_s.size)
    out = []
    for gaps in FOLLOWER_WINDOWS_GAPS:
        span_s = gaps / peak_rps
        inside = arrival_s + span_s <= arrival_s[-1]
        if inside.sum() < MIN_FOLLOWER_SAMPLES:
            break
        count = (np.searchsorted(arrival_s, arrival_s + span_s, side="right") - after - 1)[inside]
        out.append((gaps, float(count.mean()), float(count.var())))
    return tuple(out)


def minute_rates_rps(trace: Trace) -> np.ndarray:
    """Arrival rate of each whole minute from the first arrival [1/s]; empty if under a minute."""
    full_minutes = int(trace.duration_s // SECONDS_PER_MINUTE)
    if full_minutes == 0:
        return np.zeros(0)
    minute = (trace.arrival_s // SECONDS_PER_MINUTE).astype(np.int64)
    counts = np.bincount(minute[minute < full_minutes], minlength=full_minutes)
    return counts / SECONDS_PER_MINUTE


def length_stats(tokens: IntArray) -> LengthStats:
    """Mean and P5/P50/P95/P99 of token lengths [tokens]."""
    p5, p50, p95, p99 = np.percentile(tokens, [5, 50, 95, 99])
    return LengthStats(mean=float(tokens.mean()), p50=float(p50), p95=float(p95), p99=float(p99),
                       p5=float(p5))


def prefix_reuse(block_ids: IntArray | None) -> float | None:
    """Share of prefix blocks whose id appeared earlier [1]; ``None`` without block ids.

    The first occurrence of each id is new, every later one is a reuse, so the share is
    1 − distinct ÷ total, whatever the order.
    """
    if block_ids is None or block_ids.size == 0:
        return None
    return 1.0 - np.unique(block_ids).size / block_ids.size


def hourly_shape(trace: Trace) -> tuple[float, ...] | None:
    """Arrivals per hour of the busiest day ÷ the busiest hour's; ``None`` under a day."""
    if trace.duration_s < SECONDS_PER_DAY:
        return None
    origin_s = trace.start_epoch_s if trace.start_epoch_s is not None else 0.0
    absolute_s = trace.arrival_s + origin_s
    day = np.floor(absolute_s / SECONDS_PER_DAY).astype(np.int64)
    busiest = np.bincount(day - day.min()).argmax() + day.min()
    in_day = absolute_s[day == busiest]
    hour = np.floor((in_day % SECONDS_PER_DAY) / SECONDS_PER_HOUR).astype(np.int64)
    counts = np.bincount(hour, minlength=HOURS_PER_DAY)[:HOURS_PER_DAY]
    shares = counts / counts.max()
    return tuple(1.0 if s == 1.0 else round(float(s), 3) for s in shares)


def workload_fields(profile: TraceProfile) -> dict[str, Any]:
    """The fields of a ``Workload`` a trace determines, ready to dump as YAML.

    ``arrival.peak_rps`` is the peak minute, never below the mean rate
    (:attr:`TraceProfile.suggested_peak_rps`); ``arrival.burst`` the burstiness (where the
    trace has at least three arrivals apart in time); percentiles are rounded up to whole
    tokens (they must rise, and rounding up keeps that); ``prefix_cache_hit_rate`` is
    ``prefix_reuse`` where the trace has block ids (else omitted: the schema default 0 applies).
    """
    arrival: dict[str, Any] = {"peak_rps": round(profile.suggested_peak_rps, 3)}
    if profile.hourly_shape is not None:
        arrival["hourly_shape"] = list(profile.hourly_shape)
    if profile.burstiness is not None:
        burst: dict[str, Any] = {
            k: max(round(v, 3), 0.001) for k, v in profile.burstiness.as_dict().items()
            if isinstance(v, float) and v > 0}
        if "interarrival_scv" in burst:
            arrival["burst"] = burst
            if profile.burstiness.followers:
                burst["followers"] = [
                    {"window_gaps": u, "followers_mean": round(m, 3),
                     "followers_variance": round(v, 3)}
                    for u, m, v in profile.burstiness.followers]
    fields: dict[str, Any] = {"arrival": arrival}
    for key, stats in (("input_tokens", profile.input_tokens),
                       ("output_tokens", profile.output_tokens)):
        p50 = max(1, math.ceil(stats.p50))
        p95 = max(p50, math.ceil(stats.p95))
        p99 = max(p95, math.ceil(stats.p99))
        fields[key] = {"p50": p50, "p95": p95, "p99": p99, "mean": round(stats.mean, 1)}
        if stats.p5 is not None:  # rounded down, so that it stays at or below P50
            fields[key]["p5"] = min(max(1, math.floor(stats.p5)), p50)
    if profile.prefix_reuse is not None:
        fields["prefix_cache_hit_rate"] = min(round(profile.prefix_reuse, 3), 0.999)
    return fields


@dataclass(frozen=True)
class OverContext:
    """The requests of a trace longer than a model's context (input + output tokens): the
    replay rejects them, never truncates them (``solver.replay.engine.Status.
    rejected_over_context``), and no fleet of that model serves them."""

    model: str
    context_tokens: int
    requests: int
    """Requests over the context."""
    total: int
    """Requests of the trace."""
    longest_tokens: int
    """The longest request's input + output [tokens]."""

    @property
    def share(self) -> float:
        """Requests over the context ÷ the trace's [1]."""
        return self.requests / self.total if self.total else 0.0

    @property
    def share_text(self) -> str:
        """:attr:`share` as a percentage: one decimal from 1 %, two significant digits under
        it (10 of 3,993 is ``0.25%``, not ``0.3%``)."""
        return share_words(self.share)

    def warning(self, input_p99: int) -> str | None:
        """How many requests are over the context, what share, and that they will be
        rejected; ``None`` where none is."""
        if not self.requests:
            return None
        share = self.share_text
        below = (f"; the block's input P99 ({input_p99:,}) is under it, so a scenario with "
                 "it validates" if input_p99 <= self.context_tokens else "")
        return (f"{self.requests:,} of {self.total:,} requests ({share}) "
                f"{'is' if self.requests == 1 else 'are'} longer than "
                f"{self.model}'s context of {self.context_tokens:,} tokens (input + output; "
                f"the longest {self.longest_tokens:,}): they will be rejected, never "
                f"truncated — no fleet of this model serves them{below}; `simulate` counts "
                "them apart from the late")

    def replayed(self) -> str | None:
        """What a replay of the trace does with them (``simulate``'s warning, and ``validate``'s
        and ``plan``'s of a linked trace, in the same words: docs/replay.md, "Requests no
        replica can serve: one rule"); ``None`` where none is over."""
        if not self.requests:
            return None
        return (f"{self.requests:,} of {self.total:,} requests of the trace ({self.share:.1%}) "
                f"{'is' if self.requests == 1 else 'are'} longer than {self.model}'s context "
                f"of {self.context_tokens:,} tokens (input + output): the replay rejects them "
                "as too long, never truncated, and counts them apart, never as late — its "
                "verdicts, P95s and SLO attainment are over the rest; no fleet serves them, a "
                "longer-context model, or clients that cut their prompts, would")

    def as_dict(self) -> dict[str, Any]:
        """The ``profile --json`` form."""
        return {"model": self.model, "context_tokens": self.context_tokens,
                "requests": self.requests, "share": self.share,
                "longest_tokens": self.longest_tokens}


def over_context(trace: Trace, model: str, context_tokens: int) -> OverContext:
    """Count the trace's requests whose input + output exceeds ``context_tokens`` (the
    replay's test, ``solver.replay.engine``)."""
    need = trace.total_tokens  # [tokens]
    return OverContext(model=model, context_tokens=context_tokens,
                       requests=int((need > context_tokens).sum()), total=int(need.size),
                       longest_tokens=int(need.max()) if need.size else 0)


def share_words(share: float) -> str:
    """A share as a percentage: one decimal from 1 %, two significant digits under it."""
    return f"{share:.1%}" if share >= 0.01 else f"{100 * share:.2g}%"
