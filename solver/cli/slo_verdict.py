"""``fleetplan simulate``'s verdict: did the replay hold each P95 SLO, and if not by how much.

One verdict per SLO (TTFT, time per output token and, where the workload states
``slo.e2e_p95_ms``, end-to-end time), over every request of the replay and, with
``--fail``, over the requests arriving after each failure: the worst of those groups decides.
A request that got no answer (rejected) counts as infinitely late, so a P95 holds only if at
least 95 % of the group's requests were answered within the SLO's latency; a one-token answer
has no time per output token and is left out of that P95, as the latency table leaves it out.

A request cut off by a failure — streaming on a replica when it was lost — is counted on its
own (:func:`cut_off_line`) and left out of the verdicts: no fleet saves a stream on a lost
zone, and counted as late they decided the verdict. A new user's zone loss at real scale cut
off 6.2 % of the requests at the failure instant: both SLOs "MISSED (no P95)", while after the
failure the P95s held (316 ms TTFT for an SLO of 1,500; 27.7 ms per token for 60).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.outputs.labels import NO_SECOND_TOKEN, plural
from solver.replay.engine import ReplayResult, Status
from solver.replay.profile import share_words

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
    over = arrived & (result.status == Status.rejected_over_context)
    mask = arrived & (result.status != Status.failed) & ~over
    cut_off = int((arrived & (result.status == Status.failed)).sum())
    over_context = int(over.sum())
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


def _p95_text(g: GroupP95) -> str:
    if math.isinf(g.p95_ms):
        return (f"no P95: {g.unanswered:,} of {g.requests:,} requests "
                f"({g.unanswered / g.requests:.1%}) got no answer, more than the 5 % a P95 "
                f"leaves out, over {g.group}")
    return f"P95 {g.p95_ms:,.1f} ms over {g.group}"


def verdict_line(v: SloVerdict) -> str:
    """``TTFT P95 SLO 1,000 ms: held (P95 812.0 ms over all requests; …)`` or ``… MISSED by
    239.0 ms (+24 %): …``."""
    shown = [g for g in v.groups if not math.isnan(g.p95_ms)]
    detail = "; ".join(_p95_text(g) for g in shown) or "no request"
    if math.isinf(v.target_ms):  # the workload's outputs are one token: none planned
        return f"{v.slo} P95: {NO_SECOND_TOKEN} ({detail})"
    head = f"{v.slo} P95 SLO {v.target_ms:,.0f} ms: "
    if v.held:
        return f"{head}held ({detail})"
    worst = v.worst
    if math.isinf(worst.p95_ms):
        return f"{head}MISSED ({detail})"
    over = worst.p95_ms - v.target_ms
    return f"{head}MISSED by {over:,.1f} ms ({over / v.target_ms:+.0%}) ({detail})"


def cut_off_line(result: ReplayResult) -> str | None:
    """How many requests the failures cut off (streaming on a lost replica), said apart from
    the verdicts; ``None`` when none was."""
    cut = int((result.status == Status.failed).sum())
    if not cut:
        return None
    total = int(result.status.size)
    share = cut / total
    # under 0.1 %: two significant digits (446 of 943,738 read "0.0%", as if none were cut)
    share_text = f"{share:.1%}" if share >= 0.001 else f"{100 * share:.2g}%"
    return (f"{plural(cut, 'request')} ({share_text} of {total:,}) streaming on a lost "
            f"replica {'was' if cut == 1 else 'were'} cut off by the failure: no fleet saves a "
            "stream on a lost zone or node (a client may retry it); the verdicts below are "
            "over the rest")


def over_context_line(result: ReplayResult, max_context_tokens: int | None) -> str | None:
    """How many requests were longer than the model's context (input + output above
    ``max_context_tokens``), said apart from the verdicts: they are rejected, never truncated,
    and no fleet serves them, so counted as late they decided a P95 that says nothing of the
    fleet (a trace's 10 of 3,993 over 131,072 tokens sat inside the 5 % a P95 leaves out, one
    more in a hundred would not). ``None`` when none was."""
    over = int((result.status == Status.rejected_over_context).sum())
    if not over:
        return None
    total = int(result.status.size)
    share_text = share_words(over / total)
    context = "" if max_context_tokens is None else f" of {max_context_tokens:,} tokens"
    return (f"{plural(over, 'request')} ({share_text} of {total:,}) longer than the model's "
            f"context{context} (input + output) {'was' if over == 1 else 'were'} rejected as "
            "too long, never truncated: no fleet serves them (a longer-context model, or "
            "clients that cut their prompts, would); the verdicts below are over the rest")


def basis_line(found: Sequence[SloVerdict]) -> str | None:
    """Why a verdict's P95 can differ from the latency table's: the table's percentiles are over
    the requests answered, a verdict counts the unanswered as late (counted over the first
    group, all requests). ``None`` when every request was answered (then the two agree)."""
    unanswered = max((v.groups[0].unanswered for v in found if v.groups), default=0)
    if not unanswered:
        return None
    return (f"the verdicts below count the {unanswered:,} request"
            f"{'' if unanswered == 1 else 's'} without an answer (rejected) as late; "
            "the latency table above leaves them out of its percentiles, so a verdict's P95 can "
            "be higher than the table's")


def verdict_json(v: SloVerdict) -> dict[str, object]:
    """A verdict for machines: ``p95_ms`` null where unanswered requests leave no P95."""
    return {"slo": v.key, "target_ms": v.target_ms if math.isfinite(v.target_ms) else None,
            "held": v.held,
            "groups": [{"group": g.group, "requests": g.requests, "unanswered": g.unanswered,
                        "cut_off": g.cut_off, "over_context": g.over_context,
                        "p95_ms": None if not math.isfinite(g.p95_ms) else g.p95_ms}
                       for g in v.groups]}
