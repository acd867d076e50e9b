"""Plan a scenario: capacity table → program data → program → solve → a typed :class:`Plan`.

The solve is one pipeline on one clock (:class:`~solver.solve.clock.Deadline`) with one
incumbent (:class:`~solver.solve.incumbent.Incumbent`, where a fleet is checked against every row
and the status and gap are decided). With shared nodes and HiGHS it is one chain, in order:

- the **stages** of :func:`shared_stages` (the LP, the starts it points to) and one round of
  neighbourhoods of the incumbent (:mod:`solver.solve.stages`), each within its share of the
  limit — once the one-group stage is stopped by its budget, all of them within the first half
  (:data:`~solver.solve.stages.JOINT_SHARE`), the rest kept for the joint solve;
- the **joint solve** — HiGHS on the whole program — from the incumbent for the time left;
- where the LP holds many replicas per slot and the joint solve found a fleet of its own
  (held, or within a target gap of the fleet held), the **polish**: the ``hours`` stage again
  around it, in the seconds the joint solve leaves it (:func:`_after_joint`);
- once the fleet is proven, the **canonical** allocation of its nodes (the fewest replicas
  they hold the program with, found from no start), so that a proven plan does not depend on
  which of the fleets of the same cost the search happened to end on.

Nothing runs beside the chain, so nothing in it depends on the timing of threads: a plan
proven within its limit is the same from run to run. The plan's solver report lists every
stage (``solver.stages``: name, seconds, cost and bound after). CBC (``--solver cbc``) takes no
start and no callback: its stages run first, then CBC in the time left. Dedicated pools are
solved workload by workload (:mod:`solver.solve.decompose`). The solved program becomes a plan
in :mod:`solver.solve.assemble`; an infeasible one is explained by
:mod:`solver.solve.diagnose`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pulp

from models.capacity import CapacityTable
from models.plan import (
    BUILD_STAGE,
    Cost,
    Plan,
    Shortfall,
    Slice,
    SolverReport,
    SolverStage,
    SolveStatus,
)
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import ProgramData, build_program_data
from solver.program.values import objective_of
from solver.program.variables import BuildStopped, Program
from solver.solve.aggregate import aggregated_start
from solver.solve.assemble import bound_within_cost, complete_plan, scenario_fingerprint
from solver.solve.backends import SolveOutcome, solve
from solver.solve.budget import solve_within_budget
from solver.solve.clock import Deadline
from solver.solve.decompose import solve_decomposed
from solver.solve.diagnose import (
    DIAGNOSIS_STAGE,
    diagnose,
    unservable,
    unservable_shortfall,
    without_workloads,
)
from solver.solve.highs import Model, Progress, RunResult, Vector, model_of, run
from solver.solve.incumbent import Incumbent
from solver.solve.neighbourhood import improve_start
from solver.solve.stages import (
    GROUP_ABOVE_SLICES,
    GROUP_COUNTS,
    MIN_STAGE_S,
    SLICE_LEAST_S,
    Context,
    Stage,
    canonical,
    capacity_bound,
    dedicated,
    elastic,
    few_replicas,
    finer_groups_pay,
    finer_groups_skipped,
    greedy,
    grouped,
    hours,
    lp,
    lp_support,
    many_replicas,
    run_stages,
    shrink,
    spot,
    support,
    variables_bound,
)

#: What a progress report says: where the solve stands, and the stages running.
OnProgress = Callable[[Progress, str], None]
#: Share of the limit the ``hours`` stage may use where the LP holds many replicas per slot
#: (it ends sooner once a pass over the slices finds nothing cheaper) [1].
HOURS_SHARE = 0.3
#: Where the LP holds many replicas per slot, the stages' fleet within this many target gaps of
#: the bound before the joint solve (the LP's) is held back from HiGHS until its bound proves it
#: (:func:`_joint`): small ×25 3.9 %, medium ×25 3.0 % and large ×100 2.2 % above the LP, held
#: back; large ×25 11.4 %, handed over (benchmarks/results/scale.md, "Run I") [1].
NEAR_GAPS = 5.0
#: Share of the limit the joint solve leaves to the polish once it has found a fleet to polish,
#: with one slice's least time (:func:`polish_s`): 4.5 s of a 60-s limit; the pass at small
#: ×25 takes 0.6–0.8 CPU-s, 3.3 s of wall time at load 8 [1].
POLISH_SHARE = 0.05
#: The joint solve's own fleet is polished where it costs at most this many target gaps more
#: than the fleet held, though it is not held (:func:`_near_the_fleet_held`): at small ×25 the
#: ``hours`` pass around each of HiGHS's fleets within 1 % of the stages' 1,150,164 (1,159,987
#: down to 1,149,762; one quiet run) ended on 1,145,524–1,145,998, around the stages' fleet
#: itself on nothing cheaper; around fleets further above it on 1,147,054–1,176,157
#: (benchmarks/results/scale.md, "Run L") [1].
POLISH_WITHIN_GAPS = 1.0
#: The polish's slices run while this much is left [s] (before the joint solve ``hours`` ends
#: with less than one slice's least time left, those seconds the joint solve's; after it they
#: are nobody's): on a loaded machine HiGHS found its fleet with 1.4 s left in 3 of 10 runs
#: at small ×25, where a pass's slices take ~0.1 s of wall time each (benchmarks/results/scale.md,
#: "Run L").
POLISH_LEAST_LEFT_S = MIN_STAGE_S
#: Rounds of the elastic and shrink neighbourhoods around new incumbents, at most [1].
ROUNDS = 1
#: Share of the assembly reserve a solve may still overrun before it is left behind [1].
GRACE = 0.25
#: The greedy fleet, a fleet for a stop at once: milliseconds on the demo, ~0.17 s of CPU at
#: the largest benchmark size; started with 0.05 s left, not the 0.2 s the other stages need
#: (under 4 s of limit it never ran, so a loaded machine could leave a 2-s demo plan with no
#: fleet at all).
GREEDY = Stage("greedy", 0.05, greedy, least_s=0.05)


def plan_scenario(
    scenario: Scenario,
    capacity_table: CapacityTable | None = None,
    solver: str = "highs",
    time_limit_s: float = 60.0,
    gap: float = 0.01,
    *,
    deadline: Deadline | None = None,
    on_progress: OnProgress | None = None,
) -> Plan:
    """The cheapest fleet for a scenario, or the diagnosis of why there is none.

    ``deadline`` (default: ``time_limit_s`` from now) is the clock of the whole call; stopping it
    (a signal handler does) ends the solve with the best verified fleet, status
    ``interrupted``. ``on_progress`` is told where the solve stands every few tenths of a second.
    """
    deadline = deadline or Deadline(time_limit_s)
    if capacity_table is None:
        from solver.capacity.table import build_capacity_table

        capacity_table = build_capacity_table(scenario, scenario.gpus_sold_or_held())
    data = build_program_data(scenario, capacity_table)

    def solve_on(d: ProgramData, clock: Deadline,
                 told: OnProgress | None) -> tuple[Program, SolveOutcome]:
        if not d.share_nodes:  # dedicated pools: one sub-program per workload
            return solve_dedicated(d, solver, clock, gap, told)
        return solve_shared(d, solver, time_limit_s, gap, deadline=clock, on_progress=told)

    def solved(d: ProgramData, clock: Deadline, told: OnProgress | None
               ) -> tuple[Program, SolveOutcome, tuple[Shortfall, ...]]:
        if d.monthly_budget is None:
            return (*solve_on(d, clock, told), ())
        # searched without its budget row, judged against it (solver.solve.budget)
        budgeted = solve_within_budget(d, solve_on, clock, gap, solver, told)
        return budgeted.program, budgeted.outcome, budgeted.diagnosis

    slices = tuple(Slice(name=b.name, hours=b.hours) for b in scenario.policy.time_blocks)

    def plan_of(outcome: SolveOutcome) -> Plan:
        return Plan(
            scenario=scenario.name, status=outcome.status, solver=outcome.report,
            cost=Cost(per_month=0.0, per_million_tokens=None, per_million_output_tokens=None,
                      currency=scenario.policy.currency),
            slices=slices, fingerprint=scenario_fingerprint(scenario),
        )

    culprits = unservable(data)
    if culprits:
        return _without_unservable(scenario, data, culprits, solved, plan_of, deadline, solver,
                                   on_progress)
    program, outcome, not_found = solved(data, deadline, on_progress)
    base = plan_of(outcome)
    if not outcome.has_solution:
        if outcome.status is SolveStatus.infeasible:
            # the budget alone out of reach: the search said by how much (solver.solve.budget)
            if not not_found:
                tell_diagnosing(on_progress, deadline)
            shortfalls = not_found or diagnose(
                scenario, data, solver=solver,
                time_limit_s=max(deadline.left(), 1.0),
                shown_limit_s=deadline.given_s)
            return base.model_copy(update={"diagnosis": shortfalls})
        return base.model_copy(update={"diagnosis": not_found})
    return bound_within_cost(complete_plan(base, scenario, program, capacity_table))


def tell_diagnosing(on_progress: OnProgress | None, clock: Deadline) -> None:
    """Tell ``on_progress`` the diagnosis runs now (no fleet, no bound): the progress lines
    that follow, a heartbeat's too, carry its stage (:data:`DIAGNOSIS_STAGE`)."""
    if on_progress is not None:
        on_progress(Progress(clock.elapsed(), None, None), DIAGNOSIS_STAGE)


#: Why the search of the workloads left beside one no configuration serves was stopped.
REST_FOUND = "the other workloads have a fleet"


def _without_unservable(
    scenario: Scenario, data: ProgramData, culprits: tuple[str, ...],
    solved: Callable[[ProgramData, Deadline, OnProgress | None],
                     tuple[Program, SolveOutcome, tuple[Shortfall, ...]]],
    plan_of: Callable[[SolveOutcome], Plan], deadline: Deadline, solver: str,
    on_progress: OnProgress | None,
) -> Plan:
    """The plan of a scenario some of whose workloads no configuration serves
    (:func:`~solver.solve.diagnose.unservable`): infeasible, whatever the fleet. The rest is
    planned as a plan would be, on a twin of the plan's clock stopped at its first fleet: where
    it has one, the diagnosis names the culprits alone; where it has none, it adds the rest's
    own diagnosis. Diagnosed together, the culprits' forced slack dwarfed every other row of
    the elastic program, and a 20-s plan named two workloads short that a plan without the
    culprit carries (benchmarks/results/trust.md, "Diagnosis a planner can act on")."""
    named = tuple(unservable_shortfall(data, w) for w in culprits)
    rest = without_workloads(data, culprits)
    if not rest.workloads:
        return plan_of(SolveOutcome(SolveStatus.infeasible,
                                    SolverReport(name=solver, seconds=deadline.elapsed()),
                                    False)).model_copy(update={"diagnosis": named})
    clock = deadline.twin()

    def told(seen: Progress, stages: str) -> None:
        if seen.cost is not None and not clock.stopped:
            clock.stop(REST_FOUND)  # a fleet for the rest: that is all the diagnosis asks
        if on_progress is not None:  # the rest's fleet is not the plan's: no cost shown
            on_progress(Progress(seen.seconds, None, None), stages)

    _, outcome, not_found = solved(rest, clock, told)
    others = ", ".join(f"`{w.name}`" for w in rest.workloads)
    if outcome.has_solution:
        said: tuple[Shortfall, ...] = (Shortfall(
            requirement="others", amount=0.0, unit="",
            message=f"without {' and '.join(f'`{w}`' for w in culprits)}, the other "
                    f"workloads ({others}) are met: a fleet was found for them (plan them "
                    "alone for the cheapest)"),)
    elif outcome.status is SolveStatus.infeasible:
        if not not_found:
            tell_diagnosing(on_progress, deadline)
        said = not_found or diagnose(scenario, rest, solver=solver,
                                     time_limit_s=max(deadline.left(), 1.0),
                                     shown_limit_s=deadline.limit_s)
    else:  # stopped by the clock (or the user) before the rest had a fleet
        said = (*not_found, Shortfall(
            requirement="solver", amount=0.0, unit="",
            message=f"no fleet was found for the other workloads ({others}) within the time "
                    "limit, so whether they can be met without "
                    f"{' and '.join(f'`{w}`' for w in culprits)} is not known; raise "
                    "--time-limit"))
    report = outcome.report.model_copy(update={
        "seconds": deadline.elapsed(), "objective": None, "bound": None, "gap": None})
    return plan_of(SolveOutcome(SolveStatus.infeasible, report, False)).model_copy(
        update={"diagnosis": (*named, *said)})


def shared_stages(data: ProgramData) -> tuple[Stage, ...]:
    """The stages before the joint solve, in order: the LP relaxation, then the starts its
    solution points to (none where it did not fit in its time).

    Where the LP holds few replicas per slot (a node-rounding puzzle: the ×1 benchmark sizes,
    the demo), hourly programs start from grouped slices and programs of few slices from the
    dedicated-pool fleet and the static fleet at the day's peak, the cheaper kept (a grouped
    stage of more than one group stopped by its budget ends the grouped stages, and ``spot``
    runs in the place of the finer ones: :func:`~solver.solve.stages.finer_groups_pay`); then —
    except on programs of a few slices, whose two starts need no more (on the demo the LP's
    support found nothing in 3 of 3 runs, and took ~1 s) — the LP's support. Where it holds
    many (×25, ×100), the LP's support first, for up to a quarter of the limit: grouping slices
    there loses the hour-by-hour capacity that is then worth more; the stage ends on its own
    once its restriction is solved (medium ×25: ~4 s), and at large ×25 it kept improving
    (983,502 → 958,829 from 2 to 15 s) where the joint solve found nothing in 42 s. Then, there,
    ``hours`` (up to :data:`HOURS_SHARE` of the limit): the incumbent re-planned slice by
    slice, its reserved fleet held — the hourly node counts the joint solve does not round
    well at that size.
    """
    stages = [Stage("lp", 0.5, lp), Stage("lp-support", 0.25, lp_support, many_replicas),
              Stage("hours", HOURS_SHARE, hours, many_replicas)]
    slices = len(data.slices)
    if slices > GROUP_ABOVE_SLICES:
        counts = [n for n in GROUP_COUNTS if n < slices]
        stages += [Stage(f"grouped-{n}", 0.15, grouped(n), finer_groups_pay) for n in counts]
        stages.append(Stage("spot", 0.05, spot, finer_groups_skipped(counts[-1])))
    elif slices > 1:
        stages += [Stage("dedicated", 0.25, dedicated, few_replicas),
                   Stage("grouped-1", 0.3, grouped(1), few_replicas)]
    if not _few_slices(data):
        stages.append(Stage("lp-support", 0.25, lp_support, few_replicas))
    return tuple(stages)


def neighbourhoods(data: ProgramData) -> tuple[Stage, ...]:
    """The improvement steps around the incumbent, where the LP holds few replicas per slot:
    the slots the LP or the incumbent use (not on programs of a few slices: see
    :func:`shared_stages`), then (several slices) the reserved base held or shrunk. With many
    replicas per slot there are none: ``support`` found at most $12 a month in the six runs at
    ×25 and ×100 whose stages were recorded (benchmarks/results/scale.md, "At scale"), and its
    seconds go to ``lp-support``."""
    return (*(() if _few_slices(data) else (Stage("support", 0.15, support, few_replicas),)),
            *((Stage("elastic", 0.05, elastic, few_replicas),
               Stage("shrink", 0.15, shrink, few_replicas)) if len(data.slices) > 1 else ()))


def _few_slices(data: ProgramData) -> bool:
    """A program of a few slices (2 to :data:`GROUP_ABOVE_SLICES`): it starts from the
    dedicated-pool and the static fleet."""
    return 1 < len(data.slices) <= GROUP_ABOVE_SLICES


def solve_shared(
    data: ProgramData, solver: str = "highs", time_limit_s: float = 60.0, gap: float = 0.01,
    *, deadline: Deadline | None = None, on_progress: OnProgress | None = None,
) -> tuple[Program, SolveOutcome]:
    """Shared node pools: with HiGHS, one chain on one thread — the stages, then the joint
    solve from their best fleet for the time left, then (proven) the canonical allocation of
    the fleet's nodes. With CBC, :func:`solve_shared_cbc`.

    Nothing runs beside the chain: every step starts from what the steps before it found, so
    a plan proven within its limit is the same whatever the machine's timing (two solves
    exchanging fleets gave the demo the same cost but different allocations from run to run).
    The chain runs in a thread of its own so that a signal stops it through the clock while
    the caller waits, and so that every HiGHS solve in it has the same thread count."""
    deadline = deadline or Deadline(time_limit_s)
    if solver != "highs":
        return solve_shared_cbc(data, solver, deadline, gap, on_progress)
    program, model, build_s = _build(data, deadline, shared_two_nodes=True)
    if model is None:
        return program, _unbuilt(program, deadline, build_s, "highs")
    incumbent = Incumbent(model, deadline, gap, on_progress)
    incumbent.raise_bound(capacity_bound(program), "capacity")
    incumbent.record(BUILD, build_s)
    ctx = Context(program, model, incumbent, deadline, gap)
    run_stages(ctx, (GREEDY,))

    def chain() -> RunResult | None:
        run_stages(ctx, shared_stages(data))
        _rounds(ctx, neighbourhoods(data))
        if ctx.halted():
            return None
        result = _recorded(ctx, JOINT, lambda: _joint(ctx, JOINT))
        ctx.until_s = None  # kept for the joint solve, which has ended
        _after_joint(ctx)
        return result

    results = _in_threads(ctx, {JOINT: chain}, first=(), stop=lambda name, result: None)
    ended = [r for r in results.values() if isinstance(r, RunResult)]
    return program, _outcome(incumbent, ended)


#: Names of the program's build, the joint solve, the proven fleet's re-plan slice by slice
#: and the canonical allocation in the plan's stages.
BUILD = BUILD_STAGE
JOINT = "joint"
POLISH = "polish"
CANONICAL = "canonical"


def _near_the_fleet_held(ctx: Context) -> bool:
    """The joint solve has found a fleet of its own (:attr:`Context.joint_x`, held or not)
    within :data:`POLISH_WITHIN_GAPS` target gaps of the fleet held."""
    _, held = ctx.incumbent.fleet()
    return (ctx.joint_x is not None and held is not None
            and ctx.model.cost_of(ctx.joint_x) <= held * (1 + POLISH_WITHIN_GAPS * ctx.gap))


def _worth_polishing(ctx: Context) -> bool:
    """The LP holds many replicas per slot and the joint solve found a fleet of its own near
    the fleet held (no ``hours`` pass has been made around it)."""
    return many_replicas(ctx) and _near_the_fleet_held(ctx)


def _polish(ctx: Context, budget: float) -> None:
    """The ``hours`` stage around the joint solve's own fleet, whether or not it is the fleet
    held: what it finds below the fleet held is offered to the incumbent as it comes."""
    if ctx.joint_x is None:
        return
    side = ctx.incumbent.around(ctx.joint_x, JOINT)
    if side is not None:
        hours(dataclasses.replace(ctx, incumbent=side), budget, POLISH_LEAST_LEFT_S)


def polish_s(ctx: Context) -> float:
    """Seconds the joint solve leaves to the polish once it has found a fleet to polish, where
    the LP holds many replicas per slot: :data:`POLISH_SHARE` of the limit and one slice's
    least time (:data:`~solver.solve.stages.SLICE_LEAST_S`) [s]."""
    return POLISH_SHARE * ctx.deadline.limit_s + SLICE_LEAST_S


def _after_joint(ctx: Context) -> None:
    """After the joint solve, with time left: where the LP holds many replicas per slot and
    the joint solve found a fleet of its own near the fleet held (:func:`_worth_polishing`),
    the ``hours`` stage again around that fleet (``polish``: each slice re-solved under the
    rest of it); then, the fleet proven, the canonical allocation of its nodes.

    HiGHS ends at the first fleet it proves within the gap, and which fleet that is, is its
    path's: at small ×25 the plan proved 1,147,736 in 35–46 s where the cold solve proved
    1,147,215. One pass slice by slice around the proven fleet took it to 1,145,930 in 0.8 s,
    and around HiGHS's unproven 1,149,762 (a loaded machine, 27.5 CPU-s) to 1,145,853 in 0.8
    CPU-s; HiGHS again from the proven fleet, cutoff below its cost and a gap of 0.25 % or
    0.5 %, found nothing in 20 s; freeing one GPU type's reserved nodes across its zones,
    nothing (benchmarks/results/scale.md, "Run J"). The pass starts from HiGHS's own fleet even
    where that is dearer than the fleet held: on a loaded machine HiGHS found nothing below the
    stages' 1,150,164 in some runs (the plan was the stages' fleet, dearer than the cold
    solve), and the stages' fleet is one ``hours`` has already ended on, where HiGHS's fleets
    within 1 % above it were each one pass from 1,145,524–1,145,998 (:data:`POLISH_WITHIN_GAPS`;
    benchmarks/results/scale.md, "Run L"). The joint solve leaves the polish its seconds
    (:func:`polish_s`) only once it has found such a fleet (:func:`_joint`): at medium and
    large ×25 from the greedy start it finds none near, and runs to the limit as before. A
    pass's slices end on their gap (:data:`~solver.solve.stages.SLICE_GAP`), not the clock, so
    a plan proven within its limit stays the same from run to run. Few replicas per slot (the
    ×1 sizes, the demo): the canonical allocation alone, as before."""
    if ctx.deadline.expired():
        return
    run_stages(ctx, (Stage(POLISH, HOURS_SHARE, _polish, _worth_polishing),))
    if ctx.incumbent.proven() and not ctx.deadline.expired():
        run_stages(ctx, (Stage(CANONICAL, 1.0, canonical),))


def _build(data: ProgramData, deadline: Deadline, shared_two_nodes: bool = False,
           ) -> tuple[Program, Model | None, float]:
    """The program, its HiGHS model (``None``: the clock ran out, or the user stopped the plan,
    before it was built) and the seconds the build took.

    ``shared_two_nodes``: the HiGHS chain's joint program carries the two-nodes cut with shared
    nodes too (:func:`~solver.program.cuts.add_two_nodes_cut`); the grouped stages build their
    own programs without it (:func:`~solver.solve.stages.grouped`), as it slowed their search
    (benchmarks/results/demo-proof.md, "A tighter program for the demo").

    The build is part of the time limit and takes seconds at the largest sizes (large ×1:
    ~0.8 s of CPU, twice that in wall time on a loaded machine), so it asks the clock as it
    goes: a 1-s limit is honoured however long the build would have taken. A stopped build
    returns a program holding its variables alone: enough for a bound, never solved."""
    started = deadline.elapsed()
    try:
        program = build_program(data, stop=deadline.expired, shared_two_nodes=shared_two_nodes)
        return program, model_of(program, stop=deadline.expired), deadline.elapsed() - started
    except BuildStopped as stopped:
        partial = Program(pulp.LpProblem("fleet", pulp.LpMinimize), stopped.variables, data)
        return partial, None, deadline.elapsed() - started


def _unbuilt(program: Program, deadline: Deadline, build_s: float, solver: str) -> SolveOutcome:
    """The outcome of a solve whose program was not built in time: no fleet, status
    ``time_limit`` (``interrupted`` if the user stopped it), the bound of the variables made
    (:func:`~solver.solve.stages.variables_bound`), the build recorded as the one stage."""
    bound = variables_bound(program.data, program.v)
    status = SolveStatus.interrupted if deadline.stopped else SolveStatus.time_limit
    report = SolverReport(name=solver, seconds=deadline.elapsed(), gap=None, bound=bound,
                          objective=None, stages=(SolverStage(
                              name=BUILD, seconds=build_s, cost_after=None, bound_after=bound),))
    return SolveOutcome(status, report, False)


def _recorded(ctx: Context, name: str, solve: Callable[[], RunResult]) -> RunResult:
    """Run a joint solve and record it as a stage; one still running when the solve is
    abandoned (past the deadline) is recorded then, with what the incumbent holds."""
    started = ctx.deadline.elapsed()
    done = threading.Event()

    def record() -> None:
        if not done.is_set():
            done.set()
            ctx.incumbent.record(name, ctx.deadline.elapsed() - started)

    ctx.on_abandon.append(record)
    try:
        return solve()
    finally:
        record()


def _in_threads(ctx: Context, tasks: dict[str, Callable[[], object]], first: tuple[str, ...],
                stop: Callable[[str, object], None]) -> dict[str, object]:
    """Run ``tasks`` in threads of their own; when one named in ``first`` ends, ``stop`` is told
    (it may halt the others); wait for all until the deadline (plus a grace). Threads still
    running then are left behind (abandoned: they stop at their next callback, or on HiGHS's own
    time limit, which is the deadline). They are not daemons: the process waits for them
    before it exits, as HiGHS aborts the process when it exits with a solve running. Exceptions
    are re-raised here."""
    results: dict[str, object] = {}
    errors: list[BaseException] = []
    ended = threading.Event()

    def runner(name: str, task: Callable[[], object]) -> None:
        try:
            results[name] = task()
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
        finally:
            if name in first:
                stop(name, results.get(name))
            ended.set()

    # each thread in a copy of the caller's context: the solver threads it names (THREADS) hold
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(runner, n, t),
                                daemon=False)
               for n, t in tasks.items()]
    for t in threads:
        t.start()
    for t in threads:
        _wait(t, ctx.deadline)
    if any(t.is_alive() for t in threads):
        for record in ctx.on_abandon:
            record()
        ctx.abandoned.set()  # overran: what they found came through their callbacks
    if errors:
        raise errors[0]
    return results


def _wait(thread: threading.Thread, deadline: Deadline) -> None:
    """Join ``thread`` until it ends or the deadline (plus a grace) passes, in short joins so a
    signal handler runs in this thread meanwhile. A solve that overruns — HiGHS checks its clock
    between root cut rounds, seconds apart on a loaded machine — is left to end on its own: what
    it found has already come through its callbacks."""
    limit = deadline.limit_s - deadline.reserve_s * (1 - GRACE)
    while thread.is_alive() and deadline.elapsed() < limit:
        thread.join(0.05)


def _joint(ctx: Context, name: str) -> RunResult:
    """HiGHS on the whole program for the time left; what it finds and proves goes to the
    incumbent as it comes (its improving-solution and interrupt callbacks).

    Where the LP holds few replicas per slot HiGHS starts from the incumbent (in an hourly
    program, handed once its root is done: :func:`_after_root`). Where it holds
    many and the stages' fleet is within :data:`NEAR_GAPS` target gaps of the bound (the
    LP's), the fleet stays the plan's but HiGHS starts from the greedy fleet, and is handed
    the stages' fleet only once its bound proves it (:func:`~solver.solve.highs.run`'s
    ``when_proven``, so that it then ends at once): branch and bound can close such a gap
    within the minute, and HiGHS's searches around its incumbent (RINS, local search), given
    that fleet — which none of the stages' neighbourhoods improves — search the same place: at
    small ×25 over 12 HiGHS seeds the greedy start proved 1 % within 60 CPU-s at 9, the
    stages' fleet at 5 (benchmarks/results/scale.md, "Run I"). Further from the bound (large ×25)
    the minute ends at the root, whose bound the stages' fleet may help (one pair: 866.0 k
    with it, 863.1 k without), and the fleet is handed over after HiGHS's first root cut
    rounds (``start_after_cuts``): given before them it slowed them several-fold at ×100.
    With many replicas per slot, once HiGHS has found a fleet of its own (not one it was
    handed: :func:`_own`) near the fleet held it stops with :func:`polish_s` left, for the
    polish (:func:`_after_joint`)."""
    many = many_replicas(ctx)
    leave_s = polish_s(ctx) if many else 0.0
    gap = ctx.incumbent.gap()
    held_back = many and gap is not None and gap <= NEAR_GAPS * ctx.gap
    _, fleet = ctx.incumbent.newer_than(0)
    start = ctx.first_x if held_back else fleet
    handed = [x for x in (start, fleet if held_back else None) if x is not None]

    def found(x: Vector) -> None:
        ctx.incumbent.offer(x, name)
        _own(ctx, x, handed)

    ctx.incumbent.running(name, True)
    try:
        result = run(ctx.model, ctx.deadline, ctx.deadline.left(), ctx.gap, start=start,
                     when_proven=fleet if held_back else None,
                     start_after_cuts=many and not held_back,
                     start_after_root=_after_root(ctx, many),
                     on_progress=ctx.incumbent.progress,
                     on_solution=found,
                     threads=joint_threads(ctx.program.data),
                     halt=lambda: (ctx.halt.is_set() or ctx.abandoned.is_set()
                                   or (ctx.deadline.left() < leave_s
                                       and _near_the_fleet_held(ctx))))
        if result.x is not None:
            found(result.x)
        ctx.incumbent.raise_bound(result.bound, name)
    finally:
        ctx.incumbent.running(name, False)
    return result


#: HiGHS threads of the joint solve on programs of a few slices (the demo's kind): HiGHS 1.16
#: runs a search worker per thread, and from the stages' fleet one worker proved 1 % in a third
#: to two thirds of the CPU seconds two took on the demo and the demo's peaks ×0.8 and ×1.3,
#: over HiGHS seeds 0–2 (benchmarks/results/demo-proof.md, "The demo's joint solve on one thread")
#: [1].
FEW_SLICES_JOINT_THREADS = 1


def joint_threads(data: ProgramData) -> int | None:
    """HiGHS threads the joint solve asks for: :data:`FEW_SLICES_JOINT_THREADS` on programs of
    a few slices, else ``None`` (the planner's, as every other solve; the pool is resized for
    the count asked: :func:`~solver.solve.pool.highs_pool`)."""
    return FEW_SLICES_JOINT_THREADS if _few_slices(data) else None


def _after_root(ctx: Context, many: bool) -> bool:
    """Whether the joint solve hands the stages' fleet to HiGHS only once its root is done
    (:class:`~solver.solve.highs._AfterRoot`): hourly programs whose LP holds few replicas per
    slot (large ×1's root from no start ended higher in 3 of 3 seeds than from the fleet;
    benchmarks/results/scale.md, "Run R"). Programs of few slices (the demo) keep the start before
    the search."""
    return not many and len(ctx.program.data.slices) > GROUP_ABOVE_SLICES


def _own(ctx: Context, x: Vector, handed: Sequence[Vector]) -> None:
    """Keep ``x``, a fleet the joint solve reports, as its own (:attr:`Context.joint_x`) where
    it is none of the fleets it was ``handed`` (by its integer columns) and cheaper than the
    one kept."""
    model = ctx.model
    ints = np.round(x[model.integer])
    if any(np.array_equal(ints, np.round(h[model.integer])) for h in handed):
        return
    if ctx.joint_x is None or model.cost_of(x) < model.cost_of(ctx.joint_x):
        ctx.joint_x = np.where(model.integer, np.round(x), x)


def _rounds(ctx: Context, stages: Sequence[Stage]) -> None:
    """The neighbourhoods again around each new incumbent, while a round finds a cheaper one."""
    for _ in range(ROUNDS):
        _, before = ctx.incumbent.fleet()
        run_stages(ctx, stages)
        _, after = ctx.incumbent.fleet()
        if ctx.halted() or after is None or (before is not None and after >= before):
            return


def _outcome(incumbent: Incumbent, ended: Sequence[RunResult]) -> SolveOutcome:
    """The plan's outcome from the incumbent: the fleet loaded into the program's variables."""
    x, _ = incumbent.fleet()
    status = incumbent.outcome(
        infeasible=any(r.status is SolveStatus.infeasible for r in ended),
        timed_out=not ended or any(r.status is SolveStatus.time_limit for r in ended))
    if x is not None:
        incumbent.model.load(x)
    return SolveOutcome(status.status, incumbent.report("highs", status), x is not None)


def solve_shared_cbc(
    data: ProgramData, solver: str, deadline: Deadline, gap: float,
    on_progress: OnProgress | None = None,
) -> tuple[Program, SolveOutcome]:
    """Shared node pools with a solver that takes no start (CBC): the greedy fleet and the LP
    bound, then grouped slices and the neighbourhoods with ``solver``, then ``solver`` on the
    whole program in the time left; the cheaper of its fleet and the start is kept."""
    program, model, build_s = _build(data, deadline)
    if model is None:
        return program, _unbuilt(program, deadline, build_s, solver)
    incumbent = Incumbent(model, deadline, gap, on_progress)
    incumbent.raise_bound(capacity_bound(program), "capacity")
    incumbent.record(BUILD, build_s)
    ctx = Context(program, model, incumbent, deadline, gap)
    run_stages(ctx, (GREEDY, Stage("lp", 0.25, lp)))
    if len(data.slices) > GROUP_ABOVE_SLICES and not deadline.expired():
        budget = deadline.share(0.6)
        started = deadline.elapsed()
        start = aggregated_start(program, solver, budget / 0.6, gap)
        if start is not None:
            incumbent.offer(model.vector(start), "grouped")
        incumbent.record("grouped", deadline.elapsed() - started)
    x, _ = incumbent.fleet()
    if x is not None and len(data.slices) > 1 and deadline.share(0.2) > 0.5:
        started = deadline.elapsed()
        better = improve_start(program, model.named(x), solver,
                               deadline.limit_s - deadline.reserve_s, gap, deadline.started)
        incumbent.offer(model.vector(better), "neighbourhoods")
        incumbent.record("neighbourhoods", deadline.elapsed() - started)
    left = deadline.left()
    infeasible = False
    if left > 0.1:
        started = deadline.elapsed()
        outcome = solve(program.prob, solver, left, gap)
        if outcome.has_solution:
            incumbent.offer(model.vector({v.name: float(v.varValue or 0.0)
                                          for v in model.variables}), "joint")
        infeasible = outcome.status is SolveStatus.infeasible
        incumbent.raise_bound(outcome.report.bound, "joint")
        if outcome.status is SolveStatus.optimal and outcome.report.objective is not None:
            # CBC reports no bound through PuLP: "optimal" at the gap proves this much
            incumbent.raise_bound(outcome.report.objective * (1 - gap), "joint")
        incumbent.record("joint", deadline.elapsed() - started)
    x, _ = incumbent.fleet()
    status = incumbent.outcome(infeasible=infeasible, timed_out=deadline.expired())
    if x is not None:
        model.load(x)
    return program, SolveOutcome(status.status, incumbent.report(solver, status), x is not None)


def solve_dedicated(
    data: ProgramData, solver: str, deadline: Deadline, gap: float,
    on_progress: OnProgress | None = None,
) -> tuple[Program, SolveOutcome]:
    """Dedicated pools: the per-workload decomposition (its bound is the sum of the
    sub-programs' bounds), its fleet and bound handed to the incumbent for the status."""
    started = deadline.elapsed()
    program, outcome = solve_decomposed(data, solver, max(deadline.left(), 0.1), gap)
    model = model_of(program)
    incumbent = Incumbent(model, deadline, gap, on_progress)
    incumbent.raise_bound(capacity_bound(program), "capacity")
    if outcome.has_solution:
        incumbent.offer(model.vector({v.name: float(v.varValue or 0.0)
                                      for v in model.variables}), "decomposition")
    incumbent.raise_bound(outcome.report.bound, "decomposition")
    incumbent.record("decomposition", deadline.elapsed() - started)
    x, _ = incumbent.fleet()
    status = incumbent.outcome(infeasible=outcome.status is SolveStatus.infeasible,
                               timed_out=outcome.status is SolveStatus.time_limit)
    if x is not None:
        model.load(x)
    return program, SolveOutcome(status.status, incumbent.report(outcome.report.name, status),
                                 x is not None)


__all__ = ["joint_threads", "objective_of", "plan_scenario", "shared_stages", "solve_shared"]
