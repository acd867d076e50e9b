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
failure the P95s held (316 ms TTFT for an SLO of 1,500; 27.7 ms per token for 60). A request
longer than the model's context likewise (:func:`over_context_line`). The rule and its P95
are :mod:`solver.replay.verdict`'s, which the plan's own replay uses too; this module words
them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from solver.outputs.labels import NO_SECOND_TOKEN, plural
from solver.replay.engine import ReplayResult, Status
from solver.replay.profile import share_words
from solver.replay.verdict import ALLOWED_ABOVE, Group, GroupP95, SloVerdict, group_p95_ms, verdicts

__all__ = ["ALLOWED_ABOVE", "Group", "GroupP95", "SloVerdict", "basis_line", "cut_off_line",
           "group_p95_ms", "over_context_line", "verdict_json", "verdict_line", "verdicts"]


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
            "stream on a lost zone or node (a client may retry it); the verdicts below and "
            "the Within SLO row are over the rest")


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
            "clients that cut their prompts, would); the verdicts below and the Within SLO "
            "row are over the rest")


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
