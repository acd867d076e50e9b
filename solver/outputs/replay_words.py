"""The words a plan's trace replay is reported in: each workload's replayed window and warm-up,
and where they fell short of the standard (docs/replay.md, "Replay in the plan"): the terminal,
report.md and the workbook say the same."""

from __future__ import annotations

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
