"""HiGHS driven directly: the program as a HiGHS model, fleets checked against every row, and a
solve that reports its progress, takes fleets found elsewhere while it runs, and stops on a clock.

PuLP builds the program (names, rows by constraint family); this module hands it to HiGHS once as
arrays (:func:`model_of`), so that restrictions of it — bounds changed on some columns — are
solved without rebuilding, and a fleet is a vector of column values checked against every row
with one sparse product (:meth:`Model.broken_rows`), not a Python loop over 20 k rows.

:func:`run` is the one way a HiGHS solve is made here. Through HiGHS's callbacks (highspy's
``cbMipInterrupt``, ``cbMipImprovingSolution``, ``cbMipUserSolution``, ``cbSimplexInterrupt``) it

- stops when the :class:`~solver.solve.clock.Deadline` expires or a stop is asked for (HiGHS's
  own time limit is set too, as a backstop);
- reports (elapsed, best cost, bound) every few tenths of a second to ``on_progress``;
- hands each improving fleet HiGHS finds to ``on_solution``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pulp

from models.plan import SolveStatus
from solver.program.variables import BuildStopped, Program
from solver.solve.backends import SOLVER_SEED, THREADS, quiet_stdout
from solver.solve.clock import Deadline, native_solve
from solver.solve.pool import highs_pool

Vector = npt.NDArray[np.float64]

#: Relative and absolute slack of a row or bound check (the verifier's tolerance) [1].
ROW_TOL = 1e-6
#: Rows copied between two looks at the stop request in :func:`model_of` [1].
ROWS_PER_CHECK = 1024
#: A column value within this distance of an integer is that integer [1].
INTEGRALITY_TOL = 1e-6
#: Seconds between progress reports from a running solve [s].
PROGRESS_EVERY_S = 0.5
#: HiGHS's ``simplex_strategy`` for the primal simplex method.
PRIMAL_SIMPLEX = 4


@dataclass
class Model:
    """The program as HiGHS arrays, in the order of ``program.prob.variables()``."""

    program: Program
    variables: list[pulp.LpVariable]
    index: dict[str, int]
    cost: Vector
    lower: Vector
    upper: Vector
    integer: npt.NDArray[np.bool_]
    row_lower: Vector
    row_upper: Vector
    row_names: list[str]
    starts: npt.NDArray[np.int32]
    columns: npt.NDArray[np.int32]
    values: Vector
    lp: Any = field(repr=False)
    """The ``highspy.HighsLp`` handed to every solve of this model."""

    @property
    def columns_count(self) -> int:
        return len(self.variables)

    def cost_of(self, x: Vector) -> float:
        """Monthly cost of a fleet [currency/month], summed exactly (``math.fsum``): a BLAS dot
        product's rounding depends on its threads and the arrays' alignment, so one fleet's cost
        differed in the last bit between a process of `compare` and a plan alone."""
        return math.fsum(self.cost * x)

    def activities(self, x: Vector) -> Vector:
        """Each row's left-hand side at ``x``."""
        rows = np.repeat(np.arange(len(self.row_lower)), np.diff(self.starts))
        lhs: Vector = np.bincount(rows, weights=self.values * x[self.columns],
                                  minlength=len(self.row_lower)).astype(np.float64)
        return lhs

    def broken_rows(self, x: Vector) -> list[str]:
        """Names of the rows (and ``bound:``/``integer:`` columns) that ``x`` breaks."""
        lhs = self.activities(x)
        low = self.row_lower - ROW_TOL * np.maximum(1.0, np.abs(self.row_lower))
        high = self.row_upper + ROW_TOL * np.maximum(1.0, np.abs(self.row_upper))
        broken = [self.row_names[i] for i in np.flatnonzero((lhs < low) | (lhs > high))]
        out_of_bounds = (x < self.lower - ROW_TOL) | (x > self.upper + ROW_TOL)
        broken += [f"bound:{self.variables[j].name}" for j in np.flatnonzero(out_of_bounds)]
        fractional = self.integer & (np.abs(x - np.round(x)) > INTEGRALITY_TOL)
        broken += [f"integer:{self.variables[j].name}" for j in np.flatnonzero(fractional)]
        return broken

    def vector(self, values: dict[str, float]) -> Vector:
        """A fleet given by variable name → value as a column vector (absent names are 0)."""
        x = np.zeros(self.columns_count)
        for name, value in values.items():
            j = self.index.get(name)
            if j is not None:
                x[j] = value
        return x

    def named(self, x: Vector) -> dict[str, float]:
        """A column vector as variable name → value."""
        return {var.name: float(x[j]) for j, var in enumerate(self.variables)}

    def load(self, x: Vector) -> None:
        """Set every PuLP variable to its value in ``x`` (integer columns rounded)."""
        rounded = np.where(self.integer, np.round(x), x)
        for var, value in zip(self.variables, rounded, strict=True):
            var.varValue = float(value)

    def columns_named(self, names: Sequence[str]) -> npt.NDArray[np.int32]:
        """Column indices of the variables named."""
        return np.array([self.index[n] for n in names], dtype=np.int32)


def model_of(program: Program, stop: Callable[[], bool] | None = None) -> Model:
    """The program as HiGHS arrays (built once; restrictions change bounds on a copy).

    ``stop`` is asked every :data:`ROWS_PER_CHECK` rows: once true, this raises
    :class:`~solver.program.variables.BuildStopped` (part of the program's build)."""
    import highspy

    prob = program.prob
    variables = prob.variables()
    index = {var.name: j for j, var in enumerate(variables)}
    n = len(variables)
    objective = prob.objective
    cost = np.array([float(objective.get(var, 0.0)) for var in variables])
    lower = np.array([-math.inf if v.lowBound is None else float(v.lowBound) for v in variables])
    upper = np.array([math.inf if v.upBound is None else float(v.upBound) for v in variables])
    integer = np.array([v.cat == pulp.LpInteger for v in variables], dtype=bool)
    rows = prob.constraints()
    row_lower = np.empty(len(rows))
    row_upper = np.empty(len(rows))
    starts = np.zeros(len(rows) + 1, dtype=np.int32)
    cols: list[int] = []
    vals: list[float] = []
    for i, row in enumerate(rows):
        if stop is not None and i % ROWS_PER_CHECK == 0 and stop():
            raise BuildStopped(program.v)
        for var, coef in row.items():
            if coef != 0:
                cols.append(index[var.name])
                vals.append(float(coef))
        starts[i + 1] = len(cols)
        rhs = -float(row.constant)
        row_lower[i] = rhs if row.sense in (pulp.LpConstraintGE, pulp.LpConstraintEQ) else -math.inf
        row_upper[i] = rhs if row.sense in (pulp.LpConstraintLE, pulp.LpConstraintEQ) else math.inf
    columns = np.array(cols, dtype=np.int32)
    values = np.array(vals, dtype=np.float64)
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(rows)
    lp.col_cost_ = cost
    lp.col_lower_ = lower
    lp.col_upper_ = upper
    lp.row_lower_ = row_lower
    lp.row_upper_ = row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(rows)
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = columns
    lp.a_matrix_.value_ = values
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in integer]
    return Model(program=program, variables=variables, index=index, cost=cost, lower=lower,
                 upper=upper, integer=integer, row_lower=row_lower, row_upper=row_upper,
                 row_names=[row.name for row in rows], starts=starts, columns=columns,
                 values=values, lp=lp)


@dataclass(frozen=True)
class Progress:
    """Where a running solve stands: elapsed time, best fleet's cost, bound (``None``: none)."""

    seconds: float
    cost: float | None
    bound: float | None


@dataclass(frozen=True)
class RunResult:
    """How a HiGHS run ended: status, its best fleet (if any), its cost and its bound."""

    status: SolveStatus
    x: Vector | None
    objective: float | None
    bound: float | None
    seconds: float
    nodes: int = 0


@dataclass
class Restriction:
    """Bounds replacing those of some columns (a neighbourhood or a fixing)."""

    columns: npt.NDArray[np.int32]
    lower: Vector
    upper: Vector


@dataclass
class Held:
    """A model with every column but a few held at a fleet's values, as a smaller model of its
    own (:func:`held_model`); its fleets are fleets of the whole model through :meth:`expand`."""

    model: Model
    """The smaller model: the free columns and the rows they appear in."""
    columns: npt.NDArray[np.int32]
    """The whole model's columns that are free, in the smaller model's order."""
    x: Vector
    """The fleet whose other values are held."""

    def expand(self, y: Vector) -> Vector:
        """A fleet of the smaller model as one of the whole model."""
        full = self.x.copy()
        full[self.columns] = y
        return full


def slice_columns(program: Program, model: Model) -> dict[str, npt.NDArray[np.int32]]:
    """Each slice's own integer columns in ``model``: its replicas, nodes and loss binaries
    (the columns a slice-by-slice pass frees, every other held: :func:`held_model`)."""
    v = program.v
    names: dict[str, list[str]] = {}
    for k, x in v.replicas.items():
        if k.slice is not None:
            names.setdefault(k.slice, []).append(x.name)
    for nk, y in v.nodes.items():
        if nk.slice is not None:
            names.setdefault(nk.slice, []).append(y.name)
    for bk, b in v.full.items():
        if bk[4] is not None:
            names.setdefault(bk[4], []).append(b.name)
    return {s: np.sort(model.columns_named(n)) for s, n in names.items()}


def costliest_first(model: Model, own: dict[str, npt.NDArray[np.int32]], x: Vector,
                    lp_x: Vector | None) -> list[str]:
    """The slices of ``own`` ordered by what the fleet ``x`` costs in each above the LP
    relaxation ``lp_x`` (none: above itself, i.e. by name), the most first; ties by name."""
    excess = x - (lp_x if lp_x is not None else x)
    return sorted(own, key=lambda s: (-float(model.cost[own[s]] @ excess[own[s]]), s))


def held_model(model: Model, free: npt.NDArray[np.int32], x: Vector) -> Held:
    """``model`` with every column except ``free`` — and the continuous columns linked to them
    through rows, transitively — held at ``x``: the rows those columns appear in, their bounds
    less what the held columns contribute, and the held columns' cost as the objective's
    offset (so a relative gap is one of the whole cost).

    The same restriction as fixing the other integer columns' bounds
    (:class:`Restriction`), without HiGHS presolving the whole model on every solve: at ×25 a
    slice of 24 is ~1,100 columns and ~800 rows of 26 k and 20 k. Rows with no free column
    are left out: ``x`` meets them and nothing in them moves."""
    import highspy

    rows_of = np.repeat(np.arange(len(model.row_lower)), np.diff(model.starts))
    is_free = np.zeros(model.columns_count, dtype=bool)
    is_free[free] = True
    continuous = ~model.integer
    while True:  # free columns' rows, those rows' continuous columns, until none is added
        in_rows = np.zeros(len(model.row_lower), dtype=bool)
        in_rows[rows_of[is_free[model.columns]]] = True
        linked = model.columns[in_rows[rows_of]]
        added = linked[continuous[linked] & ~is_free[linked]]
        if not len(added):
            break
        is_free[added] = True
    columns = np.flatnonzero(is_free).astype(np.int32)
    rows = np.flatnonzero(in_rows)
    kept = in_rows[rows_of]
    held_nz = kept & ~is_free[model.columns]
    shift = np.bincount(rows_of[held_nz], weights=model.values[held_nz] * x[model.columns[held_nz]],
                        minlength=len(model.row_lower))[rows]
    free_nz = kept & is_free[model.columns]
    new_row = np.full(len(model.row_lower), -1, dtype=np.int64)
    new_row[rows] = np.arange(len(rows))
    new_col = np.full(model.columns_count, -1, dtype=np.int64)
    new_col[columns] = np.arange(len(columns))
    starts = np.zeros(len(rows) + 1, dtype=np.int32)
    starts[1:] = np.cumsum(np.bincount(new_row[rows_of[free_nz]], minlength=len(rows)))
    index = new_col[model.columns[free_nz]].astype(np.int32)
    values = model.values[free_nz]
    held = np.ones(model.columns_count, dtype=bool)
    held[columns] = False
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(columns), len(rows)
    lp.col_cost_ = model.cost[columns]
    lp.offset_ = float(model.cost[held] @ x[held])
    lp.col_lower_, lp.col_upper_ = model.lower[columns], model.upper[columns]
    row_lower, row_upper = model.row_lower[rows] - shift, model.row_upper[rows] - shift
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = len(columns), len(rows)
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, index, values
    integer = model.integer[columns]
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in integer]
    small = Model(program=model.program, variables=[model.variables[j] for j in columns],
                  index={model.variables[j].name: i for i, j in enumerate(columns)},
                  cost=model.cost[columns], lower=model.lower[columns],
                  upper=model.upper[columns], integer=integer, row_lower=row_lower,
                  row_upper=row_upper, row_names=[model.row_names[i] for i in rows],
                  starts=starts, columns=index, values=values, lp=lp)
    return Held(small, columns, np.asarray(x, dtype=np.float64))


def run(
    model: Model,
    deadline: Deadline,
    time_limit_s: float,
    gap: float,
    *,
    restriction: Restriction | None = None,
    start: Vector | None = None,
    start_after_cuts: bool = False,
    start_after_root: bool = False,
    when_proven: Vector | None = None,
    cutoff: float | None = None,
    relaxation: bool = False,
    objective: Vector | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_solution: Callable[[Vector], object] | None = None,
    halt: Callable[[], bool] | None = None,
    nodes: int | None = None,
    threads: int | None = None,
) -> RunResult:
    """Solve ``model`` (or a restriction of it) with HiGHS within ``time_limit_s`` and the
    deadline.

    ``start`` is a fleet HiGHS takes as its first incumbent (with ``start_after_cuts``, only after
    its first root cut rounds: :class:`_LateStart`; with ``start_after_root``, once its root is
    done: :class:`_AfterRoot`); ``when_proven`` a fleet handed to HiGHS
    only once its bound proves that fleet within ``gap`` (:class:`_WhenProven`); ``cutoff`` a
    cost no fleet worth finding reaches (HiGHS prunes against it, so a restriction that cannot
    beat the incumbent ends early); ``relaxation`` solves the LP relaxation (its optimum is a
    valid lower bound);
    ``objective`` replaces the cost minimised (the result's ``objective`` is still the fleet's
    cost, and its bound is then not one of the cost);
    ``halt`` stops it early besides the deadline (another stage has made it pointless);
    ``nodes`` caps its branch-and-bound nodes (HiGHS's ``mip_max_nodes``): a limit counted in
    work, so a solve it stops ends at the same fleet on every run (status ``feasible``);
    ``threads`` the HiGHS threads it asks for (default: the planner's, ``THREADS``; the pool is
    resized for it: :func:`~solver.solve.pool.highs_pool`).
    """
    import highspy

    started = time.perf_counter()
    if model.columns_count == 0:  # nothing to choose (no workload has a candidate): HiGHS
        return _empty(model)      # calls such a model empty and reports no status of its rows
    limit = min(time_limit_s, deadline.left())
    if limit <= 0.0:
        return RunResult(SolveStatus.time_limit, None, None, None, 0.0)
    with quiet_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    for option, value in (("time_limit", float(limit)), ("mip_rel_gap", float(gap)),
                          ("random_seed", SOLVER_SEED)):
        h.setOptionValue(option, value)
    if nodes is not None:
        h.setOptionValue("mip_max_nodes", int(nodes))
    if relaxation:
        h.setOptionValue("solve_relaxation", True)
        # primal simplex: measured 3-4x faster than the default dual on these relaxations
        h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
    if objective is not None:
        h.changeColsCost(model.columns_count, np.arange(model.columns_count, dtype=np.int32),
                         np.asarray(objective, dtype=np.float64))
    if cutoff is not None:  # a row, not HiGHS's objective_bound (which prunes no fleet)
        paid = np.flatnonzero(model.cost).astype(np.int32)
        h.addRow(-highspy.kHighsInf, float(cutoff), len(paid), paid, model.cost[paid])
    if restriction is not None and len(restriction.columns):
        h.changeColsBounds(len(restriction.columns), restriction.columns, restriction.lower,
                           restriction.upper)
    if when_proven is not None:
        h.cbMipUserSolution.subscribe(_WhenProven(when_proven, model.cost_of(when_proven), gap))
    if start is not None and start_after_root:
        h.cbMipUserSolution.subscribe(_AfterRoot(start))
    elif start is not None:
        hand_start(h, start, start_after_cuts)
    watch = _Watch(deadline, on_progress, started)

    def stopping() -> bool:
        return deadline.expired() or (halt is not None and halt())

    def interrupt(event: Any) -> None:
        data = event.data_out
        watch.report(data.mip_primal_bound, data.mip_dual_bound)
        if stopping():
            event.interrupt()

    def plain_interrupt(event: Any) -> None:
        if stopping():
            event.interrupt()

    def improving(event: Any) -> None:
        if on_solution is not None:
            on_solution(np.array(event.data_out.mip_solution, dtype=np.float64))

    h.cbMipInterrupt.subscribe(interrupt)
    h.cbSimplexInterrupt.subscribe(plain_interrupt)
    h.cbIpmInterrupt.subscribe(plain_interrupt)
    if on_solution is not None:
        h.cbMipImprovingSolution.subscribe(improving)
    with highs_pool(THREADS.get() if threads is None else threads) as count, native_solve():
        h.setOptionValue("threads", count)
        h.run()
    result = _result(h, model, relaxation, time.perf_counter() - started)
    if (start is not None and not (start_after_cuts or start_after_root)
            and start_misread(h, model, result, objective)):
        # HiGHS's verdict rests on a misread start: the start handed once its root is done
        again = run(model, deadline, time_limit_s - result.seconds, gap,
                    restriction=restriction, start=start, start_after_root=True,
                    when_proven=when_proven, cutoff=cutoff, relaxation=relaxation,
                    objective=objective, on_progress=on_progress, on_solution=on_solution,
                    halt=halt, nodes=nodes, threads=threads)
        if again.x is None:  # no time for it: the start, its bound and status unproven
            again = replace(result, status=SolveStatus.time_limit, bound=None)
        return replace(again, seconds=time.perf_counter() - started)
    return result


#: Relative difference between HiGHS's objective of the fleet it returns and that fleet's
#: cost summed here beyond which HiGHS's own reading of the fleet is wrong [1].
OBJECTIVE_TOL = 1e-6


def start_misread(h: Any, model: Model, result: RunResult, objective: Vector | None = None
                  ) -> bool:
    """Whether HiGHS ended on a fleet whose objective it holds to be other than the fleet's
    (``objective``, default the cost) by more than :data:`OBJECTIVE_TOL`: a start handed before
    presolve that HiGHS 1.16's presolve maps into its reduced space at a wrong objective. HiGHS
    then takes the start for a fleet below its own bound and stops at once, "optimal" after no
    node, the start returned and the bound set to that wrong objective: the joint program of a
    plan made mid-quarter (the finding's ``asof_after.yaml``) ended at its start, 7.58 M, where
    HiGHS from no start proves 5.67 M in one node."""
    if result.x is None:
        return False
    said = float(h.getInfo().objective_function_value)
    # HiGHS's objective counts the model's offset (a restriction's held columns' cost:
    # :func:`held_model`); without it every hour of the ``hours`` pass read as misread and was
    # solved twice (medium × 25 over periods: 21.81 M at 3.8 % against 21.54 M at 2.6 %)
    cost = (math.fsum((model.cost if objective is None else objective) * result.x)
            + float(model.lp.offset_))
    return abs(said - cost) > OBJECTIVE_TOL * max(1.0, abs(cost))



def hand_start(h: Any, start: Vector, after_cuts: bool = False) -> None:
    """Give a ``highspy.Highs`` a start: before its search, or after its first root cut
    rounds (:class:`_LateStart`)."""
    if after_cuts:
        h.cbMipUserSolution.subscribe(_LateStart(start))
        return
    import highspy

    solution = highspy.HighsSolution()
    solution.col_value = list(map(float, start))
    solution.value_valid = True
    h.setSolution(solution)

class _LateStart:
    """Hands a start to HiGHS once its root has run the cut rounds after which it tries central
    rounding (or at its first dive after the root, whichever comes first).

    HiGHS asks for a user solution after its setup, before the root LP, after each round of root
    cuts and before each dive; after the fifth round it rounds from the analytic centre. Given a
    good start before that, the rounding's failed attempts against the start's cost took 17–30 s
    on the ×100 program (from no start the round takes 2–4 s; measured with highspy 1.16), so the
    joint solve from the stages' fleet ended dearer than HiGHS from no start in the same time
    (benchmarks/results/scale.md, "At scale"). The calls come at fixed points of HiGHS's search, so
    when the start arrives is the same from run to run."""

    #: Calls before the one that follows the central rounding: setup, root LP, five rounds.
    CALLS_BEFORE = 6

    def __init__(self, start: Vector) -> None:
        self.start = np.asarray(start, dtype=np.float64)
        self.calls = 0
        self.given = False

    def __call__(self, event: Any) -> None:
        if self.given:
            return
        self.calls += 1
        if self.calls > self.CALLS_BEFORE or event.data_out.mip_node_count > 0:
            event.data_in.setSolution(self.start)
            event.data_in.user_has_solution = True
            self.given = True


class _AfterRoot:
    """Hands a start to HiGHS at its first user-solution call with a branch-and-bound node
    counted: the root's presolve, LP and cut rounds run as from no start, the tree then prunes
    against the start and searches around it.

    On large ×1's joint program the start handed before the search put the root LP's bound
    ~4 CPU-s later (9.6–10.4 against 5.7–6.4 CPU-s) and the root's plateau lower in 3 of 3 HiGHS
    seeds (95,453 / 95,528 / ≥ 95,268 against 96,056 / 95,687 / 95,985; benchmarks/results/scale.md,
    "Run R")."""

    def __init__(self, start: Vector) -> None:
        self.start = np.asarray(start, dtype=np.float64)
        self.given = False

    def __call__(self, event: Any) -> None:
        if not self.given and event.data_out.mip_node_count > 0:
            event.data_in.setSolution(self.start)
            event.data_in.user_has_solution = True
            self.given = True


class _WhenProven:
    """Hands a fleet to HiGHS at the first of its user-solution calls at which its bound proves
    the fleet within the gap, so that the solve then ends proven at once; until then HiGHS
    searches from its own fleets, its searches around an incumbent (RINS, local search) not
    drawn to this one. The calls come at fixed points of HiGHS's search, with the bound HiGHS
    holds there, so when the fleet is handed is the same from run to run."""

    def __init__(self, x: Vector, cost: float, gap: float) -> None:
        self.x = np.asarray(x, dtype=np.float64)
        self.proven_at = cost * (1 - gap)
        """The bound that proves the fleet within the gap [currency/month]."""
        self.given = False

    def __call__(self, event: Any) -> None:
        bound = _finite(event.data_out.mip_dual_bound)
        if self.given or bound is None or bound < self.proven_at:
            return
        event.data_in.setSolution(self.x)
        event.data_in.user_has_solution = True
        self.given = True


class _Watch:
    """Rate-limits progress reports of one run."""

    def __init__(self, deadline: Deadline, on_progress: Callable[[Progress], None] | None,
                 started: float) -> None:
        self.deadline, self.on_progress, self.last = deadline, on_progress, started

    def report(self, primal: float, dual: float) -> None:
        now = time.perf_counter()
        if self.on_progress is None or now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        self.on_progress(Progress(self.deadline.elapsed(), _finite(primal), _finite(dual)))


def _empty(model: Model) -> RunResult:
    """A program without columns: its one fleet (nothing) is optimal if it meets every row (a
    demand of zero), and the program infeasible otherwise (a demand no column can serve)."""
    x = np.zeros(0)
    if model.broken_rows(x):
        return RunResult(SolveStatus.infeasible, None, None, None, 0.0)
    return RunResult(SolveStatus.optimal, x, 0.0, 0.0, 0.0)


def _result(h: Any, model: Model, relaxation: bool, seconds: float) -> RunResult:
    import highspy

    status = h.getModelStatus()
    info = h.getInfo()
    hs = highspy.HighsModelStatus
    found = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.array(h.getSolution().col_value, dtype=np.float64) if found else None
    objective = model.cost_of(x) if x is not None else None
    if relaxation:
        bound = objective if status == hs.kOptimal else None
    else:
        bound = _finite(info.mip_dual_bound)
        if status == hs.kOptimal and bound is None:
            bound = objective
    if status == hs.kOptimal:
        result = SolveStatus.optimal
    elif status in (hs.kInfeasible, hs.kUnboundedOrInfeasible):
        result = SolveStatus.infeasible
    elif status in (hs.kTimeLimit, hs.kInterrupt):
        result = SolveStatus.time_limit
    elif found and status in (hs.kIterationLimit, hs.kSolutionLimit, hs.kObjectiveBound,
                              hs.kObjectiveTarget):
        result = SolveStatus.feasible
    else:
        result = SolveStatus.error
    nodes = int(info.mip_node_count) if not relaxation and info.mip_node_count > 0 else 0
    return RunResult(result, x, objective, bound, seconds, nodes)


def _finite(x: float | None) -> float | None:
    if x is None or x != x or abs(x) >= 1e300:
        return None
    return float(x)
