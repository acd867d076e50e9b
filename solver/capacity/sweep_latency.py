"""P95 latencies of a measured configuration at a rate, read off the points its load test measured.

A measured row that keeps its sweep (``MeasuredCapacity.points``, written by ``fleetplan
import-bench``) says what the replica did at each tested load: the requests it served per second
and the TTFT and per-token P95 there. At a rate inside the sweep the latencies are interpolated
linearly in the rate served between the two tested loads around it; below the lightest load they
are that load's, the lowest the test measured, and said so (a latency the test never saw is not
invented by extrapolating down); above the heaviest load this module gives nothing and the
caller extrapolates (:func:`solver.capacity.replica.predict_at_rate`, which says from what).
Rules and the worked case: docs/capacity-model.md, "Latency at another rate".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.measured import MeasuredPoint

#: Rates this close (relative) to a tested load's are that load's [1].
SAME_RATE = 1e-9


@dataclass(frozen=True)
class SweepLatency:
    """Latencies read off a sweep at one rate, and in words where from."""

    ttft_p95_ms: float
    tpot_p95_ms: float
    basis: str
    """``measured: interpolated between 0.788 and 1.46 req/s (concurrency 4 and 8)`` and the
    like: the loads the figures come from."""


def rising(points: Sequence[MeasuredPoint]) -> tuple[MeasuredPoint, ...]:
    """The points a rate can be read off: in load order, each serving more requests per second
    than the one before. The first load that served no more than a lighter one ends them: past
    saturation a heavier load adds queueing, not rate, and its latencies belong to no rate."""
    out: list[MeasuredPoint] = []
    for p in points:
        if out and p.achieved_rps <= out[-1].achieved_rps:
            break
        if p.achieved_rps > 0:
            out.append(p)
    return tuple(out)


def _rate(p: MeasuredPoint) -> str:
    return f"{p.achieved_rps:.3g} req/s"


def _at(p: MeasuredPoint) -> SweepLatency:
    """A tested load's own latencies, said to be measured there."""
    return SweepLatency(p.ttft_p95_ms, p.tpot_p95_ms, f"measured at {_rate(p)} ({p.load_text()})")


def latency_on_sweep(points: Sequence[MeasuredPoint], rate_rps: float) -> SweepLatency | None:
    """The TTFT and per-token P95 at ``rate_rps`` [1/s] from the sweep's points (rules in the
    module docstring); ``None`` above the heaviest load that still served more (or without
    points)."""
    curve = rising(points)
    if not curve:
        return None
    first, last = curve[0], curve[-1]
    if math.isclose(rate_rps, last.achieved_rps, rel_tol=SAME_RATE):
        return _at(last)
    if rate_rps > last.achieved_rps:
        return None
    if rate_rps <= first.achieved_rps * (1 + SAME_RATE):
        if math.isclose(rate_rps, first.achieved_rps, rel_tol=SAME_RATE):
            return _at(first)
        return SweepLatency(first.ttft_p95_ms, first.tpot_p95_ms,
                            f"measured: below the lightest tested load ({_rate(first)}, "
                            f"{first.load_text()}), whose latencies are given, the lowest the "
                            "test measured (not extrapolated down)")
    hi = next(i for i, p in enumerate(curve) if p.achieved_rps >= rate_rps)
    below, above = curve[hi - 1], curve[hi]
    if math.isclose(rate_rps, above.achieved_rps, rel_tol=SAME_RATE):
        return _at(above)
    f = (rate_rps - below.achieved_rps) / (above.achieved_rps - below.achieved_rps)  # [1]
    return SweepLatency(
        below.ttft_p95_ms + f * (above.ttft_p95_ms - below.ttft_p95_ms),
        below.tpot_p95_ms + f * (above.tpot_p95_ms - below.tpot_p95_ms),
        f"measured: interpolated between {below.achieved_rps:.3g} and "
        f"{above.achieved_rps:.3g} req/s ({_loads(below, above)})")


def _loads(below: MeasuredPoint, above: MeasuredPoint) -> str:
    """``concurrency 4 and 8``, ``offered 1 and 2 req/s``, else each load in full."""
    if below.concurrency is not None and above.concurrency is not None:
        return f"concurrency {below.concurrency:g} and {above.concurrency:g}"
    if below.offered_rps is not None and above.offered_rps is not None:
        return f"offered {below.offered_rps:g} and {above.offered_rps:g} req/s"
    return f"{below.load_text()} and {above.load_text()}"
