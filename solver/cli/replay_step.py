"""The trace-replay step of ``fleetplan plan``: read the traces workloads name, run the
solve–replay loop (solver.solve.replay_loop) with the replay of solver.replay.plan_replay, and
say what it found."""

from __future__ import annotations

from collections.abc import Callable

import click

from models.capacity import CapacityTable
from models.plan import Plan, ReplayCheck, SolveStatus
from models.scenario import Scenario
from solver.cli.show import Col, table_lines
from solver.outputs.replay_words import (
    excluded_lines,
    gross_misses,
    short_windows,
    window_lines,
)
from solver.replay.plan_replay import Miss, ReplayCache, read_linked, replay_plan
from solver.replay.traces import Trace
from solver.solve.replay_loop import Replanner, plan_with_replay, replay_misses


def linked_workloads(scenario: Scenario) -> list[str]:
    """Workloads that name a trace (``arrival.trace``)."""
    return [w.name for w in scenario.workloads
            if w.arrival is not None and w.arrival.trace is not None]


def linked_traces(scenario: Scenario) -> dict[str, Trace]:
    """Each workload that names a trace → the trace, read."""
    return {w.name: read_linked(w.arrival.trace) for w in scenario.workloads
            if w.arrival is not None and w.arrival.trace is not None}


def not_replayed_note(scenarios: list[Scenario], command: str) -> str | None:
    """What ``command`` (``compare``, ``sweep``: many plans, none replayed) says when workloads
    name a trace: its costs are the capacity model's alone, and ``plan`` of the same scenario,
    which replays the traces and de-rates where they miss, may buy more; ``None`` when no
    workload names one."""
    names = sorted({name for sc in scenarios for name in linked_workloads(sc)})
    if not names:
        return None
    head = (f"trace replay: not run by {command}: {', '.join(f'`{n}`' for n in names)} "
            f"{'names a trace' if len(names) == 1 else 'name traces'} (arrival.trace), sized "
            "here by the capacity model alone; ")
    if all(sc.multi_period for sc in scenarios if linked_workloads(sc)):
        # `plan` over periods replays its first period's fleet without re-planning: "plan
        # replays them and may buy more" sent a new user to a plan that sized the same way
        return (head + "so does `fleetplan plan` over periods (it replays its first period's "
                "fleet, and re-plans nothing on it): replay a period's fleet with "
                "`fleetplan simulate SCENARIO --fleet plan.json --trace TRACE --period N "
                "--demand-scenario NAME` (docs/replay.md, \"Replay in the plan\")")
    return (head + "`fleetplan plan` replays them and may buy more for the same scenario "
            "(docs/replay.md, \"Replay in the plan\")")


def replayed_plan(scenario: Scenario, table: CapacityTable, solve: Callable[[CapacityTable], Plan],
                  quiet: bool, replan: Replanner | None = None,
                  user_stopped: Callable[[], bool] = lambda: False) -> Plan:
    """The plan of the solve–replay loop (the plain solve when no workload names a trace);
    ``replan`` re-plans the workloads that missed with the rest of the fleet kept. Status
    ``time_limit`` when any round's solve stopped at its time limit."""
    names = linked_workloads(scenario)
    if not names:
        return solve(table)
    traces = linked_traces(scenario)
    cache: ReplayCache = {}

    def replay(plan: Plan, round_: int) -> tuple[list[ReplayCheck], list[Miss]]:
        if not quiet:
            click.echo(f"round {round_}: replaying the traces of {', '.join(names)} at the "
                       "planned peak…", err=True)
        return replay_plan(plan, scenario, traces, round_, cache)

    stopped: list[int] = []

    def timed(plan: Plan) -> Plan:
        if plan.status is SolveStatus.time_limit:
            stopped.append(1)
        return plan

    plan = plan_with_replay(
        table, lambda t: timed(solve(t)), replay,
        replan=None if replan is None else lambda t, p, w: timed(replan(t, p, w)),
        stopped=user_stopped)
    # a round stopped by the clock makes the loop's fleet depend on the machine's load, even
    # when the last round finished: the plan says so as a time-limited plan does
    if stopped and plan.status in (SolveStatus.optimal, SolveStatus.feasible):
        plan = plan.model_copy(update={"status": SolveStatus.time_limit})
    return plan


def replayed_first_period(plan: Plan, first: Scenario, quiet: bool) -> Plan:
    """A plan over periods with its first period's fleet replayed (one round, no re-plan:
    the loop's de-rating re-plans one peak day, not the orders of a horizon) against the
    traces its workloads name, at that period's peak, intact and after every failure each
    must survive; ``first`` is the scenario that fleet was sized for. A miss is reported
    (status line, exit 1) as after a last round — an owned node added to a scenario made it a
    plan over periods and turned its replay off without a miss being possible."""
    names = linked_workloads(first)
    if not names or plan.status not in (SolveStatus.optimal, SolveStatus.feasible,
                                        SolveStatus.time_limit) or not plan.allocations:
        return plan
    if not quiet:
        click.echo(f"trace replay: the first period's fleet, replaying the traces of "
                   f"{', '.join(names)} at its peak (one round: a plan over periods is not "
                   "re-planned on what it measures)…", err=True)
    checks, _ = replay_plan(plan, first, linked_traces(first), 1)
    return plan.model_copy(update={"replay": tuple(checks)})


def status_note(plan: Plan) -> str:
    """What the status line adds: the replay's verdict (empty without one)."""
    if not plan.replay:
        return ""
    last = max(c.round for c in plan.replay)
    misses = replay_misses(plan)
    rounds = f"{last} round{'s' if last > 1 else ''}"
    if misses:
        return (f"; trace replay MISSES {len(misses)} SLO check(s) after {rounds}: "
                + ", ".join(f"{c.workload} {c.failure}" for c in misses))
    short = short_windows(plan)
    if short:
        return (f"; trace replay holds every SLO ({rounds}), but "
                + "; ".join(f"{w} only over {caveat}" for w, caveat in short.items())
                + ": weak evidence")
    return f"; trace replay holds every SLO ({rounds})"


def replay_lines(plan: Plan) -> list[str]:
    """The final round's checks, a table row each (none without a replay)."""
    if not plan.replay:
        return []
    last = max(c.round for c in plan.replay)
    out = [f"trace replay at the planned peak (round {last}):"]
    out += table_lines(["Workload", "Failure", Col("TTFT P95 [ms]", right=True),
                        Col("SLO [ms]", right=True), Col("Per-token P95 [ms]", right=True),
                        Col("SLO [ms]", right=True), Col("Requests", right=True), "Result"],
                       [check_cells(c) for c in plan.replay if c.round == last])
    out += [f"  window: {line}" for line in window_lines(plan)]
    out += [f"  {line}" for line in excluded_lines(plan)]
    out += [f"  warning: {line}" for line in gross_misses(plan)]
    replanned = sorted({c.workload for c in plan.replay if c.derated})
    if (replanned and plan.status in (SolveStatus.feasible, SolveStatus.time_limit)
            and plan.solver.bound is not None):
        out.append(f"re-planned {', '.join(replanned)} on de-rated rates with the rest of the "
                   "fleet kept; the gap is to the bound of the first solve (docs/replay.md, "
                   "\"Replay in the plan\")")
    return out


def check_cells(c: ReplayCheck) -> tuple[str, ...]:
    """One check as table cells: its P95s against the SLOs and its verdict."""
    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"

    return (c.workload, c.failure, ms(c.ttft_p95_ms), f"{c.ttft_slo_ms:,.0f}",
            ms(c.tpot_p95_ms), "—" if c.tpot_slo_ms is None else f"{c.tpot_slo_ms:g}",
            f"{c.requests:,}",
            c.verdict)
