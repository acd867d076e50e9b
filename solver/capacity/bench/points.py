"""One tested load of a load-test run, as every benchmark reader returns it.

A load test runs a replica at a series of loads — request rates or concurrencies — and reports,
per load, what the replica served and how fast. :class:`BenchPoint` is that report in one shape,
whatever tool wrote it: the load offered, the request throughput achieved, the P95 time to first
token and the P95 time per output token after the first (the SLO's two figures), the mean
end-to-end latency, failures, the sequences in flight where the file shows them, and where the
figures came from (tool, format version, engine, model, date).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from models.errors import InputError, Problem

MS_PER_S = 1000.0


class LoadKind(StrEnum):
    """How a run set its load."""

    rate = "rate"
    """Requests arrived at an offered rate [1/s] (Poisson or constant)."""
    concurrency = "concurrency"
    """A fixed number of requests were kept in flight."""
    unbounded = "unbounded"
    """Every request at once (``--request-rate inf`` without a concurrency cap): the maximum
    throughput, the heaviest load of a sweep."""


class PercentileBasis(StrEnum):
    """Where a point's P95 latencies come from."""

    p95 = "P95 from the file"
    samples = "P95 of the file's per-request samples"
    p99_bound = "P99 from the file, an upper bound of the P95 (the run saved no P95)"


@dataclass(frozen=True)
class Lengths:
    """Token lengths of the requests a run sent (prompt) or received (output) [tokens]; a
    statistic the file does not give is ``None``."""

    mean: float | None = None
    p50: float | None = None
    p95: float | None = None

    @classmethod
    def of_samples(cls, samples: Sequence[float]) -> Lengths | None:
        """Mean, median and P95 (numpy's linear interpolation) of per-request lengths."""
        if not samples:
            return None
        values = np.asarray(samples, dtype=np.float64)
        return cls(float(values.mean()), float(np.percentile(values, 50)),
                   float(np.percentile(values, 95)))

    @property
    def known(self) -> bool:
        """The file gives at least one of the statistics."""
        return any(v is not None for v in (self.mean, self.p50, self.p95))


@dataclass(frozen=True)
class BenchPoint:
    """One tested load (see the module docstring); latencies in ms, rates in requests/s."""

    file: str
    where: str
    """The place in the file (``runs[2]``, ``benchmarks[0]``, ``line 3``; empty for the whole)."""
    tool: str
    """Tool and format version, e.g. ``vLLM bench serve (vllm ≥ 0.9)``."""
    load_kind: LoadKind
    load: float
    """The offered rate [1/s] or concurrency [requests]; ``inf`` for an unbounded run."""
    throughput_rps: float
    ttft_p95_ms: float
    tpot_p95_ms: float
    """Time per output token after the first, P95 [ms/token]."""
    basis: PercentileBasis
    completed: int | None
    """Requests served (``None`` where the file does not count them)."""
    failed: int
    mean_e2e_ms: float | None = None
    sequences: float | None = None
    """Requests in flight the replica held: the run's concurrency cap, else the peak the tool
    observed, else ``None`` (then Little's law over the mean latency stands in)."""
    sequences_basis: str = ""
    measured_on: dt.date | None = None
    engine: str | None = None
    """Serving engine and version the file names (``vllm``, ``vllm-0.6.3``), else ``None``."""
    model: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    input_tokens: Lengths | None = None
    """Prompt lengths the run sent, where the file records them (``None``: it does not)."""
    output_tokens: Lengths | None = None
    """Output lengths the run received, where the file records them."""
    ttft_p50_ms: float | None = None
    """Median time to first token [ms] (``None``: the file does not give it)."""
    tpot_p50_ms: float | None = None
    """Median time per output token after the first [ms/token] (``None``: not given)."""
    e2e_p50_ms: float | None = None
    """Median end-to-end latency [ms] (``None``: not given)."""
    e2e_p95_ms: float | None = None
    """95th-percentile end-to-end latency [ms] (``None``: not given)."""

    @property
    def failed_share(self) -> float:
        """Failed requests ÷ all requests of the run [1]; a run that served nothing, or failures
        without a count of what was served, count as all failed."""
        if self.failed == 0:
            return 0.0 if self.completed is None or self.completed > 0 else 1.0
        total = (self.completed or 0) + self.failed
        return self.failed / total if self.completed is not None else 1.0

    @property
    def in_flight(self) -> float | None:
        """Sequences in flight: as the file shows them, else throughput × mean end-to-end
        latency (Little's law); ``None`` when neither is known [requests]."""
        if self.sequences is not None:
            return self.sequences
        if self.mean_e2e_ms is not None:
            return self.throughput_rps * self.mean_e2e_ms / MS_PER_S  # [1/s] × [s]
        return None


def number(doc: Mapping[str, Any], key: str, file: str, where: str, *,
           required: bool = True, minimum: float = 0.0) -> float | None:
    """A finite number >= ``minimum`` at ``doc[key]`` (``None`` when absent and not required);
    anything else is a located InputError."""
    value = doc.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or value < minimum or abs(value) >= 1e15:
        got = "missing" if value is None else f"`{value!r}`"
        raise InputError([Problem(file, f"{where}.{key}" if where else key,
                                  f"{got}: expected a finite number >= {minimum:g}",
                                  "give the file as the tool wrote it")])
    return float(value)


def p50_of(samples: Sequence[float]) -> float:
    """Median of samples (numpy's linear interpolation, as the tools compute it)."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), 50))


def p95_of(samples: Sequence[float]) -> float:
    """95th percentile of samples (numpy's linear interpolation, as the tools compute it)."""
    return float(np.percentile(np.asarray(samples, dtype=np.float64), 95))


def parse_date(text: str, formats: Sequence[str]) -> dt.date | None:
    """A date from text in one of ``formats`` (strptime), else ``None``."""
    for fmt in formats:
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def epoch_date(seconds: float) -> dt.date | None:
    """UTC date of an epoch time in seconds, or ``None`` when not a plausible time."""
    if not math.isfinite(seconds) or not 0 < seconds < 4e9:
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).date()
