"""The blocks of the program over periods, each planned on its own: a first fleet of the joint
program (solver/solve/horizon.py), and a bound where a block's own solve proves none.

With HiGHS, a block of at most ``DIRECT_COLUMNS`` replica columns is solved whole by one HiGHS
solve stopped by its gap or by ``BLOCK_NODES`` branch-and-bound nodes (:func:`direct_block`):
a limit counted in work, so the block ends at the same fleet on every run, however loaded the
machine; the plan's time limit only stops it as a safety (and the plan then says so). A larger
block is planned in a share of the time, as follows (the plan is then time-bound). A block with
shared nodes is first solved on its LP relaxation's support, widened to the configurations the
relaxation runs where the support holds no fleet (:func:`lp_support_block`), then re-solved
hour by hour in what its share leaves and a few seconds more (:func:`polish_slices`); where
neither finds one, it is planned with dedicated pools (the per-workload
decomposition: a restriction of shared nodes, so its fleet holds in the shared program, and it
is fast at large demand), then, where its share of the time leaves ``SHARED_AFTER_S`` or more,
with the single-period strategy for shared nodes; the cheaper fleet is kept. Its bound is the
shared strategy's where that ran, else its LP relaxation's (:func:`lp_bound`): a dedicated-pool
bound does not bound shared nodes.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pulp

from models.common import COMMITTED_KINDS
from models.plan import SolverReport, SolveStatus
from solver.program.build import build_program
from solver.program.data import ProgramData
from solver.program.families import FAMILIES
from solver.program.keys import PoolKey, ReplicaKey
from solver.program.periods import HorizonData
from solver.program.values import start_from_replicas, violated_rows
from solver.program.variables import Program
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.clock import Deadline
from solver.solve.decompose import solve_decomposed
from solver.solve.greedy import greedy_start
from solver.solve.held_blocks import HeldBlock, HeldBlocks, held_nodes
from solver.solve.highs import (
    Model,
    Progress,
    Restriction,
    RunResult,
    costliest_first,
    held_model,
    model_of,
    run,
    slice_columns,
)
from solver.solve.strategy import solve_shared

#: Gap each block's own plan is solved to for the start (the joint solve closes the rest) [1].
BLOCK_START_GAP = 0.02
#: Seconds left of a shared block's share, after its dedicated-pool plan, for which the
#: shared-node strategy is also run [s].
SHARED_AFTER_S = 2.0
#: Families of a block in the joint program (the budget is a coupling there: P6).
BLOCK_FAMILIES = tuple(f for f in FAMILIES if f != "budget")


#: Largest block (:func:`replica_columns`) solved whole under a node limit
#: (:func:`direct_block`): the demo-size quarterly scenario's blocks count 695 (637–717 columns
#: built), solved in 0.2–17 s each; the harness's medium × 25 blocks count 8,428 (6,240 columns
#: built), and one of them whole had not ended 50 nodes after two minutes [1].
DIRECT_COLUMNS = 2_000
#: Branch-and-bound nodes a block solved whole may take: quarterly.yaml's second-quarter blocks
#: (orders arrive) prove in about 1,800 or stop here; at 500 its plan was 706,353 (16.2 %), at
#: 2,000 689,413 (13.6 %) for 10 % more time (benchmarks/results/over-periods.md, "Over periods")
#: [1].
BLOCK_NODES = 2_000

#: The outcome of a block left unplanned for want of time.
NOT_PLANNED = SolveOutcome(SolveStatus.time_limit, SolverReport(name="none", seconds=0.0),
                           False)


@dataclass
class BlockPlans:
    """Every block planned alone: values under the joint program's names, committed nodes run
    per (scenario, period, pool), each block's outcome (its bound ``None`` where it does not
    bound the block's shared program)."""

    values: dict[str, float]
    running: dict[tuple[str, int, PoolKey], int]
    outcomes: list[SolveOutcome]
    timed: bool = False
    """Some block was planned in a share of the time, or stopped by the time limit: the fleets
    may differ from run to run."""
    fleets: list[dict[ReplicaKey, int] | None] = dataclasses.field(default_factory=list)
    """Per block, the replicas of its fleet (``None``: none found, or not planned in time)."""
    joint: Model | None = None
    """The joint program's copy into HiGHS the blocks were taken from (``held``), if they
    were: the joint solve takes it instead of copying the program again."""

    @property
    def complete(self) -> bool:
        """Every block has a fleet."""
        return all(o.has_solution for o in self.outcomes)


def _values(program: Program) -> dict[str, float]:
    return {var.name: float(var.varValue or 0.0) for var in program.prob.variables()}


def _cost(program: Program, values: dict[str, float]) -> float:
    return float(sum(c * values.get(v.name, 0.0) for v, c in program.v.cost.items()))


def replica_columns(data: ProgramData) -> int:
    """The replica columns of a block's program, counted without building it: per candidate,
    one per committed offer of its GPU and one per slice per elastic offer (at most what the
    builder makes: it leaves out a configuration no node of an offer holds)."""
    by_gpu: dict[str, int] = {}
    for o in data.offers:
        by_gpu[o.gpu] = by_gpu.get(o.gpu, 0) + (1 if o.purchase in COMMITTED_KINDS
                                                else len(data.slices))
    return sum(by_gpu.get(c.gpu, 0) for c in data.candidates)


def is_direct(data: ProgramData, solver: str) -> bool:
    """Whether a block is solved whole under a node limit (module docstring)."""
    return solver == "highs" and replica_columns(data) <= DIRECT_COLUMNS


def direct_block(data: ProgramData, deadline: Deadline, gap: float, alone: bool = False,
                 on_progress: Callable[[Progress], None] | None = None
                 ) -> tuple[Program, dict[str, float] | None, SolveOutcome]:
    """A block solved whole by one HiGHS solve to ``BLOCK_START_GAP`` (or ``gap``, if wider),
    stopped after ``BLOCK_NODES`` nodes, or by ``deadline`` as a safety (status
    ``time_limit``); HiGHS's progress on the block's own program (its fleet's cost and its
    bound) goes to ``on_progress``.

    ``alone``: the block is the whole program (one period, one demand scenario); its
    interchangeable zones are then ordered as the single-period program orders them
    (:func:`~solver.program.cuts.add_zone_symmetry`: rows only, the optimum unchanged), so of
    equal fleets it takes the one the single-period plan takes. Not otherwise: orders tie a
    zone's blocks across periods, and blocks ordering their zones each on its own picked
    different zones in different periods (quarterly.yaml: a first fleet of 1.19 M against
    0.73 M without)."""
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=alone)
    model = model_of(program)
    result = run(model, deadline, deadline.left(), max(gap, BLOCK_START_GAP), nodes=BLOCK_NODES,
                 on_progress=on_progress)
    found = result.x is not None and result.status is not SolveStatus.infeasible
    values = None
    if result.x is not None and found:
        values = model.named(np.where(model.integer, np.round(result.x), result.x))
    report = SolverReport(name="highs", seconds=result.seconds, objective=result.objective,
                          bound=result.bound, gap=_gap(result.objective, result.bound))
    return program, values, SolveOutcome(result.status, report, found)


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return max(objective - bound, 0.0) / objective if objective > 0 else 0.0


def capped(seconds: float, deadline: Deadline | None) -> float:
    """``seconds``, at most what ``deadline`` leaves (none: ``seconds``) [s]."""
    return seconds if deadline is None else min(seconds, deadline.left())


def plan_block(data: ProgramData, solver: str, time_limit_s: float, gap: float,
               deadline: Deadline | None = None, spare_s: float = 0.0, per_slice: int = 1,
               held: HeldBlock | None = None
               ) -> tuple[Program, dict[str, float] | None, SolveOutcome]:
    """One block planned alone in a share of the time (module docstring): the block's program
    as the joint program holds it, the values of its fleet (``None``: none found) and the
    outcome. No step runs past ``deadline`` (the plan's time limit): the minimum time of
    :func:`lp_support_block` and of the steps after it is what the deadline leaves, and a step
    it leaves less than ``STEP_MIN_S`` is not run. ``spare_s``: seconds more for the
    hour-by-hour pass of a fleet found on the LP support (the whole pass of a widened one's),
    each hour given ``per_slice`` times ``POLISH_SLICE_S`` to ``POLISH_GAP`` ÷ ``per_slice``
    (blocks planned side by side in worker processes: :func:`in_workers`). ``held``: the same
    block taken from the joint program's arrays; the LP support's step then runs on it
    (:func:`lp_support_held`), and a fleet it finds is named as the joint program names it."""
    gap = max(gap, BLOCK_START_GAP)
    time_limit_s = capped(time_limit_s, deadline)
    if not data.share_nodes:
        program, outcome = solve_decomposed(data, solver, time_limit_s, gap)
        return program, _values(program) if outcome.has_solution else None, outcome
    started = time.perf_counter()
    floor: dict[str, float] | None = None  # the LP support's greedy fleet, where it kept one
    if solver == "highs":
        support = lp_support_block if held is None else functools.partial(lp_support_held,
                                                                           held)
        supported = support(data, capped(max(time_limit_s, LP_SUPPORT_MIN_S), deadline), gap,
                            widened_s=time_limit_s,
                            polish_s=capped(max(time_limit_s, LP_SUPPORT_MIN_S)
                                            + POLISH_EXTRA_S + spare_s, deadline)
                            if POLISH else 0.0, stop=deadline,
                            polish_slice_s=POLISH_SLICE_S * per_slice,
                            polish_gap=POLISH_GAP / per_slice,
                            widened_polish_s=capped(spare_s, deadline))
        left_s = time_limit_s - (time.perf_counter() - started)
        if (supported[1] is not None and (supported[2].report.name != GREEDY_FLOOR
                                         or left_s < SHARED_AFTER_S)) or capped(
                STEP_MIN_S, deadline) < STEP_MIN_S:
            # a greedy fleet is kept unless the share leaves time for the steps after it
            # (at medium x 1 under load they found a fleet 0.6 % cheaper in 5 s past the limit)
            return supported
        floor = supported[1]
        time_limit_s = capped(max(time_limit_s - (time.perf_counter() - started), 0.5),
                              deadline)
        started = time.perf_counter()
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    dedicated, outcome = solve_decomposed(dataclasses.replace(data, share_nodes=False), solver,
                                          time_limit_s, gap)
    best = None
    if outcome.has_solution:
        best = start_from_replicas(program, {k: n for k, v in dedicated.v.replicas.items()
                                             if (n := integer_value(v)) > 0})
    left_s = time_limit_s - (time.perf_counter() - started)
    bound = None  # the dedicated pools' bound does not bound shared nodes
    if best is None or left_s >= SHARED_AFTER_S:
        shared, outcome = solve_shared(data, solver, max(left_s, 0.5), gap, deadline=None if (
            deadline is None) else deadline.follower(max(left_s, 0.5)))
        bound = outcome.report.bound
        if outcome.has_solution:
            found = _values(shared)
            if best is None or _cost(program, found) < _cost(program, best):
                best = found
    if floor is not None and (best is None or _cost(program, floor) < _cost(program, best)):
        best = floor  # the greedy fleet the LP support's step kept
    report = outcome.report.model_copy(update={"bound": bound})
    status = SolveStatus.feasible if best is not None else outcome.status
    return program, best, SolveOutcome(status, report, best is not None)


def lp_support_block(data: ProgramData, time_limit_s: float, gap: float,
                     widened_s: float | None = None, polish_s: float = 0.0,
                     stop: Deadline | None = None, polish_slice_s: float | None = None,
                     polish_gap: float | None = None, widened_polish_s: float = 0.0
                     ) -> tuple[Program, dict[str, float] | None, SolveOutcome]:
    """A block with shared nodes planned by HiGHS on its program restricted to its LP
    relaxation's support: every replica column the relaxation leaves empty fixed to zero, the
    rest solved as integers in the time left; its bound the relaxation's optimum (a bound of the
    whole block). On a second-quarter block of the harness's × 25 case (199 of 4,300 replica
    columns in the support) it found 811,229 a month in 10 s where :func:`plan_block`'s
    dedicated-pool and shared-node steps found 1,132,038 in 17 s (LP 707,262); on a
    first-quarter block 1,622,714 proven within its 1 % in 2.3 s against 1,760,914 in 13 s (LP
    1,531,316) (benchmarks/results/over-periods.md, "Over periods").

    Where the support holds no fleet (the relaxation runs a fraction of a replica where a
    whole one breaks a row: a zone's stock, say), the restriction is widened to every replica
    column of the configurations (workload, GPU, TP) the relaxation runs, in any zone, kind or
    slice, and solved in ``widened_s`` (default ``time_limit_s``; at least ``WIDEN_MIN_S``) from
    this call's start, within ``time_limit_s``: every block of the harness's medium × 1 case
    had such a support, and their fleets from the steps after were twice those of the widened
    restriction (benchmarks/results/over-periods.md, "Over periods").

    Then, where the support itself held the fleet, until ``polish_s`` from this call's start (it
    may pass ``time_limit_s``), the fleet is re-solved slice by slice on the whole block
    (:func:`polish_slices`): the restriction's fleet rounds each hour's nodes within the
    relaxation's support, and an hour re-solved with every other column held finds a cheaper
    rounding outside it. ``stop``: a clock whose stop request (Ctrl-C) ends this one too.
    ``polish_slice_s``, ``polish_gap``: each hour's seconds and gap in that pass (default
    ``POLISH_SLICE_S``, ``POLISH_GAP``); ``widened_polish_s``: the seconds of that pass for a
    fleet of the widened restriction (default none), and (``WIDEN_PASS``) what the widened
    restriction leaves of its time: it stops once ``WIDEN_PASS_SHARE`` of that time has passed
    with a fleet within ``WIDEN_PASS_GAP`` of its bound, or when it proves its gap."""
    deadline = Deadline(time_limit_s) if stop is None else stop.follower(time_limit_s)
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    model = model_of(program)

    def floor() -> tuple[Program, dict[str, float]] | None:
        found = greedy_start(program, within_stock=True)
        return None if found is None else (program, found)

    return _on_support(program, model, 1.0, lambda values, _: holds_in(program, values), floor,
                       deadline, time_limit_s, gap, widened_s, polish_s, stop, polish_slice_s,
                       polish_gap, widened_polish_s)


def lp_support_held(held: HeldBlock, data: ProgramData, time_limit_s: float, gap: float,
                    widened_s: float | None = None, polish_s: float = 0.0,
                    stop: Deadline | None = None, polish_slice_s: float | None = None,
                    polish_gap: float | None = None, widened_polish_s: float = 0.0
                    ) -> tuple[Program, dict[str, float] | None, SolveOutcome]:
    """:func:`lp_support_block` on a held block taken from the joint program's arrays
    (:class:`~solver.solve.held_blocks.HeldBlock`; ``data``: the same block as
    :func:`~solver.solve.order_choice.held_block` makes it), not built: its fleet is named as
    the joint program names it (``b{i}_…``) and handed on with the block's program inside the
    joint one, except a greedy floor (the widened restriction's, :data:`GREEDY_FLOOR`), which
    is the block built from ``data``'s and named as it names it. The same steps, the same
    fleets but for HiGHS's path through a program with its columns in another order; the
    build and copy of the block (0.2–0.3 CPU-s a medium block) is left out except for that
    floor (benchmarks/results/over-periods.md, "Over periods")."""
    deadline = Deadline(time_limit_s) if stop is None else stop.follower(time_limit_s)
    model = held.held.model
    own = held.prefix

    def holds(values: dict[str, float], x: npt.NDArray[np.float64]) -> bool:
        return not model.broken_rows(x) and holds_in(held.program, values)

    def floor() -> tuple[Program, dict[str, float]] | None:
        program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
        found = greedy_start(program, within_stock=True)
        return None if found is None else (program, found)

    program, values, outcome = _on_support(
        held.program, model, held.weight, holds, floor, deadline, time_limit_s, gap, widened_s,
        polish_s, stop, polish_slice_s, polish_gap, widened_polish_s)
    if values is not None and program is held.program:
        values = {name: v for name, v in values.items() if name.startswith(own)}
    return program, values, outcome


def _on_support(program: Program, model: Model, weight: float,
                holds: Callable[[dict[str, float], npt.NDArray[np.float64]], bool],
                floor: Callable[[], tuple[Program, dict[str, float]] | None],
                deadline: Deadline, time_limit_s: float, gap: float, widened_s: float | None,
                polish_s: float, stop: Deadline | None, polish_slice_s: float | None,
                polish_gap: float | None, widened_polish_s: float
                ) -> tuple[Program, dict[str, float] | None, SolveOutcome]:
    """:func:`lp_support_block`'s steps on ``model`` (``program``'s columns, named alike;
    its cost the block's per month times ``weight``): ``holds`` checks a fleet (values and
    vector), ``floor`` gives the block's greedy fleet within its stock and the program that
    names it."""
    relaxed = run(model, deadline, deadline.left(), 0.0, relaxation=True)
    if relaxed.x is None or relaxed.objective is None or relaxed.status is not SolveStatus.optimal:
        return program, None, SolveOutcome(relaxed.status, SolverReport(
            name="highs", seconds=relaxed.seconds), False)
    keys = list(program.v.replicas)
    replicas = model.columns_named([program.v.replicas[k].name for k in keys])
    runs = relaxed.x[replicas] >= LP_EMPTY
    result = _restricted(model, deadline, deadline.left(), gap, replicas[~runs])
    seconds = relaxed.seconds + result.seconds
    widened = result.status is SolveStatus.infeasible
    if widened:
        used = {(k.workload, k.gpu, k.tp) for k, on in zip(keys, runs, strict=True) if on}
        wide = np.array([(k.workload, k.gpu, k.tp) in used for k in keys], dtype=bool)
        limit_s = min(max((time_limit_s if widened_s is None else widened_s)
                          - deadline.elapsed(), WIDEN_MIN_S), deadline.left())
        seen: list[Progress] = []
        began = time.perf_counter()

        def enough() -> bool:
            # its fleet after the root, once a share of its time has passed: the rest is the
            # hour-by-hour pass's
            if not WIDEN_PASS or not seen or (time.perf_counter() - began
                                              < WIDEN_PASS_SHARE * limit_s):
                return False
            cost, low = seen[-1].cost, seen[-1].bound
            return cost is not None and low is not None and cost - low <= WIDEN_PASS_GAP * cost

        result = _restricted(model, deadline, limit_s, gap, replicas[~wide], halt=enough,
                             on_progress=seen.append)
        seconds += result.seconds
        if WIDEN_PASS:
            widened_polish_s += max(limit_s - (time.perf_counter() - began), 0.0)
    bound = relaxed.objective / weight
    values = None
    x = None
    if result.x is not None and result.status is not SolveStatus.infeasible:
        x = np.where(model.integer, np.round(result.x), result.x)
        values = model.named(x)
        if not holds(values, x):
            values = None
    name = "highs"
    if widened:
        # the widened restriction's first fleets in a loaded plan's 2 s cost 2-3 times the
        # block's greedy fleet within its stock, or none were found (medium x 1)
        greedy = floor()
        if greedy is not None and (values is None or _cost(*greedy) < _cost(program, values)):
            if greedy[0] is not program:  # named as another program names it: handed on as is
                found = _cost(*greedy)
                report = SolverReport(name=GREEDY_FLOOR, seconds=seconds, objective=found,
                                      bound=bound, gap=_gap(found, bound))
                return greedy[0], greedy[1], SolveOutcome(SolveStatus.feasible, report, True)
            values, name = greedy[1], GREEDY_FLOOR
            x = model.vector(values)
    if values is None or x is None:
        return program, None, SolveOutcome(SolveStatus.time_limit, SolverReport(
            name="highs", seconds=seconds, bound=bound), False)
    objective = float(result.objective if result.objective is not None and name == "highs"
                      else model.cost @ x)
    # the widened restriction's fleet already spans every zone, kind and hour of the
    # configurations: its blocks (medium × 1's) lost more to the seconds taken from the blocks
    # after them than they gained; it is polished only in its own time's rest (WIDEN_PASS) and
    # a worker's spare
    polish = (Deadline if stop is None else stop.follower)(
        widened_polish_s if widened else polish_s - deadline.elapsed())
    slice_s = POLISH_SLICE_S if polish_slice_s is None else polish_slice_s
    if polish.limit_s >= slice_s:
        polished = polish_slices(program, model, x, relaxed.x, polish, slice_s,
                                 POLISH_GAP if polish_gap is None else polish_gap)
        if float(model.cost @ polished) < objective and holds(named := model.named(polished),
                                                              polished):
            values, objective = named, float(model.cost @ polished)
        seconds += polish.elapsed()
    report = SolverReport(name=name, seconds=seconds, objective=objective / weight,
                          bound=bound, gap=_gap(objective / weight, bound))
    return program, values, SolveOutcome(SolveStatus.feasible, report, True)


#: Solver name of the outcome of :func:`lp_support_block` whose fleet is the block's greedy
#: fleet (:func:`~solver.solve.greedy.greedy_start` within its stock), cheaper than any fleet
#: the widened restriction found in its time: where time is left, :func:`plan_block`'s steps
#: after the LP support still run, and the cheaper fleet is kept.
GREEDY_FLOOR = "greedy"


#: Seconds HiGHS is given for each slice of :func:`polish_slices`, and the gap it stops at, of
#: the slice's own cost (its columns' at the fleet it starts from; the rest held). Counted on
#: the whole block's cost (0.2 % until 2026-12-04: about 5 % of an hour of 24) the pass left
#: the ten distinct × 25 held blocks 1.057 times their LPs in 33 CPU-s; at 2 % of the hour,
#: 1.047 in 55 (benchmarks/held_hours.py). In nine same-run plan pairs against that main
#: the plan was cheaper in eight (median −0.48 %) and its gap smaller in six (median −0.18
#: points; 2.98–3.34 % against 3.52–3.55 % given a core): at load 2–5 the longer passes can
#: take the joint root's seconds
#: (benchmarks/results/over-periods.md, "The hour-by-hour pass stopped at a gap of the hour's own
#: cost") [s], [1].
POLISH_SLICE_S = 0.5
POLISH_GAP = 0.02


def polish_slices(program: Program, model: Model, x: npt.NDArray[np.float64],
                  lp_x: npt.NDArray[np.float64], clock: Deadline,
                  slice_s: float = POLISH_SLICE_S, gap: float = POLISH_GAP,
                  of_slice: bool = True) -> npt.NDArray[np.float64]:
    """A block's fleet ``x`` re-solved one slice at a time, every other column held at its
    value (:func:`~solver.solve.highs.held_model`), each slice for ``slice_s`` or until
    within ``gap`` of the slice's own cost (``of_slice``; else of the whole block's cost, the
    other slices' included), the slices whose fleet costs most above the relaxation ``lp_x``
    first, until ``clock`` has less than a slice's time left; the cheapest fleet found. With
    ``of_slice``, a slice whose own columns cost nothing (none able to cost less) is skipped.

    Each such program is a restriction of the block (its fleets are the block's); with the
    committed replicas held, slices share only the volume rows of batch windows, and those stay
    met by the slices held. One pass, no bound: what it proves is of the restriction alone."""
    own = slice_columns(program, model)
    order = costliest_first(model, own, x, lp_x)
    cost = float(model.cost @ x)
    for s in order:
        if clock.left() < slice_s:
            break
        part = held_model(model, own[s], x)
        slice_gap = gap
        if of_slice:  # HiGHS's relative gap counts the held columns' cost (the offset) too
            mine = part.model.cost_of(x[part.columns])
            if mine <= 0.0 and bool((part.model.cost >= 0.0).all()):
                continue  # nothing cheaper than nothing
            whole = mine + float(part.model.lp.offset_)
            slice_gap = gap * max(mine, 0.0) / whole if whole > 0.0 else gap
        found = run(part.model, clock, slice_s, slice_gap, start=x[part.columns])
        if found.x is None or found.status is SolveStatus.infeasible:
            continue
        y = part.expand(np.where(part.model.integer, np.round(found.x), found.x))
        if float(model.cost @ y) < cost * (1 - 1e-9):
            x, cost = y, float(model.cost @ y)
    return x


def _restricted(model: Model, deadline: Deadline, time_limit_s: float, gap: float,
                empty: npt.NDArray[np.int32], halt: Callable[[], bool] | None = None,
                on_progress: Callable[[Progress], None] | None = None) -> RunResult:
    """``model`` solved with the columns ``empty`` fixed to zero (``halt``, ``on_progress``:
    as :func:`~solver.solve.highs.run` takes them)."""
    zeros = np.zeros(len(empty))
    return run(model, deadline, time_limit_s, gap, restriction=Restriction(empty, zeros, zeros),
               halt=halt, on_progress=on_progress)


#: Whether the widened restriction of :func:`lp_support_block` stops once ``WIDEN_PASS_SHARE``
#: of its time has passed with a fleet within ``WIDEN_PASS_GAP`` of its bound, its fleet then
#: re-solved hour by hour (:func:`polish_slices`) in what its time leaves [bool], [1], [1]. On
#: the harness's × 25 case five of the ten held blocks are widened; their fleet comes from
#: HiGHS's sub-MIP at the root's end and the branching after it seldom improves it
#: (benchmarks/results/over-periods.md, "Where the 120 s go").
WIDEN_PASS = True
WIDEN_PASS_SHARE = 0.6
WIDEN_PASS_GAP = 0.05


#: A replica column the LP relaxation runs less than this of is left out of the restriction
#: of :func:`lp_support_block` [replicas].
LP_EMPTY = 1e-9
#: Whether :func:`plan_block` re-solves a fleet found on a block's LP support hour by hour
#: (:func:`polish_slices`) in what its share leaves and ``POLISH_EXTRA_S`` more. Given only what
#: the share left, three same-run pairs against main on the harness's × 25 case at 120 s gave
#: −0.60 %, −0.35 % and +0.45 %; with 5 s more a block, −1.63 %, −0.61 %, −1.36 % and −0.86 %
#: (2026-12-03 07:26–08:16 UTC, load 2.6–5.2;
#: benchmarks/results/over-periods.md, "Over periods") [bool].
POLISH = True
#: Seconds past its share (at least ``LP_SUPPORT_MIN_S``) a block's polish may take: taken from
#: the later blocks' shares and the joint solve, whose root at this load rarely ended within
#: 120 s anyway (two plans of ten, both main's) [s].
POLISH_EXTRA_S = 5.0
#: Least time the widened restriction of :func:`lp_support_block` is given (within the block's
#: limit): on three of the harness's medium × 1 blocks HiGHS had its first fleet after 0.5 s and
#: was within 3 % of its 4-s fleet after 2 s (load 3-4; in another run, beside a test, one block
#: had only its first fleet after 2 s) [s].
WIDEN_MIN_S = 1.0
#: Seconds :func:`lp_support_block` may take however small a block's share, where the plan's
#: deadline leaves each block left that much (else an equal part: :func:`block_limit_s`): the
#: steps after it took 10–52 s at a 0.5-s share on the harness's × 25 blocks at load 6–10 (each
#: builds about 25 programs), and the restriction found a second-quarter block's fleet in 10 s,
#: not in 1.7–3 s [s].
LP_SUPPORT_MIN_S = 10.0
#: Seconds of the time limit a small block solved whole leaves to each block after it: a
#: plan's deadline that cuts the blocks solved whole short leaves the rest their plans in
#: shares of the time (:func:`plan_block`; quarterly.yaml's take 0.1–0.6 s each at load 2–5),
#: where they once all ran past the deadline, or else had only the fallback's greedy fleets
#: (quarterly.yaml at --time-limit 60: 3,083,821 against 2,556,054) [s].
BLOCK_RESERVE_S = 1.0
#: Least time the deadline must leave for :func:`plan_block`'s steps after the LP support
#: (each builds programs of its own: about 25 on a × 25 block, 15 s of the 25.6 s one took at
#: a 0.5-s share under load) [s].
STEP_MIN_S = 0.5


def plan_blocks(data: HorizonData, programs: list[ProgramData], solver: str,
                budget_s: float, gap: float, within: bool = False,
                deadline: Deadline | None = None, workers: int = 1,
                held: HeldBlocks | None = None,
                on_block: Callable[[str], None] | None = None,
                on_progress: Callable[[int, Progress], None] | None = None) -> BlockPlans:
    """Each block's program planned alone (:func:`plan_block`): a small block under its node
    limit (with a ``deadline``, until it expires), the others in an equal share of what is
    left of ``budget_s`` (at least 0.5 s each); a block equal to one planned already (the same
    period under two demand scenarios of the same multiplier) takes its plan. ``within``:
    once ``budget_s`` is spent, the blocks left are planned only while the ``deadline`` leaves
    ``BLOCK_RESERVE_S`` for each and none was left unplanned (:func:`_can_finish`); else they
    are not planned (the plans are then incomplete). Past ``deadline`` (the plan's time
    limit) no block is planned either, nor a small block the deadline stopped without a fleet
    planned again: its outcome is then ``NOT_PLANNED`` or its solve's, and its fleet
    ``None``.

    ``workers`` above 1, with a ``deadline``, HiGHS and every distinct block planned in a share
    of the time: the blocks are planned side by side in that many processes
    (:func:`in_workers`), each with the time it would have alone and the seconds the other
    workers add given to its hour-by-hour pass.

    ``held``: the same blocks (``programs``, with the orders held) taken from the joint
    program's arrays; a block planned in a share of the time in this process then takes its
    LP support's step on it (:func:`lp_support_held`), and its fleet is named as the joint
    program names it (see :func:`as_named`).

    ``on_block``: told which block is planned next (``block 3 of 10: base, 2027-04-01``), so a
    plan whose blocks take minutes shows where it is. ``on_progress``: told, with the block's
    index, its own program's best fleet cost and bound (per month, as the block's program
    counts them) while a block solved whole runs, and as each block planned here ends."""
    started = time.perf_counter()
    if workers > 1:  # more processes than cores only share them (and each block's share of
        from solver.solve.workers import machine_cores  # the spare seconds assumes a core)

        workers = min(workers, machine_cores())
    unique = [i for i, p in enumerate(programs) if all(p != programs[j] for j in range(i))]
    solved: dict[int, Planned] = {}
    out = BlockPlans({}, {}, [])
    if (workers > 1 and deadline is not None and solver == "highs" and not within
            and len(unique) > 1 and not any(is_direct(programs[i], solver) for i in unique)):
        solved = in_workers([programs[i] for i in unique], workers, budget_s, gap, deadline)
        solved = {i: solved[k] for k, i in enumerate(unique)}
        out.timed = True
    planned: list[Planned] = []
    begun: set[int] = set()
    dropped = False  # a block of this pass was left unplanned
    for i in range(len(data.blocks)):
        same = next(j for j in unique if programs[j] == programs[i])
        fresh = same not in solved  # planned in this pass, here
        if same not in solved and on_block is not None:
            begun.add(same)
            block = data.blocks[i]
            on_block(f"block {len(begun)} of {len(unique)}: {block.scenario}, "
                     f"{data.periods[block.period].start.isoformat()}")
        if same not in solved:
            expired = deadline is not None and deadline.expired()
            todo = len([j for j in unique if j not in solved])
            if expired or (within and time.perf_counter() - started > budget_s
                           and not _can_finish(todo, deadline, dropped)):
                solved[same] = (None, None, NOT_PLANNED)
                out.timed = dropped = True
            elif deadline is not None and is_direct(programs[i], solver):
                # it and the blocks after it keep BLOCK_RESERVE_S each of the limit for their
                # plans in shares of the time
                clock = deadline.follower(deadline.left() - todo * BLOCK_RESERVE_S)
                if clock.limit_s >= BLOCK_RESERVE_S:  # else a few nodes: not worth building
                    solved[same] = direct_block(
                        programs[i], clock, gap, alone=len(data.blocks) == 1,
                        on_progress=None if on_progress is None else functools.partial(
                            on_progress, same))
                    out.timed |= solved[same][2].status is SolveStatus.time_limit
            cut = same in solved and solved[same][0] is not None and (
                solved[same][2].status is SolveStatus.time_limit)
            if (same not in solved or cut) and not (deadline is not None and deadline.expired()):
                # in a share of the time (also a small block the clock stopped: the cheaper
                # of its two fleets): the fleet may differ from run to run
                left = len([j for j in unique if j not in solved or j == same])
                share = max((budget_s - (time.perf_counter() - started)) / left, 0.5)
                own_clock = None if deadline is None else deadline.follower(
                    block_limit_s(deadline.left(), left))
                if held is None or solver != "highs" or not programs[i].share_nodes:
                    shared = plan_block(programs[i], solver, share, gap, own_clock)
                else:
                    shared = plan_block(programs[i], solver, share, gap, own_clock,
                                        held=held.block(i))
                if not cut or _cheaper(shared, solved[same]):
                    solved[same] = shared
                out.timed = True
            if on_progress is not None and fresh and same in solved:
                on_progress(same, _ended(solved[same]))
        planned.append(solved[same] if same == i else _moved(solved[same], same, i, held))
    for i, block in enumerate(data.blocks):
        program, own, outcome = planned[i]
        values = cheapest_of_period(data, planned, i, held)
        if own is None and values is not None:  # another block's fleet holds this one
            outcome = SolveOutcome(SolveStatus.feasible, outcome.report, True)
        out.outcomes.append(outcome)
        if values is None or program is None:
            out.fleets.append(None)
            continue
        out.fleets.append(replicas_of(program, values))
        out.values.update(values if _joint_named(program, i, held)
                          else {f"b{i}_{name}": v for name, v in values.items()})
        for pool, n in committed_nodes(program, values).items():
            k = (block.scenario, block.period, pool)
            out.running[k] = out.running.get(k, 0) + n
    return out


def _ended(planned: Planned) -> Progress:
    """A block's plan as progress: its fleet's cost and its bound on its own program (the
    seconds are the caller's to set)."""
    program, values, outcome = planned
    cost = None if program is None or values is None else _cost(program, values)
    if program is None:  # not planned
        return Progress(0.0, None, None)
    return Progress(0.0, cost, outcome.report.bound)


def _can_finish(todo: int, deadline: Deadline | None, dropped: bool) -> bool:
    """Whether a ``within`` pass past its budget still plans its ``todo`` blocks left: while
    the plan's ``deadline`` leaves each of them ``BLOCK_RESERVE_S`` (the reserve a block solved
    whole keeps for each block after it) and no block of the pass was left unplanned (the pass
    is then incomplete: its fleets are not used).

    A pass cut for one block drops its start, and the plan takes the greedy orders': a
    forecast-sized plan at ``--time-limit 120`` whose last block began a few ms past its
    budget came out far dearer than the same plan with that block planned, and which one a
    user got depended on the machine's load (benchmarks/results/over-periods.md, "Over periods")."""
    return (not dropped and deadline is not None
            and todo * BLOCK_RESERVE_S <= deadline.left())


def block_limit_s(left_s: float, blocks_left: int) -> float:
    """Seconds a block planned in a share of the time may take, polish and all, where the
    plan's deadline leaves ``left_s`` for it and the ``blocks_left`` − 1 blocks after it: all
    but ``LP_SUPPORT_MIN_S`` for each block after it, or, where the deadline does not leave
    each that much, all but an equal part of ``left_s`` for each [s].

    :func:`plan_block` gives a block's LP support at least ``LP_SUPPORT_MIN_S`` and its polish
    ``POLISH_EXTRA_S`` more, each capped only by the deadline: the harness's ten distinct
    × 25 blocks, starting 21 s into 120 under load, took 9–15 s each until the last had
    0.6 s and no fleet, and the plan fell back to greedy fleets (35.8 M, where every block
    planned gives 22.0–22.3 M: benchmarks/results/over-periods.md, "Over periods"). Drawn from the
    deadline, a loaded machine costs each block seconds instead of the last its fleet."""
    if blocks_left <= 1:
        return left_s
    return max(left_s - (blocks_left - 1) * min(LP_SUPPORT_MIN_S, left_s / blocks_left), 0.0)


def in_workers(programs: list[ProgramData], workers: int, budget_s: float, gap: float,
               deadline: Deadline) -> dict[int, Planned]:
    """Distinct blocks (none solved whole) planned by :func:`plan_block` in ``workers``
    processes (:class:`~solver.solve.workers.Workers`), keyed by their index in ``programs``
    whatever order they end in. Each has the share it would have alone, ``budget_s`` ÷ the
    blocks, and ``workers`` − 1 times that more for its hour-by-hour pass (each hour
    ``workers`` times the seconds) as long as ``SPARE_SHARE`` of the budget lasts; a block not
    planned by the ``deadline`` (or a stop request), ``NOT_PLANNED``; where a worker process
    died, the blocks it left are planned in this process as :func:`plan_blocks` plans them one
    after the other.

    Each block's clock leaves the blocks after it in its worker (the jobs are taken in turn:
    every ``workers``-th one) their floors, as :func:`block_limit_s` draws them from the
    deadline: the LP support's floor and the polish's seconds capped by the deadline alone let
    a loaded machine's first blocks take the last ones' time."""
    from solver.solve.workers import Workers

    share_s = max(budget_s / len(programs), 0.5)
    budget_end = time.monotonic() + budget_s
    spare_end = time.monotonic() + budget_s * SPARE_SHARE
    count = min(workers, len(programs))
    jobs = [(p, gap, share_s, share_s * (workers - 1), spare_end, workers,
             len(range(k + count, len(programs), count))) for k, p in enumerate(programs)]
    with Workers(count) as pool:
        results = pool.map(_planned_in_worker, jobs, deadline)
    out: dict[int, Planned] = {}
    for k, r in enumerate(results):
        if r is None and not deadline.expired():  # a worker died: planned here instead
            left = sum(1 for j in range(k, len(programs)) if results[j] is None)
            r = plan_block(programs[k], "highs", max((budget_end - time.monotonic()) / left,
                                                     0.5), gap,
                           deadline.follower(block_limit_s(deadline.left(), left)))
        out[k] = NOT_PLANNED_BLOCK if r is None else r
    return out


#: Share of the blocks' budget after which a block planned in a worker has no spare seconds
#: for its hour-by-hour pass (:func:`in_workers`). Same-run rounds on the harness's × 25 case
#: at 120 s with two workers (2026-12-03 10:30–10:49 UTC, load 3.2–6.5;
#: benchmarks/results/over-periods.md, "Over periods"): to the end of the budget the plan was
#: 0.3–0.9 % cheaper than at 70 % in all three, its gap smaller in two (the joint solve's root has
#: less time) [1].
SPARE_SHARE = 1.0
#: A block left unplanned (its worker did not end in time).
NOT_PLANNED_BLOCK: tuple[None, None, SolveOutcome] = (None, None, NOT_PLANNED)


def _planned_in_worker(clock: Deadline, data: ProgramData, gap: float, share_s: float,
                       spare_s: float, spare_end: float, per_slice: int, after: int = 0
                       ) -> Planned:
    """:func:`in_workers`' job, in a worker process: :func:`plan_block` on ``clock`` less the
    floors of the ``after`` blocks its worker plans after it (:func:`block_limit_s`), with
    ``spare_s`` more for its hour-by-hour pass, at most what is left until ``spare_end`` (a
    ``time.monotonic`` reading) past its own share."""
    spare = min(spare_s, max(spare_end - time.monotonic() - share_s, 0.0))
    return plan_block(data, "highs", share_s, gap,
                      clock.follower(block_limit_s(clock.left(), after + 1)), spare_s=spare,
                      per_slice=per_slice if spare > 0 else 1)


def replicas_of(program: Program, values: dict[str, float]) -> dict[ReplicaKey, int]:
    """The replicas a block's fleet (``values`` of its program) runs, by configuration."""
    return {k: n for k, x in program.v.replicas.items()
            if (n := round(values.get(x.name, 0.0))) > 0}


def committed_nodes(program: Program, values: dict[str, float]) -> dict[PoolKey, int]:
    """The reserved and owned nodes a block's fleet (``values`` of its program) runs, per
    pool: what orders must hold."""
    out: dict[PoolKey, int] = {}
    for node, y in program.v.nodes.items():
        if node.purchase in COMMITTED_KINDS:
            out[node.pool] = out.get(node.pool, 0) + round(values.get(y.name, 0.0))
    return out


def _cheaper(a: Planned, b: Planned) -> bool:
    """Whether ``a``'s fleet costs less than ``b``'s (a fleet is cheaper than none)."""
    if a[0] is None or a[1] is None:
        return False
    return b[0] is None or b[1] is None or _cost(a[0], a[1]) < _cost(b[0], b[1])


def holds_in(program: Program, values: dict[str, float]) -> bool:
    """``values`` name only columns of ``program`` and keep its bounds and rows."""
    columns = {v.name: v for v in program.prob.variables()}
    if any(name not in columns for name in values):
        return False
    for name, var in columns.items():
        x = values.get(name, 0.0)
        if (var.lowBound is not None and x < var.lowBound - 1e-6) or (
                var.upBound is not None and x > var.upBound + 1e-6):
            return False
    return not violated_rows(program, values)


#: A block's program (``None``: not planned), its fleet's values and its outcome.
Planned = tuple[Program | None, dict[str, float] | None, SolveOutcome]


def _joint_named(program: Program | None, i: int, held: HeldBlocks | None) -> bool:
    """Whether block ``i``'s plan is named as the joint program names it (its program the
    block's inside the joint one: planned on :class:`~solver.solve.held_blocks.HeldBlock`)."""
    return held is not None and program is not None and program is held.program(i)


def as_named(values: dict[str, float], j: int, joint_j: bool, i: int, joint_i: bool
             ) -> dict[str, float]:
    """Block ``j``'s fleet (``joint_j``: named as the joint program names it, ``b{j}_…``;
    else as the block built alone names it) named as block ``i``'s plan names its own
    (``joint_i`` alike): the same columns, the blocks' programs being built from the same
    families."""
    if joint_j:
        own = f"b{j}_"
        values = {name[len(own):]: v for name, v in values.items() if name.startswith(own)
                  and (joint_i or v != 0)}  # a block built alone leaves out some empty columns
    return {f"b{i}_{name}": v for name, v in values.items()} if joint_i else values


def _moved(plan: Planned, same: int, i: int, held: HeldBlocks | None) -> Planned:
    """Block ``same``'s plan as block ``i``'s (the same block data): a plan named as the joint
    program names it renamed to block ``i``'s columns, with its program; else as it is."""
    program, values, outcome = plan
    if held is None or not _joint_named(program, same, held):
        return plan
    return (held.program(i), None if values is None else as_named(values, same, True, i, True),
            outcome)


def _holds_held(held: HeldBlocks, i: int, values: dict[str, float]) -> bool:
    """Whether ``values`` (named as the joint program names block ``i``) hold in the block
    with the orders held: its rows and bounds in the joint program, and in each committed
    pool no more nodes than inventory and the orders hold (the joint program's holding rows;
    the tie rows are met by :func:`~solver.solve.horizon.tied`)."""
    program = held.program(i)
    block = held.hp.data.blocks[i]
    return holds_in(program, values) and all(
        n <= held_nodes(held.hp.data, block, pool, held.orders)
        for pool, n in committed_nodes(program, values).items())


def cheapest_of_period(data: HorizonData, planned: list[Planned], i: int,
                       held: HeldBlocks | None = None) -> dict[str, float] | None:
    """Block ``i``'s fleet, or a cheaper one another block of the same period found that also
    holds block ``i`` (its program's rows and bounds), the cheapest (the first of equals).

    A block solved alone may stop at its time limit dearer than the fleet of a block of the same
    period with more demand, which holds its demand too: the low demand scenario then ran more
    on demand than base in the same quarter (qa3: 139,351 against 87,963 USD/month), and the
    plan printed "if demand follows `low`, run up to 40 more L40S on-demand".

    ``held``: as :func:`plan_blocks` was given it; a plan named as the joint program names it
    is compared under its own names, and checked against the nodes the orders hold."""
    program, values, _ = planned[i]
    if program is None:
        return None
    joint_i = _joint_named(program, i, held)
    best, cost = values, (None if values is None else _cost(program, values))
    for j, block in enumerate(data.blocks):
        other = planned[j][1]
        if j == i or block.period != data.blocks[i].period or other is None:
            continue
        other = as_named(other, j, _joint_named(planned[j][0], j, held), i, joint_i)
        found = _cost(program, other)
        if (cost is None or found < cost - 1e-6 * max(1.0, abs(cost))) and (
                _holds_held(held, i, other) if held is not None and joint_i
                else holds_in(program, other)):
            best, cost = other, found
    return best


def lp_relaxation(data: ProgramData, solver: str, time_limit_s: float
                  ) -> tuple[float, dict[PoolKey, float]] | None:
    """A block's LP relaxation (every variable continuous): its optimum, a lower bound on the
    block's integer optimum, and the committed nodes it runs per pool (fractions of nodes);
    ``None`` where it is not solved in time."""
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    if solver == "highs":
        return _highs_relaxation(program, time_limit_s)
    for var in program.prob.variables():
        var.cat = pulp.LpContinuous
    outcome = solve(program.prob, solver, time_limit_s, 0.0)
    if outcome.status is not SolveStatus.optimal or outcome.report.objective is None:
        return None
    nodes: dict[PoolKey, float] = {}
    for node, y in program.v.nodes.items():
        if node.purchase in COMMITTED_KINDS:
            nodes[node.pool] = nodes.get(node.pool, 0.0) + float(y.varValue or 0.0)
    return outcome.report.objective, nodes


def _highs_relaxation(program: Program, time_limit_s: float
                      ) -> tuple[float, dict[PoolKey, float]] | None:
    """:func:`lp_relaxation` by HiGHS on the program's arrays (:func:`~solver.solve.highs.
    model_of`, primal simplex, as :func:`lp_support_block` solves its relaxation), not through
    PuLP: PuLP's copy of a block and its dual simplex took 0.58 CPU-s of a medium × 1 block's
    LP against 0.31 (build included), ten such LPs before the blocks' fleets (benchmarks/
    README.md, "Over periods")."""
    clock = Deadline(time_limit_s)
    clock.reserve_s = 0.0  # the plan's own clock keeps the assembly's reserve
    model = model_of(program)
    relaxed = run(model, clock, time_limit_s, 0.0, relaxation=True)
    if relaxed.status is not SolveStatus.optimal or relaxed.objective is None or (
            relaxed.x is None):
        return None
    nodes: dict[PoolKey, float] = {}
    for node, y in program.v.nodes.items():
        if node.purchase in COMMITTED_KINDS:
            nodes[node.pool] = nodes.get(node.pool, 0.0) + float(relaxed.x[model.index[y.name]])
    return relaxed.objective, nodes


def lp_bound(data: ProgramData, solver: str, time_limit_s: float) -> float | None:
    """The optimum of a block's LP relaxation (:func:`lp_relaxation`); ``None`` where it is
    not solved in time."""
    relaxed = lp_relaxation(data, solver, time_limit_s)
    return None if relaxed is None else relaxed[0]
