"""What replay in the planning loop costs on the demo, and what it finds.

The demo's interactive workloads linked to the shared traces they were profiled from
(``chat`` → Azure conversation, ``code-completion`` → Azure code, ``agent`` → Mooncake
conversation; ``scale_to: peak_minute``), planned in one process:

1. ``fleetplan plan --no-replay``'s work: capacity table, one solve, the outputs written;
2. one round of replay of that plan (every workload with a trace, intact and after every
   failure it must survive);
3. the whole solve–replay loop (``plan`` without ``--no-replay``): one solve, replays, the
   re-plans of the workloads that missed (the rest of the fleet kept), outputs;
4. with ``--also-full``, the loop as it was before re-plans: every round a whole re-solve and a
   replay of every workload.

The scenario is loaded as ``fleetplan plan`` loads it (``solver.cli.common.load``): each linked
workload given the burst block measured from its trace and the window its replay replays, so
the capacity table sizes a traced workload on that window as ``plan`` does (``--model``: the
scenario as ``load_scenario`` gives it, sized on the queueing model, as this script did until
2026-12-04).

Prints the seconds of each, the replay's share of (1), the loop's wall time against (1) —
and, since (3) repeats (1)'s solve and a solve's time varies by tens of per cent on a loaded
machine, what the loop adds to it measured inside the loop (its replays and re-plans), against
(1) and against the rest of the loop (its table, first solve and outputs: (1)'s work, timed in
the same minutes as the addition) — and every round's checks. Each round of (3) is also
replayed, on the same plan and timed beside it, as it was replayed before 2026-12-02 (every
failure on its own, also those that lose the same replicas at the same instant, as a zone
holding one node of a workload and that node), and each re-plan is also run from the scaled
start alone (before its plus-one-node start, solver.solve.replan), on the same inputs and timed
beside it: the in-loop addition before and after in one run (the loop's wall time leaves both
out), and the script stops if the two replays' checks differ. Run from the repository root:
``.venv/bin/python benchmarks/replay_cost.py [--time-limit S] [--model]`` (several minutes: up to
three solves of the demo).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from inputs import demo_scenario
from models.loader import load_scenario
from models.scenario import Scenario
from models.workload import TraceLink
from solver.capacity.table import build_capacity_table
from solver.outputs.plan_dir import write_plan_outputs
from solver.replay.plan_replay import ReplayCache, read_linked, replay_plan, with_replay_windows
from solver.replay.trace_burst import with_trace_bursts
from solver.solve.assemble import solver_summary
from solver.solve.replan import replan_workloads
from solver.solve.replay_loop import plan_with_replay
from solver.solve.strategy import plan_scenario

TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "traces"
LINKS = {"chat": "AzureLLMInferenceTrace_conv.csv",
         "code-completion": "AzureLLMInferenceTrace_code.csv",
         "agent": "mooncake_conversation_trace.jsonl"}


def linked_demo(traces: Path, as_plan: bool = True) -> Scenario:
    """The demo with its interactive workloads naming the shared traces (``as_plan``: with
    the burst blocks and replayed windows ``fleetplan plan``'s loader gives them)."""
    sc = load_scenario(demo_scenario())
    workloads = []
    for wl in sc.workloads:
        if wl.name in LINKS and wl.arrival is not None:
            link = TraceLink(path=str(traces / LINKS[wl.name]))
            wl = wl.model_copy(update={"arrival": wl.arrival.model_copy(
                update={"trace": link})})
        workloads.append(wl)
    linked = sc.model_copy(update={"workloads": tuple(workloads)})
    return with_replay_windows(with_trace_bursts(linked)) if as_plan else linked


def main(argv: list[str]) -> None:
    """Print the timings and the checks."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--also-full", action="store_true",
                        help="also run the loop that solves the whole program again each round "
                             "and replays every workload (the loop before 2026-12-02)")
    parser.add_argument("--model", action="store_true",
                        help="size the traced workloads on the queueing model (the scenario as "
                             "load_scenario gives it), not on their replayed windows as plan does")
    args = parser.parse_args(argv)
    if not args.traces.is_dir():
        sys.exit(f"no traces at {args.traces}")
    sc = linked_demo(args.traces, as_plan=not args.model)
    out = Path(tempfile.mkdtemp())

    def solve(table: object) -> object:
        return plan_scenario(sc, table, time_limit_s=args.time_limit)  # type: ignore[arg-type]

    began = time.perf_counter()
    table = build_capacity_table(sc)
    plan = plan_scenario(sc, table, time_limit_s=args.time_limit)
    write_plan_outputs(plan, sc, out / "once")
    once_s = time.perf_counter() - began

    traces = {w.name: read_linked(w.arrival.trace) for w in sc.workloads
              if w.arrival is not None and w.arrival.trace is not None}
    began = time.perf_counter()
    checks, misses = replay_plan(plan, sc, traces, 1)
    replay_s = time.perf_counter() - began

    rounds: list[float] = []

    cache: ReplayCache = {}
    cache_before: ReplayCache = {}
    rounds_before: list[float] = []

    def timed_replay(p: object, r: int) -> object:
        t = time.perf_counter()
        result = replay_plan(p, sc, traces, r, cache)  # type: ignore[arg-type]
        rounds.append(time.perf_counter() - t)
        # the same round as before 2026-12-02 (each failure replayed on its own, also those
        # losing the same replicas), timed beside it on the same plan; same checks or a bug
        t = time.perf_counter()
        before = replay_plan(p, sc, traces, r, cache_before,  # type: ignore[arg-type]
                             share_same_loss=False)
        rounds_before.append(time.perf_counter() - t)
        if before[0] != result[0]:
            sys.exit(f"round {r}: replaying failures that lose the same replicas once changed "
                     "a check")
        return result

    replans: list[float] = []
    replans_before: list[float] = []
    replan_costs: list[tuple[float, float]] = []

    def replan(t: object, previous: object, workloads: frozenset[str]) -> object:
        began = time.perf_counter()
        again = replan_workloads(sc, t, previous, workloads, solve,  # type: ignore[arg-type]
                                 time_limit_s=args.time_limit)
        replans.append(time.perf_counter() - began)
        # the same re-plan from the scaled start alone (before the plus-one-node start), timed
        # beside it on the same inputs; the loop goes on with the one above
        began = time.perf_counter()
        before = replan_workloads(sc, t, previous, workloads, solve,  # type: ignore[arg-type]
                                  time_limit_s=args.time_limit, plus_one_node=False)
        replans_before.append(time.perf_counter() - began)
        replan_costs.append((before.cost.per_month, again.cost.per_month))
        return again

    began = time.perf_counter()
    table = build_capacity_table(sc)
    looped = plan_with_replay(table, solve, timed_replay,  # type: ignore[arg-type]
                              replan=replan)  # type: ignore[arg-type]
    write_plan_outputs(looped, sc, out / "loop")
    loop_s = (time.perf_counter() - began - sum(rounds_before)
              - sum(replans_before))  # the loop as plan runs it
    full = None
    if args.also_full:
        began = time.perf_counter()
        full = plan_with_replay(build_capacity_table(sc), solve,  # type: ignore[arg-type]
                                lambda p, r: replay_plan(p, sc, traces, r))  # type: ignore[arg-type]
        write_plan_outputs(full, sc, out / "full")
        full_s = time.perf_counter() - began

    print(f"plan --no-replay (table, one solve, outputs): {once_s:.1f} s "
          f"({plan.status.value}, solver {plan.solver.seconds:.1f} s)")
    print(f"one round of replay ({len(checks)} checks, {len(misses)} missing): {replay_s:.1f} s "
          f"= {replay_s / once_s:.1%} of plan --no-replay")
    added_s = sum(rounds) + sum(replans)
    rest_s = loop_s - added_s
    before_s = sum(rounds_before) + sum(replans_before)
    print(f"the loop: {loop_s:.1f} s = {loop_s / once_s:.2f}× plan --no-replay; "
          f"{len(rounds)} round(s) of replay, {sum(rounds):.2f} s in all "
          f"({' + '.join(f'{r:.2f}' for r in rounds)}); {len(replans)} re-plan(s), "
          f"{sum(replans):.2f} s in all; replays + re-plans = {added_s:.2f} s = "
          f"{added_s / once_s:.1%} of plan --no-replay, {added_s / rest_s:.1%} of the rest of the "
          f"loop ({rest_s:.1f} s: its table, first solve and outputs, what plan --no-replay "
          f"does, timed in the same minutes)")
    print(f"  the same rounds replayed as before (every failure on its own): "
          f"{sum(rounds_before):.2f} s ({' + '.join(f'{r:.2f}' for r in rounds_before)}); "
          f"the same re-plans from the scaled start alone: {sum(replans_before):.2f} s "
          f"({' + '.join(f'{r:.2f}' for r in replans_before)}; cost "
          f"{', '.join(f'{b:,.0f} vs {a:,.0f}' for b, a in replan_costs)}); "
          f"replays + re-plans as before = {before_s:.2f} s = {before_s / once_s:.1%} "
          f"of plan --no-replay, {before_s / rest_s:.1%} of the rest of the loop")
    print(f"cost: {plan.cost.per_month:,.0f} {plan.cost.currency}/month without replay, "
          f"{looped.cost.per_month:,.0f} after the loop ({looped.status.value}, "
          f"{solver_summary(looped.solver)})")
    if full is not None:
        full_rounds = max(c.round for c in full.replay)
        print(f"the loop with whole re-solves: {full_s:.1f} s = {full_s / once_s:.2f}× plan "
              f"--no-replay; {full_rounds} round(s); {full.cost.per_month:,.0f}/month "
              f"({full.status.value}), misses in its last round: "
              f"{sum(not c.holds for c in full.replay if c.round == full_rounds)}")
    for c in looped.replay:
        print(f"  round {c.round} {c.workload:<16} {c.failure:<34} "
              f"TTFT {c.ttft_p95_ms or 0:,.0f}/{c.ttft_slo_ms:,.0f} "
              f"per-token {c.tpot_p95_ms or 0:.1f}/{c.tpot_slo_ms:g} "
              f"{'holds' if c.holds else 'MISSES'}")


if __name__ == "__main__":
    main(sys.argv[1:])
