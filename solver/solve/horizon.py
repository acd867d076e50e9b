"""Plan over periods and demand scenarios: build, solve, and read back orders and periods.

The program is :mod:`solver.periods`; this module gets a :class:`~models.plan.Plan` out of it.
Every figure of the plan is recomputed from the fleet and orders it buys: each period's
allocations and nodes with the single-period arithmetic of :mod:`solver.planner` (costs,
survivability), committed pools shown as the nodes held (idle or not) at the price of the
orders held, and each order's dates and costs from its quote.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar

from models.capacity import CapacityTable
from models.common import COMMITTED_KINDS, PurchaseKind
from models.errors import InputError, Problem
from models.horizon import DemandScenario, HeldNodes, InventoryKind, add_months
from models.plan import (
    BUILD_STAGE,
    CAPACITY_STAGE,
    FALLBACK_STAGE,
    READ_STAGE,
    Cost,
    HorizonSummary,
    NodeCount,
    Order,
    PeriodGpus,
    PeriodPlan,
    PeriodWorkload,
    Plan,
    ScenarioCost,
    Shortfall,
    Slice,
    SolverReport,
    SolverStage,
    SolveStatus,
)
from models.scenario import Scenario
from solver.program.build import build_program
from solver.program.data import ProgramData
from solver.program.keys import PoolKey, ReplicaKey
from solver.program.orders import arrives, horizon_start_from, plan_date_of
from solver.program.periods import (
    BASE,
    Block,
    HorizonData,
    HorizonProgram,
    OrderKey,
    Period,
    block_scenario,
    build_horizon_data,
    build_horizon_program,
    monthly_cost,
)
from solver.program.values import (
    load_values,
    objective_of,
    set_auxiliaries,
    start_from_replicas,
    violated_rows,
)
from solver.program.variables import BuildStopped, NameBook, Program, Variables
from solver.solve.assemble import extract_fleet, finish_plan, scenario_fingerprint
from solver.solve.backends import SolveOutcome, integer_value, solve
from solver.solve.block_plans import (
    BLOCK_FAMILIES,
    BlockPlans,
    capped,
    committed_nodes,
    is_direct,
    lp_bound,
    lp_relaxation,
    plan_blocks,
    replicas_of,
)
from solver.solve.clock import Deadline
from solver.solve.diagnose import DIAGNOSIS_STAGE, ELASTIC_MIN_S, diagnose, seconds_left
from solver.solve.greedy import greedy_start, keep_better
from solver.solve.held_blocks import HeldBlocks
from solver.solve.held_blocks import held_nodes as held_nodes_of
from solver.solve.highs import Model, Progress, model_of, run
from solver.solve.order_choice import (
    ORDER_CHOICE_LATE_S,
    ORDER_CHOICE_S,
    choose_orders,
    committed_pools,
    held_block,
    in_time_shortfalls,
    on_demand_beyond,
    on_demand_room,
)
from solver.solve.order_nudge import nudge_largest
from solver.solve.polish import POLISH_MIN_S, POLISH_SHARE, POLISH_STAGE, robust_polish
from solver.solve.root_beside import RootBeside, beside_worth
from solver.survivability.failures import slice_demand_rps, usable_capacity_rps
from solver.survivability.fleet import fleet_from_plan

_T = TypeVar("_T")

#: Share of the time limit (after the build) the first fleet may take: the blocks planned on
#: their own, twice; small programs take less and leave the rest to the joint solve [1].
START_SHARE = 0.9


def plan_horizon(
    scenario: Scenario,
    solver: str = "highs",
    time_limit_s: float = 60.0,
    gap: float = 0.01,
    robust: bool = False,
    table_for: Callable[[Scenario], CapacityTable] | None = None,
    share_limit_s: float | None = None,
    stop: Deadline | None = None,
    workers: int = 1,
    on_progress: Callable[[Progress, str], None] | None = None,
) -> Plan:
    """The cheapest orders and fleets over a scenario's horizon (or from its inventory).

    ``time_limit_s`` stops every stage (the stages limited in work end before it, a safety
    stop); ``share_limit_s`` (at most it; default: it) is what the stages planned in shares of
    the time take: blocks too large to be solved whole, and the joint solve after them. With
    such blocks and no shared nodes, HiGHS first solves the joint program from no start
    (:func:`cold_joint_solve`); the blocks' start follows only if it abandons. ``stop``: the
    user's clock (Ctrl-C): its stop request ends every stage, and the best fleet so far comes
    out ``interrupted`` with its bound. ``workers``: processes the blocks planned in shares of
    the time are planned in side by side
    (:func:`~solver.solve.block_plans.plan_blocks`; 1: one after the other, in this one).
    ``on_progress``: told where the plan stands (seconds on ``stop``'s clock, best fleet's
    cost, best bound) and the stage — as each stage begins and ends, and while HiGHS solves
    the joint program (``plan``'s progress lines: a plan over periods was silent for minutes)."""
    started = time.perf_counter()
    before_s = stop.elapsed() if stop is not None else 0.0  # the start-up, on the plan's clock
    if workers > 1:
        from solver.solve.workers import warm_up

        warm_up()  # the fork server imports the solver while the program is built
    stop = stop or Deadline(time_limit_s)
    deadline, shares = stage_clocks(stop, time_limit_s, share_limit_s)
    if table_for is None:
        from solver.capacity.table import cached_tables

        # the GPUs the whole scenario sells or holds: a block's scenario holds no inventory
        table_for = cached_tables(scenario.gpus_sold_or_held())
    stages = _Stages(stop, on_progress)
    tables = _TimedTables(table_for, stages)
    data = build_horizon_data(scenario, tables)
    hp = build_horizon_program(data, robust=robust)
    built_s = shares.elapsed()  # on the clock the cold solve's check counts on
    # blocks all solved whole under their node limits: the safety stop is the only clock
    whole = all(is_direct(b.data, solver) for b in data.blocks)
    as_program = joint_program(hp)
    # the capacity tables (one per distinct period demand of a bursty workload) and the
    # program, inside the time limit: a new user's re-plan spent 632 s of a 600 s safety stop
    # building them and took the fallback fleet, and nothing said where the time had gone;
    # the seconds before (the start-up, reading the scenario) and the tables' own
    stages.started(before_s, tables.seconds, started)
    cold_path = (solver == "highs" and not whole
                 and not any(b.data.share_nodes for b in data.blocks))
    # the root beside the blocks (no cold solve on this path) bounds the joint program from
    # its own LP on: the LP before the search is solved only where it does not run, and the
    # HiGHS model of the joint program is built once for both and for the joint solve
    beside = None if cold_path else _root_beside(as_program, shares, solver, whole, False,
                                                 workers)
    lp_model = (beside[0] if beside is not None else None if cold_path
                else early_lp_bound(as_program, deadline if whole else shares, stages))
    cold = None
    if cold_path:
        began = stages.begin(COLD_STAGE)
        cold = cold_joint_solve(as_program, shares, gap, built_s,
                                on_progress=stages.forward(COLD_STAGE))
        stages.add(COLD_STAGE, began, cold.outcome.report.objective
                   if cold.outcome.has_solution else None, cold.outcome.report.bound)
    tried: tuple[BlockPlans, ...] = ()
    if cold is not None and not cold.abandoned:
        outcome = keep_better(as_program, cold.outcome, None, started, gap)
        timed = True
    else:
        began = stages.begin(BLOCKS_STAGE)
        start, block_bound, timed, tried = horizon_start(
            hp, solver, _unspent_s(deadline if whole else shares) * START_SHARE, gap,
            deadline if whole else shares, workers=workers,
            on_block=stages.block, on_block_news=stages.block_news, on_fleet=stages.fleet,
            joint=None if beside is None else beside[0])
        stages.add(BLOCKS_STAGE, began, None if start is None else objective_of(as_program,
                                                                                  start),
                   block_bound)
        if cold is not None and cold.values is not None and (
                start is None or objective_of(as_program, cold.values)
                < objective_of(as_program, start)):
            start = cold.values  # the cold solve's fleet is the cheaper start
        began = stages.begin(JOINT_STAGE)
        if solver == "highs":
            # blocks planned in shares of the time: the joint solve runs to the time limit
            outcome = joint_solve(as_program, shares if timed else deadline, gap, start,
                                  nodes=None if timed else JOINT_NODES,
                                  model=next((p.joint for p in tried if p.joint is not None),
                                             lp_model), on_progress=stages.forward(JOINT_STAGE))
        else:
            left_s = max(_unspent_s(shares), 0.5)
            outcome = solve(hp.prob, solver, left_s, gap, start=start)
        own = outcome.report.bound
        outcome = keep_better(as_program, outcome, start, started, gap)
        # its fleet as verified (one that breaks a row is not kept); its bound as HiGHS proved it
        stages.add(JOINT_STAGE, began, outcome.report.objective if outcome.has_solution
                   else None, own)
    if beside is not None:
        began = stages.begin(BESIDE_STAGE)
        # a joint solve that ended short of its clock without proving its gap (no model, or
        # no fleet to start from) leaves the root beside it that time
        root = beside[1]
        bound = root.bound(
            0.0 if outcome.status is SolveStatus.optimal or shares.expired() else shares.left())
        stages.add(BESIDE_STAGE, began, None, bound, cpu_s=root.cpu_s)
    if hp.worst is not None and outcome.has_solution and solver == "highs":
        # the least expected cost at the robust fleet's worst (P7): a clock and a node limit
        # as the joint stage's, so a plan solved whole polishes to the same fleet every run
        outcome = robust_polish_stage(hp, as_program, outcome, stages,
                                      shares if timed else deadline, gap, started,
                                      nodes=None if timed else JOINT_NODES,
                                      model=next((p.joint for p in tried if p.joint is not None),
                                                 lp_model))
    if stages.bound is None and outcome.status is not SolveStatus.infeasible:
        last_lp_bound(as_program, lp_model, stages)
    # the bound is the best any stage proved: each bounds the whole joint program
    outcome = stages.recorded(with_bound(outcome, stages.bound, gap))
    if (outcome.status is SolveStatus.optimal and outcome.report.gap is not None
            and outcome.report.gap > gap + 1e-9):
        # optimal means proven within the gap asked: the re-plan of quarterly_q2.yaml at
        # --time-limit 20 said "proven within 100.00% of the cheapest" (HiGHS's status, given
        # its last instant, against a bound of 0)
        outcome = dataclasses.replace(outcome, status=SolveStatus.feasible)
    if timed and outcome.status is not SolveStatus.optimal and outcome.has_solution:
        # some stage ran on a share of the time: its fleet depends on the machine's load
        outcome = dataclasses.replace(outcome, status=SolveStatus.time_limit)
    if (outcome.has_solution and outcome.status is SolveStatus.time_limit and tried
            and not stop.stopped and fallback_may_be_cheaper(outcome)):
        # a fleet of blocks cut by the clock can cost more than the simple one (a stop asked
        # for is answered with the fleet held, as before)
        outcome = cheaper_fallback(as_program, hp, tried, started, outcome, solver)
    if not outcome.has_solution and outcome.status is not SolveStatus.infeasible:
        # no stage found a fleet within the time limit: a simple one, said to be so
        outcome = fallback_outcome(as_program, hp, tried, stages.bound, started, outcome,
                                   solver)
    if stop.stopped and outcome.status not in (SolveStatus.optimal, SolveStatus.infeasible):
        # the user stopped it: the best fleet so far, said to be so
        outcome = dataclasses.replace(outcome, status=SolveStatus.interrupted)
    outcome = on_the_plans_clock(outcome, stop)
    slices = tuple(Slice(name=b.name, hours=b.hours) for b in scenario.policy.time_blocks)
    base = Plan(scenario=scenario.name, status=outcome.status, solver=outcome.report,
                cost=Cost(per_month=0.0, per_million_tokens=None, per_million_output_tokens=None,
                          currency=scenario.policy.currency),
                slices=slices, fingerprint=scenario_fingerprint(scenario))
    if not outcome.has_solution:
        if outcome.status is SolveStatus.infeasible:
            # what is left of the plan's clock, as a single-period plan's diagnosis gets
            stages.say(DIAGNOSIS_STAGE)
            return base.model_copy(update={"diagnosis": diagnose_blocks(
                data, solver, max(deadline.left(), ELASTIC_MIN_S))})
        if data.monthly_budget is not None and not stop.stopped:
            # none within the budget in time: what the periods cost without it
            return base.model_copy(update={"diagnosis": budget_diagnosis(
                hp, tried, deadline.limit_s)})
        return base
    return assemble(base, scenario, hp, robust)


def _root_beside(as_program: Program, shares: Deadline, solver: str, whole: bool, cold: bool,
                 workers: int) -> tuple[Model, RootBeside] | None:
    """The joint program's HiGHS model and its root solved beside the blocks until ``shares``
    ends (:class:`~solver.solve.root_beside.RootBeside`), where the blocks are planned in shares
    of the time in this one process (``whole`` false, ``workers`` 1), no cold joint solve takes
    the time (``cold`` false), HiGHS solves, and the machine and the clock leave the root its
    core and its time (:func:`~solver.solve.root_beside.beside_worth`); else ``None``. The
    model is the one the held blocks and the joint solve take after (built once)."""
    if not ROOT_BESIDE or solver != "highs" or whole or cold or workers > 1 or not beside_worth(
            shares):
        return None
    try:
        model = model_of(as_program, stop=shares.expired)
    except BuildStopped:
        return None
    try:
        return model, RootBeside(model, shares)
    except (ValueError, OSError):  # no fork server here (Windows), or no process to be had
        return None


#: Whether a plan over periods whose blocks are planned in shares of the time solves the joint
#: program's root beside them, in a process of its own (:func:`_root_beside`) [bool].
ROOT_BESIDE = True


def robust_polish_stage(hp: HorizonProgram, program: Program, outcome: SolveOutcome,
                        stages: _Stages, clock: Deadline, gap: float, started: float,
                        nodes: int | None = None, model: Model | None = None) -> SolveOutcome:
    """``outcome`` (a ``--robust`` plan's fleet, in the variables) after the stage
    ``POLISH_STAGE`` (:func:`~solver.solve.polish.robust_polish`): the least expected cost
    HiGHS finds at no dearer worst case, in ``POLISH_SHARE`` of what ``clock`` leaves (not
    tried in less than ``POLISH_MIN_S``), ``nodes`` at most. Its objective is the worst cost
    of the fleet kept; its bound stays the robust search's (the polish proves none on the
    worst); ``seconds`` counted from ``started``, a ``time.perf_counter()`` reading.
    ``model``: the joint program's HiGHS model where the plan built one (built once)."""
    time_s = POLISH_SHARE * clock.left()
    if len(hp.data.scenarios) < 2 or clock.expired() or time_s < POLISH_MIN_S:
        return outcome  # one demand scenario: its worst is its expected cost
    began = stages.begin(POLISH_STAGE)
    polished = robust_polish(hp, program, clock, time_s, gap, nodes, model)
    stages.add(POLISH_STAGE, began, outcome.report.objective if polished is None
               else polished.worst, None)
    report = outcome.report.model_copy(update={"seconds": time.perf_counter() - started})
    if polished is not None and polished.improved:
        bound, worst = report.bound, polished.worst
        report = report.model_copy(update={"objective": worst, "gap": None if bound is None
                                           else max(worst - bound, 0.0) / worst if worst > 0
                                           else 0.0})
    return dataclasses.replace(outcome, report=report)


def stage_clocks(stop: Deadline, time_limit_s: float, share_limit_s: float | None
                 ) -> tuple[Deadline, Deadline]:
    """The clocks of a plan over periods' stages, ``(safety stop, shares)``: ``time_limit_s``
    and ``share_limit_s`` (at most it; default: it) counted from ``stop``'s start, less the
    time it keeps back for writing, and stopped with it (:meth:`~solver.solve.clock.Deadline.
    along`): one stopwatch from the process's start where ``fleetplan plan`` gives ``stop``
    (they counted from this call, after the start-up, and the files followed them)."""
    shares_s = time_limit_s if share_limit_s is None else min(share_limit_s, time_limit_s)
    # a safety stop: the stages are limited in work
    return stop.along(time_limit_s), stop.along(shares_s)


class _TimedTables:
    """A plan's ``table_for`` that keeps the seconds its calls took (the capacity tables' build,
    recorded as :data:`~models.plan.CAPACITY_STAGE`) and tells ``stages`` when the first
    begins: under load the first progress line came 15 s into a plan."""

    def __init__(self, table_for: Callable[[Scenario], CapacityTable], stages: _Stages
                 ) -> None:
        self.table_for, self.stages = table_for, stages
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, scenario: Scenario) -> CapacityTable:
        if self.calls == 0:
            self.stages.say(CAPACITY_STAGE)
        self.calls += 1
        began = time.perf_counter()
        try:
            return self.table_for(scenario)
        finally:
            self.seconds += time.perf_counter() - began


def early_lp_bound(program: Program, clock: Deadline, stages: _Stages) -> Model | None:
    """The joint program's LP relaxation before any stage, on the stages' clock (at most
    :data:`LP_BOUND_S`), recorded as stage ``lp`` with its bound: a bound every plan carries,
    its seconds inside the time limit — it was solved after the stages where none of them
    proved a bound, after the limit (1.3–2.7 s at load 11–16; benchmarks/results/clock.md, "The
    stopwatch over periods"). The HiGHS model it was solved on (the joint solve's, later);
    ``None`` where the clock had run out before it could be copied."""
    began = stages.begin(LP_STAGE)
    try:
        model = model_of(program, stop=clock.expired)
    except BuildStopped:
        return None
    relaxed = run(model, clock, min(LP_BOUND_S, clock.left()), 0.0, relaxation=True)
    if relaxed.status is SolveStatus.optimal or relaxed.seconds > 0.0:
        stages.add(LP_STAGE, began, None, relaxed.objective
                   if relaxed.status is SolveStatus.optimal else None)
    return model


#: The longest the joint program's LP relaxation is given where no stage proved a bound and
#: the early one (:func:`early_lp_bound`) did not end in time: a plan always carries a bound
#: (issue 15), and at load 18 ``LP_BOUND_S`` (20 s) left a plan of quarterly.yaml without one
#: (benchmarks/results/clock.md, "The stopwatch over periods") [s].
LAST_LP_BOUND_S = 600.0


def last_lp_bound(program: Program, model: Model | None, stages: _Stages) -> None:
    """The joint program's LP relaxation after the stages, where none of them (nor
    :func:`early_lp_bound`) proved a bound: past the time limit, but a plan always carries a
    bound. Recorded as stage ``lp``; its bound is the plan's."""
    began = stages.begin(LP_STAGE)
    relaxed = run(model or model_of(program), Deadline(LAST_LP_BOUND_S), LAST_LP_BOUND_S, 0.0,
                  relaxation=True)
    stages.add(LP_STAGE, began, None, relaxed.objective
               if relaxed.status is SolveStatus.optimal else None)


def on_the_plans_clock(outcome: SolveOutcome, stop: Deadline) -> SolveOutcome:
    """``outcome`` with its ``seconds`` on ``stop``'s clock: from the process's start where
    ``fleetplan plan`` gives it (they counted from :func:`plan_horizon`'s start, leaving the
    start-up out: 14 s of a 29.8-s plan at load 9–11)."""
    return dataclasses.replace(outcome, report=outcome.report.model_copy(
        update={"seconds": max(stop.elapsed(), 0.0)}))


def _unspent_s(clock: Deadline) -> float:
    """Seconds to ``clock``'s limit (the assembly's reserve not taken off) [s]."""
    return max(clock.limit_s - clock.elapsed(), 0.0)


#: Stages a plan over periods records (``solver.stages``), each with the cost of the best fleet
#: and the best bound known when it ended: HiGHS on the joint program from no start
#: (:func:`cold_joint_solve`), the blocks' first fleet and their bound (:func:`horizon_start`),
#: the joint solve from the best fleet so far (:func:`joint_solve`); the joint program's LP
#: relaxation where none of them proved a bound (stopped early).
COLD_STAGE = "cold-joint"
BESIDE_STAGE = "joint-beside"
LP_STAGE = "lp"
BLOCKS_STAGE = "blocks"
JOINT_STAGE = "joint"


class _Stages:
    """The stages of a plan over periods as they end: the best fleet's cost and the best
    bound after each (every stage's bound bounds the joint program: the cold and joint solves'
    are HiGHS's on it, the blocks' a sum of relaxations of its blocks). Each stage's beginning
    and end, and a running HiGHS solve's progress, go to ``on_progress`` with the seconds on
    ``clock``."""

    def __init__(self, clock: Deadline,
                 on_progress: Callable[[Progress, str], None] | None = None) -> None:
        self.done: list[SolverStage] = []
        self.cost: float | None = None
        self.bound: float | None = None
        self.clock, self.on_progress = clock, on_progress
        self.planning = ""  # the block being planned (``block 2 of 5: base, 2027-04-01``)
        # a fleet and a bound of the plan heard inside a stage, shown before it ends
        self.heard: Progress = Progress(0.0, None, None)

    def forward(self, stage: str) -> Callable[[Progress], None] | None:
        """What a HiGHS solve of ``stage`` reports its progress to: the best of its and the
        earlier stages' fleet and bound, on the plan's clock (``None``: no one listens)."""
        if self.on_progress is None:
            return None
        tell = self.on_progress

        def heard(p: Progress) -> None:
            tell(self.best(p.cost, p.bound), stage)
        return heard

    def best(self, cost: float | None = None, bound: float | None = None) -> Progress:
        """The cheapest fleet and the highest bound of the plan known now (``cost``,
        ``bound``: ones more, of the stage running), on the plan's clock."""
        costs = [c for c in (cost, self.cost, self.heard.cost) if c is not None]
        bounds = [b for b in (bound, self.bound, self.heard.bound) if b is not None]
        return Progress(self.clock.elapsed(), min(costs) if costs else None,
                        max(bounds) if bounds else None)

    def say(self, stage: str) -> None:
        """Tell ``on_progress`` the best fleet and bound so far, at ``stage``."""
        if self.on_progress is not None:
            self.on_progress(self.best(), stage)

    def fleet(self, cost: float) -> None:
        """A fleet of the whole plan costing ``cost`` found inside the blocks' stage (the
        first pass's, with its orders), told at once."""
        self.heard = Progress(0.0, cost if self.heard.cost is None
                              else min(cost, self.heard.cost), self.heard.bound)
        self.say(f"{BLOCKS_STAGE} — {self.planning}" if self.planning else BLOCKS_STAGE)

    def block(self, what: str) -> None:
        """Say that the blocks' stage plans ``what`` (a block) next."""
        self.planning = what
        self.say(f"{BLOCKS_STAGE} — {what}")

    def block_news(self, news: BlockNews) -> None:
        """Tell ``on_progress`` where the block being planned stands, in the stage's label
        (its figures are the block's, not the plan's); a bound on the whole plan it proves
        (a block that is the whole plan) is shown as the plan's from then on (the blocks'
        stage records the same bound as it ends)."""
        if news.plan_bound is not None and (self.heard.bound is None
                                            or news.plan_bound > self.heard.bound):
            self.heard = Progress(0.0, self.heard.cost, news.plan_bound)
        if self.on_progress is not None:
            self.on_progress(self.best(), f"{BLOCKS_STAGE} — {self.planning}{news.text()}")

    def begin(self, name: str) -> float:
        """Say that stage ``name`` begins; the ``time.perf_counter()`` reading it began at."""
        self.say(name)
        return time.perf_counter()

    def add(self, name: str, began: float, cost: float | None, bound: float | None,
            cpu_s: float | None = None) -> None:
        """A stage that began at ``began`` (a ``time.perf_counter()`` reading) and ended now,
        its fleet's cost (``None``: none) and its bound (``None``: none); ``cpu_s``: the CPU
        time of a process of its own that ran it (``None``: it ran in the plan's)."""
        if cost is not None:
            self.cost = cost if self.cost is None else min(self.cost, cost)
        if bound is not None:
            self.bound = bound if self.bound is None else max(self.bound, bound)
        self.done.append(SolverStage(name=name, seconds=max(time.perf_counter() - began, 0.0),
                                     cost_after=self.cost, bound_after=self.bound, cpu_s=cpu_s))
        self.say(f"{name} done")

    def started(self, before_s: float, tables_s: float, began: float) -> None:
        """The stages before the search: the seconds on the plan's clock before
        :func:`plan_horizon` began (:data:`~models.plan.READ_STAGE`: the start-up and reading
        the scenario, where the clock was started before it), the capacity tables' build
        (``tables_s``) and the program's, from ``began`` (a ``time.perf_counter()`` reading)
        to now: ``solver.stages`` covered 15.6 s of a 29.8-s plan."""
        if before_s > 0.0:
            self.done.append(SolverStage(name=READ_STAGE, seconds=before_s))
        self.done.append(SolverStage(name=CAPACITY_STAGE, seconds=max(tables_s, 0.0)))
        self.add(BUILD_STAGE, began + tables_s, None, None)

    def recorded(self, outcome: SolveOutcome) -> SolveOutcome:
        """``outcome`` with these stages in its report."""
        report = outcome.report.model_copy(update={"stages": tuple(self.done)})
        return dataclasses.replace(outcome, report=report)


@dataclasses.dataclass(frozen=True)
class BlockNews:
    """Where one block's own solve stands (:func:`horizon_start`): its program's best fleet
    and bound per month, as that program counts them — planned alone (``held`` false) with
    every committed node, inventory included, priced at the cheapest order that holds it
    (:func:`_priced_block`); planned with orders held (``held``), on-demand and spot only, the
    orders held free. Neither is a figure of the plan (an order's cost, an inventory's
    credit and the other blocks are not in it); ``plan_bound`` is, where the block planned
    alone is the whole plan (one period, one demand scenario): months × its bound − its
    inventory's credit, as the blocks' bound the plan keeps (:func:`_blocks_bound`).
    ``None``: not known (yet)."""

    cost: float | None
    bound: float | None
    held: bool
    plan_bound: float | None = None

    def text(self) -> str:
        """``: its own program: 1,100,746/month, bound 1,070,526, gap 2.7%`` (``""`` while
        neither is known)."""
        if self.cost is None and self.bound is None:
            return ""
        parts = ["no fleet yet" if self.cost is None else f"{self.cost:,.0f}/month"]
        parts += [] if self.bound is None else [f"bound {self.bound:,.0f}"]
        if self.cost is not None and self.bound is not None and self.cost > 0:
            parts.append(f"gap {max(self.cost - self.bound, 0.0) / self.cost:.1%}")
        what = "its own program (orders held)" if self.held else "its own program"
        return f": {what}: " + ", ".join(parts)


def _news_of(hp: HorizonProgram, credits: Sequence[float] | None,
             tell: Callable[[BlockNews], None]) -> Callable[[int, Progress], None]:
    """What :func:`~solver.solve.block_plans.plan_blocks` reports a block's own progress to:
    its figures as :class:`BlockNews` to ``tell`` — blocks priced alone with their inventory
    ``credits``, or (``None``) planned with orders held."""
    data = hp.data

    def told(i: int, p: Progress) -> None:
        plan_bound = None
        if credits is not None and len(data.blocks) == 1 and p.bound is not None:
            plan_bound = _blocks_bound(hp, [p.bound], list(credits))
        tell(BlockNews(p.cost, p.bound, credits is None, plan_bound))
    return told


#: Branch-and-bound nodes of the joint solve from the first fleet: its root (cuts) gives the
#: bound the blocks cannot (a growth order priced over its whole term), and a few nodes more
#: may improve the fleet [1].
JOINT_NODES = 50


def joint_solve(program: Program, deadline: Deadline, gap: float,
                start: dict[str, float] | None, nodes: int | None = JOINT_NODES,
                halt: Callable[[], bool] | None = None,
                on_progress: Callable[[Progress], None] | None = None,
                model: Model | None = None) -> SolveOutcome:
    """The joint program solved by HiGHS from ``start``, stopped by its gap or after ``nodes``
    nodes (the same fleet and bound on every run), or by ``deadline`` (status ``time_limit``;
    with ``nodes`` ``None`` the plan's time limit is its only stop) — its copy into HiGHS
    included: the copy of the × 25 harness case's program through PuLP took seconds the limit
    did not count (plans of 123–135 s for 120); its fleet, if any, loaded into the
    variables. ``model``: that copy, made already (the held blocks were taken from it)."""
    try:
        if model is None:
            model = model_of(program, stop=deadline.expired)
    except BuildStopped:
        return SolveOutcome(SolveStatus.time_limit, SolverReport(name="highs", seconds=0.0),
                            False)
    result = run(model, deadline, deadline.left(), gap, nodes=nodes,
                 start=None if start is None else model.vector(start), halt=halt,
                 on_progress=on_progress)
    found = result.x is not None and result.status is not SolveStatus.infeasible
    if result.x is not None and found:
        model.load(result.x)
    gap_value = (None if result.objective is None or result.bound is None else
                 max(result.objective - result.bound, 0.0) / result.objective
                 if result.objective > 0 else 0.0)
    report = SolverReport(name="highs", seconds=result.seconds, objective=result.objective,
                          bound=result.bound, gap=gap_value)
    return SolveOutcome(result.status, report, found)


#: Where the blocks are planned in shares of the time and no block shares nodes, HiGHS is
#: first given the joint program from no start (:func:`cold_joint_solve`); the share of the
#: time after the build at which it is abandoned unless it is within ``COLD_KEEP_GAP`` of its
#: bound [1]. The harness's ×25 case with dedicated pools: HiGHS alone 0.85–1.60 % in 96–121
#: s at load 2–5, where the planner's block start and joint solve reached 7.1–8.4 %; at load
#: 6–7 HiGHS alone was 97.6 % from its bound after 69 s, 60 % after 108 s, and the blocks'
#: start does better (benchmarks/results/over-periods.md, "Over periods").
COLD_CHECK_SHARE = 0.5
#: Gap of the cold joint solve at its check under which it keeps the rest of the time: its
#: fleets from no start are either within a few per cent or most of their cost away [1].
COLD_KEEP_GAP = 0.2


@dataclasses.dataclass
class ColdSolve:
    """The joint program solved from no start: its outcome, its fleet's values (``None``:
    none), and whether it was abandoned at its check (the rest of the time then goes to the
    blocks' start)."""

    outcome: SolveOutcome
    values: dict[str, float] | None
    abandoned: bool


def cold_joint_solve(program: Program, clock: Deadline, gap: float, built_s: float,
                     on_progress: Callable[[Progress], None] | None = None) -> ColdSolve:
    """The joint program solved by HiGHS alone, no start, until ``clock`` expires or its gap
    is reached; abandoned once ``COLD_CHECK_SHARE`` of the time after the build has passed
    without a fleet within ``COLD_KEEP_GAP`` of its bound (then it stops there; at load 6–7 the
    × 25 dedicated case's cold solve ended 71.5 % from its bound, and the blocks' start does
    better). The fleet found, if any, is in the variables and in ``values``; its progress goes
    to ``on_progress`` too."""
    check_at_s = built_s + (clock.limit_s - built_s) * COLD_CHECK_SHARE
    seen: list[Progress] = []
    abandoned = [False]

    def far(progress: Progress) -> bool:
        return (progress.cost is None or progress.bound is None or progress.cost <= 0
                or (progress.cost - progress.bound) / progress.cost > COLD_KEEP_GAP)

    def halt() -> bool:
        if abandoned[0] or clock.elapsed() < check_at_s:
            return abandoned[0]
        abandoned[0] = not seen or far(seen[-1])
        return abandoned[0]

    def heard(progress: Progress) -> None:
        seen.append(progress)
        if on_progress is not None:
            on_progress(progress)

    outcome = joint_solve(program, clock, gap, None, nodes=None, halt=halt,
                          on_progress=heard)
    values = ({v.name: float(v.varValue or 0.0) for v in program.prob.variables()}
              if outcome.has_solution else None)
    return ColdSolve(outcome, values, abandoned[0])


def keep_orders(scenario: Scenario, earlier: Plan, file: str) -> Scenario:
    """The scenario with an earlier plan's orders that are already placed added to its
    inventory: every order the earlier plan shared by all demand scenarios (``scenario``
    ``None``) whose order-by date is before this plan's date (so it was placed), held from its
    arrival until its term ends (owned: with its power and hosting)."""
    problems = []
    if earlier.horizon is None:
        problems.append(Problem(file, "horizon", "not a plan over periods: it has no orders",
                                "give the plan.json of a scenario with a horizon"))
    zones = {z.id: {o.gpu for o in z.offers} for z in scenario.zones}
    for i, o in enumerate(earlier.orders):
        if o.zone not in zones or o.gpu not in zones[o.zone]:
            problems.append(Problem(file, f"orders[{i}]", f"{o.gpu} in {o.zone} is not "
                                    "offered in this scenario", "plan with the scenario the "
                                    "earlier plan was made from (or one that keeps its zones)"))
    if problems:
        raise InputError(problems)
    held = []
    for o in earlier.placed_before(plan_date_of(scenario)):  # the rest: decided again
        per_node = o.gpus // o.nodes
        last = o.expires - dt.timedelta(days=1)
        if o.purchase is PurchaseKind.owned:
            capital = o.committed_total / o.nodes / o.term_months  # per node-month
            held.append(HeldNodes(zone=o.zone, gpu=o.gpu, gpus_per_node=per_node, nodes=o.nodes,
                                  purchase=InventoryKind.owned, available_from=o.usable_from,
                                  running_cost_per_node_month=o.cost_per_month / o.nodes
                                  - capital))
        else:
            held.append(HeldNodes(zone=o.zone, gpu=o.gpu, gpus_per_node=per_node, nodes=o.nodes,
                                  purchase=InventoryKind.reserved, available_from=o.usable_from,
                                  ends=last, price_per_gpu_hour=o.price_per_gpu_hour))
    return scenario.model_copy(update={"inventory": (*scenario.inventory, *held)})


def diagnose_blocks(data: HorizonData, solver: str, time_limit_s: float
                    ) -> tuple[Shortfall, ...]:
    """What cannot be met: the shortfalls of the first period (of its demand scenarios, the
    first listed: :func:`blocks_by_period`) that cannot be met on its own, committed capacity
    as much as its stock allows — after those of an earlier period short with only the
    committed capacity in service by then (a new user's plan was diagnosed at period 1's owned
    stock while period 0, which no order could reach in time, was short in every demand
    scenario: fresh-s22 F3); where every period can, the orders' lead times, stock or budget
    keep them from being met together. The blocks' diagnoses share ``time_limit_s`` (each was
    given the whole of it)."""
    ends = time.perf_counter() + time_limit_s
    for block in blocks_by_period(data):
        found = diagnose(block.workloads, block.data, solver, seconds_left(ends))
        if found:
            where = f"{block.scenario}, period {block.period} ({data.periods[block.period].start})"
            earlier = (in_time_shortfalls(data, solver, seconds_left(ends), block.period)
                       if block.period > 0 else ())
            return (*earlier, *(s.model_copy(update={"message": f"{where}: {s.message}"})
                                for s in found))
    return (Shortfall(requirement="orders", amount=0.0, unit="",
                      message="each period can be met on its own, but not with orders placed "
                              "in time: lead times, order stock or the budget keep committed "
                              "capacity from arriving when it is needed"),
            *in_time_shortfalls(data, solver, seconds_left(ends)))


def blocks_by_period(data: HorizonData) -> list[Block]:
    """The blocks period by period, each period's in the demand scenarios' order: the order a
    diagnosis looks for the first block short. ``data.blocks`` is scenario by scenario, so an
    infeasible plan named `low`'s period 1 while `high`'s period 0, which a planner must meet
    first, was short too (fresh-s22 F3)."""
    return sorted(data.blocks, key=lambda b: b.period)  # stable: scenarios as listed


def _priced_block(data: HorizonData, block: Block) -> tuple[ProgramData, float]:
    """A block as a single-period program of its own: each committed pool priced at its
    cheapest order usable by then (its charge spread over the periods it is held), its stock
    what inventory and those orders allow; and the credit for the inventory nodes so priced
    (what the block's cost counts for them, per period) [currency].

    A relaxation of the block in the joint program: every order held in the period is one of
    those options and is charged at least that much per period it is held, and the nodes held
    beyond inventory are orders; so period months × the block's optimum − the credit is at
    most what the joint program pays for the block (:func:`horizon_start`'s bound)."""
    offers = []
    credit = 0.0
    for o in block.data.offers:
        if o.purchase not in COMMITTED_KINDS:
            offers.append(o)
            continue
        pool = PoolKey(o.zone, o.gpu, o.purchase)
        usable = [k for k in _usable_keys(data, pool, block.period)]
        held = data.held.get((pool, block.period), 0) * o.gpus_per_node
        if not usable:
            offers.append(dataclasses.replace(o, stock_gpus=held))
            continue
        charge = min(_charge_per_period(data, k) for k in usable)  # [currency/node-period]
        credit += charge * data.held.get((pool, block.period), 0)
        price = charge / (data.periods[block.period].months * o.gpus_per_node
                          * data.hours_per_month)
        offers.append(dataclasses.replace(o, price_per_gpu_hour=price))
    return dataclasses.replace(block.data, offers=tuple(offers)), credit


def _usable_keys(data: HorizonData, pool: PoolKey, period: int) -> list[OrderKey]:
    """Orders of a pool that may be placed (lead time) and are held in ``period``."""
    return [k for k in data.order_keys if k.option.pool == pool and period in
            data.held_periods(k) and (not data.lead_times or data.order_by(k) >= data.plan_date)]


def _charge_per_period(data: HorizonData, key: OrderKey) -> float:
    """What the objective charges an order per period it is held [currency/node]."""
    return data.order_cost(key) / len(data.held_periods(key))


def _greedy_orders(data: HorizonData, running: dict[tuple[str, int, PoolKey], int],
                   given: Mapping[tuple[str, OrderKey], int] | None = None
                   ) -> dict[tuple[str, OrderKey], int] | None:
    """Orders covering the committed nodes each block runs beyond what is held (inventory and
    the orders ``given``, which are kept): per scenario, period by period, from the option
    cheapest per period held that is usable then and has stock left; orders due before the
    re-plan raised to the most any scenario orders."""
    out: dict[tuple[str, OrderKey], int] = dict(given or {})
    pools = sorted({pool for _, _, pool in running}, key=lambda p: (p.zone, p.gpu,
                                                                    p.purchase.value))
    for s in data.scenarios:
        for pool in pools:
            mine = [(k, n) for (name, k), n in out.items() if name == s.name
                    and k.option.pool == pool]
            held = [data.held.get((pool, q), 0) + sum(n for k, n in mine
                                                      if q in data.held_periods(k))
                    for q in range(len(data.periods))]
            stock: dict[int, list[int]] = {}
            for k, n in mine:  # what the orders given take of their options' stock
                left = stock.setdefault(id(k.option), [k.option.stock_gpus //
                                                       k.option.gpus_per_node]
                                        * len(data.periods))
                for p in data.held_periods(k):
                    left[p] -= n
            for q in range(len(data.periods)):
                need = running.get((s.name, q, pool), 0) - held[q]
                for key in sorted(_usable_keys(data, pool, q), key=lambda k: (
                        _charge_per_period(data, k), k.arrival)):
                    if need <= 0:
                        break
                    left = stock.setdefault(id(key.option), [key.option.stock_gpus //
                                                             key.option.gpus_per_node]
                                            * len(data.periods))
                    take = min([need, *(left[p] for p in data.held_periods(key))])
                    if take <= 0:
                        continue
                    out[(s.name, key)] = out.get((s.name, key), 0) + take
                    for p in data.held_periods(key):
                        held[p] += take
                        left[p] -= take
                    need -= take
                if need > 0:
                    return None
    due_now = {key for _, key in out if data.order_by(key) < data.replan_date}
    for key in due_now:
        most = max(out.get((s.name, key), 0) for s in data.scenarios)
        out.update({(s.name, key): most for s in data.scenarios})
    return out


#: Share of the first fleet's time for the blocks priced alone; the rest plans them again
#: with the orders :func:`~solver.solve.order_choice.choose_orders` picks [1].
FIRST_PASS_SHARE = 0.5


def _with_orders(hp: HorizonProgram, plans: BlockPlans,
                 orders: dict[tuple[str, OrderKey], int] | None,
                 skip: frozenset[str] = frozenset()) -> dict[str, float] | None:
    """The blocks' values and the orders as values of the joint program, ``None`` where they
    break one of its rows (but the rows named in ``skip``)."""
    if orders is None or not plans.complete:
        return None
    values = tied(hp, plans.values)
    for program in hp.blocks.values():
        set_auxiliaries(program, values)  # as the joint program's rows imply them
    for (s, key), var in hp.orders.items():
        values[var.name] = float(orders.get((s, key), 0))
    if hp.worst is not None:
        values[hp.worst.name] = max(
            sum(c * values.get(v.name, 0.0) for v, c in hp.cost[s.name].items())
            for s in hp.data.scenarios)
    as_program = Program(hp.prob, Variables(names=NameBook()), hp.data.blocks[0].data)
    broken = [r for r in violated_rows(as_program, values) if r not in skip]
    return None if broken else values


def tied(hp: HorizonProgram, values: dict[str, float]) -> dict[str, float]:
    """Blocks' values with each group of tied blocks (``hp.ties``) running the cheapest fleet
    any of them runs (they are one program holding the same nodes, so it holds in each)."""
    out = dict(values)
    programs = list(hp.blocks.values())
    for group in hp.ties:
        def cost(i: int) -> float:
            return sum(c * values.get(v.name, 0.0) for v, c in programs[i].v.cost.items())
        best = min(group, key=cost)  # the first of equals
        fleet = {name.split("_", 1)[1]: x for name, x in values.items()
                 if name.startswith(f"b{best}_")}
        others = tuple(f"b{i}_" for i in group if i != best)
        out = {name: x for name, x in out.items() if not name.startswith(others)}
        for prefix in others:
            out.update({prefix + name: x for name, x in fleet.items()})
    return out


#: Time for the LP relaxation of a block whose own solve proved no bound [s].
LP_BOUND_S = 20.0


class Start(NamedTuple):
    """What :func:`horizon_start` found: a fleet of the joint program (``None``: none), a
    lower bound on its objective (``None``: none), whether some stage ran on a share of the
    time or was stopped by the deadline, and the blocks as each pass planned them (what
    :func:`fallback_fleet` builds on where no fleet was found)."""

    values: dict[str, float] | None
    bound: float | None
    timed: bool
    plans: tuple[BlockPlans, ...] = ()


def horizon_start(hp: HorizonProgram, solver: str, budget_s: float, gap: float,
                  deadline: Deadline | None = None, workers: int = 1,
                  on_block: Callable[[str], None] | None = None,
                  on_block_news: Callable[[BlockNews], None] | None = None,
                  on_fleet: Callable[[float], None] | None = None,
                  joint: Model | None = None) -> Start:
    """A first fleet for the joint program, a lower bound on its objective, and whether some
    stage ran on a share of the time or was stopped by ``deadline`` (the plan's time limit;
    with it, blocks small enough are solved under a node limit: the same fleet on every run;
    no stage starts once it is spent, and none is given more time than it leaves, but the
    order choice: at least ``ORDER_CHOICE_LATE_S``, since the start from its orders needs no
    solve).

    Each block is planned on its own (:func:`~solver.solve.block_plans.plan_blocks`) as
    :func:`_priced_block` prices it. Three fleets follow, the cheapest kept: orders bought to
    hold what each block runs (:func:`_greedy_orders`); orders
    :func:`~solver.solve.order_choice.choose_orders` picks (leaving to on-demand what costs
    more to hold), with the first fleets running on demand what those do not hold
    (:func:`_on_demand_start`: no solve, so a plan whose first pass took its time has it);
    and those orders with the blocks planned again with what they hold
    (:func:`~solver.solve.order_choice.held_block`). A fleet that breaks a row of the joint
    program is dropped. The bound is Σ over scenarios (probability-weighted; the worst with
    ``--robust``) of Σ over periods months × the block's bound (its own, or its LP
    relaxation's) − its inventory credit, ``None`` where a block has none. Where some block is
    too large to be solved whole under a node limit, :func:`_start_from_relaxations` instead.
    ``on_block``: told which block each pass plans next (progress); ``on_block_news``: where
    its own solve stands (:class:`BlockNews`) while it is planned and as it ends;
    ``on_fleet``: the cost of the first pass's fleet of the whole plan, once it is known (the
    pass after it takes as long again). ``joint``: the joint program's HiGHS model, built
    already (:func:`_root_beside`).
    """
    data = hp.data
    started = time.perf_counter()
    priced = [_priced_block(data, block) for block in data.blocks]
    if FIRST_PASS_LP and solver == "highs" and not all(is_direct(p, solver) for p, _ in priced):
        return _start_from_relaxations(hp, priced, solver, budget_s, gap, deadline, workers,
                                       on_block, on_block_news, joint)
    first = plan_blocks(data, [p for p, _ in priced], solver, budget_s * FIRST_PASS_SHARE, gap,
                        deadline=deadline, workers=workers, on_block=on_block,
                        on_progress=None if on_block_news is None else _news_of(
                            hp, [credit for _, credit in priced], on_block_news))
    timed = first.timed
    bounds: list[float | None] = []
    relaxed: dict[int, float | None] = {}
    for i, ((program, _), outcome) in enumerate(zip(priced, first.outcomes, strict=True)):
        bound = outcome.report.bound
        if bound is None or bound <= 0:  # stopped before its root: its LP relaxation bounds it
            same = next(j for j in range(i + 1) if priced[j][0] == program)
            if same not in relaxed:
                relaxed[same] = _timed_lp(lp_bound, program, solver, deadline)
            bound = relaxed[same]
        bounds.append(bound)
    bound = _blocks_bound(hp, bounds, [credit for _, credit in priced])
    if not first.complete:
        return Start(None, bound, timed, (first,))
    starts = [_with_orders(hp, first, _greedy_orders(data, first.running))]
    as_program = joint_program(hp)
    if on_fleet is not None and starts[0] is not None:
        on_fleet(objective_of(as_program, starts[0]))
    # at least ORDER_CHOICE_LATE_S, past the limit too: the start it gives needs no solve
    chosen, chosen_timed = choose_within_room(
        hp, first.running, first.fleets, solver,
        max(capped(ORDER_CHOICE_S, deadline), ORDER_CHOICE_LATE_S))
    timed |= chosen_timed or _spent(deadline)
    tried = [first]
    if chosen is not None:
        # the first fleets running on demand what the chosen orders do not hold: a start with
        # no second solve, for a plan whose first pass left the second none (or too little)
        starts.append(_on_demand_start(hp, first.fleets, chosen))
        left_s = budget_s - (time.perf_counter() - started)
        again = plan_blocks(data, [held_block(data, b, chosen) for b in data.blocks], solver,
                             left_s, gap, within=True, deadline=deadline, workers=workers,
                             on_block=on_block, on_progress=None if on_block_news is None
                             else _news_of(hp, None, on_block_news))
        timed |= again.timed
        tried.append(again)
        starts.append(_with_orders(hp, again, chosen))
    found = [s for s in starts if s is not None]
    return Start((min(found, key=lambda v: objective_of(as_program, v)) if found else None),
                 bound, timed, tuple(tried))


def choose_within_room(hp: HorizonProgram, running: Mapping[tuple[str, int, PoolKey], float],
                       fleets: Sequence[dict[ReplicaKey, int] | None], solver: str,
                       time_limit_s: float
                       ) -> tuple[dict[tuple[str, OrderKey], int] | None, bool]:
    """The order choice (:func:`~solver.solve.order_choice.choose_orders`) for the committed
    nodes the blocks' ``fleets`` run (``running``) with what it leaves to on demand within the
    on-demand stock the fleets leave (:func:`~solver.solve.order_choice.on_demand_room`), else
    (no such choice: the fleets' committed nodes cannot be ordered) without that limit, as
    before; and whether a choice stopped at its time limit."""
    started = time.perf_counter()
    robust = hp.worst is not None
    chosen, timed = choose_orders(hp.data, running, solver, time_limit_s, robust=robust,
                                  room=on_demand_room(hp.data, fleets))
    if chosen is not None:
        return chosen, timed
    left_s = max(time_limit_s - (time.perf_counter() - started), ORDER_CHOICE_LATE_S)
    chosen, again = choose_orders(hp.data, running, solver, left_s, robust=robust)
    return chosen, timed or again


def _on_demand_start(hp: HorizonProgram, first: Sequence[dict[ReplicaKey, int] | None],
                     orders: dict[tuple[str, OrderKey], int], skip: frozenset[str] = frozenset()
                     ) -> dict[str, float] | None:
    """The blocks' fleets ``first`` (replicas; ``None`` where none: then ``None``) with the
    committed nodes beyond what inventory and ``orders`` hold run on demand instead, as far as
    the blocks' rows allow (:func:`~solver.solve.order_choice.on_demand_beyond`), as values of
    the joint program with ``orders`` and orders bought to hold the committed nodes left
    beyond them (:func:`_joint_fleet`); ``None`` where that breaks one of its rows (but those
    named in ``skip``).

    Where orders are bought beyond ``orders`` (a block's node a move could not leave; an
    order due before the re-plan, bought for every demand scenario once one needs it), the
    fleets are made again with what all the orders hold: a node paid for runs before an
    on-demand one (on quarterly.yaml, low and base paid for a node high needed and ran its
    replicas on demand)."""
    data = hp.data

    def fleets(held_by: dict[tuple[str, OrderKey], int]
               ) -> list[dict[ReplicaKey, int] | None] | None:
        out: list[dict[ReplicaKey, int] | None] = []
        for block, fleet in zip(data.blocks, first, strict=True):
            if fleet is None:
                return None
            program = hp.blocks[(block.scenario, block.period)]
            held = {k.pool: held_nodes_of(data, block, k.pool, held_by) for k in fleet
                    if k.purchase in COMMITTED_KINDS}
            out.append(on_demand_beyond(program, fleet, held))
        return out

    moved = fleets(orders)
    if moved is None:
        return None
    bought = _greedy_orders(data, _committed_running(hp, moved), orders)
    if bought is None:
        return None
    if bought != orders:
        moved = fleets(bought)
    return None if moved is None else _joint_fleet(hp, moved, bought, skip)


def _committed_running(hp: HorizonProgram, fleets: Sequence[dict[ReplicaKey, int] | None]
                       ) -> dict[tuple[str, int, PoolKey], int]:
    """The committed nodes per (scenario, period, pool) each block's fleet runs (blocks
    without one: none)."""
    return {(block.scenario, block.period, pool): n
            for block, fleet in zip(hp.data.blocks, fleets, strict=True) if fleet
            for pool, n in committed_pools(hp.blocks[(block.scenario, block.period)],
                                           fleet).items()}


def joint_program(hp: HorizonProgram) -> Program:
    """The joint program as a :class:`Program` that prices values (its objective), for
    :func:`~solver.program.values.objective_of` and HiGHS's model of it."""
    return Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                   hp.data.blocks[0].data)


def _spent(deadline: Deadline | None) -> bool:
    """Whether the plan's time limit is spent (no deadline: never)."""
    return deadline is not None and deadline.expired()


def _timed_lp(relax: Callable[[ProgramData, str, float], _T | None], program: ProgramData,
              solver: str, deadline: Deadline | None) -> _T | None:
    """A block's LP relaxation in ``LP_BOUND_S`` or what ``deadline`` leaves, if less (none
    once it is spent)."""
    return None if _spent(deadline) else relax(program, solver, capped(LP_BOUND_S, deadline))


#: Where some block is too large to solve whole under a node limit (the plan is time-bound):
#: the first pass is each block's LP relaxation instead of a plan, so that the blocks planned
#: with the orders chosen get the whole budget [bool].
FIRST_PASS_LP = True


def _start_from_relaxations(hp: HorizonProgram, priced: list[tuple[ProgramData, float]],
                            solver: str, budget_s: float, gap: float, deadline: Deadline | None,
                            workers: int = 1, on_block: Callable[[str], None] | None = None,
                            on_block_news: Callable[[BlockNews], None] | None = None,
                            model: Model | None = None) -> Start:
    """:func:`horizon_start` for blocks planned in shares of the time: each priced block's LP
    relaxation gives its bound and the committed nodes it runs (fractions); the orders
    :func:`~solver.solve.order_choice.choose_orders` picks against those; then the blocks are
    planned once, with what the orders hold, in the whole budget left (each at least its
    minimum share, so every block gets a fleet). ``model``: the joint program's HiGHS model,
    built already (else built here where the held blocks are taken from it)."""
    data = hp.data
    started = time.perf_counter()
    relaxed: list[tuple[float, dict[PoolKey, float]] | None] = []
    for i, (program, _) in enumerate(priced):
        same = next(j for j in range(i + 1) if priced[j][0] == program)
        relaxed.append(relaxed[same] if same < i else _timed_lp(lp_relaxation, program, solver,
                                                                deadline))
    bound = _blocks_bound(hp, [None if r is None else r[0] for r in relaxed],
                          [credit for _, credit in priced])
    if any(r is None for r in relaxed):
        return Start(None, bound, True)
    running: dict[tuple[str, int, PoolKey], float] = {}
    for block, r in zip(data.blocks, relaxed, strict=True):
        assert r is not None
        for pool, nodes in r[1].items():
            running[(block.scenario, block.period, pool)] = nodes
    chosen, _ = (None, True) if _spent(deadline) else choose_orders(
        data, running, solver, capped(ORDER_CHOICE_S, deadline), robust=hp.worst is not None)
    if chosen is None:
        return Start(None, bound, True)
    chosen = nudged_choice(hp, chosen, solver, budget_s, deadline)
    joint, held = None, None
    if HELD_FROM_JOINT and workers <= 1 and hp.worst is None and not _spent(deadline):
        # the held blocks from the joint program's arrays; the joint solve takes the same copy
        joint = model if model is not None else model_of(joint_program(hp))
        held = HeldBlocks(hp, joint, chosen)
    left_s = budget_s - (time.perf_counter() - started)
    plans = plan_blocks(data, [held_block(data, b, chosen) for b in data.blocks], solver,
                        left_s, gap, deadline=deadline, workers=workers, held=held,
                        on_block=on_block, on_progress=None if on_block_news is None
                        else _news_of(hp, None, on_block_news))
    plans.joint = joint
    return Start(_with_orders(hp, plans, chosen), bound, True, (plans,))


def nudged_choice(hp: HorizonProgram, chosen: dict[tuple[str, OrderKey], int], solver: str,
                  budget_s: float, deadline: Deadline | None
                  ) -> dict[tuple[str, OrderKey], int]:
    """The orders chosen against the blocks' relaxations with their largest order moved while
    the blocks it holds cost less in their LPs
    (:func:`~solver.solve.order_nudge.nudge_largest`), in at most ``NUDGE_SHARE`` of the
    first fleet's ``budget_s`` (and what ``deadline`` leaves); as chosen with ``--robust``
    (the line search prices the expected cost), once the deadline is spent, or where the
    largest order holds fewer than ``NUDGE_MIN_NODES`` nodes in every scenario."""
    if not ORDER_NUDGE or hp.worst is not None or _spent(deadline):
        return chosen
    if not chosen or max(chosen.values()) < NUDGE_MIN_NODES:
        return chosen
    out, _ = nudge_largest(hp.data, chosen, solver, capped(NUDGE_SHARE * budget_s, deadline))
    return out


#: Whether the orders chosen against the blocks' relaxations are checked against the blocks
#: they hold (:func:`nudged_choice`) [bool].
ORDER_NUDGE = True
#: Share of the first fleet's budget the check may take (the held blocks' plans get the rest):
#: on the harness's medium × 25, nine LPs a count at 2.4–2.7 s (nice 5, load 8) and four
#: counts to reach +2 and see +3 dearer: 10.5 s of a 120-s plan, used whole at load 17 [1].
NUDGE_SHARE = 0.12
#: The fewest nodes the largest order must hold (in some scenario) for the check to run: on
#: the harness's medium × 1 over periods (largest order 1 node a scenario) the check took its
#: whole share in two 60-s plans and moved nothing, and those plans were 0.49–0.61 % dearer
#: than main's (i16-s24); on medium × 25 (5 nodes) it moved +2 and the plans were cheaper.
#: A node more or less of a 1- or 2-node order is a 50–100 % move the blocks' LPs price
#: least well [nodes].
NUDGE_MIN_NODES = 3


#: Whether the blocks planned with the chosen orders held take their LP support's step on the
#: joint program's arrays (:class:`~solver.solve.held_blocks.HeldBlocks`) instead of each being
#: built and copied again (one process, expected cost) [bool].
HELD_FROM_JOINT = True


#: A block's fleet as a fallback assembles it: found, not proven.
_ASSEMBLED = SolveOutcome(SolveStatus.feasible, SolverReport(name="greedy", seconds=0.0), True)


def fallback_fleet(hp: HorizonProgram, tried: Sequence[BlockPlans] = (),
                   skip: frozenset[str] = frozenset(), solver: str = "highs",
                   worse: Callable[[dict[str, float]], float] | None = None
                   ) -> dict[str, float] | None:
    """A fleet of the joint program built without a solver, for a plan whose stages found
    none within its time limit: each block's fleet as the first pass of ``tried`` that planned
    it left it, else the greedy fleet (:func:`~solver.solve.greedy.greedy_start`) of the block
    priced alone (:func:`_priced_block`), else of its elastic offers alone; orders bought to
    hold the committed nodes they run (:func:`_greedy_orders`), or, where cheaper, the orders
    :func:`~solver.solve.order_choice.choose_orders` picks for them (by ``solver``) with what
    those do not hold run on demand (:func:`_on_demand_start`). Where neither's orders can be
    placed or both break a row of the joint program (:func:`_with_orders` checks them all but
    those named in ``skip``), every block's greedy fleet on its elastic offers alone, ordering
    nothing. ``None`` where that does not hold either. ``worse``: what "cheaper" compares
    (default: the joint objective)."""
    data = hp.data
    greedy: list[tuple[ProgramData, dict[ReplicaKey, int] | None]] = []

    def greedy_of(block_data: ProgramData) -> dict[ReplicaKey, int] | None:
        for seen, fleet in greedy:  # blocks of equal data (demand scenarios alike) once
            if seen == block_data:
                return fleet
        greedy.append((block_data, _greedy_fleet(block_data)))
        return greedy[-1][1]

    def elastic(block: Block) -> ProgramData:
        return dataclasses.replace(block.data, offers=tuple(
            o for o in block.data.offers if o.purchase not in COMMITTED_KINDS))

    fleets = []
    for i, block in enumerate(data.blocks):
        fleet = next((p.fleets[i] for p in tried if i < len(p.fleets)
                      and p.fleets[i] is not None), None)
        fleets.append(fleet or greedy_of(_priced_block(data, block)[0])
                      or greedy_of(elastic(block)))
    found = _joint_fleet(hp, fleets, skip=skip)
    if all(f is not None for f in fleets):
        # the orders chosen for them, what those do not hold run on demand: the cheaper
        chosen, _ = choose_within_room(hp, _committed_running(hp, fleets), fleets, solver,
                                       ORDER_CHOICE_LATE_S)
        moved = None if chosen is None else _on_demand_start(hp, fleets, chosen, skip)
        program = joint_program(hp)
        measure = worse or (lambda values: objective_of(program, values))
        if moved is not None and (found is None or measure(moved) < measure(found)):
            found = moved
    if found is None:
        found = _joint_fleet(hp, [greedy_of(elastic(b)) for b in data.blocks], skip=skip)
    return found


def _greedy_fleet(data: ProgramData) -> dict[ReplicaKey, int] | None:
    """The replicas of a block's greedy fleet (``None``: it breaks a row, e.g. stock)."""
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    values = greedy_start(program, within_stock=True)
    if values is None:
        return None
    return replicas_of(program, values)


def _joint_fleet(hp: HorizonProgram, fleets: Sequence[dict[ReplicaKey, int] | None],
                 given: Mapping[tuple[str, OrderKey], int] | None = None,
                 skip: frozenset[str] = frozenset()) -> dict[str, float] | None:
    """Per block the replicas of a fleet, as values of the joint program: each block's nodes
    and auxiliaries as its program in the joint one implies them
    (:func:`~solver.program.values.start_from_replicas`), the orders ``given`` and orders
    bought to hold the committed nodes they run beyond those (:func:`_greedy_orders`);
    ``None`` where a block has no fleet, or the fleet breaks a row of its block or of the
    joint program."""
    data = hp.data
    values: dict[str, float] = {}
    running: dict[tuple[str, int, PoolKey], int] = {}
    for block, fleet in zip(data.blocks, fleets, strict=True):
        program = hp.blocks[(block.scenario, block.period)]
        own = None if fleet is None else start_from_replicas(program, fleet)
        if own is None:
            return None
        values.update(own)
        for pool, n in committed_nodes(program, own).items():
            k = (block.scenario, block.period, pool)
            running[k] = running.get(k, 0) + n
    plans = BlockPlans(values, running, [_ASSEMBLED] * len(data.blocks))
    return _with_orders(hp, plans, _greedy_orders(data, running, given), skip)


def budget_diagnosis(hp: HorizonProgram, tried: Sequence[BlockPlans], limit_s: float
                     ) -> tuple[Shortfall, ...]:
    """Why a plan over periods with a budget (P6: each period's monthly cost) found no fleet
    in ``limit_s``: the fallback fleet (:func:`fallback_fleet`) built without the budget rows,
    each period's monthly cost in it, and how far the dearest is above the budget — not the
    cheapest such fleet, so said to be an upper figure. Before, such a plan said only "no
    fleet found" (``quarterly.yaml`` with ``monthly_budget: 31000``:
    benchmarks/results/trust.md)."""
    data = hp.data
    budget = data.monthly_budget
    assert budget is not None
    cur = data.blocks[0].data.currency
    head = (f"no plan within the budget of {budget:,.0f} {cur}/month (each period's monthly "
            f"cost, policy.monthly_budget) was found in {limit_s:g} s")

    def dearest_month(values: dict[str, float]) -> float:
        return max(_monthly(hp, key, values) for key in hp.blocks)

    # of the fallback's fleets the one whose dearest period is cheapest: the budget it needs
    values = fallback_fleet(hp, tried, frozenset(hp.budget_rows.values()), worse=dearest_month)
    if values is None:
        return (Shortfall(requirement="budget", amount=0.0, unit="currency/month",
                          message=f"{head}, nor a fleet without it; raise --time-limit"),)
    costs = {key: _monthly(hp, key, values) for key in hp.blocks}
    (scenario, period), dearest = max(costs.items(), key=lambda i: (i[1], i[0]))
    over = sum(c > budget for c in costs.values())
    where = (f"period {period} ({data.periods[period].start})" if len(data.scenarios) == 1
             else f"`{scenario}`, period {period} ({data.periods[period].start})")
    return (Shortfall(
        requirement="budget", amount=max(dearest - budget, 0.0), unit="currency/month",
        message=f"{head}. Planned without it (each period's fleet as far as it was planned, "
                "else a greedy one, and the orders that hold it: not the cheapest), the "
                f"periods cost {_cost_range(costs.values(), f'{cur}/month')}, "
                f"{over} of {len(costs)} above the budget, the dearest {where} "
                f"{max(dearest - budget, 0.0):,.0f} over it: a budget of {dearest:,.0f} holds "
                "that plan; whether one within a lower budget exists is not known — raise "
                "--time-limit to search for it"),)


def _monthly(hp: HorizonProgram, key: tuple[str, int], values: dict[str, float]) -> float:
    """The monthly cost of block ``key`` (scenario, period) in the joint ``values``."""
    expr = monthly_cost(hp, *key)
    return sum(c * values.get(v.name, 0.0) for v, c in expr.items()) + expr.constant


def _cost_range(costs: Iterable[float], unit: str) -> str:
    """``35,020 to 93,943 USD/month``, or ``657 USD/month each`` where they round alike."""
    low, high = f"{min(costs):,.0f}", f"{max(costs):,.0f}"
    return f"{low} {unit} each" if low == high else f"{low} to {high} {unit}"


#: A fleet found within this gap of its bound is not checked against the fallback fleet after
#: the time limit (:func:`fallback_may_be_cheaper`): the fallback's greedy fleets cost about
#: twice a proven plan (quarterly.yaml: 1.46–1.66 M against 0.72 M;
#: benchmarks/results/over-periods.md, "Over periods on changed inputs and under load"), so only
#: a fleet far from its bound can cost more, while the two builds take seconds past the limit on
#: every plan over periods whose blocks ran on shares of the time (all of them at × 25, whose gaps
#: are 2–4 %) [1].
FALLBACK_CHECK_GAP = 0.25


def fallback_may_be_cheaper(outcome: SolveOutcome) -> bool:
    """Whether ``outcome``'s fleet is far enough from its bound (or has none) that the fallback
    fleet may cost less (:data:`FALLBACK_CHECK_GAP`)."""
    gap = outcome.report.gap
    return outcome.report.bound is None or gap is None or gap > FALLBACK_CHECK_GAP


def cheapest_fallback(hp: HorizonProgram, tried: Sequence[BlockPlans], solver: str = "highs"
                      ) -> dict[str, float] | None:
    """The cheaper of :func:`fallback_fleet` from the blocks as ``tried`` planned them and
    from every block's greedy fleet alone (``None``: neither holds): a block whose solve the
    clock cut keeps a fleet dearer than its greedy one (quarterly.yaml at ``--time-limit 60``,
    load 8: 5.84 M from the blocks' fleets, 1.46–1.66 M from greedy ones)."""
    found = [f for f in (fallback_fleet(hp, tried, solver=solver),
                         fallback_fleet(hp, (), solver=solver) if tried else None)
             if f is not None]
    program = joint_program(hp)
    return min(found, key=lambda v: objective_of(program, v)) if found else None


def cheaper_fallback(program: Program, hp: HorizonProgram, tried: Sequence[BlockPlans],
                     started: float, outcome: SolveOutcome, solver: str = "highs"
                     ) -> SolveOutcome:
    """``outcome`` (a fleet some stage found before the clock stopped it) replaced by the
    fallback fleet (:func:`cheapest_fallback`) where that costs less, loaded into the
    variables: its cost, the outcome's bound and the gap between them, status ``time_limit``
    and a stage ``FALLBACK_STAGE`` (so it is said to be the fallback fleet); ``seconds``
    counted from ``started``; the outcome's ``gap_limit`` kept. A plan whose first pass the
    clock cut left the joint solve a start dearer than the fallback it would have taken with
    no start at all."""
    began = time.perf_counter()
    values = cheapest_fallback(hp, tried, solver)
    found = outcome.report.objective
    if values is None or found is None:
        return outcome
    cost = objective_of(program, values)
    if cost >= found * (1 - 1e-9):
        return outcome
    bound = outcome.report.bound
    best = None if bound is None else min(bound, cost)
    return _fallback_loaded(program, values, cost, best, outcome, ("name", "gap_limit"),
                            began, started)


def fallback_outcome(program: Program, hp: HorizonProgram, tried: Sequence[BlockPlans],
                     bound: float | None, started: float, outcome: SolveOutcome,
                     solver: str = "highs") -> SolveOutcome:
    """``outcome`` (no fleet) replaced by :func:`fallback_fleet`'s, loaded into the variables,
    where it finds one: status ``time_limit``, its cost, the best bound known (``bound``, the
    blocks', or the solve's own), the gap between them, and a stage ``FALLBACK_STAGE`` that
    says where the fleet came from; ``seconds`` counted from ``started``; ``solver`` chooses
    its orders. Of the outcome's report only the solver's name is kept."""
    began = time.perf_counter()
    values = cheapest_fallback(hp, tried, solver)
    if values is None:
        return outcome
    cost = objective_of(program, values)
    known = [b for b in (bound, outcome.report.bound) if b is not None]
    best = min(max(known), cost) if known else None
    return _fallback_loaded(program, values, cost, best, outcome, ("name",), began, started)


def _fallback_loaded(program: Program, values: dict[str, float], cost: float,
                     best: float | None, outcome: SolveOutcome, keeps: tuple[str, ...],
                     began: float, started: float) -> SolveOutcome:
    """The fallback fleet ``values`` (monthly cost ``cost``) loaded into the variables, as an
    outcome of status ``time_limit``: a report of ``cost``, the bound ``best``, the gap
    between them, ``outcome``'s stages and a ``FALLBACK_STAGE`` timed from ``began``,
    ``seconds`` from ``started``. Of ``outcome``'s report it keeps the fields ``keeps`` names
    (the callers differ there); the others hold their defaults."""
    load_values(program, values)
    gap = None if best is None else max(cost - best, 0.0) / cost if cost > 0 else 0.0
    now = time.perf_counter()
    stage = SolverStage(name=FALLBACK_STAGE, seconds=now - began, cost_after=cost,
                        bound_after=best)
    report = SolverReport(**{f: getattr(outcome.report, f) for f in keeps},
                          seconds=now - started, objective=cost, bound=best, gap=gap,
                          stages=(*outcome.report.stages, stage))
    return SolveOutcome(SolveStatus.time_limit, report, True)


def _blocks_bound(hp: HorizonProgram, bounds: list[float | None], credits: list[float]
                  ) -> float | None:
    """Σ over scenarios (probability-weighted; the worst with ``--robust``) of Σ over periods
    months × each block's bound − its inventory credit; ``None`` where a block has none."""
    data = hp.data
    lower: dict[str, float | None] = {s.name: 0.0 for s in data.scenarios}
    for block, bound, credit in zip(data.blocks, bounds, credits, strict=True):
        so_far = lower[block.scenario]
        lower[block.scenario] = (None if bound is None or so_far is None else
                                 so_far + data.periods[block.period].months * bound - credit)
    sums = [(s.probability, lower[s.name]) for s in data.scenarios]
    if any(b is None for _, b in sums):
        return None
    # no objective is below zero (orders and elastic capacity cost ≥ 0): inventory credits
    # beyond weak block bounds gave quarterly_q2.yaml "bound -1,905,888 USD, gap 2395 %"
    return max(max(b or 0.0 for _, b in sums) if hp.worst is not None
               else sum(p * (b or 0.0) for p, b in sums), 0.0)


def with_bound(outcome: SolveOutcome, bound: float | None, gap: float) -> SolveOutcome:
    """The outcome with the larger of its own bound and ``bound`` (both valid), its gap from
    that bound, and ``optimal`` when the gap is within the requested one."""
    found, own = outcome.report.objective, outcome.report.bound
    if bound is None or found is None or not outcome.has_solution or (
            own is not None and own >= bound):
        return outcome
    best = min(bound, found)  # a bound proven by the blocks never exceeds a fleet's cost
    closed = max(found - best, 0.0) / found if found > 0 else 0.0
    status = SolveStatus.optimal if closed <= gap + 1e-9 else outcome.status
    report = outcome.report.model_copy(update={"bound": best, "gap": closed})
    return dataclasses.replace(outcome, status=status, report=report)


def shown_scenario(data: HorizonData) -> str:
    """The demand scenario whose first period stands as the plan's fleet: ``base`` if there
    is one, else the most probable (the first of equals)."""
    names = [s.name for s in data.scenarios]
    if BASE in names:
        return BASE
    return max(data.scenarios, key=lambda s: s.probability).name


def first_period_scenario(plan: Plan, scenario: Scenario) -> Scenario:
    """The single-period scenario a horizon plan's fleet (its first period of the demand
    scenario shown) was sized for: what the workbook, report and checks read."""
    if plan.horizon is None:
        return scenario
    demand = next((s for s in scenario.demand_scenarios if s.name == plan.horizon.fleet_shown),
                  DemandScenario(name=BASE, probability=1.0))
    first = Period(0, plan.horizon.start, plan.horizon.start, plan.horizon.period_months)
    return block_scenario(scenario, demand, first, dated=scenario.horizon is not None)


def held_nodes(hp: HorizonProgram, scenario: str, pool: PoolKey, period: int) -> int:
    """Nodes of a committed pool held in a period: inventory and orders held then."""
    orders = sum(integer_value(v) for (s, key), v in hp.orders.items()
                 if s == scenario and key.option.pool == pool
                 and period in hp.data.held_periods(key))
    return hp.data.held.get((pool, period), 0) + orders


def _held_cost(hp: HorizonProgram, scenario: Scenario, name: str, pool: PoolKey,
               period: int) -> float:
    """Monthly cost of a committed pool in a period: orders and inventory held."""
    p = hp.data.periods[period]
    orders = sum(integer_value(v) * key.option.cost_per_node_month
                 for (s, key), v in hp.orders.items()
                 if s == name and key.option.pool == pool and period in hp.data.held_periods(key))
    inventory = sum(scenario.held_cost_per_month(line) for line in scenario.inventory
                    if (line.zone, line.gpu, line.purchase.pool_kind) == (pool.zone, pool.gpu,
                                                                     pool.purchase)
                    and line.held_through(p.start, p.end))
    return orders + inventory


def _pools(data: HorizonData) -> list[PoolKey]:
    pools = {o.pool for o in data.options} | {p for p, _ in data.held}
    return sorted(pools, key=lambda p: (p.zone, p.gpu, p.purchase.value))


def period_plan(hp: HorizonProgram, scenario: Scenario, block: Block, base: Plan) -> Plan:
    """The plan of one block: its fleet, with committed pools at the nodes held and priced."""
    program = hp.blocks[(block.scenario, block.period)]
    allocations, nodes = extract_fleet(program, block.workloads)
    hours = scenario.policy.hours_per_month
    held: dict[tuple[str, str, PurchaseKind], tuple[int, int, float]] = {}
    for pool in _pools(hp.data):
        count = held_nodes(hp, block.scenario, pool, block.period)
        if count:
            node = next(o.gpus_per_node for o in block.data.offers
                        if (o.zone, o.gpu, o.purchase) == (pool.zone, pool.gpu, pool.purchase))
            cost = _held_cost(hp, scenario, block.scenario, pool, block.period)
            held[(pool.zone, pool.gpu, pool.purchase)] = (count, node, cost)
    rows = [n for n in nodes if n.purchase not in COMMITTED_KINDS]
    for (z, g, kind), (count, node, cost) in held.items():
        instance = next((o.instance_type for o in hp.data.options if o.pool == PoolKey(z, g, kind)),
                        None)
        rows.append(NodeCount(zone=z, gpu=g, purchase=kind, slice=None, nodes=count,
                              gpus=count * node, instance_type=instance,
                              price_per_gpu_hour=cost / (count * node * hours),
                              hours_per_month=hours, cost_per_month=cost))
    price = {k: c / (n * g * hours) for k, (n, g, c) in held.items()}
    fixed = [a.model_copy(update={"cost_per_month": a.gpus * price[(a.zone, a.gpu, a.purchase)]
                                  * hours}) if a.purchase in COMMITTED_KINDS else a
             for a in allocations]
    order = {b.name: i for i, b in enumerate(scenario.policy.time_blocks)}
    rows.sort(key=lambda n: (n.zone, n.gpu, n.purchase.value,
                             -1 if n.slice is None else order[n.slice]))
    plan = base.model_copy(update={"allocations": tuple(fixed), "nodes": tuple(rows)})
    return finish_plan(plan, block.workloads)


def _period_gpus(plan: Plan, scenario: Scenario) -> tuple[PeriodGpus, ...]:
    """Per pool: GPUs held or running, GPUs busy at the busiest slice, idle committed nodes."""
    blocks = [b.name for b in scenario.policy.time_blocks]
    busy: dict[tuple[str, str, PurchaseKind, str], int] = defaultdict(int)
    for a in plan.allocations:
        for b in blocks if a.slice is None else [a.slice]:
            busy[(a.zone, a.gpu, a.purchase, b)] += a.gpus
    out = []
    pools = sorted({(n.zone, n.gpu, n.purchase) for n in plan.nodes},
                   key=lambda k: (k[0], k[1], k[2].value))
    for z, g, kind in pools:
        rows = [n for n in plan.nodes if (n.zone, n.gpu, n.purchase) == (z, g, kind)]
        gpus = max(n.gpus for n in rows)
        most = max((busy[(z, g, kind, b)] for b in blocks), default=0)
        idle = 0
        if kind in COMMITTED_KINDS:
            per_node = rows[0].gpus // rows[0].nodes
            idle = (gpus - most) // per_node  # nodes no replica needs in any slice
        out.append(PeriodGpus(zone=z, gpu=g, purchase=kind, gpus=gpus, busy_gpus=most,
                              idle_nodes=idle))
    return tuple(out)


def _period_workloads(plan: Plan, scenario: Scenario) -> tuple[PeriodWorkload, ...]:
    """Each workload's demand and usable capacity at its busiest slice."""
    fleet = fleet_from_plan(plan, scenario)
    out = []
    for wl in sorted(scenario.workloads, key=lambda w: w.name):
        pairs = [(slice_demand_rps(wl, b), usable_capacity_rps(fleet.replicas, wl, scenario,
                                                               b.name))
                 for b in scenario.policy.time_blocks]
        demand, capacity = max(pairs)
        out.append(PeriodWorkload(
            workload=wl.name, model=wl.model, precision=wl.precision.value, runtime=wl.runtime,
            demand_rps=demand, capacity_rps=capacity,
            daily_requests=None if wl.batch is None else wl.batch.daily_requests))
    return tuple(out)


def _orders(hp: HorizonProgram, scenario: Scenario) -> tuple[Order, ...]:
    """Orders placed in the solution: one per (demand scenario or shared, option, arrival)."""
    data = hp.data
    hours = scenario.policy.hours_per_month
    out = []
    first = data.scenarios[0].name
    for (name, key), var in sorted(hp.orders.items(), key=lambda kv: _order_sort(data, kv[0])):
        nodes = integer_value(var)
        shared = data.order_by(key) < data.replan_date
        if nodes == 0 or (shared and name != first and len(data.scenarios) > 1):
            continue
        option = key.option
        start = data.periods[key.arrival].start
        months_in = _months_held(data, key.arrival, option.term_months)
        if option.pool.purchase is PurchaseKind.owned:
            committed = option.capex_per_node * nodes
            running = option.cost_per_node_month - option.capex_per_node / option.term_months
            inside = committed + running * nodes * months_in
        else:
            committed = option.cost_per_node_month * option.term_months * nodes
            share = option.upfront_share
            inside = committed * share + (1 - share) * option.cost_per_node_month * nodes * (
                months_in)
        order_by, late = data.order_by(key), None
        if not data.lead_times and order_by < data.plan_date:
            # one month without a horizon: placed today, it serves from its lead time on
            order_by, late = data.plan_date, arrives(data.plan_date, option.lead_time_weeks)
        out.append(Order(
            scenario=None if shared or len(data.scenarios) == 1 else name,
            zone=option.pool.zone, gpu=option.pool.gpu, purchase=option.pool.purchase,
            instance_type=option.instance_type, nodes=nodes, gpus=nodes * option.gpus_per_node,
            order_period=_period_of(data, order_by), order_by=order_by,
            usable_period=key.arrival, usable_from=start, arrives_from=late,
            expires=add_months(start, option.term_months), term_months=option.term_months,
            upfront=option.upfront, price_per_gpu_hour=option.cost_per_node_month / (
                option.gpus_per_node * hours),
            price_assumed=option.assumed, cost_per_month=option.cost_per_node_month * nodes,
            cost_in_horizon=inside, committed_total=committed))
    return tuple(out)


def _months_held(data: HorizonData, arrival: int, term_months: int) -> float:
    """Months of a term inside the horizon, from its arrival period [months]."""
    return min(float(term_months), sum(p.months for p in data.periods[arrival:]))


def _order_sort(data: HorizonData, item: tuple[str, OrderKey]) -> tuple[object, ...]:
    name, key = item
    pool = key.option.pool
    return (data.order_by(key), pool.zone, pool.gpu, pool.purchase.value, key.option.quote,
            key.arrival, name)


def _period_of(data: HorizonData, day: dt.date) -> int:
    """Index of the period holding a day (0 for a day before the horizon)."""
    return max((p.index for p in data.periods if p.start <= day), default=0)


def assemble(base: Plan, scenario: Scenario, hp: HorizonProgram, robust: bool) -> Plan:
    """The plan: each block's period plan, the orders, the horizon's costs; the fleet shown
    at the top level is the first period of :func:`shown_scenario`."""
    data = hp.data
    periods = []
    plans: dict[tuple[str, int], Plan] = {}
    for block in data.blocks:
        plan = period_plan(hp, scenario, block, base)
        plans[(block.scenario, block.period)] = plan
        p = data.periods[block.period]
        periods.append(PeriodPlan(
            scenario=block.scenario, period=block.period, start=p.start, end=p.end,
            cost_per_month=plan.cost.per_month, gpus=_period_gpus(plan, block.workloads),
            workloads=_period_workloads(plan, block.workloads), allocations=plan.allocations,
            nodes=plan.nodes, survivability=plan.survivability))
    orders = _orders(hp, scenario)
    # a reservation ending inside a period carries no load there (a period counts only nodes
    # held through the whole of it) but is paid up to its end: the spend counts those months
    partly = sum(scenario.held_cost_per_month(line)
                 * line.months_held_in_part(p.start, p.end, p.months)
                 for line in scenario.inventory if line.purchase is InventoryKind.reserved
                 for p in data.periods)
    costs = []
    for s in data.scenarios:
        objective = float(hp.cost[s.name].value() or 0.0)
        held = sum(pp.cost_per_month * data.periods[pp.period].months for pp in periods
                   if pp.scenario == s.name)
        mine = [o for o in orders if o.scenario in (None, s.name)]
        costs.append(ScenarioCost(
            scenario=s.name, probability=s.probability, cost=objective,
            # periods count each order at its monthly cost; inside the horizon it is paid as
            # its upfront share and monthly rest say
            cost_in_horizon=held + partly + sum(o.cost_in_horizon - o.cost_per_month * _months_held(
                data, o.usable_period, o.term_months) for o in mine),
            committed_total=sum(o.committed_total for o in mine)))
    shown = shown_scenario(data)
    first = plans[(shown, 0)]
    horizon = HorizonSummary(
        start=data.periods[0].start, start_from=horizon_start_from(scenario),
        end=data.periods[-1].end,
        period_months=data.periods[0].months, plan_date=data.plan_date,
        replan_date=data.replan_date, objective="worst_case" if robust else "expected",
        commitments=data.commitments.value,
        expected_cost=sum(c.probability * c.cost for c in costs),
        worst_cost=max(c.cost for c in costs), scenarios=tuple(costs), fleet_shown=shown)
    return first.model_copy(update={"horizon": horizon, "periods": tuple(periods),
                                    "orders": orders})

