"""The joint solve's HiGHS options measured on several programs of the demo's kind.

Issue 15's "the demo keeps its 1 % proof in ≤ 12 s": cuts at the root alone proved the demo's
joint program in 8.8–9.4 s where main took 13–15 s, but left the linked demo's re-plan
unproven after 155 s where main proved it in 4.7 s (benchmarks/results/demo-proof.md, "The demo's 1
% proof: cuts at the root alone"). So an option has to be measured on a set of programs, not on
the demo alone. This script does it in two steps:

``capture``: plans each scenario given (``fleetplan plan`` in this process, replay loop as the
command runs it) and saves every joint solve the HiGHS chain starts — its program as HiGHS
arrays, the fleet it is handed and how (:func:`solver.solve.strategy._joint`), the gap, and a
few features of the program's shape — as ``NAME-K.npz`` (K: the K-th joint solve of the plan;
the replay loop's re-plans are K ≥ 1).

``probe``: solves each saved joint program as the chain does (the same start, handed the same
way), once per option set and HiGHS seed, to the gap or ``--cap-s``, printing one line each:
status, cost, bound, branch-and-bound nodes, the process's CPU seconds (HiGHS's threads
included: what the machine's load moves least) and wall seconds, and the 1-min load. Option
sets are named in :data:`OPTIONS`; ``race:A/B@S`` is A for S seconds of wall time, then (not
proven) B from the best fleet A held, for the time left — a race in time, in one thread pool.

Run (from the repository root; minutes each)::

    .venv/bin/python benchmarks/joint_rule.py capture --out /tmp/jr demo=inputs/scenarios/demo.yaml
    .venv/bin/python benchmarks/joint_rule.py probe /tmp/jr/*.npz --options default,root-cuts \
        --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

#: CPU seconds of the process after which a probe's solve is stopped (``--cap-cpu-s``) [s].
CPU_CAP_S = [float("inf")]
#: HiGHS threads of every probe's solve (``--threads``; one count per process: HiGHS keeps one
#: thread pool per process) [1].
PROBE_THREADS = [2]
#: HiGHS option sets tried, by name.
OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "root-cuts": {"mip_allow_cut_separation_at_nodes": False},
    "pscost-1": {"mip_pscost_minreliable": 1},
    "pscost-4": {"mip_pscost_minreliable": 4},
    "no-restart": {"mip_allow_restart": False},
    "heur-0.02": {"mip_heuristic_effort": 0.02},
}


def capture(out: Path, cases: list[str], limit_s: float) -> None:
    """Plan each ``name=path`` case and save its joint solves (see the module's docstring)."""
    from click.testing import CliRunner

    from solver.cli import main as cli
    from solver.solve import strategy

    out.mkdir(parents=True, exist_ok=True)
    real_run = strategy.run
    for case in cases:
        name, path = case.split("=", 1)
        count = [0]

        def recording(model: Any, *args: Any, _name: str = name, _count: list[int] = count,
                      **kwargs: Any) -> Any:
            caller = sys._getframe(1)
            if caller.f_code.co_name == "_joint":
                ctx = caller.f_locals["ctx"]
                data = ctx.program.data
                start = kwargs.get("start")
                proven = kwargs.get("when_proven")
                np.savez(out / f"{_name}-{_count[0]}.npz",
                         cost=model.cost, lower=model.lower, upper=model.upper,
                         integer=model.integer, row_lower=model.row_lower,
                         row_upper=model.row_upper, starts=model.starts,
                         columns=model.columns, values=model.values,
                         start=np.array([]) if start is None else start,
                         when_proven=np.array([]) if proven is None else proven,
                         start_after_cuts=bool(kwargs.get("start_after_cuts")),
                         gap=float(args[2]), slices=len(data.slices))
                _count[0] += 1
            return real_run(model, *args, **kwargs)

        strategy.run = recording  # type: ignore[assignment]
        try:
            t0 = time.perf_counter()
            res = CliRunner().invoke(cli, ["plan", path, "--out", str(out / f"{name}-plan"),
                                           "--time-limit", str(limit_s), "--quiet"])
            print(f"{name}: exit {res.exit_code}, {count[0]} joint solves, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
            if res.exit_code != 0:
                print(res.output[-2000:])
        finally:
            strategy.run = real_run  # type: ignore[assignment]


def _lp(arrays: Any) -> Any:
    import highspy

    lp = highspy.HighsLp()
    n, m = len(arrays["cost"]), len(arrays["row_lower"])
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = arrays["cost"], arrays["lower"], arrays["upper"]
    lp.row_lower_, lp.row_upper_ = arrays["row_lower"], arrays["row_upper"]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.start_ = arrays["starts"]
    lp.a_matrix_.index_ = arrays["columns"]
    lp.a_matrix_.value_ = arrays["values"]
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in arrays["integer"]]
    return lp


def features(arrays: Any) -> dict[str, Any]:
    """The program's shape: slices, columns, rows, integer columns fixed or held above zero by
    their bounds, the start's cost and its gap to the LP relaxation's bound."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(_lp(arrays))
    h.setOptionValue("solve_relaxation", True)
    h.setOptionValue("threads", PROBE_THREADS[0])  # the process's one pool: the probe's count
    h.run()
    lp = h.getInfo().objective_function_value
    integer = arrays["integer"]
    fixed = (arrays["lower"] == arrays["upper"]) & integer
    held = (arrays["lower"] > 0) & integer
    start = arrays["start"]
    return {"slices": int(arrays["slices"]), "columns": len(arrays["cost"]),
            "rows": len(arrays["row_lower"]), "integer": int(integer.sum()),
            "fixed": int(fixed.sum()), "held": int(held.sum()),
            "start_cost": float(np.dot(arrays["cost"], start)) if len(start) else None,
            "lp": lp,
            "lp_gap": 1 - lp / float(np.dot(arrays["cost"], start)) if len(start) else None}


def solve(arrays: Any, options: dict[str, Any], seed: int, limit_s: float,
          start: Any = None, gap: float | None = None) -> dict[str, Any]:
    """One HiGHS solve of a saved joint program as the chain runs it, with ``options``."""
    import highspy

    from solver.solve.highs import _WhenProven, hand_start

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(_lp(arrays))
    gap = float(arrays["gap"]) if gap is None else gap
    for name, value in (("time_limit", float(limit_s)), ("mip_rel_gap", gap),
                        ("threads", PROBE_THREADS[0]), ("random_seed", seed),
                        *options.items()):
        h.setOptionValue(name, value)
    proven = arrays["when_proven"]
    if len(proven):
        h.cbMipUserSolution.subscribe(
            _WhenProven(proven, float(np.dot(arrays["cost"], proven)), gap))
    x0 = arrays["start"] if start is None else start
    if len(x0):
        hand_start(h, x0, bool(arrays["start_after_cuts"]) and start is None)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    root: list[float] = []

    def at_root(event: Any) -> None:  # the bound when the tree's first node is counted
        if not root and event.data_out.mip_node_count > 0:
            root.extend((float(event.data_out.mip_dual_bound), time.process_time() - cpu0))
        if time.process_time() - cpu0 > CPU_CAP_S[0]:  # a cap the machine's load moves less
            event.interrupt()

    h.cbMipInterrupt.subscribe(at_root)
    h.run()
    info = h.getInfo()
    x = np.array(h.getSolution().col_value) if info.primal_solution_status == 2 else None
    return {"status": str(h.getModelStatus()).rsplit(".", 1)[-1],
            "cost": info.objective_function_value, "bound": info.mip_dual_bound,
            "gap": info.mip_gap, "nodes": info.mip_node_count,
            "cpu_s": time.process_time() - cpu0, "wall_s": time.perf_counter() - wall0, "x": x,
            "root": tuple(root) if root else (float("nan"), float("nan"))}


def race(arrays: Any, first: str, second: str, switch_s: float, seed: int,
         limit_s: float) -> dict[str, Any]:
    """``first`` for ``switch_s`` seconds; unproven, ``second`` from its best fleet."""
    a = solve(arrays, OPTIONS[first], seed, min(switch_s, limit_s))
    if a["status"] == "kOptimal" or a["wall_s"] >= limit_s:
        return a
    b = solve(arrays, OPTIONS[second], seed, limit_s - a["wall_s"], start=a["x"])
    return {**b, "root": a["root"], "nodes": a["nodes"] + b["nodes"],
            "cpu_s": a["cpu_s"] + b["cpu_s"],
            "wall_s": a["wall_s"] + b["wall_s"]}


def probe(paths: list[Path], option_names: list[str], seeds: list[int], limit_s: float) -> None:
    """Each saved program × option set × seed: one line (see the module's docstring)."""
    for path in paths:
        arrays = dict(np.load(path))
        print(f"{path.stem}: {features(arrays)}", flush=True)
        for seed in seeds:  # seeds outside, options inside: each option's runs interleave
            for name in option_names:
                load = os.getloadavg()[0]
                if name.startswith("race:"):
                    pair, at = name[5:].split("@")
                    first, second = pair.split("/")
                    r = race(arrays, first, second, float(at), seed, limit_s)
                else:
                    r = solve(arrays, OPTIONS[name], seed, limit_s)
                print(f"  {path.stem} {name} seed {seed}: {r['status'][1:]} {r['cost']:,.2f} "
                      f"bound {r['bound']:,.2f} gap {100 * r['gap']:.2f}% {r['nodes']} nodes "
                      f"{r['cpu_s']:.2f} CPU-s {r['wall_s']:.2f} s root {r['root'][0]:,.0f} at "
                      f"{r['root'][1]:.2f} CPU-s load {load:.1f} "
                      f"at {time.strftime('%H:%M:%S', time.gmtime())}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture")
    c.add_argument("cases", nargs="+", help="name=scenario.yaml")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--time-limit", type=float, default=180.0)
    p = sub.add_parser("probe")
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--options", default="default,root-cuts")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--cap-s", type=float, default=60.0, help="wall seconds")
    p.add_argument("--cap-cpu-s", type=float, default=float("inf"),
                   help="CPU seconds of the process (on a loaded machine a wall cap gave one "
                        "solve 6 CPU-s in 200 s)")
    p.add_argument("--threads", type=int, default=2,
                   help="HiGHS threads of every solve (the joint solve of a program of a few "
                        "slices asks for one: solver.solve.strategy.joint_threads)")
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.out, args.cases, args.time_limit)
    else:
        CPU_CAP_S[0] = args.cap_cpu_s
        PROBE_THREADS[0] = args.threads
        probe(args.paths, args.options.split(","), [int(s) for s in args.seeds.split(",")],
              args.cap_s)


if __name__ == "__main__":
    main()
