"""The SLO-holding rate of a load-test sweep: the highest tested rate at which the SLO held.

Definitions (docs/capacity-model.md, "Measured rows from load tests"):

1. **Order.** The points are ordered by load: offered rate or concurrency where every point of
   the sweep sets its load the same way (an unbounded run last), else by the throughput served.
   Repeats of one load are one point: the worst P95s (and P50s), the mean throughput, failures
   summed.
2. **Held** means TTFT P95 ≤ the SLO's, per-token P95 ≤ the SLO's, and at most
   :data:`MAX_FAILED_SHARE` of the requests failed.
3. **The rate.** Walking up the loads, the first point that does not hold ends the search (a
   later point that holds again is noise and is said so). Between the last point that held
   (``below``) and that one (``above``), each broken figure is interpolated linearly to where it
   reaches its limit; the smallest such fraction *f* of the way wins, and the SLO-holding rate
   is ``below`` throughput + *f* × (``above`` − ``below``) throughput — never less than
   ``below``'s, never beyond a tested point (no extrapolation). The P95s and sequences in
   flight at that rate are interpolated the same way.
4. **Every point held**: the rate is the highest throughput tested, a lower bound; the result
   says so. **No point held**: refused, with the lightest load's figures and limits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from models.errors import InputError, Problem
from solver.capacity.bench.points import BenchPoint, LoadKind

#: Share of failed requests above which a tested load does not hold, whatever its latencies.
MAX_FAILED_SHARE = 0.01


@dataclass(frozen=True)
class Slo:
    """The latency promise a load test is judged against [ms]."""

    ttft_p95_ms: float
    tpot_p95_ms: float


@dataclass(frozen=True)
class Verdict:
    """One tested load judged against the SLO."""

    point: BenchPoint
    holds: bool
    broken: tuple[str, ...]
    """What did not hold, in words (empty when it held)."""


@dataclass(frozen=True)
class SloHolding:
    """The SLO-holding rate of a sweep and how it was found."""

    rate_rps: float
    ttft_p95_ms: float
    tpot_p95_ms: float
    sequences: float | None
    below: BenchPoint
    above: BenchPoint | None
    """The first load that did not hold (``None`` when every load held)."""
    fraction: float
    """How far from ``below`` to ``above`` the SLO broke [1] (0 when every load held)."""
    verdicts: tuple[Verdict, ...]
    notes: tuple[str, ...]

    @property
    def interpolated(self) -> bool:
        """The rate lies strictly between two tested loads."""
        return self.above is not None and self.fraction > 0


def _label(p: BenchPoint) -> str:
    return f"{p.file}{': ' + p.where if p.where else ''}"


def _load_text(p: BenchPoint) -> str:
    if p.load_kind is LoadKind.rate:
        return f"offered {p.load:g} req/s"
    if p.load_kind is LoadKind.concurrency:
        return f"concurrency {p.load:g}"
    return "unbounded"


def ordered(points: Sequence[BenchPoint]) -> list[BenchPoint]:
    """Points by load, repeats of one load merged (rule 1 of the module docstring)."""
    kinds = {p.load_kind for p in points} - {LoadKind.unbounded}
    by_load = len(kinds) <= 1
    groups: dict[tuple[object, ...], list[BenchPoint]] = {}
    for p in points:
        key: tuple[object, ...] = (p.load_kind, p.load) if by_load else (id(p),)
        groups.setdefault(key, []).append(p)
    merged = [_merge(g) for g in groups.values()]
    if by_load:
        return sorted(merged, key=lambda p: (p.load, p.throughput_rps))
    return sorted(merged, key=lambda p: (p.load_kind is LoadKind.unbounded, p.throughput_rps))


def _merge(group: list[BenchPoint]) -> BenchPoint:
    if len(group) == 1:
        return group[0]
    first = group[0]
    known = [p.completed for p in group if p.completed is not None]
    e2e = [p.mean_e2e_ms for p in group if p.mean_e2e_ms is not None]
    seqs = [p.sequences for p in group if p.sequences is not None]
    dates = [p.measured_on for p in group if p.measured_on is not None]
    return replace(
        first, where=", ".join(p.where or p.file for p in group),
        throughput_rps=sum(p.throughput_rps for p in group) / len(group),
        ttft_p95_ms=max(p.ttft_p95_ms for p in group),
        tpot_p95_ms=max(p.tpot_p95_ms for p in group),
        completed=sum(known) if len(known) == len(group) else None,
        failed=sum(p.failed for p in group),
        mean_e2e_ms=sum(e2e) / len(e2e) if e2e else None,
        sequences=max(seqs) if seqs else None,
        measured_on=min(dates) if dates else None,
        ttft_p50_ms=_worst([p.ttft_p50_ms for p in group]),
        tpot_p50_ms=_worst([p.tpot_p50_ms for p in group]),
        e2e_p50_ms=_worst([p.e2e_p50_ms for p in group]),
        e2e_p95_ms=_worst([p.e2e_p95_ms for p in group]),
        notes=(*first.notes, f"{len(group)} runs at {_load_text(first)}: worst P95s, mean "
               "throughput"))


def _worst(values: Sequence[float | None]) -> float | None:
    """The largest of a latency the repeats of one load give, where every repeat gives it."""
    known = [v for v in values if v is not None]
    return max(known) if known and len(known) == len(values) else None


def judge(p: BenchPoint, slo: Slo) -> Verdict:
    """Whether one tested load held the SLO, and what broke where it did not."""
    broken = []
    if p.ttft_p95_ms > slo.ttft_p95_ms:
        broken.append(f"TTFT P95 {p.ttft_p95_ms:,.0f} ms > {slo.ttft_p95_ms:,.0f} ms")
    if p.tpot_p95_ms > slo.tpot_p95_ms:
        broken.append(f"per-token P95 {p.tpot_p95_ms:,.1f} ms > {slo.tpot_p95_ms:,.1f} ms")
    if p.failed_share > MAX_FAILED_SHARE:
        broken.append(f"{p.failed_share:.1%} of requests failed (> {MAX_FAILED_SHARE:.0%})")
    return Verdict(p, not broken, tuple(broken))


def _fraction(lo: float, hi: float, limit: float) -> float | None:
    """How far from ``lo`` to ``hi`` a figure rising past ``limit`` reaches it [0, 1]."""
    if hi <= limit:
        return None
    if hi <= lo:
        return 0.0
    return min(max((limit - lo) / (hi - lo), 0.0), 1.0)


def _between(lo: float | None, hi: float | None, f: float) -> float | None:
    if lo is None or hi is None:
        return lo if hi is None else (hi if lo is None else None)
    return lo + f * (hi - lo)


def slo_holding(points: Sequence[BenchPoint], slo: Slo) -> SloHolding:
    """The SLO-holding rate of a sweep (rules in the module docstring); no held load → refused."""
    verdicts = tuple(judge(p, slo) for p in ordered(points))
    first = verdicts[0]
    if not first.holds:
        p = first.point
        raise InputError([Problem(
            _label(p), "", f"the SLO held at no tested load: at the lightest "
            f"({_load_text(p)}, {p.throughput_rps:,.3g} req/s served) "
            + "; ".join(first.broken),
            "test lighter loads, or check the SLO (--slo-ttft-ms, --slo-tpot-ms)")])
    breaks = next((i for i, v in enumerate(verdicts) if not v.holds), None)
    notes = []
    if breaks is None:
        best = max((v.point for v in verdicts), key=lambda p: p.throughput_rps)
        notes.append(f"the SLO held at every tested load: {best.throughput_rps:,.3g} req/s is "
                     "the highest tested, a lower bound (test heavier loads to find where it "
                     "breaks)")
        return SloHolding(best.throughput_rps, best.ttft_p95_ms, best.tpot_p95_ms,
                          best.in_flight, best, None, 0.0, verdicts, tuple(notes))
    lo, hi = verdicts[breaks - 1].point, verdicts[breaks].point
    again = [v.point for v in verdicts[breaks + 1:] if v.holds]
    if again:
        notes.append(f"{len(again)} heavier load(s) held again after the first break "
                     f"({_load_text(again[0])}): taken as noise, the first break decides")
    fractions = [f for f in (
        _fraction(lo.ttft_p95_ms, hi.ttft_p95_ms, slo.ttft_p95_ms),
        _fraction(lo.tpot_p95_ms, hi.tpot_p95_ms, slo.tpot_p95_ms),
        _fraction(lo.failed_share, hi.failed_share, MAX_FAILED_SHARE)) if f is not None]
    f = min(fractions)
    rate = max(lo.throughput_rps, lo.throughput_rps + f * (hi.throughput_rps - lo.throughput_rps))
    ttft = _between(lo.ttft_p95_ms, hi.ttft_p95_ms, f)
    tpot = _between(lo.tpot_p95_ms, hi.tpot_p95_ms, f)
    assert ttft is not None and tpot is not None
    seqs = _between(lo.in_flight, hi.in_flight, f)
    if math.isclose(f, 0.0):
        notes.append("the next load broke the SLO already where it starts: the rate is the last "
                     "load that held")
    return SloHolding(rate, ttft, tpot, seqs, lo, hi, f, verdicts, tuple(notes))
