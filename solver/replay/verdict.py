"""The replay's verdict on a P95 SLO — one rule for ``fleetplan simulate``, the plan's own
replay (:mod:`solver.replay.plan_replay`) and what ``validate`` says of a linked trace
(docs/replay.md, "Requests no replica can serve: one rule").

Over a group of requests (by arrival), a P95 holds when at least 95 % of the requests it judges
were answered within the SLO's latency. It judges every request but two kinds, which are
counted and named beside it and left out of its denominator as of the attainment's
(:func:`~solver.replay.engine.judged`, which :func:`~solver.replay.engine.summarize` uses too):

- a request **longer than the model's context** (input + output above ``max_context_tokens``),
  rejected, never truncated: no fleet of that model serves it, whatever its size;
- a request **cut off by a failure** (streaming on a replica when it was lost): no fleet saves
  a stream on a lost zone or node.

A request the fleet left without an answer (longer than every live replica's KV cache, or no
replica alive) is the fleet's, and counts as infinitely late. Before 2026-12-05 the plan's
replay took its P95s over the answered requests alone and left the KV-too-long out, and
``simulate``'s "Within SLO" counted over-context and cut-off requests as misses, so one trace
and fleet read "holds" in ``plan`` and "MISSED" in ``simulate``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.replay.engine import ReplayResult, Status, judged

#: The share of requests a P95 SLO allows above its latency.
ALLOWED_ABOVE = 0.05


@dataclass(frozen=True)
class Group:
    """Requests arriving in ``[since_s, until_s)``, named as the latency table names them."""

    name: str
    since_s: float = 0.0
    until_s: float = math.inf


@dataclass(frozen=True)
class GroupP95:
    """One group's P95 of one latency, unanswered requests counted as infinitely late."""

    group: str
    p95_ms: float
    """``inf`` when more than 5 % of the group got no answer; NaN for an empty group."""
    unanswered: int
    requests: int
    """Requests the P95 is over: the group's, but those cut off by a failure."""
    cut_off: int = 0
    """The group's requests cut off by a failure (streaming on a replica when it was lost)."""
    over_context: int = 0
    """The group's requests longer than the model's context, rejected (no fleet serves them)."""


@dataclass(frozen=True)
class SloVerdict:
    """One SLO: its target, each group's P95, and whether the worst group held it."""

    slo: str
    """``TTFT``, ``per-token`` or ``end-to-end``."""
    key: str
    """The workload's SLO field: ``ttft_p95_ms``, ``tpot_p95_ms`` or ``e2e_p95_ms``."""
    target_ms: float
    groups: tuple[GroupP95, ...]

    @property
    def worst(self) -> GroupP95:
        """The group with the highest P95 (an empty group never is)."""
        measured = [g for g in self.groups if not math.isnan(g.p95_ms)]
        return max(measured, key=lambda g: g.p95_ms) if measured else self.groups[0]

    @property
    def held(self) -> bool:
        """Every group's P95 at most the target (an empty group holds)."""
        return all(math.isnan(g.p95_ms) or g.p95_ms <= self.target_ms for g in self.groups)


def group_p95_ms(result: ReplayResult, latency: str, group: Group) -> GroupP95:
    """P95 of ``latency`` (``ttft_ms``, ``tpot_ms`` or ``e2e_ms``) over the group, linear
    between ranks as the latency table's percentiles; unanswered requests sort last, requests
    cut off by a failure are left out (counted in ``cut_off``), and so are requests longer than
    the model's context (``over_context``: :func:`over_context_line`)."""
    arrived = (result.arrival_s >= group.since_s) & (result.arrival_s < group.until_s)
    mask = arrived & judged(result.status)
    cut_off = int((arrived & (result.status == Status.failed)).sum())
    over_context = int((arrived & (result.status == Status.rejected_over_context)).sum())
    done = result.status[mask] == Status.completed
    values = np.asarray(getattr(result, latency)[mask], dtype=np.float64)
    if latency == "tpot_ms":  # one-token answers have no time per output token
        keep = ~done | ~np.isnan(values)
        values, done = values[keep], done[keep]
    unanswered = int((~done).sum())
    if values.size == 0:
        return GroupP95(group.name, math.nan, 0, 0, cut_off, over_context)
    if unanswered > ALLOWED_ABOVE * values.size:
        return GroupP95(group.name, math.inf, unanswered, int(values.size), cut_off,
                        over_context)
    late = np.where(done, values, np.inf)
    finite = np.sort(late[np.isfinite(late)])
    rank = 0.95 * (values.size - 1)  # numpy's linear method on the full group
    low, high = math.floor(rank), math.ceil(rank)
    if high >= finite.size:  # the rank falls among the unanswered: infinitely late
        return GroupP95(group.name, math.inf, unanswered, int(values.size), cut_off,
                        over_context)
    p95 = finite[low] + (finite[high] - finite[low]) * (rank - low)
    return GroupP95(group.name, float(p95), unanswered, int(values.size), cut_off,
                    over_context)


def verdicts(result: ReplayResult, ttft_slo_ms: float, tpot_slo_ms: float,
             groups: Sequence[Group], e2e_slo_ms: float | None = None
             ) -> tuple[SloVerdict, ...]:
    """The TTFT and per-token verdicts over ``groups``, and the end-to-end one where
    ``e2e_slo_ms`` (the workload's ``slo.e2e_p95_ms``) is given."""
    slos = [("TTFT", "ttft_p95_ms", ttft_slo_ms, "ttft_ms"),
            ("per-token", "tpot_p95_ms", tpot_slo_ms, "tpot_ms")]
    if e2e_slo_ms is not None:
        slos.append(("end-to-end", "e2e_p95_ms", e2e_slo_ms, "e2e_ms"))
    return tuple(SloVerdict(name, key, target_ms,
                            tuple(group_p95_ms(result, latency, g) for g in groups))
                 for name, key, target_ms, latency in slos)
