"""The words a plan's trace replay is reported in: each workload's replayed window and warm-up,
and where they fell short of the standard (docs/replay.md, "Replay in the plan"): the terminal,
report.md and the workbook say the same."""

from __future__ import annotations

from models.common import CapacitySource
from models.plan import REPLAY_WARMUP_S, REPLAY_WINDOW_S, Plan, ReplayCheck


def short_windows(plan: Plan) -> dict[str, str]:
    """Workload → how its last-round replay fell short of the standard window and warm-up
    (``window 94 s of 600, no warm-up``), for the workloads whose replay did."""
    if not plan.replay:
        return {}
    last = max(c.round for c in plan.replay)
    return {c.workload: c.caveat for c in plan.replay if c.round == last and c.caveat}


def window_lines(plan: Plan) -> list[str]:
    """Each workload's replayed window and warm-up in the last round, a line each."""
    if not plan.replay:
        return []
    last = max(c.round for c in plan.replay)
    seen: dict[str, ReplayCheck] = {}
    for c in plan.replay:
        if c.round == last and c.window_s is not None:
            seen.setdefault(c.workload, c)
    return [window_words(c) for c in seen.values()]


def window_words(c: ReplayCheck) -> str:
    """``chat: 600 s around its busiest minute after 120 s of warm-up`` (a short one says how
    short and that a hold over it is weak evidence)."""
    assert c.window_s is not None and c.warmup_s is not None
    warm = "no warm-up" if c.warmup_s < 0.5 else f"after {c.warmup_s:.0f} s of warm-up"
    text = f"{c.workload}: {c.window_s:.0f} s around its busiest minute, {warm}"
    if c.caveat:
        text += (f" — under the standard {REPLAY_WINDOW_S:.0f} s after {REPLAY_WARMUP_S:.0f} s "
                 "(the trace is too short around its busiest minute): a hold is weak evidence")
    return text


#: A replay check whose P95 exceeds its SLO by this factor or more is called out, in every
#: round: a miss of an order of magnitude is not a burst the loop's de-rating tunes away but
#: the replicas left carrying more than they serve in the replay (a queue that grows through
#: the window), and a plan made with ``--no-replay`` would have been that round's fleet
#: (docs/capacity-model.md, "A miss by an order of magnitude: a measured row the replay does not
#: reproduce") [1].
GROSS_MISS_FACTOR = 10.0


def overshoot(c: ReplayCheck) -> float:
    """The largest of the check's P95 ÷ SLO ratios, TTFT, per-token and end-to-end where the
    workload states one [1] (0 where none was measured)."""
    ratios = [p95 / slo for p95, slo in ((c.ttft_p95_ms, c.ttft_slo_ms),
                                          (c.tpot_p95_ms, c.tpot_slo_ms),
                                          (c.e2e_p95_ms, c.e2e_slo_ms))
              if p95 is not None and slo is not None]
    return max(ratios, default=0.0)


def p95_words(c: ReplayCheck) -> str:
    """``TTFT P95 12,000 ms against 1,000, per-token 61.0 against 50`` and, where the workload
    states one, ``, end-to-end 30,500 against 20,000``; a workload of one-token outputs (no
    per-token SLO) leaves the per-token part out."""
    ttft = "—" if c.ttft_p95_ms is None else f"{c.ttft_p95_ms:,.0f}"
    text = f"TTFT P95 {ttft} ms against {c.ttft_slo_ms:,.0f}"
    if c.tpot_slo_ms is not None:
        tpot = "—" if c.tpot_p95_ms is None else f"{c.tpot_p95_ms:,.1f}"
        text += f", per-token {tpot} against {c.tpot_slo_ms:g}"
    if c.e2e_slo_ms is not None:
        e2e = "—" if c.e2e_p95_ms is None else f"{c.e2e_p95_ms:,.0f}"
        text += f", end-to-end {e2e} against {c.e2e_slo_ms:,.0f}"
    return text


def gross_misses(plan: Plan) -> list[str]:
    """A line for each round and workload whose replay missed an SLO by
    :data:`GROSS_MISS_FACTOR` or more (its worst check), naming the workload's configurations
    that the plan sizes from measured rows: the replay runs the analytic step times, so it
    checks a measured row only as far as the analytic model agrees with it."""
    worst: dict[tuple[int, str], ReplayCheck] = {}
    for c in plan.replay:
        if overshoot(c) < GROSS_MISS_FACTOR:
            continue
        key = (c.round, c.workload)
        if key not in worst or overshoot(c) > overshoot(worst[key]):
            worst[key] = c
    lines = []
    for (round_, name), c in sorted(worst.items()):
        measured = sorted({f"{a.gpu} TP{a.tp}" for a in plan.allocations
                           if a.workload == name and a.capacity_source is CapacitySource.measured})
        text = (f"round {round_}: {name} missed by {overshoot(c):,.0f}× "
                f"{'intact' if c.failure == 'none' else 'after ' + c.failure} "
                f"({p95_words(c)}): the replicas left carried more than they serve in the "
                "replay, a queue that grows, not a burst; a plan made with --no-replay would be "
                "that round's fleet")
        if measured:
            text += (f". {', '.join(measured)} {'is' if len(measured) == 1 else 'are'} sized "
                     "from a measured row, the replay runs the analytic step times: where they "
                     "disagree this far, check the row (docs/capacity-model.md, \"A miss by an "
                     "order of magnitude\")")
        else:
            text += " (docs/capacity-model.md, \"A miss by an order of magnitude\")"
        lines.append(text)
    return lines


def excluded_lines(plan: Plan) -> list[str]:
    """The requests the last round's checks counted apart, never as late (docs/replay.md,
    "Requests no replica can serve: one rule"): per workload, those of its window longer than
    the model's context (the same in each of its checks: the window is the same trace); per
    check, those a failure cut off while streaming. As ``fleetplan simulate`` says them."""
    if not plan.replay:
        return []
    last = max(c.round for c in plan.replay)
    checks = [c for c in plan.replay if c.round == last]
    lines = []
    seen: set[str] = set()
    for c in checks:
        if c.over_context and c.workload not in seen:
            seen.add(c.workload)
            lines.append(f"{c.workload}: {_count_share(c.over_context, c.requests)} of its window "
                         "longer than the model's context (input + output): no fleet serves "
                         "them — counted apart, never as late; the P95s and the share within "
                         "the SLOs are over the rest")
    for c in checks:
        if c.cut_off:
            lines.append(f"{c.workload} {c.failure}: {_count_share(c.cut_off, c.requests)} "
                         "streaming on a lost replica cut off by the failure: no fleet saves "
                         "them — counted apart, never as late")
    return lines


def _count_share(count: int, total: int) -> str:
    """``12 requests (5.0% of 240)``."""
    share = count / total if total else 0.0
    text = f"{share:.1%}" if share >= 0.01 else f"{100 * share:.2g}%"
    return f"{count:,} request{'' if count == 1 else 's'} ({text} of {total:,})"
