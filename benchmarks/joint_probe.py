"""Where a ×1 plan's joint solve gets its bound and its fleets (issue 15, "Run N").

Two probes on a benchmark case's program as the plan's joint solve builds it (with the shared
two-nodes cut), from a fleet given as a JSON file of variable name → value (a plan's fleet:
``--save-fleet`` writes the one ``solve_shared`` ends on):

- ``growth``: HiGHS on the whole program from the fleet, the planner's thread count and seed,
  HiGHS options added with ``--options key=value,...``; its bound and best fleet printed at
  every ``--every`` CPU seconds of this process (``time.process_time``: a loaded machine's wall
  clock says little), stopped after ``--cpu``; each cheaper fleet as HiGHS reports it. The
  fleet is handed before the search as the plan does at ×1, or (``--start``) after the root's
  first cut rounds, after the root, or not at all.
- ``groups``: neighbourhoods of the fleet: for each group of node columns (``--by gpu``,
  ``zone`` or ``purchase``), every node column outside the group held at the fleet's value,
  the group's nodes and every replica free, solved for at most ``--limit`` seconds each; a
  cheaper fleet found becomes the start of the groups after it.

Run (from the repository root)::

    .venv/bin/python benchmarks/joint_probe.py plan --case large:1 --save-fleet fleet.json
    .venv/bin/python benchmarks/joint_probe.py growth --case large:1 --fleet fleet.json --cpu 60
    .venv/bin/python benchmarks/joint_probe.py growth --case large:1 --fleet f.json --start none
    .venv/bin/python benchmarks/joint_probe.py groups --case large:1 --fleet f.json --by purchase
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.lp_gap import _data  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.solve.backends import SOLVER_SEED, THREADS  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import Model, Restriction, hand_start, model_of, run  # noqa: E402


def _option(h: Any, key: str, text: str) -> None:
    """Set a HiGHS option from text, typed as its current value."""
    _, current = h.getOptionValue(key)
    if isinstance(current, bool):
        value: Any = text in ("1", "true")
    elif isinstance(current, str):
        value = text
    else:
        value = type(current)(float(text))
    h.setOptionValue(key, value)


class _AfterRoot:
    """Hands ``x`` to HiGHS at its first user-solution call with a node counted: the root's cut
    loop has run as from no start."""

    def __init__(self, x: np.ndarray) -> None:
        self.x, self.given = x, False

    def __call__(self, event: Any) -> None:
        if not self.given and event.data_out.mip_node_count > 0:
            event.data_in.setSolution(self.x)
            event.data_in.user_has_solution = True
            self.given = True
            print(f"start handed at node {int(event.data_out.mip_node_count)}, bound "
                  f"{event.data_out.mip_dual_bound:,.0f}", flush=True)


def growth(model: Model, x: np.ndarray, cpu_s: float, every_s: float, options: str,
           start: str = "before") -> None:
    """HiGHS from ``x``: bound and best fleet per CPU second. ``start``: ``x`` handed before
    the search (the plan's way at ×1), after the root's first cut rounds (``after-cuts``, the
    plan's way at ×25), at HiGHS's first user-solution call after the root (``after-root``) or
    not at all (``none``: the cold solve)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    # HiGHS's wall-time limit is a guard only (the probe stops on CPU seconds): at load ~17 a
    # niced probe got ~0.07 of a core, and 10 × the CPU seconds cut runs short (2026-12-04).
    for key, value in (("mip_rel_gap", 0.01), ("threads", THREADS.get()),
                       ("random_seed", SOLVER_SEED), ("time_limit", 100 * cpu_s)):
        h.setOptionValue(key, value)
    for pair in filter(None, options.split(",")):
        key, text = pair.split("=")
        _option(h, key, text)
    if start == "after-root":
        h.cbMipUserSolution.subscribe(_AfterRoot(x))
    elif start != "none":
        hand_start(h, x, after_cuts=start == "after-cuts")
    started_cpu, started = time.process_time(), time.perf_counter()
    marks: list[tuple[float, float, float, float, int]] = []

    def interrupt(event: Any) -> None:
        d = event.data_out
        used = time.process_time() - started_cpu
        marks.append((time.perf_counter() - started, used, d.mip_dual_bound,
                      d.mip_primal_bound, int(d.mip_node_count)))
        if used > cpu_s:
            event.interrupt()

    def improving(event: Any) -> None:
        cost = model.cost_of(np.array(event.data_out.mip_solution, dtype=np.float64))
        print(f"fleet {cost:,.0f} at {time.process_time() - started_cpu:.1f} CPU-s", flush=True)

    h.cbMipInterrupt.subscribe(interrupt)
    h.cbMipImprovingSolution.subscribe(improving)
    h.run()
    next_mark = 0.0
    for wall, used, bound, primal, nodes in marks:
        if used >= next_mark:
            print(f"{wall:6.1f} s {used:6.1f} CPU-s  bound {bound:,.0f}  fleet {primal:,.0f}"
                  f"  nodes {nodes}")
            next_mark = used + every_s
    info = h.getInfo()
    print(f"end: {time.perf_counter() - started:.1f} s, {time.process_time() - started_cpu:.1f} "
          f"CPU-s, bound {info.mip_dual_bound:,.0f}, fleet {info.objective_function_value:,.0f}, "
          f"nodes {info.mip_node_count}")


def groups(model: Model, x: np.ndarray, by: str, limit_s: float) -> None:
    """Each group's nodes and every replica free, the other nodes held at ``x``."""
    v = model.program.v
    cols: dict[str, list[int]] = {}
    for k, y in v.nodes.items():
        name = {"gpu": k.gpu, "zone": k.zone, "purchase": str(k.purchase)}[by]
        cols.setdefault(name, []).append(model.index[y.name])
    every = np.array(sorted(j for c in cols.values() for j in c), dtype=np.int32)
    cost = model.cost_of(x)
    print(f"start {cost:,.0f}")
    for name, group in sorted(cols.items()):
        held = np.setdiff1d(every, np.array(group, dtype=np.int32))
        fixed = np.round(x[held])
        started_cpu, started = time.process_time(), time.perf_counter()
        r = run(model, Deadline(10 * limit_s), limit_s, 1e-4,
                restriction=Restriction(held, fixed, fixed), start=x)
        found = "—" if r.objective is None else f"{r.objective:,.0f}"
        bound = "—" if r.bound is None else f"{r.bound:,.0f}"
        print(f"{name}: {len(group)} node columns, {r.status}, fleet {found}, bound {bound}, "
              f"{time.perf_counter() - started:.1f} s, {time.process_time() - started_cpu:.1f} "
              "CPU-s", flush=True)
        if r.x is not None and r.objective is not None and r.objective < cost - 1e-6:
            x, cost = r.x, r.objective
    print(f"end {cost:,.0f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("probe", choices=("plan", "growth", "groups"))
    p.add_argument("--case", default="large:1", help="size:scale")
    p.add_argument("--fleet", help="JSON of variable name → value (growth, groups)")
    p.add_argument("--save-fleet", help="plan: write the plan's fleet here")
    p.add_argument("--limit", type=float, default=60.0, help="plan: time limit; groups: per group")
    p.add_argument("--cpu", type=float, default=60.0, help="growth: CPU seconds")
    p.add_argument("--every", type=float, default=10.0, help="growth: CPU seconds between lines")
    p.add_argument("--options", default="", help="growth: HiGHS options key=value,...")
    p.add_argument("--start", default="before",
                   choices=("before", "after-cuts", "after-root", "none"),
                   help="growth: when the fleet is handed to HiGHS")
    p.add_argument("--by", default="purchase", choices=("gpu", "zone", "purchase"))
    args = p.parse_args()
    size, scale = args.case.split(":")
    data = _data(size, int(scale))
    if args.probe == "plan":
        from solver.solve.strategy import solve_shared

        started_cpu = time.process_time()
        program, outcome = solve_shared(data, "highs", args.limit, 0.01)
        r = outcome.report
        print(f"{outcome.status}: fleet {r.objective}, bound {r.bound}, "
              f"{time.process_time() - started_cpu:.1f} CPU-s")
        for s in r.stages:
            print(f"  {s.name} {s.seconds:.2f} s  cost {s.cost_after}  bound {s.bound_after}")
        if args.save_fleet:
            Path(args.save_fleet).write_text(json.dumps(
                {var.name: float(var.varValue or 0.0) for var in program.prob.variables()}))
        return
    model = model_of(build_program(data, shared_two_nodes=True))
    x = model.vector(json.loads(Path(args.fleet).read_text()))
    broken = model.broken_rows(x)
    if broken:
        raise SystemExit(f"{args.fleet}: the fleet breaks {len(broken)} rows, e.g. {broken[0]}")
    if args.probe == "growth":
        growth(model, x, args.cpu, args.every, args.options, args.start)
    else:
        groups(model, x, args.by, args.limit)


if __name__ == "__main__":
    main()
