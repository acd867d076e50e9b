"""A lower bound on the program's cost given its reserved node counts, by time slice (issue 15).

Run K's Lagrangian by slice (benchmarks/slice_lagrange.py) gives every slice its own priced copy
of the all-day columns, and each slice's copy of the reserved fleet then absorbs the rounding of
its hourly nodes: the bound is the LP. This script holds the reserved node counts at one integer
vector ``R`` — in every slice's copy and in the all-day program alike, so the copies of the node
counts equal the all-day ones and their multipliers cancel — and leaves the rest of the split as
it is (each slice its own copy of the reserved replicas and node-loss binaries, the daily-volume
rows priced):

    LB(R) = L(λ, μ) of the program restricted to reserved node counts = R

at (λ, μ) from the duals of LP(R), the LP relaxation with the reserved node counts held at R.
For any multipliers, LB(R) is at most the cost of every fleet whose reserved node counts are R
(each slice's integer program counted at HiGHS's proven dual bound), and at these at least
LP(R). A bound of the whole program along these lines is min over R of LB(R): it beats the
joint solve's root only if LB(R) does at every R a fleet could have.

For each R asked for — the reserved fleet of a fleet (``--fleet``, a saved column vector; or the
planner's own fleet after ``--limit`` seconds), the LP relaxation's reserved fleet rounded
down, to nearest and up, and the fleet's reserved fleet with one node more or less in each pool
it holds — prints LP(R), LB(R) and the CPU seconds (HiGHS on one thread).

Run (from the repository root)::

    .venv/bin/python benchmarks/reserved_bound.py --case large:25 --slice-limit 5
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

import benchmarks.slice_lagrange as slice_lagrange  # noqa: E402
from benchmarks.lp_gap import _data  # noqa: E402
from benchmarks.slice_lagrange import Evaluation, SliceLagrangian, _highs  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.variables import Program  # noqa: E402

Vector = npt.NDArray[np.float64]


def reserved_node_columns(program: Program, index: dict[str, int]) -> npt.NDArray[np.int32]:
    """Model columns of the reserved node counts (one per zone and GPU type), in column order."""
    return np.array(sorted(index[y.name] for k, y in program.v.nodes.items() if k.slice is None),
                    dtype=np.int32)


@dataclass
class GivenReserved:
    """The slice split of a program with its reserved node counts held (module docstring)."""

    lag: SliceLagrangian
    nodes: npt.NDArray[np.int32]
    """Model columns of the reserved node counts."""
    positions: npt.NDArray[np.int32]
    """Their positions among the all-day columns (the slices' copies and the all-day program)."""

    @classmethod
    def of(cls, program: Program, slice_limit_s: float = 5.0,
           slice_gap: float = 1e-4) -> GivenReserved:
        lag = SliceLagrangian.of(program, slice_limit_s=slice_limit_s, slice_gap=slice_gap)
        nodes = reserved_node_columns(program, lag.model.index)
        where = {int(c): i for i, c in enumerate(lag.all_day)}
        return cls(lag, nodes, np.array([where[int(c)] for c in nodes], dtype=np.int32))

    def lp(self, reserved: Vector) -> tuple[float, Vector]:
        """LP(R) and its row duals."""
        import highspy

        h = _highs(self.lag.model.lp, True, 600.0, 1e-4)
        h.changeColsBounds(len(self.nodes), self.nodes, reserved, reserved)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("LP with the reserved node counts held: "
                               + h.modelStatusToString(h.getModelStatus()))
        return h.getInfo().objective_function_value, np.array(h.getSolution().row_dual)

    def bound(self, reserved: Vector, duals: Vector) -> Evaluation:
        """LB(R) at the multipliers ``duals`` give (:meth:`SliceLagrangian.from_duals`)."""
        lag = self.lag
        for s, h in enumerate(lag._solvers):
            at = (self.positions + len(lag.own[s])).astype(np.int32)
            h.changeColsBounds(len(at), at, reserved, reserved)
        lag._master.changeColsBounds(len(self.positions), self.positions, reserved, reserved)
        return lag.evaluate(*lag.from_duals(duals))


def candidates(given: GivenReserved, fleet: Vector | None, lp_x: Vector) -> dict[str, Vector]:
    """Reserved fleets to bound: the LP's rounded three ways, the fleet's and its neighbours."""
    upper = given.lag.model.upper[given.nodes]
    lp_r = lp_x[given.nodes]
    out = {"LP's rounded down": np.floor(lp_r + 1e-9), "LP's to nearest": np.round(lp_r),
           "LP's rounded up": np.minimum(np.ceil(lp_r - 1e-9), upper)}
    if fleet is not None:
        r = np.round(fleet[given.nodes])
        out["the fleet's"] = r
        for i in np.flatnonzero(r > 0):
            name = given.lag.model.variables[given.nodes[i]].name
            for step in (-1, 1):
                moved = r.copy()
                moved[i] += step
                if moved[i] <= upper[i]:
                    out[f"the fleet's {step:+d} in {name}"] = moved
    return out


def _show(given: GivenReserved, r: Vector) -> str:
    names = [given.lag.model.variables[j].name for j in given.nodes]
    return ", ".join(f"{n.removeprefix('y_').removesuffix('_reserved_all')} {v:.0f}"
                     for n, v in zip(names, r, strict=True) if v > 0)


def main() -> None:
    slice_lagrange.HIGHS_THREADS = 1  # a process of its own: measured on one thread

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="large:25", help="size:scale")
    p.add_argument("--fleet", type=Path, default=None,
                   help="a saved fleet (.npy column vector of the program); else the plan's")
    p.add_argument("--limit", type=float, default=60.0, help="the plan's time limit [s]")
    p.add_argument("--slice-limit", type=float, default=5.0, help="seconds per slice program")
    p.add_argument("--only", default="", help="comma-separated labels to bound (default all)")
    args = p.parse_args()
    size, scale = args.case.split(":")
    print(f"{args.case}, load {Path('/proc/loadavg').read_text().split()[0]}", flush=True)
    data = _data(size, int(scale))
    fleet: Any = None
    if args.fleet is not None and args.fleet.exists():
        program = build_program(data)
        fleet = np.load(args.fleet)
    else:
        from solver.solve.strategy import solve_shared

        program, _ = solve_shared(data, "highs", args.limit, 0.01)
        fleet = np.array([v.varValue or 0.0 for v in program.prob.variables()])
        if args.fleet is not None:
            np.save(args.fleet, fleet)
    given = GivenReserved.of(program, slice_limit_s=args.slice_limit)
    model = given.lag.model
    h = _highs(model.lp, True, 600.0, 1e-4)
    h.run()
    lp_value, lp_x = h.getInfo().objective_function_value, np.array(h.getSolution().col_value)
    print(f"LP {lp_value:,.0f}; fleet {model.cost_of(fleet):,.0f} "
          f"({len(model.broken_rows(fleet))} rows broken)", flush=True)
    print("| reserved fleet R | nodes | LP(R) | LB(R) | CPU s |\n|---|---|---:|---:|---:|")
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    for label, r in candidates(given, fleet, lp_x).items():
        if only and label not in only:
            continue
        started = time.process_time()
        value, duals = given.lp(r)
        ev = given.bound(r, duals)
        print(f"| {label} | {_show(given, r)} | {value:,.0f} | {ev.bound:,.0f} | "
              f"{time.process_time() - started:.1f} |", flush=True)


if __name__ == "__main__":
    main()
