"""Replay in the planning loop: solve, replay the traces, de-rate what missed, solve again.

The capacity-planning practice fleetplan follows is a queueing estimate first, then trace
replay. ``plan`` hands this loop a ``replay`` function (solver.replay.plan_replay, wired by the
command: the solve strategy does not import the replay). Each round replays the plan it is about
to write; where a check misses an SLO, the workload's configurations (those that served in
that case, and the others the same model priced) are de-rated from their original
(un-de-rated) SLO-holding rate to the share of it at which the replays so far put the
workload's worst P95 at its SLO (:func:`refit_share`: in the first round the square of the
worst ratio SLO ÷ replayed P95, later fitted through the last two misses), each round moving
the share by a factor within [:data:`MIN_DERATE`, :data:`MAX_DERATE`] of the last: a share,
never a product of every round's factor — and the program is solved again (with a
``replan``, only for the workloads that missed, the rest of the fleet kept), at most
:data:`MAX_ROUNDS` solves in all. The plan records every round's checks (``Plan.replay``). A
re-solve that finds no fleet ends the loop with the last plan that had one. docs/replay.md,
"Replay in the plan".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

from models.capacity import CapacityRow, CapacityTable
from models.plan import Plan, ReplayCheck, SolveStatus

#: Solves in all, the first included [rounds].
MAX_ROUNDS = 3
#: A miss de-rates a configuration to at least this share of its rate: one round never more
#: than halves it [1].
MIN_DERATE = 0.5
#: ... and to at most this share: a miss by a hair still moves the plan [1].
MAX_DERATE = 0.95

#: Statuses that carry a fleet.
HAS_FLEET = (SolveStatus.optimal, SolveStatus.feasible, SolveStatus.time_limit)


class ReplayMiss(Protocol):
    """A check that missed, and the configurations (GPU, TP) that served in it
    (solver.replay.plan_replay.Miss)."""

    @property
    def check(self) -> ReplayCheck:
        """The check."""
        ...

    @property
    def configurations(self) -> frozenset[tuple[str, int]]:
        """(GPU, TP) of the replicas serving in the case."""
        ...


#: ``replay(plan, round) → (every check, the misses)``.
Replayer = Callable[[Plan, int], tuple[Sequence[ReplayCheck], Sequence[ReplayMiss]]]
#: ``solve(table) → plan``.
Solver = Callable[[CapacityTable], Plan]
#: ``replan(table, plan, workloads) → plan``: ``workloads`` re-planned on ``table``, every other
#: workload's replicas kept as ``plan`` has them (solver.solve.replan).
Replanner = Callable[[CapacityTable, Plan, frozenset[str]], Plan]


def miss_factor(check: ReplayCheck) -> float:
    """How far a check's rate must come down: the square of the worst SLO ÷ replayed P95,
    within [MIN_DERATE, MAX_DERATE] (MIN_DERATE when a request found no replica) [1].

    Squared because near its SLO-holding rate a replica's P95 rises faster than its rate
    (queueing grows as ρ ÷ (1 − ρ)): on the demo a de-rate by the ratio itself still missed
    after three solves (benchmarks/results/replay.md, "Replay in the planning loop")."""
    ratio = worst_ratio(check)
    worst = (MIN_DERATE if ratio is None else ratio) ** 2
    return min(max(worst, MIN_DERATE), MAX_DERATE)


def worst_ratio(check: ReplayCheck) -> float | None:
    """The worst SLO ÷ replayed P95 of a check over its TTFT, per-token and (where stated)
    end-to-end SLOs (below 1 where it misses); ``None`` where it has no P95 (no request was
    served) [1]."""
    ratios = [slo / p95 for p95, slo in ((check.ttft_p95_ms, check.ttft_slo_ms),
                                          (check.tpot_p95_ms, check.tpot_slo_ms),
                                          (check.e2e_p95_ms, check.e2e_slo_ms))
              if p95 is not None and slo is not None and p95 > 0]
    return min(ratios, default=None)


def refit_share(used: float, ratio: float | None, before: tuple[float, float] | None) -> float:
    """The share of a configuration's original SLO-holding rate to plan on next [1].

    ``used``: the share the fleet that missed was planned on (1 in the first round); ``ratio``:
    the worst SLO ÷ replayed P95 of the workload's misses there (``None``: no P95); ``before``:
    the share and ratio of the workload's previous miss (``None`` in its first). The replayed
    P95 is taken to scale as rate^α: α = ½ with one miss (the square of the ratio, as the
    first round always did: near its SLO-holding rate a replica's P95 rises faster than its
    rate), else fitted through the two misses, α = ln(ratio ÷ ratio before) ÷ ln(share before
    ÷ share), where that fit is defined and rising; the next share is ``used × ratio^(1/α)``,
    within [MIN_DERATE, MAX_DERATE] × ``used``. A share from the original, refitted, never the
    product of every round's factor: with the square each round, a configuration de-rated
    ×0.5 and then ×0.683 ran at 19 % of its original rate's utilisation (a new user's
    finding), where its two replays put the SLO at a higher rate."""
    if ratio is None:
        return used * MIN_DERATE
    alpha = 0.5
    if before is not None:
        share_before, ratio_before = before
        if share_before > used and ratio > ratio_before > 0:
            alpha = math.log(ratio / ratio_before) / math.log(share_before / used)
    step = ratio ** (1 / alpha)
    return used * min(max(step, MIN_DERATE), MAX_DERATE)


def derate(table: CapacityTable, factors: dict[tuple[str, str, int], float], round_: int
           ) -> CapacityTable:
    """``table`` with the rows of (workload, GPU, TP) in ``factors`` de-rated by their factor:
    SLO-holding rate and token rates × factor, cost per token ÷ factor, a note saying so."""
    rows: list[CapacityRow] = []
    for row in table.rows:
        f = factors.get((row.workload, row.gpu, row.tp))
        if f is None:
            rows.append(row)
            continue
        rows.append(row.model_copy(update={
            "slo_rps": row.slo_rps * f,
            "input_tokens_per_s": row.input_tokens_per_s * f,
            "output_tokens_per_s": row.output_tokens_per_s * f,
            "cost_per_million_tokens": {k: v / f for k, v in row.cost_per_million_tokens.items()},
            "note": f"{row.note}; de-rated ×{f:.3f} by trace replay (round {round_})".lstrip("; "),
        }))
    return table.model_copy(update={"rows": tuple(rows)})


def plan_with_replay(table: CapacityTable, solve: Solver, replay: Replayer,
                     max_rounds: int = MAX_ROUNDS, replan: Replanner | None = None,
                     stopped: Callable[[], bool] = lambda: False) -> Plan:
    """Solve, replay, de-rate and solve again until every check holds or ``max_rounds``
    solves are spent; the last plan with a fleet, its ``replay`` holding every round.

    With ``replan``, a round after the first re-plans only the workloads that missed, the
    rest of the fleet kept (their rows are not de-rated, so their replicas still meet them):
    a small program instead of the full one (benchmarks/results/replay.md, "Replay in the planning
    loop"). Once ``stopped()`` (the user's SIGINT or SIGTERM), a round that missed starts no
    other: the plan is that round's, status ``interrupted`` (the re-plan does not watch the
    user's clock, and went on to a plan that said nothing of the interruption)."""
    plan = solve(table)
    original = table
    records: list[ReplayCheck] = []
    share: dict[str, float] = {}  # workload → share of its original rates planned on
    since: dict[str, int] = {}  # workload → round its share was last set in
    missed: dict[str, tuple[float, float]] = {}  # workload → (share, ratio) of its last miss
    for round_ in range(1, max_rounds + 1):
        if plan.status not in HAS_FLEET or not plan.allocations:
            break
        checks, misses = replay(plan, round_)
        if not misses or round_ == max_rounds:
            records += checks
            break
        if stopped():
            records += checks
            return plan.model_copy(update={"status": SolveStatus.interrupted,
                                           "replay": tuple(records)})
        worst: dict[str, float | None] = {}
        for miss in misses:
            w, ratio = miss.check.workload, worst_ratio(miss.check)
            now = worst.get(w, math.inf)
            worst[w] = None if ratio is None or now is None else min(now, ratio)
        for w, ratio in worst.items():
            used = share.get(w, 1.0)
            share[w], since[w] = refit_share(used, ratio, missed.get(w)), round_
            if ratio is not None:
                missed[w] = (used, ratio)
        said = {id(m.check): (*(f"{gpu}×{tp}" for gpu, tp in sorted(m.configurations)),
                              f"every configuration of {m.check.workload} "
                              f"×{share[m.check.workload]:.3f}") for m in misses}
        records += [c.model_copy(update={"derated": said[id(c)]}) if id(c) in said else c
                    for c in checks]
        # every configuration of the workload: the configurations that served are what the
        # replay measured, and the others are priced by the same model that erred on this
        # traffic (de-rating only the ones that served moves the plan onto the next); each
        # from its original rate, by the workload's share (never a factor on a factor)
        table = original
        for r in sorted(set(since.values())):
            table = derate(table, {(row.workload, row.gpu, row.tp): share[row.workload]
                                   for row in original.rows if since.get(row.workload) == r}, r)
        again = (solve(table) if replan is None
                 else replan(table, plan, frozenset(worst)))
        if again.status not in HAS_FLEET or not again.allocations:
            break  # the de-rated program has no fleet: keep the last plan that had one
        plan = again
    return plan.model_copy(update={"replay": tuple(records)})


def replay_misses(plan: Plan) -> list[ReplayCheck]:
    """Checks of the plan's last round that miss."""
    if not plan.replay:
        return []
    last = max(c.round for c in plan.replay)
    return [c for c in plan.replay if c.round == last and not c.holds]
