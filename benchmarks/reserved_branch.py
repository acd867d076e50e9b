"""How far a bound can rise at large ×25: HiGHS's own tree given time, and a bound that
branches on the reserved fleet (issue 15).

The program's cost splits into a reserved fleet ``R`` (one integer node count per zone and GPU
type, common to every hour) and each hour's on-demand and spot nodes. The measurements, each
HiGHS on one thread, one after the other in this process:

1. ``long``: the whole program (as the plan's joint solve builds it) from a fleet, for
   ``--cpu`` CPU seconds; the bound, the best fleet and the branch-and-bound nodes at every
   ``--every`` CPU seconds. Whether HiGHS's own branching proves ``--target`` at all, and how
   its bound grows with time.
2. ``given``: the disjunction over ``R``. For any set of reserved fleets that holds every fleet
   cheaper than the incumbent, ``min over R of bound(R)`` is a valid bound of the program, where
   ``bound(R)`` is any lower bound of the program with the reserved node counts held at ``R``.
   It reaches ``--target`` only if ``bound(R) ≥ target`` at *every* ``R`` in the set — at the
   fleet's own reserved fleet ``R*`` in particular, since the fleet itself is a point there
   (its leaf's optimum is at most the fleet's cost). So this measures ``LP(R)`` at ``R*`` and
   at its neighbours (one node more or less in one pool), and at ``R*``: the slice split's
   bound given ``R*`` (every hour's integer program given it, each with its own reserved
   replicas: benchmarks/reserved_bound.py — what rounding each hour's nodes given ``R`` can
   give at most, at those multipliers) and HiGHS's bound on the program with ``R*`` held, per
   CPU second;
3. ``ranges``: how many reserved fleets the disjunction holds — each reserved node count's
   least and largest value over the LP relaxation with the cost at most ``--target`` (a fleet
   outside those ranges costs more than the target, so no leaf is needed there);
4. ``count``: of the reserved fleets of the GPU type the fleet reserves alone, at most
   ``--most`` nodes in all, the share whose LP(R) is below the target (``--samples`` drawn
   uniformly): a floor on the leaves whose bound must reach the target.

Run (from the repository root; a ``--fleet`` file that does not exist is made by
``solve_shared`` at ``--limit`` seconds, saved as a column vector, and the script stops: run it
again for the measurements, in a process whose HiGHS runs on one thread)::

    nice -n 19 .venv/bin/python benchmarks/reserved_branch.py --case large:25 \
        --fleet FLEET.npy --only long --cpu 1200 --every 60
    nice -n 19 .venv/bin/python benchmarks/reserved_branch.py --case large:25 \
        --fleet FLEET.npy --only ranges,given --cpu 150 --every 15 --slice-limit 5
    nice -n 19 .venv/bin/python benchmarks/reserved_branch.py --case large:25 \
        --fleet FLEET.npy --only count --samples 300 --most 16

Results: benchmarks/results/scale.md, "Large ×25 past the hourly rounding".
"""

from __future__ import annotations

import argparse
import os
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

from benchmarks.lp_gap import _data  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402

Vector = npt.NDArray[np.float64]


@dataclass
class Reading:
    """One look at a running HiGHS: CPU and wall seconds, bound, best fleet, tree nodes."""

    cpu_s: float
    wall_s: float
    bound: float
    fleet: float
    nodes: int
    load: float


#: HiGHS threads of every solve here; ``None``: the planner's (``THREADS``). HiGHS keeps one
#: thread pool per process and refuses a run asking for another count, so a process that has
#: planned (the tests) takes the planner's; :func:`main` measures on one thread.
HIGHS_THREADS: int | None = None


def _highs(model: Model, relax: bool = False) -> Any:
    import highspy

    from solver.solve.backends import THREADS

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    h.setOptionValue("threads", THREADS.get() if HIGHS_THREADS is None else HIGHS_THREADS)
    h.setOptionValue("mip_rel_gap", 1e-4)
    h.setOptionValue("time_limit", 7200.0)
    if relax:
        h.setOptionValue("solve_relaxation", True)
    return h


def track(h: Any, cpu_s: float, every_s: float, report: Any = None) -> list[Reading]:
    """Run ``h`` for ``cpu_s`` CPU seconds of this process; a reading at each ``every_s`` and
    one at the end."""
    readings: list[Reading] = []
    started, wall = time.process_time(), time.perf_counter()
    next_mark = [every_s]

    def look(event: Any) -> None:
        spent = time.process_time() - started
        if spent >= cpu_s:  # HiGHS calls back a few times more before it stops
            event.interrupt()
            return
        if spent >= next_mark[0]:
            d = event.data_out
            r = Reading(spent, time.perf_counter() - wall, float(d.mip_dual_bound),
                        float(d.mip_primal_bound), int(d.mip_node_count), os.getloadavg()[0])
            readings.append(r)
            if report is not None:
                report(r)
            while next_mark[0] <= spent:
                next_mark[0] += every_s

    h.cbMipInterrupt.subscribe(look)
    h.run()
    info = h.getInfo()
    end = Reading(time.process_time() - started, time.perf_counter() - wall,
                  float(info.mip_dual_bound), float(info.objective_function_value),
                  int(info.mip_node_count), os.getloadavg()[0])
    readings.append(end)
    if report is not None:
        report(end)
    return readings


def start_from(h: Any, x: Vector) -> None:
    import highspy

    sol = highspy.HighsSolution()
    sol.col_value = list(x)
    sol.value_valid = True
    h.setSolution(sol)


def reserved_columns(program: Program, model: Model) -> npt.NDArray[np.int32]:
    """Model columns of the reserved node counts (one per zone and GPU type)."""
    return np.array(sorted(model.index[y.name] for k, y in program.v.nodes.items()
                           if k.slice is None), dtype=np.int32)


def _name(model: Model, j: int) -> str:
    return model.variables[j].name.removeprefix("y_").removesuffix("_reserved_all")


def _row(r: Reading) -> str:
    return (f"| {r.cpu_s:.0f} | {r.wall_s:.0f} | {r.bound:,.0f} | {r.fleet:,.0f} | {r.nodes} | "
            f"{r.load:.1f} |")


def long(model: Model, x: Vector, cpu_s: float, every_s: float) -> None:
    print(f"long run from the fleet ({model.cost_of(x):,.0f}), one thread", flush=True)
    print("| CPU s | wall s | bound | fleet | B&B nodes | load |\n|---:|---:|---:|---:|---:|---:|")
    h = _highs(model)
    start_from(h, x)
    track(h, cpu_s, every_s, lambda r: print(_row(r), flush=True))


def lp_given(model: Model, cols: npt.NDArray[np.int32], r: Vector) -> float:
    h = _highs(model, relax=True)
    h.changeColsBounds(len(cols), cols, r, r)
    h.run()
    return float(h.getInfo().objective_function_value)


def given(program: Program, model: Model, x: Vector, cpu_s: float, every_s: float,
          slice_limit_s: float) -> None:
    """At the fleet's reserved fleet R*: LP(R*), the slice split's bound given R*
    (benchmarks/reserved_bound.py: every hour's integer program given R*, at LP(R*)'s duals) and
    HiGHS's bound on the program with R* held, per CPU second; LP(R) at R*'s neighbours."""
    import benchmarks.slice_lagrange as slice_lagrange
    from benchmarks.reserved_bound import GivenReserved

    cols = reserved_columns(program, model)
    star = np.round(x[cols])
    fleets = {"R* (the fleet's)": star}
    for i in np.flatnonzero(star > 0):
        for step in (-1, 1):
            moved = star.copy()
            moved[i] += step
            fleets[f"R* {step:+d} in {_name(model, int(cols[i]))}"] = moved
    print("\n| reserved fleet R | nodes | LP(R) | CPU s |\n|---|---|---:|---:|")
    for label, r in fleets.items():
        shown = ", ".join(f"{_name(model, int(c))} {v:.0f}" for c, v in zip(cols, r, strict=True)
                          if v > 0)
        t = time.process_time()
        lp = lp_given(model, cols, r)
        print(f"| {label} | {shown} | {lp:,.0f} | {time.process_time() - t:.1f} |", flush=True)
    if slice_limit_s > 0:
        slice_lagrange.HIGHS_THREADS = HIGHS_THREADS
        t = time.process_time()
        split = GivenReserved.of(program, slice_limit_s=slice_limit_s)
        value, duals = split.lp(star)
        ev = split.bound(star, duals)
        print(f"\nR*: every hour's integer program given R* (slices ≤ {slice_limit_s:g} s, "
              f"proven bounds): LB(R*) {ev.bound:,.0f} (LP(R*) {value:,.0f}; "
              f"{time.process_time() - t:.1f} CPU-s)", flush=True)
    print("\nR*: HiGHS on the program with R* held, from the fleet, one thread\n"
          "| CPU s | wall s | bound(R*) | fleet | B&B nodes | load |\n"
          "|---:|---:|---:|---:|---:|---:|", flush=True)
    h = _highs(model)
    h.changeColsBounds(len(cols), cols, star, star)
    start_from(h, x)
    track(h, cpu_s, every_s, lambda rd: print(_row(rd), flush=True))


@dataclass
class Range:
    """A reserved node count's least and largest value over the LP with cost ≤ the target."""

    column: int
    least: float
    largest: float

    @property
    def values(self) -> range:
        """The integer values a fleet costing at most the target can give it."""
        return range(int(np.ceil(self.least - 1e-6)), int(np.floor(self.largest + 1e-6)) + 1)


def reserved_ranges(program: Program, model: Model, target: float) -> list[Range]:
    """Each reserved node count's range over the LP relaxation with the cost at most
    ``target``: every fleet of the program that costs at most ``target`` is a point of that LP,
    so its reserved fleet lies in the box of these ranges (an infeasible LP: no fleet does, every
    range empty). The last range, column -1, is that of their sum (the reserved nodes in all)."""
    import highspy

    cols = reserved_columns(program, model)
    h = _highs(model, relax=True)
    paid = np.flatnonzero(model.cost).astype(np.int32)
    h.addRow(-highspy.kHighsInf, float(target), len(paid), paid, model.cost[paid])
    every = np.arange(model.columns_count, dtype=np.int32)
    zero = np.zeros(model.columns_count)
    out = []
    for j in [*cols, -1]:  # -1: their sum
        ends = []
        for sense in (1.0, -1.0):
            c = zero.copy()
            c[cols if j < 0 else j] = sense
            h.changeColsCost(model.columns_count, every, c)
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return [Range(int(k), 1.0, 0.0) for k in [*cols, -1]]  # no fleet that cheap
            ends.append(sense * h.getInfo().objective_function_value)
        out.append(Range(int(j), ends[0], ends[1]))
    return out


def ranges(program: Program, model: Model, target: float) -> None:
    t = time.process_time()
    box = reserved_ranges(program, model, target)
    print(f"\nreserved node counts within cost ≤ {target:,.0f} (LP)\n"
          "| pool | least | largest | integer values |\n|---|---:|---:|---:|")
    count = 1
    for r in box[:-1]:
        count *= max(len(r.values), 1)
        if r.largest > 1e-6:
            print(f"| {_name(model, r.column)} | {r.least:.2f} | {r.largest:.2f} | "
                  f"{len(r.values)} |", flush=True)
    total = box[-1]
    print(f"| all reserved nodes | {total.least:.2f} | {total.largest:.2f} | "
          f"{len(total.values)} |")
    print(f"(every other pool: 0 nodes within the target; reserved fleets in the box: "
          f"{count:,}; {time.process_time() - t:.0f} CPU-s)")


def count(program: Program, model: Model, x: Vector, target: float, samples: int, most: int,
          seed: int = 0) -> None:
    """How many leaves a disjunction over R needs at least: reserved fleets of the GPU type the
    fleet reserves, at most ``most`` nodes in all over its zones (every other pool held at 0: a
    subset of the fleets the disjunction must cover), drawn uniformly (stars and bars); the
    share whose LP(R) is below the target, times the number of such fleets."""
    from math import comb

    cols = reserved_columns(program, model)
    star = np.round(x[cols])
    gpus = {_name(model, int(c)).rsplit("_", 1)[-1] for c, v in zip(cols, star, strict=True)
            if v > 0}
    pools = np.array([i for i, c in enumerate(cols)
                      if _name(model, int(c)).rsplit("_", 1)[-1] in gpus])
    rng = np.random.default_rng(seed)
    below = 0
    t = time.process_time()
    for _ in range(samples):
        r = np.zeros(len(cols))
        cuts = np.sort(rng.choice(most + len(pools), size=len(pools), replace=False))
        r[pools] = np.diff(np.concatenate([[-1], cuts])) - 1
        below += lp_given(model, cols, r) < target
    space = float(comb(most + len(pools), len(pools)))
    share = below / samples
    half = 1.96 * np.sqrt(max(share * (1 - share), 1.0 / samples) / samples)
    print(f"\n{sorted(gpus)} reserved, {len(pools)} pools, at most {most} nodes in all: "
          f"{space:,.0f} fleets; LP(R) < {target:,.0f} at {below} of {samples} drawn "
          f"({share:.1%} ± {half:.1%}): ~{share * space:,.0f} leaves "
          f"({time.process_time() - t:.0f} CPU-s)", flush=True)


def main() -> None:
    global HIGHS_THREADS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="large:25", help="size:scale")
    p.add_argument("--fleet", type=Path, required=True, help="a saved fleet (.npy column vector)")
    p.add_argument("--only", default="long", help="of long,given,ranges,count")
    p.add_argument("--samples", type=int, default=200, help="count: reserved fleets drawn")
    p.add_argument("--most", type=int, default=16,
                   help="count: most reserved nodes in all (16 B200 nodes: ~880 k a month)")
    p.add_argument("--cpu", type=float, default=1200.0, help="CPU seconds per HiGHS run")
    p.add_argument("--every", type=float, default=60.0, help="CPU seconds between readings")
    p.add_argument("--target", type=float, default=921_703.0,
                   help="the bound a 2-%% proof of the best known fleet needs")
    p.add_argument("--slice-limit", type=float, default=5.0,
                   help="given: seconds per hour's program of the slice split (0: skip it)")
    p.add_argument("--limit", type=float, default=60.0,
                   help="the plan's time limit when the fleet is made [s]")
    args = p.parse_args()
    size, scale = args.case.split(":")
    print(f"{args.case}, load {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%H:%M', time.gmtime())} UTC", flush=True)
    if not args.fleet.exists():
        from solver.solve.strategy import solve_shared

        made, outcome = solve_shared(_data(size, int(scale)), "highs", args.limit, 0.01)
        np.save(args.fleet, np.array([float(v.varValue or 0.0) for v in made.prob.variables()]))
        print(f"saved {args.fleet}: {outcome.report.objective:,.0f} (bound "
              f"{outcome.report.bound:,.0f}); run again for the measurements")
        return
    HIGHS_THREADS = 1  # the measurements: one thread, in a process that has not planned
    program = build_program(_data(size, int(scale)), shared_two_nodes=True)
    model = model_of(program)
    x = np.load(args.fleet)
    if x.shape != (model.columns_count,) or model.broken_rows(x):
        raise SystemExit(f"{args.fleet}: not a fleet of this program ({x.shape[0]} values for "
                         f"{model.columns_count} columns, or rows broken); delete it to have "
                         "the plan make one")
    only = {s.strip() for s in args.only.split(",")}
    if "long" in only:
        long(model, x, args.cpu, args.every)
    if "ranges" in only:
        ranges(program, model, args.target)
    if "count" in only:
        count(program, model, x, args.target, args.samples, args.most)
    if "given" in only:
        given(program, model, x, args.cpu, args.every, args.slice_limit)


if __name__ == "__main__":
    main()
