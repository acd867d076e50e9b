"""A Lagrangian bound by time slice, its multipliers raised by subgradient steps (issue 15).

The program's slices share only the all-day columns (reserved nodes and replicas, their
node-loss binaries) and the rows that span slices (batch workloads' daily volumes). Give every
slice a copy of the all-day columns (and the rows on them alone), relax "copy = the all-day
column" with a multiplier λ per slice and column, relax each spanning row with a multiplier μ
of the row's sign, and the program falls apart into 24 slice programs and one all-day program:

    L(λ, μ) = Σ_r μ_r b_r + Σ_s min { (c_s − μA_s) x_s + λ_s z_s : (x_s, z_s) ∈ slice s }
              + min { (c_0 − μA_0 − Σ_s λ_s) z : z ∈ the all-day box and rows }

where b_r is the row's lower side when μ_r > 0 and its upper side when μ_r < 0. Any (λ, μ)
with μ of the right sign gives a lower bound on the program's optimum, provided each minimum is
bounded from below by what is added: every slice's integer program contributes HiGHS's proven
dual bound (not its incumbent), the all-day program its LP relaxation (a lower bound on its
integer minimum). At the LP relaxation's duals (λ_s = what slice s's rows pay for the all-day
columns, μ = the spanning rows' duals) the slices as LPs give back the LP bound exactly (printed
as a check), and as integer programs at least it. The multipliers then move by Polyak subgradient
steps towards the best fleet known (``BEST_KNOWN`` in bench_plan.py): the subgradient is
(copy − all-day value) for λ and (side − row activity) for μ, taken at the slices' incumbents.

Run (from the repository root; HiGHS on one thread; prints each step's bound and the CPU
seconds spent)::

    .venv/bin/python benchmarks/slice_lagrange.py --case large:25 --steps 20 --slice-limit 5
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.lp_gap import _column_slices, _data, _sub  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import ProgramData  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402

Vector = npt.NDArray[np.float64]


#: HiGHS threads of every solve here; ``None``: the planner's (``solver.solve.backends.THREADS``).
#: HiGHS's scheduler is one per process and refuses a run asking for another count (status "Not
#: Set"), so in a process that has planned (the tests) this takes the planner's; :func:`main`,
#: a process of its own, measures on one thread (Run K).
HIGHS_THREADS: int | None = None


def _highs(lp: Any, relax: bool, limit_s: float, gap: float) -> Any:
    import highspy

    from solver.solve.backends import THREADS

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    threads = THREADS.get() if HIGHS_THREADS is None else HIGHS_THREADS
    for option, value in (("threads", threads), ("time_limit", float(limit_s)),
                          ("mip_rel_gap", gap), ("solve_relaxation", relax)):
        h.setOptionValue(option, value)
    return h


@dataclass
class Evaluation:
    """L at one set of multipliers, with what its subgradient needs."""

    bound: float
    """The valid lower bound: proven slice bounds + the all-day LP + the spanning rows' part."""
    copies: Vector
    """Each slice's incumbent copy of the all-day columns, slices × all-day columns."""
    all_day: Vector
    """The all-day program's values."""
    x: Vector
    """The slices' incumbents and the all-day values as one column vector of the model."""
    slice_bounds: Vector
    slice_gaps: Vector
    """Each slice's (incumbent − proven bound) in the slice's own priced terms."""
    seconds: float


@dataclass
class SliceLagrangian:
    """The program split by slice (module docstring); evaluate L at multipliers (λ, μ)."""

    model: Model
    slice_limit_s: float = 5.0
    slice_gap: float = 1e-4
    relax: bool = False
    """Slices as LPs (the duality check) rather than integer programs."""
    column_slice: npt.NDArray[np.int64] = field(init=False)
    all_day: npt.NDArray[np.int64] = field(init=False)
    spanning: npt.NDArray[np.int64] = field(init=False)
    alone: npt.NDArray[np.int64] = field(init=False)
    own: list[npt.NDArray[np.int64]] = field(init=False)
    own_rows: list[npt.NDArray[np.int64]] = field(init=False)
    _rows: npt.NDArray[np.int64] = field(init=False, repr=False)
    _solvers: list[Any] = field(init=False, repr=False)
    _master: Any = field(init=False, repr=False)

    @classmethod
    def of(cls, program: Any, **kwargs: Any) -> SliceLagrangian:
        model = model_of(program)
        out = cls(model, **kwargs)
        out.split(_column_slices(program, model))
        return out

    def split(self, column_slice: npt.NDArray[np.int64]) -> None:
        """Classify rows by the slices of their columns and build one HiGHS per slice."""
        m = self.model
        self.column_slice = column_slice
        n_slices = int(column_slice.max()) + 1
        self._rows = np.repeat(np.arange(len(m.row_lower)), np.diff(m.starts))
        row_slice = np.full(len(m.row_lower), -1)  # -1: all-day columns alone; -2: spanning
        seen = column_slice[m.columns]
        for i in range(len(m.row_lower)):
            s = set(seen[m.starts[i]:m.starts[i + 1]].tolist()) - {-1}
            row_slice[i] = -1 if not s else (min(s) if len(s) == 1 else -2)
        self.spanning = np.flatnonzero(row_slice == -2)
        self.alone = np.flatnonzero(row_slice == -1)
        self.all_day = np.flatnonzero(column_slice == -1)
        self.own = [np.flatnonzero(column_slice == s) for s in range(n_slices)]
        self.own_rows = [np.flatnonzero(row_slice == s) for s in range(n_slices)]
        zero = np.zeros(m.columns_count)
        self._solvers = []
        for s in range(n_slices):
            cols = np.concatenate([self.own[s], self.all_day])
            lp = _sub(m, cols, np.concatenate([self.own_rows[s], self.alone]), zero[cols])
            self._solvers.append(_highs(lp, self.relax, self.slice_limit_s, self.slice_gap))
        master = _sub(m, self.all_day, self.alone, zero[self.all_day])
        self._master = _highs(master, True, 600.0, 1e-4)

    @property
    def slices(self) -> int:
        return len(self.own)

    def paid(self, duals: Vector, rows: npt.NDArray[np.int64]) -> Vector:
        """What ``rows`` pay each column at ``duals`` (Aᵀy over those rows)."""
        y = np.zeros(len(self.model.row_lower))
        y[rows] = duals[rows]
        return np.bincount(self.model.columns, weights=self.model.values * y[self._rows],
                           minlength=self.model.columns_count)

    def from_duals(self, duals: Vector) -> tuple[Vector, Vector]:
        """(λ, μ) from a dual vector of the whole program's rows: λ_s = what slice s's rows pay
        for the all-day columns, μ = the spanning rows' duals (wrong signs zeroed)."""
        mu = self.signed(duals[self.spanning])
        lam = np.array([self.paid(duals, self.own_rows[s])[self.all_day]
                        for s in range(self.slices)])
        return lam, mu

    def signed(self, mu: Vector) -> Vector:
        """``mu`` with each spanning row's multiplier cut to its sign: ≥ 0 on a row with no upper
        side, ≤ 0 on one with no lower side."""
        m = self.model
        lo, hi = m.row_lower[self.spanning], m.row_upper[self.spanning]
        out = mu.copy()
        out[np.isinf(hi) & (out < 0)] = 0.0
        out[np.isinf(lo) & (out > 0)] = 0.0
        return out

    def _sides(self, mu: Vector) -> Vector:
        m = self.model
        return np.where(mu > 0, m.row_lower[self.spanning],
                        np.where(mu < 0, m.row_upper[self.spanning], 0.0))

    def evaluate(self, lam: Vector, mu: Vector) -> Evaluation:
        """L(λ, μ) (module docstring) and the slices' incumbents."""
        import highspy

        started = time.process_time()
        m = self.model
        y = np.zeros(len(m.row_lower))
        y[self.spanning] = mu
        priced = m.cost - self.paid(y, self.spanning)
        sides = self._sides(mu)
        bound = float(np.dot(mu[mu != 0], sides[mu != 0]))
        n_all = len(self.all_day)
        copies = np.zeros((self.slices, n_all))
        x = np.zeros(m.columns_count)
        bounds = np.zeros(self.slices)
        gaps = np.zeros(self.slices)
        for s, h in enumerate(self._solvers):
            cost = np.concatenate([priced[self.own[s]], lam[s]])
            h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), cost)
            h.run()
            info = h.getInfo()
            status = h.getModelStatus()
            sol = np.array(h.getSolution().col_value)
            if self.relax:
                if status != highspy.HighsModelStatus.kOptimal:
                    raise RuntimeError(f"slice {s} LP: {h.modelStatusToString(status)}")
                bounds[s] = info.objective_function_value
            else:
                bounds[s] = info.mip_dual_bound
                gaps[s] = info.objective_function_value - info.mip_dual_bound
                if not np.isfinite(bounds[s]):
                    raise RuntimeError(f"slice {s}: no bound ({h.modelStatusToString(status)})")
            if len(sol) != len(cost):  # no incumbent in the time: the slice's LP point
                h.setOptionValue("solve_relaxation", True)
                h.run()
                sol = np.array(h.getSolution().col_value)
                h.setOptionValue("solve_relaxation", self.relax)
            x[self.own[s]] = sol[:len(self.own[s])]
            copies[s] = sol[len(self.own[s]):]
        master_cost = priced[self.all_day] - lam.sum(axis=0)
        self._master.changeColsCost(n_all, np.arange(n_all, dtype=np.int32), master_cost)
        self._master.run()
        if self._master.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("the all-day program: "
                               + self._master.modelStatusToString(self._master.getModelStatus()))
        z = np.array(self._master.getSolution().col_value)
        x[self.all_day] = z
        bound += float(bounds.sum()) + self._master.getInfo().objective_function_value
        return Evaluation(bound, copies, z, x, bounds, gaps, time.process_time() - started)

    def subgradient(self, ev: Evaluation, mu: Vector) -> tuple[Vector, Vector]:
        """(∂λ, ∂μ) of L at the evaluation's points."""
        g_lam = ev.copies - ev.all_day[None, :]
        activity = self.model.activities(ev.x)[self.spanning]
        lo, hi = self.model.row_lower[self.spanning], self.model.row_upper[self.spanning]
        # at μ ≠ 0 the side it is priced at less the activity; at μ = 0 the side the row breaks
        g_mu = np.where(activity < lo, lo - activity, np.where(activity > hi, hi - activity, 0.0))
        g_mu = np.where((g_mu == 0) & (mu > 0), lo - activity, g_mu)
        g_mu = np.where((g_mu == 0) & (mu < 0), hi - activity, g_mu)
        return g_lam, g_mu


def lp_duals(model: Model) -> tuple[float, Vector]:
    """The LP relaxation's value and row duals."""
    import highspy

    h = _highs(model.lp, True, 600.0, 1e-4)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError("LP relaxation: " + h.modelStatusToString(h.getModelStatus()))
    return h.getInfo().objective_function_value, np.array(h.getSolution().row_dual)


@dataclass
class Step:
    step: int
    bound: float
    best: float
    cpu_s: float
    theta: float
    norm: float
    slice_gaps: float


def maximise(lag: SliceLagrangian, lam: Vector, mu: Vector, target: float, steps: int,
             theta: float = 1.0, patience: int = 3, cpu_budget_s: float = float("inf"),
             report: Any = None) -> tuple[float, list[Step]]:
    """Polyak subgradient steps from (λ, μ) towards ``target``; the best bound seen and a log.
    θ halves after ``patience`` steps without a better bound."""
    started = time.process_time()
    m = lag.model
    sides = np.stack([m.row_lower[lag.spanning], m.row_upper[lag.spanning]])
    scale = np.maximum(1.0, np.where(np.isfinite(sides), np.abs(sides), 0.0).max(axis=0))
    best = -np.inf
    log: list[Step] = []
    since = 0
    for k in range(steps + 1):
        ev = lag.evaluate(lam, mu)
        if ev.bound > best + 1e-6 * abs(best if np.isfinite(best) else 1.0):
            best, since = ev.bound, 0
        else:
            since += 1
            if since >= patience:
                theta, since = theta / 2, 0
        g_lam, g_mu = lag.subgradient(ev, mu)
        g_mu = g_mu / scale  # in the rows' scaled units (a daily volume is ~1e6 tokens)
        norm = float((g_lam ** 2).sum() + (g_mu ** 2).sum())
        log.append(Step(k, ev.bound, best, time.process_time() - started, theta, norm ** 0.5,
                        float(ev.slice_gaps.sum())))
        if report is not None:
            report(log[-1])
        if k == steps or norm <= 1e-12 or time.process_time() - started > cpu_budget_s:
            break
        t = theta * max(target - ev.bound, 0.0) / norm
        lam = lam + t * g_lam
        mu = lag.signed(mu + t * g_mu / scale)
    return best, log


def program_of(data: ProgramData) -> Any:
    return build_program(data)


def main() -> None:
    from benchmarks.bench_plan import BEST_KNOWN

    global HIGHS_THREADS
    HIGHS_THREADS = 1  # this process's own scheduler: Run K's figures are on one thread

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="large:25", help="size:scale")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--slice-limit", type=float, default=5.0, help="seconds per slice program")
    p.add_argument("--slice-gap", type=float, default=1e-4, help="relative gap per slice")
    p.add_argument("--theta", type=float, default=1.0, help="first Polyak step factor")
    p.add_argument("--patience", type=int, default=3,
                   help="steps without a better bound before θ halves")
    p.add_argument("--cpu-budget", type=float, default=float("inf"), help="CPU seconds")
    p.add_argument("--check", action="store_true", help="also the slices as LPs at the duals")
    args = p.parse_args()
    size, scale = args.case.split(":")
    print(f"{args.case}, load {Path('/proc/loadavg').read_text().split()[0]}", flush=True)
    t0 = time.process_time()
    program = program_of(_data(size, int(scale)))
    lag = SliceLagrangian.of(program, slice_limit_s=args.slice_limit, slice_gap=args.slice_gap)
    lp_value, duals = lp_duals(lag.model)
    print(f"build + LP {time.process_time() - t0:.1f} CPU-s; {lag.model.columns_count} columns, "
          f"{len(lag.all_day)} all-day, {len(lag.spanning)} spanning rows, LP {lp_value:,.0f}",
          flush=True)
    lam, mu = lag.from_duals(duals)
    if args.check:
        check = SliceLagrangian(lag.model, relax=True)
        check.split(lag.column_slice)
        print(f"slices as LPs at the duals: {check.evaluate(lam, mu).bound:,.0f}", flush=True)
    target = BEST_KNOWN[(size, int(scale))]
    print("| step | L | best L | best ÷ LP − 1 | CPU s | θ | ‖g‖ | Σ slice gaps |\n"
          "|---:|---:|---:|---:|---:|---:|---:|---:|")

    def show(st: Step) -> None:
        print(f"| {st.step} | {st.bound:,.0f} | {st.best:,.0f} | "
              f"{(st.best / lp_value - 1) * 100:+.3f} % | {st.cpu_s:.1f} | {st.theta:g} | "
              f"{st.norm:,.2f} | {st.slice_gaps:,.0f} |", flush=True)

    best, _ = maximise(lag, lam, mu, target, args.steps, theta=args.theta,
                       patience=args.patience, cpu_budget_s=args.cpu_budget, report=show)
    print(f"best L {best:,.0f} (LP {lp_value:,.0f}, best known {target:,.0f}: "
          f"gap to it {(target - best) / target * 100:.2f} %, LP's "
          f"{(target - lp_value) / target * 100:.2f} %); {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main()
