"""The stages of a shared-node solve that run before the joint solve, each offering the
incumbent.

Each stage is given a budget by the clock (its share of the time limit, never more than what is
left) and offers the fleets it finds to the :class:`~solver.solve.incumbent.Incumbent`, which
checks every row and keeps the cheapest; the joint solve then starts from the incumbent.
Neighbourhoods of the incumbent carry its cost as a cutoff, so one that cannot beat it stops as
soon as its own bound proves it: a stage that does not pay costs little.

- ``greedy``: the greedy fleet (:mod:`solver.solve.greedy`), in milliseconds: a fleet to write
  if the user stops the solve at once.
- ``lp``: the LP relaxation — a valid lower bound, and the guide of the LP-support stage.
- ``dedicated`` (programs of few slices): the per-workload decomposition's dedicated-pool fleet,
  a restriction of shared nodes (:mod:`solver.solve.decompose`).
- ``grouped-1``, ``grouped-2``, ``grouped-4`` (programs of many slices): the fleets of programs
  whose slices are grouped at their busiest demand (:mod:`solver.solve.aggregate`), each group
  count started from the one before; a count of more than one group stopped by its budget ends
  them, and ``spot`` runs in the place of the finer ones.
- ``spot``: the incumbent's reserved and on-demand node counts held, its spot nodes and every
  replica re-planned (:func:`spot`).
- ``lp-support``: the program with every replica slot the LP relaxation leaves empty fixed to
  zero (a relaxation-induced neighbourhood); ``support`` the same with the incumbent's slots
  added, around each new incumbent.
- ``hours`` (many replicas per slot): each slice's own integer columns re-solved with the rest
  of the incumbent held, slice by slice (:func:`hours`).
- ``elastic`` and ``shrink``: the incumbent's reserved fleet fixed, or allowed only to shrink,
  everything elastic re-planned hour by hour (:mod:`solver.solve.neighbourhood`); repeated
  around each new incumbent while they pay.
- ``canonical`` (after the joint solve, once the fleet is proven): the fleet's node counts
  held, its replicas chosen again by a fixed rule, so that a proven plan is the same from run
  to run.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from models.common import PurchaseKind
from models.plan import SolveStatus
from models.workload import SECONDS_PER_HOUR
from solver.program.build import build_program
from solver.program.data import ProgramData
from solver.program.keys import ReplicaKey
from solver.program.values import start_from_replicas
from solver.program.variables import Program, Variables, node_key
from solver.solve.aggregate import demand_groups, expand_fleet, restrict_to_groups
from solver.solve.clock import Deadline
from solver.solve.greedy import greedy_start
from solver.solve.highs import (
    Held,
    Model,
    Restriction,
    RunResult,
    Vector,
    costliest_first,
    held_model,
    model_of,
    run,
    slice_columns,
)
from solver.solve.incumbent import Incumbent
from solver.solve.neighbourhood import reserved_variables

#: Least budget worth starting a stage with [s]: a stage offered less is skipped.
MIN_STAGE_S = 0.2
#: Programs with more slices than this plan from grouped slices (hourly programs) [1].
GROUP_ABOVE_SLICES = 4
#: Group counts of the grouped stages, in order.
GROUP_COUNTS = (1, 2, 4)
#: Gap the dedicated-pool start is solved to (looser than the plan's: its sub-programs then stop
#: on their gap rather than the clock) and the most it may take [1], [s].
DEDICATED_GAP = 0.05
DEDICATED_MAX_S = 20.0
#: An LP value below this is an empty slot [1].
EMPTY = 1e-9
#: Replicas per used slot in the LP relaxation below which grouped slices start the search
#: (:func:`replicas_per_slot`): 0.2-1.5 on the ×1 benchmark sizes, 2.7-25 at ×25 and ×100 [1].
FEW_REPLICAS = 2.0
#: Gap each slice of the ``hours`` stage is solved to, of the whole program's cost: 1e-4 of
#: a ×25 fleet is ~$100 a month, under a tenth of one B200 node-hour a day [1].
SLICE_GAP = 1e-4
#: Least time a slice of the ``hours`` stage is given [s]: at large ×25 a slice's solve sets
#: up in ~0.2 CPU-s and finds its fleet by ~1.2 CPU-s, so a budget split evenly over 24 slices
#: on a loaded machine (0.7 s of wall time each at load 6) found almost nothing; with less
#: left than this the stage ends, the slices most above the LP done.
SLICE_LEAST_S = 1.5
#: Share of the limit kept for the joint solve once the one-group stage has been stopped by its
#: budget: the stages after it end by the rest of the limit (:func:`grouped`) [1].
JOINT_SHARE = 0.5


@dataclass
class Context:
    """What the stages share: the program, its HiGHS model, the incumbent and the clock."""

    program: Program
    model: Model
    incumbent: Incumbent
    deadline: Deadline
    gap: float
    halt: threading.Event = field(default_factory=threading.Event)
    """Set when the joint solve has ended: the stages stop."""
    abandoned: threading.Event = field(default_factory=threading.Event)
    """Set when the solve overran the deadline and was left behind: it stops at once."""
    on_abandon: list[Callable[[], None]] = field(default_factory=list)
    """Called when the solve is abandoned (records of the stages still running)."""
    first_x: Vector | None = None
    """The greedy fleet, once the ``greedy`` stage has found it: the joint solve's start where
    the stages' fleet is held back from it (:func:`~solver.solve.strategy.solve_shared`)."""
    lp_x: Vector | None = None
    """The LP relaxation's solution, once the ``lp`` stage has solved it."""
    grouped_fleet: tuple[tuple[tuple[str, ...], ...], dict[ReplicaKey, int]] | None = None
    """The last grouped stage's groups and fleet: the next one's start."""
    until_s: float | None = None
    """Seconds on the clock by which every stage still to run ends (``None``: none set)."""
    stopped_groups: set[int] = field(default_factory=set)
    """Group counts whose grouped stage was stopped by its budget (its gap not proved)."""
    joint_x: Vector | None = None
    """The cheapest fleet the joint solve found itself (not one it was handed), held or not:
    the polish's start (:func:`~solver.solve.strategy._after_joint`)."""

    def halted(self) -> bool:
        return self.halt.is_set() or self.deadline.expired()


def always(ctx: Context) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """A named step, the share of the time limit it may use, what it does, and when."""

    name: str
    share: float
    act: Callable[[Context, float], None]
    """Run within the budget given [s]."""
    when: Callable[[Context], bool] = always
    """Whether it is worth running, given what the stages before it found."""
    least_s: float = MIN_STAGE_S
    """Least budget it is started with [s]."""


def replicas_per_slot(ctx: Context) -> float | None:
    """Replicas the LP relaxation holds per replica slot it uses (``None``: no LP yet).

    Below :data:`FEW_REPLICAS` the program is a node-rounding puzzle (a few nodes hold the
    fleet) and grouped slices find the good fleets; above it the fleet is hundreds of replicas,
    the LP's choices are close to the integer ones, and grouping slices loses the hour-by-hour
    capacity that is then worth more than it (benchmarks/results/scale.md, "at scale").
    """
    if ctx.lp_x is None:
        return None
    cols = ctx.model.columns_named([x.name for x in ctx.program.v.replicas.values()])
    used = ctx.lp_x[cols][ctx.lp_x[cols] > EMPTY]
    return float(used.mean()) if len(used) else None


def few_replicas(ctx: Context) -> bool:
    """The LP holds few replicas per slot it uses (false where there is no LP to tell)."""
    per_slot = replicas_per_slot(ctx)
    return per_slot is not None and per_slot < FEW_REPLICAS


def many_replicas(ctx: Context) -> bool:
    """The LP holds many replicas per slot it uses (false where there is no LP to tell)."""
    per_slot = replicas_per_slot(ctx)
    return per_slot is not None and per_slot >= FEW_REPLICAS


def run_stages(ctx: Context, stages: Sequence[Stage], until_s: float | None = None) -> None:
    """Run the stages in order, each within its budget (and, with ``until_s``, before that many
    seconds on the clock), until halted; record each one run."""
    for stage in stages:
        if ctx.halted():
            return
        if not stage.when(ctx):
            continue
        budget = ctx.deadline.share(stage.share)
        for until in (until_s, ctx.until_s):
            if until is not None:
                budget = min(budget, until - ctx.deadline.elapsed())
        if budget < stage.least_s:
            continue
        started = ctx.deadline.elapsed()
        ctx.incumbent.running(stage.name, True)
        try:
            stage.act(ctx, budget)
        finally:
            ctx.incumbent.running(stage.name, False)
            ctx.incumbent.record(stage.name, ctx.deadline.elapsed() - started)


def _run(ctx: Context, model: Model, budget: float, *, restriction: Restriction | None = None,
         start: Vector | None = None, cutoff: float | None = None, relaxation: bool = False,
         objective: Vector | None = None, gap: float | None = None,
         on_solution: Callable[[Vector], object] | None = None) -> RunResult:
    return run(model, ctx.deadline, budget, ctx.gap if gap is None else gap,
               restriction=restriction, start=start,
               cutoff=cutoff, relaxation=relaxation, objective=objective,
               on_solution=on_solution,
               halt=lambda: ctx.halt.is_set() or ctx.abandoned.is_set())


# --- starts -----------------------------------------------------------------------------------


def greedy(ctx: Context, budget: float) -> None:
    """The greedy fleet: each workload's cheapest alone, or where those together break a
    stock, each taking what the workloads before it left. Without the second a new user's
    1,080-GPU scenario with stock binding had no greedy fleet, and at a 2-s limit HiGHS's
    first incumbent, every GPU on offer (8.67 M USD/month), was the plan; within stock: 2.53 M."""
    values = greedy_start(ctx.program) or greedy_start(ctx.program, within_stock=True)
    if values is not None:
        ctx.first_x = ctx.model.vector(values)
        ctx.incumbent.offer(ctx.first_x, "greedy")


def lp(ctx: Context, budget: float) -> None:
    """The LP relaxation: its optimum is a valid lower bound; its solution guides lp-support."""
    result = _run(ctx, ctx.model, budget, relaxation=True)
    if result.bound is not None:
        ctx.incumbent.raise_bound(result.bound, "lp")
        ctx.lp_x = result.x


def dedicated(ctx: Context, budget: float) -> None:
    """The dedicated-pool fleet of the per-workload decomposition (a restriction)."""
    from solver.solve.backends import integer_value
    from solver.solve.decompose import solve_decomposed

    data = dataclasses.replace(ctx.program.data, share_nodes=False)
    program, outcome = solve_decomposed(data, "highs", min(budget, DEDICATED_MAX_S),
                                        max(ctx.gap, DEDICATED_GAP))
    if outcome.has_solution:
        fleet = {k: n for k, x in program.v.replicas.items() if (n := integer_value(x)) > 0}
        _offer_replicas(ctx, fleet, "dedicated")


def grouped(count: int) -> Callable[[Context, float], None]:
    """The stage planning the day as ``count`` groups of slices at their busiest demand."""

    def act(ctx: Context, budget: float) -> None:
        data = ctx.program.data
        groups = demand_groups(data, count)
        program = build_program(restrict_to_groups(data, groups))
        model = model_of(program)
        # no cutoff: a cost row measured to slow the demo's one-group solve 2x (2,318 nodes
        # against 840, 5.8 s against 3.2 s CPU), and the group's fleet is wanted even where
        # it is dearer than the incumbent: it starts the next group count
        result = _run(ctx, model, budget, start=_grouped_start(ctx, program, model, groups))
        if result.status is not SolveStatus.optimal:
            ctx.stopped_groups.add(count)
            if count == 1:
                _keep_for_joint(ctx)
        if result.x is None:
            return
        fleet = {k: n for k, var in program.v.replicas.items()
                 if (n := round(result.x[model.index[var.name]])) > 0}
        ctx.grouped_fleet = (groups, fleet)
        full = tuple((s.name,) for s in data.slices)
        _offer_replicas(ctx, expand_fleet(ctx.program, full, groups, fleet), f"grouped-{count}")

    return act


def finer_groups_pay(ctx: Context) -> bool:
    """The LP holds few replicas per slot and no grouped stage of more than one group has been
    stopped by its budget: a finer one (twice the slices of one not solved in its share) would
    be stopped too, its fleet what the clock left.

    At large ×1 ``grouped-2`` ran to its budget in every 60-s run recorded; where it had found
    a fleet of its own, the spot neighbourhood of that fleet (:func:`spot`) reached in under a
    second about what ``grouped-4`` reached in its whole share. Medium ×1's ``grouped-2``
    proves its gap, so its stages are unchanged (benchmarks/results/scale.md, "Run O"). The
    one-group stage stopped has its own rule (:func:`_keep_for_joint`)."""
    return few_replicas(ctx) and not any(c > 1 for c in ctx.stopped_groups)


def finer_groups_skipped(finest: int) -> Callable[[Context], bool]:
    """Whether the grouped stages ended before ``finest`` groups (:func:`finer_groups_pay`):
    the ``spot`` stage runs in their place."""

    def skipped(ctx: Context) -> bool:
        return few_replicas(ctx) and any(1 < c < finest for c in ctx.stopped_groups)

    return skipped


def _keep_for_joint(ctx: Context) -> None:
    """The one-group stage was stopped by its budget: the stages after it end by
    1 − :data:`JOINT_SHARE` of the limit, the rest kept for the joint solve.

    The one-group program (the static fleet at the day's peak) is the easiest the stages
    solve; not proved within its share, it says they will not finish in theirs on this machine
    and load (the finer groups are often stopped anyway, at large ×1 on a quiet machine too).
    On large ×1 at load 3–4 grouped-1 was stopped at its 9 s in every run, the grouped stages
    and ``shrink`` then ran to their budgets (``shrink`` past them, to 15.5 s), and the joint
    solve — whose root is the plan's bound — was left 0.5–17 s: bound 85–93.6 k, against
    95.2–96.0 k with half the limit kept for it and the fleet cheaper in 3 of 5 pairs, the same
    in 2 (benchmarks/results/scale.md, "Run G"). Where grouped-1 proves its gap (medium ×1, large ×1
    on a quiet machine, the demo) the stages keep their shares."""
    until = (1 - JOINT_SHARE) * ctx.deadline.limit_s
    ctx.until_s = until if ctx.until_s is None else min(ctx.until_s, until)


def _grouped_start(ctx: Context, program: Program, model: Model,
                   groups: tuple[tuple[str, ...], ...]) -> Vector | None:
    """The previous group count's fleet as a start of this one (its groups refine those)."""
    if ctx.grouped_fleet is None:
        return None
    source_groups, fleet = ctx.grouped_fleet
    values = start_from_replicas(program, expand_fleet(program, groups, source_groups, fleet))
    return None if values is None else model.vector(values)


def _offer_replicas(ctx: Context, fleet: dict[ReplicaKey, int], stage: str) -> bool:
    values = start_from_replicas(ctx.program, fleet)
    return values is not None and ctx.incumbent.offer(ctx.model.vector(values), stage)


# --- neighbourhoods of the incumbent -----------------------------------------------------------


def lp_support(ctx: Context, budget: float) -> None:
    """The program with every replica slot the LP relaxation leaves empty fixed to zero."""
    if ctx.lp_x is None:
        return
    _improve(ctx, budget, _empty_slots(ctx, ctx.lp_x), "lp-support")


def support(ctx: Context, budget: float) -> None:
    """The program with every replica slot that both the LP relaxation and the incumbent leave
    empty fixed to zero: the incumbent's neighbourhood widened by the LP's choices (and the
    LP's support widened by what the joint solve or a stage found)."""
    x, _ = ctx.incumbent.fleet()
    if ctx.lp_x is None or x is None:
        return
    _improve(ctx, budget, _empty_slots(ctx, np.maximum(ctx.lp_x, x)), "support")


def _empty_slots(ctx: Context, x: Vector) -> Restriction:
    """Every replica column that ``x`` leaves empty, fixed to zero."""
    replicas = ctx.model.columns_named([v.name for v in ctx.program.v.replicas.values()])
    empty = replicas[x[replicas] < EMPTY]
    zeros = np.zeros(len(empty))
    return Restriction(empty, zeros, zeros)


def hours(ctx: Context, budget: float, least_left_s: float = SLICE_LEAST_S) -> None:
    """Slice by slice: each slice's own integer columns (its on-demand and spot nodes and
    replicas, their loss binaries) re-solved with every other integer column held at the
    incumbent's value, the slices whose incumbent costs most above the LP's first.

    With the reserved fleet and the other slices held, a slice is a program of a few hundred
    columns that HiGHS solves to :data:`SLICE_GAP` of the whole cost in a second or two, where
    the joint solve (or the elastic restriction, every slice at once) does not leave its root
    at ×25: it rounds each slice's hourly node counts as a whole. Volume rows spanning the
    slices stay in each restriction, met by the slices held; the fleet found is the program's.
    Each slice gets an equal part of what is left of the budget, at least
    :data:`SLICE_LEAST_S` (never more than is left), so a slice that ends early leaves its
    seconds to the next; with less than ``least_left_s`` left the stage ends (before the joint
    solve, whose seconds those are, :data:`SLICE_LEAST_S`).
    """
    own = slice_columns(ctx.program, ctx.model)
    ends = ctx.deadline.elapsed() + budget
    while _hours_pass(ctx, own, ends, least_left_s):
        pass


def _hours_pass(ctx: Context, own: dict[str, npt.NDArray[np.int32]], ends: float,
                least_left_s: float = SLICE_LEAST_S) -> bool:
    """One pass of :func:`hours` over the slices, ending by ``ends`` on the clock, or with
    less than ``least_left_s`` left [s]; whether it found a cheaper fleet and had every slice
    solved (then another pass may pay: the volume rows tie the slices)."""
    x, before = ctx.incumbent.fleet()
    if x is None or before is None:
        return False
    model = ctx.model
    order = costliest_first(model, own, x, ctx.lp_x)
    for i, s in enumerate(order):
        left = ends - ctx.deadline.elapsed()
        if ctx.halted() or left < least_left_s:
            return False
        per_slice = min(max(left / (len(order) - i), SLICE_LEAST_S), left)
        x, _ = ctx.incumbent.fleet()
        assert x is not None
        part = held_model(model, own[s], x)

        def offer(y: Vector, part: Held = part) -> bool:
            return ctx.incumbent.offer(part.expand(y), "hours")

        result = _run(ctx, part.model, per_slice, start=x[part.columns], gap=SLICE_GAP,
                      on_solution=offer)
        if result.x is not None:
            offer(result.x)
    _, after = ctx.incumbent.fleet()
    return after is not None and after < before * (1 - SLICE_GAP)


def elastic(ctx: Context, budget: float) -> None:
    """The incumbent's reserved fleet fixed; elastic capacity re-planned slice by slice."""
    x, _ = ctx.incumbent.fleet()
    if x is None:
        return
    cols = ctx.model.columns_named([v.name for v in reserved_variables(ctx.program)])
    held = np.round(x[cols])
    _improve(ctx, budget, Restriction(cols, held, held), "elastic")


def shrink(ctx: Context, budget: float) -> None:
    """The incumbent's reserved fleet may only shrink; elastic capacity free."""
    x, _ = ctx.incumbent.fleet()
    if x is None:
        return
    cols = ctx.model.columns_named([v.name for v in reserved_variables(ctx.program)])
    _improve(ctx, budget, Restriction(cols, ctx.model.lower[cols], np.round(x[cols])), "shrink")


def spot(ctx: Context, budget: float) -> None:
    """The incumbent's reserved and on-demand node counts held; its spot nodes and every
    replica (on the held nodes too) re-planned.

    ``elastic`` holds the reserved replicas with the reserved nodes, so a replica cannot move
    between a reserved node and an hour's spot nodes; ``support`` holds every slot the LP and
    the incumbent leave empty. Here the nodes paid for all day or bought on demand stay, and
    what runs on them is chosen again with the spot nodes hour by hour: a restriction HiGHS
    solves in under a second at large ×1, where it found the fleet the joint solve's tree finds
    late in its search (benchmarks/results/scale.md, "Run N", "Run O")."""
    x, _ = ctx.incumbent.fleet()
    if x is None:
        return
    held = [y.name for k, y in ctx.program.v.nodes.items() if k.purchase is not PurchaseKind.spot]
    cols = ctx.model.columns_named(held)
    values = np.round(x[cols])
    _improve(ctx, budget, Restriction(cols, values, values), "spot")


def _improve(ctx: Context, budget: float, restriction: Restriction, stage: str) -> None:
    """Solve a restriction with the incumbent's cost as cutoff (and as start where it lies
    inside), offering what it finds."""
    x, cost = ctx.incumbent.fleet()
    inside = x is not None and bool(np.all(
        (x[restriction.columns] >= restriction.lower - 1e-9)
        & (x[restriction.columns] <= restriction.upper + 1e-9)))
    result = _run(ctx, ctx.model, budget, restriction=restriction,
                  start=x if inside else None,
                  cutoff=None if cost is None or inside else cost * (1 - 1e-7),
                  on_solution=lambda found: ctx.incumbent.offer(found, stage))
    if result.x is not None:
        ctx.incumbent.offer(result.x, stage)


# --- the canonical allocation -------------------------------------------------------------------


def canonical(ctx: Context, budget: float) -> None:
    """The incumbent's node counts held and its replicas chosen again: the fewest replicas
    those nodes can hold the program with, as HiGHS finds them from no start.

    Fleets of the same nodes cost the same (the cost is the nodes'), and a solve that proves
    its gap may end on any of them — which one depends on the starts it was given. This solve
    depends on the node counts alone (no start, a fixed objective; HiGHS is deterministic), so
    two runs that end on the same nodes write the same plan. Kept only where it ends on its
    gap, not on the clock (then it too would depend on timing).
    """
    x, _ = ctx.incumbent.fleet()
    if x is None:
        return
    nodes = ctx.model.columns_named([y.name for y in ctx.program.v.nodes.values()])
    held = np.round(x[nodes])
    keys = list(ctx.program.v.replicas)
    replicas = ctx.model.columns_named([ctx.program.v.replicas[k].name for k in keys])
    objective = np.zeros(ctx.model.columns_count)
    data, v = ctx.program.data, ctx.program.v
    rates = [_rate(v, k, data.workload(k.workload).utilization) for k in keys]  # [1/s]
    busiest: dict[str, float] = {}  # each workload's busiest demand [1/s]
    for (name, _), rps in data.demand_rps.items():
        busiest[name] = max(busiest.get(name, 0.0), rps)
    best: dict[str, float] = {}  # each workload's best replica [1/s]
    for k, rate in zip(keys, rates, strict=True):
        best[k.workload] = max(best.get(k.workload, rate), rate)
    # each workload's busiest demand, else (no demand rate in any slice) its best replica
    peak = {w: busiest[w] if busiest.get(w, 0.0) > 0.0 else rate for w, rate in best.items()}
    share = np.array([rate / peak[k.workload] for k, rate in zip(keys, rates, strict=True)])
    free = ctx.model.cost[replicas] == 0.0  # a replica costs nothing beyond its node's GPUs
    # the paid nodes' GPUs filled with the most capacity, as shares of each workload's peak (a
    # replica that carries a cost of its own: the fewest), never more cost: an idle GPU of a
    # paid node is headroom thrown away (docs/program.md, `canonical`)
    objective[replicas] = np.where(free, -share, 1.0)
    result = _run(ctx, ctx.model, budget, restriction=Restriction(nodes, held, held),
                  objective=objective)
    if result.status is SolveStatus.optimal and result.x is not None:
        ctx.incumbent.settle(result.x, "canonical")


# --- a lower bound without a solve ---------------------------------------------------------------


def capacity_bound(program: Program) -> float:
    """A valid lower bound in milliseconds (:func:`variables_bound` of the program's
    variables) [currency/month]."""
    return variables_bound(program.data, program.v)


def variables_bound(data: ProgramData, v: Variables) -> float:
    """A valid lower bound from the variables alone (no row needed: it holds for a build
    stopped after its variables): each workload's busiest need bought at the cheapest price per
    unit of capacity any of its slots offers [currency/month].

    A fleet's cost is at least the cost of the nodes holding its replicas, so at least each
    replica's share of its node's cost (the node's objective coefficient × TP ÷ GPUs per
    node); a workload's replicas running in its busiest slice carry that slice's demand (a
    volume: its daily work) at least at the slots' best cost per request per second; replicas
    are the workload's own, so the workloads' figures add up. Survivability, node packing and
    stock only add to it. 0 where the objective has a negative term (a credit).
    """
    objective = v.cost  # the program's objective (build_program)
    if any(c < 0 for c in objective.values()) or objective.constant < 0:
        return 0.0
    node_cost = {key: float(objective.get(y, 0.0)) for key, y in v.nodes.items()}
    reserved: dict[str, float] = {}  # cheapest cost per req/s of a reserved slot, per workload
    elastic: dict[tuple[str, str], float] = {}  # ... of an elastic slot, per workload and slice
    for k in v.replicas:
        o = v.offer[k.pool]
        monthly = node_cost.get(node_key(data, k), 0.0) * k.tp / o.gpus_per_node
        ratio = monthly / _rate(v, k, data.workload(k.workload).utilization)
        if k.slice is None:
            reserved[k.workload] = min(reserved.get(k.workload, math.inf), ratio)
        else:
            key = (k.workload, k.slice)
            elastic[key] = min(elastic.get(key, math.inf), ratio)
    total = 0.0
    for w in data.workloads:
        base = reserved.get(w.name, math.inf)
        slices = data.demand_slices(w.name)
        if w.name in data.volume_requests:  # per request a day: a slot runs its hours
            hours = {s: data.hours_in_window.get((w.name, s), 0) for s in slices}
            window = sum(hours.values())
            costs = [base / (SECONDS_PER_HOUR * window)] if window else []
            costs += [elastic.get((w.name, s), math.inf) / (SECONDS_PER_HOUR * h)
                      for s, h in hours.items() if h > 0]
            cheapest = min(costs, default=math.inf)
            if math.isfinite(cheapest):
                total += data.volume_requests[w.name] * cheapest
            continue
        needs = [data.demand_rps[(w.name, s)] * min(base, elastic.get((w.name, s), math.inf))
                 for s in slices]
        total += max((n for n in needs if math.isfinite(n)), default=0.0)
    return total + float(objective.constant)


def _rate(v: Variables, k: ReplicaKey, utilization: float) -> float:
    """Capacity of one replica of a slot at the workload's target utilization [1/s]."""
    return max(utilization * v.offer[k.pool].available_share * v.rate[k], math.ulp(1.0))
